/* The demo inference session shared by `tmem demo` and `tmem stats`: typed
 * memory for a Qwen3.5-0.8B-shaped VLM session, run as a list of steps
 * (the step table in cmd_demo.c; the steps in demo_*.c). */
#ifndef TMEM_TOOL_DEMO_H
#define TMEM_TOOL_DEMO_H

#include "typedmem/typedmem.h"

/* One tensor of a generated model file (for the naive loader). */
typedef struct demo_tensor_rec {
    uint64_t offset;          /* file offset of its data */
    uint64_t size;
} demo_tensor_rec;

/* The generated GGUF pair. */
typedef struct demo_model_files {
    char dir[256];
    char text[512], mmproj[512];
    demo_tensor_rec *tensors;  /* text then mmproj tensors */
    uint32_t ntensors, ntext;  /* the first ntext are in `text` */
    uint64_t text_bytes, mmproj_bytes; /* file sizes */
} demo_model_files;

/* What one session measured (sent from the forked child to the parent). */
typedef struct tmem_demo_result {
    double seconds;
    uint64_t peak_private_dirty;   /* OS: highest Private_Dirty over the sampling points, above the start */
    uint64_t samples;
    uint64_t weights_dirty;        /* naive: weights read into malloc'd memory (private dirty) */
    /* typed session only */
    uint64_t accounted_dirty, accounted_clean; /* library, at the end */
    uint64_t os_dirty, os_clean;               /* OS, change over the session, at its end
                                                  (before the report is written) */
    bool measured;                             /* the four above are set */
    uint64_t peak_committed;                   /* context's peak committed (dirty + clean) */
    uint64_t peak_committed_dirty;             /* peak committed without the mapped weights */
    uint64_t predicted_total, predicted_dirty; /* tmem_fit */
    uint64_t plan_arena[3], plan_lower[3], plan_sum[3]; /* vision, prefill, decode */
    uint64_t kv_bytes, state_bytes, snapshot_bytes;
    uint32_t prompt_tokens, image_tokens, generated;
    bool report_written;
    char report[512];
} tmem_demo_result;

typedef struct tmem_demo_options {
    uint64_t budget;          /* context budget; 0 = 1 GiB */
    uint32_t prompt_tokens;   /* text tokens in the prompt (plus image tokens) */
    uint32_t decode_tokens;   /* tokens generated */
    uint32_t image_side;      /* vision input is side x side pixels */
    uint32_t frame_width, frame_height; /* camera frame (NV12); 0 = 1280 x 720 */
    uint64_t weights_bytes;   /* cap on the generated weights; 0 = the model's full tensor set */
    bool quiet;               /* no per-step lines */
    const demo_model_files *files; /* NULL: generate them in a temp dir, delete after */
    const char *trace_path;   /* stream the trace here; NULL = no tracing */
    const char *report_path;  /* with trace_path: write the HTML report here */
    tmem_demo_result *result; /* may be NULL */
    const char *command;      /* for messages ("tmem stats"); NULL = "tmem demo" */
} tmem_demo_options;

/* Run the session; on success *out_ctx holds the context with everything
 * still allocated (the caller prints stats and destroys it). */
tmem_status tmem_demo_run(const tmem_demo_options *opt, tmem_context **out_ctx);

/* `tmem demo --bookkeeping ...` (demo_compare.c): argv without the flag. */
int tmem_demo_bookkeeping(int argc, char **argv);

#endif

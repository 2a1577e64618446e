/* The typed demo session's state, shared by the files that implement its
 * steps (demo_model.c, demo_plan.c, demo_image.c, demo_infer.c,
 * demo_report.c); the driver and the step table are in cmd_demo.c, the
 * naive session in demo_naive.c, the comparison in demo_compare.c. */
#ifndef TMEM_TOOL_DEMO_SESSION_H
#define TMEM_TOOL_DEMO_SESSION_H

#include <stdint.h>
#include <stdio.h>
#include "demo/demo.h"

#define DEMO_IGNORE(expr) do { tmem_status ign_ = (expr); (void)ign_; } while (0)
#define DEMO_GRAPH_CAP 64u     /* buffers of one layer graph (they have ~30) */
#define DEMO_MAX_CONTEXT 4096u /* tokens a sequence may reach (the naive KV's size) */

/* One planned transient arena: the layer graph(s) of one phase laid out in
 * time one after the other, solved once, bound once in a PLACEMENT heap and
 * reused by every layer of every step of that phase. */
typedef struct demo_plan {
    const char *name;
    tmem_model_buffer bufs[2 * DEMO_GRAPH_CAP];
    uint32_t nbufs;
    uint32_t first[2], count[2]; /* buffers of each layer kind in bufs */
    tmem_model_layer_kind kinds[2];
    uint32_t nkinds;
    tmem_plan *plan;
    tmem_plan_info info;
    void *ptrs[2 * DEMO_GRAPH_CAP];
} demo_plan;

/* What the session holds outside heaps; destroyed with the context. */
typedef struct demo_owned {
    demo_plan vision, prefill, decode;
    tmem_kv_cache *kv;
    tmem_surface *frame;
} demo_owned;

typedef struct session {
    const tmem_demo_options *opt;
    tmem_demo_result *res;      /* may be NULL */
    tmem_context *ctx;
    demo_owned *own;
    tmem_model_desc model;
    tmem_fit_result fit;
    char gguf_path[512], mmproj_path[512];
    tmem_gguf *gguf, *mmproj;   /* closed by the context */
    tmem_heap *vision_heap, *act_heap, *pixels, *embd, *tokens, *logits_heap, *scratch;
    uint32_t side;              /* vision input side (pixels) */
    uint64_t image_tokens, image_patches;
    uint32_t prompt_total;      /* text + image tokens */
    uint32_t chunk;             /* prefill tokens per step */
    float *pixel_values;        /* [3][side][side], in `pixels` */
    float *image_embed;         /* [image_tokens][n_embd], in `embd` */
    uint32_t *token_ring;
    uint32_t generated_tokens;
    tmem_kv_seq seq;
    bool traced;                /* the trace step started the trace */
    uint64_t fp_base;           /* Private_Dirty when the session started */
    tmem_footprint fp_start;    /* the whole footprint then */
} session;

/* Sample the OS footprint (Private_Dirty above `base`) and keep the peak:
 * the sessions call it at the same points (each layer of the vision encoder
 * and of the prefill, each decode step, each step's end). */
void demo_sample(tmem_demo_result *res, uint64_t base);
/* Write every byte of [p, p + n), as a kernel producing it would. */
void demo_touch(void *p, uint64_t n, uint32_t salt);
double demo_mib(uint64_t bytes);
/* A new directory under $TMPDIR (or /tmp) for the model files and the trace. */
char *demo_temp_dir(char *dir, size_t cap);

/* Generate a Qwen3.5-0.8B-shaped GGUF pair (text weights + mmproj) in `dir`
 * with the library's GGUF writer at the real tensor sizes. `cap_bytes`
 * (0 = none) stops adding text tensors past that size (small sessions for
 * `tmem stats`). The tensor table is recorded for the naive loader.
 * demo_model_files_free deletes the files. */
tmem_status demo_model_generate(const char *dir, uint64_t cap_bytes, demo_model_files *out);
void demo_model_files_free(demo_model_files *f);

/* The steps (see the table in cmd_demo.c). */
tmem_status demo_step_trace(session *s);
tmem_status demo_step_model(session *s);
tmem_status demo_step_predict(session *s);
tmem_status demo_step_plans(session *s);
tmem_status demo_step_heaps(session *s);
tmem_status demo_step_image(session *s);
tmem_status demo_step_pixels(session *s);
tmem_status demo_step_vision(session *s);
tmem_status demo_step_prefill(session *s);
tmem_status demo_step_decode(session *s);
tmem_status demo_step_report(session *s);

/* demo_plan.c: graph(s) -> plan; the pointers are filled by tmem_plan_heap_bind. */
tmem_status demo_plan_build(const tmem_model_desc *m, demo_plan *p, const char *name,
                            const tmem_model_layer_kind *kinds, uint32_t nkinds, uint64_t n_tokens,
                            uint64_t n_ctx);
void demo_plan_free(demo_plan *p);
/* Write every buffer of one layer of `kind`, in the order its ops produce them. */
void demo_plan_run_layer(const demo_plan *p, tmem_model_layer_kind kind, uint32_t layer);
void demo_plan_print(const demo_plan *p);

/* The naive session (demo_naive.c): same shapes, malloc per tensor. */
tmem_status demo_naive_run(const tmem_demo_options *opt, const demo_model_files *files, tmem_demo_result *res);

#endif

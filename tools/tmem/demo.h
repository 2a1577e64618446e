/* The demo inference session shared by `tmem demo` and `tmem stats`: typed
 * memory for a Qwen3.5-0.8B-shaped VLM session, run as a list of steps
 * (cmd_demo.c). Later work adds steps (planned heaps, surfaces, the KV cache
 * API, the model file, tracing) without changing the driver. */
#ifndef TMEM_TOOL_DEMO_H
#define TMEM_TOOL_DEMO_H

#include "typedmem/typedmem.h"

typedef struct tmem_demo_options {
    uint64_t budget;          /* context budget; 0 = 1 GiB */
    uint32_t prompt_tokens;   /* text tokens in the prompt (plus image tokens) */
    uint32_t decode_tokens;   /* tokens generated */
    uint32_t image_side;      /* vision input is side x side pixels */
    uint64_t weights_bytes;   /* size of the weights file; 0 = the model's */
    bool quiet;               /* no per-step lines */
} tmem_demo_options;

/* Run the session; on success *out_ctx holds the context with everything
 * still allocated (the caller prints stats and destroys it). */
tmem_status tmem_demo_run(const tmem_demo_options *opt, tmem_context **out_ctx);

#endif

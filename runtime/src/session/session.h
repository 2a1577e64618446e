/* session.h: the session's state (internal to session/). */
#ifndef TMRT_SESSION_H
#define TMRT_SESSION_H

#include "rt_internal.h"

/* The layer graphs the runtime plans: its delta rule runs chunk by chunk. */
#define TMRT_GRAPH_FLAGS TMEM_MODEL_GRAPH_CHUNKED_DELTA
#define TMRT_NAIVE_MAX_BUFS 640u

struct tmrt_session {
    tmrt_model *model;
    tmem_context *ctx;
    tmrt_memory_mode memory;
    uint32_t n_ctx, chunk, n_past;
    tmem_kv_dtype kv_dtype;
    tmrt_session_info info;
    tmrt_run run;
    bool have_logits;
    int32_t *tokens;                 /* n_ctx ids: the OUTPUT_TOKENS role */
    /* typed */
    tmem_heap *act_heap, *scratch_heap, *pool_heap, *logits_heap, *token_heap;
    tmem_kv_cache *cache;
    tmem_kv_seq seq;
    tmem_kv_evict_fn on_evict;       /* desc->on_evict, forwarded to the cache */
    void *evict_user;
    /* naive */
    void *naive_bufs[TMRT_NAIVE_MAX_BUFS];
    uint32_t n_naive_bufs;
    void *pool_mem;
    /* Vulkan (the model's device): every role of the step on the device */
    struct tmrt_gpu_session *gpu;
};

/* admit.c: tmem_fit of a session of m (typed_ctx: name the lines' types by
 * its role policy; NULL for the naive twin) at n_tokens and chunk, with the
 * runtime's graph flags, KV dtype, "scratch" and "tokenizer" lines. */
tmem_status tmrt__session_fit(const tmrt_model *m, tmem_context *typed_ctx, tmem_kv_dtype kv_dtype,
                              uint32_t n_tokens, uint32_t chunk, uint64_t budget, uint64_t scratch,
                              uint64_t tokenizer, tmem_fit_result *out);

/* acts.c */
tmem_status tmrt__graph(const tmrt_model *m, tmem_model_layer_kind kind, uint32_t n, uint32_t n_ctx,
                        tmem_model_graph *out);
tmem_status tmrt__acts_create(tmrt_session *s, tmrt_error *err);

#endif /* TMRT_SESSION_H */

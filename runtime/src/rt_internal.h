/* rt_internal.h: the runtime's internal map, grouped by the file that
 * defines each part (model/, forward/, session/, sample/). */
#ifndef TMRT_INTERNAL_H
#define TMRT_INTERNAL_H

#include <stdarg.h>
#include "tmemrt/runtime.h"
#include "kern/kern.h"
#include "util/graph_acts.h"
#include "kern/kern_half.h"
#include "util/fail.h"

/* ---- model/weights.c: views into the mapped file ----------------------- */

/* One decoder layer's weights. A norm or small vector is a kern_wmat of one
 * row (n_out 1); read it with tmrt__vec. */
typedef struct tmrt_layer_weights {
    kern_wmat attn_norm, post_norm;                /* [n_embd] */
    /* full attention */
    kern_wmat wq;                                  /* n_embd -> 2 x heads x head_dim (q, gate per head) */
    kern_wmat wk, wv;                              /* n_embd -> kv heads x head_dim */
    kern_wmat wo;                                  /* heads x head_dim -> n_embd */
    kern_wmat q_norm, k_norm;                      /* [head_dim] */
    /* Gated DeltaNet */
    kern_wmat wqkv;                                /* n_embd -> conv channels (q, k, v) */
    kern_wmat wgate;                               /* n_embd -> inner (z) */
    kern_wmat wbeta, walpha;                       /* n_embd -> v heads */
    kern_wmat conv1d;                              /* channels rows of conv_kernel taps */
    kern_wmat dt_bias, ssm_a;                      /* [v heads]; ssm_a = -exp(A_log) */
    kern_wmat ssm_norm;                            /* [ssm head dim] */
    kern_wmat ssm_out;                             /* inner -> n_embd */
    /* SwiGLU MLP */
    kern_wmat ffn_gate, ffn_up, ffn_down;
} tmrt_layer_weights;

typedef struct tmrt_weights {
    kern_wmat token_embd;                          /* n_vocab rows of n_embd */
    kern_wmat output_norm;
    kern_wmat output;                              /* = token_embd when tied */
    tmrt_layer_weights layers[TMRT_MAX_LAYERS];
} tmrt_weights;

struct tmrt_model {
    tmrt_memory_mode memory;
    tmem_context *ctx;
    tmem_gguf *gguf;
    void *naive_file;                              /* naive: the file in malloc'd memory */
    tmrt_hparams hp;
    tmem_model_desc mdesc;
    tmrt_weights w;
    tmrt_device device;                            /* desc->device */
    struct tmrt_gpu_model *gpu;                    /* Vulkan: the weights on the device (gpurun/) */
};

/* model/hparams.c */
tmem_status tmrt__hparams_read(const tmem_gguf *g, tmrt_hparams *hp, tmrt_error *err);
/* model/weights.c */
tmem_status tmrt__weights_bind(const tmem_gguf *g, tmrt_hparams *hp, tmrt_weights *w, tmrt_error *err);

/* A vector weight as f32: the mapped floats, or dequantised into tmp. */
const float *tmrt__vec(const kern_wmat *v, float *tmp);

/* ---- forward/: one layer graph's buffers --------------------------------- */

/* tmrt_acts (util/graph_acts.h): one layer graph's buffers by id, with the
 * table they were planned from; the forward pass reads them through
 * TMRT_OP / TMRT_ACT. */

/* Where one sequence's KV rows live: the same block layout as the paged
 * cache (kv.h): a block of block_tokens tokens holds, per attention layer,
 * K rows then V rows (f16 or f32). blocks[b] is block b's address: typed,
 * the cache's view of the sequence (tmem_kv_seq_block_ptrs), resolved by the
 * session once per step (after the append that makes room) and after a
 * rollback, and valid until the next of them (the sequence is pinned);
 * naive, the consecutive blocks of one max-length buffer. The attention loop
 * indexes it with no call and no lock. */
typedef struct tmrt_kv_view {
    uint32_t block_tokens;
    size_t row_bytes;                              /* kv heads x head_dim x (2 or 4) */
    bool f32;                                      /* rows are f32 (else f16) */
    void **blocks;                                 /* cap_blocks entries, n_blocks valid */
    uint32_t n_blocks, cap_blocks;
    void *flat;                                    /* naive: one max-length buffer */
    size_t block_bytes;
    tmem_kv_cache *cache;
} tmrt_kv_view;

/* K and V rows of token `t` in attention layer `l` (index among the
 * attention layers): block t / block_tokens, for layer l its K rows then its
 * V rows. */
static inline void tmrt__kv_rows(const tmrt_kv_view *kv, uint32_t l, uint32_t t, void **k, void **v) {
    uint32_t b = t / kv->block_tokens, in = t % kv->block_tokens;
    uint8_t *kr = (uint8_t *)kv->blocks[b] + ((size_t)l * 2 * kv->block_tokens + in) * kv->row_bytes;
    *k = kr;
    *v = kr + (size_t)kv->block_tokens * kv->row_bytes;
}

/* The run state the forward pass reads and writes. */
typedef struct tmrt_run {
    const tmrt_model *model;
    kern_pool *pool;
    int n_threads;
    tmrt_acts prefill_attn, prefill_delta, decode_attn, decode_delta;
    tmrt_kv_view kv;
    float *conv_state[TMRT_MAX_LAYERS];            /* (kernel-1) x channels, oldest first */
    float *ssm_state[TMRT_MAX_LAYERS];             /* v heads x [v dim][k dim] */
    uint32_t attn_index[TMRT_MAX_LAYERS];          /* layer -> index among attention layers */
    float *logits;                                 /* n_vocab */
    /* scratch: a bump region reset per op */
    uint8_t *scratch;
    size_t scratch_cap, scratch_used;
    tmem_heap *scratch_heap;                       /* typed: the LINEAR heap behind it */
} tmrt_run;

/* forward/scratch.c: per-op scratch (no malloc: a LINEAR heap's range). */
void *tmrt__scratch(tmrt_run *r, size_t bytes);
void tmrt__scratch_reset(tmrt_run *r);
/* The scratch the forward pass needs at `chunk` tokens with `threads`,
 * the LM head taking `head_rows` rows at once (1 but for a batch run). */
size_t tmrt__scratch_bytes(const tmrt_model *m, uint32_t chunk, int threads, uint32_t head_rows);

/* One sequence of a multi-sequence decode step (session/batch.c): token t
 * of the step is the next token of lane t, at position n_past of that
 * sequence, its K/V rows in kv and its recurrent state in conv_state /
 * ssm_state (per layer, as tmrt_run's). */
typedef struct tmrt_lane {
    const tmrt_kv_view *kv;
    float *const *conv_state;
    float *const *ssm_state;
    uint32_t n_past;
} tmrt_lane;

/* forward/forward.c: one span of tokens (n <= plan size) at sequence
 * positions [n_past, n_past + n), or (lanes) one token of each of n
 * sequences: then decode is set, positions and embd_rows are NULL, fn is
 * NULL and the logits of token t (logits LAST or ALL: every row) go to
 * r->logits + t * n_vocab. */
typedef struct tmrt_step {
    const int32_t *tokens;
    const float *embd_rows;
    uint32_t embd_first, embd_count;
    const int32_t *positions;                      /* 4 per token, or NULL */
    uint32_t n, n_past;
    bool decode;                                   /* n == 1 through the recurrent form */
    tmrt_logits_mode logits;
    tmrt_logits_fn fn;
    void *user;
    uint32_t batch_offset;                         /* index of tokens[0] in the caller's batch */
    const tmrt_lane *lanes;                        /* NULL: the run's own sequence */
} tmrt_step;

/* Token t's KV view and position in the step. */
static inline const tmrt_kv_view *tmrt__step_kv(const tmrt_run *r, const tmrt_step *st, uint32_t t) {
    return st->lanes ? st->lanes[t].kv : &r->kv;
}
static inline uint32_t tmrt__step_pos(const tmrt_step *st, uint32_t t) {
    return st->lanes ? st->lanes[t].n_past : st->n_past + t;
}
tmem_status tmrt__forward(tmrt_run *r, const tmrt_step *st);

/* forward/attention.c */
/* The mixer ops of the layer's table, ATTN_NORM's output to OUT_PROJ's. */
void tmrt__attention(tmrt_run *r, const tmrt_layer_weights *lw, uint32_t layer, tmrt_acts *a,
                     const tmrt_step *st);
/* forward/deltanet.c */
void tmrt__deltanet(tmrt_run *r, const tmrt_layer_weights *lw, uint32_t layer, tmrt_acts *a,
                    const tmrt_step *st);
/* forward/rope.c: rotate the first n_rot dims of one head (NEOX pairs i,
 * i + n_rot/2) by the interleaved M-RoPE angles of positions pos[4]. */
void tmrt__rope(float *x, const tmrt_hparams *hp, const int32_t pos[4]);
/* forward/attention_avx2.c (x86-64 builds; call only when the CPU has
 * AVX2, FMA and F16C): the f16 row loops of attention */
float tmrt__dot_f16_avx2(const float *q, const uint16_t *k, uint32_t n);
void tmrt__axpy_f16_avx2(float *acc, float p, const uint16_t *v, uint32_t n);
/* forward/attention_neon.c (aarch64 builds): the same loops in NEON */
float tmrt__dot_f16_neon(const float *q, const uint16_t *k, uint32_t n);
void tmrt__axpy_f16_neon(float *acc, float p, const uint16_t *v, uint32_t n);
/* f16 rows (KV cache, norms): the runtime's one half conversion, inline in
 * kern/kern_half.h (kern_f16_to_f32, kern_f32_to_f16) */
/* forward/matmul.c: y = W x for n rows through the pool, scratch from r */
void tmrt__matmul(tmrt_run *r, const kern_wmat *w, const float *x, uint32_t n, float *y);

/* session/session.c: the run state that computes for a session (for the
 * sampler: its scratch). */
tmrt_run *tmrt__session_run(tmrt_session *s);

/* Most sequences one batched decode step takes (the server's limit too). */
#define TMRT_MAX_BATCH 64u

/* batch.c: the next token of each of n sessions attached to runner (n <=
 * its rows, distinct, none suspended) as one forward pass; each session's
 * logits row and length as after a tmrt_session_eval of its one token.
 * On failure no session changed. */
tmem_status tmrt__session_decode_batch(tmrt_session *runner, tmrt_session *const *ss, const int32_t *tokens,
                                       uint32_t n, tmrt_error *err);

/* session.c: an attached session (runner non-NULL: desc's chunk and
 * threads are the runner's) or a runner (rows > 0: the one-token graphs
 * planned for `rows` sequences, no KV cache). */
tmem_status tmrt__session_create_ex(tmrt_model *m, const tmrt_session_desc *desc, tmrt_session *runner,
                                    uint32_t rows, tmrt_session **out, tmrt_error *err);


#endif /* TMRT_INTERNAL_H */

/* gpu_internal.h: what gpurun/'s files share (Vulkan types included). */
#ifndef TMRT_GPU_INTERNAL_H
#define TMRT_GPU_INTERNAL_H

#include "gpurun/gpurun.h"
#include "gpu/vk_ops.h"

/* Memory of one role: a LINEAR heap of a device type, wholly committed and
 * allocated, with one VkBuffer over it (host: its mapping, host-visible
 * types only). */
typedef struct tmrt_gpu_block {
    tmem_type *type;
    tmem_heap *heap;
    VkBuffer buf;
    uint64_t size;
    void *host;
    VkDeviceMemory raw;              /* the naive twin's own allocation (gpu_naive.c) */
    uint64_t raw_bytes;              /* its VkMemoryRequirements size */
} tmrt_gpu_block;

/* A block of `size` bytes in the type `type_name` (found, or created with
 * `placement` and `lifetime`), charged to `role`. */
tmem_status tmrt__gpu_block_create(tmem_context *ctx, tmem_gpu *gpu, const char *type_name, tmem_placement placement,
                                   tmem_lifetime lifetime, tmem_role role, const char *name, uint64_t size,
                                   tmrt_gpu_block *out, tmrt_error *err);
void tmrt__gpu_block_destroy(tmem_gpu *gpu, tmrt_gpu_block *b);
/* gpu_naive.c: a block as its own VkDeviceMemory of exactly `size` (the
 * naive twin; not in the typed accounting). */
tmem_status tmrt__gpu_raw_create(tmem_gpu *gpu, bool host_visible, const char *name, uint64_t size,
                                 tmrt_gpu_block *out, tmrt_error *err);
void tmrt__gpu_raw_destroy(tmem_gpu *gpu, tmrt_gpu_block *b);
static inline tmrt_vk_buf tmrt__gpu_sub(const tmrt_gpu_block *b, uint64_t off, uint64_t range) {
    tmrt_vk_buf v = {b->buf, off, range};
    return v;
}

typedef struct tmrt_gpu_layer {
    tmrt_vk_wmat attn_norm, post_norm, wq, wk, wv, wo, q_norm, k_norm;
    tmrt_vk_wmat wqkv, wgate, wbeta, walpha, conv1d, dt_bias, ssm_a, ssm_norm, ssm_out;
    tmrt_vk_wmat ffn_gate, ffn_up, ffn_down;
} tmrt_gpu_layer;

#define TMRT_GPU_MAX_WBLOCKS 64u

struct tmrt_gpu_model {
    tmem_gpu *gpu;
    tmrt_vk *vk;
    bool naive;                       /* the twin: a VkDeviceMemory per tensor (gpu_naive.c) */
    tmem_context *own_ctx;            /* naive: the context the gpu is attached to */
    tmrt_gpu_block *tblocks;          /* naive: one per tensor */
    uint32_t n_tblocks;
    tmrt_gpu_block wblock[TMRT_GPU_MAX_WBLOCKS];
    uint32_t n_wblocks;
    uint64_t weight_bytes;
    bool imported;
    tmrt_vk_wmat token_embd, output_norm, output;
    tmrt_gpu_layer layers[TMRT_MAX_LAYERS];
};

#endif

/* One layer graph on the device: the offset and size of every buffer the
 * device ops use (by id; size 0 = not in this graph), planned at the
 * table's lifetimes, and the ops' scratch inside the same plan. */
typedef struct tmrt_gpu_graph {
    tmem_model_graph graph;
    uint64_t off[TMEM_MODEL_BUF_COUNT], size[TMEM_MODEL_BUF_COUNT];
    VkBuffer vb[TMEM_MODEL_BUF_COUNT];  /* typed: the arena's; naive: each its own */
    uint64_t scratch_off, scratch_size;
    VkBuffer scratch_vb;
    uint64_t arena;                   /* the plan's height */
    uint32_t n;                       /* tokens it was planned for */
} tmrt_gpu_graph;

#define TMRT_GPU_LOGIT_ROWS 8u

struct tmrt_gpu_session {
    tmrt_model *m;
    tmrt_gpu_model *gm;
    uint32_t n_ctx, chunk;
    tmrt_gpu_graph prefill_attn, decode_attn, prefill_delta, decode_delta;
    tmrt_gpu_block arena, kv, state, io, logits;
    tmrt_vk_kv kvd;
    uint64_t conv_bytes, ssm_bytes;
    tmrt_vk_buf conv[TMRT_MAX_LAYERS], ssm[TMRT_MAX_LAYERS]; /* each DeltaNet layer's state */
    bool naive;
    tmrt_gpu_block *nblocks;          /* naive: every buffer's own allocation */
    uint32_t n_nblocks, cap_nblocks;
    uint64_t naive_bytes;             /* naive: device bytes allocated */
    uint32_t attn_index[TMRT_MAX_LAYERS];
    uint64_t io_ids, io_pos, io_rows;  /* offsets in io: token ids, M-RoPE positions, LM-head rows */
    uint64_t io_step;                  /* the step's n_past (word 0), read by a reused recording */
    int decode_ready;                  /* the recording is a reusable decode step: 1 (text
                                          positions) or 2 (positions from io), + 4 x its
                                          attention splits; 0: not */
    uint32_t logit_rows;
    tmrt_vk_rec *rec;
    uint32_t last_barriers, last_dispatches;
};

/* gpu_forward.c: record the layers of one step (the caller begins and runs). */
/* step.buffer set: n_past is read from it (a recording reused for every
 * decode step), else st->n_past is recorded. */
tmem_status tmrt__gpu_record_layers(tmrt_gpu_session *g, const tmrt_step *st, tmrt_vk_buf step, tmrt_vk_buf *out_rows);

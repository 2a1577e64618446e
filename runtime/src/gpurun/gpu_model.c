/* gpu_model.c: a model's weights in device memory.
 *
 * The device is attached to the model's context; each tensor the forward
 * pass reads (model/weights.c's views) gets a place in one of a few weight
 * blocks (gpu_block.c: one VkDeviceMemory each, at most the gpu's chunk),
 * packed in file order at 256-byte offsets, and its bytes are streamed from
 * the mapped file through one staging ring of at most 64 MiB
 * (DEVICE_HOST_VISIBLE, its own type, freed after the upload): the host
 * never holds a second copy, and nothing is dequantised. A tied LM head is
 * the embedding's block range. */
#include <stdlib.h>
#include <string.h>
#include "gpurun/gpu_internal.h"

#define STAGING_MAX (64ull << 20)
#define WEIGHT_ALIGN 256ull

typedef struct wref {
    const kern_wmat *src;
    tmrt_vk_wmat *dst;
    uint32_t block;
    uint64_t offset, bytes;
} wref;

static uint64_t pow2_floor(uint64_t x) {
    uint64_t p = 1;
    while (p <= x / 2) p *= 2;
    return p;
}
static uint64_t pow2_ceil(uint64_t x) {
    uint64_t p = 1;
    while (p < x) p *= 2;
    return p;
}
static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static void add(wref *refs, uint32_t *n, const kern_wmat *src, tmrt_vk_wmat *dst) {
    if (src->data) refs[(*n)++] = (wref){src, dst, 0, 0, (uint64_t)src->n_out * src->row_bytes};
}

/* The tensors the forward pass reads: the model's views with data. */
static uint32_t collect(const tmrt_model *m, tmrt_gpu_model *g, wref *refs) {
    uint32_t n = 0;
#define ADD(src_, dst_) add(refs, &n, &(src_), &(dst_))
    ADD(m->w.token_embd, g->token_embd);
    ADD(m->w.output_norm, g->output_norm);
    if (m->w.output.data != m->w.token_embd.data) ADD(m->w.output, g->output);
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        const tmrt_layer_weights *s = &m->w.layers[l];
        tmrt_gpu_layer *d = &g->layers[l];
        ADD(s->attn_norm, d->attn_norm); ADD(s->post_norm, d->post_norm);
        ADD(s->wq, d->wq); ADD(s->wk, d->wk); ADD(s->wv, d->wv); ADD(s->wo, d->wo);
        ADD(s->q_norm, d->q_norm); ADD(s->k_norm, d->k_norm);
        ADD(s->wqkv, d->wqkv); ADD(s->wgate, d->wgate); ADD(s->wbeta, d->wbeta); ADD(s->walpha, d->walpha);
        ADD(s->conv1d, d->conv1d); ADD(s->dt_bias, d->dt_bias); ADD(s->ssm_a, d->ssm_a);
        ADD(s->ssm_norm, d->ssm_norm); ADD(s->ssm_out, d->ssm_out);
        ADD(s->ffn_gate, d->ffn_gate); ADD(s->ffn_up, d->ffn_up); ADD(s->ffn_down, d->ffn_down);
    }
#undef ADD
    return n;
}

/* Blocks in file order: a block closes when the next tensor does not fit
 * its capacity: the chunk, or less near the end (the pool of a block
 * smaller than the chunk is the next power of two: the capacity follows the
 * bytes left so the last blocks are not half empty). */
static tmem_status pack(wref *refs, uint32_t n, uint64_t chunk, uint64_t *sizes, uint32_t *n_blocks,
                        tmrt_error *err) {
    uint64_t left = 0;
    for (uint32_t i = 0; i < n; i++) left += align_up(refs[i].bytes, WEIGHT_ALIGN);
    uint32_t b = 0;
    uint64_t used = 0, cap = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t sz = align_up(refs[i].bytes, WEIGHT_ALIGN);
        if (sz > chunk)
            return tmrt__fail(err, TMEM_E_UNSUPPORTED, "a tensor of %llu bytes passes the device chunk of %llu",
                              (unsigned long long)sz, (unsigned long long)chunk);
        if (!cap || used + sz > cap) {
            if (cap) sizes[b++] = used;
            if (b == TMRT_GPU_MAX_WBLOCKS) return tmrt__fail(err, TMEM_E_FULL, "too many weight blocks");
            uint64_t c = pow2_floor(left);
            if (c < pow2_ceil(sz)) c = pow2_ceil(sz);
            cap = c < chunk ? c : chunk;
            used = 0;
        }
        refs[i].block = b;
        refs[i].offset = used;
        used += sz;
        left -= sz;
    }
    if (cap) sizes[b++] = used;
    *n_blocks = b;
    return TMEM_OK;
}

/* Stream every tensor through the staging ring (copies recorded until the
 * ring is full, then run). */
static tmrt_gpu_block *block_of(tmrt_gpu_model *g, const wref *r, uint32_t i) {
    return g->naive ? &g->tblocks[i] : &g->wblock[r->block];
}

static tmem_status upload(tmrt_model *m, tmrt_gpu_model *g, const wref *refs, uint32_t n, uint64_t total,
                          tmrt_error *err) {
    tmrt_gpu_block stage;
    uint64_t ring = total < STAGING_MAX ? total : STAGING_MAX;
    tmem_status st =
        g->naive ? tmrt__gpu_raw_create(g->gpu, true, "weight staging", ring, &stage, err)
                 : tmrt__gpu_block_create(m->ctx, g->gpu, "gpu-staging", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE,
                                          TMEM_LIFETIME_TRANSIENT, TMEM_ROLE_SCRATCH, "weight staging", ring, &stage,
                                          err);
    if (st) return st;
    tmrt_vk_rec *rec = NULL;
    if ((st = tmrt__vk_rec_create(g->vk, &(tmrt_vk_rec_desc){.max_dispatches = 16}, &rec)) ||
        (st = tmrt__vk_begin(rec))) {
        tmrt__fail(err, st, "weight upload recorder: %s", tmem_strerror(st));
        goto done;
    }
    uint64_t cur = 0;
    bool pending = false;
    for (uint32_t i = 0; i < n && !st; i++) {
        const uint8_t *src = refs[i].src->data;
        for (uint64_t off = 0; off < refs[i].bytes && !st;) {
            uint64_t piece = refs[i].bytes - off;
            if (piece > stage.size - cur) piece = stage.size - cur;
            memcpy((uint8_t *)stage.host + cur, src + off, (size_t)piece);
            tmrt__vk_copy(rec, tmrt__gpu_sub(&stage, cur, piece),
                          tmrt__gpu_sub(block_of(g, &refs[i], i), refs[i].offset + off, piece), piece);
            pending = true;
            off += piece;
            cur = align_up(cur + piece, 16);
            if (cur >= stage.size || (i + 1 == n && off == refs[i].bytes)) {
                if ((st = tmrt__vk_run(rec)) || (st = tmrt__vk_begin(rec)))
                    tmrt__fail(err, st, "weight upload: %s", tmrt__vk_rec_error(rec));
                cur = 0;
                pending = false;
            }
        }
    }
    (void)pending;
done:
    tmrt__vk_rec_destroy(rec);
    if (g->naive) tmrt__gpu_raw_destroy(g->gpu, &stage);
    else tmrt__gpu_block_destroy(g->gpu, &stage);
    return st;
}

tmem_status tmrt__gpu_model_open(tmrt_model *m, const tmrt_device *dev, tmrt_error *err) {
    tmrt_gpu_model *g = calloc(1, sizeof *g);
    wref *refs = calloc(3 + (size_t)m->hp.n_layers * 20, sizeof *refs);
    tmem_status st = TMEM_OK;
    if (!g || !refs) {
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "no memory for the device model");
        goto fail;
    }
    g->naive = m->memory == TMRT_MEMORY_NAIVE;
    tmem_context *ctx = m->ctx;
    if (!ctx) { /* naive: a context only to attach the device to */
        tmem_context_desc cd = {0};
        cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
        if ((st = tmem_context_create(&cd, &g->own_ctx))) {
            tmrt__fail(err, st, "context for the device: %s", tmem_strerror(st));
            goto fail;
        }
        ctx = g->own_ctx;
    }
    tmem_gpu_desc gd = {0};
    gd.api = TMEM_GPU_VULKAN;
    gd.device_index = dev->index;
    gd.chunk_size = dev->chunk_size ? dev->chunk_size : 1ull << 30;
    if ((st = tmem_gpu_attach(ctx, &gd, &g->gpu))) {
        tmrt__fail(err, st, "Vulkan device %u: %s", dev->index, tmem_strerror(st));
        goto fail;
    }
    char msg[200];
    if ((st = tmrt__vk_create(g->gpu, NULL, &g->vk, msg, sizeof msg))) {
        tmrt__fail(err, st, "Vulkan compute: %s", msg);
        goto fail;
    }
    tmem_gpu_info gi;
    if ((st = tmem_gpu_get_info(g->gpu, &gi))) {
        tmrt__fail(err, st, "Vulkan device info: %s", tmem_strerror(st));
        goto fail;
    }
    uint32_t n = collect(m, g, refs);
    uint64_t sizes[TMRT_GPU_MAX_WBLOCKS], total = 0;
    if (g->naive) { /* a VkDeviceMemory per tensor */
        if (!(g->tblocks = calloc(n, sizeof *g->tblocks))) {
            st = tmrt__fail(err, TMEM_E_NO_MEMORY, "no memory for the device model");
            goto fail;
        }
        for (uint32_t i = 0; i < n; i++, g->n_tblocks++) {
            if ((st = tmrt__gpu_raw_create(g->gpu, false, "weight", refs[i].bytes, &g->tblocks[i], err))) goto fail;
            g->weight_bytes += g->tblocks[i].raw_bytes;
        }
    } else if ((st = pack(refs, n, gi.chunk_size, sizes, &g->n_wblocks, err))) {
        goto fail;
    }
    for (uint32_t b = 0; b < g->n_wblocks; b++) {
        if ((st = tmrt__gpu_block_create(m->ctx, g->gpu, "gpu-weights", TMEM_PLACEMENT_DEVICE,
                                         TMEM_LIFETIME_PERSISTENT, TMEM_ROLE_WEIGHTS, "weights", sizes[b],
                                         &g->wblock[b], err)))
            goto fail;
        g->weight_bytes += g->wblock[b].size;
    }
    for (uint32_t i = 0; i < n; i++) {
        const kern_wmat *s = refs[i].src;
        tmrt_vk_wmat *d = refs[i].dst;
        d->buf = tmrt__gpu_sub(block_of(g, &refs[i], i), refs[i].offset, align_up(refs[i].bytes, 4));
        d->type = s->type;
        d->n_in = (uint32_t)s->n_in;
        d->n_out = (uint32_t)s->n_out;
        d->row_bytes = s->row_bytes;
        total += refs[i].bytes;
    }
    if (m->w.output.data == m->w.token_embd.data) g->output = g->token_embd;
    if ((st = upload(m, g, refs, n, total, err))) goto fail;
    free(refs);
    m->gpu = g;
    return TMEM_OK;
fail:
    free(refs);
    tmrt__gpu_model_close(g);
    return st;
}

void tmrt__gpu_model_close(tmrt_gpu_model *g) {
    if (!g) return;
    if (g->vk) tmrt__vk_destroy(g->vk);
    for (uint32_t b = 0; b < g->n_wblocks; b++) tmrt__gpu_block_destroy(g->gpu, &g->wblock[b]);
    for (uint32_t i = 0; i < g->n_tblocks; i++) tmrt__gpu_raw_destroy(g->gpu, &g->tblocks[i]);
    free(g->tblocks);
    tmem_gpu_release(g->gpu);
    tmem_context_destroy(g->own_ctx);
    free(g);
}

uint64_t tmrt__gpu_model_weight_bytes(const tmrt_gpu_model *g, bool *imported) {
    if (imported) *imported = g ? g->imported : false;
    return g ? g->weight_bytes : 0;
}

tmem_gpu *tmrt__gpu_model_gpu(const tmrt_gpu_model *g) { return g ? g->gpu : NULL; }

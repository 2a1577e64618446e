/* gpu_model.c: a model's weights in device memory.
 *
 * The device is attached to the model's context; each tensor the forward
 * pass reads (model/weights.c's views) is one range of the mapped GGUF
 * handed to the library's tmem_vk_import_mapping: where the device imports
 * host memory as device-local memory (integrated GPUs, lavapipe) the file's
 * pages are the weights, no copy, still clean; where an import would be
 * host memory read over the bus (a discrete GPU: the H200) the library
 * uploads the ranges into DEVICE heaps (role weights) through its one
 * staging buffer of at most 64 MiB, so the host never holds a second copy.
 * Nothing is dequantised. tmrt_device::weights forces either. A tied LM
 * head is the embedding's range.
 *
 * The naive twin instead reads the file into malloc (model.c) and gives
 * every tensor its own VkDeviceMemory (gpu_naive.c), filled through a
 * staging ring of its own. */
#include <stdlib.h>
#include <string.h>
#include "gpurun/gpu_internal.h"

#define STAGING_MAX (64ull << 20)

typedef struct wref {
    const kern_wmat *src;
    tmrt_vk_wmat *dst;
    uint64_t bytes;
} wref;

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static void add(wref *refs, uint32_t *n, const kern_wmat *src, tmrt_vk_wmat *dst) {
    if (src->data) refs[(*n)++] = (wref){src, dst, (uint64_t)src->n_out * src->row_bytes};
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

/* The naive twin: stream every tensor into its own allocation through a
 * staging ring (copies recorded until the ring is full, then run). */
static tmem_status naive_upload(tmrt_gpu_model *g, const wref *refs, uint32_t n, uint64_t total, tmrt_error *err) {
    tmrt_gpu_block stage;
    uint64_t ring = total < STAGING_MAX ? total : STAGING_MAX;
    tmem_status st = tmrt__gpu_raw_create(g->gpu, true, "weight staging", ring, &stage, err);
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
                          tmrt__gpu_sub(&g->tblocks[i], off, piece), piece);
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
    tmrt__gpu_raw_destroy(g->gpu, &stage);
    return st;
}

/* Typed: the tensors as ranges of the mapped file, imported or uploaded
 * by the library. */
static tmem_status place(tmrt_model *m, tmrt_gpu_model *g, const tmrt_device *dev, const wref *refs, uint32_t n,
                         tmrt_error *err) {
    tmem_gguf_tensor t0;
    tmem_gguf_info gi;
    tmem_status st;
    if ((st = tmem_gguf_get_info(m->gguf, &gi)) || (st = tmem_gguf_tensor_at(m->gguf, 0, &t0)))
        return tmrt__fail(err, st, "GGUF: %s", tmem_strerror(st));
    const uint8_t *base = (const uint8_t *)t0.data - gi.data_offset - t0.offset; /* the mapping of the file */
    tmem_vk_range *r = calloc(n, sizeof *r);
    if (!r) return tmrt__fail(err, TMEM_E_NO_MEMORY, "weight ranges");
    for (uint32_t i = 0; i < n; i++)
        r[i] = (tmem_vk_range){(uint64_t)((const uint8_t *)refs[i].src->data - base), refs[i].bytes};
    tmem_vk_mapping_desc md = {0};
    md.base = base;
    md.size = gi.file_size;
    md.ranges = r;
    md.range_count = n;
    md.flags = dev->weights == TMRT_WEIGHTS_UPLOAD ? TMEM_VK_MAPPING_UPLOAD
               : dev->weights == TMRT_WEIGHTS_IMPORT ? TMEM_VK_MAPPING_IMPORT_ONLY : 0;
    tmem_gpu_info ginfo;
    if (dev->weights == TMRT_WEIGHTS_AUTO && tmem_gpu_get_info(g->gpu, &ginfo) == TMEM_OK && ginfo.type_count &&
        !(ginfo.types[0].property_flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
        md.flags = TMEM_VK_MAPPING_UPLOAD; /* memory apart from the host: an import would be read over the bus */
    st = tmem_vk_import_mapping(g->gpu, &md, &g->map);
    tmem_vk_mapping_info mi = {0};
    if (!st) st = tmem_vk_mapping_get_info(g->map, &mi);
    if (!st && dev->weights == TMRT_WEIGHTS_AUTO && mi.imported && !mi.device_local) {
        /* host memory over the bus: every decode step would read it there */
        tmem_vk_mapping_destroy(g->map);
        g->map = NULL;
        md.flags = TMEM_VK_MAPPING_UPLOAD;
        st = tmem_vk_import_mapping(g->gpu, &md, &g->map);
        if (!st) st = tmem_vk_mapping_get_info(g->map, &mi);
    }
    free(r);
    if (st) return tmrt__fail(err, st, "weights on the device: %s", tmem_strerror(st));
    g->imported = mi.imported;
    g->weight_bytes = mi.imported ? mi.imported_bytes : mi.device_bytes;
    for (uint32_t i = 0; i < n && !st; i++) {
        tmem_vk_span sp;
        if ((st = tmem_vk_mapping_span(g->map, i, &sp))) return tmrt__fail(err, st, "weight span %u", i);
        tmrt_vk_wmat *d = refs[i].dst;
        d->buf = (tmrt_vk_buf){sp.buffer, sp.offset, align_up(sp.size, 4)};
    }
    return TMEM_OK;
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
    if (dev->gpu) {
        g->gpu = dev->gpu;
    } else if ((st = tmem_gpu_attach(ctx, &gd, &g->gpu))) {
        tmrt__fail(err, st, "Vulkan device %u: %s", dev->index, tmem_strerror(st));
        goto fail;
    } else {
        g->own_gpu = true;
    }
    char msg[200];
    if ((st = tmrt__vk_create(g->gpu, NULL, &g->vk, msg, sizeof msg))) {
        tmrt__fail(err, st, "Vulkan compute: %s", msg);
        goto fail;
    }
    uint32_t n = collect(m, g, refs);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const kern_wmat *s = refs[i].src;
        tmrt_vk_wmat *d = refs[i].dst;
        d->type = s->type;
        d->n_in = (uint32_t)s->n_in;
        d->n_out = (uint32_t)s->n_out;
        d->row_bytes = s->row_bytes;
        total += refs[i].bytes;
    }
    if (!g->naive) {
        if ((st = place(m, g, dev, refs, n, err))) goto fail;
    } else { /* a VkDeviceMemory per tensor */
        if (!(g->tblocks = calloc(n, sizeof *g->tblocks))) {
            st = tmrt__fail(err, TMEM_E_NO_MEMORY, "no memory for the device model");
            goto fail;
        }
        for (uint32_t i = 0; i < n; i++, g->n_tblocks++) {
            if ((st = tmrt__gpu_raw_create(g->gpu, false, "weight", refs[i].bytes, &g->tblocks[i], err))) goto fail;
            g->weight_bytes += g->tblocks[i].raw_bytes;
            refs[i].dst->buf = tmrt__gpu_sub(&g->tblocks[i], 0, align_up(refs[i].bytes, 4));
        }
        if ((st = naive_upload(g, refs, n, total, err))) goto fail;
    }
    if (m->w.output.data == m->w.token_embd.data) g->output = g->token_embd;
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
    if (g->vk) tmrt__vk_destroy(g->vk); /* waits for the device */
    tmem_vk_mapping_destroy(g->map);
    for (uint32_t i = 0; i < g->n_tblocks; i++) tmrt__gpu_raw_destroy(g->gpu, &g->tblocks[i]);
    free(g->tblocks);
    if (g->own_gpu) tmem_gpu_release(g->gpu);
    tmem_context_destroy(g->own_ctx);
    free(g);
}

uint64_t tmrt__gpu_model_weight_bytes(const tmrt_gpu_model *g, bool *imported) {
    if (imported) *imported = g ? g->imported : false;
    return g ? g->weight_bytes : 0;
}

tmem_gpu *tmrt__gpu_model_gpu(const tmrt_gpu_model *g) { return g ? g->gpu : NULL; }

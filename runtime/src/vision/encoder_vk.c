/*
 * The vision encoder on Vulkan (a handle opened with tmrt_vision_desc::gpu):
 * the same forward pass as encoder.c, recorded from the compute layer's ops
 * (runtime/src/gpu/vk_ops.h) into one command buffer.
 *
 *   weights     the mmproj's tensor data uploaded once, at open, into one
 *               buffer of a DEVICE type (WEIGHTS role) through a
 *               host-visible staging heap; every matrix and vector is a
 *               binding at its offset in the file's data (never converted)
 *   arena       one VISION_INTERMEDIATE heap of the DEVICE type laid out by
 *               the library's planner from the vision block's table
 *               (tmem_model_graph_get, by buffer id) for this grid, plus the
 *               encoder's input image (CHW floats, alive in the patch
 *               embedding's step only: later buffers reuse its bytes); the
 *               barrier the aliasing needs goes after every op
 *   input       an NV12 surface is imported (tmem_vk_surface_import, no
 *               copy) and converted by the library's shader
 *               (tmem_vk_convert_nv12) straight into the arena's image: one
 *               image copy. Any other surface (or a device that cannot
 *               import it) is converted on the CPU (tmem_surface_convert)
 *               into a host-visible staging image the recording copies in:
 *               two copies.
 *   output      the merger's last linear writes a host-visible buffer; the
 *               rows are copied into the caller's embeddings.
 *
 * Kept between encodes (the frame loop allocates nothing): the arena, the
 * recording (for the last grid and input kind: re-submitted as it is) and
 * the last NV12 surface's import (retained until another surface comes or
 * the handle closes). One encode at a time per handle (a mutex).
 *
 * A frame read while its writer rewrites it is never accepted: around the
 * conversion the encode holds a use of the surface (tmem_surface_use_begin)
 * and reads the seed and the use count before the submission and after
 * the shader finished; a writer that marks its write as a use (use_begin,
 * lock, write, unlock, use_end: docs/vision.md) either shows in a use count
 * above ours or has moved the seed, and the conversion runs again (up to
 * VK_FRAME_TRIES times, then TMEM_E_BUSY).
 */
#include "vision/vision_internal.h"

#if TMRT_HAVE_VULKAN
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpu/vk_ops.h"
#include "typedmem/vulkan.h"

enum { VK_FRAME_TRIES = 8 }; /* 0.5 ms x try between tries: 14 ms of waiting at most */
#define VK_STAGE_BYTES (32ull << 20)

typedef struct vk_block {
    tmrt_vk_wmat qkv, out, up, down, ln1_w, ln1_b, ln2_w, ln2_b, qkv_b, out_b, up_b, down_b;
} vk_block;

/* A device allocation: a heap holding one VkBuffer. */
typedef struct vk_alloc {
    tmem_heap *heap;
    VkBuffer buf;
    void *host;          /* host-visible types */
    uint64_t bytes;
} vk_alloc;

struct tmrt_vis_vk {
    tmem_context *ctx;
    tmem_gpu *gpu;
    tmrt_vk *vk;
    tmrt_vk_rec *rec;
    pthread_mutex_t lock;
    tmem_type *dev, *hv;          /* DEVICE, DEVICE_HOST_VISIBLE (this handle's) */
    vk_alloc w;                   /* the weights */
    tmrt_vk_wmat patch0, patch1, pos, mm0, mm2, patch_b, post_w, post_b, mm0_b, mm2_b;
    vk_block *blocks;
    /* the grid the arena and the recording are for */
    bool ready, staged;
    tmrt_vision_grid grid;
    tmem_model_graph graph;
    uint64_t off[TMEM_MODEL_BUF_COUNT], image_off, image_bytes, arena_bytes;
    vk_alloc arena, out, stage;
    /* the last NV12 surface, imported */
    tmem_surface *src_surface;
    tmem_vk_surface_memory src;
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void alloc_free(tmrt_vis_vk *g, vk_alloc *a) {
    if (a->buf) tmem_vk_buffer_destroy(g->gpu, a->buf);
    tmem_heap_destroy(a->heap);
    memset(a, 0, sizeof *a);
}

/* A heap of `type` (role) holding one buffer of `bytes`. */
static tmem_status alloc_new(tmrt_vis_vk *g, tmem_type *type, tmem_role role, uint64_t bytes, const char *name,
                             vk_alloc *a, tmrt_error *err) {
    memset(a, 0, sizeof *a);
    uint64_t size = (bytes + 255) & ~255ull;
    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_LINEAR, hd.type = type, hd.role = role, hd.size = size + 256, hd.name = name;
    tmem_alloc_desc ad = {0};
    ad.size = size, ad.alignment = 256;
    tmem_alloc_info ai;
    tmem_device_span sp;
    tmem_status st = tmem_heap_create(g->ctx, &hd, &a->heap);
    if (st == TMEM_OK) st = tmem_heap_alloc_ex(a->heap, &ad, &ai);
    if (st == TMEM_OK) st = tmem_heap_device_span(a->heap, ai.offset, size, &sp);
    if (st == TMEM_OK)
        st = tmem_vk_buffer_create(g->gpu, a->heap, ai.offset, size,
                                   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                   &a->buf);
    if (st != TMEM_OK) {
        alloc_free(g, a);
        return tmrt__fail(err, st, "GPU vision %s (%llu bytes): %s", name, (unsigned long long)bytes,
                          tmem_status_name(st));
    }
    a->host = sp.host, a->bytes = size;
    return TMEM_OK;
}

/* ---- weights --------------------------------------------------------------- */

typedef struct span {
    const uint8_t *lo, *hi;
} span;

static void span_add(span *s, const void *p, uint64_t bytes) {
    const uint8_t *b = p;
    if (!s->lo || b < s->lo) s->lo = b;
    if (b + bytes > s->hi) s->hi = b + bytes;
}
static uint64_t mat_bytes(const kern_wmat *m) { return ((uint64_t)m->n_out * m->row_bytes + 3) & ~3ull; }

static tmrt_vk_wmat dev_mat(const tmrt_vis_vk *g, const span *s, const kern_wmat *m) {
    tmrt_vk_wmat w = {{g->w.buf, (uint64_t)((const uint8_t *)m->data - s->lo), mat_bytes(m)}, m->type,
                      (uint32_t)m->n_in, (uint32_t)m->n_out, m->row_bytes};
    return w;
}
static tmrt_vk_wmat dev_vec(const tmrt_vis_vk *g, const span *s, const float *p, uint32_t n) {
    tmrt_vk_wmat w = {{g->w.buf, (uint64_t)((const uint8_t *)p - s->lo), (uint64_t)n * 4}, TMEM_GGML_F32, n, 1,
                      (uint64_t)n * 4};
    return w;
}

/* The tensor data as one range of the mapping (or the naive copy). */
static span weight_span(const tmrt_vision *v) {
    const tmrt_vision_config *c = &v->cfg;
    uint32_t H = c->hidden, m2 = c->merge * c->merge;
    span s = {NULL, NULL};
    const kern_wmat *mats[] = {&v->patch0, &v->patch1, &v->pos, &v->mm0, &v->mm2};
    for (size_t i = 0; i < sizeof mats / sizeof *mats; i++) span_add(&s, mats[i]->data, mat_bytes(mats[i]));
    span_add(&s, v->patch_b, H * 4), span_add(&s, v->post_w, H * 4), span_add(&s, v->post_b, H * 4);
    span_add(&s, v->mm0_b, (uint64_t)m2 * H * 4), span_add(&s, v->mm2_b, (uint64_t)c->out_hidden * 4);
    for (uint32_t l = 0; l < c->depth; l++) {
        const vis_block *b = &v->blocks[l];
        const kern_wmat *bm[] = {&b->qkv, &b->out, &b->up, &b->down};
        for (size_t i = 0; i < 4; i++) span_add(&s, bm[i]->data, mat_bytes(bm[i]));
        span_add(&s, b->ln1_w, H * 4), span_add(&s, b->ln1_b, H * 4), span_add(&s, b->ln2_w, H * 4);
        span_add(&s, b->ln2_b, H * 4), span_add(&s, b->qkv_b, 3ull * H * 4), span_add(&s, b->out_b, H * 4);
        span_add(&s, b->up_b, (uint64_t)c->ff * 4), span_add(&s, b->down_b, H * 4);
    }
    return s;
}

static tmem_status upload(tmrt_vis_vk *g, const span *s, tmrt_error *err) {
    uint64_t total = (uint64_t)(s->hi - s->lo), piece = total < VK_STAGE_BYTES ? total : VK_STAGE_BYTES;
    vk_alloc stage;
    tmem_status st = alloc_new(g, g->hv, TMEM_ROLE_SCRATCH, piece, "upload staging", &stage, err);
    if (st != TMEM_OK) return st;
    if (!stage.host) {
        alloc_free(g, &stage);
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "GPU vision: the host-visible type has no host mapping");
    }
    for (uint64_t o = 0; o < total && st == TMEM_OK; o += piece) {
        uint64_t n = total - o < piece ? total - o : piece, n4 = (n + 3) & ~3ull;
        memcpy(stage.host, s->lo + o, (size_t)n);
        if (n4 > n) memset((uint8_t *)stage.host + n, 0, (size_t)(n4 - n));
        if ((st = tmrt__vk_begin(g->rec)) == TMEM_OK) {
            tmrt__vk_copy(g->rec, (tmrt_vk_buf){stage.buf, 0, n4}, (tmrt_vk_buf){g->w.buf, o, n4}, n4);
            tmrt__vk_barrier(g->rec);
            st = tmrt__vk_run(g->rec);
        }
        if (st != TMEM_OK) (void)tmrt__fail(err, st, "GPU vision: weight upload: %s", tmrt__vk_rec_error(g->rec));
    }
    alloc_free(g, &stage);
    return st;
}

static tmem_status make_type(tmem_context *ctx, tmem_placement pl, const char *what, tmem_type **out,
                             tmrt_error *err) {
    static _Atomic unsigned serial;
    char name[64];
    snprintf(name, sizeof name, "/memory/vision.%s.%u", what, serial++);
    tmem_type_desc td = {0};
    td.name = name, td.placement = pl;
    tmem_status st = tmem_type_create(ctx, &td, out);
    return st == TMEM_OK ? TMEM_OK
                         : tmrt__fail(err, st, "GPU vision: %s type: %s (is the gpu attached to this context?)", what,
                                      tmem_status_name(st));
}

void tmrt__vis_vk_close(tmrt_vis_vk *g) {
    if (!g) return;
    if (g->rec) (void)tmrt__vk_wait(g->rec, UINT64_MAX);
    if (g->src_surface) tmem_vk_surface_release(g->gpu, &g->src);
    alloc_free(g, &g->arena), alloc_free(g, &g->out), alloc_free(g, &g->stage), alloc_free(g, &g->w);
    tmrt__vk_rec_destroy(g->rec);
    tmrt__vk_destroy(g->vk);
    if (g->dev) TMEM_IGNORE(tmem_type_destroy(g->dev));
    if (g->hv) TMEM_IGNORE(tmem_type_destroy(g->hv));
    free(g->blocks);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

tmem_status tmrt__vis_vk_open(tmrt_vision *v, tmem_gpu *gpu, tmrt_vis_vk **out, tmrt_error *err) {
    *out = NULL;
    const tmrt_vision_config *c = &v->cfg;
    tmrt_vis_vk *g = calloc(1, sizeof *g);
    if (!g) return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
    g->gpu = gpu, g->ctx = v->ctx;
    pthread_mutex_init(&g->lock, NULL);
    g->blocks = calloc(c->depth, sizeof *g->blocks);
    char msg[192] = "";
    tmem_status st = g->blocks ? TMEM_OK : TMEM_E_NO_MEMORY;
    if (st == TMEM_OK && (st = tmrt__vk_create(gpu, &(tmrt_vk_desc){0}, &g->vk, msg, sizeof msg)) != TMEM_OK)
        (void)tmrt__fail(err, st, "GPU vision: %s", msg);
    if (st == TMEM_OK &&
        (st = tmrt__vk_rec_create(g->vk, &(tmrt_vk_rec_desc){.max_dispatches = 20 * c->depth + 64}, &g->rec)))
        (void)tmrt__fail(err, st, "GPU vision: recorder: %s", tmem_status_name(st));
    if (st == TMEM_OK) st = make_type(v->ctx, TMEM_PLACEMENT_DEVICE, "dev", &g->dev, err);
    if (st == TMEM_OK) st = make_type(v->ctx, TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, "hv", &g->hv, err);
    span s = weight_span(v);
    if (st == TMEM_OK) st = alloc_new(g, g->dev, TMEM_ROLE_WEIGHTS, (uint64_t)(s.hi - s.lo), "weights", &g->w, err);
    if (st == TMEM_OK) st = upload(g, &s, err);
    if (st != TMEM_OK) {
        tmrt__vis_vk_close(g);
        return st;
    }
    uint32_t H = c->hidden, m2 = c->merge * c->merge;
    g->patch0 = dev_mat(g, &s, &v->patch0), g->patch1 = dev_mat(g, &s, &v->patch1), g->pos = dev_mat(g, &s, &v->pos);
    g->mm0 = dev_mat(g, &s, &v->mm0), g->mm2 = dev_mat(g, &s, &v->mm2);
    g->patch_b = dev_vec(g, &s, v->patch_b, H), g->post_w = dev_vec(g, &s, v->post_w, H);
    g->post_b = dev_vec(g, &s, v->post_b, H), g->mm0_b = dev_vec(g, &s, v->mm0_b, m2 * H);
    g->mm2_b = dev_vec(g, &s, v->mm2_b, c->out_hidden);
    for (uint32_t l = 0; l < c->depth; l++) {
        const vis_block *b = &v->blocks[l];
        vk_block *d = &g->blocks[l];
        d->qkv = dev_mat(g, &s, &b->qkv), d->out = dev_mat(g, &s, &b->out);
        d->up = dev_mat(g, &s, &b->up), d->down = dev_mat(g, &s, &b->down);
        d->ln1_w = dev_vec(g, &s, b->ln1_w, H), d->ln1_b = dev_vec(g, &s, b->ln1_b, H);
        d->ln2_w = dev_vec(g, &s, b->ln2_w, H), d->ln2_b = dev_vec(g, &s, b->ln2_b, H);
        d->qkv_b = dev_vec(g, &s, b->qkv_b, 3 * H), d->out_b = dev_vec(g, &s, b->out_b, H);
        d->up_b = dev_vec(g, &s, b->up_b, c->ff), d->down_b = dev_vec(g, &s, b->down_b, H);
    }
    *out = g;
    return TMEM_OK;
}

uint64_t tmrt__vis_vk_weight_bytes(const tmrt_vis_vk *g) { return g ? g->w.bytes : 0; }

/* ---- the recording ----------------------------------------------------------- */

static tmrt_vk_buf act(const tmrt_vis_vk *g, tmem_model_buf_id id) {
    return (tmrt_vk_buf){g->arena.buf, g->off[id], g->graph.bufs[g->graph.buf_index[id]].size};
}

static void linear(tmrt_vk_rec *r, const tmrt_vk_wmat *w, const tmrt_vk_wmat *bias, tmrt_vk_buf x, tmrt_vk_buf y,
                   uint32_t n_tok) {
    tmrt_vk_matmul m = {*w, x, y, {0}, 0, 0, n_tok, 0, NULL};
    (void)tmrt__vk_matmul(r, &m);
    tmrt__vk_barrier(r);
    (void)tmrt__vk_bias_add(r, y, bias, w->n_out, n_tok, 0);
    tmrt__vk_barrier(r);
}

static void layernorm(tmrt_vk_rec *r, tmrt_vk_buf x, tmrt_vk_buf out, const tmrt_vk_wmat *w, const tmrt_vk_wmat *b,
                      uint32_t n, uint32_t rows, float eps) {
    tmrt_vk_layernorm ln = {x, out, *w, *b, n, rows, 0, 0, eps};
    (void)tmrt__vk_layernorm(r, &ln);
    tmrt__vk_barrier(r);
}

static void record_forward(tmrt_vis_vk *g, const tmrt_vision *v) {
    const tmrt_vision_config *c = &v->cfg;
    const tmrt_vision_grid *gr = &g->grid;
    tmrt_vk_rec *r = g->rec;
    uint32_t P = gr->n_patches, H = c->hidden, hd = H / c->heads, m2 = c->merge * c->merge, T = P / m2;
    tmrt_vk_buf image = {g->arena.buf, g->image_off, g->image_bytes};
    if (g->staged) {
        tmrt__vk_copy(r, (tmrt_vk_buf){g->stage.buf, 0, g->image_bytes}, image, g->image_bytes);
        tmrt__vk_barrier(r);
    }
    tmrt_vk_buf in = act(g, TMEM_MODEL_BUF_LAYER_IN), n1 = act(g, TMEM_MODEL_BUF_NORM1);
    tmrt_vk_buf qkv = act(g, TMEM_MODEL_BUF_QKV), ao = act(g, TMEM_MODEL_BUF_ATTN_OUT);
    tmrt_vk_buf ap = act(g, TMEM_MODEL_BUF_ATTN_PROJ), res = act(g, TMEM_MODEL_BUF_RESIDUAL);
    tmrt_vk_buf n2 = act(g, TMEM_MODEL_BUF_NORM2), f1 = act(g, TMEM_MODEL_BUF_FC1), f2 = act(g, TMEM_MODEL_BUF_FC2);
    tmrt_vk_buf lo = act(g, TMEM_MODEL_BUF_LAYER_OUT);
    /* patch embedding: both halves of the Conv3d over the same frame (the
     * image repeated as the temporal pair), summed, + bias + positions */
    tmrt_vk_patches pt = {gr->width, gr->height, c->patch, c->merge};
    tmrt_vk_matmul m0 = {g->patch0, image, in, {0}, 0, 0, P, 0, &pt}, m1 = {g->patch1, image, n1, {0}, 0, 0, P, 0, &pt};
    (void)tmrt__vk_matmul(r, &m0);
    (void)tmrt__vk_matmul(r, &m1);
    tmrt__vk_barrier(r);
    (void)tmrt__vk_add(r, in, n1, in, P * H);
    tmrt__vk_barrier(r);
    (void)tmrt__vk_bias_add(r, in, &g->patch_b, H, P, 0);
    tmrt__vk_barrier(r);
    tmrt_vk_pos_embed pe = {in, g->pos, H, gr->grid_w, gr->grid_h, c->merge};
    (void)tmrt__vk_pos_embed(r, &pe);
    tmrt__vk_barrier(r);
    for (uint32_t l = 0; l < c->depth; l++) {
        const vk_block *b = &g->blocks[l];
        layernorm(r, in, n1, &b->ln1_w, &b->ln1_b, H, P, c->eps);
        linear(r, &b->qkv, &b->qkv_b, n1, qkv, P);
        tmrt_vk_vis_rope rp = {qkv, P, H, c->heads, 3 * H, gr->grid_w, c->merge};
        (void)tmrt__vk_vis_rope(r, &rp);
        tmrt__vk_barrier(r);
        tmrt_vk_buf k = {qkv.buffer, qkv.offset + (uint64_t)H * 4, qkv.range - (uint64_t)H * 4};
        tmrt_vk_buf vv = {qkv.buffer, qkv.offset + (uint64_t)2 * H * 4, qkv.range - (uint64_t)2 * H * 4};
        tmrt_vk_attention_dense a = {qkv, k, vv, ao, {0}, {0}, P, P, c->heads, c->heads, hd, 1,
                                     3 * H, hd, 3 * H, hd, 3 * H, hd, 0, 0, 0, 0, 0};
        (void)tmrt__vk_attention_dense(r, &a);
        tmrt__vk_barrier(r);
        linear(r, &b->out, &b->out_b, ao, ap, P);
        (void)tmrt__vk_add(r, in, ap, res, P * H);
        tmrt__vk_barrier(r);
        layernorm(r, res, n2, &b->ln2_w, &b->ln2_b, H, P, c->eps);
        linear(r, &b->up, &b->up_b, n2, f1, P);
        (void)tmrt__vk_gelu(r, f1, P * c->ff, false);
        tmrt__vk_barrier(r);
        linear(r, &b->down, &b->down_b, f1, f2, P);
        (void)tmrt__vk_add(r, res, f2, lo, P * H); /* layer_out is layer_in (pinned at 0) */
        tmrt__vk_barrier(r);
    }
    /* merger: LN per patch, merge^2 consecutive patches (merge order) are one
     * row of m2 H, fc1, GELU (erf), fc2 into the host-visible output */
    layernorm(r, in, n1, &g->post_w, &g->post_b, H, P, c->eps);
    linear(r, &g->mm0, &g->mm0_b, n1, qkv, T);
    (void)tmrt__vk_gelu(r, qkv, T * m2 * H, true);
    tmrt__vk_barrier(r);
    linear(r, &g->mm2, &g->mm2_b, qkv, (tmrt_vk_buf){g->out.buf, 0, g->out.bytes}, T);
    tmrt__vk_barrier_host(r);
}

/* The arena, output and staging for grid gr, and the recording. */
static tmem_status prepare(tmrt_vis_vk *g, const tmrt_vision *v, const tmrt_vision_grid *gr, bool staged,
                           tmrt_error *err) {
    if (g->ready && g->staged == staged && !memcmp(&g->grid, gr, sizeof *gr)) return TMEM_OK;
    (void)tmrt__vk_wait(g->rec, UINT64_MAX);
    g->ready = false;
    alloc_free(g, &g->arena), alloc_free(g, &g->out), alloc_free(g, &g->stage);
    const tmrt_vision_config *c = &v->cfg;
    g->grid = *gr, g->staged = staged;
    g->image_bytes = 3ull * gr->width * gr->height * 4;
    uint64_t align = tmrt__vk_limits(g->vk)->storage_align;
    tmem_plan *plan = NULL;
    tmem_status st = tmrt__vis_block_graph(v, gr->n_patches, &g->graph, err);
    if (st == TMEM_OK) st = tmrt__vis_plan_block(&g->graph, align > 64 ? align : 64, g->image_bytes, &plan, err);
    tmem_plan_info pi;
    if (st == TMEM_OK && (st = tmem_plan_get_info(plan, &pi)) != TMEM_OK)
        (void)tmrt__fail(err, st, "vision plan: %s", tmem_status_name(st));
    if (st == TMEM_OK) {
        for (uint32_t i = 0; i < g->graph.buf_count; i++) g->off[g->graph.bufs[i].id] = tmem_plan_offset(plan, i);
        g->image_off = tmem_plan_offset(plan, g->graph.buf_count);
        g->arena_bytes = pi.arena;
        st = alloc_new(g, g->dev, TMEM_ROLE_VISION_INTERMEDIATE, pi.arena, "arena", &g->arena, err);
    }
    tmem_plan_destroy(plan);
    if (st == TMEM_OK)
        st = alloc_new(g, g->hv, TMEM_ROLE_VISION_INTERMEDIATE, (uint64_t)gr->n_tokens * c->out_hidden * 4,
                       "embeddings", &g->out, err);
    if (st == TMEM_OK && staged)
        st = alloc_new(g, g->hv, TMEM_ROLE_IMAGE, g->image_bytes, "staged image", &g->stage, err);
    if (st == TMEM_OK && (!g->out.host || (staged && !g->stage.host)))
        st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "GPU vision: the host-visible type has no host mapping");
    if (st == TMEM_OK && (st = tmrt__vk_begin(g->rec)) == TMEM_OK) {
        record_forward(g, v);
        if ((st = tmrt__vk_end(g->rec)) != TMEM_OK)
            (void)tmrt__fail(err, st, "GPU vision: recording: %s", tmrt__vk_rec_error(g->rec));
    }
    if (st != TMEM_OK) {
        alloc_free(g, &g->arena), alloc_free(g, &g->out), alloc_free(g, &g->stage);
        return st;
    }
    g->ready = true;
    return TMEM_OK;
}

/* The NV12 frame into the arena's image through the shader, the frame's
 * seed and use count unchanged across it (see the top of the file). */
static tmem_status convert_frame(tmrt_vis_vk *g, const tmrt_vision *v, tmem_surface *s, uint32_t *tries,
                                 tmrt_error *err) {
    tmem_convert_desc cd;
    tmrt__vis_convert_desc(&v->cfg, &cd);
    tmem_status st = tmem_surface_use_begin(s);
    if (st != TMEM_OK) return tmrt__fail(err, st, "frame use: %s", tmem_status_name(st));
    for (*tries = 1; *tries <= VK_FRAME_TRIES; (*tries)++) {
        uint32_t n0 = 0, n1 = 0, s0 = tmem_surface_seed(s);
        if ((st = tmem_surface_use_count(s, &n0)) != TMEM_OK) break;
        if (n0 == 1 &&
            (st = tmem_vk_convert_nv12(g->gpu, &g->src, &cd, g->arena.buf, g->image_off, g->grid.width,
                                       g->grid.height)) != TMEM_OK)
            break;
        if ((st = tmem_surface_use_count(s, &n1)) != TMEM_OK) break;
        if (n0 == 1 && n1 == 1 && tmem_surface_seed(s) == s0) break; /* nobody wrote meanwhile */
        st = TMEM_E_BUSY;
        struct timespec pause = {0, 500000L * *tries}; /* a writer is at work: give it time */
        nanosleep(&pause, NULL);
    }
    tmem_status ust = tmem_surface_use_end(s);
    if (st == TMEM_OK) st = ust;
    if (st == TMEM_E_BUSY)
        return tmrt__fail(err, st, "the frame was rewritten during %u conversions in a row", (unsigned)VK_FRAME_TRIES);
    if (st != TMEM_OK) return tmrt__fail(err, st, "NV12 conversion on the GPU: %s", tmem_status_name(st));
    return TMEM_OK;
}

tmem_status tmrt__vis_vk_encode(tmrt_vision *v, tmem_surface **image, const tmrt_vision_encode_desc *d,
                                float *embeddings, size_t ld, tmrt_vision_stats *stats, tmrt_error *err) {
    tmrt_vis_vk *g = v->gpu_enc;
    tmrt_vision_grid gr;
    tmem_status st = tmrt_vision_image_grid(v, *image, &gr, err);
    if (st != TMEM_OK) return st;
    tmem_surface_info info;
    if ((st = tmem_surface_get_info(*image, &info)) != TMEM_OK)
        return tmrt__fail(err, st, "image surface: %s", tmem_status_name(st));
    pthread_mutex_lock(&g->lock);
    double t0 = now_ms();
    bool nv12 = info.layout.format == TMEM_FORMAT_NV12;
    if (nv12 && g->src_surface != *image) { /* import the new frame surface (kept for the next encode) */
        if (g->src_surface) tmem_vk_surface_release(g->gpu, &g->src), g->src_surface = NULL;
        if (tmem_vk_surface_import(g->gpu, *image, &g->src) == TMEM_OK) g->src_surface = *image;
    }
    bool staged = !nv12 || !g->src_surface;
    uint32_t copies = 0, tries = 0;
    if ((st = prepare(g, v, &gr, staged, err)) != TMEM_OK) goto out;
    if (staged) { /* CPU conversion into the host-visible staging image, copied in by the recording */
        tmem_convert_desc cd;
        tmrt__vis_convert_desc(&v->cfg, &cd);
        tmem_tensor_view dst;
        st = tmem_tensor_view_chw(g->stage.host, TMEM_DTYPE_F32, 3, gr.height, gr.width, &dst);
        if (st == TMEM_OK) st = tmem_surface_convert(*image, &cd, &dst);
        if (st != TMEM_OK) {
            (void)tmrt__fail(err, st, "image conversion: %s", tmem_status_name(st));
            goto out;
        }
        copies = 2;
    } else {
        if ((st = convert_frame(g, v, *image, &tries, err)) != TMEM_OK) goto out;
        copies = 1;
    }
    if (!d->keep_surface) {
        if (g->src_surface == *image) tmem_vk_surface_release(g->gpu, &g->src), g->src_surface = NULL;
        tmem_surface_release(*image);
        *image = NULL;
    }
    double t1 = now_ms();
    if ((st = tmrt__vk_submit(g->rec)) == TMEM_OK) st = tmrt__vk_wait(g->rec, UINT64_MAX);
    if (st != TMEM_OK) {
        (void)tmrt__fail(err, st, "GPU vision encode: %s", tmrt__vk_rec_error(g->rec));
        goto out;
    }
    uint32_t oh = v->cfg.out_hidden;
    for (uint32_t t = 0; t < gr.n_tokens; t++)
        memcpy(embeddings + (size_t)t * ld, (const float *)g->out.host + (size_t)t * oh, (size_t)oh * 4);
    if (stats) {
        stats->grid = gr;
        stats->preprocess_ms = t1 - t0;
        stats->encode_ms = now_ms() - t1;
        stats->patch_bytes = g->image_bytes;
        stats->arena_bytes = g->arena_bytes;
        stats->image_copies = copies;
        stats->device_bytes = g->arena.bytes + g->out.bytes + g->stage.bytes;
        stats->frame_tries = tries;
    }
out:
    pthread_mutex_unlock(&g->lock);
    return st;
}

#else /* !TMRT_HAVE_VULKAN */

tmem_status tmrt__vis_vk_open(tmrt_vision *v, tmem_gpu *gpu, tmrt_vis_vk **out, tmrt_error *err) {
    (void)v, (void)gpu;
    *out = NULL;
    return tmrt__fail(err, TMEM_E_UNSUPPORTED, "GPU vision: the runtime was built without Vulkan");
}
void tmrt__vis_vk_close(tmrt_vis_vk *g) { (void)g; }
uint64_t tmrt__vis_vk_weight_bytes(const tmrt_vis_vk *g) { return (void)g, 0; }
tmem_status tmrt__vis_vk_encode(tmrt_vision *v, tmem_surface **image, const tmrt_vision_encode_desc *d,
                                float *embeddings, size_t ld, tmrt_vision_stats *stats, tmrt_error *err) {
    (void)v, (void)image, (void)d, (void)embeddings, (void)ld, (void)stats;
    return tmrt__fail(err, TMEM_E_UNSUPPORTED, "GPU vision: the runtime was built without Vulkan");
}

#endif

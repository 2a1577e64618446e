/*
 * Where one encode's memory comes from, and the encode itself.
 *
 * Typed: the patch tensor is the only allocation of a linear IMAGE-role heap
 * (destroyed as soon as the patch embedding has read it); the activations
 * are one placement heap (VISION_INTERMEDIATE) laid out by the library's
 * planner from the vision block's buffer graph (tmem_model_layer_graph) for
 * THIS image's patch count, with layer_in and layer_out pinned at offset 0
 * (their lifetimes do not overlap, so a block's output is the next block's
 * input without a copy) and every block re-using the plan; per-thread
 * attention tiles, the thread pool and matmul scratch come from a linear
 * SCRATCH heap. All three are gone when tmrt_vision_encode returns.
 *
 * Naive: the multi-copy image chain, then a malloc per tensor per block,
 * freed at the block's end (a framework without a planner); same kernels.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "vision/vision_internal.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

tmem_status tmrt_vision_image_grid(const tmrt_vision *v, tmem_surface *image, tmrt_vision_grid *out,
                                   tmrt_error *err) {
    if (out) memset(out, 0, sizeof *out);
    tmem_surface_info info;
    if (!v || !image || !out || tmem_surface_get_info(image, &info) != TMEM_OK)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "image grid: NULL model or output, or not a surface");
    if (tmrt_vision_smart_resize(&v->cfg, info.layout.width, info.layout.height, out) != TMEM_OK)
        return tmrt__fail(err, TMEM_E_INVALID_ARG,
                          "image %ux%u: smaller than %u pixels a side or aspect ratio above 200",
                          info.layout.width, info.layout.height, v->cfg.patch * v->cfg.merge);
    return TMEM_OK;
}

/* The vision block's graph as a plan problem (layer_in / layer_out pinned). */
enum { GRAPH_CAP = 32 };
static const char *const buffer_names[] = {"layer_in", "norm1", "qkv", "attn_out", "attn_proj",
                                           "residual", "norm2", "fc1", "fc2", "layer_out"};
enum { N_BUFFERS = sizeof buffer_names / sizeof buffer_names[0] };

static tmem_status plan_block(const tmrt_vision *v, uint32_t patches, tmem_plan **plan, int32_t which[N_BUFFERS],
                              tmrt_error *err) {
    tmem_model_desc m;
    if (tmem_model_preset("qwen3.5-0.8b", &m) != TMEM_OK)
        return tmrt__fail(err, TMEM_E_NOT_FOUND, "no base model preset");
    const tmrt_vision_config *c = &v->cfg;
    m.vis_depth = c->depth, m.vis_hidden = c->hidden, m.vis_ff = c->ff, m.vis_heads = c->heads;
    m.vis_patch = c->patch, m.vis_merge = c->merge, m.vis_temporal_patch = c->temporal;
    m.vis_out_hidden = c->out_hidden, m.vis_pos_embd = c->n_pos;
    tmem_model_buffer bufs[GRAPH_CAP];
    uint32_t n = 0;
    tmem_status st = tmem_model_layer_graph(&m, TMEM_MODEL_LAYER_VISION, patches, patches, 0, bufs, GRAPH_CAP, &n);
    if (st != TMEM_OK) return tmrt__fail(err, st, "vision graph: %s", tmem_status_name(st));
    tmem_plan_problem *pb;
    if (tmem_plan_problem_create(&pb) != TMEM_OK) return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
    for (int k = 0; k < N_BUFFERS; k++) which[k] = -1;
    for (uint32_t i = 0; i < n && st == TMEM_OK; i++) {
        tmem_plan_buffer b = {0};
        b.id = bufs[i].name, b.size = bufs[i].size, b.alignment = 64, b.start = bufs[i].start, b.end = bufs[i].end;
        for (int k = 0; k < N_BUFFERS; k++)
            if (!strcmp(bufs[i].name, buffer_names[k])) which[k] = (int32_t)i;
        if (!strcmp(bufs[i].name, "layer_in") || !strcmp(bufs[i].name, "layer_out"))
            b.flags = TMEM_PLAN_BUFFER_FIXED, b.offset = 0;
        st = tmem_plan_problem_add(pb, &b, NULL);
    }
    for (int k = 0; k < N_BUFFERS && st == TMEM_OK; k++)
        if (which[k] < 0) st = TMEM_E_NOT_FOUND;
    tmem_plan_desc pd = {0};
    pd.node_limit = TMEM_FIT_PLAN_NODES; /* a dozen buffers: the greedy portfolio is near optimal */
    if (st == TMEM_OK) st = tmem_plan_solve(pb, &pd, plan);
    tmem_plan_problem_destroy(pb);
    if (st != TMEM_OK) return tmrt__fail(err, st, "vision plan: %s", tmem_status_name(st));
    return TMEM_OK;
}

static tmem_status make_heap(tmem_context *ctx, tmem_role role, tmem_heap_kind kind, uint64_t size, const char *name,
                             tmem_heap **out, tmrt_error *err) {
    tmem_type *t;
    tmem_status st = tmem_role_get_type(ctx, role, &t);
    tmem_heap_desc hd = {0};
    hd.kind = kind, hd.type = t, hd.role = role, hd.size = size, hd.name = name;
    if (st == TMEM_OK) st = tmem_heap_create(ctx, &hd, out);
    if (st != TMEM_OK)
        return tmrt__fail(err, st, "heap %s (%llu bytes): %s", name, (unsigned long long)size, tmem_status_name(st));
    return TMEM_OK;
}

static tmem_status heap_take(tmem_heap *h, uint64_t size, void **out, tmrt_error *err) {
    tmem_status st = tmem_heap_alloc(h, size ? size : 64, 64, out);
    return st == TMEM_OK ? TMEM_OK
                         : tmrt__fail(err, st, "scratch allocation of %llu bytes: %s", (unsigned long long)size,
                                      tmem_status_name(st));
}

/* What the hooks of both modes need. */
typedef struct encode_state {
    const tmrt_vision *v;
    const tmrt_vision_grid *g;
    vis_buffers *b;
    tmem_heap *image_heap;  /* typed */
    bool naive, failed;
} encode_state;

/* Naive: a malloc per tensor for each block, freed when the block ends. */
static void naive_free_block(vis_buffers *b) {
    float **p[] = {&b->norm1, &b->qkv, &b->attn_out, &b->attn_proj, &b->residual, &b->norm2, &b->fc1, &b->fc2};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(*p[i]), *p[i] = NULL;
}

static bool naive_alloc_block(const tmrt_vision *v, const tmrt_vision_grid *g, vis_buffers *b, bool with_out) {
    size_t P = g->n_patches, H = v->cfg.hidden, F = v->cfg.ff;
    b->norm1 = malloc(P * H * 4), b->qkv = malloc(P * 3 * H * 4), b->attn_out = malloc(P * H * 4);
    b->attn_proj = malloc(P * H * 4), b->residual = malloc(P * H * 4), b->norm2 = malloc(P * H * 4);
    b->fc1 = malloc(P * F * 4), b->fc2 = malloc(P * H * 4);
    if (with_out) b->layer_out = malloc(P * H * 4);
    return b->norm1 && b->qkv && b->attn_out && b->attn_proj && b->residual && b->norm2 && b->fc1 && b->fc2 &&
           b->layer_out;
}

static tmem_status hook(void *arg, int stage) {
    encode_state *s = arg;
    if (!s->naive) {
        if (stage == 0) { /* the patch tensor is dead: give its heap back now */
            tmem_heap_destroy(s->image_heap);
            s->image_heap = NULL;
            s->b->patches = NULL;
        }
        return TMEM_OK;
    }
    if (stage == 0) {
        free(s->b->patches);
        s->b->patches = NULL;
        return TMEM_OK;
    }
    /* after block `stage`: its output becomes the next input, a fresh set */
    naive_free_block(s->b);
    free(s->b->layer_in);
    s->b->layer_in = s->b->layer_out;
    s->b->layer_out = NULL;
    bool last = (uint32_t)stage == s->v->cfg.depth;
    if (!naive_alloc_block(s->v, s->g, s->b, !last) && !(last && s->b->norm1 && s->b->qkv)) s->failed = true;
    if (last) s->b->layer_out = s->b->layer_in; /* the merger reads layer_in */
    return s->failed ? TMEM_E_NO_MEMORY : TMEM_OK;
}

tmem_status tmrt_vision_encode(tmrt_vision *v, tmem_surface **image, const tmrt_vision_encode_desc *desc,
                               float *embeddings, size_t ld, tmrt_vision_stats *stats, tmrt_error *err) {
    tmrt_vision_encode_desc d = {0};
    if (desc) d = *desc;
    if (stats) memset(stats, 0, sizeof *stats);
    if (!v || !image || !*image || !embeddings || ld < v->cfg.out_hidden || d.n_threads < 0 || d.n_threads > 256)
        return tmrt__fail(err, TMEM_E_INVALID_ARG,
                          "encode: NULL model, image or embeddings, ld below out_hidden, or threads outside 0..256");
    int threads = d.n_threads > 0 ? d.n_threads : 1;
    bool naive = v->memory == TMRT_MEMORY_NAIVE;
    tmrt_vision_grid g;
    tmem_status st = tmrt_vision_image_grid(v, *image, &g, err);
    if (st != TMEM_OK) return st;
    const tmrt_vision_config *c = &v->cfg;
    size_t P = g.n_patches, H = c->hidden, hd = H / c->heads;
    uint64_t patch_bytes = (uint64_t)P * 3 * c->temporal * c->patch * c->patch * sizeof(float);
    size_t attn_floats = (size_t)threads * tmrt__vis_attention_scratch_floats((uint32_t)hd);
    size_t mm_bytes = tmrt__vis_matmul_scratch_bytes(v, (uint32_t)P, threads);
    vis_buffers b;
    memset(&b, 0, sizeof b);
    encode_state s = {v, &g, &b, NULL, naive, false};
    tmem_heap *arena = NULL, *scratch = NULL;
    tmem_plan *plan = NULL;
    kern_pool *pool = NULL;
    void *pool_mem = NULL;
    uint32_t copies = 0;
    double t0 = now_ms(), t1 = t0;
    uint64_t arena_bytes = 0, scratch_bytes = 0;

    /* 1. the patch tensor */
    if (naive) {
        b.patches = malloc(patch_bytes);
        st = b.patches ? tmrt__vis_patches_naive(v, *image, &g, b.patches, &copies, err)
                       : tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory (the patch tensor)");
    } else {
        if ((st = make_heap(v->ctx, TMEM_ROLE_IMAGE, TMEM_HEAP_LINEAR, patch_bytes + 4096, "vision.patches",
                            &s.image_heap, err)) ||
            (st = heap_take(s.image_heap, patch_bytes, (void **)&b.patches, err)))
            goto out;
        st = tmrt__vis_patches_fused(v, *image, &g, b.patches, err);
        copies = 1;
    }
    if (st != TMEM_OK) goto out;
    if (!d.keep_surface) {
        tmem_surface_release(*image);
        *image = NULL;
    }
    t1 = now_ms();

    /* 2. activations, scratch, threads */
    size_t pool_bytes = threads > 1 ? tmrt__kern_pool_bytes(threads) : 0;
    scratch_bytes = attn_floats * 4 + 4 * H * 4 + mm_bytes + pool_bytes + 4 * 64;
    if (naive) {
        b.attn_scratch = malloc(attn_floats * 4), b.pos_rows = malloc(4 * H * 4);
        b.matmul_scratch = mm_bytes ? aligned_alloc(64, (mm_bytes + 63) / 64 * 64) : NULL;
        pool_mem = pool_bytes ? aligned_alloc(64, (pool_bytes + 63) / 64 * 64) : NULL;
        b.layer_in = malloc(P * H * 4);
        if (!b.attn_scratch || !b.pos_rows || (mm_bytes && !b.matmul_scratch) || (pool_bytes && !pool_mem) ||
            !b.layer_in || !naive_alloc_block(v, &g, &b, true)) {
            st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory (naive encoder tensors)");
            goto out;
        }
        arena_bytes = (uint64_t)P * (7 * H + 3 * H + c->ff) * 4;
    } else {
        int32_t which[N_BUFFERS];
        if ((st = plan_block(v, (uint32_t)P, &plan, which, err))) goto out;
        tmem_heap_desc arena_desc;
        if ((st = tmem_plan_heap_desc(plan, &arena_desc)) != TMEM_OK) {
            (void)tmrt__fail(err, st, "vision arena: %s", tmem_status_name(st));
            goto out;
        }
        arena_bytes = arena_desc.size;
        if ((st = make_heap(v->ctx, TMEM_ROLE_VISION_INTERMEDIATE, TMEM_HEAP_PLACEMENT, arena_desc.size,
                            "vision.arena", &arena, err)))
            goto out;
        void *ptrs[GRAPH_CAP];
        if ((st = tmem_plan_heap_bind(arena, plan, ptrs)) != TMEM_OK) {
            (void)tmrt__fail(err, st, "vision arena bind: %s", tmem_status_name(st));
            goto out;
        }
        float **slot[N_BUFFERS] = {&b.layer_in, &b.norm1, &b.qkv, &b.attn_out, &b.attn_proj,
                                   &b.residual, &b.norm2, &b.fc1, &b.fc2, &b.layer_out};
        for (int k = 0; k < N_BUFFERS; k++) *slot[k] = ptrs[which[k]];
        if (b.layer_in != b.layer_out) { /* pinned at offset 0: a planner contract */
            st = tmrt__fail(err, TMEM_E_CORRUPT, "vision plan: layer_in and layer_out not at the same offset");
            goto out;
        }
        if ((st = make_heap(v->ctx, TMEM_ROLE_SCRATCH, TMEM_HEAP_LINEAR, scratch_bytes, "vision.scratch", &scratch,
                            err)) ||
            (st = heap_take(scratch, attn_floats * 4, (void **)&b.attn_scratch, err)) ||
            (st = heap_take(scratch, 4 * H * 4, (void **)&b.pos_rows, err)) ||
            (mm_bytes && (st = heap_take(scratch, mm_bytes, &b.matmul_scratch, err))) ||
            (pool_bytes && (st = heap_take(scratch, pool_bytes, &pool_mem, err))))
            goto out;
    }
    if (pool_mem && tmrt__kern_pool_init(pool_mem, threads, &pool) != 0) {
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "cannot start %d threads", threads);
        goto out;
    }

    /* 3. the forward pass */
    if ((st = tmrt__vis_forward(v, &g, &b, embeddings, ld, pool, hook, &s)) != TMEM_OK) {
        (void)tmrt__fail(err, st, "out of memory (naive encoder tensors)");
        goto out;
    }
    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->grid = g;
        stats->preprocess_ms = t1 - t0;
        stats->encode_ms = now_ms() - t1;
        stats->patch_bytes = patch_bytes;
        stats->arena_bytes = arena_bytes;
        stats->scratch_bytes = scratch_bytes;
        stats->image_copies = copies;
    }
out:
    tmrt__kern_pool_fini(pool);
    if (naive) {
        naive_free_block(&b);
        if (b.layer_out != b.layer_in) free(b.layer_out);
        free(b.layer_in), free(b.patches), free(b.attn_scratch), free(b.pos_rows), free(b.matmul_scratch);
        free(pool_mem);
    } else {
        tmem_status ust = arena && plan ? tmem_plan_heap_unbind(arena, plan) : TMEM_OK; /* destroyed next anyway */
        if (st == TMEM_OK && ust != TMEM_OK) st = tmrt__fail(err, ust, "vision arena unbind: %s",
                                                             tmem_status_name(ust));
        tmem_heap_destroy(arena);
        tmem_heap_destroy(scratch);
        tmem_heap_destroy(s.image_heap);
        tmem_plan_destroy(plan);
    }
    return st;
}

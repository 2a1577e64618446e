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

/* The vision block's table (tmem_model_graph_get) for this patch count: what
 * both modes size the block's buffers from. */
tmem_status tmrt__vis_block_graph(const tmrt_vision *v, uint32_t patches, tmem_model_graph *out, tmrt_error *err) {
    tmem_model_desc m;
    if (tmem_model_preset("qwen3.5-0.8b", &m) != TMEM_OK)
        return tmrt__fail(err, TMEM_E_NOT_FOUND, "no base model preset");
    const tmrt_vision_config *c = &v->cfg;
    m.vis_depth = c->depth, m.vis_hidden = c->hidden, m.vis_ff = c->ff, m.vis_heads = c->heads;
    m.vis_patch = c->patch, m.vis_merge = c->merge, m.vis_temporal_patch = c->temporal;
    m.vis_out_hidden = c->out_hidden, m.vis_pos_embd = c->n_pos;
    tmem_status st = tmem_model_graph_get(&m, TMEM_MODEL_LAYER_VISION, patches, patches, 0, out);
    if (st != TMEM_OK) return tmrt__fail(err, st, "vision graph: %s", tmem_status_name(st));
    return TMEM_OK;
}

tmem_status tmrt__vis_plan_block(const tmem_model_graph *gr, uint64_t align, uint64_t image_bytes, tmem_plan **plan,
                                 tmrt_error *err) {
    tmem_plan_problem *pb;
    if (tmem_plan_problem_create(&pb) != TMEM_OK) return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
    tmem_status st = TMEM_OK;
    uint32_t first = 0;
    for (uint32_t i = 0; i < gr->buf_count && st == TMEM_OK; i++) {
        const tmem_model_buffer *mb = &gr->bufs[i];
        tmem_plan_buffer b = {0};
        b.id = mb->name, b.size = mb->size, b.alignment = align, b.start = mb->start, b.end = mb->end;
        if (mb->id == TMEM_MODEL_BUF_LAYER_IN || mb->id == TMEM_MODEL_BUF_LAYER_OUT)
            b.flags = TMEM_PLAN_BUFFER_FIXED, b.offset = 0;
        if (mb->id == TMEM_MODEL_BUF_LAYER_IN) first = mb->start;
        st = tmem_plan_problem_add(pb, &b, NULL);
    }
    if (image_bytes && st == TMEM_OK) { /* read by the patch embedding, layer_in's first step only */
        tmem_plan_buffer b = {0};
        b.id = "image", b.size = image_bytes, b.alignment = align, b.start = first, b.end = (int64_t)first + 1;
        st = tmem_plan_problem_add(pb, &b, NULL);
    }
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

/* Naive: a malloc per tensor of the table for each block, freed when the
 * block ends; layer_in and layer_out are handed from block to block. */
static bool passed_on(tmem_model_buf_id id) { return id == TMEM_MODEL_BUF_LAYER_IN || id == TMEM_MODEL_BUF_LAYER_OUT; }

static void naive_free_block(vis_buffers *b) {
    for (uint32_t i = 0; i < b->act.graph.buf_count; i++) {
        tmem_model_buf_id id = b->act.graph.bufs[i].id;
        if (!passed_on(id)) free(b->act.buf[id]), b->act.buf[id] = NULL;
    }
}

static bool naive_alloc_block(vis_buffers *b, bool with_out) {
    bool ok = true;
    for (uint32_t i = 0; i < b->act.graph.buf_count; i++) {
        const tmem_model_buffer *mb = &b->act.graph.bufs[i];
        if (passed_on(mb->id) && (mb->id == TMEM_MODEL_BUF_LAYER_IN || !with_out)) continue;
        b->act.buf[mb->id] = malloc(mb->size);
        ok &= b->act.buf[mb->id] != NULL;
    }
    return ok;
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
    float **in = &s->b->act.buf[TMEM_MODEL_BUF_LAYER_IN], **out = &s->b->act.buf[TMEM_MODEL_BUF_LAYER_OUT];
    naive_free_block(s->b);
    free(*in);
    *in = *out;
    *out = NULL;
    bool last = (uint32_t)stage == s->v->cfg.depth;
    if (!naive_alloc_block(s->b, !last)) s->failed = true;
    if (last) *out = *in; /* the merger reads layer_in */
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
    if (v->gpu_enc) return tmrt__vis_vk_encode(v, image, &d, embeddings, ld, stats, err);
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
    if ((st = tmrt__vis_block_graph(v, (uint32_t)P, &b.act.graph, err))) goto out;
    b.act.slot = TMRT_SLOT_VISION;
    b.act.log = v->use_log;
    if (naive) {
        b.attn_scratch = malloc(attn_floats * 4), b.pos_rows = malloc(4 * H * 4);
        b.matmul_scratch = mm_bytes ? aligned_alloc(64, (mm_bytes + 63) / 64 * 64) : NULL;
        pool_mem = pool_bytes ? aligned_alloc(64, (pool_bytes + 63) / 64 * 64) : NULL;
        float **in = &b.act.buf[TMEM_MODEL_BUF_LAYER_IN];
        *in = malloc(b.act.graph.bufs[b.act.graph.buf_index[TMEM_MODEL_BUF_LAYER_IN]].size);
        if (!b.attn_scratch || !b.pos_rows || (mm_bytes && !b.matmul_scratch) || (pool_bytes && !pool_mem) ||
            !*in || !naive_alloc_block(&b, true)) {
            st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory (naive encoder tensors)");
            goto out;
        }
        /* what one block holds besides the output it hands on */
        for (uint32_t i = 0; i < b.act.graph.buf_count; i++)
            if (b.act.graph.bufs[i].id != TMEM_MODEL_BUF_LAYER_OUT) arena_bytes += b.act.graph.bufs[i].size;
    } else {
        if ((st = tmrt__vis_plan_block(&b.act.graph, 64, 0, &plan, err))) goto out;
        tmem_heap_desc arena_desc;
        if ((st = tmem_plan_heap_desc(plan, &arena_desc)) != TMEM_OK) {
            (void)tmrt__fail(err, st, "vision arena: %s", tmem_status_name(st));
            goto out;
        }
        arena_bytes = arena_desc.size;
        if ((st = make_heap(v->ctx, TMEM_ROLE_VISION_INTERMEDIATE, TMEM_HEAP_PLACEMENT, arena_desc.size,
                            "vision.arena", &arena, err)))
            goto out;
        void *ptrs[TMEM_MODEL_BUF_COUNT];
        if ((st = tmem_plan_heap_bind(arena, plan, ptrs)) != TMEM_OK) {
            (void)tmrt__fail(err, st, "vision arena bind: %s", tmem_status_name(st));
            goto out;
        }
        for (uint32_t i = 0; i < b.act.graph.buf_count; i++) b.act.buf[b.act.graph.bufs[i].id] = ptrs[i];
        if (b.act.buf[TMEM_MODEL_BUF_LAYER_IN] != b.act.buf[TMEM_MODEL_BUF_LAYER_OUT]) { /* pinned at 0 */
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
        float *in = b.act.buf[TMEM_MODEL_BUF_LAYER_IN], *lo = b.act.buf[TMEM_MODEL_BUF_LAYER_OUT];
        if (lo != in) free(lo);
        free(in), free(b.patches), free(b.attn_scratch), free(b.pos_rows), free(b.matmul_scratch);
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

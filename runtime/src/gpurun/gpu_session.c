/* gpu_session.c: one sequence's device memory.
 *
 *   activations  one DEVICE arena: the four layer graphs (attention and
 *                DeltaNet, at the prefill chunk and at one token) planned
 *                by the lifetime planner from the library's tables
 *                (tmem_model_graph_get), each with the device ops' scratch
 *                (split attention's partials, the chunked DeltaNet's
 *                per-chunk matrices) as buffers of the same plan; the
 *                layer's input and output pinned at offset 0 (a layer's
 *                output is the next one's input, whatever its kind); the
 *                arena is the largest plan (phases never overlap)
 *   KV cache     a DEVICE pool of blocks in the paged cache's layout (kv.h:
 *                per block, per attention layer, K rows then V rows, f16 or
 *                f32) and the sequence's block table, read by the shaders
 *   state        a DEVICE block: each DeltaNet layer's conv history and
 *                recurrent state, updated in place by the shaders
 *   io, logits   DEVICE_HOST_VISIBLE: token ids, positions, the LM head's
 *                row indices, the block table; logits of the asked rows */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "gpurun/gpu_internal.h"

#define SESSION_GRAPH_FLAGS TMEM_MODEL_GRAPH_CHUNKED_DELTA

/* The buffers the device ops read and write (the CPU's per-chunk DeltaNet
 * buffers and head repeats are the shaders' business: their scratch). */
static bool device_uses(tmem_model_buf_id id) {
    switch (id) {
    case TMEM_MODEL_BUF_LAYER_IN: case TMEM_MODEL_BUF_ATTN_NORM: case TMEM_MODEL_BUF_Q_GATE:
    case TMEM_MODEL_BUF_K: case TMEM_MODEL_BUF_V: case TMEM_MODEL_BUF_ATTN_OUT: case TMEM_MODEL_BUF_ATTN_PROJ:
    case TMEM_MODEL_BUF_ATTN_RESIDUAL: case TMEM_MODEL_BUF_FFN_NORM: case TMEM_MODEL_BUF_FFN_GATE:
    case TMEM_MODEL_BUF_FFN_UP: case TMEM_MODEL_BUF_FFN_DOWN: case TMEM_MODEL_BUF_LAYER_OUT:
    case TMEM_MODEL_BUF_QKV_MIXED: case TMEM_MODEL_BUF_Z: case TMEM_MODEL_BUF_BETA: case TMEM_MODEL_BUF_ALPHA:
    case TMEM_MODEL_BUF_CONV_OUT: case TMEM_MODEL_BUF_GATE: case TMEM_MODEL_BUF_CORE_OUT: return true;
    default: return false;
    }
}

/* Scratch of a graph's ops at n tokens (at most): the split attention's
 * partials over the context (decode and short chunks split), the chunked
 * DeltaNet's matrices. */
static uint64_t graph_scratch(const tmrt_hparams *hp, tmem_model_layer_kind kind, uint32_t n, uint32_t n_ctx) {
    uint64_t most = 0;
    if (kind == TMEM_MODEL_LAYER_ATTENTION) {
        for (uint32_t t = 1; t <= n; t++) {
            uint64_t b = tmrt__vk_attention_scratch_bytes(t, hp->n_head, hp->head_dim,
                                                          tmrt__vk_attention_splits(n_ctx, t));
            if (b > most) most = b;
            if (t > 8) break; /* more tokens do not split */
        }
        return most;
    }
    if (n == 1) return 0; /* the recurrent form */
    return tmrt__vk_deltanet_scratch_bytes(n, hp->ssm_head_dim, hp->ssm_inner / hp->ssm_v_heads, hp->ssm_v_heads);
}

static tmem_status plan_graph(const tmrt_model *m, tmem_model_layer_kind kind, uint32_t n, uint32_t n_ctx,
                              uint64_t align, tmrt_gpu_graph *g, tmrt_error *err) {
    memset(g, 0, sizeof *g);
    g->n = n;
    tmem_status st = tmem_model_graph_get(&m->mdesc, kind, n, n_ctx, SESSION_GRAPH_FLAGS, &g->graph);
    if (st) return tmrt__fail(err, st, "layer graph: %s", tmem_strerror(st));
    const tmem_model_graph *gr = &g->graph;
    tmem_plan_problem *p;
    if ((st = tmem_plan_problem_create(&p))) return tmrt__fail(err, st, "plan: %s", tmem_strerror(st));
    int32_t idx[TMEM_MODEL_BUF_COUNT + 1];
    uint32_t count = 0;
    for (uint32_t i = 0; i < gr->buf_count && !st; i++) {
        const tmem_model_buffer *b = &gr->bufs[i];
        if (!device_uses(b->id)) continue;
        tmem_plan_buffer pb = {0};
        pb.size = (b->size + align - 1) / align * align;
        pb.alignment = align;
        pb.start = b->start;
        pb.end = b->end;
        if (b->id == TMEM_MODEL_BUF_LAYER_IN || b->id == TMEM_MODEL_BUF_LAYER_OUT) {
            pb.flags = TMEM_PLAN_BUFFER_FIXED; /* the hand-off between layers of any kind */
            pb.offset = 0;
        }
        st = tmem_plan_problem_add(p, &pb, NULL);
        idx[count++] = (int32_t)b->id;
        g->size[b->id] = b->size;
    }
    g->scratch_size = graph_scratch(&m->hp, kind, n, n_ctx);
    if (!st && g->scratch_size) {
        uint32_t op = kind == TMEM_MODEL_LAYER_ATTENTION ? TMEM_MODEL_OP_ATTN : TMEM_MODEL_OP_DELTA_RULE;
        tmem_plan_buffer pb = {0};
        pb.size = (g->scratch_size + align - 1) / align * align;
        pb.alignment = align;
        pb.start = gr->op_step[op];
        pb.end = (int64_t)gr->op_step[op] + 1;
        st = tmem_plan_problem_add(p, &pb, NULL);
        idx[count++] = -1;
    }
    tmem_plan *plan = NULL;
    tmem_plan_desc d = {0};
    d.node_limit = TMEM_FIT_PLAN_NODES;
    if (n == 1) d.flags = TMEM_PLAN_HEURISTIC_ONLY;
    if (!st) st = tmem_plan_solve(p, &d, &plan);
    tmem_plan_info info;
    if (!st) st = tmem_plan_get_info(plan, &info);
    if (!st) {
        g->arena = info.arena;
        for (uint32_t i = 0; i < count; i++) {
            if (idx[i] < 0) g->scratch_off = tmem_plan_offset(plan, i);
            else g->off[idx[i]] = tmem_plan_offset(plan, i);
        }
    }
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(p);
    if (st) return tmrt__fail(err, st, "device activation plan: %s", tmem_strerror(st));
    return TMEM_OK;
}

/* Typed: a block of its own type (gpu_block.c). Naive: its own
 * VkDeviceMemory, counted in naive_bytes. */
static tmem_status block(tmrt_gpu_session *g, const char *type, tmem_placement pl, tmem_lifetime lt, tmem_role role,
                         const char *name, uint64_t size, tmrt_gpu_block *out, tmrt_error *err) {
    if (!g->naive) return tmrt__gpu_block_create(g->m->ctx, g->gm->gpu, type, pl, lt, role, name, size, out, err);
    tmem_status st = tmrt__gpu_raw_create(g->gm->gpu, pl == TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, name, size, out, err);
    if (!st) g->naive_bytes += out->raw_bytes;
    return st;
}

/* Naive: one more buffer of its own (kept in nblocks until the session goes). */
static tmem_status naive_buf(tmrt_gpu_session *g, const char *name, uint64_t size, VkBuffer *out, tmrt_error *err) {
    if (g->n_nblocks == g->cap_nblocks) {
        uint32_t cap = g->cap_nblocks ? 2 * g->cap_nblocks : 64;
        tmrt_gpu_block *nb = realloc(g->nblocks, cap * sizeof *nb);
        if (!nb) return tmrt__fail(err, TMEM_E_NO_MEMORY, "naive buffers");
        g->nblocks = nb;
        g->cap_nblocks = cap;
    }
    tmrt_gpu_block *b = &g->nblocks[g->n_nblocks];
    tmem_status st =
        block(g, "", TMEM_PLACEMENT_DEVICE, TMEM_LIFETIME_TRANSIENT, TMEM_ROLE_ACTIVATION, name, size, b, err);
    if (st) return st;
    g->n_nblocks++;
    *out = b->buf;
    return TMEM_OK;
}

/* Bind a planned graph: typed, every buffer in the arena at its offset;
 * naive, each its own allocation (offset 0), layer_in and layer_out the one
 * hand-off buffer `x`. */
static tmem_status bind_graph(tmrt_gpu_session *g, tmrt_gpu_graph *gr, VkBuffer x, tmrt_error *err) {
    for (int id = 0; id < TMEM_MODEL_BUF_COUNT; id++) {
        if (!gr->size[id]) continue;
        if (!g->naive) {
            gr->vb[id] = g->arena.buf;
            continue;
        }
        gr->off[id] = 0;
        if (id == TMEM_MODEL_BUF_LAYER_IN || id == TMEM_MODEL_BUF_LAYER_OUT) {
            gr->vb[id] = x;
            continue;
        }
        tmem_status st = naive_buf(g, tmem_model_buf_name((tmem_model_buf_id)id), gr->size[id], &gr->vb[id], err);
        if (st) return st;
    }
    if (!g->naive || !gr->scratch_size) {
        gr->scratch_vb = g->arena.buf;
        return TMEM_OK;
    }
    gr->scratch_off = 0;
    return naive_buf(g, "op scratch", gr->scratch_size, &gr->scratch_vb, err);
}

tmem_status tmrt__gpu_session_create(tmrt_model *m, const tmrt_gpu_session_desc *d, tmrt_gpu_session **out,
                                     uint64_t *arena_bytes, tmrt_error *err) {
    *out = NULL;
    const tmrt_hparams *hp = &m->hp;
    tmrt_gpu_session *g = calloc(1, sizeof *g);
    if (!g) return tmrt__fail(err, TMEM_E_NO_MEMORY, "no memory for the device session");
    g->m = m;
    g->gm = m->gpu;
    g->n_ctx = d->n_ctx;
    g->chunk = d->chunk;
    g->naive = g->gm->naive;
    tmrt_vk *vk = g->gm->vk;
    const tmrt_vk_limits *lim = tmrt__vk_limits(vk);
    uint64_t align = lim->storage_align > 64 ? lim->storage_align : 64;
    tmem_status st = TMEM_OK;
    uint32_t full = 0, linear = 0;
    tmem_model_layer_counts(&m->mdesc, &full, &linear);
    for (uint32_t il = 0, a = 0; il < hp->n_layers; il++)
        if (!hp->recurrent[il]) g->attn_index[il] = a++;
    /* the joint q + gate rows and the DeltaNet's q | k | v rows are bound at
     * offsets inside a token row: they must be storage-aligned */
    uint64_t sa = lim->storage_align ? lim->storage_align : 1;
    if ((full && ((uint64_t)hp->head_dim * 4) % sa) ||
        (linear && ((uint64_t)hp->ssm_k_heads * hp->ssm_head_dim * 4) % sa)) {
        st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "head sizes not aligned to the device's %llu-byte bindings",
                        (unsigned long long)sa);
        goto fail;
    }
    /* activations */
    uint64_t arena = 0;
    if (full && ((st = plan_graph(m, TMEM_MODEL_LAYER_ATTENTION, g->chunk, g->n_ctx, align, &g->prefill_attn, err)) ||
                 (st = plan_graph(m, TMEM_MODEL_LAYER_ATTENTION, 1, g->n_ctx, align, &g->decode_attn, err))))
        goto fail;
    if (linear && ((st = plan_graph(m, TMEM_MODEL_LAYER_DELTANET, g->chunk, g->n_ctx, align, &g->prefill_delta, err)) ||
                   (st = plan_graph(m, TMEM_MODEL_LAYER_DELTANET, 1, g->n_ctx, align, &g->decode_delta, err))))
        goto fail;
    const tmrt_gpu_graph *all[4] = {&g->prefill_attn, &g->decode_attn, &g->prefill_delta, &g->decode_delta};
    for (int i = 0; i < 4; i++)
        if (all[i]->arena > arena) arena = all[i]->arena;
    tmrt_gpu_graph *bind[4] = {&g->prefill_attn, &g->decode_attn, &g->prefill_delta, &g->decode_delta};
    VkBuffer x = VK_NULL_HANDLE;
    if (!g->naive) {
        if ((st = block(g, "gpu-activations", TMEM_PLACEMENT_DEVICE, TMEM_LIFETIME_TRANSIENT, TMEM_ROLE_ACTIVATION,
                        "device activations", arena, &g->arena, err)))
            goto fail;
        *arena_bytes = arena;
    } else if ((st = naive_buf(g, "layer in/out", (uint64_t)g->chunk * hp->n_embd * 4, &x, err))) {
        goto fail;
    }
    for (int i = 0; i < 4; i++)
        if (bind[i]->n && (st = bind_graph(g, bind[i], x, err))) goto fail;
    /* KV: the paged cache's block layout, as many blocks as the context needs */
    tmrt_vk_kv *kv = &g->kvd;
    uint32_t n_blocks = 0;
    if (full) {
        kv->block_tokens = TMEM_KV_DEFAULT_BLOCK_TOKENS;
        kv->f32 = d->kv_f32;
        kv->row_bytes = hp->n_head_kv * hp->head_dim * (d->kv_f32 ? 4u : 2u);
        kv->block_bytes = full * 2u * kv->block_tokens * kv->row_bytes;
        n_blocks = (g->n_ctx + kv->block_tokens - 1) / kv->block_tokens;
        uint64_t bytes = (uint64_t)n_blocks * kv->block_bytes;
        if ((st = block(g, "gpu-kv", TMEM_PLACEMENT_DEVICE, TMEM_LIFETIME_GROWING, TMEM_ROLE_KV_CACHE, "device KV",
                        bytes, &g->kv, err)))
            goto fail;
        uint64_t per = lim->max_storage_range / kv->block_bytes;
        if (per > n_blocks) per = n_blocks;
        if (!per || (n_blocks + per - 1) / per > TMRT_VK_KV_MAX_POOL) {
            st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "KV pool of %llu bytes: more than %u bindings",
                            (unsigned long long)bytes, TMRT_VK_KV_MAX_POOL);
            goto fail;
        }
        kv->blocks_per_buf = (uint32_t)per;
        kv->n_pool = (uint32_t)((n_blocks + per - 1) / per);
        for (uint32_t i = 0; i < kv->n_pool; i++) {
            uint64_t lo = (uint64_t)i * per * kv->block_bytes, hi = lo + per * kv->block_bytes;
            if (hi > bytes) hi = bytes;
            kv->pool[i] = tmrt__gpu_sub(&g->kv, lo, hi - lo);
        }
    }
    /* state: per DeltaNet layer the conv history, then the recurrent state */
    uint64_t state_bytes = 0;
    if (linear) {
        uint32_t C = 2 * hp->ssm_k_heads * hp->ssm_head_dim + hp->ssm_inner;
        g->conv_bytes = ((uint64_t)(hp->conv_kernel - 1) * C * 4 + align - 1) / align * align;
        g->ssm_bytes = (uint64_t)hp->ssm_inner * hp->ssm_head_dim * 4; /* v heads x dv x dk */
        g->ssm_bytes = (g->ssm_bytes + align - 1) / align * align;
        uint64_t conv_off[TMRT_MAX_LAYERS] = {0};
        for (uint32_t il = 0; il < hp->n_layers; il++) {
            if (!hp->recurrent[il]) continue;
            conv_off[il] = state_bytes;
            state_bytes += g->conv_bytes + g->ssm_bytes;
        }
        if (!g->naive &&
            (st = block(g, "gpu-state", TMEM_PLACEMENT_DEVICE, TMEM_LIFETIME_GROWING, TMEM_ROLE_RECURRENT_STATE,
                        "device state", state_bytes, &g->state, err)))
            goto fail;
        for (uint32_t il = 0; il < hp->n_layers; il++) {
            if (!hp->recurrent[il]) continue;
            if (!g->naive) {
                g->conv[il] = tmrt__gpu_sub(&g->state, conv_off[il], g->conv_bytes);
                g->ssm[il] = tmrt__gpu_sub(&g->state, conv_off[il] + g->conv_bytes, g->ssm_bytes);
                continue;
            }
            VkBuffer cb, sb;
            if ((st = naive_buf(g, "conv state", g->conv_bytes, &cb, err)) ||
                (st = naive_buf(g, "recurrent state", g->ssm_bytes, &sb, err)))
                goto fail;
            g->conv[il] = (tmrt_vk_buf){cb, 0, g->conv_bytes};
            g->ssm[il] = (tmrt_vk_buf){sb, 0, g->ssm_bytes};
        }
    }
    /* io: ids, positions, LM-head rows, block table */
    uint64_t io = 0;
    g->io_ids = io;
    io += ((uint64_t)g->chunk * 4 + align - 1) / align * align;
    g->io_pos = io;
    io += ((uint64_t)g->chunk * 16 + align - 1) / align * align;
    g->io_rows = io;
    io += ((uint64_t)g->chunk * 4 + align - 1) / align * align;
    g->io_step = io;
    io += align;
    uint64_t io_table = io;
    io += ((uint64_t)(n_blocks ? n_blocks : 1) * 4 + align - 1) / align * align;
    g->logit_rows = g->chunk < TMRT_GPU_LOGIT_ROWS ? g->chunk : TMRT_GPU_LOGIT_ROWS;
    if ((st = block(g, "gpu-io", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, TMEM_LIFETIME_TRANSIENT, TMEM_ROLE_SCRATCH,
                    "device io", io, &g->io, err)) ||
        (st = block(g, "gpu-logits", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, TMEM_LIFETIME_TRANSIENT,
                    TMEM_ROLE_ACTIVATION, "device logits", (uint64_t)g->logit_rows * hp->n_vocab * 4, &g->logits,
                    err)))
        goto fail;
    if (full) {
        uint32_t *table = (uint32_t *)((uint8_t *)g->io.host + io_table);
        for (uint32_t b = 0; b < n_blocks; b++) table[b] = b;
        kv->table = tmrt__gpu_sub(&g->io, io_table, (uint64_t)n_blocks * 4);
    }
    /* the recorder: every dispatch of a step, with room */
    uint32_t per_layer = 40;
    if ((st = tmrt__vk_rec_create(vk, &(tmrt_vk_rec_desc){.max_dispatches = per_layer * hp->n_layers + 64},
                                  &g->rec))) {
        tmrt__fail(err, st, "device recorder: %s", tmem_strerror(st));
        goto fail;
    }
    /* a fresh sequence's state is zero */
    if (linear) {
        if ((st = tmrt__vk_begin(g->rec))) goto rec_fail;
        for (uint32_t il = 0; il < hp->n_layers; il++) {
            if (!hp->recurrent[il]) continue;
            tmrt__vk_fill(g->rec, g->conv[il], g->conv_bytes, 0);
            tmrt__vk_fill(g->rec, g->ssm[il], g->ssm_bytes, 0);
        }
        if ((st = tmrt__vk_run(g->rec))) goto rec_fail;
    }
    *out = g;
    return TMEM_OK;
rec_fail:
    tmrt__fail(err, st, "device state clear: %s", tmrt__vk_rec_error(g->rec));
fail:
    tmrt__gpu_session_destroy(g);
    return st;
}

void tmrt__gpu_session_destroy(tmrt_gpu_session *g) {
    if (!g) return;
    tmrt__vk_rec_destroy(g->rec);
    tmem_gpu *gpu = g->gm->gpu;
    tmrt_gpu_block *b[] = {&g->arena, &g->kv, &g->state, &g->io, &g->logits};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        if (g->naive) tmrt__gpu_raw_destroy(gpu, b[i]);
        else tmrt__gpu_block_destroy(gpu, b[i]);
    }
    for (uint32_t i = 0; i < g->n_nblocks; i++) tmrt__gpu_raw_destroy(gpu, &g->nblocks[i]);
    free(g->nblocks);
    free(g);
}

uint64_t tmrt__gpu_session_device_bytes(const tmrt_gpu_session *g) {
    if (!g) return 0;
    if (g->naive) return g->naive_bytes;
    return g->arena.size + g->kv.size + g->state.size + g->io.size + g->logits.size;
}

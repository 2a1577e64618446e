/* acts.c: the activation buffers of the four layer graphs a session runs
 * (full attention and DeltaNet, at the prefill chunk and at one token),
 * from the library's table of each graph (tmem_model_graph_get) for the
 * runtime's schedule, by buffer id: tmrt_acts::buf[id], with the table kept
 * beside them for the forward pass's markers. Typed: each graph is planned
 * by the lifetime planner and all four plans share one arena (phases never
 * overlap), so the arena is the largest plan. Naive: a malloc per buffer. */
#include <stdlib.h>
#include <string.h>
#include "session.h"

#define ACT_ALIGN 64u /* as the fit calculator plans them */

/* The buffers the forward pass (forward/) knows: a graph with another (a
 * model without the output gate has q, the unflashed graph kq and kqv) is
 * one this runtime cannot run. */
static bool runnable(tmem_model_buf_id id) {
    switch (id) {
    case TMEM_MODEL_BUF_Q: case TMEM_MODEL_BUF_KQ: case TMEM_MODEL_BUF_KQV: /* the vision block's: */
    case TMEM_MODEL_BUF_NORM1: case TMEM_MODEL_BUF_QKV: case TMEM_MODEL_BUF_RESIDUAL: case TMEM_MODEL_BUF_NORM2:
    case TMEM_MODEL_BUF_FC1: case TMEM_MODEL_BUF_FC2: return false;
    default: return true;
    }
}

tmem_status tmrt__graph(const tmrt_model *m, tmem_model_layer_kind kind, uint32_t n, uint32_t n_ctx,
                        tmem_model_graph *out) {
    return tmem_model_graph_get(&m->mdesc, kind, n, n_ctx, TMRT_GRAPH_FLAGS, out);
}

/* Plan one graph: offsets[i] for buffer i, *arena the plan's height, with
 * the fit calculator's settings (TMEM_FIT_TEXT_PLAN_FLAGS: the greedy
 * portfolio), so the prefill arena is the one it predicted. */
static tmem_status plan_graph(const tmem_model_graph *g, uint64_t *offsets, uint64_t *arena) {
    const tmem_model_buffer *bufs = g->bufs;
    uint32_t count = g->buf_count;
    tmem_plan_problem *p;
    tmem_status st = tmem_plan_problem_create(&p);
    if (st) return st;
    for (uint32_t i = 0; i < count && !st; i++) {
        tmem_plan_buffer b = {0};
        b.size = bufs[i].size;
        b.alignment = ACT_ALIGN;
        b.start = bufs[i].start;
        b.end = bufs[i].end;
        st = tmem_plan_problem_add(p, &b, NULL);
    }
    tmem_plan *plan = NULL;
    tmem_plan_desc d = {0};
    d.node_limit = TMEM_FIT_PLAN_NODES; /* the fit calculator's desc, so both find the same arena */
    d.flags = TMEM_FIT_TEXT_PLAN_FLAGS;
    if (!st) st = tmem_plan_solve(p, &d, &plan);
    tmem_plan_info info;
    if (!st) st = tmem_plan_get_info(plan, &info);
    if (!st) {
        *arena = info.arena;
        for (uint32_t i = 0; i < count; i++) offsets[i] = tmem_plan_offset(plan, i);
    }
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(p);
    return st;
}

typedef struct graph_set {
    tmrt_acts *acts;
    tmem_model_layer_kind kind;
    uint32_t n;
    tmrt_graph_slot slot;
} graph_set;

static uint32_t graph_sets(tmrt_session *s, graph_set sets[4]) {
    uint32_t full = 0, linear = 0, k = 0;
    tmem_model_layer_counts(&s->model->mdesc, &full, &linear);
    if (full) {
        sets[k++] = (graph_set){&s->run.prefill_attn, TMEM_MODEL_LAYER_ATTENTION, s->chunk, TMRT_SLOT_PREFILL_ATTN};
        sets[k++] = (graph_set){&s->run.decode_attn, TMEM_MODEL_LAYER_ATTENTION, 1, TMRT_SLOT_DECODE_ATTN};
    }
    if (linear) {
        sets[k++] = (graph_set){&s->run.prefill_delta, TMEM_MODEL_LAYER_DELTANET, s->chunk, TMRT_SLOT_PREFILL_DELTA};
        sets[k++] = (graph_set){&s->run.decode_delta, TMEM_MODEL_LAYER_DELTANET, 1, TMRT_SLOT_DECODE_DELTA};
    }
    return k;
}

/* The typed arena: one PLACEMENT heap of the largest plan. */
static tmem_status arena_create(tmrt_session *s, uint64_t arena, uint8_t **base, tmrt_error *err) {
    tmem_type *t;
    tmem_status st;
    if ((st = tmem_role_get_type(s->ctx, TMEM_ROLE_ACTIVATION, &t)))
        return tmrt__fail(err, st, "no type for the activation role");
    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_PLACEMENT;
    hd.type = t;
    hd.role = TMEM_ROLE_ACTIVATION;
    hd.size = (arena + ACT_ALIGN - 1) / ACT_ALIGN * ACT_ALIGN;
    hd.flags = TMEM_HEAP_COMMIT_ALL;
    hd.name = "activations";
    if ((st = tmem_heap_create(s->ctx, &hd, &s->act_heap)))
        return tmrt__fail(err, st, "activation heap of %llu bytes: %s", (unsigned long long)hd.size,
                          tmem_strerror(st));
    tmem_alloc_desc ad = {0};
    ad.size = hd.size;
    ad.alignment = ACT_ALIGN;
    ad.offset = 0;
    ad.role = -1;
    ad.name = "layer arena";
    tmem_alloc_info ai;
    if ((st = tmem_heap_alloc_ex(s->act_heap, &ad, &ai)))
        return tmrt__fail(err, st, "activation arena: %s", tmem_strerror(st));
    *base = ai.ptr;
    s->info.activation_arena = arena;
    return TMEM_OK;
}

/* Each buffer of a graph at its planned offset (typed) or in its own malloc. */
static tmem_status bind_graph(tmrt_session *s, tmrt_acts *a, uint8_t *base, const uint64_t *offsets,
                              tmrt_error *err) {
    const tmem_model_graph *g = &a->graph;
    for (uint32_t i = 0; i < g->buf_count; i++) {
        const tmem_model_buffer *b = &g->bufs[i];
        if (!runnable(b->id)) return tmrt__fail(err, TMEM_E_STATE, "layer graph buffer '%s' unknown", b->name);
        if (base) {
            a->buf[b->id] = (float *)(base + offsets[i]);
            continue;
        }
        if (s->n_naive_bufs == TMRT_NAIVE_MAX_BUFS) return tmrt__fail(err, TMEM_E_FULL, "too many activation buffers");
        a->buf[b->id] = malloc(b->size);
        if (!a->buf[b->id]) return tmrt__fail(err, TMEM_E_NO_MEMORY, "activation '%s'", b->name);
        s->naive_bufs[s->n_naive_bufs++] = a->buf[b->id];
        s->info.naive_bytes += b->size;
    }
    return TMEM_OK;
}

tmem_status tmrt__acts_create(tmrt_session *s, tmrt_error *err) {
    graph_set sets[4];
    uint32_t nsets = graph_sets(s, sets);
    uint64_t offsets[4][TMEM_MODEL_BUF_COUNT], arena = 0;
    tmem_status st;
    for (uint32_t g = 0; g < nsets; g++) {
        tmrt_acts *a = sets[g].acts;
        memset(a, 0, sizeof *a);
        a->slot = sets[g].slot;
        if ((st = tmrt__graph(s->model, sets[g].kind, sets[g].n, s->n_ctx, &a->graph)))
            return tmrt__fail(err, st, "layer graph: %s", tmem_strerror(st));
        if (s->memory == TMRT_MEMORY_NAIVE) continue;
        uint64_t h;
        if ((st = plan_graph(&a->graph, offsets[g], &h)))
            return tmrt__fail(err, st, "activation plan: %s", tmem_strerror(st));
        if (h > arena) arena = h;
    }
    uint8_t *base = NULL;
    if (s->memory == TMRT_MEMORY_TYPED && (st = arena_create(s, arena, &base, err))) return st;
    for (uint32_t g = 0; g < nsets; g++)
        if ((st = bind_graph(s, sets[g].acts, base, offsets[g], err))) return st;
    return TMEM_OK;
}

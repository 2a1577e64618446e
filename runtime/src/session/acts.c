/* acts.c: the activation buffers of the four layer graphs a session runs
 * (full attention and DeltaNet, at the prefill chunk and at one token),
 * from the library's layer graph (tmem_model_layer_graph) of the runtime's
 * schedule. Typed: each graph is planned by the lifetime planner and all four
 * plans share one arena (phases never overlap), so the arena is the largest
 * plan. Naive: a malloc per buffer. */
#include <stdlib.h>
#include <string.h>
#include "session.h"

#define GRAPH_CAP 64u
#define ACT_ALIGN 64u /* as the fit calculator plans them */

/* Buffer name -> field of tmrt_acts. */
static float **field(tmrt_acts *a, const char *name) {
    static const struct { const char *name; size_t off; } map[] = {
#define F(n) {#n, offsetof(tmrt_acts, n)}
        F(layer_in), F(attn_norm), F(attn_proj), F(attn_residual), F(ffn_norm), F(ffn_gate), F(ffn_up),
        F(ffn_down), F(layer_out), F(k), F(v), F(attn_out), F(qkv_mixed), F(z), F(beta),
        F(alpha), F(conv_out), F(gate), F(q_rep), F(k_rep), F(k_beta), F(v_beta), F(decay_mask),
        F(chunk_attn), F(u), F(w), F(chunk_qk), F(v_new), F(core_out),
#undef F
        {"q_gate", offsetof(tmrt_acts, q_gate)},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].name, name)) return (float **)((char *)a + map[i].off);
    return NULL;
}

tmem_status tmrt__graph(const tmrt_model *m, tmem_model_layer_kind kind, uint32_t n, uint32_t n_ctx,
                        tmem_model_buffer *bufs, uint32_t *count) {
    return tmem_model_layer_graph(&m->mdesc, kind, n, n_ctx, TMRT_GRAPH_FLAGS, bufs, GRAPH_CAP, count);
}

/* Plan one graph: offsets[i] for buffer i, *arena the plan's height. The
 * prefill graphs get the fit calculator's settings (so the arena is the one
 * it predicted); the one-token graphs, a few KiB, the greedy portfolio only:
 * an exact search there costs a quarter second and megabytes of malloc for
 * bytes that do not matter. */
static tmem_status plan_graph(const tmem_model_buffer *bufs, uint32_t count, bool exact, uint64_t *offsets,
                              uint64_t *arena) {
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
    d.node_limit = TMEM_FIT_PLAN_NODES; /* the fit calculator's budget, so both find the same arena */
    if (!exact) d.flags = TMEM_PLAN_HEURISTIC_ONLY;
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
} graph_set;

static uint32_t graph_sets(tmrt_session *s, graph_set sets[4]) {
    uint32_t full = 0, linear = 0, k = 0;
    tmem_model_layer_counts(&s->model->mdesc, &full, &linear);
    if (full) {
        sets[k++] = (graph_set){&s->run.prefill_attn, TMEM_MODEL_LAYER_ATTENTION, s->chunk};
        sets[k++] = (graph_set){&s->run.decode_attn, TMEM_MODEL_LAYER_ATTENTION, 1};
    }
    if (linear) {
        sets[k++] = (graph_set){&s->run.prefill_delta, TMEM_MODEL_LAYER_DELTANET, s->chunk};
        sets[k++] = (graph_set){&s->run.decode_delta, TMEM_MODEL_LAYER_DELTANET, 1};
    }
    return k;
}

tmem_status tmrt__acts_create(tmrt_session *s, tmrt_error *err) {
    graph_set sets[4];
    uint32_t nsets = graph_sets(s, sets);
    tmem_model_buffer bufs[4][GRAPH_CAP];
    uint32_t counts[4];
    uint64_t offsets[4][GRAPH_CAP], arena = 0;
    tmem_status st;
    for (uint32_t g = 0; g < nsets; g++) {
        if ((st = tmrt__graph(s->model, sets[g].kind, sets[g].n, s->n_ctx, bufs[g], &counts[g])))
            return tmrt__fail(err, st, "layer graph: %s", tmem_strerror(st));
        if (s->memory == TMRT_MEMORY_NAIVE) continue;
        uint64_t a;
        if ((st = plan_graph(bufs[g], counts[g], sets[g].n > 1, offsets[g], &a)))
            return tmrt__fail(err, st, "activation plan: %s", tmem_strerror(st));
        if (a > arena) arena = a;
    }
    uint8_t *base = NULL;
    if (s->memory == TMRT_MEMORY_TYPED) {
        tmem_type *t;
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
        base = ai.ptr;
        s->info.activation_arena = arena;
    }
    for (uint32_t g = 0; g < nsets; g++)
        for (uint32_t i = 0; i < counts[g]; i++) {
            float **f = field(sets[g].acts, bufs[g][i].name);
            if (!f) return tmrt__fail(err, TMEM_E_STATE, "layer graph buffer '%s' unknown", bufs[g][i].name);
            if (base) {
                *f = (float *)(base + offsets[g][i]);
            } else {
                if (s->n_naive_bufs == TMRT_NAIVE_MAX_BUFS)
                    return tmrt__fail(err, TMEM_E_FULL, "too many activation buffers");
                *f = malloc(bufs[g][i].size);
                if (!*f) return tmrt__fail(err, TMEM_E_NO_MEMORY, "activation '%s'", bufs[g][i].name);
                s->naive_bufs[s->n_naive_bufs++] = *f;
                s->info.naive_bytes += bufs[g][i].size;
            }
        }
    return TMEM_OK;
}

/* Planned transient arenas: the model layer's per-layer buffer graph
 * (tmem_model_layer_graph), solved by the lifetime planner once per phase and
 * bound once into a PLACEMENT heap; every layer of every step of the phase
 * reuses the same offsets. A phase with two layer kinds (the hybrid decoder:
 * Gated DeltaNet and full attention) lays the two graphs out one after the
 * other in time, so one plan serves both and the arena is the larger of the
 * two, as the fit calculator assumes. */
#include <string.h>
#include "demo/demo_session.h"

#define PLAN_ALIGN 64u /* cache lines, SIMD loads: the fit calculator's alignment */

tmem_status demo_plan_build(const tmem_model_desc *m, demo_plan *p, const char *name,
                            const tmem_model_layer_kind *kinds, uint32_t nkinds, uint64_t n_tokens,
                            uint64_t n_ctx) {
    memset(p, 0, sizeof *p);
    p->name = name;
    p->nkinds = nkinds;
    tmem_plan_problem *prob;
    tmem_status st = tmem_plan_problem_create(&prob);
    if (st != TMEM_OK) return st;
    int64_t t0 = 0;
    for (uint32_t k = 0; k < nkinds && st == TMEM_OK; k++) {
        uint32_t count = 0;
        p->kinds[k] = kinds[k];
        p->first[k] = p->nbufs;
        st = tmem_model_layer_graph(m, kinds[k], n_tokens, n_ctx, 0, p->bufs + p->nbufs, DEMO_GRAPH_CAP, &count);
        p->count[k] = count;
        int64_t t_end = t0;
        for (uint32_t i = 0; i < count && st == TMEM_OK; i++) {
            const tmem_model_buffer *b = &p->bufs[p->nbufs + i];
            tmem_plan_buffer pb = {0};
            char id[64];
            snprintf(id, sizeof id, "%s.%s", k == 0 && nkinds > 1 ? "a" : k ? "b" : "l", b->name);
            pb.id = id;
            pb.size = b->size;
            pb.alignment = PLAN_ALIGN;
            pb.start = t0 + b->start;
            pb.end = t0 + b->end;
            if (pb.end > t_end) t_end = pb.end;
            st = tmem_plan_problem_add(prob, &pb, NULL);
        }
        p->nbufs += count;
        t0 = t_end;
    }
    tmem_plan_desc d = {0};
    d.node_limit = TMEM_FIT_PLAN_NODES; /* the fit calculator's budget: same answer */
    if (st == TMEM_OK) st = tmem_plan_solve(prob, &d, &p->plan);
    if (st == TMEM_OK) st = tmem_plan_get_info(p->plan, &p->info);
    tmem_plan_problem_destroy(prob);
    return st;
}

void demo_plan_free(demo_plan *p) {
    tmem_plan_destroy(p->plan);
    p->plan = NULL;
}

void demo_plan_run_layer(const demo_plan *p, tmem_model_layer_kind kind, uint32_t layer) {
    for (uint32_t k = 0; k < p->nkinds; k++) {
        if (p->kinds[k] != kind) continue;
        /* buffers come in the order their ops produce them */
        for (uint32_t i = p->first[k]; i < p->first[k] + p->count[k]; i++)
            demo_touch(p->ptrs[i], p->bufs[i].size, layer + i);
    }
}

void demo_plan_print(const demo_plan *p) {
    printf("    plan %-8s %3u buffers  arena %8.1f MiB  lower bound %8.1f MiB  "
           "no aliasing %8.1f MiB  (%s%s)\n",
           p->name, p->info.buffers, demo_mib(p->info.arena), demo_mib(p->info.lower_bound),
           demo_mib(p->info.sum_sizes), p->info.method, p->info.optimal ? ", optimal" : "");
}

/*
 * The lower bound: no arena can be smaller than the bytes alive at the
 * busiest moment. A difference array over the compressed sections gives it in
 * O(n + sections) once times are sorted.
 */
#include "plan_internal.h"
#include <stdlib.h>

bool tmem__plan_inst_lower_bound(const tmem__plan_inst *inst, uint64_t *out) {
    uint64_t best = 0;
    uint64_t *delta = calloc((size_t)inst->nsec + 1, sizeof *delta);
    if (!delta) return false;
    for (uint32_t i = 0; i < inst->n; i++) {
        /* Modular arithmetic: the live sum never exceeds the total, which fits
         * in 64 bits (checked when buffers are added). */
        delta[inst->lo[i]] += inst->size[i];
        delta[inst->hi[i]] -= inst->size[i];
        if (inst->fixed[i] != TMEM_OFFSET_NONE && inst->fixed[i] + inst->size[i] > best)
            best = inst->fixed[i] + inst->size[i];
    }
    uint64_t live = 0;
    for (uint32_t s = 0; s < inst->nsec; s++) {
        live += delta[s];
        if (live > best) best = live;
    }
    free(delta);
    *out = best;
    return true;
}

tmem_status tmem_plan_problem_lower_bound(const tmem_plan_problem *p, uint64_t *out) {
    if (!p || !out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = 0;
    if (p->n == 0) return TMEM_OK;
    tmem__plan_inst inst;
    tmem_status st = tmem__plan_inst_from_problem(p, &inst);
    if (st) return st;
    bool ok = tmem__plan_inst_lower_bound(&inst, out);
    tmem__plan_inst_free(&inst);
    return ok ? TMEM_OK : tmem__err(TMEM_E_NO_MEMORY);
}

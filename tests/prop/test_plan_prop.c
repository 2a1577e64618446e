/* Property tests of the planner on random small instances (seed printed):
 * the exact search is checked against brute force (every order of first-fit
 * at the lowest feasible offset reaches an optimum), every plan against the
 * validator, and decision mode against the optimum from both sides. */
#include "harness.h"
#include "plan/plan_internal.h"
#include <stdlib.h>
#include <string.h>

typedef struct rb { uint64_t size, align; int64_t s, e; } rb;

/* Lowest aligned offset for b that avoids the placed buffers alive with it. */
static uint64_t lowest(const rb *v, const uint64_t *off, const bool *placed, int n, int b) {
    uint64_t o = 0;
    for (bool moved = true; moved;) {
        moved = false;
        o = (o + v[b].align - 1) / v[b].align * v[b].align;
        for (int j = 0; j < n; j++) {
            if (!placed[j] || v[j].e <= v[b].s || v[b].e <= v[j].s) continue;
            if (off[j] < o + v[b].size && o < off[j] + v[j].size) {
                o = off[j] + v[j].size;
                moved = true;
            }
        }
    }
    return o;
}

static uint64_t brute(const rb *v, int n, int *perm, int k, uint64_t *off, bool *placed, uint64_t height,
                      uint64_t best) {
    if (height >= best) return best;
    if (k == n) return height;
    for (int i = k; i < n; i++) {
        int t = perm[k];
        perm[k] = perm[i];
        perm[i] = t;
        int b = perm[k];
        off[b] = lowest(v, off, placed, n, b);
        placed[b] = true;
        uint64_t h = off[b] + v[b].size > height ? off[b] + v[b].size : height;
        best = brute(v, n, perm, k + 1, off, placed, h, best);
        placed[b] = false;
        perm[i] = perm[k];
        perm[k] = t;
    }
    return best;
}

static tmem_plan_problem *make(const rb *v, int n) {
    tmem_plan_problem *p;
    if (tmem_plan_problem_create(&p)) return NULL;
    for (int i = 0; i < n; i++) {
        tmem_plan_buffer b = {0};
        b.size = v[i].size;
        b.alignment = v[i].align;
        b.start = v[i].s;
        b.end = v[i].e;
        if (tmem_plan_problem_add(p, &b, NULL)) {
            tmem_plan_problem_destroy(p);
            return NULL;
        }
    }
    return p;
}

static void check_plan(const tmem_plan_problem *p, const tmem_plan *pl, uint64_t cap) {
    uint32_t n = tmem_plan_problem_count(p);
    uint64_t *off = malloc(n * sizeof *off);
    for (uint32_t i = 0; i < n; i++) off[i] = tmem_plan_offset(pl, i);
    CHECK_OK(tmem_plan_validate(p, off, cap, NULL));
    free(off);
}

static void test_exact_vs_brute(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(20260101));
    for (int iter = 0; iter < 300; iter++) {
        int n = (int)tmem_rng_range(&r, 1, 7);
        rb v[8];
        for (int i = 0; i < n; i++) {
            v[i].size = tmem_rng_range(&r, 1, 9) * (iter % 3 == 0 ? 3 : 1);
            v[i].align = iter % 4 == 1 ? (uint64_t)1 << tmem_rng_range(&r, 0, 2) : 1;
            v[i].s = (int64_t)tmem_rng_range(&r, 0, 6);
            v[i].e = v[i].s + (int64_t)tmem_rng_range(&r, 1, 5);
        }
        int perm[8];
        uint64_t off[8];
        bool placed[8] = {false};
        for (int i = 0; i < n; i++) perm[i] = i;
        uint64_t opt = brute(v, n, perm, 0, off, placed, 0, UINT64_MAX);
        tmem_plan_problem *p = make(v, n);
        REQUIRE(p);
        tmem_plan *pl;
        tmem_plan_desc d = {0};
        d.node_limit = UINT64_MAX; /* no limit: the optimum, like the brute force */
        CHECK_OK(tmem_plan_solve(p, &d, &pl));
        if (pl) {
            tmem_plan_info in;
            CHECK_OK(tmem_plan_get_info(pl, &in));
            CHECK_MSG(in.arena == opt, "iter %d: arena %llu, brute force %llu", iter, (unsigned long long)in.arena,
                      (unsigned long long)opt);
            CHECK_MSG(in.optimal, "iter %d: optimum not proved", iter);
            CHECK(in.arena >= in.lower_bound);
            check_plan(p, pl, 0);
            tmem_plan_destroy(pl);
        }
        /* decision mode: feasible at the optimum, infeasible one below */
        d.mode = TMEM_PLAN_DECIDE;
        d.capacity = opt;
        CHECK_OK(tmem_plan_solve(p, &d, &pl));
        if (pl) check_plan(p, pl, opt);
        tmem_plan_destroy(pl);
        if (opt > 1) {
            d.capacity = opt - 1;
            CHECK_ST(tmem_plan_solve(p, &d, &pl), TMEM_E_INFEASIBLE);
            CHECK(pl == NULL);
        }
        tmem_plan_problem_destroy(p);
    }
}

/* The search itself (no greedy in front) against brute force. */
static void test_search_direct(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(777));
    for (int iter = 0; iter < 300; iter++) {
        int n = (int)tmem_rng_range(&r, 2, 7);
        rb v[8];
        for (int i = 0; i < n; i++) {
            v[i].size = tmem_rng_range(&r, 1, 6);
            v[i].align = 1;
            v[i].s = (int64_t)tmem_rng_range(&r, 0, 5);
            v[i].e = v[i].s + (int64_t)tmem_rng_range(&r, 1, 4);
        }
        int perm[8];
        uint64_t off[8];
        bool placed[8] = {false};
        for (int i = 0; i < n; i++) perm[i] = i;
        uint64_t opt = brute(v, n, perm, 0, off, placed, 0, UINT64_MAX);
        tmem_plan_problem *p = make(v, n);
        REQUIRE(p);
        tmem__plan_inst inst;
        REQUIRE_OK(tmem__plan_inst_from_problem(p, &inst));
        tmem__plan_adj adj;
        REQUIRE_OK(tmem__plan_adj_build(&inst, 1 << 20, &adj));
        uint64_t res[8];
        tmem__plan_limits lim = {0};
        CHECK_MSG(tmem__plan_search(&inst, &adj, opt, &lim, res) == TMEM__PLAN_FOUND, "iter %d: not found at %llu", iter,
                  (unsigned long long)opt);
        CHECK(tmem_plan_validate(p, res, opt, NULL) == TMEM_OK);
        lim = (tmem__plan_limits){0};
        CHECK_MSG(tmem__plan_search(&inst, &adj, opt - 1, &lim, res) == TMEM__PLAN_NONE, "iter %d: found below %llu",
                  iter, (unsigned long long)opt);
        tmem__plan_adj_free(&adj);
        tmem__plan_inst_free(&inst);
        tmem_plan_problem_destroy(p);
    }
}

int main(void) {
    RUN(test_search_direct);
    RUN(test_exact_vs_brute);
    return tmem_test_finish();
}

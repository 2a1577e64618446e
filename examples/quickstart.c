/* Quick start (README): a budgeted context, a general heap for KV-like data,
 * and a planned, aliased arena for one step's activations. */
#include <stdio.h>
#include <typedmem/typedmem.h>

int main(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {.budget = 256ull << 20};      /* 256 MiB for everything */
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;

    tmem_type *kv, *act;                                  /* the role -> type policy */
    if (tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, &kv) || tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act)) return 1;

    tmem_heap *kv_heap;                                   /* O(1) TLSF heap, commits on demand */
    tmem_heap_desc hd = {.kind = TMEM_HEAP_GENERAL, .type = kv, .role = TMEM_ROLE_KV_CACHE, .size = 64ull << 20};
    void *block;
    if (tmem_heap_create(ctx, &hd, &kv_heap) || tmem_heap_alloc(kv_heap, 1 << 20, 256, &block)) return 1;

    /* Three 8 MiB activations alive [0,2), [1,3), [2,4): the planner aliases A and C. */
    tmem_plan_problem *prob;
    if (tmem_plan_problem_create(&prob)) return 1;
    for (int i = 0; i < 3; i++) {
        tmem_plan_buffer b = {.size = 8u << 20, .alignment = 64, .start = i, .end = i + 2};
        if (tmem_plan_problem_add(prob, &b, NULL)) return 1;
    }
    tmem_plan *plan;
    tmem_plan_desc pd = {.mode = TMEM_PLAN_MINIMIZE};
    tmem_heap *arena;
    void *ptrs[3];
    if (tmem_plan_solve(prob, &pd, &plan) || tmem_plan_heap_desc(plan, &hd)) return 1;
    hd.type = act;
    hd.role = TMEM_ROLE_ACTIVATION;
    if (tmem_heap_create(ctx, &hd, &arena) || tmem_plan_heap_bind(arena, plan, ptrs)) return 1;

    tmem_plan_info pi;
    if (tmem_plan_get_info(plan, &pi)) return 1;
    printf("arena %llu MiB for %llu MiB of activations (lower bound %llu MiB)\n",
           (unsigned long long)(pi.arena >> 20), (unsigned long long)(pi.sum_sizes >> 20),
           (unsigned long long)(pi.lower_bound >> 20));

    char table[8192];
    if (tmem_stats_table(ctx, table, sizeof table, NULL) == TMEM_OK) fputs(table, stdout);
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(prob);
    tmem_context_destroy(ctx);                            /* frees heaps, pools, everything */
    return 0;
}

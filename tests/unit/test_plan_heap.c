/* Glue between plans and PLACEMENT heaps: size the heap from the plan,
 * allocate each buffer at its planned offset when its lifetime starts and
 * free it when it ends (the heap refuses overlaps with live allocations, so
 * a wrong plan would fail here), several steps of the same shape re-using
 * one plan; and the bind/unbind form with pointers kept across steps. */
#include "harness.h"
#include <string.h>

#define NB 24

static void make(tmem_plan_problem **out, tmem_plan **plan) {
    tmem_plan_problem *p;
    *out = NULL;
    *plan = NULL;
    if (tmem_plan_problem_create(&p)) return;
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(4242));
    for (int i = 0; i < NB; i++) {
        tmem_plan_buffer b = {0};
        b.size = tmem_rng_range(&r, 1, 16) * 1024 + tmem_rng_range(&r, 0, 100);
        b.alignment = 64;
        b.start = i;
        b.end = i + (int64_t)tmem_rng_range(&r, 1, 5);
        if (tmem_plan_problem_add(p, &b, NULL)) {
            tmem_plan_problem_destroy(p);
            return;
        }
    }
    if (tmem_plan_solve(p, NULL, plan)) {
        tmem_plan_problem_destroy(p);
        return;
    }
    *out = p;
}

static void test_steps_with_lifetimes(void) {
    tmem_plan_problem *p;
    tmem_plan *pl;
    make(&p, &pl);
    REQUIRE(p && pl);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *act;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
    tmem_heap_desc hd;
    REQUIRE_OK(tmem_plan_heap_desc(pl, &hd));
    hd.type = act;
    hd.role = TMEM_ROLE_ACTIVATION;
    hd.name = "planned";
    tmem_heap *heap;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &heap));
    tmem_plan_info in;
    REQUIRE_OK(tmem_plan_get_info(pl, &in));
    for (int step = 0; step < 3; step++) {
        /* walk time: free what ended, then allocate what starts */
        for (int64_t t = 0; t < NB + 6; t++) {
            for (uint32_t i = 0; i < NB; i++) {
                tmem_plan_buffer b;
                REQUIRE_OK(tmem_plan_get_buffer(pl, i, &b));
                if (b.end == t) CHECK_OK(tmem_heap_free_offset(heap, b.offset));
            }
            for (uint32_t i = 0; i < NB; i++) {
                tmem_plan_buffer b;
                REQUIRE_OK(tmem_plan_get_buffer(pl, i, &b));
                if (b.start != t) continue;
                tmem_alloc_info ai;
                CHECK_OK(tmem_plan_heap_alloc(heap, pl, i, 0, &ai));
                CHECK(ai.offset == b.offset);
                if (ai.ptr) memset(ai.ptr, (int)i, b.size);   /* the bytes are really there */
            }
        }
        tmem_heap_info hi;
        CHECK_OK(tmem_heap_get_info(heap, &hi));
        CHECK(hi.live_count == 0);
        CHECK(hi.peak_used <= hd.size);
    }
    /* a wrong placement is refused: two buffers alive together at one offset */
    tmem_alloc_info a0, a1;
    CHECK_OK(tmem_plan_heap_alloc(heap, pl, 0, 0, &a0));
    tmem_alloc_desc ad = {0};
    ad.size = 64;
    ad.offset = a0.offset;
    ad.role = -1;
    CHECK_ST(tmem_heap_alloc_ex(heap, &ad, &a1), TMEM_E_OVERLAP);
    CHECK_OK(tmem_heap_free_offset(heap, a0.offset));
    CHECK_ST(tmem_plan_heap_alloc(heap, pl, NB, 0, NULL), TMEM_E_NOT_FOUND);
    tmem_heap_destroy(heap);
    tmem_context_destroy(ctx);
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
}

static void test_bind_once_reuse(void) {
    tmem_plan_problem *p;
    tmem_plan *pl;
    make(&p, &pl);
    REQUIRE(p && pl);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *act;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
    tmem_heap_desc hd;
    REQUIRE_OK(tmem_plan_heap_desc(pl, &hd));
    hd.type = act;
    tmem_heap *heap;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &heap));
    void *ptrs[NB];
    REQUIRE_OK(tmem_plan_heap_bind(heap, pl, ptrs));
    for (uint32_t i = 0; i < NB; i++) {
        CHECK(ptrs[i] == tmem_heap_ptr(heap, tmem_plan_offset(pl, i)));
        CHECK(((uintptr_t)ptrs[i] & 63) == 0);
    }
    /* two steps: write every buffer in its lifetime, check it still holds
     * its bytes at its last step (nothing alive with it overwrote it) */
    for (int step = 0; step < 2; step++) {
        for (int64_t t = 0; t < NB + 6; t++)
            for (uint32_t i = 0; i < NB; i++) {
                tmem_plan_buffer b;
                REQUIRE_OK(tmem_plan_get_buffer(pl, i, &b));
                if (b.start == t) memset(ptrs[i], 0x40 + (int)i, b.size);
                if (b.end == t + 1) {
                    const unsigned char *q = ptrs[i];
                    bool intact = true;
                    for (uint64_t k = 0; k < b.size; k++) intact &= q[k] == (unsigned char)(0x40 + i);
                    CHECK_MSG(intact, "buffer %u overwritten while alive", i);
                }
            }
    }
    CHECK_OK(tmem_plan_heap_unbind(heap, pl));
    tmem_heap_destroy(heap);
    tmem_context_destroy(ctx);
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
}

/* Binding refuses heaps that would ignore the offsets, honours an arena
 * offset, and per buffer registers each one with the heap so its overlap and
 * alias checks see the real run. */
static void test_bind_checks(void) {
    tmem_plan_problem *p;
    tmem_plan *pl;
    make(&p, &pl);
    REQUIRE(p && pl);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.flags = TMEM_CONTEXT_DEBUG;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *act;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
    tmem_plan_info in;
    REQUIRE_OK(tmem_plan_get_info(pl, &in));
    tmem_heap_desc hd;
    REQUIRE_OK(tmem_plan_heap_desc(pl, &hd));
    hd.type = act;
    /* GENERAL and LINEAR heaps would put the bytes anywhere: refused. */
    tmem_heap_desc gd = hd;
    gd.kind = TMEM_HEAP_GENERAL;
    tmem_heap *general;
    REQUIRE_OK(tmem_heap_create(ctx, &gd, &general));
    void *ptrs[NB];
    CHECK_ST(tmem_plan_heap_bind(general, pl, ptrs), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_plan_heap_unbind(general, pl), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_plan_heap_alloc(general, pl, 0, 0, NULL), TMEM_E_INVALID_ARG);
    tmem_heap_destroy(general);

    /* The arena at an offset inside a bigger heap. */
    hd.size = hd.size * 2 + 4096;
    tmem_heap *heap;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &heap));
    tmem_plan_bind_desc bd = {0};
    bd.offset = 4096;
    tmem_plan_binding b;
    REQUIRE_OK(tmem_plan_heap_bind_ex(heap, pl, &bd, ptrs, &b));
    CHECK(b.offset == 4096 && b.size == in.arena);
    for (uint32_t i = 0; i < NB; i++) CHECK(ptrs[i] == tmem_heap_ptr(heap, 4096 + tmem_plan_offset(pl, i)));
    /* Unbinding the default offset finds nothing there. */
    CHECK_ST(tmem_plan_heap_unbind(heap, pl), TMEM_E_FOREIGN);
    CHECK_OK(tmem_plan_heap_unbind_ex(heap, pl, &b));
    bd.offset = 8; /* below the plan's alignment */
    CHECK_ST(tmem_plan_heap_bind_ex(heap, pl, &bd, ptrs, &b), TMEM_E_ALIGNMENT);
    for (uint32_t i = 0; i < NB; i++) CHECK(ptrs[i] == NULL); /* not the old binding's */

    /* Per buffer: each is an aliasable allocation at its offset. */
    bd.offset = 0;
    bd.flags = TMEM_PLAN_BIND_PER_BUFFER;
    REQUIRE_OK(tmem_plan_heap_bind_ex(heap, pl, &bd, ptrs, &b));
    tmem_heap_info hi;
    REQUIRE_OK(tmem_heap_get_info(heap, &hi));
    CHECK(hi.live_count == NB);
    for (uint32_t i = 0; i < NB; i++) CHECK(ptrs[i] == tmem_heap_ptr(heap, tmem_plan_offset(pl, i)));
    CHECK_OK(tmem_plan_heap_unbind_ex(heap, pl, &b));
    REQUIRE_OK(tmem_heap_get_info(heap, &hi));
    CHECK(hi.live_count == 0);
    tmem_heap_destroy(heap);
    tmem_context_destroy(ctx);
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
}

int main(void) {
    RUN(test_steps_with_lifetimes);
    RUN(test_bind_once_reuse);
    RUN(test_bind_checks);
    return tmem_test_finish();
}

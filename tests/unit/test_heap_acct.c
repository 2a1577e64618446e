/* Heap accounting as readers see it: type and role stats stay exact across
 * several heaps of one type, a role used by two types, a reset, and a heap
 * destroyed with live allocations (counted freed; its allocations stay in
 * the type's and role's totals). Written to guard a per-heap-counter
 * redesign of the accounting (tried and reverted: see docs/benchmarks.md,
 * heap section); it holds for any design. */
#include "harness.h"
#include "typedmem/typedmem.h"

#define MiB (1ull << 20)

static void expect_type(tmem_type *t, uint64_t cur, uint64_t peak, uint64_t total, uint64_t allocs, uint64_t frees) {
    tmem_type_stats s;
    CHECK_OK(tmem_type_get_stats(t, &s));
    CHECK_MSG(s.in_use.current == cur && s.in_use.peak == peak && s.in_use.total == total && s.alloc_count == allocs &&
                  s.free_count == frees && s.live_count == allocs - frees,
              "type: cur %llu peak %llu total %llu allocs %llu frees %llu", (unsigned long long)s.in_use.current,
              (unsigned long long)s.in_use.peak, (unsigned long long)s.in_use.total, (unsigned long long)s.alloc_count,
              (unsigned long long)s.free_count);
}

static void expect_role(tmem_context *ctx, tmem_role r, uint64_t cur, uint64_t peak, uint64_t total, uint64_t allocs,
                        uint64_t live) {
    tmem_role_stats s;
    CHECK_OK(tmem_role_get_stats(ctx, r, &s));
    CHECK_MSG(s.in_use.current == cur && s.in_use.peak == peak && s.in_use.total == total && s.alloc_count == allocs &&
                  s.live_count == live,
              "role %d: cur %llu peak %llu total %llu allocs %llu live %llu", (int)r, (unsigned long long)s.in_use.current,
              (unsigned long long)s.in_use.peak, (unsigned long long)s.in_use.total, (unsigned long long)s.alloc_count,
              (unsigned long long)s.live_count);
}

static void test_heaps_fold_exactly(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 256 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/a";
    td.reserve = 64 * MiB;
    tmem_type *a, *b;
    REQUIRE_OK(tmem_type_create(ctx, &td, &a));
    td.name = "/memory/b";
    REQUIRE_OK(tmem_type_create(ctx, &td, &b));
    tmem_heap_desc hd = {0};
    hd.type = a;
    hd.size = 16 * MiB;
    hd.role = TMEM_ROLE_ACTIVATION;
    tmem_heap *h1, *h2, *h3;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h1));
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h2));
    hd.type = b;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h3));

    void *p1, *p2, *p3, *q1;
    CHECK_OK(tmem_heap_alloc(h1, 100, 0, &p1));
    CHECK_OK(tmem_heap_alloc(h1, 200, 0, &p2));
    CHECK_OK(tmem_heap_alloc(h2, 4000, 0, &p3));
    CHECK_OK(tmem_heap_alloc(h3, 50, 0, &q1));
    tmem_alloc_desc ad = {0};
    ad.size = 1000;
    ad.role = TMEM_ROLE_SCRATCH;
    tmem_alloc_info ai;
    CHECK_OK(tmem_heap_alloc_ex(h2, &ad, &ai));
    expect_type(a, 5300, 5300, 5300, 4, 0);
    expect_type(b, 50, 50, 50, 1, 0);
    expect_role(ctx, TMEM_ROLE_ACTIVATION, 4350, 4350, 4350, 4, 4);
    expect_role(ctx, TMEM_ROLE_SCRATCH, 1000, 1000, 1000, 1, 1);

    CHECK_OK(tmem_heap_free(h2, p3));
    CHECK_OK(tmem_heap_free(h1, p1));
    expect_type(a, 1200, 5300, 5300, 4, 2);
    expect_role(ctx, TMEM_ROLE_ACTIVATION, 250, 4350, 4350, 4, 2);
    CHECK_OK(tmem_context_check(ctx));

    /* h2 destroyed with the scratch allocation live: counted freed, its
     * allocation count stays in the type and the role. */
    tmem_heap_destroy(h2);
    expect_type(a, 200, 5300, 5300, 4, 3);
    expect_role(ctx, TMEM_ROLE_SCRATCH, 0, 1000, 1000, 1, 0);
    CHECK_OK(tmem_context_check(ctx));

    /* reset drops h1's live block; new allocations continue the counts */
    CHECK_OK(tmem_heap_reset(h1));
    CHECK_OK(tmem_heap_alloc(h1, 300, 0, &p1));
    expect_type(a, 300, 5300, 5600, 5, 4);
    expect_role(ctx, TMEM_ROLE_ACTIVATION, 350, 4350, 4650, 5, 2);
    CHECK_OK(tmem_heap_free(h1, p1));
    CHECK_OK(tmem_heap_free(h3, q1));
    expect_type(a, 0, 5300, 5600, 5, 5);
    expect_type(b, 0, 50, 50, 1, 1);
    CHECK_OK(tmem_context_check(ctx));
    tmem_heap_destroy(h1);
    tmem_heap_destroy(h3);
    expect_type(a, 0, 5300, 5600, 5, 5);
    expect_role(ctx, TMEM_ROLE_ACTIVATION, 0, 4350, 4650, 5, 0);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_heaps_fold_exactly);
    return tmem_test_finish();
}

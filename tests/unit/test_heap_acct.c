/* Heap accounting as readers see it (the contract of internal.h's
 * accounting slots): current bytes, totals and counts of types and roles
 * fold exactly across several heaps of one type, a role used by two types, a
 * reset, and a heap destroyed with live allocations (counted freed; its
 * allocations stay in the type's and role's totals). The in-use peak of a
 * type or role is the sum of its heaps' peaks (each exact): exact with one
 * heap, or when the heaps peak together, otherwise an upper bound; it never
 * drops when a heap is destroyed. */
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

static uint64_t heap_peak(tmem_heap *h) {
    tmem_heap_info hi;
    CHECK_OK(tmem_heap_get_info(h, &hi));
    return hi.peak_used;
}

/* Two heaps that peak at different times: the type's peak is the sum of
 * their peaks (an upper bound: the true peak was 1000), each heap's own is
 * exact; one heap alone reports the exact peak; a destroyed heap's share
 * stays; an allocation with another role (shared counters) adds its own. */
static void test_peak_is_sum_of_heap_peaks(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 256 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/a";
    td.reserve = 64 * MiB;
    tmem_type *a;
    REQUIRE_OK(tmem_type_create(ctx, &td, &a));
    tmem_heap_desc hd = {0};
    hd.type = a;
    hd.size = 16 * MiB;
    hd.role = TMEM_ROLE_ACTIVATION;
    tmem_heap *h1, *h2;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h1));

    void *p, *q;
    CHECK_OK(tmem_heap_alloc(h1, 1000, 0, &p));
    CHECK_OK(tmem_heap_free(h1, p));
    CHECK_OK(tmem_heap_alloc(h1, 600, 0, &p));
    expect_type(a, 600, 1000, 1600, 2, 1); /* one heap: exact */
    CHECK_OK(tmem_heap_free(h1, p));

    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h2));
    CHECK_OK(tmem_heap_alloc(h2, 600, 0, &q));
    CHECK(heap_peak(h1) == 1000 && heap_peak(h2) == 600);
    expect_type(a, 600, 1600, 2200, 3, 2);
    expect_role(ctx, TMEM_ROLE_ACTIVATION, 600, 1600, 2200, 3, 1);

    /* another role: the shared counters, their own peak added */
    tmem_alloc_desc ad = {0};
    ad.size = 300;
    ad.role = TMEM_ROLE_SCRATCH;
    tmem_alloc_info ai;
    CHECK_OK(tmem_heap_alloc_ex(h1, &ad, &ai));
    expect_type(a, 900, 1900, 2500, 4, 2);
    expect_role(ctx, TMEM_ROLE_SCRATCH, 300, 300, 300, 1, 1);
    CHECK_OK(tmem_heap_free_offset(h1, ai.offset));
    CHECK_OK(tmem_context_check(ctx));

    /* destroy h1: its peak stays in the type's */
    tmem_heap_destroy(h1);
    expect_type(a, 600, 1900, 2500, 4, 3);
    expect_role(ctx, TMEM_ROLE_ACTIVATION, 600, 1600, 2200, 3, 1);
    CHECK_OK(tmem_heap_free(h2, q));
    tmem_heap_destroy(h2);
    expect_type(a, 0, 1900, 2500, 4, 4);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_heaps_fold_exactly);
    RUN(test_peak_is_sum_of_heap_peaks);
    return tmem_test_finish();
}

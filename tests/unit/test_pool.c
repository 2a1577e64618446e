/* Pools: carving, per-page commit tracking, decommit, advice, residency. */
#include <string.h>
#include "harness.h"
#include "core/core.h"

static tmem_context *make_ctx(uint64_t budget) {
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.budget = budget;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return NULL;
    return ctx;
}

static tmem_type *make_type(tmem_context *ctx, const char *name, uint64_t reserve, uint64_t budget, uint32_t flags) {
    tmem_type_desc td = {0};
    td.name = name;
    td.reserve = reserve;
    td.budget = budget;
    td.flags = flags;
    tmem_type *t = NULL;
    if (tmem_type_create(ctx, &td, &t) != TMEM_OK) return NULL;
    return t;
}

static uint64_t committed(tmem_type *t) {
    tmem_type_stats s;
    if (tmem_type_get_stats(t, &s) != TMEM_OK) return UINT64_MAX;
    return s.committed.current;
}

static void test_commit_charges_only_new_pages(void) {
    tmem_context *ctx = make_ctx(64ull << 20);
    REQUIRE(ctx);
    tmem_type *t = make_type(ctx, "/memory/p", 16ull << 20, 0, 0);
    REQUIRE(t);
    uint64_t g = tmem__pool_granule(t);
    CHECK(g >= 4096 && tmem__is_pow2(g));
    CHECK(committed(t) == 0);
    /* One byte commits one page. */
    CHECK_OK(tmem__pool_commit(t, 10, 1));
    CHECK(committed(t) == g);
    /* Overlapping range: only the new pages are charged. */
    CHECK_OK(tmem__pool_commit(t, 0, 4 * g));
    CHECK(committed(t) == 4 * g);
    CHECK_OK(tmem__pool_commit(t, 2 * g, 4 * g));
    CHECK(committed(t) == 6 * g);
    /* Committed memory is writable. */
    char *p = tmem__pool_ptr(t, 0);
    REQUIRE(p);
    memset(p, 0xAB, 6 * g);
    CHECK(p[6 * g - 1] == (char)0xAB);
    /* Decommit uncharges only whole pages inside the range. */
    tmem__pool_decommit(t, g / 2, g); /* no whole page inside */
    CHECK(committed(t) == 6 * g);
    tmem__pool_decommit(t, g, 2 * g);
    CHECK(committed(t) == 4 * g);
    tmem__pool_decommit(t, g, 2 * g); /* already gone: no change */
    CHECK(committed(t) == 4 * g);
    /* Recommit the hole: reads zeros (fresh pages). */
    CHECK_OK(tmem__pool_commit(t, g, 2 * g));
    CHECK(committed(t) == 6 * g);
    CHECK(p[g] == 0 && p[0] == (char)0xAB);
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.committed == 6 * g && bi.peak_committed == 6 * g);
    CHECK_OK(tmem_context_check(ctx));
    /* Out of range / overflow: refused, nothing changed. */
    CHECK_ST(tmem__pool_commit(t, 16ull << 20, 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__pool_commit(t, UINT64_MAX - 10, 100), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem__pool_commit(t, 0, 0));
    CHECK(committed(t) == 6 * g);
    tmem__pool_decommit(t, 0, 16ull << 20);
    CHECK(committed(t) == 0);
    tmem_type_stats s;
    CHECK_OK(tmem_type_get_stats(t, &s));
    CHECK(s.committed.peak == 6 * g && s.committed.total == 8 * g);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

/* Sparse commits far apart exercise several bitmap leaves. */
static void test_sparse_leaves(void) {
    tmem_context *ctx = make_ctx(1ull << 30);
    REQUIRE(ctx);
    tmem_type *t = make_type(ctx, "/memory/sparse", 4ull << 30, 0, 0);
    REQUIRE(t);
    uint64_t g = tmem__pool_granule(t);
    uint64_t offs[] = {0, 129ull << 20, 1ull << 30, (4ull << 30) - g};
    for (int i = 0; i < 4; i++) CHECK_OK(tmem__pool_commit(t, offs[i], g));
    CHECK(committed(t) == 4 * g);
    CHECK(tmem__pool_committed_in(t, 0, 4ull << 30) == 4 * g);
    CHECK_OK(tmem_context_check(ctx));
    /* A commit straddling a leaf boundary (32768 pages). */
    uint64_t leaf = 32768 * g;
    CHECK_OK(tmem__pool_commit(t, leaf - 2 * g, 4 * g));
    CHECK(committed(t) == 8 * g);
    CHECK_OK(tmem_context_check(ctx));
    tmem__pool_decommit(t, leaf - g, 2 * g);
    CHECK(committed(t) == 6 * g);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

static void test_carve(void) {
    tmem_context *ctx = make_ctx(64ull << 20);
    REQUIRE(ctx);
    tmem_type *t = make_type(ctx, "/memory/carve", 1ull << 20, 0, 0);
    REQUIRE(t);
    uint64_t g = tmem__pool_granule(t);
    uint64_t a, b, c, d;
    CHECK_OK(tmem__pool_carve(t, 1, 0, &a)); /* rounds to a granule */
    CHECK(a == 0);
    CHECK_OK(tmem__pool_carve(t, 3 * g, 0, &b));
    CHECK(b == g);
    CHECK_OK(tmem__pool_carve(t, g, 16 * g, &c)); /* aligned */
    CHECK(c % (16 * g) == 0 && c >= 4 * g);
    CHECK_ST(tmem__pool_carve(t, 1ull << 20, 0, &d), TMEM_E_FULL);
    CHECK(d == TMEM_OFFSET_NONE);
    CHECK_ST(tmem__pool_carve(t, g, 3, &d), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem__pool_carve(t, 0, 0, &d), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__pool_carve(t, UINT64_MAX, 0, &d), TMEM_E_OVERFLOW);
    CHECK_OK(tmem_context_check(ctx));
    /* Uncarve decommits what the range still holds. */
    CHECK_OK(tmem__pool_commit(t, b, 3 * g));
    CHECK(committed(t) == 3 * g);
    tmem__pool_uncarve(t, b, 3 * g);
    CHECK(committed(t) == 0);
    /* The hole is reused first fit; coalescing restores the full range. */
    CHECK_OK(tmem__pool_carve(t, 2 * g, 0, &d));
    CHECK(d == g);
    tmem__pool_uncarve(t, d, 2 * g);
    tmem__pool_uncarve(t, a, g);
    tmem__pool_uncarve(t, c, g);
    tmem__pool_uncarve(t, c, g); /* double uncarve: ignored */
    CHECK_OK(tmem_context_check(ctx));
    CHECK_OK(tmem__pool_carve(t, 1ull << 20, 0, &d));
    CHECK(d == 0);
    tmem__pool_uncarve(t, d, 1ull << 20);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

/* Many small carves in random order: uncarve never fails and the free list
 * coalesces back to one range. */
static void test_carve_random(void) {
    tmem_context *ctx = make_ctx(64ull << 20);
    REQUIRE(ctx);
    tmem_type *t = make_type(ctx, "/memory/carve2", 8ull << 20, 0, 0);
    REQUIRE(t);
    uint64_t g = tmem__pool_granule(t);
    tmem_rng rng;
    tmem_rng_init(&rng, tmem_test_seed(42));
    uint64_t off[256], sz[256];
    int n = 0;
    for (int step = 0; step < 2000; step++) {
        if (n < 256 && (n == 0 || tmem_rng_range(&rng, 0, 2))) {
            uint64_t s = tmem_rng_range(&rng, 1, 8) * g;
            uint64_t al = g << tmem_rng_range(&rng, 0, 3);
            tmem_status st = tmem__pool_carve(t, s, al, &off[n]);
            if (st == TMEM_OK) {
                CHECK(off[n] % al == 0);
                for (int i = 0; i < n; i++) CHECK(off[n] + s <= off[i] || off[i] + sz[i] <= off[n]);
                sz[n++] = s;
            } else {
                CHECK_ST(st, TMEM_E_FULL);
            }
        } else {
            int k = (int)tmem_rng_range(&rng, 0, (uint64_t)n - 1);
            tmem__pool_uncarve(t, off[k], sz[k]);
            off[k] = off[n - 1];
            sz[k] = sz[n - 1];
            n--;
        }
        if (step % 100 == 0) CHECK_OK(tmem_context_check(ctx));
    }
    while (n) {
        n--;
        tmem__pool_uncarve(t, off[n], sz[n]);
    }
    uint64_t all;
    CHECK_OK(tmem__pool_carve(t, 8ull << 20, 0, &all));
    CHECK(all == 0);
    tmem_context_destroy(ctx);
}

static void test_populate(void) {
    tmem_context *ctx = make_ctx(64ull << 20);
    REQUIRE(ctx);
    tmem_type *t = make_type(ctx, "/memory/pop", 1ull << 20, 0, TMEM_TYPE_POPULATE);
    REQUIRE(t);
    CHECK(committed(t) == 1ull << 20); /* charged at creation */
    uint64_t res = 0;
    CHECK_OK(tmem__pool_residency(t, 0, 1ull << 20, &res));
    CHECK_MSG(res == 1ull << 20, "resident %llu", (unsigned long long)res);
    /* Over the context budget: creation refused, nothing charged. */
    tmem_type *big = make_type(ctx, "/memory/popbig", 128ull << 20, 0, TMEM_TYPE_POPULATE);
    CHECK(big == NULL);
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.committed == 1ull << 20);
    CHECK(tmem_type_count(ctx) == 1);
    tmem_type *f;
    CHECK_ST(tmem_type_find(ctx, "/memory/popbig", &f), TMEM_E_NOT_FOUND);
    /* Populate needs a size. */
    tmem_type_desc td = {0};
    td.name = "/memory/popnone";
    td.flags = TMEM_TYPE_POPULATE;
    CHECK_ST(tmem_type_create(ctx, &td, &f), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

static void test_locked_pinned(void) {
    tmem_context *ctx = make_ctx(64ull << 20);
    REQUIRE(ctx);
    /* Small enough for the default RLIMIT_MEMLOCK; if mlock is refused the
     * type fails cleanly with PERMISSION and nothing stays charged. */
    tmem_type_desc td = {0};
    td.name = "/memory/pinned";
    td.placement = TMEM_PLACEMENT_PINNED;
    td.reserve = 64 << 10;
    tmem_type *t = NULL;
    tmem_status st = tmem_type_create(ctx, &td, &t);
    if (st == TMEM_OK) {
        CHECK(committed(t) == 64 << 10);
        CHECK(tmem__type_flags(t) & TMEM_TYPE_LOCKED);
        tmem__pool_decommit(t, 0, 64 << 10);
        CHECK(committed(t) == 0);
        CHECK_OK(tmem__pool_commit(t, 0, 4096));
    } else {
        CHECK_ST(st, TMEM_E_PERMISSION);
        tmem_budget_info bi;
        CHECK_OK(tmem_context_budget(ctx, &bi));
        CHECK(bi.committed == 0);
    }
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

static void test_advise_residency(void) {
    tmem_context *ctx = make_ctx(64ull << 20);
    REQUIRE(ctx);
    tmem_type *t = make_type(ctx, "/memory/adv", 4ull << 20, 0, 0);
    REQUIRE(t);
    uint64_t g = tmem__pool_granule(t), res = 1;
    CHECK_OK(tmem__pool_commit(t, 0, 16 * g));
    CHECK_OK(tmem__pool_residency(t, 0, 16 * g, &res));
    CHECK(res == 0); /* committed, never touched */
    memset(tmem__pool_ptr(t, 0), 1, 16 * g);
    CHECK_OK(tmem__pool_residency(t, 0, 16 * g, &res));
    CHECK(res == 16 * g);
    CHECK_OK(tmem__pool_advise(t, 0, 8 * g, TMEM__ADVICE_EMPTY));
    CHECK_OK(tmem__pool_residency(t, 0, 16 * g, &res));
    CHECK(res == 8 * g);
    CHECK(committed(t) == 16 * g); /* still committed and charged */
    CHECK(((char *)tmem__pool_ptr(t, 0))[0] == 0);
    CHECK_OK(tmem__pool_advise(t, 8 * g, 8 * g, TMEM__ADVICE_VOLATILE));
    CHECK_ST(tmem__pool_advise(t, 0, 16 * g, (tmem__advice)9), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__pool_residency(t, 0, 8ull << 20, &res), TMEM_E_INVALID_ARG);
    CHECK(tmem__pool_ptr(t, 4ull << 20) == NULL);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_commit_charges_only_new_pages);
    RUN(test_sparse_leaves);
    RUN(test_carve);
    RUN(test_carve_random);
    RUN(test_populate);
    RUN(test_locked_pinned);
    RUN(test_advise_residency);
    return tmem_test_finish();
}

/* Budgets, reclaim order and callbacks, denials, pressure levels. */
#include <string.h>
#include "harness.h"
#include "core/core.h"

#define MiB (1ull << 20)

static tmem_context *make_ctx(uint64_t budget, float warn, float crit) {
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.budget = budget;
    cd.warning_fraction = warn;
    cd.critical_fraction = crit;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return NULL;
    return ctx;
}

static tmem_type *make_type(tmem_context *ctx, const char *name, uint64_t reserve, uint64_t budget) {
    tmem_type_desc td = {0};
    td.name = name;
    td.reserve = reserve;
    td.budget = budget;
    tmem_type *t = NULL;
    return tmem_type_create(ctx, &td, &t) == TMEM_OK ? t : NULL;
}

static uint64_t ctx_committed(tmem_context *ctx) {
    tmem_budget_info bi;
    return tmem_context_budget(ctx, &bi) == TMEM_OK ? bi.committed : UINT64_MAX;
}

/* ---- a reclaimable "cache": a list of committed ranges it can drop ---- */
typedef struct cache {
    tmem_type *type;
    uint64_t chunk;
    uint64_t next;      /* chunks [first, next) are committed */
    uint64_t first;
    int id;
    int *log;
    int *nlog;
    tmem_type *seen_type;
    uint64_t seen_needed;
    int calls;
} cache;

static tmem_status cache_grow(cache *c) {
    tmem_status st = tmem__pool_commit(c->type, c->next * c->chunk, c->chunk);
    if (st == TMEM_OK) c->next++;
    return st;
}

static uint64_t cache_evict(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user) {
    (void)ctx;
    cache *c = user;
    c->calls++;
    c->seen_type = type;
    c->seen_needed = needed;
    if (c->log) c->log[(*c->nlog)++] = c->id;
    if (type && type != c->type) return 0; /* only that type's memory helps */
    uint64_t got = 0;
    while (got < needed && c->first < c->next) {
        tmem__pool_decommit(c->type, c->first * c->chunk, c->chunk);
        c->first++;
        got += c->chunk;
    }
    return got;
}

static uint64_t log_only(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user) {
    (void)ctx; (void)type; (void)needed;
    cache *c = user;
    c->calls++;
    if (c->log) c->log[(*c->nlog)++] = c->id;
    return 0;
}

static void test_denial_leaves_state_unchanged(void) {
    tmem_context *ctx = make_ctx(8 * MiB, 0, 0);
    REQUIRE(ctx);
    tmem_type *a = make_type(ctx, "/memory/a", 16 * MiB, 0);
    tmem_type *b = make_type(ctx, "/memory/b", 16 * MiB, 2 * MiB);
    REQUIRE(a && b);
    CHECK_OK(tmem__pool_commit(a, 0, 6 * MiB));
    /* Context budget: 6 + 3 > 8. */
    CHECK_ST(tmem__pool_commit(a, 6 * MiB, 3 * MiB), TMEM_E_BUDGET);
    CHECK(ctx_committed(ctx) == 6 * MiB);
    CHECK(tmem__pool_committed_in(a, 0, 16 * MiB) == 6 * MiB);
    /* Type budget: 2 MiB for b. */
    CHECK_OK(tmem__pool_commit(b, 0, 2 * MiB));
    CHECK_ST(tmem__pool_commit(b, 2 * MiB, 4096), TMEM_E_BUDGET);
    /* Re-committing what is already there costs nothing and succeeds. */
    CHECK_OK(tmem__pool_commit(b, 0, 2 * MiB));
    CHECK(ctx_committed(ctx) == 8 * MiB);
    /* Exactly at the budget is allowed; one more page is not. */
    CHECK_ST(tmem__pool_commit(a, 6 * MiB, 4096), TMEM_E_BUDGET);
    tmem_type_stats sa, sb;
    CHECK_OK(tmem_type_get_stats(a, &sa));
    CHECK_OK(tmem_type_get_stats(b, &sb));
    CHECK(sa.budget_denials == 2 && sb.budget_denials == 1);
    CHECK(sa.committed.current == 6 * MiB && sb.committed.current == 2 * MiB);
    /* External charges follow the same rules. */
    CHECK_ST(tmem__type_charge(a, 1, false), TMEM_E_BUDGET);
    tmem__pool_decommit(a, 0, 1 * MiB);
    CHECK_OK(tmem__type_charge(a, 1 * MiB, true));
    CHECK_OK(tmem_type_get_stats(a, &sa));
    CHECK(sa.clean == 1 * MiB && sa.committed.current == 6 * MiB && sa.dirty == 5 * MiB);
    uint64_t dirty, clean;
    CHECK_OK(tmem_context_accounted(ctx, &dirty, &clean));
    CHECK(dirty == 7 * MiB && clean == 1 * MiB);
    tmem__type_uncharge(a, 1 * MiB, true);
    tmem__type_uncharge(a, 1 * MiB, false); /* never charged dirty: clamped to 0 */
    CHECK(ctx_committed(ctx) == 7 * MiB);
    CHECK_OK(tmem_context_check(ctx));
    /* Raising a type budget lets it grow again. */
    CHECK_OK(tmem_type_set_budget(b, 3 * MiB));
    CHECK_OK(tmem__pool_commit(b, 2 * MiB, 1 * MiB));
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

static void test_reclaim_order_and_args(void) {
    tmem_context *ctx = make_ctx(8 * MiB, 0, 0);
    REQUIRE(ctx);
    tmem_type *kv = make_type(ctx, "/memory/kv", 16 * MiB, 0);
    tmem_type *act = make_type(ctx, "/memory/act", 16 * MiB, 4 * MiB);
    REQUIRE(kv && act);
    int log[64], nlog = 0;
    cache k = {kv, 1 * MiB, 0, 0, 1, log, &nlog, NULL, 0, 0};
    cache late = {kv, 1 * MiB, 0, 0, 2, log, &nlog, NULL, 0, 0};
    cache early = {kv, 1 * MiB, 0, 0, 3, log, &nlog, NULL, 0, 0};
    cache tie = {kv, 1 * MiB, 0, 0, 4, log, &nlog, NULL, 0, 0};
    CHECK_OK(tmem_context_add_reclaim(ctx, 10, cache_evict, &k));
    CHECK_OK(tmem_context_add_reclaim(ctx, 20, log_only, &late));
    CHECK_OK(tmem_context_add_reclaim(ctx, -5, log_only, &early));
    CHECK_OK(tmem_context_add_reclaim(ctx, 10, log_only, &tie));
    for (int i = 0; i < 6; i++) CHECK_OK(cache_grow(&k));
    CHECK(ctx_committed(ctx) == 6 * MiB);
    /* act needs 3 MiB; context has 2 left: reclaim must free 1 MiB. Order:
     * early (-5), [volatile heaps at 0], k (10), then stop: it fits. */
    CHECK_OK(tmem__pool_commit(act, 0, 3 * MiB));
    CHECK(nlog == 2 && log[0] == 3 && log[1] == 1);
    CHECK(k.seen_type == NULL); /* context budget crossed: any type helps */
    CHECK(k.seen_needed == 1 * MiB);
    CHECK(tie.calls == 0 && late.calls == 0);
    CHECK(ctx_committed(ctx) == 8 * MiB);
    tmem_type_stats s;
    CHECK_OK(tmem_type_get_stats(kv, &s));
    CHECK(s.reclaimed == 1 * MiB);
    /* Type budget of act (4 MiB) crossed: callbacks get the type. And when
     * nothing helps, every step runs once, in order, then BUDGET. */
    nlog = 0;
    CHECK_ST(tmem__pool_commit(act, 3 * MiB, 2 * MiB), TMEM_E_BUDGET);
    CHECK(nlog == 4 && log[0] == 3 && log[1] == 1 && log[2] == 4 && log[3] == 2);
    CHECK(k.seen_type == act);
    /* k freed nothing of act, but its eviction of kv was real. */
    CHECK(tmem__pool_committed_in(act, 0, 16 * MiB) == 3 * MiB);
    CHECK_OK(tmem_context_check(ctx));
    /* Removing steps. */
    CHECK_OK(tmem_context_remove_reclaim(ctx, log_only, &late));
    CHECK_ST(tmem_context_remove_reclaim(ctx, log_only, &late), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_context_remove_reclaim(ctx, cache_evict, &late), TMEM_E_NOT_FOUND);
    nlog = 0;
    CHECK_ST(tmem__pool_commit(act, 3 * MiB, 2 * MiB), TMEM_E_BUDGET);
    CHECK(nlog == 3);
    tmem_context_destroy(ctx);
}

static void test_reclaim_full_list(void) {
    tmem_context *ctx = make_ctx(8 * MiB, 0, 0);
    REQUIRE(ctx);
    cache c[33];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 32; i++) CHECK_OK(tmem_context_add_reclaim(ctx, i, log_only, &c[i]));
    CHECK_ST(tmem_context_add_reclaim(ctx, 0, log_only, &c[32]), TMEM_E_FULL);
    CHECK_ST(tmem_context_add_reclaim(ctx, 0, NULL, &c[32]), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_context_remove_reclaim(ctx, log_only, &c[5]));
    CHECK_OK(tmem_context_add_reclaim(ctx, 0, log_only, &c[32]));
    tmem_context_destroy(ctx);
}

/* A step that commits (nested) must not recurse into reclaim; a step that
 * removes itself must not deadlock. */
typedef struct nested {
    tmem_type *type;
    tmem_status inner;
    int calls;
} nested;

static uint64_t nested_commit(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user) {
    (void)type; (void)needed;
    nested *n = user;
    n->calls++;
    n->inner = tmem__pool_commit(n->type, 0, 1 * MiB); /* over budget too */
    TMEM__IGNORE(tmem_context_remove_reclaim(ctx, nested_commit, user));
    return 0;
}

static void test_nested(void) {
    tmem_context *ctx = make_ctx(1 * MiB, 0, 0);
    REQUIRE(ctx);
    tmem_type *t = make_type(ctx, "/memory/n", 8 * MiB, 0);
    REQUIRE(t);
    CHECK_OK(tmem__pool_commit(t, 4 * MiB, 1 * MiB));
    nested n = {t, TMEM_OK, 0};
    CHECK_OK(tmem_context_add_reclaim(ctx, 1, nested_commit, &n));
    CHECK_ST(tmem__pool_commit(t, 0, 1 * MiB), TMEM_E_BUDGET);
    CHECK(n.calls == 1);
    CHECK_ST(n.inner, TMEM_E_BUDGET);
    CHECK_ST(tmem_context_remove_reclaim(ctx, nested_commit, &n), TMEM_E_NOT_FOUND); /* removed itself */
    CHECK_ST(tmem__pool_commit(t, 0, 1 * MiB), TMEM_E_BUDGET);
    CHECK(n.calls == 1);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

static void test_lower_budget_runs_reclaim(void) {
    tmem_context *ctx = make_ctx(8 * MiB, 0, 0);
    REQUIRE(ctx);
    tmem_type *t = make_type(ctx, "/memory/t", 16 * MiB, 0);
    REQUIRE(t);
    cache k = {t, 1 * MiB, 0, 0, 1, NULL, NULL, NULL, 0, 0};
    for (int i = 0; i < 6; i++) CHECK_OK(cache_grow(&k));
    CHECK_OK(tmem_context_add_reclaim(ctx, 0, cache_evict, &k));
    CHECK_OK(tmem_context_set_budget(ctx, 4 * MiB));
    CHECK(k.calls == 1 && k.seen_needed == 2 * MiB);
    CHECK(ctx_committed(ctx) == 4 * MiB);
    CHECK_OK(tmem_context_remove_reclaim(ctx, cache_evict, &k));
    /* Not enough to reclaim: the budget still changes, later commits fail. */
    CHECK_OK(tmem_context_set_budget(ctx, 1 * MiB));
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.budget == 1 * MiB && bi.committed == 4 * MiB && bi.available == 0 && bi.pressure == TMEM_PRESSURE_CRITICAL);
    CHECK_ST(tmem__pool_commit(t, 15 * MiB, 4096), TMEM_E_BUDGET);
    CHECK_ST(tmem_context_set_budget(ctx, 0), TMEM_E_INVALID_ARG);
    tmem_context_destroy(ctx);
}

/* ---- pressure ---- */
typedef struct plog {
    tmem_pressure levels[32];
    int n;
} plog;

static void on_pressure(tmem_context *ctx, tmem_pressure level, void *user) {
    (void)ctx;
    plog *p = user;
    if (p->n < 32) p->levels[p->n++] = level;
}

static void test_pressure_levels(void) {
    tmem_context *ctx = make_ctx(10 * MiB, 0.5f, 0.9f);
    REQUIRE(ctx);
    tmem_type *t = make_type(ctx, "/memory/p", 16 * MiB, 0);
    REQUIRE(t);
    plog p = {{0}, 0};
    CHECK_OK(tmem_context_set_pressure_callback(ctx, on_pressure, &p));
    CHECK_OK(tmem__pool_commit(t, 0, 4 * MiB)); /* 40%: normal, no call */
    CHECK(p.n == 0);
    CHECK_OK(tmem__pool_commit(t, 4 * MiB, 1 * MiB)); /* 50%: warning */
    CHECK(p.n == 1 && p.levels[0] == TMEM_PRESSURE_WARNING);
    CHECK_OK(tmem__pool_commit(t, 5 * MiB, 3 * MiB)); /* 80%: still warning */
    CHECK(p.n == 1);
    uint64_t g = tmem__pool_granule(t);
    CHECK_OK(tmem__pool_commit(t, 8 * MiB, 1 * MiB - g)); /* just below 90% */
    CHECK(p.n == 1);
    CHECK_OK(tmem__pool_commit(t, 9 * MiB - g, g)); /* 90%: critical */
    CHECK(p.n == 2 && p.levels[1] == TMEM_PRESSURE_CRITICAL);
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.pressure == TMEM_PRESSURE_CRITICAL);
    tmem__pool_decommit(t, 0, 6 * MiB); /* 30%: normal */
    CHECK(p.n == 3 && p.levels[2] == TMEM_PRESSURE_NORMAL);
    /* Raising the budget lowers the level too. */
    CHECK_OK(tmem__pool_commit(t, 0, 3 * MiB)); /* 60%: warning */
    CHECK(p.n == 4 && p.levels[3] == TMEM_PRESSURE_WARNING);
    CHECK_OK(tmem_context_set_budget(ctx, 100 * MiB));
    CHECK(p.n == 5 && p.levels[4] == TMEM_PRESSURE_NORMAL);
    CHECK_OK(tmem_context_set_pressure_callback(ctx, NULL, NULL));
    CHECK_OK(tmem_context_set_budget(ctx, 6 * MiB));
    CHECK(p.n == 5);
    tmem_pressure lvl;
    tmem_status st = tmem_context_poll_os_pressure(ctx, &lvl);
    CHECK(st == TMEM_OK || st == TMEM_E_UNSUPPORTED);
    CHECK(lvl == TMEM_PRESSURE_CRITICAL); /* budget level is folded in either way */
    tmem_context_destroy(ctx);
}

/* Volatile heaps are purged at priority 0: after negative-priority steps,
 * before the others; lower type reclaim_priority first. */
static void test_volatile_purge_order(void) {
    tmem_context *ctx = make_ctx(8 * MiB, 0, 0);
    REQUIRE(ctx);
    tmem_type_desc td = {0};
    tmem_type *lo, *hi, *other;
    td.name = "/memory/lo";
    td.reserve = 8 * MiB;
    td.reclaim_priority = 1;
    REQUIRE_OK(tmem_type_create(ctx, &td, &lo));
    td.name = "/memory/hi";
    td.reclaim_priority = 9;
    REQUIRE_OK(tmem_type_create(ctx, &td, &hi));
    other = make_type(ctx, "/memory/other", 16 * MiB, 0);
    REQUIRE(other);
    tmem_heap *hl, *hh;
    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_GENERAL;
    hd.type = lo;
    hd.role = TMEM_ROLE_SCRATCH;
    hd.size = 4 * MiB;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &hl));
    hd.type = hi;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &hh));
    void *a, *b;
    REQUIRE_OK(tmem_heap_alloc(hl, 2 * MiB, 4096, &a));
    REQUIRE_OK(tmem_heap_alloc(hh, 2 * MiB, 4096, &b));
    memset(a, 1, 2 * MiB);
    memset(b, 2, 2 * MiB);
    CHECK_OK(tmem_heap_set_purgeable(hl, TMEM_PURGEABLE_VOLATILE, NULL, NULL));
    CHECK_OK(tmem_heap_set_purgeable(hh, TMEM_PURGEABLE_VOLATILE, NULL, NULL));
    uint64_t before = ctx_committed(ctx);
    CHECK(before >= 4 * MiB);
    int log[16], nlog = 0;
    cache neg = {other, 1 * MiB, 0, 0, 1, log, &nlog, NULL, 0, 0};
    cache zero = {other, 1 * MiB, 0, 0, 2, log, &nlog, NULL, 0, 0};
    CHECK_OK(tmem_context_add_reclaim(ctx, -1, log_only, &neg));
    CHECK_OK(tmem_context_add_reclaim(ctx, 0, log_only, &zero));
    /* Needs about 1 MiB more than is free: purging the low-priority heap is
     * enough, the high-priority one keeps its contents. */
    uint64_t want = 8 * MiB - before + 1 * MiB;
    CHECK_OK(tmem__pool_commit(other, 0, want));
    CHECK(nlog == 1 && log[0] == 1); /* the negative step ran; step 0 not needed */
    tmem_purgeable old;
    bool lost_lo = false, lost_hi = true;
    CHECK_OK(tmem_heap_set_purgeable(hh, TMEM_PURGEABLE_NON_VOLATILE, &old, &lost_hi));
    CHECK(!lost_hi && old == TMEM_PURGEABLE_VOLATILE);
    CHECK(((unsigned char *)b)[12345] == 2);
    /* The purged heap needs its pages back: no room until `other` shrinks. */
    CHECK_ST(tmem_heap_set_purgeable(hl, TMEM_PURGEABLE_NON_VOLATILE, &old, &lost_lo), TMEM_E_BUDGET);
    tmem__pool_decommit(other, 0, want);
    CHECK_OK(tmem_heap_set_purgeable(hl, TMEM_PURGEABLE_NON_VOLATILE, &old, &lost_lo));
    CHECK(lost_lo && old == TMEM_PURGEABLE_EMPTY);
    memset(a, 3, 2 * MiB);
    tmem_type_stats s;
    CHECK_OK(tmem_type_get_stats(lo, &s));
    CHECK(s.reclaimed >= 1 * MiB);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx); /* destroys both heaps */
}

int main(void) {
    RUN(test_volatile_purge_order);
    RUN(test_denial_leaves_state_unchanged);
    RUN(test_reclaim_order_and_args);
    RUN(test_reclaim_full_list);
    RUN(test_nested);
    RUN(test_lower_budget_runs_reclaim);
    RUN(test_pressure_levels);
    return tmem_test_finish();
}

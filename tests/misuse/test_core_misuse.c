/* Bad input to the core API: NULLs, unknown and foreign types, bad roles,
 * overflowing sizes. Every call returns a status and changes nothing. */
#include <string.h>
#include "harness.h"
#include "core/core.h"

#define MiB (1ull << 20)

static uint64_t committed(tmem_context *ctx) {
    tmem_budget_info bi;
    return tmem_context_budget(ctx, &bi) == TMEM_OK ? bi.committed : UINT64_MAX;
}

static void dummy_pressure(tmem_context *c, tmem_pressure l, void *u) { (void)c; (void)l; (void)u; }
static uint64_t dummy_reclaim(tmem_context *c, tmem_type *t, uint64_t n, void *u) { (void)c; (void)t; (void)n; (void)u; return 0; }

static void test_nulls(void) {
    tmem_type *t = (tmem_type *)1;
    tmem_type_info ti;
    tmem_type_stats ts;
    tmem_role_stats rs;
    tmem_budget_info bi;
    tmem_type_desc td = {0};
    td.name = "/memory/x";
    char buf[16];
    size_t need = 7;
    uint64_t d = 1, c = 1;
    CHECK_ST(tmem_context_budget(NULL, &bi), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_set_budget(NULL, 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_set_pressure_callback(NULL, dummy_pressure, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_add_reclaim(NULL, 0, dummy_reclaim, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_remove_reclaim(NULL, dummy_reclaim, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_poll_os_pressure(NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_create(NULL, &td, &t), TMEM_E_INVALID_ARG);
    CHECK(t == NULL);
    CHECK_ST(tmem_type_find(NULL, "/memory/kv", &t), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_get_info(NULL, &ti), TMEM_E_INVALID_ARG);
    CHECK(tmem_type_count(NULL) == 0);
    CHECK_ST(tmem_type_at(NULL, 0, &t), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_set_budget(NULL, 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_set_type(NULL, TMEM_ROLE_KV_CACHE, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_get_type(NULL, TMEM_ROLE_KV_CACHE, &t), TMEM_E_INVALID_ARG);
    CHECK(tmem_role_name(NULL, (tmem_role)TMEM_ROLE_USER_FIRST) == NULL);
    CHECK_ST(tmem_role_define(NULL, (tmem_role)TMEM_ROLE_USER_FIRST, "x", NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_get_stats(NULL, &ts), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_get_stats(NULL, TMEM_ROLE_KV_CACHE, &rs), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_stats_json(NULL, buf, sizeof buf, &need), TMEM_E_INVALID_ARG);
    CHECK(need == 0);
    CHECK_ST(tmem_stats_table(NULL, buf, sizeof buf, &need), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_accounted(NULL, &d, &c), TMEM_E_INVALID_ARG);
    CHECK(d == 0 && c == 0);
    CHECK_ST(tmem_context_check(NULL), TMEM_E_INVALID_ARG);
    tmem_context_destroy(NULL);

    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 16 * MiB;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    CHECK_ST(tmem_context_budget(ctx, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_create(ctx, NULL, &t), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_create(ctx, &td, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_find(ctx, NULL, &t), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_find(ctx, "/memory/kv", NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_at(ctx, 0, NULL), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_type_at(ctx, 0, &t));
    CHECK_ST(tmem_type_get_info(t, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_get_stats(t, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_get_stats(ctx, TMEM_ROLE_KV_CACHE, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_set_type(ctx, TMEM_ROLE_KV_CACHE, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_define(ctx, (tmem_role)TMEM_ROLE_USER_FIRST, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_define(ctx, (tmem_role)TMEM_ROLE_USER_FIRST, "", NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_define(ctx, (tmem_role)TMEM_ROLE_USER_FIRST, "0123456789012345678901234567890123", NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_accounted(ctx, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_context_accounted(ctx, &d, NULL));
    CHECK_ST(tmem_context_add_reclaim(ctx, 0, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_remove_reclaim(ctx, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_remove_reclaim(ctx, dummy_reclaim, NULL), TMEM_E_NOT_FOUND);
    CHECK(tmem_type_count(ctx) == 8 && committed(ctx) == 0);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

static void test_roles_out_of_range(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 16 * MiB;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *t, *kv;
    CHECK_OK(tmem_type_find(ctx, "/memory/kv", &kv));
    tmem_role bad[] = {(tmem_role)-1, TMEM_ROLE_DEFAULT, TMEM_ROLE_BUILTIN_END, (tmem_role)(TMEM_ROLE_USER_FIRST - 1), (tmem_role)TMEM_ROLE_MAX, (tmem_role)1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ST(tmem_role_set_type(ctx, bad[i], kv), TMEM_E_INVALID_ARG);
        CHECK(tmem_role_name(ctx, bad[i]) == NULL);
        tmem_role_stats rs;
        tmem_status st = tmem_role_get_stats(ctx, bad[i], &rs);
        /* Unused slots below TMEM_ROLE_MAX are valid (empty) counters. */
        CHECK(st == TMEM_OK || st == TMEM_E_INVALID_ARG);
        st = tmem_role_get_type(ctx, bad[i], &t);
        CHECK(st == TMEM_E_NOT_FOUND || st == TMEM_E_INVALID_ARG);
    }
    /* The policy did not change. */
    for (int r = TMEM_ROLE_BUILTIN_FIRST; r < TMEM_ROLE_BUILTIN_END; r++) CHECK_OK(tmem_role_get_type(ctx, (tmem_role)r, &t));
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, &t));
    CHECK(t == kv);
    tmem_context_destroy(ctx);
}

static void test_foreign_and_unknown(void) {
    tmem_context *a, *b;
    tmem_context_desc cd = {0};
    cd.budget = 16 * MiB;
    REQUIRE_OK(tmem_context_create(&cd, &a));
    REQUIRE_OK(tmem_context_create(&cd, &b));
    tmem_type *bkv, *t;
    CHECK_OK(tmem_type_find(b, "/memory/kv", &bkv));
    CHECK_ST(tmem_role_set_type(a, TMEM_ROLE_KV_CACHE, bkv), TMEM_E_FOREIGN);
    CHECK_ST(tmem_role_define(a, (tmem_role)TMEM_ROLE_USER_FIRST, "x", bkv), TMEM_E_FOREIGN);
    CHECK(tmem_role_name(a, (tmem_role)TMEM_ROLE_USER_FIRST) == NULL); /* nothing defined */
    CHECK_OK(tmem_role_get_type(a, TMEM_ROLE_KV_CACHE, &t));
    CHECK(t != bkv);
    CHECK_ST(tmem_type_find(a, "/memory/none", &t), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_type_find(a, "kv", &t), TMEM_E_NOT_FOUND);
    /* Garbage that is not a type at all. */
    char junk[sizeof(struct tmem_type)];
    memset(junk, 0x5a, sizeof junk);
    tmem_type_info ti;
    CHECK_ST(tmem_type_get_info((tmem_type *)junk, &ti), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_type_set_budget((tmem_type *)junk, 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_set_type(a, TMEM_ROLE_KV_CACHE, (tmem_type *)junk), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__pool_commit((tmem_type *)junk, 0, 4096), TMEM_E_INVALID_ARG);
    uint64_t off;
    CHECK_ST(tmem__pool_carve((tmem_type *)junk, 4096, 0, &off), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__type_charge((tmem_type *)junk, 4096, false), TMEM_E_INVALID_ARG);
    tmem__pool_decommit((tmem_type *)junk, 0, 4096);
    tmem__type_uncharge((tmem_type *)junk, 4096, false);
    tmem__pool_uncarve((tmem_type *)junk, 0, 4096);
    /* A context that is not one. */
    char cjunk[64];
    memset(cjunk, 0, sizeof cjunk);
    tmem_budget_info bi;
    CHECK_ST(tmem_context_budget((tmem_context *)cjunk, &bi), TMEM_E_INVALID_ARG);
    tmem_context_destroy((tmem_context *)cjunk); /* not a context: ignored */
    CHECK(committed(a) == 0 && committed(b) == 0);
    tmem_context_destroy(b);
    tmem_context_destroy(a);
}

static void test_sizes(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 16 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    tmem_type *t;
    td.name = "/memory/huge-reserve";
    td.reserve = 1ull << 62;
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_OVERFLOW);
    td.reserve = UINT64_MAX - 4095;
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_OVERFLOW);
    td.reserve = 0;
    td.budget = UINT64_MAX; /* reserve defaults to the budget: too big */
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_OVERFLOW);
    td.budget = 0;
    td.reserve = 1 * MiB;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    uint64_t off;
    CHECK_ST(tmem__pool_commit(t, UINT64_MAX, 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__pool_commit(t, 1, UINT64_MAX), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__pool_commit(t, 0, 1 * MiB + 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__pool_carve(t, UINT64_MAX - 100, 0, &off), TMEM_E_OVERFLOW);
    CHECK_ST(tmem__pool_carve(t, 4096, 1ull << 63, &off), TMEM_E_ALIGNMENT);
    CHECK_OK(tmem__pool_carve(t, 4096, 2 * MiB, &off)); /* the base is 2 MiB aligned */
    CHECK(((uintptr_t)tmem__pool_ptr(t, off) & (2 * MiB - 1)) == 0);
    tmem__pool_uncarve(t, off, 4096);
    CHECK_ST(tmem__pool_carve(t, 4096, 12288, &off), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem__pool_advise(t, UINT64_MAX, 2, TMEM__ADVICE_EMPTY), TMEM_E_INVALID_ARG);
    uint64_t res;
    CHECK_ST(tmem__pool_residency(t, 1, UINT64_MAX, &res), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__type_charge(t, UINT64_MAX, false), TMEM_E_BUDGET);
    tmem__pool_decommit(t, UINT64_MAX, 10);
    tmem__pool_uncarve(t, UINT64_MAX - 4095, 4096);
    /* A budget of exactly what is committed, and charges that would wrap. */
    CHECK_OK(tmem__pool_commit(t, 0, 4096));
    CHECK_OK(tmem_type_set_budget(t, 4096));
    CHECK_ST(tmem__pool_commit(t, 4096, 4096), TMEM_E_BUDGET);
    CHECK_ST(tmem__type_charge(t, UINT64_MAX - 100, true), TMEM_E_BUDGET);
    CHECK(committed(ctx) == 4096);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_nulls);
    RUN(test_roles_out_of_range);
    RUN(test_foreign_and_unknown);
    RUN(test_sizes);
    return tmem_test_finish();
}

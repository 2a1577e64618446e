/* Regression: a tmem_kv_cache_create that failed on its own input (a state
 * pool range larger than the state type's reserve) still left behind the
 * "/memory/snapshots" type it had created on the way, with that failed
 * call's snapshot budget. A failed create must leave the context unchanged. */
#include <string.h>
#include "harness.h"

static tmem_kv_cache_desc recurrent_desc(void) {
    tmem_kv_cache_desc d;
    memset(&d, 0, sizeof d);
    d.recurrent.layers = 2;
    d.recurrent.key_heads = 1;
    d.recurrent.value_heads = 1;
    d.recurrent.key_dim = 16;
    d.recurrent.value_dim = 16;
    return d;
}

static void test_failed_create_adds_no_type(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    CHECK_OK(tmem_context_create(&cd, &ctx));
    uint32_t before = tmem_type_count(ctx);
    tmem_type *t;
    CHECK_ST(tmem_type_find(ctx, "/memory/snapshots", &t), TMEM_E_NOT_FOUND);

    tmem_kv_cache_desc d = recurrent_desc();
    d.state_pool_bytes = 1ull << 50; /* far beyond any reserve */
    d.snapshot_budget = 1ull << 20;
    tmem_kv_cache *c;
    tmem_status st = tmem_kv_cache_create(ctx, &d, &c);
    CHECK(st != TMEM_OK);
    CHECK(c == NULL);
    CHECK(tmem_type_count(ctx) == before);
    CHECK_ST(tmem_type_find(ctx, "/memory/snapshots", &t), TMEM_E_NOT_FOUND);

    /* The same call with a sane range works and creates the type now, with
     * this call's snapshot budget. */
    d.state_pool_bytes = 0;
    d.snapshot_budget = 2ull << 20;
    CHECK_OK(tmem_kv_cache_create(ctx, &d, &c));
    CHECK(tmem_type_count(ctx) == before + 1);
    CHECK_OK(tmem_type_find(ctx, "/memory/snapshots", &t));
    tmem_type_info ti;
    CHECK_OK(tmem_type_get_info(t, &ti));
    CHECK(ti.budget == 2ull << 20);
    CHECK_OK(tmem_kv_cache_check(c));
    tmem_kv_cache_destroy(c);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_failed_create_adds_no_type);
    return tmem_test_finish();
}

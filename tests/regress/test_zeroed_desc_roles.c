/* Regression: zeroed descriptors meant "weights" (role 0 was
 * TMEM_ROLE_WEIGHTS), so a zero-initialised tmem_alloc_desc charged its
 * bytes to weights (tmem stats showed 69 weights allocations against 2
 * mappings). Now 0 is TMEM_ROLE_DEFAULT: the heap's role for an allocation,
 * the type's first role for a heap; -1 keeps meaning the heap's role. */
#include <string.h>
#include "harness.h"

static uint64_t role_live(tmem_context *ctx, tmem_role r) {
    tmem_role_stats rs;
    return tmem_role_get_stats(ctx, r, &rs) == TMEM_OK ? rs.live_count : UINT64_MAX;
}

static void test_alloc_desc_zeroed(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 20;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *kv;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, &kv));
    tmem_heap_desc hd = {0};
    hd.type = kv;
    hd.role = TMEM_ROLE_KV_CACHE;
    hd.size = 1 << 20;
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h));
    tmem_alloc_desc ad = {0}; /* zeroed but for the size */
    ad.size = 4096;
    tmem_alloc_info a, b, c;
    CHECK_OK(tmem_heap_alloc_ex(h, &ad, &a));
    ad.role = -1; /* the old spelling still works */
    CHECK_OK(tmem_heap_alloc_ex(h, &ad, &b));
    ad.role = TMEM_ROLE_SCRATCH; /* an explicit role still wins */
    CHECK_OK(tmem_heap_alloc_ex(h, &ad, &c));
    CHECK_MSG(role_live(ctx, TMEM_ROLE_KV_CACHE) == 2, "kv_cache live %llu",
              (unsigned long long)role_live(ctx, TMEM_ROLE_KV_CACHE));
    CHECK(role_live(ctx, TMEM_ROLE_SCRATCH) == 1);
    CHECK(role_live(ctx, TMEM_ROLE_WEIGHTS) == 0);
    tmem_context_destroy(ctx);
}

static void test_heap_desc_zeroed_role(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 20;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *act;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
    tmem_heap_desc hd = {0}; /* role 0: the role the policy maps to the type */
    hd.type = act;
    hd.size = 1 << 20;
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h));
    void *p;
    CHECK_OK(tmem_heap_alloc(h, 4096, 0, &p));
    CHECK(role_live(ctx, TMEM_ROLE_ACTIVATION) == 1 && role_live(ctx, TMEM_ROLE_WEIGHTS) == 0);
    /* a type no role maps to: no role is charged (and never weights) */
    tmem_type_desc td = {0};
    td.name = "/memory/unmapped";
    td.reserve = 4ull << 20;
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    hd.type = t;
    tmem_heap *h2 = NULL;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h2));
    CHECK_OK(tmem_heap_alloc(h2, 4096, 0, &p));
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(t, &ts));
    CHECK(ts.live_count == 1 && role_live(ctx, TMEM_ROLE_WEIGHTS) == 0 && role_live(ctx, TMEM_ROLE_SCRATCH) == 0);
    /* DEFAULT is not a role of its own */
    tmem_type *out;
    CHECK_ST(tmem_role_get_type(ctx, TMEM_ROLE_DEFAULT, &out), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_set_type(ctx, TMEM_ROLE_DEFAULT, act), TMEM_E_INVALID_ARG);
    CHECK(tmem_role_name(ctx, TMEM_ROLE_DEFAULT) == NULL);
    CHECK(tmem_role_name(ctx, TMEM_ROLE_WEIGHTS) && !strcmp(tmem_role_name(ctx, TMEM_ROLE_WEIGHTS), "weights"));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_alloc_desc_zeroed);
    RUN(test_heap_desc_zeroed_role);
    return tmem_test_finish();
}

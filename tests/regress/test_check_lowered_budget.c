/* Regression: tmem_context_check reported TMEM_E_CORRUPT after a type's
 * budget was lowered below what it had committed — a legal state (new commits
 * fail until it is back under), not corruption. */
#include "harness.h"

static void test_check_after_lowering_budget(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {.budget = 256u << 20};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *t;
    tmem_type_desc td = {.name = "/memory/lowered", .lifetime = TMEM_LIFETIME_TRANSIENT, .reserve = 128u << 20, .budget = 64u << 20};
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    tmem_heap *h;
    tmem_heap_desc hd = {.kind = TMEM_HEAP_GENERAL, .type = t, .role = TMEM_ROLE_SCRATCH, .size = 32u << 20};
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h));
    void *p, *q;
    REQUIRE_OK(tmem_heap_alloc(h, 8u << 20, 64, &p));
    CHECK_OK(tmem_type_set_budget(t, 1u << 20));
    CHECK_OK(tmem_context_check(ctx));
    /* Still enforced for new commits. */
    CHECK_ST(tmem_heap_alloc(h, 8u << 20, 64, &q), TMEM_E_BUDGET);
    CHECK_OK(tmem_heap_free(h, p));
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_check_after_lowering_budget);
    return tmem_test_finish();
}

/* The public doors tools use instead of internals: tmem_context_attach
 * (objects destroyed with the context, newest first, before its heaps) and
 * tmem_type_get_residency (what the OS holds of a type's pool). */
#include <string.h>
#include "harness.h"

#define MiB (1ull << 20)

typedef struct probe {
    tmem_heap *heap;     /* must still be usable in destroy */
    int *order;          /* shared sequence counter */
    int seen_at;
    bool heap_ok;
} probe;

static void destroy_probe(void *object) {
    probe *p = object;
    tmem_heap_info hi;
    p->heap_ok = tmem_heap_get_info(p->heap, &hi) == TMEM_OK && hi.live_count == 1;
    p->seen_at = ++*p->order;
}

static void test_attach(void) {
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&(tmem_context_desc){0}, &ctx));
    tmem_type *t;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_SCRATCH, &t));
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(ctx, &(tmem_heap_desc){.type = t, .size = 1 * MiB}, &h));
    void *p;
    REQUIRE_OK(tmem_heap_alloc(h, 4096, 0, &p));
    int order = 0;
    probe a = {h, &order, 0, false}, b = {h, &order, 0, false};
    CHECK_ST(tmem_context_attach(NULL, &a, destroy_probe), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_attach(ctx, NULL, destroy_probe), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_context_attach(ctx, &a, NULL), TMEM_E_INVALID_ARG);
    REQUIRE_OK(tmem_context_attach(ctx, &a, destroy_probe));
    REQUIRE_OK(tmem_context_attach(ctx, &b, destroy_probe));
    CHECK(order == 0); /* nothing runs before destroy */
    tmem_context_destroy(ctx);
    CHECK(b.seen_at == 1 && a.seen_at == 2); /* newest first */
    CHECK(a.heap_ok && b.heap_ok);           /* before the heaps go */
}

static void test_residency(void) {
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&(tmem_context_desc){.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES}, &ctx));
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &(tmem_type_desc){.name = "/memory/r", .reserve = 16 * MiB}, &t));
    uint64_t res = 1;
    CHECK_ST(tmem_type_get_residency(NULL, &res), TMEM_E_INVALID_ARG);
    CHECK(res == 0);
    CHECK_ST(tmem_type_get_residency(t, NULL), TMEM_E_INVALID_ARG);
    REQUIRE_OK(tmem_type_get_residency(t, &res));
    CHECK(res == 0);
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(ctx, &(tmem_heap_desc){.kind = TMEM_HEAP_BLOCK, .type = t, .size = 8 * MiB,
                                                       .block_size = 2 * MiB}, &h));
    void *p;
    REQUIRE_OK(tmem_heap_alloc(h, 2 * MiB, 0, &p));
    memset(p, 5, 2 * MiB);
    REQUIRE_OK(tmem_type_get_residency(t, &res));
    CHECK_MSG(res == 2 * MiB, "resident %llu after writing 2 MiB", (unsigned long long)res);
    REQUIRE_OK(tmem_heap_free(h, p));
    REQUIRE_OK(tmem_type_get_residency(t, &res));
    CHECK(res == 0); /* decommitted at once */
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_attach);
    RUN(test_residency);
    return tmem_test_finish();
}

/* Bad input to every heap function: a status back, never a crash, and the
 * heap unchanged (info, check, accounting) after each refusal. */
#include <string.h>
#include "harness.h"

#define MiB (1ull << 20)

static tmem_context *ctx;
static tmem_type *type;

static tmem_heap *make(tmem_heap_kind kind, uint32_t flags) {
    tmem_heap_desc hd = {0};
    hd.kind = kind;
    hd.type = type;
    hd.size = 1 * MiB;
    hd.flags = flags;
    tmem_heap *h = NULL;
    return tmem_heap_create(ctx, &hd, &h) == TMEM_OK ? h : NULL;
}

/* Snapshot of everything a refused call must leave alone. */
typedef struct snap {
    tmem_heap_info info;
    uint64_t in_use, committed;
} snap;

static snap take(const tmem_heap *h) {
    snap s;
    memset(&s, 0, sizeof s);
    tmem_type_stats ts;
    if (tmem_heap_get_info(h, &s.info) != TMEM_OK || tmem_type_get_stats(type, &ts) != TMEM_OK) memset(&s, 0xEE, sizeof s);
    s.in_use = ts.in_use.current;
    s.committed = ts.committed.current;
    return s;
}

#define UNCHANGED(h, before)                                        \
    do {                                                            \
        snap now_ = take(h);                                        \
        CHECK(memcmp(&now_, &(before), sizeof now_) == 0);          \
        CHECK_OK(tmem_heap_check(h));                               \
    } while (0)

static void test_create(void) {
    tmem_heap *h = (tmem_heap *)1;
    tmem_heap_desc hd = {0};
    hd.type = type;
    hd.size = 1 * MiB;
    CHECK_ST(tmem_heap_create(NULL, &hd, &h), TMEM_E_INVALID_ARG);
    CHECK(h == NULL);
    CHECK_ST(tmem_heap_create(ctx, NULL, &h), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_create(ctx, &hd, NULL), TMEM_E_INVALID_ARG);
    tmem_heap_desc bad = hd;
    bad.type = NULL;
    CHECK_ST(tmem_heap_create(ctx, &bad, &h), TMEM_E_INVALID_ARG);
    bad = hd;
    bad.size = 0;
    CHECK_ST(tmem_heap_create(ctx, &bad, &h), TMEM_E_INVALID_ARG);
    bad.size = UINT64_MAX;
    CHECK_ST(tmem_heap_create(ctx, &bad, &h), TMEM_E_INVALID_ARG);
    bad = hd;
    bad.kind = (tmem_heap_kind)7;
    CHECK_ST(tmem_heap_create(ctx, &bad, &h), TMEM_E_INVALID_ARG);
    bad = hd;
    bad.flags = TMEM_HEAP_RING; /* GENERAL cannot ring */
    CHECK_ST(tmem_heap_create(ctx, &bad, &h), TMEM_E_INVALID_ARG);
    bad.flags = 1u << 20;
    CHECK_ST(tmem_heap_create(ctx, &bad, &h), TMEM_E_INVALID_ARG);
    bad = hd;
    bad.role = (tmem_role)TMEM_ROLE_MAX;
    CHECK_ST(tmem_heap_create(ctx, &bad, &h), TMEM_E_INVALID_ARG);
    bad = hd;
    bad.size = 1ull << 40; /* larger than the pool's reserve */
    CHECK_ST(tmem_heap_create(ctx, &bad, &h), TMEM_E_FULL);
    /* a type of another context */
    tmem_context *other;
    tmem_context_desc cd = {0};
    cd.budget = 64 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &other));
    CHECK_ST(tmem_heap_create(other, &hd, &h), TMEM_E_INVALID_ARG);
    tmem_context_destroy(other);
    CHECK(h == NULL);
    tmem_heap_destroy(NULL); /* no-op */
}

static void test_alloc_free(void) {
    tmem_heap *h = make(TMEM_HEAP_GENERAL, 0), *g = make(TMEM_HEAP_GENERAL, 0);
    REQUIRE(h && g);
    void *keep, *other, *p = (void *)1;
    REQUIRE_OK(tmem_heap_alloc(h, 1000, 16, &keep));
    REQUIRE_OK(tmem_heap_alloc(g, 1000, 16, &other));
    snap s = take(h);
    CHECK_ST(tmem_heap_alloc(NULL, 16, 16, &p), TMEM_E_INVALID_ARG);
    CHECK(p == NULL);
    CHECK_ST(tmem_heap_alloc(h, 16, 16, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_alloc(h, 0, 16, &p), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_alloc(h, 16, 3, &p), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem_heap_alloc(h, 16, 1ull << 62, &p), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem_heap_alloc(h, UINT64_MAX, 16, &p), TMEM_E_OVERFLOW);
    CHECK_ST(tmem_heap_alloc(h, 2 * MiB, 16, &p), TMEM_E_FULL);
    CHECK_ST(tmem_heap_alloc(h, 1 * MiB, 16, &p), TMEM_E_FULL); /* 1000 B taken */
    CHECK(p == NULL);
    UNCHANGED(h, s);
    CHECK_ST(tmem_heap_free(h, other), TMEM_E_FOREIGN);       /* another heap's */
    CHECK_ST(tmem_heap_free(h, (char *)keep + 16), TMEM_E_FOREIGN); /* interior */
    CHECK_ST(tmem_heap_free(h, (char *)keep - 1), TMEM_E_FOREIGN);
    CHECK_OK(tmem_heap_free(h, NULL)); /* a no-op, as free(NULL) */
    CHECK_ST(tmem_heap_free(NULL, keep), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_free_offset(h, 1 * MiB), TMEM_E_FOREIGN);
    CHECK_ST(tmem_heap_free_offset(h, 48), TMEM_E_FOREIGN);
    UNCHANGED(h, s);
    /* alloc_ex */
    tmem_alloc_desc ad = {0};
    ad.size = 64;
    ad.role = -1;
    tmem_alloc_info ai;
    CHECK_ST(tmem_heap_alloc_ex(h, NULL, &ai), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_alloc_ex(h, &ad, NULL), TMEM_E_INVALID_ARG);
    ad.flags = 1u << 9;
    CHECK_ST(tmem_heap_alloc_ex(h, &ad, &ai), TMEM_E_INVALID_ARG);
    CHECK(ai.offset == TMEM_OFFSET_NONE && ai.ptr == NULL && ai.size == 0);
    ad.flags = 0;
    ad.role = 40;
    CHECK_ST(tmem_heap_alloc_ex(h, &ad, &ai), TMEM_E_INVALID_ARG);
    ad.role = -2;
    CHECK_ST(tmem_heap_alloc_ex(h, &ad, &ai), TMEM_E_INVALID_ARG);
    ad.role = -1;
    ad.alignment = 12;
    CHECK_ST(tmem_heap_alloc_ex(h, &ad, &ai), TMEM_E_ALIGNMENT);
    UNCHANGED(h, s);
    /* double free, then the heap still works */
    void *q;
    REQUIRE_OK(tmem_heap_alloc(h, 100, 16, &q));
    CHECK_OK(tmem_heap_free(h, q));
    s = take(h);
    CHECK_ST(tmem_heap_free(h, q), TMEM_E_DOUBLE_FREE);
    UNCHANGED(h, s);
    /* aliasing calls */
    CHECK_ST(tmem_heap_make_aliasable(h, 1 * MiB), TMEM_E_FOREIGN);
    CHECK_ST(tmem_heap_make_aliasable(h, 48), TMEM_E_FOREIGN);
    CHECK_ST(tmem_heap_make_aliasable(NULL, 0), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_check_alias(h, 0), TMEM_E_UNSUPPORTED); /* no DEBUG */
    UNCHANGED(h, s);
    /* purgeable / info / reset / check */
    CHECK_ST(tmem_heap_set_purgeable(NULL, TMEM_PURGEABLE_VOLATILE, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_set_purgeable(h, (tmem_purgeable)-1, NULL, NULL), TMEM_E_INVALID_ARG);
    tmem_heap_info scratch;
    CHECK_ST(tmem_heap_get_info(NULL, &scratch), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_get_info(h, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_reset(NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_check(NULL), TMEM_E_CORRUPT);
    CHECK(tmem_heap_ptr(NULL, 0) == NULL && tmem_heap_ptr(h, 1 * MiB) == NULL);
    UNCHANGED(h, s);
    tmem_heap_destroy(g);
    tmem_heap_destroy(h);
}

static void test_wrong_kind(void) {
    tmem_heap *pl = make(TMEM_HEAP_PLACEMENT, 0), *lin = make(TMEM_HEAP_LINEAR, 0);
    REQUIRE(pl && lin);
    void *p;
    snap s = take(pl);
    CHECK_ST(tmem_heap_alloc(pl, 16, 16, &p), TMEM_E_INVALID_ARG); /* placement needs offsets */
    tmem_alloc_desc ad = {0};
    ad.role = -1;
    ad.size = 100;
    ad.offset = UINT64_MAX - 10; /* offset + size overflows */
    tmem_alloc_info ai;
    CHECK_ST(tmem_heap_alloc_ex(pl, &ad, &ai), TMEM_E_INVALID_ARG);
    ad.offset = 1 * MiB;
    CHECK_ST(tmem_heap_alloc_ex(pl, &ad, &ai), TMEM_E_INVALID_ARG);
    ad.offset = 8;
    CHECK_ST(tmem_heap_alloc_ex(pl, &ad, &ai), TMEM_E_ALIGNMENT);
    ad.size = 2 * MiB;
    ad.offset = 0;
    CHECK_ST(tmem_heap_alloc_ex(pl, &ad, &ai), TMEM_E_INVALID_ARG);
    UNCHANGED(pl, s);
    ad.size = 100;
    REQUIRE_OK(tmem_heap_alloc_ex(pl, &ad, &ai));
    s = take(pl);
    CHECK_ST(tmem_heap_alloc_ex(pl, &ad, &ai), TMEM_E_OVERLAP);
    CHECK_ST(tmem_heap_free_offset(pl, 16), TMEM_E_FOREIGN);
    int local;
    CHECK_ST(tmem_heap_free(pl, &local), TMEM_E_FOREIGN);
    UNCHANGED(pl, s);
    /* linear: no ring flag means no wrap */
    REQUIRE_OK(tmem_heap_alloc(lin, 1 * MiB - 16, 16, &p));
    s = take(lin);
    CHECK_ST(tmem_heap_alloc(lin, 32, 16, &p), TMEM_E_FULL);
    CHECK_ST(tmem_heap_free_offset(lin, 16), TMEM_E_FOREIGN);
    UNCHANGED(lin, s);
    tmem_heap_destroy(pl);
    tmem_heap_destroy(lin);
}

int main(void) {
    tmem_context_desc cd = {0};
    cd.budget = 256 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    tmem_type_desc td = {0};
    td.name = "/memory/misuse";
    td.reserve = 32 * MiB;
    if (tmem_type_create(ctx, &td, &type) != TMEM_OK) return 1;
    RUN(test_create);
    RUN(test_alloc_free);
    RUN(test_wrong_kind);
    tmem_context_destroy(ctx);
    return tmem_test_finish();
}

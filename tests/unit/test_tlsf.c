/* TLSF over bare offsets: no context, no pointers. */
#include <string.h>
#include "harness.h"
#include "heap/tlsf.h"

static void test_basic(void) {
    tmem__tlsf t;
    REQUIRE_OK(tmem__tlsf_init(&t, 1 << 20, 16, NULL));
    uint64_t a, b, c, sz;
    CHECK_OK(tmem__tlsf_alloc(&t, 100, 0 + 1, 0, &a, &sz));
    CHECK(a == 0 && sz == 112);
    CHECK_OK(tmem__tlsf_alloc(&t, 16, 1, 0, &b, NULL));
    CHECK(b == 112);
    CHECK_OK(tmem__tlsf_alloc(&t, 4096, 4096, 0, &c, &sz));
    CHECK(c == 4096 && sz == 4096);
    CHECK_OK(tmem__tlsf_check(&t));
    CHECK(t.free_bytes == (1 << 20) - 112 - 16 - 4096);
    /* the front padding [128, 4096) became a free block */
    uint64_t d;
    CHECK_OK(tmem__tlsf_alloc(&t, 3968, 16, 0, &d, NULL));
    CHECK(d == 128);
    tmem__tlsf_freed f;
    CHECK_OK(tmem__tlsf_free(&t, b, &f));
    CHECK(f.size == 16 && f.span_offset == 112 && f.span_size == 16);
    CHECK_OK(tmem__tlsf_free(&t, d, &f)); /* merges with b's block */
    CHECK(f.span_offset == 112 && f.span_size == 16 + 3968);
    CHECK_OK(tmem__tlsf_free(&t, a, &f));
    CHECK(f.span_offset == 0 && f.span_size == 4096);
    CHECK_OK(tmem__tlsf_free(&t, c, &f)); /* everything merged back */
    CHECK(f.span_offset == 0 && f.span_size == 1 << 20);
    CHECK(t.block_count == 1 && t.free_bytes == 1 << 20);
    CHECK_OK(tmem__tlsf_check(&t));
    tmem__tlsf_destroy(&t);
}

static void test_errors(void) {
    tmem__tlsf t;
    CHECK_ST(tmem__tlsf_init(&t, 1 << 20, 24, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__tlsf_init(&t, 8, 16, NULL), TMEM_E_INVALID_ARG);
    REQUIRE_OK(tmem__tlsf_init(&t, 1 << 16, 16, NULL));
    uint64_t a = 0, b;
    CHECK_ST(tmem__tlsf_alloc(&t, 0, 16, 0, &a, NULL), TMEM_E_INVALID_ARG);
    CHECK(a == TMEM_OFFSET_NONE);
    CHECK_ST(tmem__tlsf_alloc(&t, 16, 48, 0, &a, NULL), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem__tlsf_alloc(&t, (1 << 16) + 1, 16, 0, &a, NULL), TMEM_E_FULL);
    CHECK_ST(tmem__tlsf_alloc(&t, UINT64_MAX, 16, 0, &a, NULL), TMEM_E_FULL);
    CHECK_ST(tmem__tlsf_alloc(&t, 16, 1ull << 63, 0, &a, NULL), TMEM_E_FULL);
    CHECK_OK(tmem__tlsf_alloc(&t, 1 << 16, 16, 0, &a, NULL)); /* exactly all */
    CHECK_ST(tmem__tlsf_alloc(&t, 16, 16, 0, &b, NULL), TMEM_E_FULL);
    CHECK(tmem__tlsf_largest_free(&t) == 0);
    CHECK_ST(tmem__tlsf_free(&t, 16, NULL), TMEM_E_FOREIGN); /* interior */
    CHECK_ST(tmem__tlsf_free(&t, 1 << 20, NULL), TMEM_E_FOREIGN);
    CHECK_OK(tmem__tlsf_free(&t, a, NULL));
    CHECK_ST(tmem__tlsf_free(&t, a, NULL), TMEM_E_DOUBLE_FREE);
    /* double free of a block whose start was coalesced away */
    uint64_t x, y;
    CHECK_OK(tmem__tlsf_alloc(&t, 64, 16, 0, &x, NULL));
    CHECK_OK(tmem__tlsf_alloc(&t, 64, 16, 0, &y, NULL));
    CHECK_OK(tmem__tlsf_free(&t, x, NULL));
    CHECK_OK(tmem__tlsf_free(&t, y, NULL));
    CHECK_ST(tmem__tlsf_free(&t, y, NULL), TMEM_E_DOUBLE_FREE);
    CHECK_OK(tmem__tlsf_check(&t));
    tmem__tlsf_destroy(&t);
}

/* Exact fits succeed even when the rounded O(1) search finds nothing. */
static void test_exact_fit_when_full(void) {
    tmem__tlsf t;
    REQUIRE_OK(tmem__tlsf_init(&t, 1000 * 16, 16, NULL));
    uint64_t a, b;
    CHECK_OK(tmem__tlsf_alloc(&t, 1000 * 16 - 33 * 16, 16, 0, &a, NULL));
    /* 33 granules free; a request of 33 rounds to bucket 34 in the search */
    CHECK_OK(tmem__tlsf_alloc(&t, 33 * 16, 16, 0, &b, NULL));
    CHECK(t.free_bytes == 0);
    CHECK_OK(tmem__tlsf_check(&t));
    tmem__tlsf_reset(&t);
    CHECK(t.free_bytes == t.size && t.block_count == 1);
    CHECK_OK(tmem__tlsf_check(&t));
    tmem__tlsf_destroy(&t);
}

/* Metadata allocation failure leaves the range unchanged. */
static int fail_after;
static void *failing_alloc(size_t n, void *u) { (void)u; return fail_after-- > 0 ? malloc(n) : NULL; }
static void plain_free(void *p, size_t n, void *u) { (void)n; (void)u; free(p); }

static void test_metadata_oom(void) {
    tmem_allocator al = {failing_alloc, plain_free, NULL};
    fail_after = 2;
    tmem__tlsf t;
    REQUIRE_OK(tmem__tlsf_init(&t, 1 << 24, 16, &al));
    uint64_t off[200];
    int n = 0;
    tmem_status st = TMEM_OK;
    while (n < 200 && (st = tmem__tlsf_alloc(&t, 16, 16, 0, &off[n], NULL)) == TMEM_OK) n++;
    CHECK_ST(st, TMEM_E_NO_MEMORY);
    CHECK(n > 10 && (uint64_t)n * 16 == t.size - t.free_bytes);
    CHECK_OK(tmem__tlsf_check(&t));
    for (int i = 0; i < n; i++) CHECK_OK(tmem__tlsf_free(&t, off[i], NULL));
    CHECK_OK(tmem__tlsf_check(&t));
    CHECK(t.block_count == 1);
    tmem__tlsf_destroy(&t);
}

static bool count_used(void *c, const tmem__tlsf_block *b) {
    if (!b->is_free) ++*(int *)c;
    return true;
}

static void test_walk_and_user(void) {
    tmem__tlsf t;
    REQUIRE_OK(tmem__tlsf_init(&t, 1 << 20, 256, NULL));
    uint64_t o[10];
    for (int i = 0; i < 10; i++) {
        CHECK_OK(tmem__tlsf_alloc(&t, 1000, 1, 0, &o[i], NULL));
        CHECK(o[i] % 256 == 0);
        tmem__tlsf_block *b = tmem__tlsf_find_used(&t, o[i]);
        REQUIRE(b);
        b->user = (uint64_t)i + 100;
    }
    CHECK(tmem__tlsf_find_used(&t, o[3] + 256) == NULL);
    tmem__tlsf_freed f;
    CHECK_OK(tmem__tlsf_free(&t, o[4], &f));
    CHECK(f.user == 104 && f.size == 1024);
    CHECK(tmem__tlsf_find_used(&t, o[4]) == NULL);
    int used = 0;
    tmem__tlsf_walk(&t, count_used, &used);
    CHECK(used == 9);
    CHECK(tmem__tlsf_largest_free(&t) == (1 << 20) - 10 * 1024);
    tmem__tlsf_destroy(&t);
}

/* Alignment applies to offset + bias (the host address of offset 0). */
static void test_bias(void) {
    tmem__tlsf t;
    REQUIRE_OK(tmem__tlsf_init(&t, 1 << 20, 16, NULL));
    t.bias = 0x7f0000001040ull; /* a granule multiple, not 4 KiB aligned */
    for (int i = 0; i < 50; i++) {
        uint64_t off, align = 1ull << (4 + i % 9);
        CHECK_OK(tmem__tlsf_alloc(&t, 100 + (uint64_t)i * 37, align, 0, &off, NULL));
        CHECK_MSG((off + t.bias) % align == 0, "offset %llu align %llu", (unsigned long long)off, (unsigned long long)align);
    }
    CHECK_OK(tmem__tlsf_check(&t));
    tmem__tlsf_destroy(&t);
}

int main(void) {
    RUN(test_basic);
    RUN(test_errors);
    RUN(test_exact_fit_when_full);
    RUN(test_metadata_oom);
    RUN(test_walk_and_user);
    RUN(test_bias);
    return tmem_test_finish();
}

/* Size-class pages of GENERAL heaps (src/heap/small.h) and allocation
 * handles: misuse is caught (double free, interior pointers, stale and
 * forged handles), a fixed-seed random workload against a model (no
 * overlap, contents kept, requested sizes counted, the heap's checker after
 * every burst; frees by pointer, offset and handle), and empty pages going
 * back to TLSF so a big allocation still fits once everything is freed. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "typedmem/typedmem.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static tmem_context *ctx;
static tmem_type *type;

static tmem_heap *make(uint64_t size, uint32_t flags) {
    tmem_heap_desc hd = {0};
    hd.type = type;
    hd.size = size;
    hd.flags = flags;
    hd.role = TMEM_ROLE_ACTIVATION;
    tmem_heap *h = NULL;
    return tmem_heap_create(ctx, &hd, &h) == TMEM_OK ? h : NULL;
}

static tmem_heap_info info_of(const tmem_heap *h) {
    tmem_heap_info i;
    if (tmem_heap_get_info(h, &i) != TMEM_OK) memset(&i, 0xEE, sizeof i);
    return i;
}

static void test_misuse(void) {
    tmem_heap *h = make(8 * MiB, 0);
    REQUIRE(h);
    char *a, *b;
    REQUIRE_OK(tmem_heap_alloc(h, 100, 0, (void **)&a));  /* class 112 B */
    REQUIRE_OK(tmem_heap_alloc(h, 3000, 0, (void **)&b)); /* a medium class */
    tmem_heap_info before = info_of(h);
    CHECK(before.used == 3100 && before.live_count == 2);
    /* interior pointers are foreign, and change nothing */
    CHECK_ST(tmem_heap_free(h, a + 16), TMEM_E_FOREIGN);
    CHECK_ST(tmem_heap_free(h, b + 64), TMEM_E_FOREIGN);
    CHECK(info_of(h).used == 3100);
    CHECK_OK(tmem_heap_check(h));
    CHECK_OK(tmem_heap_free(h, a));
    CHECK_ST(tmem_heap_free(h, a), TMEM_E_DOUBLE_FREE);
    uint64_t boff = (uint64_t)(b - (char *)tmem_heap_ptr(h, 0));
    CHECK_OK(tmem_heap_free_offset(h, boff));
    CHECK_ST(tmem_heap_free_offset(h, boff), TMEM_E_DOUBLE_FREE);
    CHECK(info_of(h).used == 0 && info_of(h).live_count == 0);
    CHECK_OK(tmem_heap_check(h));
    /* a block of the same class comes back at the freed offset (lowest free) */
    char *c;
    REQUIRE_OK(tmem_heap_alloc(h, 97, 0, (void **)&c));
    CHECK(c == a);
    CHECK_OK(tmem_heap_free(h, c));
    /* aliasable allocations and other roles take TLSF, and still free */
    tmem_alloc_desc ad = {0};
    ad.size = 64;
    ad.role = TMEM_ROLE_SCRATCH;
    tmem_alloc_info ai;
    REQUIRE_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    CHECK(ai.offset % 16 == 0 && info_of(h).used == 64);
    CHECK_OK(tmem_heap_make_aliasable(h, ai.offset));
    CHECK_OK(tmem_heap_free_offset(h, ai.offset));
    CHECK_OK(tmem_heap_check(h));
    tmem_heap_destroy(h);
}

/* Everything freed: empty pages go back when a search fails, so nearly the
 * whole heap is one block again. */
static void test_pages_return(void) {
    tmem_heap *h = make(16 * MiB, 0);
    REQUIRE(h);
    enum { N = 2000 };
    void *p[N];
    for (int i = 0; i < N; i++) REQUIRE_OK(tmem_heap_alloc(h, 16 + (uint64_t)(i % 64) * 100, 0, &p[i]));
    CHECK_OK(tmem_heap_check(h));
    for (int i = 0; i < N; i++) CHECK_OK(tmem_heap_free(h, p[i]));
    CHECK(info_of(h).used == 0);
    void *big;
    CHECK_OK(tmem_heap_alloc(h, 16 * MiB, 0, &big));
    CHECK_OK(tmem_heap_free(h, big));
    CHECK_OK(tmem_heap_check(h));
    /* reset forgets pages too */
    for (int i = 0; i < 100; i++) REQUIRE_OK(tmem_heap_alloc(h, 40, 0, &p[i]));
    CHECK_OK(tmem_heap_reset(h));
    CHECK(info_of(h).used == 0 && info_of(h).live_count == 0);
    CHECK_OK(tmem_heap_check(h));
    CHECK_OK(tmem_heap_alloc(h, 16 * MiB, 0, &big));
    tmem_heap_destroy(h);
}

static void test_handles(void) {
    tmem_heap *h = make(8 * MiB, 0);
    REQUIRE(h);
    tmem_alloc_handle small, big, again;
    uint64_t so, bo, ao;
    REQUIRE_OK(tmem_heap_alloc_handle(h, 40, 0, &small, &so));
    REQUIRE_OK(tmem_heap_alloc_handle(h, 100 * KiB, 4096, &big, &bo));
    CHECK(small.value && big.value && small.value != big.value && bo % 4096 == 0);
    CHECK(info_of(h).used == 40 + 100 * KiB && info_of(h).live_count == 2);
    memset(tmem_heap_ptr(h, so), 1, 40);
    memset(tmem_heap_ptr(h, bo), 2, 100 * KiB);
    CHECK_OK(tmem_heap_check(h));
    CHECK_OK(tmem_heap_free_handle(h, small));
    CHECK_ST(tmem_heap_free_handle(h, small), TMEM_E_DOUBLE_FREE);
    /* the same block again: the old handle stays stale */
    REQUIRE_OK(tmem_heap_alloc_handle(h, 33, 0, &again, &ao));
    CHECK(ao == so && again.value != small.value);
    CHECK_ST(tmem_heap_free_handle(h, small), TMEM_E_DOUBLE_FREE);
    CHECK(info_of(h).live_count == 2);
    /* freed by pointer: the handle goes stale too */
    CHECK_OK(tmem_heap_free(h, tmem_heap_ptr(h, ao)));
    CHECK_ST(tmem_heap_free_handle(h, again), TMEM_E_DOUBLE_FREE);
    /* a TLSF block: freed by offset, reused by a same-sized block */
    CHECK_OK(tmem_heap_free_offset(h, bo));
    CHECK_ST(tmem_heap_free_handle(h, big), TMEM_E_DOUBLE_FREE);
    tmem_alloc_handle big2;
    REQUIRE_OK(tmem_heap_alloc_handle(h, 100 * KiB, 4096, &big2, &ao));
    CHECK_ST(tmem_heap_free_handle(h, big), TMEM_E_DOUBLE_FREE);
    CHECK(info_of(h).live_count == 1);
    /* forged and empty handles */
    tmem_alloc_handle none = {0}, forged = {(1ull << 63) | 0xFFFFull << 16}, forged2 = {0x1234ull << 32 | 0xFFFFFFF};
    CHECK_OK(tmem_heap_free_handle(h, none)); /* no handle: a no-op */
    CHECK_ST(tmem_heap_free_handle(h, forged), TMEM_E_FOREIGN);
    CHECK_ST(tmem_heap_free_handle(h, forged2), TMEM_E_FOREIGN);
    CHECK_ST(tmem_heap_free_handle(NULL, big2), TMEM_E_INVALID_ARG);
    CHECK(info_of(h).live_count == 1);
    CHECK_OK(tmem_heap_free_handle(h, big2));
    /* reset: every handle goes stale */
    REQUIRE_OK(tmem_heap_alloc_handle(h, 24, 0, &small, NULL));
    REQUIRE_OK(tmem_heap_alloc_handle(h, 20000, 0, &big, NULL));
    CHECK_OK(tmem_heap_reset(h));
    REQUIRE_OK(tmem_heap_alloc_handle(h, 24, 0, &again, &ao));
    REQUIRE_OK(tmem_heap_alloc_handle(h, 20000, 0, &big2, &ao));
    CHECK_ST(tmem_heap_free_handle(h, small), TMEM_E_DOUBLE_FREE);
    CHECK_ST(tmem_heap_free_handle(h, big), TMEM_E_DOUBLE_FREE);
    CHECK_OK(tmem_heap_free_handle(h, again));
    CHECK_OK(tmem_heap_free_handle(h, big2));
    CHECK(info_of(h).used == 0);
    CHECK_OK(tmem_heap_check(h));
    /* other kinds: unsupported, nothing allocated */
    tmem_heap_desc hd = {0};
    hd.type = type;
    hd.size = 1 * MiB;
    hd.kind = TMEM_HEAP_LINEAR;
    tmem_heap *lin;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &lin));
    CHECK_ST(tmem_heap_alloc_handle(lin, 64, 0, &small, &so), TMEM_E_UNSUPPORTED);
    CHECK(small.value == 0 && so == TMEM_OFFSET_NONE && info_of(lin).live_count == 0);
    CHECK_ST(tmem_heap_free_handle(lin, big2), TMEM_E_UNSUPPORTED);
    tmem_heap_destroy(lin);
    tmem_heap_destroy(h);
}

typedef struct live {
    unsigned char *p;
    uint64_t size;
    tmem_alloc_handle handle; /* {0} when allocated without one */
    unsigned char fill;
} live;

static int by_ptr(const void *a, const void *b) {
    const live *x = a, *y = b;
    return x->p < y->p ? -1 : x->p > y->p;
}

/* Random sizes 1 B .. 20 KiB (both sides of the page limit), alignments 0..256,
 * frees by pointer and by offset, against a model. */
static void test_random(void) {
    tmem_heap *h = make(16 * MiB, 0);
    REQUIRE(h);
    enum { SLOTS = 512, STEPS = 40000 };
    live *slot = calloc(SLOTS, sizeof *slot), *sorted = calloc(SLOTS, sizeof *sorted);
    REQUIRE(slot && sorted);
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(20261201));
    uint64_t used = 0, count = 0;
    int bad_fill = 0;
    for (int step = 0; step < STEPS; step++) {
        live *l = &slot[tmem_rng_next(&r) % SLOTS];
        if (l->p) {
            for (uint64_t i = 0; i < l->size; i++) bad_fill += l->p[i] != l->fill;
            uint64_t how = tmem_rng_next(&r) % 3;
            if (l->handle.value) {
                CHECK_OK(tmem_heap_free_handle(h, l->handle));
                CHECK_ST(tmem_heap_free_handle(h, l->handle), TMEM_E_DOUBLE_FREE);
            } else if (how) {
                CHECK_OK(tmem_heap_free(h, l->p));
            } else {
                CHECK_OK(tmem_heap_free_offset(h, (uint64_t)(l->p - (unsigned char *)tmem_heap_ptr(h, 0))));
            }
            used -= l->size;
            count--;
            l->p = NULL;
        } else {
            uint64_t u = tmem_rng_next(&r);
            uint64_t size = u % 8 ? 1 + (u >> 8) % 600 : 1 + (u >> 8) % (20 * KiB);
            uint64_t align = (u >> 40) % 4 ? 0 : 1ull << ((u >> 44) % 9);
            void *p = NULL;
            l->handle.value = 0;
            tmem_status st;
            if ((u >> 36) & 1) {
                st = tmem_heap_alloc(h, size, align, &p);
            } else {
                uint64_t off = 0;
                st = tmem_heap_alloc_handle(h, size, align, &l->handle, &off);
                if (st == TMEM_OK) p = tmem_heap_ptr(h, off);
            }
            CHECK_ST(st, TMEM_OK);
            if (st != TMEM_OK) continue;
            CHECK(!align || (uintptr_t)p % align == 0);
            l->p = p;
            l->size = size;
            l->fill = (unsigned char)(u >> 56);
            memset(l->p, l->fill, size);
            used += size;
            count++;
        }
        if (step % 2000 == 0) {
            tmem_heap_info i = info_of(h);
            CHECK(i.used == used && i.live_count == count);
            CHECK_OK(tmem_heap_check(h));
            int n = 0;
            for (int k = 0; k < SLOTS; k++)
                if (slot[k].p) sorted[n++] = slot[k];
            qsort(sorted, (size_t)n, sizeof *sorted, by_ptr);
            for (int k = 1; k < n; k++) CHECK(sorted[k - 1].p + sorted[k - 1].size <= sorted[k].p);
        }
    }
    CHECK_MSG(bad_fill == 0, "%d bytes changed under live allocations", bad_fill);
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(type, &ts));
    CHECK(ts.in_use.current == used);
    for (int k = 0; k < SLOTS; k++)
        if (slot[k].p) CHECK_OK(slot[k].handle.value ? tmem_heap_free_handle(h, slot[k].handle) : tmem_heap_free(h, slot[k].p));
    CHECK(info_of(h).used == 0);
    CHECK_OK(tmem_heap_check(h));
    CHECK_OK(tmem_context_check(ctx));
    free(slot);
    free(sorted);
    tmem_heap_destroy(h);
}

int main(void) {
    tmem_context_desc cd = {0};
    cd.budget = 256 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES | TMEM_CONTEXT_DEBUG;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    tmem_type_desc td = {0};
    td.name = "/memory/small";
    td.reserve = 128 * MiB;
    if (tmem_type_create(ctx, &td, &type) != TMEM_OK) return 1;
    RUN(test_misuse);
    RUN(test_pages_return);
    RUN(test_handles);
    RUN(test_random);
    tmem_context_destroy(ctx);
    return tmem_test_finish();
}

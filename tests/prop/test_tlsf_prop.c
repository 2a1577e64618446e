/* Property test: seeded random allocate/free with random alignments. After
 * every step: tmem__tlsf_check(), no two live blocks overlap, alignment
 * holds, and free bytes + used bytes = range. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "heap/tlsf.h"

typedef struct live { uint64_t off, size; } live;

static int cmp_live(const void *a, const void *b) {
    const live *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static bool disjoint(live *l, int n, uint64_t range) {
    live *s = malloc((size_t)(n ? n : 1) * sizeof *s);
    memcpy(s, l, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_live);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        if (s[i].off + s[i].size > range) ok = false;
        if (i && s[i - 1].off + s[i - 1].size > s[i].off) ok = false;
    }
    free(s);
    return ok;
}

static void run(uint64_t seed, uint64_t range, uint64_t granule, int steps) {
    tmem_rng r;
    tmem_rng_init(&r, seed);
    tmem__tlsf t;
    REQUIRE_OK(tmem__tlsf_init(&t, range, granule, NULL));
    enum { MAXLIVE = 512 };
    live l[MAXLIVE];
    int n = 0;
    uint64_t used = 0;
    for (int step = 0; step < steps; step++) {
        bool do_alloc = n == 0 || (n < MAXLIVE && tmem_rng_range(&r, 0, 99) < 55);
        if (do_alloc) {
            /* log-uniform size: many small, a few large */
            uint64_t size = tmem_rng_range(&r, 1, 1ull << tmem_rng_range(&r, 0, 16));
            uint64_t align = 1ull << tmem_rng_range(&r, 0, tmem_rng_range(&r, 0, 3) ? 5 : 14);
            uint64_t off, bs;
            tmem_status st = tmem__tlsf_alloc(&t, size, align, 0, &off, &bs);
            if (st == TMEM_OK) {
                CHECK_MSG(off % align == 0 && off % granule == 0, "step %d: offset %llu align %llu", step,
                          (unsigned long long)off, (unsigned long long)align);
                CHECK(bs >= size && bs % granule == 0);
                l[n].off = off;
                l[n].size = bs;
                n++;
                used += bs;
            } else {
                CHECK_MSG(st == TMEM_E_FULL, "step %d: %s", step, tmem_status_name(st));
            }
        } else {
            int k = (int)tmem_rng_range(&r, 0, (uint64_t)n - 1);
            tmem__tlsf_freed f;
            CHECK_OK(tmem__tlsf_free(&t, l[k].off, &f));
            CHECK(f.size == l[k].size && f.span_offset <= l[k].off &&
                  f.span_offset + f.span_size >= l[k].off + l[k].size);
            used -= l[k].size;
            if (tmem_rng_range(&r, 0, 9) == 0)
                CHECK_ST(tmem__tlsf_free(&t, l[k].off, NULL), tmem__tlsf_find_used(&t, l[k].off) ? TMEM_OK : TMEM_E_DOUBLE_FREE);
            l[k] = l[--n];
        }
        tmem_status cs = tmem__tlsf_check(&t);
        CHECK_MSG(cs == TMEM_OK, "step %d: check failed", step);
        CHECK_MSG(t.free_bytes + used == t.size, "step %d: free %llu + used %llu != %llu", step,
                  (unsigned long long)t.free_bytes, (unsigned long long)used, (unsigned long long)t.size);
        CHECK_MSG(disjoint(l, n, t.size), "step %d: overlap", step);
        if (cs != TMEM_OK || tmem_test_failures) break;
    }
    while (n) {
        CHECK_OK(tmem__tlsf_free(&t, l[n - 1].off, NULL));
        n--;
    }
    CHECK(t.block_count == 1 && t.free_bytes == t.size);
    CHECK_OK(tmem__tlsf_check(&t));
    tmem__tlsf_destroy(&t);
}

static void test_small_range(void) { run(tmem_test_seed(1), 1 << 18, 16, 6000); }
static void test_large_range(void) { run(tmem_test_seed(2) ^ 0x5555, 1ull << 26, 16, 6000); }
static void test_big_granule(void) { run(tmem_test_seed(3) ^ 0xAAAA, 1ull << 24, 256, 4000); }

int main(void) {
    RUN(test_small_range);
    RUN(test_large_range);
    RUN(test_big_granule);
    return tmem_test_finish();
}

/* Interval index: checked against a brute-force list. */
#include "harness.h"
#include "heap/interval.h"

typedef struct ref { uint64_t s, e; uint32_t flags, idx; bool live; } ref;

static void test_basic(void) {
    tmem__ivx x;
    tmem__ivx_init(&x, NULL);
    REQUIRE_OK(tmem__ivx_reserve(&x));
    uint32_t a = tmem__ivx_insert(&x, 0, 100, 0, 1);
    REQUIRE_OK(tmem__ivx_reserve(&x));
    uint32_t b = tmem__ivx_insert(&x, 200, 100, TMEM__IVX_ALIASABLE, 2);
    CHECK(tmem__ivx_overlaps_solid(&x, 50, 60));
    CHECK(!tmem__ivx_overlaps_solid(&x, 100, 200));
    CHECK(!tmem__ivx_overlaps_solid(&x, 250, 260)); /* aliasable only */
    CHECK(tmem__ivx_mark_overlaps(&x, 250, 260) == 1);
    CHECK(tmem__ivx_at(&x, b)->flags & TMEM__IVX_OVERLAPPED);
    CHECK(tmem__ivx_mark_overlaps(&x, 0, 200) == 0);
    tmem__ivx_set_flags(&x, a, TMEM__IVX_ALIASABLE);
    CHECK(!tmem__ivx_overlaps_solid(&x, 50, 60));
    CHECK_OK(tmem__ivx_check(&x));
    /* same start: find returns the newest */
    REQUIRE_OK(tmem__ivx_reserve(&x));
    uint32_t c = tmem__ivx_insert(&x, 0, 50, 0, 3);
    CHECK(tmem__ivx_find(&x, 0) == c);
    tmem__ivx_remove(&x, c);
    CHECK(tmem__ivx_find(&x, 0) == a);
    CHECK(tmem__ivx_find(&x, 1) == TMEM__IVX_NIL);
    CHECK_OK(tmem__ivx_check(&x));
    tmem__ivx_reset(&x);
    CHECK(x.count == 0 && tmem__ivx_find(&x, 0) == TMEM__IVX_NIL);
    tmem__ivx_destroy(&x);
}

static void test_random_vs_bruteforce(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(11));
    tmem__ivx x;
    tmem__ivx_init(&x, NULL);
    enum { N = 600 };
    ref refs[N];
    int n = 0;
    for (int step = 0; step < 6000; step++) {
        int op = (int)tmem_rng_range(&r, 0, 9);
        if (op < 5 && n < N) {
            uint64_t s = tmem_rng_range(&r, 0, 10000), len = tmem_rng_range(&r, 1, 300);
            uint32_t fl = tmem_rng_range(&r, 0, 2) == 0 ? TMEM__IVX_ALIASABLE : 0;
            REQUIRE_OK(tmem__ivx_reserve(&x));
            refs[n] = (ref){s, s + len, fl, tmem__ivx_insert(&x, s, len, fl, (uint64_t)n), true};
            n++;
        } else if (op < 7 && n) {
            int k = (int)tmem_rng_range(&r, 0, (uint64_t)n - 1);
            tmem__ivx_remove(&x, refs[k].idx);
            refs[k] = refs[--n];
        } else if (op == 7 && n) {
            int k = (int)tmem_rng_range(&r, 0, (uint64_t)n - 1);
            refs[k].flags ^= TMEM__IVX_ALIASABLE;
            tmem__ivx_set_flags(&x, refs[k].idx, refs[k].flags);
        } else {
            uint64_t s = tmem_rng_range(&r, 0, 10000), e = s + tmem_rng_range(&r, 1, 500);
            bool want = false, any = false;
            uint32_t marked = 0;
            for (int i = 0; i < n; i++) {
                bool ov = refs[i].s < e && refs[i].e > s;
                if (ov) any = true;
                if (ov && !(refs[i].flags & TMEM__IVX_ALIASABLE)) want = true;
                if (ov && (refs[i].flags & TMEM__IVX_ALIASABLE)) marked++;
            }
            CHECK_MSG(tmem__ivx_overlaps_solid(&x, s, e) == want, "step %d", step);
            CHECK_MSG(tmem__ivx_overlaps_any(&x, s, e) == any, "step %d", step);
            CHECK_MSG(tmem__ivx_mark_overlaps(&x, s, e) == marked, "step %d", step);
            uint64_t q = n ? refs[tmem_rng_range(&r, 0, (uint64_t)n - 1)].s : 0;
            uint32_t f = tmem__ivx_find(&x, q);
            if (n) CHECK(f != TMEM__IVX_NIL && tmem__ivx_at(&x, f)->start == q);
        }
        CHECK_MSG(tmem__ivx_check(&x) == TMEM_OK, "step %d", step);
        CHECK(x.count == (uint32_t)n);
        if (tmem_test_failures) break;
    }
    tmem__ivx_destroy(&x);
}

int main(void) {
    RUN(test_basic);
    RUN(test_random_vs_bruteforce);
    return tmem_test_finish();
}

/* Linear and ring allocation over bare offsets. */
#include "harness.h"
#include "heap/linear.h"

static void test_bump_and_reset(void) {
    tmem__linear l;
    REQUIRE_OK(tmem__linear_init(&l, 4096, 16, false, NULL));
    uint64_t a, b, c, sz;
    CHECK_OK(tmem__linear_alloc(&l, 100, 1, 0, &a, &sz));
    CHECK(a == 0 && sz == 112);
    CHECK_OK(tmem__linear_alloc(&l, 10, 256, 0, &b, NULL));
    CHECK(b == 256);
    CHECK_OK(tmem__linear_alloc(&l, 3000, 16, 0, &c, NULL));
    CHECK(c == 272);
    CHECK(tmem__linear_largest_free(&l) == 4096 - 3280);
    CHECK_ST(tmem__linear_alloc(&l, 1000, 16, 0, &c, NULL), TMEM_E_FULL); /* no wrap */
    CHECK(c == TMEM_OFFSET_NONE);
    CHECK_OK(tmem__linear_check(&l));
    /* free the newest: the head rolls back */
    tmem__linear_rec r;
    CHECK_OK(tmem__linear_free(&l, 272, &r));
    CHECK(r.size == 3008 && l.vhead == 272);
    CHECK_ST(tmem__linear_free(&l, 272, NULL), TMEM_E_DOUBLE_FREE);
    /* free in the middle: remembered, space not reused until the ends reach it */
    CHECK_OK(tmem__linear_alloc(&l, 16, 16, 0, &c, NULL));
    CHECK(c == 272);
    CHECK_OK(tmem__linear_free(&l, b, NULL));
    CHECK(tmem__linear_find(&l, b) == NULL && tmem__linear_find(&l, a) != NULL);
    CHECK_ST(tmem__linear_free(&l, b, NULL), TMEM_E_DOUBLE_FREE);
    CHECK_ST(tmem__linear_free(&l, 16, NULL), TMEM_E_FOREIGN);
    CHECK_ST(tmem__linear_free(&l, 5000, NULL), TMEM_E_FOREIGN);
    CHECK(l.live_count == 2 && l.live_bytes == 112 + 16);
    CHECK_OK(tmem__linear_check(&l));
    CHECK_OK(tmem__linear_free(&l, c, NULL)); /* pops c and the freed b */
    CHECK(l.count == 1 && l.vhead == 112);
    CHECK_OK(tmem__linear_free(&l, a, NULL));
    CHECK(l.count == 0 && l.vhead == 0);
    CHECK_OK(tmem__linear_alloc(&l, 4096, 16, 0, &a, NULL)); /* all of it */
    tmem__linear_reset(&l);
    CHECK(l.count == 0 && tmem__linear_largest_free(&l) == 4096);
    CHECK_OK(tmem__linear_check(&l));
    CHECK_ST(tmem__linear_alloc(&l, 0, 16, 0, &a, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__linear_alloc(&l, 16, 3, 0, &a, NULL), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem__linear_alloc(&l, UINT64_MAX, 16, 0, &a, NULL), TMEM_E_FULL);
    tmem__linear_destroy(&l);
}

/* Ring: FIFO frees let the head wrap forever; the live span never exceeds
 * the range and offsets never overlap. */
static void test_ring_fifo(void) {
    tmem__linear l;
    REQUIRE_OK(tmem__linear_init(&l, 1000 * 16, 16, true, NULL));
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(7));
    uint64_t q_off[256], q_size[256];
    int qh = 0, qn = 0, wraps = 0;
    uint64_t last = 0;
    for (int step = 0; step < 20000; step++) {
        uint64_t size = tmem_rng_range(&r, 1, 2000);
        uint64_t off, bs;
        tmem_status st = tmem__linear_alloc(&l, size, 16, 0, &off, &bs);
        if (st == TMEM_OK) {
            REQUIRE(qn < 256);
            if (off < last) wraps++;
            last = off;
            /* no overlap with any live allocation */
            for (int i = 0; i < qn; i++) {
                int k = (qh + i) % 256;
                CHECK(off + bs <= q_off[k] || q_off[k] + q_size[k] <= off);
            }
            q_off[(qh + qn) % 256] = off;
            q_size[(qh + qn) % 256] = bs;
            qn++;
        } else {
            CHECK_ST(st, TMEM_E_FULL);
            REQUIRE(qn > 0);
        }
        /* free the oldest when full or at random */
        while (qn && (st != TMEM_OK || tmem_rng_range(&r, 0, 2) == 0)) {
            CHECK_OK(tmem__linear_free(&l, q_off[qh], NULL));
            qh = (qh + 1) % 256;
            qn--;
            st = TMEM_OK;
        }
        CHECK_OK(tmem__linear_check(&l));
        if (tmem_test_failures) break;
    }
    CHECK_MSG(wraps > 100, "wraps %d", wraps);
    tmem__linear_destroy(&l);
}

/* Ring with frees out of order: space returns once the oldest goes. */
static void test_ring_out_of_order(void) {
    tmem__linear l;
    REQUIRE_OK(tmem__linear_init(&l, 1024, 16, true, NULL));
    uint64_t o[4];
    for (int i = 0; i < 4; i++) CHECK_OK(tmem__linear_alloc(&l, 256, 16, 0, &o[i], NULL));
    CHECK(o[3] == 768);
    uint64_t x;
    CHECK_ST(tmem__linear_alloc(&l, 16, 16, 0, &x, NULL), TMEM_E_FULL);
    CHECK_OK(tmem__linear_free(&l, o[1], NULL));
    CHECK_ST(tmem__linear_alloc(&l, 16, 16, 0, &x, NULL), TMEM_E_FULL); /* o[0] still holds the tail */
    CHECK_OK(tmem__linear_free(&l, o[0], NULL)); /* tail jumps past o[1] */
    CHECK(tmem__linear_largest_free(&l) == 512);
    CHECK_OK(tmem__linear_alloc(&l, 512, 16, 0, &x, NULL));
    CHECK(x == 0);
    /* find across the wrap: o[3] (lap 0) and x (lap 1) */
    CHECK(tmem__linear_find(&l, 768) && tmem__linear_find(&l, 0));
    CHECK_OK(tmem__linear_free(&l, 768, NULL));
    CHECK_OK(tmem__linear_free(&l, o[2], NULL));
    CHECK(l.count == 1);
    CHECK_OK(tmem__linear_check(&l));
    tmem__linear_destroy(&l);
}

/* Alignment applies to offset + bias, also at the wrap. */
static void test_bias(void) {
    tmem__linear l;
    REQUIRE_OK(tmem__linear_init(&l, 64 * 1024, 16, true, NULL));
    l.bias = 0x7f0000000030ull;
    uint64_t q[64];
    int head = 0, n = 0;
    for (int i = 0; i < 400; i++) {
        uint64_t off, align = 1ull << (4 + i % 8);
        tmem_status st = tmem__linear_alloc(&l, 1000 + (uint64_t)i * 13 % 3000, align, 0, &off, NULL);
        if (st == TMEM_E_FULL) {
            CHECK_OK(tmem__linear_free(&l, q[head], NULL));
            head = (head + 1) % 64;
            n--;
            continue;
        }
        REQUIRE_OK(st);
        CHECK((off + l.bias) % align == 0);
        REQUIRE(n < 64);
        q[(head + n++) % 64] = off;
    }
    CHECK_OK(tmem__linear_check(&l));
    tmem__linear_destroy(&l);
}

int main(void) {
    RUN(test_bump_and_reset);
    RUN(test_ring_fifo);
    RUN(test_ring_out_of_order);
    RUN(test_bias);
    return tmem_test_finish();
}

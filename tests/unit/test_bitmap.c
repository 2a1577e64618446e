/* The one bit walk (src/base/bitmap.h) against a plain bool array: random
 * ranges (fixed seed) across word boundaries, set, clear, count and find. */
#include "harness.h"
#include "base/bitmap.h"
#include <string.h>

enum { NBITS = 700 };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_against_bool_array(void) {
    uint64_t words[(NBITS + 63) / 64];
    bool ref[NBITS];
    memset(words, 0, sizeof words);
    memset(ref, 0, sizeof ref);
    for (int step = 0; step < 20000; step++) {
        uint64_t a = next_rand() % NBITS, b = next_rand() % (NBITS + 1);
        if (a > b) {
            uint64_t t = a;
            a = b;
            b = t;
        }
        bool set = next_rand() & 1;
        uint64_t want_changed = 0;
        for (uint64_t i = a; i < b; i++) {
            want_changed += ref[i] != set;
            ref[i] = set;
        }
        CHECK(tmem__bits_assign(words, a, b, set) == want_changed);
        uint64_t c = next_rand() % NBITS, d = c + next_rand() % (NBITS - c + 1);
        uint64_t n = 0, first1 = d, first0 = d;
        for (uint64_t i = c; i < d; i++) {
            n += ref[i];
            if (ref[i] && first1 == d) first1 = i;
            if (!ref[i] && first0 == d) first0 = i;
        }
        CHECK(tmem__bits_count(words, c, d) == n);
        CHECK(tmem__bits_find(words, c, d, true) == first1);
        CHECK(tmem__bits_find(words, c, d, false) == first0);
        CHECK(tmem__bits_test(words, c) == ref[c]);
        if (tmem_test_failures > 0) break;
    }
}

static void test_masks(void) {
    CHECK(tmem__bits_mask(0, 64) == ~0ull);
    CHECK(tmem__bits_mask(0, 1) == 1);
    CHECK(tmem__bits_mask(63, 64) == 1ull << 63);
    CHECK(tmem__bits_mask(4, 8) == 0xf0);
}

int main(void) {
    RUN(test_masks);
    RUN(test_against_bool_array);
    return tmem_test_finish();
}

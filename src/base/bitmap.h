/*
 * The one bit walk over a flat bitmap (an array of 64-bit words, bit i of
 * the map is bit i % 64 of word i / 64). Used by the pool's commit bitmap
 * (core/pool.c, per leaf of its two-level map) and a heap's commit-chunk
 * bitmap (heap/commit.c). Inline: it sits on commit paths. Ranges are
 * half-open [a, b) in bits; callers keep them inside the array.
 */
#ifndef TMEM_BASE_BITMAP_H
#define TMEM_BASE_BITMAP_H

#include "base/base.h"

/* Mask of bits [lo, hi) of one word, 0 <= lo < hi <= 64. */
static inline uint64_t tmem__bits_mask(unsigned lo, unsigned hi) {
    uint64_t m = ~0ull << lo;
    return hi < 64 ? m & ~(~0ull << hi) : m;
}

static inline bool tmem__bits_test(const uint64_t *w, uint64_t i) {
    return (w[i >> 6] >> (i & 63)) & 1;
}

/* First bit in [from, end) whose value equals `want`, or end. */
static inline uint64_t tmem__bits_find(const uint64_t *w, uint64_t from, uint64_t end, bool want) {
    uint64_t i = from;
    while (i < end) {
        uint64_t bits = want ? w[i >> 6] : ~w[i >> 6];
        bits &= ~0ull << (i & 63);
        if (bits) {
            uint64_t r = (i & ~63ull) + (uint64_t)__builtin_ctzll(bits);
            return r < end ? r : end;
        }
        i = (i & ~63ull) + 64;
    }
    return end;
}

/* Set bits in [a, b). */
static inline uint64_t tmem__bits_count(const uint64_t *w, uint64_t a, uint64_t b) {
    uint64_t n = 0;
    while (a < b) {
        uint64_t lim = (a & ~63ull) + 64, hi = lim < b ? lim : b;
        uint64_t mask = tmem__bits_mask((unsigned)(a & 63), (unsigned)(hi - (a & ~63ull)));
        n += (uint64_t)__builtin_popcountll(w[a >> 6] & mask);
        a = hi;
    }
    return n;
}

/* Set (or clear) bits [a, b); returns how many changed. */
static inline uint64_t tmem__bits_assign(uint64_t *w, uint64_t a, uint64_t b, bool set) {
    uint64_t changed = 0;
    while (a < b) {
        uint64_t lim = (a & ~63ull) + 64, hi = lim < b ? lim : b;
        uint64_t mask = tmem__bits_mask((unsigned)(a & 63), (unsigned)(hi - (a & ~63ull)));
        uint64_t old = w[a >> 6];
        w[a >> 6] = set ? old | mask : old & ~mask;
        changed += (uint64_t)__builtin_popcountll(old ^ w[a >> 6]);
        a = hi;
    }
    return changed;
}

#endif /* TMEM_BASE_BITMAP_H */

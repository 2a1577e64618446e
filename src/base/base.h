/*
 * The base layer: what every other layer may use and nothing it needs from
 * above. Status codes and the one place errors start, asserts, overflow
 * arithmetic and alignment. No allocation, no OS call, no context.
 *
 * Layers (bottom-up; each includes and calls only those below it, enforced by
 * tests/regress/layering.cmake): base < os < backend < core < heap < plan <
 * bind < io < surface < kv < model < trace < stats < device. See README.
 */
#ifndef TMEM_BASE_BASE_H
#define TMEM_BASE_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "typedmem/status.h"

/* ---- assertions (status.c) ----
 * TMEM_DEBUG 0: none; 1: tmem__assert; 2: + tmem__assert_internal;
 * 3: + tmem__assert_expensive (whole-structure walks). Asserts are for
 * internal invariants only, never for caller input. */
#ifndef TMEM_DEBUG
#define TMEM_DEBUG 0
#endif
void tmem__assert_fail(const char *expr, const char *file, int line);
#if TMEM_DEBUG >= 1
#define tmem__assert(e) ((e) ? (void)0 : tmem__assert_fail(#e, __FILE__, __LINE__))
#else
#define tmem__assert(e) ((void)0)
#endif
#if TMEM_DEBUG >= 2
#define tmem__assert_internal(e) tmem__assert(e)
#else
#define tmem__assert_internal(e) ((void)0)
#endif
#if TMEM_DEBUG >= 3
#define tmem__assert_expensive(e) tmem__assert(e)
#else
#define tmem__assert_expensive(e) ((void)0)
#endif

/* Defensive checks with SQLite's meaning (ALWAYS/NEVER): a condition we
 * believe is always true (TMEM_ALWAYS) or never true (TMEM_NEVER). Debug and
 * testing builds (TMEM_DEBUG >= 1) assert the belief, so a test that reaches
 * the defensive branch fails loudly; release builds evaluate to the
 * expression, so the branch still protects a user from our bug. */
#if TMEM_DEBUG >= 1
#define TMEM_ALWAYS(x) ((x) ? 1 : (tmem__assert_fail("ALWAYS(" #x ")", __FILE__, __LINE__), 0))
#define TMEM_NEVER(x) ((x) ? (tmem__assert_fail("NEVER(" #x ")", __FILE__, __LINE__), 1) : 0)
#else
#define TMEM_ALWAYS(x) (x)
#define TMEM_NEVER(x) (x)
#endif

/* Every internal error starts here: one place to break on (status.c). */
tmem_status tmem__err(tmem_status code);

/* Ignore a status where failure is impossible or harmless (gcc does not let
 * a (void) cast silence warn_unused_result). */
#define TMEM__IGNORE(expr) \
    do { \
        tmem_status ign_ = (expr); \
        (void)ign_; \
    } while (0)

/* ---- overflow-checked arithmetic: true on overflow ---- */
static inline bool tmem__add_overflow(uint64_t a, uint64_t b, uint64_t *r) {
    return __builtin_add_overflow(a, b, r);
}
static inline bool tmem__mul_overflow(uint64_t a, uint64_t b, uint64_t *r) {
    return __builtin_mul_overflow(a, b, r);
}
/* a + b, or UINT64_MAX when it overflows. */
static inline uint64_t tmem__add_sat(uint64_t a, uint64_t b) {
    uint64_t r;
    return tmem__add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* ---- alignment ---- */
static inline bool tmem__is_pow2(uint64_t x) { return x && !(x & (x - 1)); }
/* Round up to a power-of-two alignment; false on overflow. */
static inline bool tmem__align_up(uint64_t x, uint64_t align, uint64_t *r) {
    uint64_t t;
    if (tmem__add_overflow(x, align - 1, &t)) return false;
    *r = t & ~(align - 1);
    return true;
}
/* Round down to a power-of-two alignment (never overflows). */
static inline uint64_t tmem__align_down(uint64_t x, uint64_t align) { return x & ~(align - 1); }

#endif /* TMEM_BASE_BASE_H */

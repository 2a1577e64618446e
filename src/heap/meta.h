/*
 * Small helpers shared by the heap metadata structures (tlsf.c, linear.c,
 * interval.c): allocation through a tmem_allocator (NULL fields = libc, so
 * the structures are unit-testable without a context), and the "recently
 * freed" ring that tells a double free from a foreign offset once the freed
 * block's start has been coalesced away.
 */
#ifndef TMEM_HEAP_META_H
#define TMEM_HEAP_META_H

#include <stdlib.h>
#include "core/internal.h"

static inline void *tmem__meta_alloc(const tmem_allocator *a, size_t n) {
    return a->alloc ? a->alloc(n, a->user) : malloc(n);
}

static inline void tmem__meta_free(const tmem_allocator *a, void *p, size_t n) {
    if (!p) return;
    if (a->free) a->free(p, n, a->user);
    else free(p);
}

/* The last TMEM__RECENT_N offsets freed. A miss on free-by-offset that hits
 * this ring is reported as TMEM_E_DOUBLE_FREE, anything else as
 * TMEM_E_FOREIGN. Bounded (N compares), so detection stays O(1); an offset
 * freed more than N frees ago and coalesced away reads as foreign. */
#define TMEM__RECENT_N 16
typedef struct tmem__recent {
    uint64_t off[TMEM__RECENT_N];
    uint32_t pos;
} tmem__recent;

static inline void tmem__recent_clear(tmem__recent *r) {
    for (int i = 0; i < TMEM__RECENT_N; i++) r->off[i] = UINT64_MAX;
    r->pos = 0;
}

static inline void tmem__recent_push(tmem__recent *r, uint64_t off) {
    r->off[r->pos] = off;
    r->pos = (r->pos + 1) % TMEM__RECENT_N;
}

static inline bool tmem__recent_has(const tmem__recent *r, uint64_t off) {
    for (int i = 0; i < TMEM__RECENT_N; i++)
        if (r->off[i] == off) return true;
    return false;
}

#endif

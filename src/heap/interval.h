/*
 * Live-range index: a set of intervals [start, end) keyed by (start, seq),
 * kept in a treap augmented with the largest end in each subtree, once over
 * all intervals and once over the "solid" (non-aliasable) ones. Used by
 * PLACEMENT heaps (the live set, overlap checks against non-aliasable
 * allocations) and by every heap for aliasable allocations that gave their
 * bytes back (use-after-alias tracking).
 *
 * Intervals may overlap and may share a start; seq (insertion order) breaks
 * ties, and a lookup by start returns the newest interval there.
 *
 * Costs (n = intervals, k = reported): insert, remove, find, overlap check
 * O(log n) expected; marking overlaps O(log n + k). Nodes live in one array
 * with a recycled chain; growth is amortised.
 */
#ifndef TMEM_HEAP_INTERVAL_H
#define TMEM_HEAP_INTERVAL_H

#include "heap/meta.h"

#define TMEM__IVX_NIL UINT32_MAX

enum tmem__ivx_flag {
    TMEM__IVX_ALIASABLE = 1u << 0,  /* not solid: may be overlapped */
    TMEM__IVX_OVERLAPPED = 1u << 1, /* a later interval took some of its bytes */
};

typedef struct tmem__ivx_node {
    uint64_t start, end, seq, user;
    uint64_t max_all, max_solid; /* subtree's largest end (0 = none) */
    uint32_t left, right, prio, flags;
} tmem__ivx_node;

typedef struct tmem__ivx {
    tmem_allocator a;
    tmem__ivx_node *nodes;
    uint32_t cap, top, recycled, root, count;
    uint32_t rng;
    uint64_t seq;
} tmem__ivx;

void tmem__ivx_init(tmem__ivx *x, const tmem_allocator *a);
void tmem__ivx_destroy(tmem__ivx *x);
/* Drop every interval (keeps capacity). */
void tmem__ivx_reset(tmem__ivx *x);
/* Make room for one more insert: TMEM_OK | TMEM_E_NO_MEMORY. insert() after a
 * successful reserve cannot fail. */
tmem_status tmem__ivx_reserve(tmem__ivx *x);
/* Insert [start, start+size) (size > 0, no overflow); returns the node index. */
uint32_t tmem__ivx_insert(tmem__ivx *x, uint64_t start, uint64_t size, uint32_t flags, uint64_t user);
/* Newest interval starting at `start`, or NIL. */
uint32_t tmem__ivx_find(const tmem__ivx *x, uint64_t start);
/* Newest interval starting at `start` whose flags include `flag`, or NIL. */
uint32_t tmem__ivx_find_flagged(const tmem__ivx *x, uint64_t start, uint32_t flag);
static inline tmem__ivx_node *tmem__ivx_at(const tmem__ivx *x, uint32_t i) { return &x->nodes[i]; }
void tmem__ivx_remove(tmem__ivx *x, uint32_t i);
/* Change a node's flags (re-keys the augmentation). */
void tmem__ivx_set_flags(tmem__ivx *x, uint32_t i, uint32_t flags);
/* Does [start, end) overlap a solid (non-aliasable) interval? */
bool tmem__ivx_overlaps_solid(const tmem__ivx *x, uint64_t start, uint64_t end);
/* Does [start, end) overlap any interval? */
bool tmem__ivx_overlaps_any(const tmem__ivx *x, uint64_t start, uint64_t end);
/* Flag TMEM__IVX_OVERLAPPED on every aliasable interval overlapping
 * [start, end); returns how many there were. */
uint32_t tmem__ivx_mark_overlaps(tmem__ivx *x, uint64_t start, uint64_t end);
/* Visit intervals in (start, seq) order; stop when fn returns false. */
typedef bool (*tmem__ivx_visit)(void *ctx, const tmem__ivx_node *n);
void tmem__ivx_walk(const tmem__ivx *x, tmem__ivx_visit fn, void *ctx);
tmem_status tmem__ivx_check(const tmem__ivx *x);

#endif

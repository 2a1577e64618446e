/*
 * Commit on demand and the decommit policy of a heap.
 *
 * A heap commits in chunks of max(pool granule, TMEM__HEAP_COMMIT_CHUNK =
 * 64 KiB) and keeps one bit per chunk, so the allocation fast path decides
 * "already committed" with one bit test and never enters the core. Chunks
 * (not 4 KiB pages) keep the number of commit/decommit calls, and of kernel
 * VMAs the protection changes create, proportional to memory, not to the
 * number of allocations. Only a chunk seen for the first time goes to
 * tmem__pool_commit, which charges the budgets (and may run reclaim, or
 * refuse with TMEM_E_BUDGET: then the caller undoes its metadata change).
 * The last chunk may extend past the carved range; it is clipped.
 *
 * Decommit rule (hysteresis). While memory is plentiful — the context's
 * pressure is NORMAL and the budget headroom (context, and the type's own
 * budget) is at least 2 * retain — a free keeps its wholly free chunks
 * committed if they span less than TMEM__HEAP_DECOMMIT_MIN (1 MiB), or if the
 * heap's free committed bytes (committed - bytes in live blocks) stay within
 *     retain = max(TMEM__HEAP_RETAIN_MIN (4 MiB), committed / 2);
 * otherwise they are decommitted. When memory is not plentiful every wholly
 * free chunk goes back at once. So alloc/free ping-pong never reaches the OS
 * while there is room, and a tight budget gets freed memory back
 * immediately. Why committed / 2: TLSF spreads live blocks over chunks, so
 * (committed - live) sits between 1/8 and 1/2 of committed on a churning
 * mixed-size workload (bench heap); a tighter fraction decommitted and
 * recommitted on ~1.5% of allocations there (31k mmap + 37k mprotect per
 * 2M ops), 1/2 on ~0.1%.
 * Spans still covered by a live aliasable allocation are never decommitted
 * (its owner may read it until a later allocation takes the bytes).
 * LINEAR heaps, COMMIT_ALL heaps and every reset keep their pages (scratch
 * is reused next step; COMMIT_ALL asked for everything up front).
 * Memory comes back by free (this rule), destroy, EMPTY, or reclaim purging
 * a VOLATILE heap.
 */
#include <string.h>
#include "base/bitmap.h"
#include "heap/heap_internal.h"

/* One bit per commit chunk, walked by the one bit walk (base/bitmap.h). */
static inline bool bit(const tmem_heap *h, uint64_t p) { return tmem__bits_test(h->bits, p); }

/* First chunk in [p, end) whose bit equals v, or end. */
static uint64_t next_with(const tmem_heap *h, uint64_t p, uint64_t end, bool v) {
    return tmem__bits_find(h->bits, p, end, v);
}

static void assign(tmem_heap *h, uint64_t a, uint64_t b, bool v) {
    (void)tmem__bits_assign(h->bits, a, b, v);
}

/* Bytes of chunks [a, b), the last one clipped to the carved range. */
static uint64_t chunk_bytes(const tmem_heap *h, uint64_t a, uint64_t b) {
    uint64_t lo = a << h->page_shift, hi = b << h->page_shift;
    return (hi < h->carved ? hi : h->carved) - lo;
}

uint64_t tmem__heap_bits_bytes(const tmem_heap *h) {
    uint64_t bytes = 0;
    for (uint64_t p = next_with(h, 0, h->npages, true); p < h->npages; p = next_with(h, p, h->npages, true)) {
        uint64_t e = next_with(h, p, h->npages, false);
        bytes += chunk_bytes(h, p, e);
        p = e;
    }
    return bytes;
}

tmem_status tmem__heap_commit_init(tmem_heap *h) {
    uint64_t g = tmem__heap_commit_chunk(h->type);
    h->page_shift = (uint32_t)__builtin_ctzll(g);
    h->npages = (h->carved + g - 1) >> h->page_shift;
    size_t words = (size_t)((h->npages + 63) / 64);
    h->bits = tmem__calloc(h->ctx, words ? words : 1, sizeof *h->bits);
    return h->bits ? TMEM_OK : tmem__err(TMEM_E_NO_MEMORY);
}

void tmem__heap_commit_fini(tmem_heap *h) {
    size_t words = (size_t)((h->npages + 63) / 64);
    tmem__free(h->ctx, h->bits, (words ? words : 1) * sizeof *h->bits);
    h->bits = NULL;
}

tmem_status tmem__heap_commit_slow(tmem_heap *h, uint64_t off, uint64_t size) {
    uint64_t a = off >> h->page_shift, b = ((off + size - 1) >> h->page_shift) + 1;
    uint64_t first = next_with(h, a, b, false);
    if (first == b) return TMEM_OK;
    /* One call for the whole uncommitted stretch: the pool commits only the
     * pages it does not have and charges only those, all or nothing. */
    uint64_t last = b;
    while (last > first && bit(h, last - 1)) last--;
    tmem_status st = tmem__pool_commit(h->type, h->base + (first << h->page_shift), chunk_bytes(h, first, last));
    if (st != TMEM_OK) return st;
    for (uint64_t p = next_with(h, first, last, false); p < last; p = next_with(h, p, last, false)) {
        uint64_t e = next_with(h, p, last, true);
        assign(h, p, e, true);
        h->committed += chunk_bytes(h, p, e);
        p = e;
    }
    return TMEM_OK;
}

/* Decommit the committed pages in [a, b); returns the bytes. */
static uint64_t decommit_pages(tmem_heap *h, uint64_t a, uint64_t b) {
    uint64_t bytes = 0;
    for (uint64_t p = next_with(h, a, b, true); p < b; p = next_with(h, p, b, true)) {
        uint64_t e = next_with(h, p, b, false);
        tmem__pool_decommit(h->type, h->base + (p << h->page_shift), chunk_bytes(h, p, e));
        assign(h, p, e, false);
        bytes += chunk_bytes(h, p, e);
        p = e;
    }
    h->committed -= bytes;
    return bytes;
}

/* Bytes in live blocks: what the committed pages are for. */
static uint64_t block_bytes(const tmem_heap *h) {
    switch (h->kind) {
    case TMEM_HEAP_GENERAL: return h->tlsf.size - h->tlsf.free_bytes;
    case TMEM_HEAP_LINEAR: return h->lin.live_bytes;
    default: return h->used;
    }
}

/* May this heap keep `retain` bytes of free pages committed? (One short
 * context-locked read; only asked when a free leaves whole free chunks.) */
static bool plenty(tmem_heap *h, uint64_t retain) {
    return tmem__budget_has_room(h->type, 2 * retain);
}

void tmem__heap_release(tmem_heap *h, uint64_t off, uint64_t size) {
    if (tmem__heap_state(h) != TMEM_PURGEABLE_NON_VOLATILE) return; /* sentinels live there */
    if (h->flags & TMEM_HEAP_COMMIT_ALL) return; /* asked to stay committed */
    uint64_t g = 1ull << h->page_shift;
    uint64_t a = (off + g - 1) >> h->page_shift, b = (off + size) >> h->page_shift;
    if (a >= b) return;
    uint64_t retain = h->committed / 2 > TMEM__HEAP_RETAIN_MIN ? h->committed / 2 : TMEM__HEAP_RETAIN_MIN;
    uint64_t in_blocks = block_bytes(h);
    if (h->committed <= in_blocks) return;
    bool small = ((b - a) << h->page_shift) < TMEM__HEAP_DECOMMIT_MIN;
    if ((small || h->committed - in_blocks <= retain) && plenty(h, retain)) return;
    uint64_t lo = a << h->page_shift, hi = b << h->page_shift;
    if (h->alias.count && tmem__ivx_overlaps_any(&h->alias, lo, hi)) return;
    if (h->kind == TMEM_HEAP_PLACEMENT && tmem__ivx_overlaps_any(&h->live, lo, hi)) return;
    (void)decommit_pages(h, a, b);
}

uint64_t tmem__heap_decommit_all(tmem_heap *h) { return decommit_pages(h, 0, h->npages); }

tmem_status tmem__heap_committed_runs(tmem_heap *h, tmem__heap_run_fn fn, void *arg) {
    for (uint64_t p = next_with(h, 0, h->npages, true); p < h->npages; p = next_with(h, p, h->npages, true)) {
        uint64_t e = next_with(h, p, h->npages, false);
        tmem_status st = fn(h, p << h->page_shift, chunk_bytes(h, p, e), arg);
        if (st != TMEM_OK) return st;
        p = e;
    }
    return TMEM_OK;
}

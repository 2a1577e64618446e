/*
 * Commit on demand and the decommit policy of a heap.
 *
 * A heap keeps one bit per pool granule ("page") it spans, so the allocation
 * fast path decides "already committed" with one bit test and never enters
 * the core. Only a page seen for the first time goes to tmem__pool_commit,
 * which charges the budgets (and may run reclaim, or refuse with
 * TMEM_E_BUDGET: then the caller undoes its metadata change).
 *
 * Decommit rule (hysteresis). When a free leaves a span of wholly free pages,
 * they are decommitted only if the heap's free committed bytes
 * (committed - bytes in live blocks) exceed
 *     retain = max(TMEM__HEAP_RETAIN_MIN (1 MiB), committed / 8).
 * So alloc/free ping-pong of anything below 1 MiB never reaches the OS, a
 * heap at steady state keeps up to 1/8 of its footprint warm, and a lone big
 * block (say 64 MiB in a small heap) goes back as soon as it is freed.
 * Spans still covered by a live aliasable allocation are never decommitted
 * (its owner may read it until a later allocation takes the bytes).
 * LINEAR heaps and every reset keep their pages: scratch is reused next step.
 * Memory comes back by free (this rule), destroy, EMPTY, or reclaim purging
 * a VOLATILE heap.
 */
#include <string.h>
#include "heap/heap_internal.h"

static inline bool bit(const tmem_heap *h, uint64_t p) { return h->bits[p >> 6] >> (p & 63) & 1; }

/* First page in [p, end) whose bit equals v, or end. */
static uint64_t next_with(const tmem_heap *h, uint64_t p, uint64_t end, bool v) {
    while (p < end) {
        uint64_t w = h->bits[p >> 6];
        if (!v) w = ~w;
        w &= ~0ull << (p & 63);
        if (w) {
            uint64_t q = (p & ~63ull) + (uint64_t)__builtin_ctzll(w);
            return q < end ? q : end;
        }
        p = (p & ~63ull) + 64;
    }
    return end;
}

static void assign(tmem_heap *h, uint64_t a, uint64_t b, bool v) {
    for (uint64_t p = a; p < b; p++) {
        if (v) h->bits[p >> 6] |= 1ull << (p & 63);
        else h->bits[p >> 6] &= ~(1ull << (p & 63));
    }
}

tmem_status tmem__heap_commit_init(tmem_heap *h) {
    uint64_t g = tmem__pool_granule(h->type);
    h->page_shift = (uint32_t)__builtin_ctzll(g);
    h->npages = h->carved >> h->page_shift;
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
    tmem_status st = tmem__pool_commit(h->type, h->base + (first << h->page_shift), (last - first) << h->page_shift);
    if (st != TMEM_OK) return st;
    for (uint64_t p = first; p < last; p++) {
        if (!bit(h, p)) {
            h->bits[p >> 6] |= 1ull << (p & 63);
            h->committed += 1ull << h->page_shift;
        }
    }
    return TMEM_OK;
}

/* Decommit the committed pages in [a, b); returns the bytes. */
static uint64_t decommit_pages(tmem_heap *h, uint64_t a, uint64_t b) {
    uint64_t bytes = 0;
    for (uint64_t p = next_with(h, a, b, true); p < b; p = next_with(h, p, b, true)) {
        uint64_t e = next_with(h, p, b, false);
        tmem__pool_decommit(h->type, h->base + (p << h->page_shift), (e - p) << h->page_shift);
        assign(h, p, e, false);
        bytes += (e - p) << h->page_shift;
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

void tmem__heap_release(tmem_heap *h, uint64_t off, uint64_t size) {
    if (tmem__heap_state(h) != TMEM_PURGEABLE_NON_VOLATILE) return; /* sentinels live there */
    uint64_t g = 1ull << h->page_shift;
    uint64_t a = (off + g - 1) >> h->page_shift, b = (off + size) >> h->page_shift;
    if (a >= b) return;
    uint64_t retain = h->committed / 8 > TMEM__HEAP_RETAIN_MIN ? h->committed / 8 : TMEM__HEAP_RETAIN_MIN;
    uint64_t in_blocks = block_bytes(h);
    if (h->committed <= in_blocks || h->committed - in_blocks <= retain) return;
    uint64_t lo = a << h->page_shift, hi = b << h->page_shift;
    if (h->alias.count && tmem__ivx_overlaps_any(&h->alias, lo, hi)) return;
    if (h->kind == TMEM_HEAP_PLACEMENT && tmem__ivx_overlaps_any(&h->live, lo, hi)) return;
    (void)decommit_pages(h, a, b);
}

uint64_t tmem__heap_decommit_all(tmem_heap *h) { return decommit_pages(h, 0, h->npages); }

tmem_status tmem__heap_committed_runs(tmem_heap *h, tmem__heap_run_fn fn, void *arg) {
    for (uint64_t p = next_with(h, 0, h->npages, true); p < h->npages; p = next_with(h, p, h->npages, true)) {
        uint64_t e = next_with(h, p, h->npages, false);
        tmem_status st = fn(h, p << h->page_shift, (e - p) << h->page_shift, arg);
        if (st != TMEM_OK) return st;
        p = e;
    }
    return TMEM_OK;
}

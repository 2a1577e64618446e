/*
 * BLOCK heaps: fixed-size blocks with immediate decommit.
 *
 * Why a kind of its own: a GENERAL heap keeps freed pages committed
 * (hysteresis, commit.c), which is right for churn and wrong for eviction.
 * When a KV policy evicts a sequence to make room, its bytes must leave the
 * budget now, or the core's reclaim sees no progress. Here every block is a
 * whole number of pool granules, committed when handed out and decommitted
 * when given back, so the charge moves by exactly one stride per block.
 *
 * Allocate pops the free stack (or takes the next never-used block), free
 * pushes it: O(1), no search, no hash. A live bitmap tells a double free from
 * a live block, and index arithmetic tells a foreign offset.
 *
 * Re-entrancy and locks: the commit may run the context's reclaim steps,
 * which may free blocks of this very heap (a KV cache evicting for its own
 * allocation). So the block is taken out of the free structures before the
 * commit and put back if it fails, and a THREAD_SAFE heap releases its lock
 * around the commit and the decommit: no lock is held across a system call.
 * A block being freed stays off the free stack until its decommit is done,
 * so no other thread can commit it under the decommit.
 */
#include <string.h>
#include "heap/heap_internal.h"

#define BLOCK_MIN_CAP 64u
#define BLOCK_MAX_BLOCKS (UINT32_MAX - 1u)

static void lock(tmem_heap *h) {
    if (h->flags & TMEM_HEAP_THREAD_SAFE) tmem__os_mutex_lock(&h->lock);
}

static void unlock(tmem_heap *h) {
    if (h->flags & TMEM_HEAP_THREAD_SAFE) tmem__os_mutex_unlock(&h->lock);
}

static size_t map_bytes(uint32_t cap) { return (size_t)((cap + 63u) / 64u) * sizeof(uint64_t); }

static bool is_live(const tmem__block *b, uint32_t i) { return b->live[i >> 6] >> (i & 63) & 1; }

static void set_live(tmem__block *b, uint32_t i, bool on) {
    if (on) b->live[i >> 6] |= 1ull << (i & 63);
    else b->live[i >> 6] &= ~(1ull << (i & 63));
}

/* Room in the stack and the bitmap for one more never-used block. Nothing
 * changes on failure. */
static tmem_status grow(tmem_heap *h) {
    tmem__block *b = &h->block;
    if (b->high < b->cap) return TMEM_OK;
    uint32_t ncap = b->cap >= b->nblocks / 2 ? b->nblocks : b->cap * 2;
    if (ncap < BLOCK_MIN_CAP) ncap = b->nblocks < BLOCK_MIN_CAP ? b->nblocks : BLOCK_MIN_CAP;
    uint32_t *nf = tmem__malloc(h->ctx, (size_t)ncap * sizeof *nf);
    uint64_t *nl = tmem__calloc(h->ctx, 1, map_bytes(ncap));
    if (!nf || !nl) {
        if (nf) tmem__free(h->ctx, nf, (size_t)ncap * sizeof *nf);
        if (nl) tmem__free(h->ctx, nl, map_bytes(ncap));
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    if (b->cap) {
        memcpy(nf, b->free, (size_t)b->nfree * sizeof *nf);
        memcpy(nl, b->live, map_bytes(b->cap));
        tmem__free(h->ctx, b->free, (size_t)b->cap * sizeof *b->free);
        tmem__free(h->ctx, b->live, map_bytes(b->cap));
    }
    b->free = nf;
    b->live = nl;
    b->cap = ncap;
    return TMEM_OK;
}

/* ---- create / destroy ---- */

static tmem_status geometry(const tmem_heap_desc *d, uint64_t granule, tmem__block *b) {
    if (!d->block_size || d->block_size >= TMEM__HEAP_MAX_SIZE)
        return tmem__err(TMEM_E_INVALID_ARG);
    if (d->flags & TMEM_HEAP_COMMIT_ALL) /* contradicts decommit on free */
        return tmem__err(TMEM_E_INVALID_ARG);
    if (!tmem__align_up(d->block_size, granule, &b->stride)) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t n = d->size / b->stride;
    if (!n) return tmem__err(TMEM_E_INVALID_ARG); /* not one block */
    b->nblocks = n > BLOCK_MAX_BLOCKS ? BLOCK_MAX_BLOCKS : (uint32_t)n;
    b->block_size = d->block_size;
    return TMEM_OK;
}

tmem_status tmem__block_heap_create(tmem_context *ctx, const tmem_heap_desc *d, int32_t role,
                                    tmem_heap **out) {
    tmem_type *type = d->type;
    uint64_t g = tmem__pool_granule(type);
    tmem__block geo = {0};
    tmem_status st = geometry(d, g, &geo);
    if (st != TMEM_OK) return st;
    tmem_heap *h = tmem__calloc(ctx, 1, sizeof *h);
    if (!h) return tmem__err(TMEM_E_NO_MEMORY);
    uint64_t size = (uint64_t)geo.nblocks * geo.stride;
    *h = (tmem_heap){.magic = TMEM__HEAP_MAGIC, .kind = TMEM_HEAP_BLOCK, .flags = d->flags,
                     .role = role,
                     .ctx = ctx, .type = type, .debug = tmem__context_debug(ctx), .size = size,
                     .carved = size, .granule = g, .block = geo};
    atomic_init(&h->purgeable, TMEM_PURGEABLE_NON_VOLATILE);
    if (d->name) strncpy(h->name, d->name, sizeof h->name - 1);
    if ((st = tmem__pool_carve(type, size, g, &h->base)) != TMEM_OK) goto fail;
    h->ptr = tmem__pool_ptr(type, h->base);
    if (tmem__os_mutex_init(&h->lock, 0)) {
        st = tmem__err(TMEM_E_NO_MEMORY);
        goto uncarve;
    }
    if ((st = tmem__context_add_member(ctx, h, &tmem__heap_member_ops)) != TMEM_OK) goto unlock;
    *out = h;
    return TMEM_OK;
unlock:
    tmem__os_mutex_destroy(&h->lock);
uncarve:
    tmem__pool_uncarve(type, h->base, size);
fail:
    tmem__free(ctx, h, sizeof *h);
    return st;
}

/* Give back every live block (destroy, reset). Decommits run with the lock
 * held: nothing else may use a heap that is being reset or destroyed. */
static void release_all(tmem_heap *h) {
    tmem__block *b = &h->block;
    for (uint32_t i = 0; i < b->high; i++) {
        if (!is_live(b, i)) continue;
        uint64_t off = (uint64_t)i * b->stride;
        set_live(b, i, false);
        tmem__pool_decommit(h->type, h->base + off, b->stride);
        tmem__account_free(h->type, h->role, b->block_size);
        b->free[b->nfree++] = i;
    }
    h->committed = 0;
    h->used = 0;
    h->live_count = 0;
}

void tmem__block_heap_destroy(tmem_heap *h) {
    tmem__context_remove_member(h->ctx, h);
    tmem__trace(h->ctx, TMEM__TRACE_RESET, h->type, h->role, h->carved, h->base, h->name);
    tmem__block *b = &h->block;
    if (b->cap) release_all(h);
    if (b->free) tmem__free(h->ctx, b->free, (size_t)b->cap * sizeof *b->free);
    if (b->live) tmem__free(h->ctx, b->live, map_bytes(b->cap));
    tmem__pool_uncarve(h->type, h->base, h->carved);
    tmem__os_mutex_destroy(&h->lock);
    h->magic = 0;
    tmem__free(h->ctx, h, sizeof *h);
}

tmem_status tmem__block_reset(tmem_heap *h) {
    lock(h);
    if (h->block.cap) release_all(h);
    tmem__trace(h->ctx, TMEM__TRACE_RESET, h->type, h->role, h->carved, h->base, h->name);
    unlock(h);
    return TMEM_OK;
}

/* ---- allocate ---- */

/* Take a block out of the free structures (lock held). */
static tmem_status take(tmem_heap *h, uint32_t *out, bool *fresh) {
    tmem__block *b = &h->block;
    *fresh = b->nfree == 0;
    if (!*fresh) {
        *out = b->free[--b->nfree];
    } else {
        if (b->high == b->nblocks) return tmem__err(TMEM_E_FULL);
        tmem_status st = grow(h);
        if (st != TMEM_OK) return st;
        *out = b->high++;
    }
    b->in_flight++;
    return TMEM_OK;
}

/* The commit failed: put the block back where it came from (lock held), so
 * the heap is as it was unless a re-entrant call changed it meanwhile. */
static void untake(tmem_heap *h, uint32_t i, bool fresh) {
    tmem__block *b = &h->block;
    b->in_flight--;
    if (fresh && i + 1 == b->high) b->high--;
    else b->free[b->nfree++] = i;
}

static tmem_status block_alloc(tmem_heap *h, uint32_t flags, const char *name, uint64_t *out_off) {
    tmem__block *b = &h->block;
    uint32_t i = 0;
    bool fresh = false;
    lock(h);
    tmem_status st = take(h, &i, &fresh);
    unlock(h);
    if (st != TMEM_OK) return st;
    uint64_t off = (uint64_t)i * b->stride;
    st = tmem__pool_commit(h->type, h->base + off, b->stride);
    lock(h);
    if (st != TMEM_OK) {
        untake(h, i, fresh);
        unlock(h);
        return st;
    }
    b->in_flight--;
    set_live(b, i, true);
    h->committed += b->stride;
    h->used += b->block_size;
    if (h->used > h->peak_used) h->peak_used = h->used;
    h->live_count++;
    unlock(h);
    if ((flags & TMEM_ALLOC_ZERO) && h->ptr) memset(h->ptr + off, 0, b->block_size);
    tmem__account_alloc(h->type, h->role, b->block_size);
    tmem__trace(h->ctx, TMEM__TRACE_ALLOC, h->type, h->role, b->block_size, h->base + off,
                name ? name : h->name);
    *out_off = off;
    return TMEM_OK;
}

/* What every block allocation must satisfy: one block's bytes, an alignment
 * the stride gives (blocks start at granule multiples of the pool). */
static tmem_status check_request(const tmem_heap *h, uint64_t size, uint64_t alignment) {
    if (!size || size > h->block.block_size) return tmem__err(TMEM_E_INVALID_ARG);
    if (alignment && !tmem__is_pow2(alignment)) return tmem__err(TMEM_E_ALIGNMENT);
    if (alignment > h->granule) return tmem__err(TMEM_E_ALIGNMENT);
    return TMEM_OK;
}

tmem_status tmem__block_alloc_ptr(tmem_heap *h, uint64_t size, uint64_t alignment, void **out) {
    tmem_status st = check_request(h, size, alignment);
    if (st != TMEM_OK) return st;
    uint64_t off = 0;
    st = block_alloc(h, 0, NULL, &off);
    if (st == TMEM_OK) *out = h->ptr + off;
    return st;
}

tmem_status tmem__block_alloc_ex(tmem_heap *h, const tmem_alloc_desc *d, tmem_alloc_info *out) {
    tmem_status st = check_request(h, d->size, d->alignment);
    if (st != TMEM_OK) return st;
    if (d->flags & TMEM_ALLOC_ALIASABLE) return tmem__err(TMEM_E_UNSUPPORTED);
    bool own_role = d->role == TMEM_ROLE_DEFAULT || d->role == -1 || d->role == h->role;
    if (!own_role) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t off = 0;
    st = block_alloc(h, d->flags, d->name, &off);
    if (st == TMEM_OK) *out = (tmem_alloc_info){off, d->size, h->ptr ? h->ptr + off : NULL};
    return st;
}

/* ---- free ---- */

/* Why off names no live block: foreign (not a block start of this heap, or
 * a block never handed out) or a double free. */
static tmem_status not_live(const tmem__block *b, uint64_t off, uint32_t *out) {
    if (off % b->stride) return tmem__err(TMEM_E_FOREIGN);
    uint64_t i = off / b->stride;
    if (i >= b->high) return tmem__err(TMEM_E_FOREIGN);
    if (!is_live(b, (uint32_t)i)) return tmem__err(TMEM_E_DOUBLE_FREE);
    *out = (uint32_t)i;
    return TMEM_OK;
}

tmem_status tmem__block_free(tmem_heap *h, uint64_t off) {
    tmem__block *b = &h->block;
    uint32_t i = 0;
    lock(h);
    tmem_status st = not_live(b, off, &i);
    if (st != TMEM_OK) {
        unlock(h);
        return st;
    }
    set_live(b, i, false);
    b->in_flight++;
    h->used -= b->block_size;
    h->live_count--;
    unlock(h);
    tmem__pool_decommit(h->type, h->base + off, b->stride);
    tmem__account_free(h->type, h->role, b->block_size);
    tmem__trace(h->ctx, TMEM__TRACE_FREE, h->type, h->role, b->block_size, h->base + off, NULL);
    lock(h);
    h->committed -= b->stride;
    b->in_flight--;
    b->free[b->nfree++] = i;
    unlock(h);
    return TMEM_OK;
}

/* ---- read-back and check ---- */

void tmem__block_info(tmem_heap *h, tmem_heap_info *out) {
    const tmem__block *b = &h->block;
    lock(h);
    out->kind = TMEM_HEAP_BLOCK;
    out->size = h->size;
    out->used = h->used;
    out->committed = h->committed;
    out->peak_used = h->peak_used;
    out->live_count = h->live_count;
    out->largest_free = b->nfree || b->high < b->nblocks ? b->block_size : 0;
    out->purgeable = TMEM_PURGEABLE_NON_VOLATILE;
    out->block_stride = b->stride;
    unlock(h);
}

/* Every free-stack entry a distinct, handed-out, non-live block. */
static bool free_stack_ok(tmem_heap *h) {
    const tmem__block *b = &h->block;
    if (!b->nfree) return true;
    uint64_t *seen = tmem__calloc(h->ctx, 1, map_bytes(b->cap));
    if (!seen) return true; /* cannot tell without memory; the counts still checked */
    bool ok = true;
    for (uint32_t k = 0; k < b->nfree && ok; k++) {
        uint32_t i = b->free[k];
        ok = i < b->high && !is_live(b, i) && !(seen[i >> 6] >> (i & 63) & 1);
        if (ok) seen[i >> 6] |= 1ull << (i & 63);
    }
    tmem__free(h->ctx, seen, map_bytes(b->cap));
    return ok;
}

tmem_status tmem__block_check(tmem_heap *h) {
    const tmem__block *b = &h->block;
    lock(h);
    uint64_t live = 0;
    for (uint32_t w = 0; w < (b->high + 63u) / 64u; w++)
        live += (uint64_t)__builtin_popcountll(b->live[w]);
    bool ok = b->high <= b->cap && b->cap <= b->nblocks && b->nfree <= b->high;
    ok = ok && (uint64_t)b->nfree + live + b->in_flight == b->high;
    ok = ok && live == h->live_count && h->used == live * b->block_size && h->used <= h->peak_used;
    ok = ok && h->committed >= live * b->stride;
    ok = ok && h->committed <= (live + b->in_flight) * b->stride;
    ok = ok && b->stride && b->stride % h->granule == 0;
    ok = ok && h->size == (uint64_t)b->nblocks * b->stride;
    ok = ok && free_stack_ok(h);
    unlock(h);
    return ok ? TMEM_OK : tmem__err(TMEM_E_CORRUPT);
}

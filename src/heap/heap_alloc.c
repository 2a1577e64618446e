/*
 * The hot paths: allocate and free, by pointer and by offset.
 *
 * Allocate = take metadata (TLSF, bump, or the caller's placement), commit
 * the pages under it if the heap's bitmap says they are new (rare), account,
 * trace. Any failure after the metadata step undoes it, so a refused commit
 * (TMEM_E_BUDGET) leaves the heap exactly as it was. No lock unless the heap
 * is THREAD_SAFE (or not NON_VOLATILE, see heap_internal.h); tracing costs a
 * call and a branch when off.
 *
 * Small-block cache (GENERAL): a free of a block of at most 512 B parks it,
 * still "used" in TLSF and marked TMEM__HEAP_CACHED, in a per-size LIFO of
 * up to 32 blocks; an allocation of that size (alignment <= the granule)
 * pops it: no split, no merge, no hash update, and no load of the block's
 * record (the cache keeps each block's offset; the record's user word is only
 * stored, which does not stall on a miss). Parked blocks are invisible
 * to the owner (a second free of one is a double free; they are not live
 * allocations for walks, info or checks) and go back to TLSF when a search
 * fails (TMEM_E_FULL), on reset and on purge. They stay committed: at most
 * 32 x 32 blocks <= 512 B, i.e. < 264 KiB per heap, usually far less (plus
 * 16 KiB of cache metadata).
 *
 * An offset (or pointer) names the newest live allocation at it: an
 * aliasable allocation that gave its bytes back can share its offset with a
 * later allocation, which is freed first.
 */
#include <string.h>
#include "heap/heap_internal.h"

/* ---- metadata by kind ---- */

static inline uint32_t cache_class(const tmem_heap *h, uint64_t bytes) { return (uint32_t)(bytes / h->granule) - 1; }

void tmem__heap_cache_flush(tmem_heap *h) {
    if (!h->cache) return;
    for (uint32_t c = 0; c < TMEM__HEAP_CACHE_MAX / 16; c++) {
        while (h->cache->n[c]) tmem__tlsf_free_index(&h->tlsf, h->cache->slot[c][--h->cache->n[c]].index, NULL);
    }
}

static tmem_status take(tmem_heap *h, uint64_t size, uint64_t align, uint64_t user, uint64_t *off, uint64_t *bytes) {
    if (h->kind != TMEM_HEAP_GENERAL) return tmem__linear_alloc(&h->lin, size, align, user, off, bytes);
    if (h->cache && size <= TMEM__HEAP_CACHE_MAX && align <= h->granule) {
        uint64_t rounded = (size + h->granule - 1) & ~(h->granule - 1);
        uint32_t c = cache_class(h, rounded);
        if (__builtin_expect(h->cache->n[c] != 0, 1)) {
            const tmem__heap_cached *e = &h->cache->slot[c][--h->cache->n[c]];
            h->tlsf.blocks[e->index].user = user; /* a store: no wait on the record */
            *off = e->offset;
            *bytes = rounded;
            return TMEM_OK;
        }
    }
    tmem_status st = tmem__tlsf_alloc(&h->tlsf, size, align, user, off, bytes);
    if (st == TMEM_E_FULL && h->cache) {
        tmem__heap_cache_flush(h); /* parked blocks may coalesce into room */
        st = tmem__tlsf_alloc(&h->tlsf, size, align, user, off, bytes);
    }
    return st;
}

void tmem__heap_give_back(tmem_heap *h, uint64_t off, uint64_t *span_off, uint64_t *span_size) {
    tmem_status st;
    if (h->kind == TMEM_HEAP_GENERAL) {
        tmem__tlsf_freed f = {0};
        st = tmem__tlsf_free(&h->tlsf, off, &f);
        *span_off = f.span_offset;
        *span_size = f.span_size;
    } else {
        tmem__linear_rec r = {0};
        st = tmem__linear_free(&h->lin, off, &r);
        *span_off = off;
        *span_size = r.size;
    }
    tmem__assert(st == TMEM_OK); /* callers found the block first */
    (void)st;
}

/* PLACEMENT: validate the caller's range; it is inserted after the commit. */
static tmem_status place_check(tmem_heap *h, uint64_t off, uint64_t size, uint64_t align) {
    uint64_t end;
    if (tmem__add_overflow(off, size, &end) || end > h->size) return tmem__err(TMEM_E_INVALID_ARG);
    /* alignment of the address (host) or of the pool offset (device) */
    uint64_t where = h->ptr ? (uint64_t)(uintptr_t)(h->ptr + off) : h->base + off;
    if (where & (align - 1)) return tmem__err(TMEM_E_ALIGNMENT);
    if (tmem__ivx_overlaps_solid(&h->live, off, end)) return tmem__err(TMEM_E_OVERLAP);
    return tmem__ivx_reserve(&h->live);
}

typedef struct alloc_req {
    uint64_t size, align, offset;
    uint32_t flags;
    int32_t role;
    const char *name;
} alloc_req;

/* Arguments are validated; the heap is entered (locked if it must be). */
static tmem_status alloc_locked(tmem_heap *h, const alloc_req *q, uint64_t *out_off) {
    if (tmem__heap_state(h) != TMEM_PURGEABLE_NON_VOLATILE) return tmem__err(TMEM_E_STATE);
    bool aliasable = q->flags & TMEM_ALLOC_ALIASABLE;
    uint64_t user = tmem__heap_pack(q->size, q->role), off, bytes = q->size;
    tmem_status st;
    if (h->kind == TMEM_HEAP_PLACEMENT) {
        off = q->offset;
        st = place_check(h, off, q->size, q->align);
    } else {
        st = aliasable ? tmem__ivx_reserve(&h->alias) : TMEM_OK;
        if (st == TMEM_OK) st = take(h, q->size, q->align, user, &off, &bytes);
    }
    if (st != TMEM_OK) return st;
    st = tmem__heap_commit(h, off, bytes);
    if (st != TMEM_OK) {
        uint64_t so, ss;
        if (h->kind != TMEM_HEAP_PLACEMENT) tmem__heap_give_back(h, off, &so, &ss);
        return st;
    }
    if (h->debug) tmem__heap_note_overlap(h, off, q->size); /* the bytes it will write */
    if (h->kind == TMEM_HEAP_PLACEMENT) {
        (void)tmem__ivx_insert(&h->live, off, bytes, aliasable ? TMEM__IVX_ALIASABLE : 0, user);
    } else if (aliasable) {
        /* Metal's aliasable-at-creation: live for its owner, bytes reusable now. */
        uint64_t so, ss;
        (void)tmem__ivx_insert(&h->alias, off, q->size, TMEM__IVX_ALIASABLE, user);
        tmem__heap_give_back(h, off, &so, &ss);
    }
    if (!aliasable) {
        h->used += q->size;
        if (h->used > h->peak_used) h->peak_used = h->used;
    }
    h->live_count++;
    if ((q->flags & TMEM_ALLOC_ZERO) && h->ptr) memset(h->ptr + off, 0, q->size);
    tmem__account_alloc(h->type, q->role, q->size);
    tmem__trace(h->ctx, TMEM__TRACE_ALLOC, h->type, q->role, q->size, h->base + off, q->name);
    *out_off = off;
    return TMEM_OK;
}

static tmem_status alloc_entry(tmem_heap *h, const alloc_req *q, uint64_t *out_off) {
    bool locked = tmem__heap_enter(h);
    tmem_status st = alloc_locked(h, q, out_off);
    tmem__heap_leave(h, locked);
    return st;
}

static tmem_status check_align(uint64_t *align) {
    if (!*align) *align = TMEM__HEAP_DEFAULT_ALIGN;
    if (!tmem__is_pow2(*align) || *align > TMEM__HEAP_MAX_ALIGN) return tmem__err(TMEM_E_ALIGNMENT);
    return TMEM_OK;
}

tmem_status tmem_heap_alloc(tmem_heap *heap, uint64_t size, uint64_t alignment, void **out) {
    if (out) *out = NULL;
    if (!tmem__heap_valid(heap) || !out || !size || heap->kind == TMEM_HEAP_PLACEMENT || !heap->ptr)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = check_align(&alignment);
    if (st != TMEM_OK) return st;
    if (size > heap->size) return tmem__err(size >= TMEM__HEAP_MAX_SIZE ? TMEM_E_OVERFLOW : TMEM_E_FULL);
    alloc_req q = {size, alignment, 0, 0, heap->role, NULL};
    uint64_t off = 0; /* set by alloc_entry on success; 0 keeps -O2 maybe-uninitialized quiet */
    st = alloc_entry(heap, &q, &off);
    if (st == TMEM_OK) *out = heap->ptr + off;
    return st;
}

tmem_status tmem_heap_alloc_ex(tmem_heap *heap, const tmem_alloc_desc *desc, tmem_alloc_info *out) {
    if (out) *out = (tmem_alloc_info){TMEM_OFFSET_NONE, 0, NULL};
    if (!tmem__heap_valid(heap) || !desc || !out || !desc->size || (desc->flags & ~TMEM__ALLOC_FLAG_MASK))
        return tmem__err(TMEM_E_INVALID_ARG);
    int32_t role = desc->role == -1 || desc->role == TMEM_ROLE_DEFAULT ? heap->role : desc->role;
    if (role < 0 || role >= TMEM_ROLE_MAX) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t align = desc->alignment;
    tmem_status st = check_align(&align);
    if (st != TMEM_OK) return st;
    if (desc->size > heap->size)
        return tmem__err(desc->size >= TMEM__HEAP_MAX_SIZE ? TMEM_E_OVERFLOW
                                                           : heap->kind == TMEM_HEAP_PLACEMENT ? TMEM_E_INVALID_ARG : TMEM_E_FULL);
    alloc_req q = {desc->size, align, desc->offset, desc->flags, role, desc->name};
    uint64_t off = 0; /* set by alloc_entry on success; 0 keeps -O2 maybe-uninitialized quiet */
    st = alloc_entry(heap, &q, &off);
    if (st == TMEM_OK) *out = (tmem_alloc_info){off, desc->size, heap->ptr ? heap->ptr + off : NULL};
    return st;
}

/* ---- free ---- */

/* Drop the alias record at off; without one, `why` (the allocator's verdict:
 * double free or foreign) stands. */
static tmem_status free_alias(tmem_heap *h, uint64_t off, tmem_status why, uint64_t *user) {
    uint32_t i = h->alias.count ? tmem__ivx_find(&h->alias, off) : TMEM__IVX_NIL;
    if (i == TMEM__IVX_NIL) return why;
    *user = tmem__ivx_at(&h->alias, i)->user;
    tmem__ivx_remove(&h->alias, i);
    return TMEM_OK;
}

static tmem_status free_locked(tmem_heap *h, uint64_t off) {
    uint64_t user = 0, span_off = 0, span_size = 0;
    bool aliasable = false;
    tmem_status st = TMEM_OK;
    switch (h->kind) {
    case TMEM_HEAP_GENERAL: {
        /* one hash lookup; the record index then serves the cache or TLSF */
        uint32_t i = tmem__tlsf_used_index(&h->tlsf, off);
        tmem__tlsf_block *b = i != TMEM__TLSF_NIL ? &h->tlsf.blocks[i] : NULL;
        if (!b || b->user == TMEM__HEAP_CACHED) {
            tmem_status why = b ? tmem__err(TMEM_E_DOUBLE_FREE) : tmem__tlsf_free(&h->tlsf, off, NULL);
            st = free_alias(h, off, why, &user);
            aliasable = true;
            break;
        }
        user = b->user;
        tmem__heap_poison(h, off, b->size);
        if (h->cache && b->size <= TMEM__HEAP_CACHE_MAX) {
            uint32_t c = cache_class(h, b->size);
            if (h->cache->n[c] < TMEM__HEAP_CACHE_DEPTH) {
                b->user = TMEM__HEAP_CACHED;
                h->cache->slot[c][h->cache->n[c]++] = (tmem__heap_cached){off, i, 0};
                break; /* parked: no span to release */
            }
        }
        tmem__tlsf_freed f;
        tmem__tlsf_free_index(&h->tlsf, i, &f);
        span_off = f.span_offset;
        span_size = f.span_size;
        break;
    }
    case TMEM_HEAP_LINEAR: {
        tmem__linear_rec r;
        tmem_status why = tmem__linear_free(&h->lin, off, &r);
        if (why != TMEM_OK) {
            st = free_alias(h, off, why, &user);
            aliasable = true;
            break;
        }
        user = r.user;
        tmem__heap_poison(h, off, r.size);
        break;
    }
    default: {
        uint32_t i = h->live.count ? tmem__ivx_find(&h->live, off) : TMEM__IVX_NIL;
        if (i == TMEM__IVX_NIL) {
            st = tmem__err(tmem__recent_has(&h->recent, off) ? TMEM_E_DOUBLE_FREE : TMEM_E_FOREIGN);
            break;
        }
        tmem__ivx_node *n = tmem__ivx_at(&h->live, i);
        user = n->user;
        aliasable = n->flags & TMEM__IVX_ALIASABLE;
        span_off = n->start;
        span_size = n->end - n->start;
        /* aliasable bytes may belong to a later allocation now: no poison */
        if (!aliasable) tmem__heap_poison(h, off, span_size);
        tmem__ivx_remove(&h->live, i);
        tmem__recent_push(&h->recent, off);
        break;
    }
    }
    if (st != TMEM_OK) return st;
    uint64_t size = tmem__heap_user_size(user);
    int32_t role = tmem__heap_user_role(user);
    if (!aliasable) h->used -= size;
    h->live_count--;
    if (span_size && h->kind != TMEM_HEAP_LINEAR) tmem__heap_release(h, span_off, span_size);
    tmem__account_free(h->type, role, size);
    tmem__trace(h->ctx, TMEM__TRACE_FREE, h->type, role, size, h->base + off, NULL);
    return TMEM_OK;
}

static tmem_status free_entry(tmem_heap *h, uint64_t off) {
    bool locked = tmem__heap_enter(h);
    tmem_status st = free_locked(h, off);
    tmem__heap_leave(h, locked);
    return st;
}

tmem_status tmem_heap_free(tmem_heap *heap, void *ptr) {
    if (!tmem__heap_valid(heap) || !ptr) return tmem__err(TMEM_E_INVALID_ARG);
    uint8_t *p = ptr;
    if (!heap->ptr || p < heap->ptr || p >= heap->ptr + heap->size) return tmem__err(TMEM_E_FOREIGN);
    return free_entry(heap, (uint64_t)(p - heap->ptr));
}

tmem_status tmem_heap_free_offset(tmem_heap *heap, uint64_t offset) {
    if (!tmem__heap_valid(heap)) return tmem__err(TMEM_E_INVALID_ARG);
    if (offset >= heap->size) return tmem__err(TMEM_E_FOREIGN);
    return free_entry(heap, offset);
}

/* ---- walking live allocations ---- */

typedef struct walk_ctx {
    tmem_heap *h;
    tmem__heap_live_fn fn;
    void *arg;
    tmem_status st;
} walk_ctx;

static bool visit_tlsf(void *c, const tmem__tlsf_block *b) {
    walk_ctx *w = c;
    if (!b->is_free && b->user != TMEM__HEAP_CACHED) w->st = w->fn(w->h, b->offset, b->size, b->user, false, w->arg);
    return w->st == TMEM_OK;
}

static bool visit_linear(void *c, uint64_t offset, const tmem__linear_rec *r) {
    walk_ctx *w = c;
    w->st = w->fn(w->h, offset, r->size, r->user, false, w->arg);
    return w->st == TMEM_OK;
}

static bool visit_ivx(void *c, const tmem__ivx_node *n) {
    walk_ctx *w = c;
    w->st = w->fn(w->h, n->start, n->end - n->start, n->user, (n->flags & TMEM__IVX_ALIASABLE) != 0, w->arg);
    return w->st == TMEM_OK;
}

tmem_status tmem__heap_for_each_live(tmem_heap *h, tmem__heap_live_fn fn, void *arg) {
    walk_ctx w = {h, fn, arg, TMEM_OK};
    if (h->kind == TMEM_HEAP_GENERAL) tmem__tlsf_walk(&h->tlsf, visit_tlsf, &w);
    else if (h->kind == TMEM_HEAP_LINEAR) tmem__linear_walk(&h->lin, visit_linear, &w);
    else tmem__ivx_walk(&h->live, visit_ivx, &w);
    if (w.st == TMEM_OK) tmem__ivx_walk(&h->alias, visit_ivx, &w);
    return w.st;
}

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
 * Small sizes (GENERAL; <= 8 KiB on the host, 512 B on devices; alignment
 * <= the granule; the heap's role; not aliasable) come from size-class
 * pages (small.h): an allocation is two
 * count-trailing-zeros in a page's bitmap, a free is a map load, a multiply
 * and a bit set; no TLSF record, no hash. Frees by pointer or offset look
 * the map up first; offsets outside pages go to TLSF's hash.
 *
 * An offset (or pointer) names the newest live allocation at it: an
 * aliasable allocation that gave its bytes back can share its offset with a
 * later allocation, which is freed first.
 */
#include <string.h>
#include "heap/heap_internal.h"

/* ---- metadata by kind ---- */

typedef struct alloc_req {
    uint64_t size, align, offset;
    uint32_t flags;
    int32_t role;
    const char *name;
} alloc_req;

static void give_tlsf(void *ctx, uint32_t index) {
    tmem_heap *h = ctx;
    tmem__tlsf_freed f;
    tmem__tlsf_free_index(&h->tlsf, index, &f);
    tmem__heap_release(h, f.span_offset, f.span_size);
}

void tmem__heap_small_trim(tmem_heap *h) {
    if (tmem__small_on(&h->small)) tmem__small_trim(&h->small, give_tlsf, h);
}

/* A new page for class cls: a page-aligned TLSF block, committed whole.
 * Any failure leaves the heap as it was (the caller falls back to TLSF). */
static bool small_grow(tmem_heap *h, uint32_t cls) {
    uint64_t off, bytes;
    if (tmem__tlsf_alloc(&h->tlsf, TMEM__SMALL_PAGE, TMEM__SMALL_PAGE, TMEM__HEAP_SMALL_PAGE, &off, &bytes) != TMEM_OK)
        return false;
    uint32_t index = tmem__tlsf_used_index(&h->tlsf, off);
    if (tmem__heap_commit(h, off, bytes) == TMEM_OK &&
        tmem__small_add_page(&h->small, cls, off, index) == TMEM_OK)
        return true;
    tmem__tlsf_free_index(&h->tlsf, index, NULL);
    return false;
}

static bool small_take(tmem_heap *h, uint64_t size, uint64_t *off, uint64_t *bytes, uint64_t *where) {
    uint32_t cls = tmem__small_class(&h->small, size);
    if (__builtin_expect(tmem__small_take(&h->small, cls, size, off, bytes, where), 1)) return true;
    return small_grow(h, cls) && tmem__small_take(&h->small, cls, size, off, bytes, where);
}

/* Handle of a TLSF block: bit 63 clear, generation (31 bits, never 0 so no
 * handle is 0), record index. */
static uint64_t tlsf_handle(const tmem_heap *h, uint32_t index) {
    uint64_t gen = h->tlsf.blocks[index].gen & 0x7FFFFFFFu;
    return (gen ? gen : 0x7FFFFFFFu) << 32 | index;
}

/* The handle of what take() reported in *where (page and block, or the
 * TLSF record): generations added while the heap is still entered. */
static uint64_t handle_of(const tmem_heap *h, uint64_t where) {
    if (!(where >> 63)) return tlsf_handle(h, (uint32_t)where);
    uint32_t p = (uint32_t)(where >> 16) & 0xFFFFFFFFu, i = (uint32_t)(where & 0xFFFF);
    return tmem__small_handle(&h->small.pages[p], p, i);
}

/* *where gets the block taken (GENERAL): bit 63 + page + block for a page
 * block, else the TLSF record; handle_of makes a handle of it. */
static tmem_status take(tmem_heap *h, const alloc_req *q, bool small, uint64_t user, uint64_t *off, uint64_t *bytes,
                        uint64_t *where) {
    if (h->kind != TMEM_HEAP_GENERAL) return tmem__linear_alloc(&h->lin, q->size, q->align, user, off, bytes);
    if (small && small_take(h, q->size, off, bytes, where)) return TMEM_OK;
    uint32_t index = 0;
    tmem_status st = tmem__tlsf_alloc_index(&h->tlsf, q->size, q->align, user, off, bytes, &index);
    if (st == TMEM_E_FULL && tmem__small_on(&h->small) && h->small.live_pages) {
        tmem__heap_small_trim(h); /* empty pages may coalesce into room */
        st = tmem__tlsf_alloc_index(&h->tlsf, q->size, q->align, user, off, bytes, &index);
    }
    if (st == TMEM_OK) *where = index;
    return st;
}

bool tmem__heap_live_at(tmem_heap *h, uint64_t off, uint64_t *user, uint64_t *bytes) {
    tmem__small_hit hit;
    switch (tmem__small_on(&h->small) ? tmem__small_lookup(&h->small, off, &hit) : TMEM__SMALL_NONE) {
    case TMEM__SMALL_LIVE:
        *user = tmem__heap_pack(hit.size, h->role);
        *bytes = hit.bytes;
        return true;
    case TMEM__SMALL_NONE: {
        tmem__tlsf_block *b = tmem__tlsf_find_used(&h->tlsf, off);
        if (!b || b->user == TMEM__HEAP_SMALL_PAGE) return false;
        *user = b->user;
        *bytes = b->size;
        return true;
    }
    default: return false;
    }
}

tmem_status tmem__heap_not_live(tmem_heap *h, uint64_t off) {
    tmem__small_hit hit;
    switch (tmem__small_on(&h->small) ? tmem__small_lookup(&h->small, off, &hit) : TMEM__SMALL_NONE) {
    case TMEM__SMALL_FREE: return tmem__err(TMEM_E_DOUBLE_FREE);
    case TMEM__SMALL_NONE: return tmem__tlsf_free(&h->tlsf, off, NULL); /* not used: says why */
    default: return tmem__err(TMEM_E_FOREIGN);
    }
}

/* GENERAL: free the small block of a lookup; *span gets what went back to
 * TLSF (0 bytes when the page stays). */
static void small_give_back(tmem_heap *h, const tmem__small_hit *hit, uint64_t *span_off, uint64_t *span_size) {
    uint32_t index;
    *span_off = *span_size = 0;
    if (!tmem__small_release(&h->small, hit, &index)) return;
    tmem__tlsf_freed f;
    tmem__tlsf_free_index(&h->tlsf, index, &f);
    *span_off = f.span_offset;
    *span_size = f.span_size;
}

void tmem__heap_give_back(tmem_heap *h, uint64_t off, uint64_t *span_off, uint64_t *span_size) {
    tmem_status st;
    tmem__small_hit hit;
    if (h->kind == TMEM_HEAP_GENERAL && tmem__small_on(&h->small) &&
        tmem__small_lookup(&h->small, off, &hit) == TMEM__SMALL_LIVE) {
        small_give_back(h, &hit, span_off, span_size);
        return;
    }
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

/* Arguments are validated; the heap is entered (locked if it must be). */
static tmem_status alloc_locked(tmem_heap *h, const alloc_req *q, uint64_t *out_off, uint64_t *out_where) {
    if (tmem__heap_state(h) != TMEM_PURGEABLE_NON_VOLATILE) return tmem__err(TMEM_E_STATE);
    bool aliasable = q->flags & TMEM_ALLOC_ALIASABLE;
    uint64_t user = tmem__heap_pack(q->size, q->role), off, bytes = q->size;
    tmem_status st;
    if (h->kind == TMEM_HEAP_PLACEMENT) {
        off = q->offset;
        st = place_check(h, off, q->size, q->align);
    } else {
        bool small = h->kind == TMEM_HEAP_GENERAL && tmem__small_fits(&h->small, q->size, q->align) &&
                     q->role == h->role && !aliasable;
        st = aliasable ? tmem__ivx_reserve(&h->alias) : TMEM_OK;
        if (st == TMEM_OK) st = take(h, q, small, user, &off, &bytes, out_where);
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
    tmem__heap_count_alloc(h, q->role, q->size);
    tmem__trace(h->ctx, TMEM__TRACE_ALLOC, h->type, q->role, q->size, h->base + off, q->name);
    *out_off = off;
    return TMEM_OK;
}

/* tmem_heap_alloc of a size pages serve (the heap's role, default flags):
 * a block from the class's partial page, or false when the general path
 * must decide (no partial page, not NON_VOLATILE, a refused commit: it
 * grows a page or uses TLSF, and reports). */
static inline bool alloc_small_fast(tmem_heap *h, uint64_t size, uint64_t *out_off) {
    bool locked = tmem__heap_enter(h);
    uint64_t off = 0, bytes = 0, where = 0;
    uint32_t cls = tmem__small_class(&h->small, size);
    bool ok = tmem__heap_state(h) == TMEM_PURGEABLE_NON_VOLATILE &&
              tmem__small_take(&h->small, cls, size, &off, &bytes, &where);
    bool committed = !ok || tmem__heap_commit(h, off, bytes) == TMEM_OK;
    if (__builtin_expect(!committed, 0)) {
        uint64_t so, ss; /* a page kept empty through a purge: let the general path commit */
        tmem__heap_give_back(h, off, &so, &ss);
        ok = false;
    }
    if (__builtin_expect(ok, 1)) {
        if (h->debug) tmem__heap_note_overlap(h, off, size);
        h->used += size;
        if (h->used > h->peak_used) h->peak_used = h->used;
        h->live_count++;
        tmem__slot_alloc(&h->acct, size);
        tmem__trace(h->ctx, TMEM__TRACE_ALLOC, h->type, h->role, size, h->base + off, NULL);
        *out_off = off;
    }
    tmem__heap_leave(h, locked);
    return ok;
}

/* out_handle NULL: no handle wanted. */
static tmem_status alloc_entry(tmem_heap *h, const alloc_req *q, uint64_t *out_off, uint64_t *out_handle) {
    bool locked = tmem__heap_enter(h);
    uint64_t where = 0;
    tmem_status st = alloc_locked(h, q, out_off, &where);
    if (out_handle && st == TMEM_OK) *out_handle = handle_of(h, where);
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
    if (heap->kind == TMEM_HEAP_BLOCK) return tmem__block_alloc_ptr(heap, size, alignment, out);
    tmem_status st = check_align(&alignment);
    if (st != TMEM_OK) return st;
    uint64_t off = 0; /* set on success; 0 keeps -O2 maybe-uninitialized quiet */
    bool small = tmem__small_fits(&heap->small, size, alignment);
    if (__builtin_expect(small, 1) && alloc_small_fast(heap, size, &off)) {
        *out = heap->ptr + off;
        return TMEM_OK;
    }
    if (size > heap->size) return tmem__err(size >= TMEM__HEAP_MAX_SIZE ? TMEM_E_OVERFLOW : TMEM_E_FULL);
    alloc_req q = {size, alignment, 0, 0, heap->role, NULL};
    st = alloc_entry(heap, &q, &off, NULL);
    if (st == TMEM_OK) *out = heap->ptr + off;
    return st;
}

tmem_status tmem_heap_alloc_handle(tmem_heap *heap, uint64_t size, uint64_t alignment, tmem_alloc_handle *out_handle,
                                   uint64_t *out_offset) {
    if (out_handle) out_handle->value = 0;
    if (out_offset) *out_offset = TMEM_OFFSET_NONE;
    if (!tmem__heap_valid(heap) || !out_handle || !size) return tmem__err(TMEM_E_INVALID_ARG);
    if (heap->kind != TMEM_HEAP_GENERAL) return tmem__err(TMEM_E_UNSUPPORTED);
    tmem_status st = check_align(&alignment);
    if (st != TMEM_OK) return st;
    if (size > heap->size) return tmem__err(size >= TMEM__HEAP_MAX_SIZE ? TMEM_E_OVERFLOW : TMEM_E_FULL);
    alloc_req q = {size, alignment, 0, 0, heap->role, NULL};
    uint64_t off = 0, handle = 0;
    st = alloc_entry(heap, &q, &off, &handle);
    if (st != TMEM_OK) return st;
    out_handle->value = handle;
    if (out_offset) *out_offset = off;
    return TMEM_OK;
}

tmem_status tmem_heap_alloc_ex(tmem_heap *heap, const tmem_alloc_desc *desc, tmem_alloc_info *out) {
    if (out) *out = (tmem_alloc_info){TMEM_OFFSET_NONE, 0, NULL};
    if (!tmem__heap_valid(heap) || !desc || !out || !desc->size || (desc->flags & ~TMEM__ALLOC_FLAG_MASK))
        return tmem__err(TMEM_E_INVALID_ARG);
    if (heap->kind == TMEM_HEAP_BLOCK) return tmem__block_alloc_ex(heap, desc, out);
    int32_t role = desc->role == -1 || desc->role == TMEM_ROLE_DEFAULT ? heap->role : desc->role;
    if (role < 0 || role >= TMEM_ROLE_MAX) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t align = desc->alignment;
    tmem_status st = check_align(&align);
    if (st != TMEM_OK) return st;
    if (desc->size >= TMEM__HEAP_MAX_SIZE) return tmem__err(TMEM_E_OVERFLOW);
    if (desc->size > heap->size)
        return tmem__err(heap->kind == TMEM_HEAP_PLACEMENT ? TMEM_E_INVALID_ARG : TMEM_E_FULL);
    alloc_req q = {desc->size, align, desc->offset, desc->flags, role, desc->name};
    uint64_t off = 0; /* set by alloc_entry on success; 0 keeps -O2 maybe-uninitialized quiet */
    st = alloc_entry(heap, &q, &off, NULL);
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

/* What every free does once the metadata let go: counters, the decommit
 * policy on the span that became free, accounting, trace. */
static inline __attribute__((always_inline)) void free_done(tmem_heap *h, uint64_t off, uint64_t user, bool aliasable,
                                                           uint64_t span_off, uint64_t span_size) {
    uint64_t size = tmem__heap_user_size(user);
    int32_t role = tmem__heap_user_role(user);
    if (!aliasable) h->used -= size;
    h->live_count--;
    if (span_size && h->kind != TMEM_HEAP_LINEAR) tmem__heap_release(h, span_off, span_size);
    tmem__heap_count_free(h, role, size);
    tmem__trace(h->ctx, TMEM__TRACE_FREE, h->type, role, size, h->base + off, NULL);
}

static tmem_status free_locked(tmem_heap *h, uint64_t off) {
    uint64_t user = 0, span_off = 0, span_size = 0;
    bool aliasable = false;
    tmem_status st = TMEM_OK;
    switch (h->kind) {
    case TMEM_HEAP_GENERAL: {
        tmem__small_hit hit;
        tmem__small_find where = TMEM__SMALL_NONE;
        if (tmem__small_on(&h->small)) where = tmem__small_lookup(&h->small, off, &hit);
        if (__builtin_expect(where == TMEM__SMALL_LIVE, 1)) {
            user = tmem__heap_pack(hit.size, h->role);
            tmem__heap_poison(h, off, hit.bytes);
            small_give_back(h, &hit, &span_off, &span_size);
            break;
        }
        /* one hash lookup outside pages; the record index then frees */
        uint32_t i = where == TMEM__SMALL_NONE ? tmem__tlsf_used_index(&h->tlsf, off) : TMEM__TLSF_NIL;
        tmem__tlsf_block *b = i != TMEM__TLSF_NIL ? &h->tlsf.blocks[i] : NULL;
        if (!b || b->user == TMEM__HEAP_SMALL_PAGE) {
            st = free_alias(h, off, tmem__heap_not_live(h, off), &user);
            aliasable = true;
            break;
        }
        user = b->user;
        tmem__heap_poison(h, off, b->size);
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
    free_done(h, off, user, aliasable, span_off, span_size);
    return TMEM_OK;
}

/* The common free: a live block of a page, counted, its page staying. */
static inline bool free_small_fast(tmem_heap *h, uint64_t off) {
    tmem__small_hit hit;
    if (tmem__small_lookup(&h->small, off, &hit) != TMEM__SMALL_LIVE) return false;
    tmem__small_page *pg = &h->small.pages[hit.page];
    /* the page's last block goes the general way (the page may go back to TLSF) */
    if (__builtin_expect(pg->nfree + 1 >= pg->nblocks, 0)) return false;
    if (__builtin_expect(h->debug, 0)) tmem__heap_poison(h, off, hit.bytes);
    uint32_t unused;
    (void)tmem__small_release(&h->small, &hit, &unused);
    h->used -= hit.size;
    h->live_count--;
    tmem__slot_free(&h->acct, hit.size);
    tmem__trace(h->ctx, TMEM__TRACE_FREE, h->type, h->role, hit.size, h->base + off, NULL);
    return true;
}

static tmem_status free_entry(tmem_heap *h, uint64_t off) {
    if (h->kind == TMEM_HEAP_BLOCK) return tmem__block_free(h, off);
    bool locked = tmem__heap_enter(h);
    tmem_status st = TMEM_OK;
    if (!(h->kind == TMEM_HEAP_GENERAL && tmem__small_on(&h->small) && free_small_fast(h, off)))
        st = free_locked(h, off);
    tmem__heap_leave(h, locked);
    return st;
}

tmem_status tmem_heap_free(tmem_heap *heap, void *ptr) {
    if (!ptr) return TMEM_OK; /* as free(NULL) */
    if (!tmem__heap_valid(heap)) return tmem__err(TMEM_E_INVALID_ARG);
    uint8_t *p = ptr;
    if (!heap->ptr || p < heap->ptr || p >= heap->ptr + heap->size) return tmem__err(TMEM_E_FOREIGN);
    return free_entry(heap, (uint64_t)(p - heap->ptr));
}

/* GENERAL: the allocation a handle names, freed with no lookup: its page
 * and block (small) or its TLSF record come out of the handle's bits. */
static tmem_status free_handle_locked(tmem_heap *h, uint64_t handle) {
    uint64_t off, user, span_off = 0, span_size = 0;
    bool foreign = false;
    if (handle >> 63) {
        tmem__small_hit hit;
        if (!tmem__small_on(&h->small) || !tmem__small_resolve(&h->small, handle, &hit, &foreign))
            return tmem__err(foreign || !tmem__small_on(&h->small) ? TMEM_E_FOREIGN : TMEM_E_DOUBLE_FREE);
        off = h->small.pages[hit.page].offset + (uint64_t)hit.index * hit.bytes;
        user = tmem__heap_pack(hit.size, h->role);
        tmem__heap_poison(h, off, hit.bytes);
        small_give_back(h, &hit, &span_off, &span_size);
    } else {
        uint32_t index = (uint32_t)handle, gen = (uint32_t)(handle >> 32);
        if (index >= h->tlsf.top) return tmem__err(index < h->tlsf.inited ? TMEM_E_DOUBLE_FREE : TMEM_E_FOREIGN);
        tmem__tlsf_block *b = &h->tlsf.blocks[index];
        /* the same mapping as tlsf_handle: the generation's low 31 bits, 0 read as all ones */
        uint32_t want = b->gen & 0x7FFFFFFFu;
        if (!b->live || b->is_free || b->user == TMEM__HEAP_SMALL_PAGE || (want ? want : 0x7FFFFFFFu) != gen)
            return tmem__err(TMEM_E_DOUBLE_FREE);
        off = b->offset;
        user = b->user;
        tmem__heap_poison(h, off, b->size);
        tmem__tlsf_freed f;
        tmem__tlsf_free_index(&h->tlsf, index, &f);
        span_off = f.span_offset;
        span_size = f.span_size;
    }
    free_done(h, off, user, false, span_off, span_size);
    return TMEM_OK;
}

tmem_status tmem_heap_free_handle(tmem_heap *heap, tmem_alloc_handle handle) {
    if (!handle.value) return TMEM_OK; /* no handle: nothing to free */
    if (!tmem__heap_valid(heap)) return tmem__err(TMEM_E_INVALID_ARG);
    if (heap->kind != TMEM_HEAP_GENERAL) return tmem__err(TMEM_E_UNSUPPORTED);
    bool locked = tmem__heap_enter(heap);
    tmem_status st = free_handle_locked(heap, handle.value);
    tmem__heap_leave(heap, locked);
    return st;
}

tmem_status tmem_heap_free_offset(tmem_heap *heap, uint64_t offset) {
    if (offset == TMEM_OFFSET_NONE) return TMEM_OK; /* what a failed allocation returned */
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
    if (!b->is_free && b->user != TMEM__HEAP_SMALL_PAGE)
        w->st = w->fn(w->h, b->offset, b->size, b->user, false, w->arg);
    return w->st == TMEM_OK;
}

static bool visit_small(void *c, uint64_t off, uint64_t bytes, uint64_t size) {
    walk_ctx *w = c;
    w->st = w->fn(w->h, off, bytes, tmem__heap_pack(size, w->h->role), false, w->arg);
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
    if (h->kind == TMEM_HEAP_GENERAL) {
        tmem__tlsf_walk(&h->tlsf, visit_tlsf, &w);
        if (w.st == TMEM_OK && tmem__small_on(&h->small)) tmem__small_walk(&h->small, visit_small, &w);
    } else if (h->kind == TMEM_HEAP_LINEAR) tmem__linear_walk(&h->lin, visit_linear, &w);
    else tmem__ivx_walk(&h->live, visit_ivx, &w);
    if (w.st == TMEM_OK) tmem__ivx_walk(&h->alias, visit_ivx, &w);
    return w.st;
}

/*
 * Aliasing (Metal's makeAliasable) and debug poisoning.
 *
 * GENERAL/LINEAR heaps: an aliasable allocation hands its block back to the
 * allocator at once and keeps an alias record (offset, requested size,
 * owner's word)
 * in h->alias, so it stays live for its owner (it must still be freed, and
 * is accounted until then) while later allocations may take its bytes.
 * PLACEMENT heaps keep every allocation in h->live; aliasable ones are
 * simply not "solid" for the overlap check.
 *
 * Debug contexts: freed and aliased bytes are filled with 0xDD, and every
 * new allocation flags the aliasable records it overlaps, which is what
 * tmem_heap_check_alias reports (a read of that allocation now would be a
 * use-after-alias). The flag is exact (interval overlap), not a guess from
 * the poison bytes.
 */
#include <string.h>
#include "heap/heap_internal.h"

void tmem__heap_poison(tmem_heap *h, uint64_t off, uint64_t size) {
    if (!h->debug || !h->ptr || tmem__heap_state(h) != TMEM_PURGEABLE_NON_VOLATILE) return;
    memset(h->ptr + off, TMEM__HEAP_POISON, size);
}

void tmem__heap_note_overlap(tmem_heap *h, uint64_t off, uint64_t size) {
    tmem__ivx *x = h->kind == TMEM_HEAP_PLACEMENT ? &h->live : &h->alias;
    if (x->count) (void)tmem__ivx_mark_overlaps(x, off, off + size);
}

/* GENERAL/LINEAR: hand the block back, keep an alias record. */
static tmem_status alias_block(tmem_heap *h, uint64_t off, uint64_t *user, uint64_t *bytes) {
    if (h->kind == TMEM_HEAP_GENERAL) {
        if (!tmem__heap_live_at(h, off, user, bytes)) *user = *bytes = 0;
    } else {
        tmem__linear_rec *r = tmem__linear_find(&h->lin, off);
        *user = r ? r->user : 0;
        *bytes = r ? r->size : 0;
    }
    if (!*bytes) {
        if (h->alias.count && tmem__ivx_find(&h->alias, off) != TMEM__IVX_NIL) return TMEM_E_EXISTS; /* already */
        /* not live: let the allocator say double free or foreign */
        if (h->kind == TMEM_HEAP_LINEAR) return tmem__linear_free(&h->lin, off, NULL);
        return tmem__heap_not_live(h, off);
    }
    tmem_status st = tmem__ivx_reserve(&h->alias);
    if (st != TMEM_OK) return st;
    /* the record covers the bytes the owner asked for (and may still read) */
    (void)tmem__ivx_insert(&h->alias, off, tmem__heap_user_size(*user), TMEM__IVX_ALIASABLE, *user);
    uint64_t so, ss; /* no decommit: the alias record keeps the bytes readable */
    tmem__heap_give_back(h, off, &so, &ss);
    return TMEM_OK;
}

/* PLACEMENT: flip the node to aliasable. */
static tmem_status alias_placed(tmem_heap *h, uint64_t off, uint64_t *user, uint64_t *bytes) {
    uint32_t i = h->live.count ? tmem__ivx_find(&h->live, off) : TMEM__IVX_NIL;
    if (i == TMEM__IVX_NIL) return tmem__err(tmem__recent_has(&h->recent, off) ? TMEM_E_DOUBLE_FREE : TMEM_E_FOREIGN);
    tmem__ivx_node *n = tmem__ivx_at(&h->live, i);
    if (n->flags & TMEM__IVX_ALIASABLE) return TMEM_E_EXISTS; /* already */
    *user = n->user;
    *bytes = n->end - n->start;
    tmem__ivx_set_flags(&h->live, i, n->flags | TMEM__IVX_ALIASABLE);
    return TMEM_OK;
}

static tmem_status make_aliasable_locked(tmem_heap *h, uint64_t off) {
    uint64_t user = 0, bytes = 0;
    tmem_status st = h->kind == TMEM_HEAP_PLACEMENT ? alias_placed(h, off, &user, &bytes)
                                                    : alias_block(h, off, &user, &bytes);
    if (st == TMEM_E_EXISTS) return TMEM_OK; /* aliasable already: idempotent */
    if (st != TMEM_OK) return st;
    tmem__heap_poison(h, off, bytes);
    h->used -= tmem__heap_user_size(user);
    tmem__trace(h->ctx, TMEM__TRACE_ALIAS, h->type, tmem__heap_user_role(user),
                tmem__heap_user_size(user), h->base + off, NULL);
    return TMEM_OK;
}

tmem_status tmem_heap_make_aliasable(tmem_heap *heap, uint64_t offset) {
    if (!tmem__heap_valid(heap)) return tmem__err(TMEM_E_INVALID_ARG);
    if (heap->kind == TMEM_HEAP_BLOCK) return tmem__err(TMEM_E_UNSUPPORTED);
    if (offset >= heap->size) return tmem__err(TMEM_E_FOREIGN);
    bool locked = tmem__heap_enter(heap);
    tmem_status st = make_aliasable_locked(heap, offset);
    tmem__heap_leave(heap, locked);
    return st;
}

tmem_status tmem_heap_check_alias(tmem_heap *heap, uint64_t offset) {
    if (!tmem__heap_valid(heap)) return tmem__err(TMEM_E_INVALID_ARG);
    if (!heap->debug || heap->kind == TMEM_HEAP_BLOCK) return tmem__err(TMEM_E_UNSUPPORTED);
    if (offset >= heap->size) return tmem__err(TMEM_E_FOREIGN);
    bool locked = tmem__heap_enter(heap);
    tmem_status st = TMEM_OK;
    tmem__ivx *x = heap->kind == TMEM_HEAP_PLACEMENT ? &heap->live : &heap->alias;
    uint32_t i = x->count ? tmem__ivx_find_flagged(x, offset, TMEM__IVX_ALIASABLE) : TMEM__IVX_NIL;
    if (i != TMEM__IVX_NIL) {
        if (tmem__ivx_at(x, i)->flags & TMEM__IVX_OVERLAPPED) st = tmem__err(TMEM_E_OVERLAP);
    } else {
        uint64_t u, b;
        bool live = heap->kind == TMEM_HEAP_GENERAL  ? tmem__heap_live_at(heap, offset, &u, &b)
                    : heap->kind == TMEM_HEAP_LINEAR ? tmem__linear_find(&heap->lin, offset) != NULL
                                                     : tmem__ivx_find(&heap->live, offset) != TMEM__IVX_NIL;
        if (!live) st = tmem__err(TMEM_E_FOREIGN); /* live but not aliasable: never overlapped */
    }
    tmem__heap_leave(heap, locked);
    return st;
}

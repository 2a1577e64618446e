/*
 * Purgeable state (Metal's setPurgeableState) and the reclaim purge.
 *
 * VOLATILE advises the heap's committed pages MADV_FREE: the kernel may drop
 * them under pressure (they then read as zeros) and keeps them otherwise.
 * EMPTY drops them now (MADV_DONTNEED). Both stay committed and charged.
 *
 * Loss detection for MADV_FREE, exact per page: before advising, the first
 * word of every committed page is saved aside and replaced by a non-zero
 * sentinel. Going back to NON_VOLATILE does a compare-and-swap of sentinel
 * -> saved word on each page. A page the kernel dropped reads zero, so the
 * CAS fails and the heap reports lost. A page it kept has the sentinel, and
 * the CAS's locked write re-dirties the page in the same instruction, so the
 * kernel cannot drop it between our check and our restore (a plain read then
 * write could lose the page in between and silently zero the rest of it).
 * Residency (mincore) cannot do this: a read of a dropped page maps the zero
 * page, which counts as resident. Cost: 8 bytes per committed page while
 * VOLATILE, one write and one CAS per page per round trip.
 *
 * Reclaim (tmem__heap_purge_volatile, run by the context when a commit would
 * cross a budget) decommits a VOLATILE or EMPTY heap outright, which is what
 * gives bytes back to the budget; the heap becomes EMPTY and going back to
 * NON_VOLATILE recommits the pages under live allocations (TMEM_E_BUDGET if
 * that no longer fits: the heap stays EMPTY) and reports lost.
 *
 * While not NON_VOLATILE a heap refuses allocations (TMEM_E_STATE); frees,
 * info and destroy work. Device placements: TMEM_E_UNSUPPORTED.
 */
#include "heap/heap_internal.h"
#include "os/os.h"

#define SENTINEL 0x7E3A5E9711DECAFEull

typedef struct sentinel_walk {
    uint64_t k;
    bool lost;
    tmem_purgeable advice;
} sentinel_walk;

static uint64_t os_page(void) { return (uint64_t)tmem__os_page_size(); }

static tmem_status place_run(tmem_heap *h, uint64_t off, uint64_t len, void *arg) {
    sentinel_walk *w = arg;
    for (uint64_t p = off; p < off + len; p += os_page()) {
        uint64_t *word = (uint64_t *)(void *)(h->ptr + p);
        h->saved[w->k++] = *word;
        *word = SENTINEL;
    }
    return TMEM_OK;
}

/* Restore (or check-and-restore) each sentinel page, see the file comment. */
static tmem_status restore_run(tmem_heap *h, uint64_t off, uint64_t len, void *arg) {
    sentinel_walk *w = arg;
    for (uint64_t p = off; p < off + len; p += os_page()) {
        uint64_t *word = (uint64_t *)(void *)(h->ptr + p), expect = SENTINEL;
        if (!__atomic_compare_exchange_n(word, &expect, h->saved[w->k], false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            w->lost = true;
        w->k++;
    }
    return TMEM_OK;
}

static tmem_status advise_run(tmem_heap *h, uint64_t off, uint64_t len, void *arg) {
    const sentinel_walk *w = arg;
    if (w->advice != TMEM_PURGEABLE_VOLATILE && w->advice != TMEM_PURGEABLE_EMPTY) return TMEM_OK;
    bool lazy = w->advice == TMEM_PURGEABLE_VOLATILE;
    tmem__advice adv = lazy ? TMEM__ADVICE_VOLATILE : TMEM__ADVICE_EMPTY;
    return tmem__pool_advise(h->type, h->base + off, len, adv);
}

void tmem__heap_drop_sentinels(tmem_heap *h) {
    if (!h->saved) return;
    tmem__free(h->ctx, h->saved, h->nsaved * sizeof *h->saved);
    h->saved = NULL;
    h->nsaved = 0;
}

static tmem_status to_volatile(tmem_heap *h) {
    h->nsaved = h->committed / os_page();
    if (h->nsaved) {
        h->saved = tmem__malloc(h->ctx, h->nsaved * sizeof *h->saved);
        if (!h->saved) {
            h->nsaved = 0;
            return tmem__err(TMEM_E_NO_MEMORY);
        }
    }
    sentinel_walk w = {0, false, TMEM_PURGEABLE_VOLATILE};
    (void)tmem__heap_committed_runs(h, place_run, &w);
    tmem_status st = tmem__heap_committed_runs(h, advise_run, &w);
    if (st != TMEM_OK) {
        /* Pages advised before the failure may already be gone: restore what
         * is left; the caller sees the error and the heap stays usable. */
        w.k = 0;
        (void)tmem__heap_committed_runs(h, restore_run, &w);
        tmem__heap_drop_sentinels(h);
        return st;
    }
    atomic_store(&h->purgeable, TMEM_PURGEABLE_VOLATILE);
    return TMEM_OK;
}

static tmem_status recommit_live(tmem_heap *h, uint64_t off, uint64_t size, uint64_t user, bool aliasable, void *arg) {
    (void)user;
    (void)aliasable;
    (void)arg;
    return tmem__heap_commit(h, off, size);
}

static tmem_status to_non_volatile(tmem_heap *h, bool *lost) {
    tmem_purgeable cur = tmem__heap_state(h);
    bool dropped = h->lost;
    if (cur == TMEM_PURGEABLE_EMPTY && h->decommitted) {
        tmem_status st = tmem__heap_for_each_live(h, recommit_live, NULL);
        if (st != TMEM_OK) {
            (void)tmem__heap_decommit_all(h); /* back to what purge left */
            return st;
        }
        h->decommitted = false;
    }
    if (cur == TMEM_PURGEABLE_VOLATILE && h->saved) {
        sentinel_walk w = {0, false, TMEM_PURGEABLE_NON_VOLATILE};
        (void)tmem__heap_committed_runs(h, restore_run, &w);
        dropped |= w.lost;
    }
    tmem__heap_drop_sentinels(h);
    h->lost = false;
    if (lost) *lost = dropped;
    atomic_store(&h->purgeable, TMEM_PURGEABLE_NON_VOLATILE);
    return TMEM_OK;
}

static tmem_status to_empty(tmem_heap *h) {
    sentinel_walk w = {0, false, TMEM_PURGEABLE_EMPTY};
    tmem_status st = tmem__heap_committed_runs(h, advise_run, &w);
    if (st != TMEM_OK) return st;
    tmem__heap_drop_sentinels(h);
    h->lost = true;
    atomic_store(&h->purgeable, TMEM_PURGEABLE_EMPTY);
    tmem__trace(h->ctx, TMEM__TRACE_PURGE, h->type, h->role, h->committed, h->base, h->name);
    return TMEM_OK;
}

tmem_status tmem_heap_set_purgeable(tmem_heap *heap, tmem_purgeable state, tmem_purgeable *old_state, bool *lost) {
    if (lost) *lost = false;
    if (!tmem__heap_valid(heap) || state < TMEM_PURGEABLE_KEEP_CURRENT || state > TMEM_PURGEABLE_EMPTY)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem__os_mutex_lock(&heap->lock);
    tmem_purgeable cur = tmem__heap_state(heap);
    tmem_status st = TMEM_OK;
    if (old_state) *old_state = cur;
    if (state == TMEM_PURGEABLE_KEEP_CURRENT || state == cur) {
        /* query, or no change */
    } else if (!heap->ptr || heap->kind == TMEM_HEAP_BLOCK) {
        st = tmem__err(TMEM_E_UNSUPPORTED);
    } else if (state == TMEM_PURGEABLE_NON_VOLATILE) {
        st = to_non_volatile(heap, lost);
    } else if (state == TMEM_PURGEABLE_VOLATILE) {
        if (cur == TMEM_PURGEABLE_NON_VOLATILE) st = to_volatile(heap);
        else atomic_store(&heap->purgeable, TMEM_PURGEABLE_VOLATILE); /* EMPTY: already lost */
    } else {
        st = to_empty(heap);
    }
    tmem__os_mutex_unlock(&heap->lock);
    return st;
}

uint64_t tmem__heap_purge_volatile(tmem_heap *heap) {
    if (!tmem__heap_valid(heap) || tmem__heap_state(heap) == TMEM_PURGEABLE_NON_VOLATILE) return 0;
    if (!tmem__os_mutex_trylock(&heap->lock)) return 0; /* busy: the owner is in it */
    uint64_t bytes = 0;
    if (tmem__heap_state(heap) != TMEM_PURGEABLE_NON_VOLATILE) {
        tmem__heap_drop_sentinels(heap);
        tmem__heap_small_trim(heap);
        bytes = tmem__heap_decommit_all(heap);
        heap->decommitted = true;
        heap->lost = true;
        atomic_store(&heap->purgeable, TMEM_PURGEABLE_EMPTY);
        tmem__trace(heap->ctx, TMEM__TRACE_PURGE, heap->type, heap->role, bytes, heap->base, heap->name);
    }
    tmem__os_mutex_unlock(&heap->lock);
    return bytes;
}

tmem_type *tmem__heap_type(const tmem_heap *heap) { return heap->type; }

bool tmem__heap_extent(const tmem_heap *heap, uint64_t *base, uint64_t *size) {
    if (!tmem__heap_valid(heap)) return false;
    *base = heap->base;
    *size = heap->size;
    return true;
}

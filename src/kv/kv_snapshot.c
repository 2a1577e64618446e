/* Snapshots: copies of a sequence's recurrent state at a token position, in
 * their own type, kept on an LRU list. A hybrid model cannot roll back or
 * reuse a prefix from KV alone (the recurrent layers carry everything before
 * the position in a fixed-size state), so these are what make rollback and
 * fork_at possible. The snapshot budget evicts least recently used first. */
#include <string.h>
#include "core/internal.h"
#include "kv/kv_internal.h"

static void lru_unlink(tmem_kv_cache *c, kv_snaprec *s) {
    if (s->prev) s->prev->next = s->next; else c->lru_head = s->next;
    if (s->next) s->next->prev = s->prev; else c->lru_tail = s->prev;
    s->prev = s->next = NULL;
}

static void lru_push_tail(tmem_kv_cache *c, kv_snaprec *s) {
    s->prev = c->lru_tail;
    s->next = NULL;
    if (c->lru_tail) c->lru_tail->next = s; else c->lru_head = s;
    c->lru_tail = s;
}

void tmem__kv_snap_touch(tmem_kv_cache *c, kv_snaprec *s) {
    lru_unlink(c, s);
    lru_push_tail(c, s);
}

kv_snaprec *tmem__kv_snap_find(tmem_kv_cache *c, uint32_t slot, uint32_t tokens) {
    for (kv_snaprec *s = c->lru_head; s; s = s->next)
        if (s->slot == slot && s->tokens == tokens) return s;
    return NULL;
}

uint64_t tmem__kv_snap_drop(tmem_kv_cache *c, kv_snaprec *s, int reason) {
    lru_unlink(c, s);
    uint64_t bytes = tmem__kv_slab_free(&c->snap_slab, s->off); /* what the budget gets back */
    c->seqs[s->slot].nsnaps--;
    c->nsnaps--;
    c->snap_bytes -= c->snap_slab.slot;
    if (reason >= 0) {
        kv_seqrec *q = &c->seqs[s->slot];
        tmem_kv_event ev = {TMEM_KV_EVENT_SNAPSHOT_DROPPED, (tmem_kv_evict_reason)reason,
                            tmem__kv_seq_handle(c, q), s->id, s->tokens, bytes};
        c->snaps_dropped++;
        tmem__trace(c->ctx, TMEM__TRACE_EVICT, c->snap_type, TMEM_ROLE_RECURRENT_STATE, bytes, 0, "kv snapshot");
        tmem__kv_report(c, &ev);
    }
    tmem__free(c->ctx, s, sizeof *s);
    return bytes;
}

uint64_t tmem__kv_snap_drop_seq(tmem_kv_cache *c, uint32_t slot, uint32_t tokens, bool all) {
    uint64_t freed = 0;
    kv_snaprec *s = c->lru_head;
    while (s && c->seqs[slot].nsnaps) {
        kv_snaprec *next = s->next;
        if (s->slot == slot && (all || s->tokens > tokens)) freed += tmem__kv_snap_drop(c, s, -1);
        s = next;
    }
    return freed;
}

/* Drop the least recently used snapshot the caller may lose; false if none. */
static bool drop_lru(tmem_kv_cache *c, tmem_kv_evict_reason reason) {
    for (kv_snaprec *s = c->lru_head; s; s = s->next)
        if (s != c->protect_snap) {
            (void)tmem__kv_snap_drop(c, s, (int)reason);
            return true;
        }
    return false;
}

tmem_status tmem_kv_snapshot_take(tmem_kv_cache *cache, tmem_kv_seq seq, tmem_kv_snap *out) {
    if (out) *out = TMEM_KV_SNAP_NONE;
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *q;
    kv_snaprec *s = NULL;
    tmem_status st = tmem__kv_seq_get(cache, seq, &q);
    uint64_t n = cache->snap_slab.slot; /* what one snapshot commits */
    if (st == TMEM_OK && !cache->has_state) st = tmem__err(TMEM_E_INVALID_ARG);
    if (st == TMEM_OK && n > cache->snap_budget) st = tmem__err(TMEM_E_BUDGET);
    if (st != TMEM_OK) goto out;
    uint32_t slot = (uint32_t)(q - cache->seqs);
    s = tmem__kv_snap_find(cache, slot, q->tokens);
    if (!s) {
        s = tmem__malloc(cache->ctx, sizeof *s);
        if (!s) {
            st = tmem__err(TMEM_E_NO_MEMORY);
            goto out;
        }
        /* our own budget first, then whatever the type and context allow */
        while (cache->snap_bytes + n > cache->snap_budget && drop_lru(cache, TMEM_KV_REASON_SNAPSHOT_BUDGET)) {}
        uint64_t p = KV_NO_OFF;
        while (((st = tmem__kv_slab_alloc(&cache->snap_slab, &p)) == TMEM_E_BUDGET || st == TMEM_E_FULL) &&
               drop_lru(cache, TMEM_KV_REASON_SNAPSHOT_BUDGET)) {}
        if (st != TMEM_OK) {
            tmem__free(cache->ctx, s, sizeof *s);
            goto out;
        }
        *s = (kv_snaprec){++cache->next_snap_id, slot, q->tokens, p, NULL, NULL};
        lru_push_tail(cache, s);
        q->nsnaps++;
        cache->nsnaps++;
        cache->snap_bytes += n;
    } else {
        tmem__kv_snap_touch(cache, s);
    }
    st = tmem__kv_slab_copy(&cache->snap_slab, s->off, &cache->state_slab, q->state_off, cache->rs.total_bytes);
    if (st != TMEM_OK) {
        /* a snapshot that does not hold the state must not survive */
        (void)tmem__kv_snap_drop(cache, s, -1);
        goto out;
    }
    if (out) *out = s->id;
out:
    tmem__kv_unlock(cache);
    return st;
}

static kv_snaprec *by_id(tmem_kv_cache *c, tmem_kv_snap id) {
    for (kv_snaprec *s = c->lru_head; s; s = s->next)
        if (s->id == id) return s;
    return NULL;
}

tmem_status tmem_kv_snapshot_drop(tmem_kv_cache *cache, tmem_kv_snap snap) {
    if (snap == TMEM_KV_SNAP_NONE) return TMEM_OK; /* no snapshot: nothing to drop */
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_snaprec *s = by_id(cache, snap);
    tmem_status st = s ? TMEM_OK : tmem__err(TMEM_E_NOT_FOUND);
    if (s) (void)tmem__kv_snap_drop(cache, s, -1);
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_snapshot_find(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t tokens, tmem_kv_snap *out) {
    if (out) *out = TMEM_KV_SNAP_NONE;
    if (!cache || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *q;
    tmem_status st = tmem__kv_seq_get(cache, seq, &q);
    if (st == TMEM_OK) {
        kv_snaprec *s = tmem__kv_snap_find(cache, (uint32_t)(q - cache->seqs), tokens);
        if (s) *out = s->id;
        else st = tmem__err(TMEM_E_NOT_FOUND);
    }
    tmem__kv_unlock(cache);
    return st;
}

/* Sequences: handles, block tables, append / truncate / rollback, fork with
 * copy-on-write sharing, and K/V addressing.
 *
 * Invariant (checked by tmem_kv_cache_check): a live sequence of n tokens has
 * exactly ceil(n / block_tokens) table entries, and every block's reference
 * count equals the number of table entries naming it. */
#include <string.h>
#include "core/internal.h"
#include "kv/kv_internal.h"

/* ---- handles ---- */

tmem_kv_seq tmem__kv_seq_handle(const tmem_kv_cache *c, const kv_seqrec *s) {
    return ((uint64_t)s->gen << 32) | (uint64_t)(s - c->seqs + 1);
}

/* Slot of a handle, or NULL when malformed. */
static kv_seqrec *slot_of(tmem_kv_cache *c, tmem_kv_seq h) {
    uint32_t idx = (uint32_t)h;
    if (!idx || idx > c->max_seqs || !(uint32_t)(h >> 32)) return NULL;
    return &c->seqs[idx - 1];
}

tmem_status tmem__kv_seq_get(tmem_kv_cache *c, tmem_kv_seq h, kv_seqrec **out) {
    *out = NULL;
    kv_seqrec *s = slot_of(c, h);
    if (!s) return tmem__err(TMEM_E_INVALID_ARG);
    if (s->gen != (uint32_t)(h >> 32) || s->state == KV_SLOT_FREE) return tmem__err(TMEM_E_NOT_FOUND);
    if (s->state == KV_SLOT_EVICTED) return tmem__err(TMEM_E_STATE);
    *out = s;
    return TMEM_OK;
}

void tmem__kv_seq_touch(tmem_kv_cache *c, kv_seqrec *s) { s->last_use = ++c->clock; }

static uint32_t blocks_for(const tmem_kv_cache *c, uint32_t tokens) {
    if (!c->has_kv) return 0;
    return tokens / c->block_tokens + (tokens % c->block_tokens != 0);
}

/* Room for n table entries (geometric growth). */
static tmem_status table_reserve(tmem_kv_cache *c, kv_seqrec *s, uint32_t n) {
    if (n <= s->cap) return TMEM_OK;
    uint32_t ncap = s->cap ? s->cap : 8;
    while (ncap < n) ncap = ncap > UINT32_MAX / 2 ? n : ncap * 2;
    uint32_t *t = tmem__malloc(c->ctx, (size_t)ncap * sizeof *t);
    if (!t) return tmem__err(TMEM_E_NO_MEMORY);
    if (s->nblocks) memcpy(t, s->table, (size_t)s->nblocks * sizeof *t);
    tmem__free(c->ctx, s->table, (size_t)s->cap * sizeof *t);
    s->table = t;
    s->cap = ncap;
    return TMEM_OK;
}

/* Drop table entries [keep, nblocks); returns bytes given back. */
static uint64_t table_cut(tmem_kv_cache *c, kv_seqrec *s, uint32_t keep) {
    uint64_t freed = 0;
    while (s->nblocks > keep) freed += tmem__kv_block_unref(c, s->table[--s->nblocks]);
    return freed;
}

/* A new block, running the policy once if a budget refuses it. */
static tmem_status block_new(tmem_kv_cache *c, uint32_t *id, uint64_t still_needed) {
    tmem_status st = tmem__kv_block_new(c, id);
    /* a budget, or the carved range, is full: the policy may free slots */
    if ((st == TMEM_E_BUDGET || st == TMEM_E_FULL) &&
        tmem__kv_make_room(c, c->kv_type, still_needed, TMEM_KV_REASON_RECLAIM, st))
        st = tmem__kv_block_new(c, id);
    return st;
}

uint64_t tmem__kv_seq_exclusive_bytes(const tmem_kv_cache *c, const kv_seqrec *s) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->nblocks; i++)
        if (c->blocks[s->table[i]].refs == 1) n += c->kv_slab.slot;
    if (s->state_off != KV_NO_OFF) n += c->state_slab.slot;
    return n + (uint64_t)s->nsnaps * c->snap_slab.slot;
}

/* Give back everything a sequence holds; the slot keeps its handle. */
static uint64_t seq_release(tmem_kv_cache *c, kv_seqrec *s) {
    uint64_t freed = table_cut(c, s, 0);
    tmem__free(c->ctx, s->table, (size_t)s->cap * sizeof *s->table);
    s->table = NULL;
    s->cap = 0;
    freed += tmem__kv_state_free(c, s);
    freed += tmem__kv_snap_drop_seq(c, (uint32_t)(s - c->seqs), 0, true);
    s->tokens = 0;
    s->pinned = false;
    return freed;
}

static void slot_retire(tmem_kv_cache *c, kv_seqrec *s) {
    s->state = KV_SLOT_FREE;
    s->gen = s->gen == UINT32_MAX ? 1 : s->gen + 1;
    s->next_free = c->free_slot;
    c->free_slot = (uint32_t)(s - c->seqs);
}

uint64_t tmem__kv_seq_evict(tmem_kv_cache *c, kv_seqrec *s, tmem_kv_evict_reason reason) {
    tmem_kv_event ev = {TMEM_KV_EVENT_SEQ_EVICTED, reason, tmem__kv_seq_handle(c, s), 0, s->tokens, 0};
    ev.bytes = seq_release(c, s);
    s->state = KV_SLOT_EVICTED;
    c->live--;
    c->evicted++;
    c->seqs_evicted++;
    tmem__trace(c->ctx, TMEM__TRACE_EVICT, c->kv_type, TMEM_ROLE_KV_CACHE, ev.bytes, 0, "kv sequence");
    tmem__kv_report(c, &ev);
    return ev.bytes;
}

void tmem__kv_seqs_fini(tmem_kv_cache *c) {
    for (uint32_t i = 0; i < c->max_seqs; i++)
        if (c->seqs[i].state != KV_SLOT_FREE) (void)seq_release(c, &c->seqs[i]);
}

/* ---- create / free ---- */

/* A fresh LIVE slot whose state is copied from slot `state_src` of
 * `src_slab` (zeroed if NULL). */
static tmem_status seq_new(tmem_kv_cache *c, const kv_slab *src_slab, uint64_t state_src, kv_seqrec **out) {
    *out = NULL;
    if (c->free_slot == KV_NO_ID) return tmem__err(TMEM_E_FULL);
    kv_seqrec *s = &c->seqs[c->free_slot];
    tmem_status st = tmem__kv_state_alloc(c, s, src_slab, state_src);
    if (st != TMEM_OK) return st;
    c->free_slot = s->next_free;
    s->state = KV_SLOT_LIVE;
    s->tokens = s->nblocks = s->cap = s->nsnaps = 0;
    s->table = NULL;
    s->pinned = s->protect = false;
    c->live++;
    tmem__kv_seq_touch(c, s);
    *out = s;
    return TMEM_OK;
}

tmem_status tmem_kv_seq_create(tmem_kv_cache *cache, tmem_kv_seq *out) {
    if (out) *out = TMEM_KV_SEQ_NONE;
    if (!cache || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = seq_new(cache, NULL, KV_NO_OFF, &s);
    if (st == TMEM_OK) *out = tmem__kv_seq_handle(cache, s);
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_seq_free(tmem_kv_cache *cache, tmem_kv_seq seq) {
    if (seq == TMEM_KV_SEQ_NONE) return TMEM_OK; /* no sequence: nothing to free */
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    tmem_status st = TMEM_OK;
    kv_seqrec *s = slot_of(cache, seq);
    uint32_t gen = (uint32_t)(seq >> 32);
    if (!s) st = tmem__err(TMEM_E_INVALID_ARG);
    else if (s->gen != gen || s->state == KV_SLOT_FREE)
        /* an older generation of this slot: that handle was freed already */
        st = tmem__err(gen < s->gen || s->state == KV_SLOT_FREE ? TMEM_E_DOUBLE_FREE : TMEM_E_NOT_FOUND);
    else {
        if (s->state == KV_SLOT_LIVE) {
            (void)seq_release(cache, s);
            cache->live--;
        } else {
            cache->evicted--;
        }
        slot_retire(cache, s);
    }
    tmem__kv_unlock(cache);
    return st;
}

/* ---- growth and shrinking ---- */

tmem_status tmem_kv_seq_append(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t tokens) {
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK && !tokens) st = tmem__err(TMEM_E_INVALID_ARG);
    if (st == TMEM_OK && (tokens > cache->desc.max_tokens || s->tokens > cache->desc.max_tokens - tokens))
        st = tmem__err(TMEM_E_OVERFLOW);
    if (st != TMEM_OK) goto out;
    uint32_t want = blocks_for(cache, s->tokens + tokens), had = s->nblocks;
    st = table_reserve(cache, s, want);
    if (st != TMEM_OK) goto out;
    s->protect = true; /* the policy may run inside block_new: never against us */
    while (s->nblocks < want) {
        uint32_t id;
        uint64_t left = want - s->nblocks, still;
        if (tmem__mul_overflow(left, cache->kv_slab.slot, &still)) still = UINT64_MAX;
        st = block_new(cache, &id, still);
        if (st != TMEM_OK) {
            (void)table_cut(cache, s, had); /* all or nothing */
            break;
        }
        s->table[s->nblocks++] = id;
    }
    s->protect = false;
    if (st == TMEM_OK) {
        s->tokens += tokens;
        tmem__kv_seq_touch(cache, s);
    }
out:
    tmem__kv_unlock(cache);
    return st;
}

static void seq_cut(tmem_kv_cache *c, kv_seqrec *s, uint32_t tokens) {
    (void)table_cut(c, s, blocks_for(c, tokens));
    s->tokens = tokens;
    tmem__kv_snap_drop_seq(c, (uint32_t)(s - c->seqs), tokens, false);
}

tmem_status tmem_kv_seq_truncate(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t tokens) {
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK && tokens > s->tokens) st = tmem__err(TMEM_E_INVALID_ARG);
    if (st == TMEM_OK) {
        seq_cut(cache, s, tokens);
        tmem__kv_seq_touch(cache, s);
    }
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_seq_rollback(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t tokens) {
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK && tokens > s->tokens) st = tmem__err(TMEM_E_INVALID_ARG);
    if (st == TMEM_OK && cache->has_state) {
        kv_snaprec *snap = tmem__kv_snap_find(cache, (uint32_t)(s - cache->seqs), tokens);
        if (snap) {
            st = tmem__kv_slab_copy(&cache->state_slab, s->state_off, &cache->snap_slab, snap->off,
                                    cache->rs.total_bytes);
            if (st == TMEM_OK) tmem__kv_snap_touch(cache, snap);
        } else if (tokens != s->tokens) {
            st = tmem__err(TMEM_E_NOT_FOUND); /* the state cannot be un-run */
        }
    }
    if (st == TMEM_OK) {
        seq_cut(cache, s, tokens);
        tmem__kv_seq_touch(cache, s);
    }
    tmem__kv_unlock(cache);
    return st;
}

/* ---- fork ---- */

tmem_status tmem_kv_seq_fork_at(tmem_kv_cache *cache, tmem_kv_seq src, uint32_t tokens, tmem_kv_seq *out) {
    if (out) *out = TMEM_KV_SEQ_NONE;
    if (!cache || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *p, *s = NULL;
    kv_snaprec *snap = NULL;
    tmem_status st = tmem__kv_seq_get(cache, src, &p);
    if (st == TMEM_OK && tokens > p->tokens) st = tmem__err(TMEM_E_INVALID_ARG);
    if (st == TMEM_OK && cache->has_state) {
        /* same rule as rollback: the snapshot at `tokens` if there is one */
        snap = tmem__kv_snap_find(cache, (uint32_t)(p - cache->seqs), tokens);
        if (!snap && tokens != p->tokens) st = tmem__err(TMEM_E_NOT_FOUND);
    }
    if (st != TMEM_OK) goto out;
    /* Keep the parent and the snapshot we copy from out of the policy's reach. */
    p->protect = true;
    if (snap) cache->protect_snap = snap;
    st = seq_new(cache, snap ? &cache->snap_slab : &cache->state_slab, snap ? snap->off : p->state_off, &s);
    cache->protect_snap = NULL;
    if (st == TMEM_OK) {
        uint32_t nb = blocks_for(cache, tokens);
        st = table_reserve(cache, s, nb);
        if (st == TMEM_OK) {
            for (uint32_t i = 0; i < nb; i++) tmem__kv_block_ref(cache, p->table[i]);
            if (nb) memcpy(s->table, p->table, (size_t)nb * sizeof *s->table);
            s->nblocks = nb;
            s->tokens = tokens;
            if (snap) tmem__kv_snap_touch(cache, snap);
            tmem__kv_seq_touch(cache, p);
            tmem__kv_seq_touch(cache, s);
            *out = tmem__kv_seq_handle(cache, s);
        } else {
            /* the handle was never given out: back on the free list, same generation */
            (void)seq_release(cache, s);
            cache->live--;
            s->state = KV_SLOT_FREE;
            s->next_free = cache->free_slot;
            cache->free_slot = (uint32_t)(s - cache->seqs);
        }
    }
    p->protect = false;
out:
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_seq_fork(tmem_kv_cache *cache, tmem_kv_seq src, tmem_kv_seq *out) {
    if (out) *out = TMEM_KV_SEQ_NONE;
    if (!cache || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *p;
    tmem_status st = tmem__kv_seq_get(cache, src, &p);
    if (st == TMEM_OK) st = tmem_kv_seq_fork_at(cache, src, p->tokens, out);
    tmem__kv_unlock(cache);
    return st;
}

/* ---- addressing ---- */

/* Give the sequence a private copy of table entry i (copy-on-write). */
static tmem_status cow(tmem_kv_cache *c, kv_seqrec *s, uint32_t i) {
    uint32_t old = s->table[i], id;
    s->protect = true;
    tmem_status st = block_new(c, &id, c->kv_slab.slot);
    s->protect = false;
    if (st != TMEM_OK) return st;
    /* The policy may have evicted the other owners meanwhile; copying is
     * still correct then, merely unneeded. */
    st = tmem__kv_slab_copy(&c->kv_slab, c->blocks[id].off, &c->kv_slab, c->blocks[old].off, c->block_bytes);
    if (st != TMEM_OK) {
        (void)tmem__kv_block_unref(c, id); /* nothing changed: the old block stays */
        return st;
    }
    (void)tmem__kv_block_unref(c, old);
    s->table[i] = id;
    c->cow_copies++;
    return TMEM_OK;
}

tmem_status tmem_kv_seq_kv(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t layer, uint32_t token,
                           uint32_t flags, void **k, void **v) {
    if (k) *k = NULL;
    if (v) *v = NULL;
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK && (!cache->has_kv || layer >= cache->desc.kv.layers || token >= s->tokens ||
                          (flags & ~(uint32_t)TMEM_KV_WRITE)))
        st = tmem__err(TMEM_E_INVALID_ARG);
    /* device blocks have no host address: only the copy-on-write is done */
    if (st == TMEM_OK && cache->kv_slab.device && (k || v)) st = tmem__err(TMEM_E_UNSUPPORTED);
    if (st != TMEM_OK) goto out;
    uint32_t bi = token / cache->block_tokens;
    if ((flags & TMEM_KV_WRITE) && cache->blocks[s->table[bi]].refs > 1) {
        st = cow(cache, s, bi);
        if (st != TMEM_OK) goto out;
    }
    tmem__kv_seq_touch(cache, s);
    if (cache->kv_slab.device) goto out;
    /* block: for each layer, block_tokens K rows then block_tokens V rows */
    uint8_t *base = (uint8_t *)tmem__kv_slab_ptr(&cache->kv_slab, cache->blocks[s->table[bi]].off)
                  + (uint64_t)layer * 2 * cache->block_tokens * cache->row_bytes
                  + (uint64_t)(token % cache->block_tokens) * cache->row_bytes;
    if (k) *k = base;
    if (v) *v = base + (uint64_t)cache->block_tokens * cache->row_bytes;
out:
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_seq_blocks(tmem_kv_cache *cache, tmem_kv_seq seq, const uint32_t **ids, uint32_t *count) {
    if (ids) *ids = NULL;
    if (count) *count = 0;
    if (!cache || !ids || !count) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK) {
        *ids = s->table;
        *count = s->nblocks;
    }
    tmem__kv_unlock(cache);
    return st;
}

/* The view of a paged-attention kernel: every block's address, one lock. */
tmem_status tmem_kv_seq_block_ptrs(tmem_kv_cache *cache, tmem_kv_seq seq, void **ptrs, uint32_t cap,
                                   uint32_t *count) {
    if (count) *count = 0;
    if (!cache || !count || (!ptrs && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK && cache->kv_slab.device) st = tmem__err(TMEM_E_UNSUPPORTED);
    if (st == TMEM_OK && s->nblocks > cap) {
        *count = s->nblocks;
        st = tmem__err(TMEM_E_FULL);
    } else if (st == TMEM_OK) {
        for (uint32_t i = 0; i < s->nblocks; i++) {
            const kv_block *b = &cache->blocks[s->table[i]];
            tmem__assert(b->refs > 0);
            ptrs[i] = tmem__kv_slab_ptr(&cache->kv_slab, b->off);
        }
        *count = s->nblocks;
    }
    tmem__kv_unlock(cache);
    return st;
}

/* ---- pin / touch / info ---- */

tmem_status tmem_kv_seq_pin(tmem_kv_cache *cache, tmem_kv_seq seq, bool pinned) {
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK) s->pinned = pinned;
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_seq_touch(tmem_kv_cache *cache, tmem_kv_seq seq) {
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK) tmem__kv_seq_touch(cache, s);
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_seq_get_info(tmem_kv_cache *cache, tmem_kv_seq seq, tmem_kv_seq_info *out) {
    if (out) *out = (tmem_kv_seq_info){0};
    if (!cache || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_E_STATE) {
        out->status = TMEM_KV_SEQ_EVICTED;
        st = TMEM_OK;
    } else if (st == TMEM_OK) {
        out->status = TMEM_KV_SEQ_LIVE;
        out->tokens = s->tokens;
        out->blocks = s->nblocks;
        for (uint32_t i = 0; i < s->nblocks; i++) out->shared_blocks += cache->blocks[s->table[i]].refs > 1;
        out->snapshots = s->nsnaps;
        out->pinned = s->pinned;
        out->exclusive_bytes = tmem__kv_seq_exclusive_bytes(cache, s);
    }
    tmem__kv_unlock(cache);
    return st;
}

/* The device view: every block's heap offset, one lock. */
tmem_status tmem_kv_seq_block_offsets(tmem_kv_cache *cache, tmem_kv_seq seq, uint64_t *offsets, uint32_t cap,
                                      uint32_t *count) {
    if (count) *count = 0;
    if (!cache || !count || (!offsets && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK && s->nblocks > cap) {
        *count = s->nblocks;
        st = tmem__err(TMEM_E_FULL);
    } else if (st == TMEM_OK) {
        for (uint32_t i = 0; i < s->nblocks; i++) offsets[i] = cache->blocks[s->table[i]].off;
        *count = s->nblocks;
    }
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_seq_make_private(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t first, uint32_t count) {
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK && (!cache->has_kv || first > s->tokens || count > s->tokens - first))
        st = tmem__err(TMEM_E_INVALID_ARG);
    if (st == TMEM_OK && count) {
        uint32_t a = first / cache->block_tokens, b = (first + count - 1) / cache->block_tokens;
        for (uint32_t i = a; i <= b && st == TMEM_OK; i++)
            if (cache->blocks[s->table[i]].refs > 1) st = cow(cache, s, i);
        tmem__kv_seq_touch(cache, s);
    }
    tmem__kv_unlock(cache);
    return st;
}

/* The cache object: creation over the KV / state / snapshot types and their
 * pool ranges, the lock, the reclaim registration, stats and the invariant walker. */
#include <string.h>
#include "core/internal.h"
#include "kv/kv_internal.h"

#define KV_DEFAULT_MAX_SEQS 1024u
#define KV_DEFAULT_MAX_TOKENS 0x7FFFFFFFu
#define KV_DEFAULT_RECLAIM_PRIORITY 100

void tmem__kv_lock(tmem_kv_cache *c) {
    tmem__os_mutex_lock(&c->lock);
    c->depth++;
}

void tmem__kv_unlock(tmem_kv_cache *c) {
    c->depth--;
    tmem__os_mutex_unlock(&c->lock);
}

void tmem__kv_report(tmem_kv_cache *c, const tmem_kv_event *ev) {
    if (c->desc.on_evict) c->desc.on_evict(c, ev, c->desc.user);
}

/* The type given, else the role's, else the named default. */
static tmem_status pick_type(tmem_context *ctx, tmem_type *given, tmem_role role, const char *name, tmem_type **out) {
    if (given) {
        if (tmem__type_context(given) != ctx) return tmem__err(TMEM_E_INVALID_ARG);
        *out = given;
        return TMEM_OK;
    }
    if (tmem_role_get_type(ctx, role, out) == TMEM_OK) return TMEM_OK;
    return tmem_type_find(ctx, name, out);
}

/* The snapshot type without side effects: the caller's, or an existing
 * "/memory/snapshots"; *out stays NULL when it would have to be created. */
static bool on_device(const tmem_type *t) { return tmem__type_placement(t) >= TMEM_PLACEMENT_DEVICE; }

/* The default snapshot type's name: the state's placement class decides,
 * since a device state is copied by the device into its snapshots. */
static const char *snap_name(const tmem_type *state) {
    return on_device(state) ? "/memory/device-snapshots" : "/memory/snapshots";
}

static tmem_status find_snap_type(tmem_context *ctx, const tmem_kv_cache_desc *d, tmem_type *state,
                                  tmem_type **out) {
    *out = NULL;
    tmem_status st = TMEM_OK;
    if (d->snapshot_type) st = pick_type(ctx, d->snapshot_type, TMEM_ROLE_RECURRENT_STATE, NULL, out);
    else if (tmem_type_find(ctx, snap_name(state), out) != TMEM_OK) *out = NULL;
    /* state and snapshots are copied into each other: the same side of the bus */
    if (st == TMEM_OK && *out && on_device(*out) != on_device(state)) {
        *out = NULL;
        st = tmem__err(TMEM_E_INVALID_ARG);
    }
    return st;
}

/* Create "/memory/snapshots" (another thread may have just done so). */
static tmem_status create_snap_type(tmem_context *ctx, const tmem_kv_cache_desc *d, tmem_type *state,
                                   tmem_type **out) {
    tmem_type_desc td = {0};
    td.name = snap_name(state);
    td.placement = on_device(state) ? tmem__type_placement(state) : TMEM_PLACEMENT_HOST;
    td.lifetime = TMEM_LIFETIME_GROWING;
    td.budget = d->snapshot_budget;
    /* a cache of recomputable data: reclaimed before the KV it accelerates */
    td.reclaim_priority = -1;
    tmem_status st = tmem_type_create(ctx, &td, out);
    if (st == TMEM_E_EXISTS) st = tmem_type_find(ctx, td.name, out);
    return st;
}

/* Default range of a type's pool for one slab: its budget, else its
 * reserve, split between the slabs that share the type. */
static uint64_t default_range(const tmem_type *t, uint32_t sharing) {
    tmem_type_info info;
    if (tmem_type_get_info(t, &info) != TMEM_OK) return 0;
    return (info.budget ? info.budget : info.reserve) / (sharing ? sharing : 1);
}

static uint32_t slabs_on(const tmem_kv_cache *c, const tmem_type *t) {
    return (c->has_kv && c->kv_type == t) + (c->has_state && c->state_type == t) + (c->has_state && c->snap_type == t);
}

static void slabs_fini(tmem_kv_cache *c) {
    tmem__kv_slab_fini(&c->snap_slab);
    tmem__kv_slab_fini(&c->state_slab);
    tmem__kv_slab_fini(&c->kv_slab);
}

static void cache_free(tmem_kv_cache *c) {
    tmem__kv_seqs_fini(c);
    tmem__kv_blocks_fini(c);
    if (c->seqs) tmem__free(c->ctx, c->seqs, (size_t)c->max_seqs * sizeof *c->seqs);
    slabs_fini(c);
    tmem__os_mutex_destroy(&c->lock);
    tmem__free(c->ctx, c, sizeof *c);
}

static void unregister(tmem_kv_cache *c) {
    /* registered by create, so it is found */
    if (c->reclaim_registered && tmem_context_remove_reclaim(c->ctx, tmem__kv_reclaim_step, c) != TMEM_OK)
        tmem__assert(!"kv reclaim step vanished");
    c->reclaim_registered = false;
}

static void owned_destroy(void *object) {
    tmem_kv_cache *c = object;
    unregister(c);
    cache_free(c);
}

static tmem_status check_desc(const tmem_kv_cache_desc *d) {
    if (d->flags & ~(uint32_t)TMEM_KV_CACHE_FLAG_MASK) return tmem__err(TMEM_E_INVALID_ARG);
    if (!d->kv.layers && !d->recurrent.layers) return tmem__err(TMEM_E_INVALID_ARG);
    if (d->max_tokens > KV_DEFAULT_MAX_TOKENS) return tmem__err(TMEM_E_INVALID_ARG);
    return TMEM_OK;
}

tmem_status tmem_kv_cache_create(tmem_context *ctx, const tmem_kv_cache_desc *desc, tmem_kv_cache **out) {
    if (out) *out = NULL;
    if (!ctx || !desc || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = check_desc(desc);
    if (st != TMEM_OK) return st;
    tmem_kv_cache *c = tmem__calloc(ctx, 1, sizeof *c);
    if (!c) return tmem__err(TMEM_E_NO_MEMORY);
    c->ctx = ctx;
    c->desc = *desc;
    if (!c->desc.max_sequences) c->desc.max_sequences = KV_DEFAULT_MAX_SEQS;
    if (!c->desc.max_tokens) c->desc.max_tokens = KV_DEFAULT_MAX_TOKENS;
    if (!c->desc.reclaim_priority) c->desc.reclaim_priority = KV_DEFAULT_RECLAIM_PRIORITY;
    c->has_kv = desc->kv.layers != 0;
    c->has_state = desc->recurrent.layers != 0;
    if (tmem__os_mutex_init(&c->lock, TMEM__OS_MUTEX_RECURSIVE) != TMEM_OK) {
        tmem__free(ctx, c, sizeof *c);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    (void)tmem__kv_blocks_init(c);

    if (c->has_kv) {
        c->block_tokens = tmem__kv_block_tokens(&desc->kv);
        st = tmem__kv_row_bytes(&desc->kv, &c->row_bytes);
        if (st == TMEM_OK) st = tmem_kv_layout_token_bytes(&desc->kv, &c->token_bytes);
        if (st == TMEM_OK) st = tmem_kv_layout_block_bytes(&desc->kv, &c->block_bytes);
        if (st == TMEM_OK) st = pick_type(ctx, desc->kv_type, TMEM_ROLE_KV_CACHE, "/memory/kv", &c->kv_type);
        if (st != TMEM_OK) goto fail;
    }
    if (c->has_state) {
        st = tmem_recurrent_layout_sizes(&desc->recurrent, &c->rs);
        if (st == TMEM_OK)
            st = pick_type(ctx, desc->state_type, TMEM_ROLE_RECURRENT_STATE, "/memory/state",
                           &c->state_type);
        if (st == TMEM_OK) st = find_snap_type(ctx, desc, c->state_type, &c->snap_type);
        if (st != TMEM_OK) goto fail;
    }
    /* the pool ranges, once every type is known (they may share one) */
    if (c->has_kv) {
        uint64_t r = desc->kv_pool_bytes ? desc->kv_pool_bytes : default_range(c->kv_type, slabs_on(c, c->kv_type));
        st = tmem__kv_slab_init(ctx, &c->kv_slab, c->kv_type, r, c->block_bytes, TMEM_ROLE_KV_CACHE, "kv block");
        if (st != TMEM_OK) goto fail;
    }
    if (c->has_state) {
        uint64_t r = desc->state_pool_bytes
                         ? desc->state_pool_bytes
                         : default_range(c->state_type, slabs_on(c, c->state_type));
        st = tmem__kv_slab_init(ctx, &c->state_slab, c->state_type, r, c->rs.total_bytes,
                                TMEM_ROLE_RECURRENT_STATE, "kv state");
        if (st != TMEM_OK) goto fail;
        /* Only now, once the caller's input has passed every check: a type
         * created by a create that fails stays in the context for good. (A
         * new type is none of the others, so slabs_on above was right.) */
        if (!c->snap_type && (st = create_snap_type(ctx, desc, c->state_type, &c->snap_type)) != TMEM_OK)
            goto fail;
        r = desc->snapshot_budget ? desc->snapshot_budget : default_range(c->snap_type, slabs_on(c, c->snap_type));
        st = tmem__kv_slab_init(ctx, &c->snap_slab, c->snap_type, r, c->rs.total_bytes,
                                TMEM_ROLE_RECURRENT_STATE, "kv snapshot");
        if (st != TMEM_OK) goto fail;
        c->snap_budget = r;
    }

    c->seqs = tmem__calloc(ctx, c->desc.max_sequences, sizeof *c->seqs);
    if (!c->seqs) {
        st = tmem__err(TMEM_E_NO_MEMORY);
        goto fail;
    }
    c->max_seqs = c->desc.max_sequences; /* only now: cache_free walks seqs[0..max_seqs) */
    for (uint32_t i = c->max_seqs; i-- > 0;) {
        c->seqs[i].gen = 1;
        c->seqs[i].state_off = KV_NO_OFF;
        c->seqs[i].next_free = i + 1 < c->max_seqs ? i + 1 : KV_NO_ID;
    }
    c->free_slot = 0;
    if (!(desc->flags & TMEM_KV_CACHE_NO_RECLAIM)) {
        st = tmem_context_add_reclaim(ctx, c->desc.reclaim_priority, tmem__kv_reclaim_step, c);
        if (st != TMEM_OK) goto fail;
        c->reclaim_registered = true;
    }
    st = tmem__context_add_owned(ctx, c, owned_destroy);
    if (st != TMEM_OK) goto fail;
    *out = c;
    return TMEM_OK;
fail:
    unregister(c);
    cache_free(c);
    return st;
}

void tmem_kv_cache_destroy(tmem_kv_cache *cache) {
    if (!cache) return;
    tmem__context_remove_owned(cache->ctx, cache);
    owned_destroy(cache);
}

tmem_status tmem_kv_cache_get_stats(tmem_kv_cache *cache, tmem_kv_cache_stats *out) {
    if (out) *out = (tmem_kv_cache_stats){0};
    if (!cache || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_kv_cache *c = cache;
    tmem__kv_lock(c);
    out->block_bytes = c->block_bytes;
    out->block_slot_bytes = c->kv_slab.slot;
    out->blocks_used = c->blocks_used;
    out->blocks_shared = c->blocks_shared;
    out->kv_bytes_allocated = c->kv_slab.packed ? tmem__kv_slab_committed(&c->kv_slab) : c->blocks_used * c->kv_slab.slot;
    out->state_bytes = c->state_slab.packed ? tmem__kv_slab_committed(&c->state_slab)
                                            : (uint64_t)c->live * c->state_slab.slot;
    out->snapshot_bytes = c->snap_slab.packed ? tmem__kv_slab_committed(&c->snap_slab) : c->snap_bytes;
    out->sequences = c->live;
    out->evicted = c->evicted;
    out->snapshots = c->nsnaps;
    out->cow_copies = c->cow_copies;
    out->seqs_evicted = c->seqs_evicted;
    out->snaps_dropped = c->snaps_dropped;
    /* Tokens held per physical block: the most any owner uses in it, so a
     * shared prefix counts once. */
    uint32_t *fill = c->block_cap ? tmem__calloc(c->ctx, c->block_cap, sizeof *fill) : NULL;
    for (uint32_t i = 0; i < c->max_seqs; i++) {
        const kv_seqrec *s = &c->seqs[i];
        if (s->state != KV_SLOT_LIVE) continue;
        out->block_refs += s->nblocks;
        out->kv_bytes_logical += (uint64_t)s->tokens * c->token_bytes;
        for (uint32_t b = 0; fill && b < s->nblocks; b++) {
            uint32_t used = s->tokens - b * c->block_tokens;
            if (used > c->block_tokens) used = c->block_tokens;
            if (used > fill[s->table[b]]) fill[s->table[b]] = used;
        }
    }
    for (uint32_t i = 0; fill && i < c->block_cap; i++) out->kv_bytes_used += (uint64_t)fill[i] * c->token_bytes;
    tmem_status st = (c->block_cap && !fill) ? tmem__err(TMEM_E_NO_MEMORY) : TMEM_OK;
    if (fill) tmem__free(c->ctx, fill, (size_t)c->block_cap * sizeof *fill);
    tmem__kv_unlock(c);
    return st;
}

/* ---- invariant walker ---- */

static tmem_status check_locked(tmem_kv_cache *c) {
    uint32_t live = 0, evicted = 0, snaps = 0;
    uint64_t used = 0, shared = 0;
    uint32_t *refs = c->block_cap ? tmem__calloc(c->ctx, c->block_cap, sizeof *refs) : NULL;
    if (c->block_cap && !refs) return tmem__err(TMEM_E_NO_MEMORY);
    tmem_status st = TMEM_OK;
#define KV_CHECK(cond) do { if (!(cond)) { st = tmem__err(TMEM_E_CORRUPT); goto out; } } while (0)
    for (uint32_t i = 0; i < c->max_seqs; i++) {
        const kv_seqrec *s = &c->seqs[i];
        KV_CHECK(s->gen != 0);
        if (s->state == KV_SLOT_FREE) continue;
        if (s->state == KV_SLOT_EVICTED) {
            evicted++;
            KV_CHECK(!s->nblocks && !s->tokens && s->state_off == KV_NO_OFF && !s->nsnaps);
            continue;
        }
        live++;
        KV_CHECK(s->tokens <= c->desc.max_tokens);
        uint32_t want = c->has_kv ? s->tokens / c->block_tokens + (s->tokens % c->block_tokens != 0) : 0;
        KV_CHECK(s->nblocks == want && s->nblocks <= s->cap);
        KV_CHECK(c->has_state == (s->state_off != KV_NO_OFF));
        KV_CHECK(!s->protect);
        for (uint32_t b = 0; b < s->nblocks; b++) {
            KV_CHECK(s->table[b] < c->block_cap);
            refs[s->table[b]]++;
        }
    }
    for (uint32_t i = 0; i < c->block_cap; i++) {
        KV_CHECK(refs[i] == c->blocks[i].refs);
        KV_CHECK((refs[i] != 0) == (c->blocks[i].off != KV_NO_OFF));
        used += refs[i] != 0;
        shared += refs[i] > 1;
    }
    KV_CHECK(used == c->blocks_used && shared == c->blocks_shared);
    KV_CHECK(live == c->live && evicted == c->evicted);
    uint32_t free_ids = 0;
    for (uint32_t id = c->free_id; id != KV_NO_ID; id = c->blocks[id].next_free) {
        KV_CHECK(id < c->block_cap && c->blocks[id].refs == 0 && ++free_ids <= c->block_cap);
    }
    KV_CHECK(free_ids + used == c->block_cap);
    const kv_snaprec *prev = NULL;
    for (const kv_snaprec *s = c->lru_head; s; prev = s, s = s->next) {
        KV_CHECK(s->prev == prev && s->slot < c->max_seqs);
        const kv_seqrec *q = &c->seqs[s->slot];
        KV_CHECK(q->state == KV_SLOT_LIVE && s->tokens <= q->tokens);
        KV_CHECK(++snaps <= c->nsnaps);
    }
    KV_CHECK(prev == c->lru_tail && snaps == c->nsnaps);
    KV_CHECK(c->snap_bytes == (uint64_t)snaps * c->snap_slab.slot);
    KV_CHECK(c->kv_slab.live == used && c->snap_slab.live == snaps);
    KV_CHECK(c->state_slab.live == (c->has_state ? live : 0));
    for (uint32_t i = 0; i < c->max_seqs; i++) {
        uint32_t n = 0;
        for (const kv_snaprec *s = c->lru_head; s; s = s->next) n += s->slot == i;
        KV_CHECK(n == c->seqs[i].nsnaps);
    }
#undef KV_CHECK
out:
    if (refs) tmem__free(c->ctx, refs, (size_t)c->block_cap * sizeof *refs);
    return st;
}

tmem_status tmem_kv_cache_check(tmem_kv_cache *cache) {
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    tmem_status st = check_locked(cache);
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_cache_get_device(tmem_kv_cache *cache, tmem_kv_device_info *out) {
    if (out) *out = (tmem_kv_device_info){0};
    if (!cache || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    tmem_kv_cache *c = cache;
    out->kv_heap = c->kv_slab.heap;
    out->state_heap = c->state_slab.heap;
    out->snapshot_heap = c->snap_slab.heap;
    out->kv_device = c->has_kv && c->kv_slab.device;
    out->state_device = c->has_state && c->state_slab.device;
    out->block_bytes = c->block_bytes;
    out->block_stride = c->kv_slab.slot;
    out->blocks_per_memory = c->kv_slab.packed ? c->kv_slab.per : 1;
    out->memory_bytes = c->kv_slab.packed ? c->kv_slab.stride : c->kv_slab.slot;
    out->state_bytes = c->rs.total_bytes;
    out->state_stride = c->state_slab.slot;
    tmem__kv_unlock(cache);
    return TMEM_OK;
}

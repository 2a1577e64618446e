/* Admission and eviction policy.
 *
 * Order (configurable by flags): drop snapshots least recently used first
 * (they are a cache: losing one costs a recompute, never correctness), then
 * evict whole sequences least recently used (never the requester, a pinned
 * sequence, or one an operation is working on), then look for a smaller
 * prefill chunk. Admission plans on a copy of the reference counts first
 * and evicts nothing when even the whole plan would not make the request
 * fit. Every drop and eviction is reported through the cache's callback. */
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "kv/kv_internal.h"

/* ---- room in the budgets ---- */

static uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

/* Bytes the type may still commit (UINT64_MAX without an own budget). */
static uint64_t type_room(const tmem_type *t) {
    tmem_type_info info;
    tmem_type_stats st;
    if (tmem_type_get_info(t, &info) != TMEM_OK || tmem_type_get_stats(t, &st) != TMEM_OK) return 0;
    return info.budget ? sat_sub(info.budget, st.committed.current) : UINT64_MAX;
}

static uint64_t ctx_room(tmem_context *ctx) {
    tmem_budget_info b;
    return tmem_context_budget(ctx, &b) == TMEM_OK ? b.available : 0;
}

/* Room left in a slab's carved range (it is a limit too). */
static uint64_t slab_room(const kv_slab *s) {
    return (uint64_t)(s->nslots - s->live) * s->slot;
}

/* ---- candidates ---- */

typedef struct cand {
    uint64_t last_use;
    uint32_t slot;
    bool pick;           /* chosen by the last simulation */
} cand;

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    return x->last_use < y->last_use ? -1 : x->last_use > y->last_use;
}

static bool evictable(const kv_seqrec *s) { return s->state == KV_SLOT_LIVE && !s->pinned && !s->protect; }

/* Live, unpinned, unprotected sequences, least recently used first.
 * *out is NULL with n 0 when there are none. */
static tmem_status candidates(tmem_kv_cache *c, cand **out, uint32_t *n) {
    *out = NULL;
    *n = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < c->max_seqs; i++) k += evictable(&c->seqs[i]);
    if (!k) return TMEM_OK;
    cand *a = tmem__malloc(c->ctx, (size_t)k * sizeof *a);
    if (!a) return tmem__err(TMEM_E_NO_MEMORY);
    k = 0;
    for (uint32_t i = 0; i < c->max_seqs; i++)
        if (evictable(&c->seqs[i])) a[k++] = (cand){c->seqs[i].last_use, i, false};
    qsort(a, k, sizeof *a, cand_cmp);
    *out = a;
    *n = k;
    return TMEM_OK;
}

/* ---- reactive: our own allocation hit a budget ---- */

uint64_t tmem__kv_make_room(tmem_kv_cache *c, tmem_type *type, uint64_t needed,
                            tmem_kv_evict_reason reason, tmem_status why) {
    uint64_t freed = 0;
    uint32_t flags = c->desc.flags;
    /* Snapshots help when the context budget binds, or when they share the
     * type whose budget binds; never when a carved range is full (they
     * live in their own range). */
    bool type_binds = type && type_room(type) < needed;
    bool snaps_help = why != TMEM_E_FULL && (!type || type == c->snap_type || !type_binds);
    if (!(flags & TMEM_KV_POLICY_KEEP_SNAPSHOTS) && snaps_help) {
        kv_snaprec *s = c->lru_head;
        while (s && freed < needed) {
            kv_snaprec *next = s->next;
            if (s != c->protect_snap) freed += tmem__kv_snap_drop(c, s, (int)reason);
            s = next;
        }
    }
    if (freed >= needed || (flags & TMEM_KV_POLICY_NO_EVICT) ||
        (type && type == c->snap_type && type != c->kv_type && type != c->state_type))
        return freed;
    cand *a;
    uint32_t n;
    if (candidates(c, &a, &n) != TMEM_OK) return freed;
    /* LRU order; first pass skips sequences whose memory is all shared with
     * others (evicting them alone gives nothing back), the second takes
     * them too: by then their co-owners may be gone */
    for (int pass = 0; pass < 2 && freed < needed; pass++)
        for (uint32_t i = 0; i < n && freed < needed; i++) {
            kv_seqrec *s = &c->seqs[a[i].slot];
            if (evictable(s) && (pass || tmem__kv_seq_exclusive_bytes(c, s)))
                freed += tmem__kv_seq_evict(c, s, reason);
        }
    if (a) tmem__free(c->ctx, a, (size_t)n * sizeof *a);
    return freed;
}

uint64_t tmem__kv_reclaim_step(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user) {
    tmem_kv_cache *c = user;
    (void)ctx;
    /* Another thread is inside the cache: skip rather than wait. */
    if (!tmem__os_mutex_trylock(&c->lock)) return 0;
    uint64_t freed = 0;
    /* depth > 0: we were called from inside one of our own commits; that
     * operation runs the policy itself once the commit has returned (the
     * slab is in the middle of handing out a slot). */
    bool ours = !type || type == c->kv_type || type == c->state_type || type == c->snap_type;
    if (c->depth == 0 && (ours || ctx_room(c->ctx) < needed)) {
        c->depth++;
        freed = tmem__kv_make_room(c, ours ? type : NULL, needed, TMEM_KV_REASON_RECLAIM, TMEM_OK);
        c->depth--;
    }
    tmem__os_mutex_unlock(&c->lock);
    return freed;
}

tmem_status tmem_kv_cache_reclaim(tmem_kv_cache *cache, uint64_t bytes, uint64_t *freed) {
    if (freed) *freed = 0;
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    uint64_t f = tmem__kv_make_room(cache, NULL, bytes, TMEM_KV_REASON_RECLAIM, TMEM_OK);
    tmem__kv_unlock(cache);
    if (freed) *freed = f;
    return f >= bytes ? TMEM_OK : tmem__err(TMEM_E_BUDGET);
}

/* ---- admission: plan, then act ---- */

/* What a request still needs, per budget (0 = satisfied). */
typedef struct deficit { uint64_t kv, state, ctx; } deficit;

typedef struct need {
    uint64_t kv, state;      /* new committed bytes in the KV and state types */
    uint64_t kv_room, state_room, ctx_room;
} need;

static deficit deficits(const tmem_kv_cache *c, const need *nd, uint64_t other) {
    deficit d;
    uint64_t kv_new = nd->kv, st_new = nd->state;
    if (c->kv_type == c->state_type && c->has_kv && c->has_state) {
        /* one type: one budget for both */
        d.kv = sat_sub(sat_add(kv_new, st_new), nd->kv_room);
        d.state = 0;
    } else {
        d.kv = sat_sub(kv_new, nd->kv_room);
        d.state = sat_sub(st_new, nd->state_room);
    }
    d.ctx = sat_sub(sat_add(sat_add(kv_new, st_new), other), nd->ctx_room);
    return d;
}

static bool met(deficit d) { return !d.kv && !d.state && !d.ctx; }

/* The plan: drop the first `snaps` LRU snapshots, evict the candidates
 * marked `pick`. */
typedef struct plan { uint32_t snaps, seqs; uint64_t gain; } plan;

/* Simulate the policy on copies of the counts, marking the candidates it
 * would evict. `refs` is scratch of block_cap entries. false when the
 * request cannot fit. */
static bool simulate(tmem_kv_cache *c, deficit d, cand *a, uint32_t na, uint32_t *refs, plan *p) {
    *p = (plan){0, 0, 0};
    for (uint32_t i = 0; i < na; i++) a[i].pick = false;
    uint32_t flags = c->desc.flags;
    bool snap_in_kv = c->snap_type == c->kv_type, snap_in_state = c->snap_type == c->state_type;
    uint64_t sb = c->snap_slab.slot, stb = c->state_slab.slot, bb = c->kv_slab.slot;
    if (met(d)) return true;
    if (!(flags & TMEM_KV_POLICY_KEEP_SNAPSHOTS)) {
        for (kv_snaprec *s = c->lru_head; s && !met(d); s = s->next) {
            if (!d.ctx && !(snap_in_kv && d.kv) && !(snap_in_state && d.state)) break; /* would not help */
            p->snaps++;
            p->gain += sb;
            d.ctx = sat_sub(d.ctx, sb);
            if (snap_in_kv) d.kv = sat_sub(d.kv, sb);
            else if (snap_in_state) d.state = sat_sub(d.state, sb);
        }
    }
    if (met(d)) return true;
    if (flags & TMEM_KV_POLICY_NO_EVICT) return false;
    for (uint32_t i = 0; i < c->block_cap; i++) refs[i] = c->blocks[i].refs;
    /* as tmem__kv_make_room: LRU, sequences that would give nothing back
     * only in the second pass */
    for (int pass = 0; pass < 2 && !met(d); pass++)
    for (uint32_t i = 0; i < na && !met(d); i++) {
        if (a[i].pick) continue;
        const kv_seqrec *s = &c->seqs[a[i].slot];
        uint64_t kv = 0, st = s->state_off != KV_NO_OFF ? stb : 0, snaps = 0;
        for (uint32_t b = 0; b < s->nblocks; b++)
            if (refs[s->table[b]] == 1) kv += bb;
        /* its snapshots not already counted by the snapshot pass */
        uint32_t k = 0;
        for (kv_snaprec *q = c->lru_head; q; q = q->next, k++)
            if (k >= p->snaps && q->slot == a[i].slot) snaps += sb;
        if (!pass && !(kv + st + snaps)) continue;
        for (uint32_t b = 0; b < s->nblocks; b++) refs[s->table[b]]--;
        a[i].pick = true;
        p->seqs++;
        p->gain += kv + st + snaps;
        if (c->kv_type == c->state_type && c->has_kv && c->has_state) d.kv = sat_sub(d.kv, kv + st);
        else {
            d.kv = sat_sub(d.kv, kv);
            d.state = sat_sub(d.state, st);
        }
        if (snap_in_kv) d.kv = sat_sub(d.kv, snaps);
        else if (snap_in_state) d.state = sat_sub(d.state, snaps);
        d.ctx = sat_sub(d.ctx, kv + st + snaps);
    }
    return met(d);
}

static uint64_t other_bytes(const tmem_kv_request *r, uint32_t chunk) {
    if (r->estimate) return r->estimate(r, chunk, r->estimate_user);
    uint64_t img = sat_mul(sat_mul(r->image_width, r->image_height), 3);
    return sat_add(sat_add(r->extra_bytes, img), sat_mul(chunk, r->activation_bytes_per_token));
}

/* Largest chunk in [1, hi] for which fits() holds; 0 if none. Assumes the
 * estimate grows with the chunk. */
typedef struct search {
    tmem_kv_cache *c;
    const tmem_kv_request *r;
    const need *nd;
    cand *a;
    uint32_t na;
    uint32_t *refs;
    bool allow_policy;
} search;

static bool fits(search *s, uint32_t chunk, plan *p) {
    deficit d = deficits(s->c, s->nd, other_bytes(s->r, chunk));
    if (!s->allow_policy) {
        *p = (plan){0, 0, 0};
        return met(d);
    }
    return simulate(s->c, d, s->a, s->na, s->refs, p);
}

static uint32_t largest_chunk(search *s, uint32_t hi) {
    uint32_t lo = 1, best = 0;
    plan p;
    while (lo <= hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (fits(s, mid, &p)) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

static void execute(tmem_kv_cache *c, const plan *p, const cand *a, uint32_t na, tmem_kv_admission *res) {
    for (uint32_t i = 0; i < p->snaps && c->lru_head; i++) {
        res->freed_bytes += tmem__kv_snap_drop(c, c->lru_head, TMEM_KV_REASON_ADMISSION);
        res->snapshots_dropped++;
    }
    for (uint32_t i = 0; i < na; i++) {
        kv_seqrec *s = &c->seqs[a[i].slot];
        if (!a[i].pick || !evictable(s)) continue;
        res->freed_bytes += tmem__kv_seq_evict(c, s, TMEM_KV_REASON_ADMISSION);
        res->sequences_evicted++;
    }
}

tmem_status tmem_kv_admit(tmem_kv_cache *cache, const tmem_kv_request *req, tmem_kv_admission *out) {
    tmem_kv_admission res = {0};
    if (out) *out = res;
    if (!cache || !req || !req->context_tokens) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    tmem_kv_cache *c = cache;
    kv_seqrec *s = NULL;
    cand *a = NULL;
    uint32_t na = 0, *refs = NULL;
    tmem_status st = TMEM_OK;
    if (req->seq != TMEM_KV_SEQ_NONE) {
        st = tmem__kv_seq_get(c, req->seq, &s);
        if (st == TMEM_OK && req->context_tokens < s->tokens) st = tmem__err(TMEM_E_INVALID_ARG);
    }
    if (st == TMEM_OK && req->context_tokens > c->desc.max_tokens) st = tmem__err(TMEM_E_OVERFLOW);
    if (st != TMEM_OK) goto done;

    need nd = {0};
    if (c->has_kv) {
        uint64_t want = req->context_tokens / c->block_tokens + (req->context_tokens % c->block_tokens != 0);
        uint64_t have = s ? s->nblocks : 0;
        uint64_t blocks = sat_sub(want, have);
        /* growing into a shared partial last block copies it on the first write */
        if (s && s->nblocks && s->tokens % c->block_tokens && req->context_tokens > s->tokens &&
            c->blocks[s->table[s->nblocks - 1]].refs > 1)
            blocks++;
        nd.kv = sat_mul(blocks, c->kv_slab.slot);
        uint64_t tr = type_room(c->kv_type), sr = slab_room(&c->kv_slab);
        nd.kv_room = tr < sr ? tr : sr;
    }
    if (c->has_state && !s) {
        nd.state = c->state_slab.slot;
        uint64_t tr = type_room(c->state_type), sr = slab_room(&c->state_slab);
        nd.state_room = tr < sr ? tr : sr;
    }
    nd.ctx_room = ctx_room(c->ctx);
    uint32_t chunk = req->prefill_chunk && req->prefill_chunk < req->context_tokens
                         ? req->prefill_chunk
                         : req->context_tokens;

    if (s) s->protect = true;
    st = candidates(c, &a, &na);
    if (st == TMEM_OK && c->block_cap) {
        refs = tmem__malloc(c->ctx, (size_t)c->block_cap * sizeof *refs);
        if (!refs) st = tmem__err(TMEM_E_NO_MEMORY);
    }
    if (st != TMEM_OK) goto done;
    search sr = {c, req, &nd, a, na, refs, false};
    plan p = {0, 0, 0};
    uint32_t use = 0;
    if (fits(&sr, chunk, &p)) {
        use = chunk;
    } else if ((c->desc.flags & TMEM_KV_POLICY_CHUNK_FIRST) && chunk > 1) {
        use = largest_chunk(&sr, chunk - 1);
    }
    if (!use) {
        sr.allow_policy = true;
        use = fits(&sr, chunk, &p) ? chunk : chunk > 1 ? largest_chunk(&sr, chunk - 1) : 0;
        /* the picks of the last simulation may be for another chunk: redo */
        if (use && !fits(&sr, use, &p)) use = 0;
    }
    res.kv_bytes = nd.kv;
    res.state_bytes = nd.state;
    res.other_bytes = other_bytes(req, use ? use : chunk);
    if (use) {
        execute(c, &p, a, na, &res);
        res.admitted = true;
        res.prefill_chunk = use;
    } else {
        st = tmem__err(TMEM_E_BUDGET);
    }
    res.available_bytes = ctx_room(c->ctx);
    if (out) *out = res;
done:
    if (s) s->protect = false;
    if (a) tmem__free(c->ctx, a, (size_t)na * sizeof *a);
    if (refs) tmem__free(c->ctx, refs, (size_t)c->block_cap * sizeof *refs);
    tmem__kv_unlock(cache);
    return st;
}

/*
 * Pools: the address range a type reserved, committed page by page.
 *
 * A pool knows which granules (pages, or huge pages for HUGE_PAGES types) are
 * committed through a two-level bitmap, so a commit charges only the pages
 * that are new and a decommit uncharges only the pages that were there; the
 * popcount of the bitmap always equals the pool's share of the type's
 * committed counter (tmem_context_check verifies it). Heaps take sub-ranges
 * of the pool with carve/uncarve (first fit, kept coalesced) and never see
 * the backend. Everything here runs under the context lock.
 */
#include <string.h>
#include "core/core.h"

/* ---- bitmap ---- */

static uint64_t *word_of(const tmem__pool *p, uint64_t page) {
    uint64_t *leaf = p->leaves[page / TMEM__LEAF_BITS];
    return leaf ? &leaf[(page % TMEM__LEAF_BITS) / 64] : NULL;
}

/* First page in [from, end) whose bit equals `want`, or end. */
static uint64_t find_next(const tmem__pool *p, uint64_t from, uint64_t end, bool want) {
    uint64_t pg = from;
    while (pg < end) {
        const uint64_t *w = word_of(p, pg);
        if (!w) {
            if (!want) return pg;
            pg = (pg / TMEM__LEAF_BITS + 1) * TMEM__LEAF_BITS; /* empty leaf: skip it */
            continue;
        }
        uint64_t bits = want ? *w : ~*w;
        bits &= ~0ull << (pg % 64);
        if (bits) {
            uint64_t r = pg - pg % 64 + (uint64_t)__builtin_ctzll(bits);
            return r < end ? r : end;
        }
        pg = pg - pg % 64 + 64;
    }
    return end;
}

static uint64_t count_set(const tmem__pool *p, uint64_t a, uint64_t b) {
    uint64_t n = 0;
    while (a < b) {
        const uint64_t *w = word_of(p, a);
        uint64_t lim = a - a % 64 + 64;
        if (!w) {
            a = (a / TMEM__LEAF_BITS + 1) * TMEM__LEAF_BITS;
            continue;
        }
        uint64_t hi = lim < b ? lim : b;
        uint64_t mask = ~0ull << (a % 64);
        if (hi % 64) mask &= ~(~0ull << (hi % 64));
        n += (uint64_t)__builtin_popcountll(*w & mask);
        a = hi;
    }
    return n;
}

/* Allocate the leaves covering [a, b) so setting bits cannot fail. */
static tmem_status ensure_leaves(tmem_context *ctx, tmem__pool *p, uint64_t a, uint64_t b) {
    if (a >= b) return TMEM_OK;
    for (uint64_t l = a / TMEM__LEAF_BITS; l <= (b - 1) / TMEM__LEAF_BITS; l++) {
        if (p->leaves[l]) continue;
        p->leaves[l] = tmem__calloc(ctx, TMEM__LEAF_WORDS, sizeof(uint64_t));
        if (!p->leaves[l]) return tmem__err(TMEM_E_NO_MEMORY);
    }
    return TMEM_OK;
}

/* Set or clear bits [a, b); the leaves must exist. Returns bits changed. */
static uint64_t assign_bits(tmem__pool *p, uint64_t a, uint64_t b, bool set) {
    uint64_t changed = 0;
    while (a < b) {
        uint64_t *w = word_of(p, a);
        uint64_t lim = a - a % 64 + 64;
        uint64_t hi = lim < b ? lim : b;
        if (!w) { /* clearing an absent leaf: nothing there */
            tmem__assert_internal(!set);
            a = hi;
            continue;
        }
        uint64_t mask = ~0ull << (a % 64);
        if (hi % 64) mask &= ~(~0ull << (hi % 64));
        uint64_t old = *w;
        *w = set ? old | mask : old & ~mask;
        uint64_t d = (uint64_t)__builtin_popcountll(old ^ *w);
        uint32_t *lc = &p->leaf_count[a / TMEM__LEAF_BITS];
        *lc = set ? *lc + (uint32_t)d : *lc - (uint32_t)d;
        changed += d;
        a = hi;
    }
    return changed;
}

/* ---- init / release ---- */

tmem_status tmem__pool_init(tmem_type *type, uint64_t size) {
    tmem_context *ctx = type->ctx;
    tmem__pool *p = &type->pool;
    memset(p, 0, sizeof *p);
    tmem__context_lock(ctx);
    p->backend = ctx->backends[type->placement];
    tmem__context_unlock(ctx);
    if (!p->backend) return tmem__err(TMEM_E_UNSUPPORTED);
    tmem_status st = p->backend->reserve(p->backend, type->placement, type->flags, size, &p->region);
    if (st != TMEM_OK) return st;
    tmem__assert(tmem__is_pow2(p->region.granule));
    if (p->region.base_align < p->region.granule) p->region.base_align = p->region.granule;
    p->host_base = p->region.base;
    p->granule_shift = (uint32_t)__builtin_ctzll(p->region.granule);
    p->pages = p->region.size >> p->granule_shift;
    p->nleaves = (size_t)((p->pages + TMEM__LEAF_BITS - 1) / TMEM__LEAF_BITS);
    p->leaves = tmem__calloc(ctx, p->nleaves ? p->nleaves : 1, sizeof *p->leaves);
    p->leaf_count = tmem__calloc(ctx, p->nleaves ? p->nleaves : 1, sizeof *p->leaf_count);
    p->capfree = 4;
    p->free = tmem__malloc(ctx, p->capfree * sizeof *p->free);
    if (!p->leaves || !p->leaf_count || !p->free) {
        tmem__pool_release(type);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    if (p->region.size) p->free[p->nfree++] = (tmem__range){0, p->region.size};
    return TMEM_OK;
}

void tmem__pool_release(tmem_type *type) {
    tmem_context *ctx = type->ctx;
    tmem__pool *p = &type->pool;
    if (p->leaves)
        for (size_t i = 0; i < p->nleaves; i++) tmem__free(ctx, p->leaves[i], TMEM__LEAF_WORDS * sizeof(uint64_t));
    tmem__free(ctx, p->leaves, (p->nleaves ? p->nleaves : 1) * sizeof *p->leaves);
    tmem__free(ctx, p->leaf_count, (p->nleaves ? p->nleaves : 1) * sizeof *p->leaf_count);
    tmem__free(ctx, p->free, p->capfree * sizeof *p->free);
    if (p->backend && p->region.size) p->backend->release(p->backend, &p->region);
    memset(p, 0, sizeof *p);
}

uint64_t tmem__pool_committed_bytes(const tmem_type *type) {
    return type->pool.committed_pages << type->pool.granule_shift;
}

/* ---- carving ---- */

tmem_status tmem__pool_carve(tmem_type *type, uint64_t size, uint64_t align, uint64_t *out_offset) {
    if (out_offset) *out_offset = TMEM_OFFSET_NONE;
    if (!tmem__type_valid(type) || !out_offset || !size) return tmem__err(TMEM_E_INVALID_ARG);
    if (align && !tmem__is_pow2(align)) return tmem__err(TMEM_E_ALIGNMENT);
    tmem__pool *p = &type->pool;
    uint64_t g = p->region.granule;
    if (align < g) align = g;
    /* An offset aligned beyond the base's alignment is not an aligned address. */
    if (align > p->region.base_align) return tmem__err(TMEM_E_ALIGNMENT);
    if (!tmem__align_up(size, g, &size)) return tmem__err(TMEM_E_OVERFLOW);
    tmem_context *ctx = type->ctx;
    tmem__context_lock(ctx);
    /* Room for the split this carve may cause and for every later uncarve. */
    tmem_status st = tmem__grow(ctx, (void **)&p->free, &p->capfree, p->ncarved + 3, sizeof *p->free);
    if (st != TMEM_OK) goto out;
    st = tmem__err(TMEM_E_FULL);
    for (size_t i = 0; i < p->nfree; i++) {
        tmem__range r = p->free[i];
        uint64_t start, end;
        if (!tmem__align_up(r.offset, align, &start) || tmem__add_overflow(start, size, &end) || end > r.offset + r.size) continue;
        tmem__range left = {r.offset, start - r.offset}, right = {end, r.offset + r.size - end};
        size_t keep = (left.size != 0) + (right.size != 0);
        if (keep == 0) {
            memmove(&p->free[i], &p->free[i + 1], (p->nfree - i - 1) * sizeof *p->free);
            p->nfree--;
        } else if (keep == 1) {
            p->free[i] = left.size ? left : right;
        } else {
            memmove(&p->free[i + 2], &p->free[i + 1], (p->nfree - i - 1) * sizeof *p->free);
            p->free[i] = left;
            p->free[i + 1] = right;
            p->nfree++;
        }
        p->ncarved++;
        p->carved_bytes += size;
        *out_offset = start;
        st = TMEM_OK;
        break;
    }
out:
    tmem__context_unlock(ctx);
    return st;
}

void tmem__pool_uncarve(tmem_type *type, uint64_t offset, uint64_t size) {
    if (!tmem__type_valid(type) || !size) return;
    tmem__pool *p = &type->pool;
    uint64_t g = p->region.granule, end;
    if (!tmem__align_up(size, g, &size) || tmem__add_overflow(offset, size, &end) || end > p->region.size || offset % g) return;
    /* A heap should have decommitted its pages; make sure nothing stays
     * charged for a range nobody owns. */
    tmem__pool_decommit(type, offset, size);
    tmem_context *ctx = type->ctx;
    tmem__context_lock(ctx);
    size_t i = 0;
    while (i < p->nfree && p->free[i].offset < offset) i++;
    /* Overlap with a free range means a double uncarve: a caller bug that
     * the misuse tests reach on purpose, so a plain check (not TMEM_NEVER,
     * which asserts in debug builds): ignore it. */
    bool overlaps = (i > 0 && p->free[i - 1].offset + p->free[i - 1].size > offset) ||
                    (i < p->nfree && p->free[i].offset < end);
    if (overlaps || p->ncarved == 0) {
        tmem__context_unlock(ctx);
        return;
    }
    bool join_prev = i > 0 && p->free[i - 1].offset + p->free[i - 1].size == offset;
    bool join_next = i < p->nfree && p->free[i].offset == end;
    if (join_prev && join_next) {
        p->free[i - 1].size += size + p->free[i].size;
        memmove(&p->free[i], &p->free[i + 1], (p->nfree - i - 1) * sizeof *p->free);
        p->nfree--;
    } else if (join_prev) {
        p->free[i - 1].size += size;
    } else if (join_next) {
        p->free[i].offset = offset;
        p->free[i].size += size;
    } else {
        tmem__assert(p->nfree < p->capfree); /* guaranteed by carve */
        memmove(&p->free[i + 1], &p->free[i], (p->nfree - i) * sizeof *p->free);
        p->free[i] = (tmem__range){offset, size};
        p->nfree++;
    }
    p->ncarved--;
    p->carved_bytes -= size;
    tmem__context_unlock(ctx);
}

/* ---- commit / decommit / advise ---- */

typedef struct page_range {
    uint64_t a, b; /* granules [a, b) */
} page_range;

/* Granules touched by [offset, offset+size): outward for commit, inward for
 * decommit/advise (only whole granules inside the range). */
static bool to_pages(const tmem__pool *p, uint64_t offset, uint64_t size, bool outward, page_range *out) {
    uint64_t end;
    if (tmem__add_overflow(offset, size, &end) || end > p->region.size) return false;
    uint64_t g = p->region.granule;
    if (outward) {
        out->a = offset >> p->granule_shift;
        out->b = (end + g - 1) >> p->granule_shift; /* end <= region size: no overflow */
    } else {
        out->a = (offset + g - 1) >> p->granule_shift;
        out->b = end >> p->granule_shift;
        if (out->b < out->a) out->b = out->a;
    }
    return true;
}

static uint64_t commit_need(tmem_type *type, void *arg) {
    const page_range *r = arg;
    uint64_t have = count_set(&type->pool, r->a, r->b);
    return (r->b - r->a - have) << type->pool.granule_shift;
}

/* The next run of granules in [from, end) whose bits equal `want`: its
 * start (end when none) and its end in *run_end. Takes the lock. */
static uint64_t next_run(tmem_type *type, uint64_t from, uint64_t end, bool want, uint64_t *run_end) {
    tmem__pool *p = &type->pool;
    tmem__context_lock(type->ctx);
    uint64_t a = find_next(p, from, end, want);
    *run_end = a < end ? find_next(p, a, end, !want) : end;
    tmem__context_unlock(type->ctx);
    return a;
}

/* Undo the OS commits of the granules in [a, stop) whose bits are still
 * clear (the ones this commit made). Unlocked. */
static void rollback(tmem_type *type, uint64_t a, uint64_t stop) {
    tmem__pool *p = &type->pool;
    uint64_t e;
    for (uint64_t pg = next_run(type, a, stop, false, &e); pg < stop; pg = next_run(type, e, stop, false, &e))
        (void)p->backend->decommit(p->backend, &p->region, pg << p->granule_shift, (e - pg) << p->granule_shift);
}

tmem_status tmem__pool_commit(tmem_type *type, uint64_t offset, uint64_t size) {
    if (!tmem__type_valid(type)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__pool *p = &type->pool;
    page_range r;
    if (!to_pages(p, offset, size, true, &r)) return tmem__err(TMEM_E_INVALID_ARG);
    if (r.a == r.b) return TMEM_OK;
    tmem_context *ctx = type->ctx;
    uint64_t bytes = 0;
    tmem_status st = tmem__budget_admit(type, commit_need, &r, &bytes);
    if (st != TMEM_OK) return st; /* lock not held */
    if (bytes) st = ensure_leaves(ctx, p, r.a, r.b);
    if (!bytes || st != TMEM_OK) {
        tmem__context_unlock(ctx);
        return st;
    }
    tmem__budget_reserve_locked(type, bytes);
    tmem__context_unlock(ctx);
    /* OS calls, unlocked: the range is its owner's (see the file comment). */
    uint64_t e;
    for (uint64_t pg = next_run(type, r.a, r.b, false, &e); pg < r.b; pg = next_run(type, e, r.b, false, &e)) {
        st = p->backend->commit(p->backend, &p->region, pg << p->granule_shift, (e - pg) << p->granule_shift);
        if (st != TMEM_OK) {
            rollback(type, r.a, pg);
            break;
        }
    }
    tmem__context_lock(ctx);
    tmem__budget_unreserve_locked(type, bytes);
    if (st == TMEM_OK) {
        /* Another caller committing the same granules at the same time (the
         * internal API allows it; heaps never do) may have published some
         * first: charge only what this one turned on. */
        uint64_t changed = assign_bits(p, r.a, r.b, true);
        p->committed_pages += changed;
        bytes = changed << p->granule_shift;
        if (bytes) tmem__budget_charge_locked(type, bytes, false, true);
    }
    tmem__context_unlock(ctx);
    if (st != TMEM_OK || !bytes) return st;
    tmem__pressure_notify(ctx);
    tmem__trace(ctx, TMEM__TRACE_COMMIT, type, -1, bytes, r.a << p->granule_shift, NULL);
    return TMEM_OK;
}

void tmem__pool_decommit(tmem_type *type, uint64_t offset, uint64_t size) {
    if (!tmem__type_valid(type)) return;
    tmem__pool *p = &type->pool;
    page_range r;
    if (!to_pages(p, offset, size, false, &r) || r.a == r.b) return;
    tmem_context *ctx = type->ctx;
    uint64_t dropped = 0, e;
    for (uint64_t pg = next_run(type, r.a, r.b, true, &e); pg < r.b; pg = next_run(type, e, r.b, true, &e)) {
        /* On failure the pages stay committed and charged: consistent. */
        if (p->backend->decommit(p->backend, &p->region, pg << p->granule_shift, (e - pg) << p->granule_shift) != TMEM_OK)
            break;
        tmem__context_lock(ctx);
        uint64_t changed = assign_bits(p, pg, e, false);
        p->committed_pages -= changed;
        if (changed) tmem__budget_uncharge_locked(type, changed << p->granule_shift, false, true);
        tmem__context_unlock(ctx);
        dropped += changed << p->granule_shift;
    }
    if (dropped) {
        tmem__pressure_notify(ctx);
        tmem__trace(ctx, TMEM__TRACE_DECOMMIT, type, -1, dropped, r.a << p->granule_shift, NULL);
    }
}

tmem_status tmem__pool_advise(tmem_type *type, uint64_t offset, uint64_t size, tmem__advice adv) {
    if (!tmem__type_valid(type)) return tmem__err(TMEM_E_INVALID_ARG);
    if ((unsigned)adv > TMEM__ADVICE_COLD) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__pool *p = &type->pool;
    page_range r;
    if (!to_pages(p, offset, size, false, &r)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = TMEM_OK;
    uint64_t e;
    for (uint64_t pg = next_run(type, r.a, r.b, true, &e); st == TMEM_OK && pg < r.b; pg = next_run(type, e, r.b, true, &e))
        st = p->backend->advise(p->backend, &p->region, pg << p->granule_shift, (e - pg) << p->granule_shift, adv);
    return st;
}

void *tmem__pool_ptr(const tmem_type *type, uint64_t offset) {
    const tmem__pool *p = &type->pool;
    return p->host_base && offset < p->region.size ? p->host_base + offset : NULL;
}

uint64_t tmem__pool_granule(const tmem_type *type) {
    return type->pool.region.granule;
}

uint64_t tmem__pool_committed_in(tmem_type *type, uint64_t offset, uint64_t size) {
    const tmem__pool *p = &type->pool;
    page_range r;
    if (!to_pages(p, offset, size, true, &r)) return 0;
    tmem__context_lock(type->ctx);
    uint64_t n = count_set(p, r.a, r.b);
    tmem__context_unlock(type->ctx);
    return n << p->granule_shift;
}

tmem_status tmem__pool_residency(tmem_type *type, uint64_t offset, uint64_t size, uint64_t *out_bytes) {
    if (out_bytes) *out_bytes = 0;
    if (!tmem__type_valid(type) || !out_bytes) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__pool *p = &type->pool;
    page_range r;
    if (!to_pages(p, offset, size, true, &r)) return tmem__err(TMEM_E_INVALID_ARG);
    if (!p->backend->residency) return tmem__err(TMEM_E_UNSUPPORTED);
    tmem_status st = TMEM_OK;
    uint64_t total = 0, e;
    /* Only committed granules can be resident; asking the OS about the rest
     * of a reservation is wasted work. */
    for (uint64_t pg = next_run(type, r.a, r.b, true, &e); st == TMEM_OK && pg < r.b; pg = next_run(type, e, r.b, true, &e)) {
        uint64_t n = 0;
        st = p->backend->residency(p->backend, &p->region, pg << p->granule_shift, (e - pg) << p->granule_shift, &n);
        total += n;
    }
    if (st == TMEM_OK) *out_bytes = total;
    return st;
}

/* ---- invariants ---- */

tmem_status tmem__pool_check(const tmem_type *type) {
    const tmem__pool *p = &type->pool;
    uint64_t total = 0;
    for (size_t l = 0; l < p->nleaves; l++) {
        uint64_t n = 0;
        if (p->leaves[l])
            for (unsigned w = 0; w < TMEM__LEAF_WORDS; w++) n += (uint64_t)__builtin_popcountll(p->leaves[l][w]);
        if (n != p->leaf_count[l]) return tmem__err(TMEM_E_CORRUPT);
        total += n;
    }
    if (total != p->committed_pages) return tmem__err(TMEM_E_CORRUPT);
    if (count_set(p, p->pages, (uint64_t)p->nleaves * TMEM__LEAF_BITS) != 0) return tmem__err(TMEM_E_CORRUPT);
    if ((p->committed_pages << p->granule_shift) + type->charged_dirty + type->charged_clean != type->committed)
        return tmem__err(TMEM_E_CORRUPT);
    uint64_t free_bytes = 0, prev_end = 0;
    for (size_t i = 0; i < p->nfree; i++) {
        const tmem__range *r = &p->free[i];
        if (!r->size || (i && r->offset <= prev_end) || r->offset + r->size > p->region.size) return tmem__err(TMEM_E_CORRUPT);
        prev_end = r->offset + r->size;
        free_bytes += r->size;
    }
    if (free_bytes + p->carved_bytes != p->region.size || p->capfree < p->ncarved + 2)
        return tmem__err(TMEM_E_CORRUPT);
    return TMEM_OK;
}

/* Fixed-size slots straight over a carved range of a type's pool: KV
 * blocks, recurrent-state slots and snapshots are all one size each.
 *
 * Why not a GENERAL heap: a heap keeps freed pages committed (hysteresis),
 * which is right for churn but wrong for eviction. When the policy evicts a
 * sequence to make room for an allocation in another type, the bytes must
 * leave the budget now, or the core's reclaim sees no progress. Here every
 * slot is a whole number of pool granules, committed when handed out and
 * decommitted when given back, so the budget charge moves by exactly what
 * the eviction callback reports. */
#include <string.h>
#include "core/internal.h"
#include "kv/kv_internal.h"

tmem_status tmem__kv_slab_init(tmem_context *ctx, kv_slab *s, tmem_type *type, uint64_t range, uint64_t size, int32_t role, const char *name) {
    memset(s, 0, sizeof *s);
    if (!tmem__pool_ptr(type, 0) && tmem__type_placement(type) >= TMEM_PLACEMENT_DEVICE)
        return tmem__err(TMEM_E_UNSUPPORTED); /* rows are host addresses */
    if (tmem__type_placement(type) == TMEM_PLACEMENT_FILE) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t g = tmem__pool_granule(type);
    if (!g || !tmem__align_up(size, g, &s->slot)) return tmem__err(TMEM_E_OVERFLOW);
    if (range < s->slot) return tmem__err(TMEM_E_FULL);
    range = range / s->slot * s->slot;
    if (range / s->slot > UINT32_MAX - 1) range = (uint64_t)(UINT32_MAX - 1) * s->slot;
    tmem_status st = tmem__pool_carve(type, range, g, &s->base);
    if (st != TMEM_OK) return st;
    s->ctx = ctx;
    s->type = type;
    s->range = range;
    s->size = size;
    s->role = role;
    s->name = name;
    s->nslots = (uint32_t)(range / s->slot);
    return TMEM_OK;
}

void tmem__kv_slab_fini(kv_slab *s) {
    if (!s->type) return;
    /* owners gave their slots back already; decommit is a no-op on pages
     * that are not committed */
    tmem__pool_decommit(s->type, s->base, s->range);
    tmem__pool_uncarve(s->type, s->base, s->range);
    if (s->free) tmem__free(s->ctx, s->free, (size_t)s->free_cap * sizeof *s->free);
    memset(s, 0, sizeof *s);
}

tmem_status tmem__kv_slab_alloc(kv_slab *s, void **out) {
    *out = NULL;
    uint32_t idx;
    bool fresh = s->nfree == 0;
    if (fresh) {
        if (s->high == s->nslots) return tmem__err(TMEM_E_FULL);
        /* the free stack can hold every slot ever handed out: grow it now,
         * before anything can fail half way */
        if (s->high == s->free_cap) {
            uint32_t ncap = s->free_cap ? s->free_cap * 2 : 64;
            if (ncap > s->nslots) ncap = s->nslots;
            uint32_t *nf = tmem__malloc(s->ctx, (size_t)ncap * sizeof *nf);
            if (!nf) return tmem__err(TMEM_E_NO_MEMORY);
            if (s->nfree) memcpy(nf, s->free, (size_t)s->nfree * sizeof *nf);
            if (s->free) tmem__free(s->ctx, s->free, (size_t)s->free_cap * sizeof *s->free);
            s->free = nf;
            s->free_cap = ncap;
        }
        idx = s->high;
    } else {
        idx = s->free[s->nfree - 1];
    }
    uint64_t off = s->base + (uint64_t)idx * s->slot;
    tmem_status st = tmem__pool_commit(s->type, off, s->slot);
    if (st != TMEM_OK) return st;
    if (fresh) s->high++;
    else s->nfree--;
    s->live++;
    tmem__account_alloc(s->type, s->role, s->size);
    tmem__trace(s->ctx, TMEM__TRACE_ALLOC, s->type, s->role, s->size, off, s->name);
    *out = tmem__pool_ptr(s->type, off);
    return TMEM_OK;
}

void tmem__kv_slab_free(kv_slab *s, void *ptr) {
    uint64_t off = (uint64_t)((uint8_t *)ptr - (uint8_t *)tmem__pool_ptr(s->type, s->base)) + s->base;
    tmem__assert((off - s->base) % s->slot == 0 && off - s->base < s->range);
    tmem__pool_decommit(s->type, off, s->slot);
    tmem__account_free(s->type, s->role, s->size);
    tmem__trace(s->ctx, TMEM__TRACE_FREE, s->type, s->role, s->size, off, s->name);
    s->free[s->nfree++] = (uint32_t)((off - s->base) / s->slot);
    s->live--;
}

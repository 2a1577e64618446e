/* The KV cache's three slot kinds (KV blocks, recurrent-state slots,
 * snapshots) are one size each: each goes through a BLOCK heap
 * (src/heap/block.c) over its type's pool.
 *
 * Why BLOCK and not GENERAL: a general heap keeps freed pages committed
 * (hysteresis), which is right for churn but wrong for eviction. When the
 * policy evicts a sequence to make room for an allocation in another type,
 * the bytes must leave the budget now, or the core's reclaim sees no
 * progress. A BLOCK heap decommits a block the moment it is freed, so the
 * budget charge moves by exactly what the eviction callback reports.
 *
 * This file only adapts the heap to the cache: the host-placement checks,
 * the slot count the policy reads, and a live count for the cache's walker. */
#include <string.h>
#include "core/internal.h"
#include "kv/kv_internal.h"

tmem_status tmem__kv_slab_init(tmem_context *ctx, kv_slab *s, tmem_type *type, uint64_t range,
                               uint64_t size, int32_t role, const char *name) {
    memset(s, 0, sizeof *s);
    tmem_placement where = tmem__type_placement(type);
    if (!tmem__pool_ptr(type, 0) && where >= TMEM_PLACEMENT_DEVICE)
        return tmem__err(TMEM_E_UNSUPPORTED); /* rows are host addresses */
    if (where == TMEM_PLACEMENT_FILE) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t g = tmem__pool_granule(type), slot;
    if (!g || !tmem__align_up(size, g, &slot)) return tmem__err(TMEM_E_OVERFLOW);
    if (range < slot) return tmem__err(TMEM_E_FULL);
    tmem_heap_desc hd = {.kind = TMEM_HEAP_BLOCK, .type = type, .role = (tmem_role)role,
                         .size = range, .block_size = size, .name = name};
    tmem_status st = tmem_heap_create(ctx, &hd, &s->heap);
    if (st != TMEM_OK) return st;
    tmem_heap_info info;
    if ((st = tmem_heap_get_info(s->heap, &info)) != TMEM_OK) {
        tmem_heap_destroy(s->heap);
        s->heap = NULL;
        return st;
    }
    s->slot = info.block_stride;
    s->size = size;
    s->nslots = (uint32_t)(info.size / info.block_stride);
    return TMEM_OK;
}

void tmem__kv_slab_fini(kv_slab *s) {
    /* owners gave their slots back already; destroy would free the rest */
    tmem_heap_destroy(s->heap);
    memset(s, 0, sizeof *s);
}

tmem_status tmem__kv_slab_alloc(kv_slab *s, void **out) {
    tmem_status st = tmem_heap_alloc(s->heap, s->size, 0, out);
    if (st == TMEM_OK) s->live++;
    return st;
}

void tmem__kv_slab_free(kv_slab *s, void *ptr) {
    tmem_status st = tmem_heap_free(s->heap, ptr);
    tmem__assert(st == TMEM_OK); /* the cache frees only slots it holds */
    (void)st;
    s->live--;
}

/* KV blocks: fixed-size slots of the KV type's pool (kv_slab.c),
 * named by small integer ids (what a paged-attention kernel indexes with)
 * and reference counted so forks can share them. */
#include <string.h>
#include "core/internal.h"
#include "kv/kv_internal.h"

tmem_status tmem__kv_blocks_init(tmem_kv_cache *c) {
    c->blocks = NULL;
    c->block_cap = 0;
    c->free_id = KV_NO_ID;
    return TMEM_OK;
}

void tmem__kv_blocks_fini(tmem_kv_cache *c) {
    for (uint32_t i = 0; i < c->block_cap; i++)
        if (c->blocks[i].refs) (void)tmem__kv_slab_free(&c->kv_slab, c->blocks[i].off);
    tmem__free(c->ctx, c->blocks, (size_t)c->block_cap * sizeof *c->blocks);
    c->blocks = NULL;
    c->block_cap = 0;
}

/* Double the id table; new ids go on the free list lowest first. */
static tmem_status grow_ids(tmem_kv_cache *c) {
    uint32_t ncap = c->block_cap ? c->block_cap * 2 : 64;
    if (c->block_cap >= (1u << 30)) return tmem__err(TMEM_E_FULL);
    kv_block *nb = tmem__malloc(c->ctx, (size_t)ncap * sizeof *nb);
    if (!nb) return tmem__err(TMEM_E_NO_MEMORY);
    if (c->block_cap) memcpy(nb, c->blocks, (size_t)c->block_cap * sizeof *nb);
    for (uint32_t i = ncap; i-- > c->block_cap;) {
        nb[i] = (kv_block){KV_NO_OFF, 0, c->free_id};
        c->free_id = i;
    }
    tmem__free(c->ctx, c->blocks, (size_t)c->block_cap * sizeof *c->blocks);
    c->blocks = nb;
    c->block_cap = ncap;
    return TMEM_OK;
}

tmem_status tmem__kv_block_new(tmem_kv_cache *c, uint32_t *out_id) {
    if (c->free_id == KV_NO_ID) {
        tmem_status st = grow_ids(c);
        if (st != TMEM_OK) return st;
    }
    uint64_t p = KV_NO_OFF;
    tmem_status st = tmem__kv_slab_alloc(&c->kv_slab, &p);
    if (st != TMEM_OK) return st;
    uint32_t id = c->free_id;
    c->free_id = c->blocks[id].next_free;
    c->blocks[id] = (kv_block){p, 1, KV_NO_ID};
    c->blocks_used++;
    *out_id = id;
    return TMEM_OK;
}

void tmem__kv_block_ref(tmem_kv_cache *c, uint32_t id) {
    kv_block *b = &c->blocks[id];
    tmem__assert(b->refs > 0);
    if (++b->refs == 2) c->blocks_shared++;
}

uint64_t tmem__kv_block_unref(tmem_kv_cache *c, uint32_t id) {
    kv_block *b = &c->blocks[id];
    tmem__assert(b->refs > 0);
    if (--b->refs == 1) c->blocks_shared--;
    if (b->refs) return 0;
    uint64_t freed = tmem__kv_slab_free(&c->kv_slab, b->off);
    b->off = KV_NO_OFF;
    b->next_free = c->free_id;
    c->free_id = id;
    c->blocks_used--;
    return freed;
}

void *tmem_kv_block_ptr(tmem_kv_cache *cache, uint32_t id) {
    if (!cache) return NULL;
    tmem__kv_lock(cache);
    void *p = id < cache->block_cap && cache->blocks[id].refs
                  ? tmem__kv_slab_ptr(&cache->kv_slab, cache->blocks[id].off)
                  : NULL;
    tmem__kv_unlock(cache);
    return p;
}

tmem_status tmem_kv_block_offset(tmem_kv_cache *cache, uint32_t id, tmem_heap **heap, uint64_t *offset) {
    if (heap) *heap = NULL;
    if (offset) *offset = TMEM_OFFSET_NONE;
    if (!cache || !heap || !offset) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    tmem_status st = TMEM_OK;
    if (id < cache->block_cap && cache->blocks[id].refs) {
        *heap = cache->kv_slab.heap;
        *offset = cache->blocks[id].off;
    } else {
        st = tmem__err(TMEM_E_NOT_FOUND);
    }
    tmem__kv_unlock(cache);
    return st;
}

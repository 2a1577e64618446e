/* Recurrent state: one slot per sequence in the state type, laid out layer
 * by layer as [conv history][delta-rule state]. Fixed size, so it never
 * grows with the context; forks copy it, snapshots copy it out. */
#include <string.h>
#include "core/internal.h"
#include "kv/kv_internal.h"

tmem_status tmem__kv_state_alloc(tmem_kv_cache *c, kv_seqrec *s, const kv_slab *from_slab, uint64_t copy_from) {
    s->state_off = KV_NO_OFF;
    if (!c->has_state) return TMEM_OK;
    uint64_t p = KV_NO_OFF, n = c->rs.total_bytes;
    tmem_status st = tmem__kv_slab_alloc(&c->state_slab, &p);
    if ((st == TMEM_E_BUDGET || st == TMEM_E_FULL) &&
        tmem__kv_make_room(c, c->state_type, c->state_slab.slot, TMEM_KV_REASON_RECLAIM, st))
        st = tmem__kv_slab_alloc(&c->state_slab, &p);
    if (st != TMEM_OK) return st;
    st = from_slab ? tmem__kv_slab_copy(&c->state_slab, p, from_slab, copy_from, n)
                   : tmem__kv_slab_zero(&c->state_slab, p, n);
    if (st != TMEM_OK) {
        (void)tmem__kv_slab_free(&c->state_slab, p);
        return st;
    }
    s->state_off = p;
    return TMEM_OK;
}

uint64_t tmem__kv_state_free(tmem_kv_cache *c, kv_seqrec *s) {
    if (s->state_off == KV_NO_OFF) return 0;
    uint64_t freed = tmem__kv_slab_free(&c->state_slab, s->state_off);
    s->state_off = KV_NO_OFF;
    return freed;
}

tmem_status tmem_kv_seq_state(tmem_kv_cache *cache, tmem_kv_seq seq, uint32_t layer, void **conv, void **ssm) {
    if (conv) *conv = NULL;
    if (ssm) *ssm = NULL;
    if (!cache) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK && (!cache->has_state || layer >= cache->desc.recurrent.layers))
        st = tmem__err(TMEM_E_INVALID_ARG);
    if (st == TMEM_OK && cache->state_slab.device) st = tmem__err(TMEM_E_UNSUPPORTED); /* tmem_kv_seq_state_offset */
    if (st == TMEM_OK) {
        uint8_t *base = (uint8_t *)tmem__kv_slab_ptr(&cache->state_slab, s->state_off) + (uint64_t)layer * cache->rs.layer_bytes;
        if (conv) *conv = base;
        if (ssm) *ssm = base + cache->rs.conv_bytes;
        tmem__kv_seq_touch(cache, s);
    }
    tmem__kv_unlock(cache);
    return st;
}

tmem_status tmem_kv_seq_state_offset(tmem_kv_cache *cache, tmem_kv_seq seq, tmem_heap **heap, uint64_t *offset) {
    if (heap) *heap = NULL;
    if (offset) *offset = TMEM_OFFSET_NONE;
    if (!cache || !heap || !offset) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__kv_lock(cache);
    kv_seqrec *s;
    tmem_status st = tmem__kv_seq_get(cache, seq, &s);
    if (st == TMEM_OK && !cache->has_state) st = tmem__err(TMEM_E_INVALID_ARG);
    if (st == TMEM_OK) {
        *heap = cache->state_slab.heap;
        *offset = s->state_off;
        tmem__kv_seq_touch(cache, s);
    }
    tmem__kv_unlock(cache);
    return st;
}

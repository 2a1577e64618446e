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
 * On a device type the pool granule is one device memory object (a Vulkan
 * chunk, 64 MiB and up), so one slot per heap block would waste nearly all
 * of it: there a heap block holds `per` slots at the device's buffer
 * alignment (tmem_type_resource_size_and_align), handed out from a free
 * list, and the heap block is committed with its first live slot and
 * decommitted with its last. An eviction then gives bytes back only when it
 * empties a heap block, and the slab says so (tmem__kv_slab_free's return).
 * Device slots have no host address: copies and zeroing go through
 * tmem_heap_copy / tmem_heap_fill (the backend's vkCmdCopyBuffer /
 * vkCmdFillBuffer), never a pointer.
 *
 * This file adapts the heap to the cache: the placement checks, the slot
 * count the policy reads, and a live count for the cache's walker. */
#include <string.h>
#include "core/internal.h"
#include "kv/kv_internal.h"
#include "typedmem/device.h"

/* Packed geometry: slots at the device's buffer alignment in heap blocks of
 * one granule (one memory object). */
static tmem_status packed_init(kv_slab *s, tmem_type *type, uint64_t range, uint64_t g) {
    tmem_size_align sa;
    tmem_status st = tmem_type_resource_size_and_align(type, TMEM_RESOURCE_BUFFER, s->size, 0, &sa);
    if (st != TMEM_OK) return st;
    if (sa.size > g) return tmem__err(TMEM_E_ALIGNMENT); /* a slot would straddle memory objects */
    s->packed = true;
    s->slot = sa.size;
    s->stride = g;
    s->per = (uint32_t)(g / sa.size < UINT32_MAX ? g / sa.size : UINT32_MAX - 1);
    if (range < g) return tmem__err(TMEM_E_FULL);
    uint64_t nsb = range / g, total = nsb * s->per;
    if (total >= UINT32_MAX) return tmem__err(TMEM_E_OVERFLOW);
    s->nsb = (uint32_t)nsb;
    s->nslots = (uint32_t)total;
    s->sb_live = tmem__calloc(s->ctx, nsb, sizeof *s->sb_live);
    s->next = tmem__malloc(s->ctx, (size_t)total * sizeof *s->next);
    s->prev = tmem__malloc(s->ctx, (size_t)total * sizeof *s->prev);
    s->free_head = UINT32_MAX;
    if (!s->sb_live || !s->next || !s->prev) return tmem__err(TMEM_E_NO_MEMORY);
    return TMEM_OK;
}

static void packed_fini(kv_slab *s) {
    if (s->sb_live) tmem__free(s->ctx, s->sb_live, (size_t)s->nsb * sizeof *s->sb_live);
    if (s->next) tmem__free(s->ctx, s->next, (size_t)s->nslots * sizeof *s->next);
    if (s->prev) tmem__free(s->ctx, s->prev, (size_t)s->nslots * sizeof *s->prev);
}

tmem_status tmem__kv_slab_init(tmem_context *ctx, kv_slab *s, tmem_type *type, uint64_t range,
                               uint64_t size, int32_t role, const char *name) {
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    tmem_placement where = tmem__type_placement(type);
    if (where == TMEM_PLACEMENT_FILE) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t g = tmem__pool_granule(type), slot;
    if (!g || !tmem__align_up(size, g, &slot)) return tmem__err(TMEM_E_OVERFLOW);
    s->size = size;
    s->device = !tmem__pool_ptr(type, 0);
    tmem_status st = TMEM_OK;
    if (where >= TMEM_PLACEMENT_DEVICE) {
        st = packed_init(s, type, range, g);
        slot = g;
    } else if (range < slot) {
        st = tmem__err(TMEM_E_FULL);
    }
    if (st != TMEM_OK) {
        tmem__kv_slab_fini(s);
        return st;
    }
    tmem_heap_desc hd = {.kind = TMEM_HEAP_BLOCK, .type = type, .role = (tmem_role)role,
                         .size = s->packed ? (uint64_t)s->nsb * g : range,
                         .block_size = s->packed ? g : size, .name = name};
    st = tmem_heap_create(ctx, &hd, &s->heap);
    tmem_heap_info info;
    if (st == TMEM_OK && (st = tmem_heap_get_info(s->heap, &info)) == TMEM_OK && !s->packed) {
        s->slot = info.block_stride;
        s->nslots = (uint32_t)(info.size / info.block_stride);
    }
    if (st == TMEM_OK && s->packed && info.block_stride != g) st = tmem__err(TMEM_E_ALIGNMENT);
    if (st != TMEM_OK) tmem__kv_slab_fini(s);
    return st;
}

void tmem__kv_slab_fini(kv_slab *s) {
    /* owners gave their slots back already; destroy would free the rest */
    tmem_heap_destroy(s->heap);
    packed_fini(s);
    memset(s, 0, sizeof *s);
}

static void list_push(kv_slab *s, uint32_t i) {
    s->prev[i] = UINT32_MAX;
    s->next[i] = s->free_head;
    if (s->free_head != UINT32_MAX) s->prev[s->free_head] = i;
    s->free_head = i;
}

static void list_unlink(kv_slab *s, uint32_t i) {
    if (s->prev[i] != UINT32_MAX) s->next[s->prev[i]] = s->next[i];
    else s->free_head = s->next[i];
    if (s->next[i] != UINT32_MAX) s->prev[s->next[i]] = s->prev[i];
}

static tmem_status packed_alloc(kv_slab *s, uint64_t *out) {
    if (s->free_head == UINT32_MAX) {
        /* a fresh heap block: commit it (budgets and reclaim apply; the
         * reclaim may free slots of ours meanwhile, which only adds to the list) */
        tmem_alloc_desc ad = {.size = s->stride};
        tmem_alloc_info ai;
        tmem_status st = tmem_heap_alloc_ex(s->heap, &ad, &ai);
        if (st != TMEM_OK) return st;
        uint32_t sb = (uint32_t)(ai.offset / s->stride);
        s->sb_live[sb] = 0;
        s->sb_used++;
        for (uint32_t k = s->per; k-- > 0;) list_push(s, sb * s->per + k);
    }
    uint32_t i = s->free_head;
    list_unlink(s, i);
    s->sb_live[i / s->per]++;
    *out = (uint64_t)(i / s->per) * s->stride + (uint64_t)(i % s->per) * s->slot;
    return TMEM_OK;
}

static uint64_t packed_free(kv_slab *s, uint64_t off) {
    uint32_t sb = (uint32_t)(off / s->stride), i = sb * s->per + (uint32_t)(off % s->stride / s->slot);
    tmem__assert(sb < s->nsb && s->sb_live[sb] > 0);
    if (--s->sb_live[sb]) {
        list_push(s, i);
        return 0;
    }
    /* the heap block's other slots are all on the list: take them off, give it back */
    for (uint32_t k = 0; k < s->per; k++)
        if (sb * s->per + k != i) list_unlink(s, sb * s->per + k);
    tmem_status st = tmem_heap_free_offset(s->heap, (uint64_t)sb * s->stride);
    tmem__assert(st == TMEM_OK);
    (void)st;
    s->sb_used--;
    return s->stride;
}

tmem_status tmem__kv_slab_alloc(kv_slab *s, uint64_t *out) {
    tmem_status st;
    if (s->packed) {
        st = packed_alloc(s, out);
    } else {
        tmem_alloc_desc ad = {.size = s->size};
        tmem_alloc_info ai;
        st = tmem_heap_alloc_ex(s->heap, &ad, &ai);
        if (st == TMEM_OK) *out = ai.offset;
    }
    if (st == TMEM_OK) s->live++;
    return st;
}

uint64_t tmem__kv_slab_free(kv_slab *s, uint64_t off) {
    s->live--;
    if (s->packed) return packed_free(s, off);
    tmem_status st = tmem_heap_free_offset(s->heap, off);
    tmem__assert(st == TMEM_OK); /* the cache frees only slots it holds */
    (void)st;
    return s->slot;
}

uint64_t tmem__kv_slab_committed(const kv_slab *s) { return (uint64_t)s->sb_used * s->stride; }

void *tmem__kv_slab_ptr(const kv_slab *s, uint64_t off) { return s->device ? NULL : tmem_heap_ptr(s->heap, off); }

tmem_status tmem__kv_slab_copy(kv_slab *dst, uint64_t doff, const kv_slab *src, uint64_t soff, uint64_t n) {
    void *d = tmem__kv_slab_ptr(dst, doff), *p = tmem__kv_slab_ptr(src, soff);
    if (d && p) {
        memcpy(d, p, (size_t)n);
        return TMEM_OK;
    }
    return tmem_heap_copy(dst->heap, doff, src->heap, soff, n);
}

tmem_status tmem__kv_slab_zero(kv_slab *s, uint64_t off, uint64_t n) {
    void *p = tmem__kv_slab_ptr(s, off);
    if (p) {
        memset(p, 0, (size_t)n);
        return TMEM_OK;
    }
    /* device slots are at least 4-byte aligned and sized (packed_init) */
    return tmem_heap_fill(s->heap, off, (n + 3) & ~(uint64_t)3, 0);
}

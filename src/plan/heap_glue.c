/*
 * Glue between a plan and a PLACEMENT heap (heap.h): size the heap from the
 * plan, then allocate each buffer at its planned offset. A plan is computed
 * once per shape and re-used every step: either allocate/free each buffer
 * when its lifetime starts/ends (the heap checks, in debug contexts, that no
 * live buffer is overwritten), or bind them all once as aliasable
 * allocations and keep the pointers.
 */
#include "plan_internal.h"

tmem_status tmem_plan_heap_desc(const tmem_plan *pl, tmem_heap_desc *out) {
    if (!pl || !out) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t align = pl->max_align > 16 ? pl->max_align : 16, size;
    if (!tmem__align_up(pl->info.arena ? pl->info.arena : 1, align, &size)) return tmem__err(TMEM_E_OVERFLOW);
    *out = (tmem_heap_desc){0};
    out->kind = TMEM_HEAP_PLACEMENT;
    out->size = size;
    return TMEM_OK;
}

tmem_status tmem_plan_heap_alloc(tmem_heap *heap, const tmem_plan *pl, uint32_t index, uint32_t flags,
                                 tmem_alloc_info *out) {
    if (!heap || !pl) return tmem__err(TMEM_E_INVALID_ARG);
    if (index >= pl->n) return tmem__err(TMEM_E_NOT_FOUND);
    const tmem__plan_item *it = &pl->items[index];
    tmem_alloc_desc d = {0};
    d.size = it->size;
    d.alignment = it->align;
    d.offset = it->offset;
    d.flags = flags;
    d.role = -1;
    d.name = pl->ids + it->id;
    tmem_alloc_info info;
    tmem_status st = tmem_heap_alloc_ex(heap, &d, &info);
    if (out) *out = info;
    return st;
}

tmem_status tmem_plan_heap_bind(tmem_heap *heap, const tmem_plan *pl, void **ptrs) {
    if (!heap || !pl) return tmem__err(TMEM_E_INVALID_ARG);
    /* One allocation covers the whole arena: buffers that alias share its
     * bytes by design, so they cannot be separate live allocations at one
     * offset. Each buffer's pointer is the base plus its planned offset. */
    tmem_alloc_desc d = {0};
    d.size = pl->info.arena ? pl->info.arena : 1;
    d.alignment = pl->max_align > 16 ? pl->max_align : 16;
    d.offset = 0;
    d.role = -1;
    d.name = "plan arena";
    tmem_alloc_info info;
    tmem_status st = tmem_heap_alloc_ex(heap, &d, &info);
    if (st) return st;
    if (ptrs)
        for (uint32_t i = 0; i < pl->n; i++) ptrs[i] = info.ptr ? (char *)info.ptr + pl->items[i].offset : NULL;
    return TMEM_OK;
}

tmem_status tmem_plan_heap_unbind(tmem_heap *heap, const tmem_plan *pl) {
    if (!heap || !pl) return tmem__err(TMEM_E_INVALID_ARG);
    return tmem_heap_free_offset(heap, 0);
}

/*
 * Plans bound to heaps: a layer above both the planner (pure arithmetic)
 * and the heaps, built on their public calls only. Size a PLACEMENT heap
 * from a plan, then place each buffer at its planned offset. A plan is made
 * once per shape and re-used every step: allocate/free each buffer when its
 * lifetime starts/ends (the heap checks, in debug contexts, that no live
 * buffer is overwritten), or bind them all at once and keep the pointers.
 */
#include "core/internal.h"
#include "typedmem/plan_heap.h"
#include <string.h>

/* Every plan call here works on a plan the caller holds; only PLACEMENT
 * heaps take offsets (a GENERAL or LINEAR heap would put the bytes anywhere
 * and the plan would be silently wrong). */
static tmem_status check_heap(tmem_heap *heap, const tmem_plan *plan, tmem_plan_info *info) {
    if (!heap || !plan) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_heap_info hi;
    tmem_status st = tmem_heap_get_info(heap, &hi);
    if (st != TMEM_OK) return st;
    if (hi.kind != TMEM_HEAP_PLACEMENT) return tmem__err(TMEM_E_INVALID_ARG);
    return tmem_plan_get_info(plan, info);
}

static uint64_t max_alignment(const tmem_plan *plan, uint32_t n) {
    uint64_t align = 16;
    for (uint32_t i = 0; i < n; i++) {
        tmem_plan_buffer b;
        if (tmem_plan_get_buffer(plan, i, &b) == TMEM_OK && b.alignment > align) align = b.alignment;
    }
    return align;
}

tmem_status tmem_plan_heap_desc(const tmem_plan *plan, tmem_heap_desc *out) {
    tmem_plan_info info;
    if (!plan || !out || tmem_plan_get_info(plan, &info) != TMEM_OK) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t size;
    if (!tmem__align_up(info.arena ? info.arena : 1, max_alignment(plan, info.buffers), &size))
        return tmem__err(TMEM_E_OVERFLOW);
    *out = (tmem_heap_desc){0};
    out->kind = TMEM_HEAP_PLACEMENT;
    out->size = size;
    return TMEM_OK;
}

/* Buffer `index` at arena_offset + its planned offset. */
static tmem_status alloc_buffer(tmem_heap *heap, const tmem_plan *plan, uint32_t index, uint64_t arena_offset,
                                uint32_t flags, tmem_alloc_info *out) {
    tmem_plan_buffer b;
    tmem_status st = tmem_plan_get_buffer(plan, index, &b);
    if (st != TMEM_OK) return st;
    tmem_alloc_desc d = {0};
    d.size = b.size;
    d.alignment = b.alignment;
    if (tmem__add_overflow(arena_offset, b.offset, &d.offset)) return tmem__err(TMEM_E_OVERFLOW);
    d.flags = flags;
    d.role = -1;
    d.name = b.id;
    tmem_alloc_info info;
    st = tmem_heap_alloc_ex(heap, &d, &info);
    if (out) *out = info;
    return st;
}

tmem_status tmem_plan_heap_alloc(tmem_heap *heap, const tmem_plan *plan, uint32_t index, uint32_t flags,
                                 tmem_alloc_info *out) {
    tmem_plan_info info;
    tmem_status st = check_heap(heap, plan, &info);
    if (st != TMEM_OK) return st;
    if (index >= info.buffers) return tmem__err(TMEM_E_NOT_FOUND);
    return alloc_buffer(heap, plan, index, 0, flags, out);
}

static void unbind_buffers(tmem_heap *heap, const tmem_plan *plan, uint64_t at, uint32_t count) {
    for (uint32_t i = 0; i < count; i++) {
        tmem_plan_buffer b;
        if (tmem_plan_get_buffer(plan, i, &b) == TMEM_OK && tmem_heap_free_offset(heap, at + b.offset) != TMEM_OK) {
            /* bound by us a moment ago: nothing else can have freed it */
        }
    }
}

tmem_status tmem_plan_heap_bind_ex(tmem_heap *heap, const tmem_plan *plan, const tmem_plan_bind_desc *desc,
                                   void **ptrs, tmem_plan_binding *out) {
    if (out) memset(out, 0, sizeof *out);
    tmem_plan_info info;
    tmem_status st = check_heap(heap, plan, &info);
    if (st != TMEM_OK) return st;
    if (ptrs) memset(ptrs, 0, (size_t)info.buffers * sizeof *ptrs); /* NULL on failure */
    tmem_plan_bind_desc d = desc ? *desc : (tmem_plan_bind_desc){0};
    if (d.flags & ~(uint32_t)TMEM_PLAN_BIND_PER_BUFFER) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t align = max_alignment(plan, info.buffers);
    if (d.offset & (align - 1)) return tmem__err(TMEM_E_ALIGNMENT);
    tmem_plan_binding b = {d.offset, info.arena ? info.arena : 1, d.flags};
    void *base = NULL;
    if (d.flags & TMEM_PLAN_BIND_PER_BUFFER) {
        /* Each buffer its own aliasable allocation: the heap's overlap check
         * and use-after-alias detection then see the real buffers. */
        for (uint32_t i = 0; i < info.buffers; i++) {
            tmem_alloc_info ai = {0};
            st = alloc_buffer(heap, plan, i, d.offset, TMEM_ALLOC_ALIASABLE, &ai);
            if (st != TMEM_OK) {
                unbind_buffers(heap, plan, d.offset, i);
                return st;
            }
            if (ptrs) ptrs[i] = ai.ptr;
        }
    } else {
        /* One allocation covers the arena: buffers that alias share its bytes
         * by design, so they cannot be separate live allocations. */
        tmem_alloc_desc a = {0};
        a.size = b.size;
        a.alignment = align;
        a.offset = d.offset;
        a.role = -1;
        a.name = "plan arena";
        tmem_alloc_info ai;
        st = tmem_heap_alloc_ex(heap, &a, &ai);
        if (st != TMEM_OK) return st;
        base = ai.ptr;
        if (ptrs)
            for (uint32_t i = 0; i < info.buffers; i++) {
                tmem_plan_buffer pb;
                ptrs[i] = base && tmem_plan_get_buffer(plan, i, &pb) == TMEM_OK ? (char *)base + pb.offset : NULL;
            }
    }
    if (out) *out = b;
    return TMEM_OK;
}

tmem_status tmem_plan_heap_unbind_ex(tmem_heap *heap, const tmem_plan *plan, const tmem_plan_binding *binding) {
    tmem_plan_info info;
    tmem_status st = check_heap(heap, plan, &info);
    if (st != TMEM_OK) return st;
    if (!binding || (binding->flags & ~(uint32_t)TMEM_PLAN_BIND_PER_BUFFER)) return tmem__err(TMEM_E_INVALID_ARG);
    if (!(binding->flags & TMEM_PLAN_BIND_PER_BUFFER)) return tmem_heap_free_offset(heap, binding->offset);
    tmem_status first = TMEM_OK;
    for (uint32_t i = 0; i < info.buffers; i++) {
        tmem_plan_buffer b;
        st = tmem_plan_get_buffer(plan, i, &b);
        if (st == TMEM_OK) st = tmem_heap_free_offset(heap, binding->offset + b.offset);
        if (st != TMEM_OK && first == TMEM_OK) first = st;
    }
    return first;
}

tmem_status tmem_plan_heap_bind(tmem_heap *heap, const tmem_plan *plan, void **ptrs) {
    return tmem_plan_heap_bind_ex(heap, plan, NULL, ptrs, NULL);
}

tmem_status tmem_plan_heap_unbind(tmem_heap *heap, const tmem_plan *plan) {
    tmem_plan_binding b = {0, 0, 0};
    return tmem_plan_heap_unbind_ex(heap, plan, &b);
}

/*
 * Device spans and requirements: the public face of a device backend's
 * optional hooks (backend.h). A heap offset becomes a pool offset (the
 * heap's base plus the offset), and the type's backend says which memory
 * object holds it. Read-only on heaps: heaps never see the backend.
 */
#include <string.h>
#include "backend/backend.h"
#include "core/core.h"
#include "heap/internal.h"
#include "typedmem/device.h"

tmem_status tmem_heap_device_span(const tmem_heap *heap, uint64_t offset, uint64_t size, tmem_device_span *out) {
    if (out) memset(out, 0, sizeof *out);
    uint64_t end, base, hsize;
    if (!tmem__heap_extent(heap, &base, &hsize) || !out || !size || tmem__add_overflow(offset, size, &end) ||
        end > hsize)
        return tmem__err(TMEM_E_INVALID_ARG);
    const tmem__pool *p = &tmem__heap_type(heap)->pool;
    if (!p->backend || !p->backend->locate) return tmem__err(TMEM_E_UNSUPPORTED);
    tmem__device_span s = {0};
    uint64_t pool_off = base + offset;
    tmem_status st = p->backend->locate(p->backend, &p->region, pool_off, size, &s);
    if (st != TMEM_OK) return st;
    out->backend = p->backend->name;
    out->memory = s.memory;
    out->offset = s.offset;
    out->memory_size = s.memory_size;
    out->address = s.address;
    out->host = s.host;
    out->pool_offset = pool_off;
    return TMEM_OK;
}

tmem_status tmem_type_resource_size_and_align(const tmem_type *type, tmem_resource_kind kind,
                                              uint64_t size, uint64_t alignment,
                                              tmem_size_align *out) {
    if (out) *out = (tmem_size_align){0, 0};
    if (!tmem__type_valid(type) || !out || (unsigned)kind >= TMEM_RESOURCE_KIND_COUNT)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem_size_align sa;
    tmem_status st = tmem_type_size_and_align(type, size, alignment, &sa);
    if (st != TMEM_OK) return st;
    const tmem__pool *p = &type->pool;
    if (p->backend && p->backend->size_and_align) {
        st = p->backend->size_and_align(p->backend, &p->region, (uint32_t)kind, &sa.size, &sa.alignment);
        if (st != TMEM_OK) return st;
        if (!tmem__is_pow2(sa.alignment) || sa.alignment > p->region.base_align) return tmem__err(TMEM_E_ALIGNMENT);
        if (!tmem__align_up(sa.size, sa.alignment, &sa.size)) return tmem__err(TMEM_E_OVERFLOW);
    }
    *out = sa;
    return TMEM_OK;
}

tmem_status tmem_type_device_info(const tmem_type *type, tmem_device_memory_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!tmem__type_valid(type) || !out) return tmem__err(TMEM_E_INVALID_ARG);
    const tmem__pool *p = &type->pool;
    if (!p->backend || !p->backend->memory_info) return tmem__err(TMEM_E_UNSUPPORTED);
    tmem_status st = p->backend->memory_info(p->backend, &p->region, out);
    if (st != TMEM_OK) memset(out, 0, sizeof *out);
    return st;
}

/* A heap range as a pool range: checked against the heap, turned into the
 * pool offset. */
static bool pool_range(const tmem_heap *heap, uint64_t offset, uint64_t size, uint64_t *pool_off) {
    uint64_t base, hsize, end;
    if (!tmem__heap_extent(heap, &base, &hsize) || !size || tmem__add_overflow(offset, size, &end) || end > hsize)
        return false;
    *pool_off = base + offset;
    return true;
}

tmem_status tmem_heap_copy(tmem_heap *dst, uint64_t dst_offset, const tmem_heap *src, uint64_t src_offset,
                           uint64_t size) {
    uint64_t d, s;
    if (!pool_range(dst, dst_offset, size, &d) || !pool_range(src, src_offset, size, &s))
        return tmem__err(TMEM_E_INVALID_ARG);
    void *dp = tmem_heap_ptr(dst, dst_offset), *sp = tmem_heap_ptr(src, src_offset);
    if (dp && sp) {
        memmove(dp, sp, (size_t)size);
        return TMEM_OK;
    }
    const tmem__pool *pd = &tmem__heap_type(dst)->pool, *ps = &tmem__heap_type(src)->pool;
    /* one device: a GPU registers one backend per placement, sharing hooks and user */
    if (!pd->backend || !ps->backend || !pd->backend->copy || pd->backend->copy != ps->backend->copy ||
        pd->backend->user != ps->backend->user)
        return tmem__err(TMEM_E_UNSUPPORTED);
    if (pd == ps && d < s + size && s < d + size) return tmem__err(TMEM_E_INVALID_ARG); /* overlap */
    return pd->backend->copy(pd->backend, &pd->region, d, &ps->region, s, size);
}

tmem_status tmem_heap_fill(tmem_heap *heap, uint64_t offset, uint64_t size, uint32_t value) {
    uint64_t off;
    if (!pool_range(heap, offset, size, &off)) return tmem__err(TMEM_E_INVALID_ARG);
    if (offset % 4 || size % 4) return tmem__err(TMEM_E_ALIGNMENT);
    uint8_t *p = tmem_heap_ptr(heap, offset);
    if (p) {
        for (uint64_t i = 0; i < size; i += 4) memcpy(p + i, &value, 4);
        return TMEM_OK;
    }
    const tmem__pool *pl = &tmem__heap_type(heap)->pool;
    if (!pl->backend || !pl->backend->fill) return tmem__err(TMEM_E_UNSUPPORTED);
    return pl->backend->fill(pl->backend, &pl->region, off, size, value);
}

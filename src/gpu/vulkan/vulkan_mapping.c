/*
 * Weights on the device without a second host copy (tmem_vk_import_mapping).
 *
 * Import: the mapped file's pages become VkDeviceMemory
 * (VK_EXT_external_memory_host). The ranges, sorted by offset, are grouped
 * greedily into pieces: a piece starts at its first range's offset rounded
 * down to minImportedHostPointerAlignment and takes ranges while its
 * rounded-up end stays within max_piece, so every range lies in one piece
 * (a VkDeviceMemory with one VkBuffer over it) at its file offset minus the
 * piece's start. Two pieces may share the alignment unit where a range ends
 * and the next begins: the driver imports those pages twice, read-only.
 *
 * Upload: the same grouping, packed at the buffer alignment into groups of
 * at most one device chunk; each group is one allocation of a heap of the
 * DEVICE type (role WEIGHTS) with one VkBuffer. Bytes go file -> staging
 * buffer (one heap of the staging type, <= 64 MiB, its host view written
 * a memory object at a time) -> device (tmem_heap_copy: vkCmdCopyBuffer,
 * waited). The staging heap is destroyed before returning.
 */
#include <stdlib.h>
#include <string.h>
#include "gpu/vulkan/vulkan_internal.h"
#include "core/core.h"

typedef struct piece {
    VkDeviceMemory memory;  /* import */
    tmem_heap *heap;        /* upload */
    VkBuffer buffer;
    uint64_t start;         /* import: mapping offset of the piece's byte 0 */
    uint64_t size;
} piece;

typedef struct range_loc {
    uint32_t piece;
    uint64_t offset;        /* in the piece's buffer */
    uint64_t size;
} range_loc;

struct tmem_vk_mapping {
    tmem_gpu *gpu;
    tmem_vk_mapping_info info;
    uint32_t npieces;
    piece *pieces;
    uint32_t nranges;
    range_loc *ranges;
};

static bool is_vk(const tmem_gpu *gpu) { return gpu && gpu->magic == TMEM__GPU_MAGIC && gpu->api == TMEM_GPU_VULKAN; }

static uint64_t align_down(uint64_t x, uint64_t a) { return x / a * a; }
static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Range indices by offset: insertion sort, linear on a GGUF's ranges
 * (already in file order). */
static void sort_ranges(const tmem_vk_range *rs, uint32_t *order, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) order[i] = i;
    for (uint32_t i = 1; i < n; i++) {
        uint32_t v = order[i], j = i;
        while (j > 0 && rs[order[j - 1]].offset > rs[v].offset) order[j] = order[j - 1], j--;
        order[j] = v;
    }
}

static void free_pieces(tmem_vk_mapping *m) {
    tmem__vk *vk = tmem__vk_of(m->gpu);
    for (uint32_t i = 0; i < m->npieces; i++) {
        piece *p = &m->pieces[i];
        if (p->buffer) vk->fn.vkDestroyBuffer(vk->device, p->buffer, NULL);
        if (p->memory) vk->fn.vkFreeMemory(vk->device, p->memory, NULL);
        tmem_heap_destroy(p->heap);
    }
}

void tmem_vk_mapping_destroy(tmem_vk_mapping *m) {
    if (!m) return;
    free_pieces(m);
    free(m->pieces);
    free(m->ranges);
    tmem__gpu_unref(m->gpu);
    free(m);
}

/* ---- import ---- */

static tmem_status import_piece(tmem_gpu *gpu, const uint8_t *base, piece *p, VkBufferUsageFlags usage,
                                bool *device_local) {
    tmem__vk *vk = tmem__vk_of(gpu);
    void *host = (void *)(base + p->start);
    static const VkExternalMemoryHandleTypeFlagBits kinds[2] = {
        VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
        VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_MAPPED_FOREIGN_MEMORY_BIT_EXT};
    VkResult r = VK_ERROR_INVALID_EXTERNAL_HANDLE;
    for (unsigned k = 0; k < 2 && r != VK_SUCCESS; k++) {
        VkMemoryHostPointerPropertiesEXT hp = {.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
        r = tmem__gpu_fault_hit(gpu) ? VK_ERROR_OUT_OF_HOST_MEMORY
                                     : vk->fn.vkGetMemoryHostPointerPropertiesEXT(vk->device, kinds[k], host, &hp);
        uint32_t bits = r == VK_SUCCESS ? hp.memoryTypeBits & vk->buffer_type_bits : 0, t = 0;
        if (!bits) {
            if (r == VK_SUCCESS) r = VK_ERROR_INVALID_EXTERNAL_HANDLE;
            continue;
        }
        /* prefer a DEVICE_LOCAL type where the import offers one */
        for (uint32_t i = 0; i < 32; i++)
            if ((bits >> i & 1) && (vk->mem.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) {
                t = i;
                goto picked;
            }
        while (!(bits >> t & 1)) t++;
    picked:;
        VkImportMemoryHostPointerInfoEXT imp = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
                                                .handleType = kinds[k], .pHostPointer = host};
        VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &imp,
                                   .allocationSize = p->size, .memoryTypeIndex = t};
        r = tmem__gpu_fault_hit(gpu) ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                                     : vk->fn.vkAllocateMemory(vk->device, &ai, NULL, &p->memory);
        if (r != VK_SUCCESS) {
            p->memory = VK_NULL_HANDLE;
            continue;
        }
        *device_local = (vk->mem.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
        VkExternalMemoryBufferCreateInfo ext = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                                .handleTypes = kinds[k]};
        VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .pNext = &ext, .size = p->size,
                                  .usage = usage};
        r = tmem__gpu_fault_hit(gpu) ? VK_ERROR_OUT_OF_HOST_MEMORY
                                     : vk->fn.vkCreateBuffer(vk->device, &bci, NULL, &p->buffer);
        if (r == VK_SUCCESS)
            r = tmem__gpu_fault_hit(gpu) ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                                         : vk->fn.vkBindBufferMemory(vk->device, p->buffer, p->memory, 0);
        if (r != VK_SUCCESS) {
            if (p->buffer) vk->fn.vkDestroyBuffer(vk->device, p->buffer, NULL);
            vk->fn.vkFreeMemory(vk->device, p->memory, NULL);
            p->buffer = VK_NULL_HANDLE;
            p->memory = VK_NULL_HANDLE;
            /* out of memory is an answer; a refused handle type tries the next */
            if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY) break;
        }
    }
    if (r == VK_ERROR_INVALID_EXTERNAL_HANDLE) return tmem__err(TMEM_E_UNSUPPORTED);
    return tmem__vk_status(r);
}

/* Group sorted ranges into pieces: `unit` the start/end rounding, `limit`
 * the most bytes of one piece, `pack` true to lay the ranges out back to
 * back at `align` (upload) instead of at their file offsets (import). */
static tmem_status group(tmem_vk_mapping *m, const tmem_vk_range *rs, const uint32_t *order, uint64_t unit,
                         uint64_t limit, bool pack, uint64_t align) {
    m->pieces = calloc(m->nranges, sizeof *m->pieces);
    if (!m->pieces) return tmem__err(TMEM_E_NO_MEMORY);
    piece *cur = NULL;
    for (uint32_t k = 0; k < m->nranges; k++) {
        const tmem_vk_range *r = &rs[order[k]];
        range_loc *loc = &m->ranges[order[k]];
        if (pack) {
            uint64_t at = cur ? align_up(cur->size, align) : 0;
            if (!cur || at + r->size > limit) {
                if (r->size > limit) return tmem__err(TMEM_E_OVERFLOW);
                cur = &m->pieces[m->npieces++];
                at = 0;
            }
            *loc = (range_loc){(uint32_t)(cur - m->pieces), at, r->size};
            cur->size = at + r->size;
        } else {
            uint64_t end = align_up(r->offset + r->size, unit);
            if (!cur || end - cur->start > limit) {
                cur = &m->pieces[m->npieces++];
                cur->start = align_down(r->offset, unit);
                if (end - cur->start > limit) return tmem__err(TMEM_E_OVERFLOW);
            }
            if (end - cur->start > cur->size) cur->size = end - cur->start;
            *loc = (range_loc){(uint32_t)(cur - m->pieces), r->offset - cur->start, r->size};
        }
    }
    return TMEM_OK;
}

static tmem_status do_import(tmem_vk_mapping *m, const tmem_vk_mapping_desc *d, const tmem_vk_range *rs,
                             const uint32_t *order, VkBufferUsageFlags usage) {
    tmem__vk *vk = tmem__vk_of(m->gpu);
    uint64_t a = vk->host_import_align ? vk->host_import_align : 4096;
    if (!vk->has_host_import || (uintptr_t)d->base % a || a > tmem__os_page_size())
        return tmem__err(TMEM_E_UNSUPPORTED);
    uint64_t limit = d->max_piece ? d->max_piece : 4ull << 30;
    if (vk->max_alloc && limit > vk->max_alloc) limit = vk->max_alloc;
    limit = align_down(limit, a);
    tmem_status st = group(m, rs, order, a, limit, false, 0);
    bool local = true;
    for (uint32_t i = 0; i < m->npieces && st == TMEM_OK; i++) {
        bool l = false;
        st = import_piece(m->gpu, d->base, &m->pieces[i], usage, &l);
        local = local && l;
        m->info.imported_bytes += m->pieces[i].size;
    }
    if (st == TMEM_OK) {
        m->info.imported = true;
        m->info.device_local = local;
    }
    return st;
}

/* ---- upload ---- */

/* A type of this gpu: the caller's, the role's, or one created by name. */
static tmem_status pick_type(tmem_gpu *gpu, tmem_type *given, tmem_role role, const char *name, tmem_placement pl,
                             tmem_lifetime life, uint64_t budget, tmem_type **out) {
    tmem_type *t = given;
    if (!t && role && tmem_role_get_type(gpu->ctx, role, &t) == TMEM_OK &&
        tmem__type_placement(t) != TMEM_PLACEMENT_DEVICE)
        t = NULL;
    if (!t && tmem_type_find(gpu->ctx, name, &t) != TMEM_OK) {
        tmem_type_desc td = {.name = name, .placement = pl, .lifetime = life, .budget = budget, .reserve = budget};
        tmem_status st = tmem_type_create(gpu->ctx, &td, &t);
        if (st == TMEM_E_EXISTS) st = tmem_type_find(gpu->ctx, name, &t);
        if (st != TMEM_OK) return st;
    }
    const tmem__backend *be = t->pool.backend;
    if (!be || be->user != gpu || tmem__type_placement(t) != pl) return tmem__err(TMEM_E_INVALID_ARG);
    *out = t;
    return TMEM_OK;
}

/* Copy n bytes of the file at src into (heap, off) through the staging heap. */
static tmem_status stage_copy(tmem_vk_mapping *m, tmem_heap *stage, uint64_t ring, tmem_heap *dst, uint64_t off,
                              const uint8_t *src, uint64_t n) {
    while (n) {
        /* the staging heap's host view is contiguous within one memory object */
        tmem_device_span sp;
        tmem_status st = tmem_heap_device_span(stage, 0, 1, &sp);
        if (st != TMEM_OK) return st;
        uint64_t step = n, room = sp.memory_size - sp.offset;
        if (step > ring) step = ring;
        if (step > room) step = room;
        if (!sp.host) return tmem__err(TMEM_E_UNSUPPORTED);
        memcpy(sp.host, src, (size_t)step);
        st = tmem_heap_copy(dst, off, stage, 0, step);
        if (st != TMEM_OK) return st;
        m->info.uploaded_bytes += step;
        m->info.copies++;
        src += step, off += step, n -= step;
    }
    return TMEM_OK;
}

static tmem_status do_upload(tmem_vk_mapping *m, const tmem_vk_mapping_desc *d, const tmem_vk_range *rs,
                             const uint32_t *order, VkBufferUsageFlags usage) {
    tmem_gpu *gpu = m->gpu;
    tmem__vk *vk = tmem__vk_of(gpu);
    uint64_t ring = d->staging_bytes ? d->staging_bytes : TMEM_VK_STAGING_MAX;
    tmem_type *dev, *stt;
    tmem_status st = pick_type(gpu, d->device_type, TMEM_ROLE_WEIGHTS, "/memory/device-weights",
                               TMEM_PLACEMENT_DEVICE, TMEM_LIFETIME_PERSISTENT, 0, &dev);
    if (st == TMEM_OK)
        st = pick_type(gpu, d->staging_type, TMEM_ROLE_DEFAULT, "/memory/staging", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE,
                       TMEM_LIFETIME_TRANSIENT, ring, &stt);
    if (st != TMEM_OK) return st;
    tmem_type_stats ts0, ts1;
    st = tmem_type_get_stats(dev, &ts0);
    if (st != TMEM_OK) return st;
    uint64_t align = d->alignment ? d->alignment : vk->props.limits.minStorageBufferOffsetAlignment;
    if (align < 16) align = 16;
    if (!tmem__is_pow2(align)) return tmem__err(TMEM_E_INVALID_ARG);
    st = group(m, rs, order, 1, gpu->chunk, true, align);
    /* one heap and one buffer per group, then the bytes */
    for (uint32_t i = 0; i < m->npieces && st == TMEM_OK; i++) {
        piece *p = &m->pieces[i];
        tmem_heap_desc hd = {.kind = TMEM_HEAP_GENERAL, .type = dev, .role = TMEM_ROLE_WEIGHTS,
                             .size = align_up(p->size, 4096), .name = "vk weights"};
        st = tmem_heap_create(gpu->ctx, &hd, &p->heap);
        tmem_alloc_desc ad = {.size = p->size, .alignment = align};
        tmem_alloc_info ai;
        if (st == TMEM_OK) st = tmem_heap_alloc_ex(p->heap, &ad, &ai);
        if (st == TMEM_OK && ai.offset) st = tmem__err(TMEM_E_ALIGNMENT); /* ranges are laid out from 0 */
        if (st == TMEM_OK) st = tmem_vk_buffer_create(gpu, p->heap, 0, p->size, usage, &p->buffer);
    }
    tmem_heap *stage = NULL;
    if (st == TMEM_OK) {
        tmem_heap_desc hd = {.kind = TMEM_HEAP_GENERAL, .type = stt, .size = ring, .name = "vk staging"};
        st = tmem_heap_create(gpu->ctx, &hd, &stage);
        tmem_alloc_desc ad = {.size = ring, .alignment = 256};
        tmem_alloc_info ai;
        if (st == TMEM_OK) st = tmem_heap_alloc_ex(stage, &ad, &ai);
        if (st == TMEM_OK && ai.offset) st = tmem__err(TMEM_E_ALIGNMENT);
        m->info.staging_bytes = ring;
    }
    for (uint32_t k = 0; k < m->nranges && st == TMEM_OK; k++) {
        const range_loc *loc = &m->ranges[order[k]];
        st = stage_copy(m, stage, ring, m->pieces[loc->piece].heap, loc->offset,
                        (const uint8_t *)d->base + rs[order[k]].offset, loc->size);
    }
    tmem_heap_destroy(stage); /* the staging buffer lives only through the upload */
    m->info.device_local = true;
    if (st == TMEM_OK && tmem_type_get_stats(dev, &ts1) == TMEM_OK)
        m->info.device_bytes = ts1.committed.current - ts0.committed.current;
    return st;
}

tmem_status tmem_vk_import_mapping(tmem_gpu *gpu, const tmem_vk_mapping_desc *d, tmem_vk_mapping **out) {
    if (out) *out = NULL;
    if (!is_vk(gpu) || !d || !out || !d->base || !d->size || (d->flags & ~(uint32_t)TMEM_VK_MAPPING_FLAG_MASK) ||
        (d->flags & TMEM_VK_MAPPING_UPLOAD && d->flags & TMEM_VK_MAPPING_IMPORT_ONLY) ||
        d->staging_bytes > TMEM_VK_STAGING_MAX || (d->ranges ? !d->range_count : d->range_count != 0))
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem_vk_range whole = {0, d->size};
    const tmem_vk_range *rs = d->ranges ? d->ranges : &whole;
    uint32_t n = d->ranges ? d->range_count : 1;
    for (uint32_t i = 0; i < n; i++)
        if (!rs[i].size || rs[i].offset > d->size || rs[i].size > d->size - rs[i].offset)
            return tmem__err(TMEM_E_INVALID_ARG);
    tmem_vk_mapping *m = calloc(1, sizeof *m);
    uint32_t *order = calloc(n, sizeof *order);
    if (m) m->ranges = calloc(n, sizeof *m->ranges);
    if (!m || !order || !m->ranges) {
        if (m) free(m->ranges);
        free(m);
        free(order);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    m->gpu = gpu;
    m->nranges = n;
    sort_ranges(rs, order, n);
    VkBufferUsageFlags usage =
        d->usage ? d->usage : VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
    const char *env = tmem__os_getenv("TMEM_VK_NO_IMPORT");
    bool upload = (d->flags & TMEM_VK_MAPPING_UPLOAD) || (env && env[0] == '1');
    tmem_status st = TMEM_OK;
    if (!upload) {
        st = do_import(m, d, rs, order, usage);
        if (st != TMEM_OK) {
            m->info.import_status = st;
            free_pieces(m);
            free(m->pieces);
            m->pieces = NULL;
            m->npieces = 0;
            m->info.imported_bytes = 0;
            /* out of memory and device loss are answers; a device that cannot import uploads */
            if (st == TMEM_E_UNSUPPORTED && !(d->flags & TMEM_VK_MAPPING_IMPORT_ONLY)) upload = true;
        }
    }
    if (upload) st = do_upload(m, d, rs, order, usage);
    free(order);
    m->info.pieces = m->npieces;
    tmem__gpu_retain(gpu);
    if (st != TMEM_OK) {
        tmem_vk_mapping_destroy(m);
        return st;
    }
    *out = m;
    return TMEM_OK;
}

tmem_status tmem_vk_mapping_span(const tmem_vk_mapping *m, uint32_t index, tmem_vk_span *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!m || !out || index >= m->nranges) return tmem__err(TMEM_E_INVALID_ARG);
    const range_loc *r = &m->ranges[index];
    *out = (tmem_vk_span){m->pieces[r->piece].buffer, r->offset, r->size, r->piece};
    return TMEM_OK;
}

tmem_status tmem_vk_mapping_get_info(const tmem_vk_mapping *m, tmem_vk_mapping_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!m || !out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = m->info;
    return TMEM_OK;
}

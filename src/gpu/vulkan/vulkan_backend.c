/*
 * The Vulkan pool backend. A pool (region) is a row of chunks of
 * gpu->chunk bytes (smaller for a small pool: the next power of two of its
 * size); the pool's commit granule is the chunk, so committing a range
 * allocates the VkDeviceMemory of each chunk it covers and decommitting
 * frees them: commit-on-demand and decommit work as on the host, and the
 * device bytes are exactly the committed bytes the budgets see.
 * Host-visible chunks are mapped once, at allocation, for their lifetime.
 * With TMEM_GPU_HOST_IMPORT, a DEVICE_HOST_VISIBLE pool is a host
 * reservation instead, and each chunk is its committed host pages imported
 * (VK_EXT_external_memory_host): one contiguous host base for the pool.
 * Runs under the context lock (backend.h): no calls back into the core.
 */
#include <stdlib.h>
#include <string.h>
#include "gpu/vulkan/vulkan_internal.h"
#include "os/os.h"

void tmem__vk_heap_budget(tmem_gpu *gpu, uint32_t t, tmem_device_memory_info *out);

static tmem__vk_region *region_of(const tmem__region *r) { return (tmem__vk_region *)(uintptr_t)r->handle; }

static uint32_t memory_type_for(const tmem__vk *vk, tmem_placement placement, uint32_t flags) {
    if (placement == TMEM_PLACEMENT_DEVICE_HOST_VISIBLE && (flags & TMEM_TYPE_HOST_CACHED)) return vk->type_cached;
    return vk->type_of[placement];
}

static tmem_status vk_reserve(const tmem__backend *be, tmem_placement placement, uint32_t type_flags, uint64_t size,
                              tmem__region *out) {
    tmem_gpu *gpu = tmem__gpu_of(be);
    tmem__vk *vk = tmem__vk_of(gpu);
    uint32_t t = memory_type_for(vk, placement, type_flags);
    if (t == UINT32_MAX) return tmem__err(TMEM_E_UNSUPPORTED); /* e.g. no HOST_CACHED type */
    tmem__region r = {0};
    uint64_t chunk = gpu->chunk;
    if (size && size < chunk) chunk = tmem__gpu_pow2_ceil(size);
    if (chunk < 65536) chunk = 65536;
    if (!tmem__align_up(size, chunk, &r.size) || r.size > (1ull << 46)) return tmem__err(TMEM_E_OVERFLOW);
    r.granule = chunk;
    r.base_align = chunk; /* a chunk's offset 0 satisfies every alignment the device asks */
    r.flags = type_flags;
    r.placement = placement;
    tmem__vk_region *vr = calloc(1, sizeof *vr);
    if (!vr) return tmem__err(TMEM_E_NO_MEMORY);
    vr->memory_type = t;
    vr->chunk = chunk;
    vr->nchunks = r.size / chunk;
    vr->chunks = calloc(vr->nchunks ? vr->nchunks : 1, sizeof *vr->chunks);
    vr->maps = calloc(vr->nchunks ? vr->nchunks : 1, sizeof *vr->maps);
    if (!vr->chunks || !vr->maps) {
        free(vr->chunks);
        free(vr->maps);
        free(vr);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    if (placement == TMEM_PLACEMENT_DEVICE_HOST_VISIBLE && (gpu->flags & TMEM_GPU_HOST_IMPORT)) {
        tmem_status st = chunk % (vk->host_import_align ? vk->host_import_align : 4096)
                             ? tmem__err(TMEM_E_ALIGNMENT)
                             : r.size ? tmem__os_reserve((size_t)r.size, (size_t)chunk, &r.base) : TMEM_OK;
        if (st != TMEM_OK) {
            free(vr->chunks);
            free(vr->maps);
            free(vr);
            return st;
        }
        vr->host_import = true;
    }
    r.handle = (uint64_t)(uintptr_t)vr;
    tmem__gpu_retain(gpu);
    *out = r;
    return TMEM_OK;
}

static void free_chunk(tmem_gpu *gpu, tmem__vk_region *vr, uint64_t i) {
    tmem__vk *vk = tmem__vk_of(gpu);
    if (!vr->chunks[i]) return;
    if (vr->maps[i] && !vr->host_import) vk->fn.vkUnmapMemory(vk->device, vr->chunks[i]);
    vk->fn.vkFreeMemory(vk->device, vr->chunks[i], NULL);
    if (vr->host_import) (void)tmem__os_decommit(vr->maps[i], (size_t)vr->chunk); /* the pages go too */
    vr->chunks[i] = VK_NULL_HANDLE;
    vr->maps[i] = NULL;
    tmem__gpu_count(gpu, -(int64_t)vr->chunk);
}

static void vk_release(const tmem__backend *be, tmem__region *r) {
    tmem_gpu *gpu = tmem__gpu_of(be);
    tmem__vk_region *vr = region_of(r);
    if (!vr) return;
    for (uint64_t i = 0; i < vr->nchunks; i++) free_chunk(gpu, vr, i);
    if (vr->host_import && r->base) (void)tmem__os_release(r->base, (size_t)r->size);
    r->base = NULL;
    free(vr->chunks);
    free(vr->maps);
    free(vr);
    r->handle = 0;
    r->size = 0;
    tmem__gpu_unref(gpu);
}

static tmem_status import_chunk(tmem_gpu *gpu, void *base, tmem__vk_region *vr, uint64_t i);

static tmem_status alloc_chunk(tmem_gpu *gpu, void *base, tmem__vk_region *vr, uint64_t i) {
    tmem__vk *vk = tmem__vk_of(gpu);
    if (vk->has_budget) {
        tmem_device_memory_info mi = {0};
        tmem__vk_heap_budget(gpu, vr->memory_type, &mi);
        if (mi.usage + vr->chunk > mi.budget) return tmem__err(TMEM_E_BUDGET);
    }
    if (tmem__gpu_fault_hit(gpu)) return tmem__vk_status(VK_ERROR_OUT_OF_DEVICE_MEMORY);
    if (vr->host_import) return import_chunk(gpu, base, vr, i);
    VkExportMemoryAllocateInfo exp = {.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                                      .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = vr->chunk,
                               .memoryTypeIndex = vr->memory_type,
                               .pNext = (gpu->flags & TMEM_GPU_EXPORTABLE) ? &exp : NULL};
    VkDeviceMemory m;
    VkResult res = vk->fn.vkAllocateMemory(vk->device, &ai, NULL, &m);
    if (res != VK_SUCCESS) return tmem__vk_status(res);
    void *map = NULL;
    if (vk->mem.memoryTypes[vr->memory_type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        res = vk->fn.vkMapMemory(vk->device, m, 0, VK_WHOLE_SIZE, 0, &map);
        if (res != VK_SUCCESS) {
            vk->fn.vkFreeMemory(vk->device, m, NULL);
            return tmem__vk_status(res);
        }
    }
    vr->chunks[i] = m;
    vr->maps[i] = map;
    tmem__gpu_count(gpu, (int64_t)vr->chunk);
    return TMEM_OK;
}

/* TMEM_GPU_HOST_IMPORT: commit the chunk's host pages, import them. */
static tmem_status import_chunk(tmem_gpu *gpu, void *base, tmem__vk_region *vr, uint64_t i) {
    tmem__vk *vk = tmem__vk_of(gpu);
    char *p = (char *)base + i * vr->chunk;
    tmem_status st = tmem__os_commit(p, (size_t)vr->chunk, TMEM__OS_MAP_POPULATE);
    if (st != TMEM_OK) return st;
    VkMemoryHostPointerPropertiesEXT hp = {.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    VkResult res = vk->fn.vkGetMemoryHostPointerPropertiesEXT(
        vk->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, p, &hp);
    uint32_t bits = hp.memoryTypeBits & vk->buffer_type_bits;
    if (res == VK_SUCCESS && !(bits & (1u << vr->memory_type))) {
        /* the first host-visible type the import allows */
        uint32_t t = 0;
        while (t < 32 && !((bits >> t) & 1 && (vk->mem.memoryTypes[t].propertyFlags &
                                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)))
            t++;
        if (t == 32) res = VK_ERROR_FEATURE_NOT_PRESENT;
        else vr->memory_type = t;
    }
    VkImportMemoryHostPointerInfoEXT imp = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
                                            .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                                            .pHostPointer = p};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &imp,
                               .allocationSize = vr->chunk, .memoryTypeIndex = vr->memory_type};
    VkDeviceMemory m = VK_NULL_HANDLE;
    if (res == VK_SUCCESS) res = vk->fn.vkAllocateMemory(vk->device, &ai, NULL, &m);
    if (res != VK_SUCCESS) {
        (void)tmem__os_decommit(p, (size_t)vr->chunk);
        return tmem__vk_status(res);
    }
    vr->chunks[i] = m;
    vr->maps[i] = p;
    tmem__gpu_count(gpu, (int64_t)vr->chunk);
    return TMEM_OK;
}

VkExternalMemoryHandleTypeFlags tmem__vk_region_handle_types(const tmem_gpu *gpu, const tmem__region *r) {
    const tmem__vk_region *vr = region_of(r);
    if (vr && vr->host_import) return VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    return (gpu->flags & TMEM_GPU_EXPORTABLE) ? VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT : 0;
}

static tmem_status vk_commit(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size) {
    tmem_gpu *gpu = tmem__gpu_of(be);
    tmem__vk_region *vr = region_of(r);
    uint64_t a = off / vr->chunk, b = (off + size) / vr->chunk;
    for (uint64_t i = a; i < b; i++) {
        if (vr->chunks[i]) continue;
        tmem_status st = alloc_chunk(gpu, r->base, vr, i);
        if (st != TMEM_OK) {
            /* Nothing changed: free what this call allocated. The pool
             * commits only granules that were free, so all of [a, i) is ours. */
            for (uint64_t k = a; k < i; k++) free_chunk(gpu, vr, k);
            return st;
        }
    }
    return TMEM_OK;
}

static tmem_status vk_decommit(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size) {
    tmem_gpu *gpu = tmem__gpu_of(be);
    tmem__vk_region *vr = region_of(r);
    for (uint64_t i = off / vr->chunk; i < (off + size) / vr->chunk; i++) free_chunk(gpu, vr, i);
    return TMEM_OK;
}

static tmem_status vk_residency(const tmem__backend *be, const tmem__region *r, uint64_t off,
                                uint64_t size, uint64_t *out) {
    (void)be;
    const tmem__vk_region *vr = region_of(r);
    uint64_t n = 0;
    for (uint64_t i = off / vr->chunk; i < (off + size + vr->chunk - 1) / vr->chunk && i < vr->nchunks; i++)
        n += vr->chunks[i] != VK_NULL_HANDLE;
    *out = n * vr->chunk;
    return TMEM_OK;
}

static tmem_status vk_locate(const tmem__backend *be, const tmem__region *r, uint64_t off, uint64_t size,
                             tmem__device_span *out) {
    (void)be;
    const tmem__vk_region *vr = region_of(r);
    uint64_t a = off / vr->chunk, b = (off + size - 1) / vr->chunk;
    if (b >= vr->nchunks) return tmem__err(TMEM_E_INVALID_ARG);
    if (a != b) return tmem__err(TMEM_E_ALIGNMENT);
    if (!vr->chunks[a]) return tmem__err(TMEM_E_STATE);
    out->memory = (uint64_t)vr->chunks[a];
    out->offset = off % vr->chunk;
    out->memory_size = vr->chunk;
    out->address = 0;
    out->host = vr->maps[a] ? (char *)vr->maps[a] + out->offset : NULL;
    return TMEM_OK;
}

/* Requirements of a buffer of `size` (all usual usages), of a probe image
 * for images: the device's alignment, and for optimal images the
 * bufferImageGranularity on both ends, so an optimal image never shares a
 * granularity page with a linear neighbour. */
static tmem_status vk_size_and_align(const tmem__backend *be, const tmem__region *r, uint32_t kind, uint64_t *size,
                                     uint64_t *align) {
    tmem__vk *vk = tmem__vk_of(tmem__gpu_of(be));
    const tmem__vk_region *vr = region_of(r);
    VkMemoryRequirements req;
    if (kind == TMEM_RESOURCE_BUFFER) {
        VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = *size,
                                  .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                                           VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                           VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_INDEX_BUFFER_BIT |
                                           VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT};
        VkBuffer b;
        VkResult res = vk->fn.vkCreateBuffer(vk->device, &bci, NULL, &b);
        if (res != VK_SUCCESS) return tmem__vk_status(res);
        vk->fn.vkGetBufferMemoryRequirements(vk->device, b, &req);
        vk->fn.vkDestroyBuffer(vk->device, b, NULL);
    } else {
        VkImageCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                                 .imageType = VK_IMAGE_TYPE_2D,
                                 .format = VK_FORMAT_R8G8B8A8_UNORM,
                                 .extent = {64, 64, 1},
                                 .mipLevels = 1,
                                 .arrayLayers = 1,
                                 .samples = VK_SAMPLE_COUNT_1_BIT,
                                 .tiling = kind == TMEM_RESOURCE_IMAGE_OPTIMAL
                                               ? VK_IMAGE_TILING_OPTIMAL
                                               : VK_IMAGE_TILING_LINEAR,
                                 .usage =
                                     VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                                 .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
        VkImage im;
        VkResult res = vk->fn.vkCreateImage(vk->device, &ici, NULL, &im);
        if (res != VK_SUCCESS) return tmem__vk_status(res);
        vk->fn.vkGetImageMemoryRequirements(vk->device, im, &req);
        vk->fn.vkDestroyImage(vk->device, im, NULL);
        req.size = *size;
        if (kind == TMEM_RESOURCE_IMAGE_OPTIMAL && vk->props.limits.bufferImageGranularity > req.alignment)
            req.alignment = vk->props.limits.bufferImageGranularity;
    }
    if (!(req.memoryTypeBits & (1u << vr->memory_type))) return tmem__err(TMEM_E_UNSUPPORTED);
    if (req.alignment > *align) *align = req.alignment;
    if (req.size > *size) *size = req.size;
    if (*size > vr->chunk) return tmem__err(TMEM_E_OVERFLOW); /* cannot lie in one chunk */
    return TMEM_OK;
}

static tmem_status vk_memory_info(const tmem__backend *be, const tmem__region *r, tmem_device_memory_info *out) {
    tmem__vk_heap_budget(tmem__gpu_of(be), region_of(r)->memory_type, out);
    return TMEM_OK;
}

void tmem__vk_backend_init(tmem_gpu *gpu) {
    for (unsigned p = TMEM_PLACEMENT_DEVICE; p <= TMEM_PLACEMENT_DEVICE_HOST_VISIBLE; p++) {
        tmem__backend *be = &gpu->backends[p];
        *be = (tmem__backend){"vulkan",    vk_reserve,        vk_release,    vk_commit,
                              vk_decommit, tmem__gpu_advise,  vk_residency,  gpu,
                              vk_locate,   vk_size_and_align, vk_memory_info,
                              tmem__vk_copy, tmem__vk_fill};
    }
}

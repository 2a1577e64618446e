/*
 * Vulkan resources at heap offsets: buffers and images bound to the chunk
 * that holds the offset, the aliasing barrier, camera surfaces imported as
 * Vulkan memory (VK_EXT_external_memory_host: the surface's own mapping,
 * no copy), and one-shot submissions.
 */
#include <string.h>
#include "gpu/vulkan/vulkan_internal.h"
#include "core/core.h"
#include "surface/internal.h"

static bool is_vk(const tmem_gpu *gpu) { return gpu && gpu->magic == TMEM__GPU_MAGIC && gpu->api == TMEM_GPU_VULKAN; }

/* The span of a heap range, checked to be memory of this gpu. */
static tmem_status span_of(tmem_gpu *gpu, const tmem_heap *heap, uint64_t offset, uint64_t size,
                           tmem_device_span *out) {
    tmem_status st = tmem_heap_device_span(heap, offset, size, out);
    if (st != TMEM_OK) return st;
    const tmem__backend *be = tmem__heap_type(heap)->pool.backend;
    return be && be->user == gpu ? TMEM_OK : tmem__err(TMEM_E_UNSUPPORTED);
}

/* What resources bound in this heap's pool must declare (host import,
 * exportable chunks). */
static VkExternalMemoryHandleTypeFlags handle_types(tmem_gpu *gpu, const tmem_heap *heap) {
    const tmem__pool *p = &tmem__heap_type(heap)->pool;
    return p->backend && p->backend->user == gpu ? tmem__vk_region_handle_types(gpu, &p->region) : 0;
}

tmem_status tmem_vk_buffer_create(tmem_gpu *gpu, const tmem_heap *heap, uint64_t offset, uint64_t size,
                                  VkBufferUsageFlags usage, VkBuffer *out) {
    if (out) *out = VK_NULL_HANDLE;
    if (!is_vk(gpu) || !heap || !size || !usage || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__vk *vk = tmem__vk_of(gpu);
    tmem_device_span span;
    tmem_status st = span_of(gpu, heap, offset, size, &span);
    if (st != TMEM_OK) return st;
    /* Memory allocated exportable binds only resources that say so. */
    VkExternalMemoryBufferCreateInfo ext = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                            .handleTypes = handle_types(gpu, heap)};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size, .usage = usage,
                              .pNext = ext.handleTypes ? &ext : NULL};
    VkBuffer b;
    VkResult r = vk->fn.vkCreateBuffer(vk->device, &bci, NULL, &b);
    if (r != VK_SUCCESS) return tmem__vk_status(r);
    VkMemoryRequirements req;
    vk->fn.vkGetBufferMemoryRequirements(vk->device, b, &req);
    if (span.offset % req.alignment || span.offset + req.size > span.memory_size) {
        vk->fn.vkDestroyBuffer(vk->device, b, NULL);
        return tmem__err(TMEM_E_ALIGNMENT);
    }
    r = vk->fn.vkBindBufferMemory(vk->device, b, (VkDeviceMemory)span.memory, span.offset);
    if (r != VK_SUCCESS) {
        vk->fn.vkDestroyBuffer(vk->device, b, NULL);
        return tmem__vk_status(r);
    }
    *out = b;
    return TMEM_OK;
}

void tmem_vk_buffer_destroy(tmem_gpu *gpu, VkBuffer buffer) {
    if (is_vk(gpu) && buffer) tmem__vk_of(gpu)->fn.vkDestroyBuffer(tmem__vk_of(gpu)->device, buffer, NULL);
}

tmem_status tmem_vk_image_create(tmem_gpu *gpu, const tmem_heap *heap, uint64_t offset, const VkImageCreateInfo *info,
                                 VkImage *out) {
    if (out) *out = VK_NULL_HANDLE;
    if (!is_vk(gpu) || !heap || !info || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__vk *vk = tmem__vk_of(gpu);
    VkImageCreateInfo ici = *info;
    VkExternalMemoryImageCreateInfo ext = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO,
                                           .pNext = info->pNext, .handleTypes = handle_types(gpu, heap)};
    if (ext.handleTypes) ici.pNext = &ext;
    VkImage im;
    VkResult r = vk->fn.vkCreateImage(vk->device, &ici, NULL, &im);
    if (r != VK_SUCCESS) return tmem__vk_status(r);
    VkMemoryRequirements req;
    vk->fn.vkGetImageMemoryRequirements(vk->device, im, &req);
    tmem_device_span span;
    tmem_status st = span_of(gpu, heap, offset, req.size, &span);
    if (st == TMEM_OK && (span.offset % req.alignment || !(req.memoryTypeBits))) st = tmem__err(TMEM_E_ALIGNMENT);
    if (st == TMEM_OK && (r = vk->fn.vkBindImageMemory(vk->device, im, (VkDeviceMemory)span.memory,
                                                       span.offset)) != VK_SUCCESS)
        st = tmem__vk_status(r);
    if (st != TMEM_OK) {
        vk->fn.vkDestroyImage(vk->device, im, NULL);
        return st;
    }
    *out = im;
    return TMEM_OK;
}

void tmem_vk_image_destroy(tmem_gpu *gpu, VkImage image) {
    if (is_vk(gpu) && image) tmem__vk_of(gpu)->fn.vkDestroyImage(tmem__vk_of(gpu)->device, image, NULL);
}

void tmem_vk_cmd_alias_barrier(tmem_gpu *gpu, VkCommandBuffer cb) {
    if (!is_vk(gpu) || !cb) return;
    const VkAccessFlags any = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                              VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = any, .dstAccessMask = any};
    tmem__vk_of(gpu)->fn.vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

tmem_status tmem_vk_surface_import(tmem_gpu *gpu, tmem_surface *surface, tmem_vk_surface_memory *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!is_vk(gpu) || !surface || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__vk *vk = tmem__vk_of(gpu);
    if (!vk->has_host_import) return tmem__err(TMEM_E_UNSUPPORTED);
    tmem_surface_info info;
    tmem_status st = tmem_surface_get_info(surface, &info);
    if (st != TMEM_OK) return st;
    void *base = tmem_surface_base(surface);
    uint64_t size = tmem__surface_map_size(surface), a = vk->host_import_align ? vk->host_import_align : 4096;
    /* Only a whole, aligned mapping can be imported (memfd surfaces are). */
    if (!base || !size || (uintptr_t)base % a || size % a) return tmem__err(TMEM_E_UNSUPPORTED);
    VkMemoryHostPointerPropertiesEXT hp = {.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    VkResult r = vk->fn.vkGetMemoryHostPointerPropertiesEXT(
        vk->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, base, &hp);
    if (r != VK_SUCCESS) return tmem__vk_status(r);
    uint32_t bits = hp.memoryTypeBits & vk->buffer_type_bits, t = 0;
    if (!bits) return tmem__err(TMEM_E_UNSUPPORTED);
    while (!(bits & (1u << t))) t++;
    VkImportMemoryHostPointerInfoEXT imp = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
                                            .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                                            .pHostPointer = base};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &imp, .allocationSize = size,
                               .memoryTypeIndex = t};
    VkExternalMemoryBufferCreateInfo ext = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                            .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .pNext = &ext, .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT};
    if ((r = vk->fn.vkAllocateMemory(vk->device, &ai, NULL, &out->memory)) != VK_SUCCESS) return tmem__vk_status(r);
    if ((r = vk->fn.vkCreateBuffer(vk->device, &bci, NULL, &out->buffer)) != VK_SUCCESS ||
        (r = vk->fn.vkBindBufferMemory(vk->device, out->buffer, out->memory, 0)) != VK_SUCCESS) {
        if (out->buffer) vk->fn.vkDestroyBuffer(vk->device, out->buffer, NULL);
        vk->fn.vkFreeMemory(vk->device, out->memory, NULL);
        memset(out, 0, sizeof *out);
        return tmem__vk_status(r);
    }
    out->size = size;
    out->layout = info.layout;
    out->surface = tmem_surface_retain(surface);
    return TMEM_OK;
}

void tmem_vk_surface_release(tmem_gpu *gpu, tmem_vk_surface_memory *mem) {
    if (!is_vk(gpu) || !mem || !mem->memory) return;
    tmem__vk *vk = tmem__vk_of(gpu);
    vk->fn.vkDestroyBuffer(vk->device, mem->buffer, NULL);
    vk->fn.vkFreeMemory(vk->device, mem->memory, NULL);
    tmem_surface_release(mem->surface);
    memset(mem, 0, sizeof *mem);
}

tmem_status tmem__vk_submit(tmem__vk *vk, tmem__vk_record_fn record, void *arg) {
    tmem__os_mutex_lock(&vk->submit_lock);
    VkResult r = VK_SUCCESS;
    if (!vk->conv.cmd_pool) {
        VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       .queueFamilyIndex = vk->queue_family};
        r = vk->fn.vkCreateCommandPool(vk->device, &pci, NULL, &vk->conv.cmd_pool);
    }
    if (r == VK_SUCCESS && !vk->conv.fence) {
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        r = vk->fn.vkCreateFence(vk->device, &fci, NULL, &vk->conv.fence);
    }
    VkCommandBuffer cb = VK_NULL_HANDLE;
    if (r == VK_SUCCESS) {
        VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                           .commandPool = vk->conv.cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                           .commandBufferCount = 1};
        r = vk->fn.vkAllocateCommandBuffers(vk->device, &cai, &cb);
    }
    if (r == VK_SUCCESS) {
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        r = vk->fn.vkBeginCommandBuffer(cb, &bi);
    }
    if (r == VK_SUCCESS) {
        record(vk, cb, arg);
        r = vk->fn.vkEndCommandBuffer(cb);
    }
    if (r == VK_SUCCESS) {
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
        r = vk->fn.vkQueueSubmit(vk->queue, 1, &si, vk->conv.fence);
        if (r == VK_SUCCESS) r = vk->fn.vkWaitForFences(vk->device, 1, &vk->conv.fence, VK_TRUE, UINT64_MAX);
        (void)vk->fn.vkResetFences(vk->device, 1, &vk->conv.fence);
    }
    if (cb) vk->fn.vkFreeCommandBuffers(vk->device, vk->conv.cmd_pool, 1, &cb);
    tmem__os_mutex_unlock(&vk->submit_lock);
    return tmem__vk_status(r);
}

typedef struct user_record {
    tmem_vk_record_fn fn;
    void *user;
} user_record;

static void run_user(tmem__vk *vk, VkCommandBuffer cb, void *arg) {
    (void)vk;
    const user_record *u = arg;
    u->fn(cb, u->user);
}

tmem_status tmem_vk_run(tmem_gpu *gpu, tmem_vk_record_fn record, void *user) {
    if (!is_vk(gpu) || !record) return tmem__err(TMEM_E_INVALID_ARG);
    user_record u = {record, user};
    return tmem__vk_submit(tmem__vk_of(gpu), run_user, &u);
}

tmem_status tmem_vk_queue_submit(tmem_gpu *gpu, uint32_t count, const VkSubmitInfo *submits, VkFence fence) {
    if (!is_vk(gpu) || (count && !submits)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__vk *vk = tmem__vk_of(gpu);
    tmem__os_mutex_lock(&vk->submit_lock);
    VkResult r = vk->fn.vkQueueSubmit(vk->queue, count, submits, fence);
    tmem__os_mutex_unlock(&vk->submit_lock);
    return tmem__vk_status(r);
}

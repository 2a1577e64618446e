/* gpu_naive.c: the naive twin's device memory, what a straightforward port
 * does: one VkDeviceMemory per tensor, of exactly its size, for the
 * tensor's whole life (no pool, no plan, no aliasing), allocated with the
 * driver's own calls (through the library's loader: tmem_vk_get_native's
 * entry points) and counted here, outside the typed accounting. The same
 * shaders run over it, so the logits are the typed path's bit for bit. */
#include <string.h>
#include "gpurun/gpu_internal.h"

typedef struct raw_fns {
    PFN_vkGetPhysicalDeviceMemoryProperties props;
    PFN_vkCreateBuffer create;
    PFN_vkDestroyBuffer destroy;
    PFN_vkGetBufferMemoryRequirements reqs;
    PFN_vkAllocateMemory alloc;
    PFN_vkFreeMemory free;
    PFN_vkBindBufferMemory bind;
    PFN_vkMapMemory map;
    VkDevice device;
    VkPhysicalDevice physical;
} raw_fns;

static bool fns(tmem_gpu *gpu, raw_fns *f) {
    tmem_vk_native n;
    if (tmem_vk_get_native(gpu, &n, NULL) != TMEM_OK || !n.get_instance_proc_addr || !n.get_device_proc_addr)
        return false;
    f->device = n.device;
    f->physical = n.physical_device;
    f->props = (PFN_vkGetPhysicalDeviceMemoryProperties)n.get_instance_proc_addr(
        n.instance, "vkGetPhysicalDeviceMemoryProperties");
#define D(field, name) f->field = (PFN_##name)n.get_device_proc_addr(n.device, #name)
    D(create, vkCreateBuffer);
    D(destroy, vkDestroyBuffer);
    D(reqs, vkGetBufferMemoryRequirements);
    D(alloc, vkAllocateMemory);
    D(free, vkFreeMemory);
    D(bind, vkBindBufferMemory);
    D(map, vkMapMemory);
#undef D
    return f->props && f->create && f->destroy && f->reqs && f->alloc && f->free && f->bind && f->map;
}

tmem_status tmrt__gpu_raw_create(tmem_gpu *gpu, bool host_visible, const char *name, uint64_t size,
                                 tmrt_gpu_block *out, tmrt_error *err) {
    memset(out, 0, sizeof *out);
    size = (size + 255) / 256 * 256;
    if (!size) size = 256;
    raw_fns f;
    if (!fns(gpu, &f)) return tmrt__fail(err, TMEM_E_UNSUPPORTED, "naive %s: no Vulkan entry points", name);
    VkBufferCreateInfo bi = {0};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (f.create(f.device, &bi, NULL, &out->buf) != VK_SUCCESS) {
        out->buf = VK_NULL_HANDLE;
        return tmrt__fail(err, TMEM_E_NO_MEMORY, "naive %s: vkCreateBuffer", name);
    }
    VkMemoryRequirements mr;
    f.reqs(f.device, out->buf, &mr);
    VkPhysicalDeviceMemoryProperties mp;
    f.props(f.physical, &mp);
    VkMemoryPropertyFlags want = host_visible
                                     ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                     : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((mr.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) type = i;
    VkMemoryAllocateInfo ai = {0};
    ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    ai.allocationSize = mr.size;
    ai.memoryTypeIndex = type;
    tmem_status st = TMEM_OK;
    if (type == UINT32_MAX) st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "naive %s: no memory type", name);
    else if (f.alloc(f.device, &ai, NULL, &out->raw) != VK_SUCCESS)
        out->raw = VK_NULL_HANDLE, st = tmrt__fail(err, TMEM_E_NO_MEMORY, "naive %s: vkAllocateMemory of %llu bytes",
                                                    name, (unsigned long long)mr.size);
    else if (f.bind(f.device, out->buf, out->raw, 0) != VK_SUCCESS)
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "naive %s: vkBindBufferMemory", name);
    else if (host_visible && f.map(f.device, out->raw, 0, VK_WHOLE_SIZE, 0, &out->host) != VK_SUCCESS)
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "naive %s: vkMapMemory", name);
    if (st) {
        tmrt__gpu_raw_destroy(gpu, out);
        return st;
    }
    out->size = size;
    out->raw_bytes = mr.size;
    return TMEM_OK;
}

void tmrt__gpu_raw_destroy(tmem_gpu *gpu, tmrt_gpu_block *b) {
    raw_fns f;
    if ((b->buf || b->raw) && fns(gpu, &f)) {
        if (b->buf) f.destroy(f.device, b->buf, NULL);
        if (b->raw) f.free(f.device, b->raw, NULL); /* unmaps */
    }
    memset(b, 0, sizeof *b);
}

/*
 * The Vulkan backend's state: the driver loaded at run time (dlopen of
 * libvulkan.so.1, every entry point through vkGetInstanceProcAddr /
 * vkGetDeviceProcAddr), the device, the memory types chosen per placement,
 * and the lazily built compute pipeline of the NV12 conversion.
 */
#ifndef TMEM_VULKAN_INTERNAL_H
#define TMEM_VULKAN_INTERNAL_H

#include <vulkan/vulkan.h>
#include "gpu/gpu_internal.h"
#include "typedmem/vulkan.h"

/* Instance-level entry points. */
#define TMEM__VK_INSTANCE_FNS(X)                                                                                       \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)                                \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceMemoryProperties2)                                     \
    X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkCreateDevice) X(vkEnumerateDeviceExtensionProperties)              \
    X(vkGetDeviceProcAddr) X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures)                       \
    X(vkGetPhysicalDeviceFeatures2)
/* Device-level entry points (extension ones may stay NULL). */
#define TMEM__VK_DEVICE_FNS(X)                                                                     \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkAllocateMemory) X(vkFreeMemory) X(vkMapMemory)      \
    X(vkUnmapMemory) X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements)         \
    X(vkBindBufferMemory) X(vkCreateImage) X(vkDestroyImage) X(vkGetImageMemoryRequirements)       \
    X(vkBindImageMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule)                          \
    X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout)       \
    X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline)                    \
    X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkAllocateDescriptorSets)               \
    X(vkFreeDescriptorSets) X(vkUpdateDescriptorSets) X(vkCreateCommandPool)                       \
    X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers)                    \
    X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets)  \
    X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer)              \
    X(vkCmdFillBuffer) X(vkQueueSubmit) X(vkQueueWaitIdle) X(vkCreateFence) X(vkDestroyFence)      \
    X(vkWaitForFences) X(vkResetFences) X(vkDeviceWaitIdle) X(vkGetMemoryFdKHR)                    \
    X(vkGetMemoryHostPointerPropertiesEXT) X(vkGetMemoryFdPropertiesKHR)

typedef struct tmem__vk_fns {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    PFN_vkCreateInstance vkCreateInstance;
    PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion;
#define TMEM__VK_DECL(name) PFN_##name name;
    TMEM__VK_INSTANCE_FNS(TMEM__VK_DECL)
    TMEM__VK_DEVICE_FNS(TMEM__VK_DECL)
#undef TMEM__VK_DECL
} tmem__vk_fns;

/* The conversion pipeline (vulkan_convert.c), built on first use. */
typedef struct tmem__vk_convert {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkCommandPool cmd_pool;
    VkFence fence;
} tmem__vk_convert;

typedef struct tmem__vk {
    void *lib;
    tmem__vk_fns fn;
    VkInstance instance;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    bool own_device, own_instance;
    uint32_t api_version;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    bool has_budget, has_host_import, has_fd;
    tmem_vk_features features;                   /* enabled on the device */
    bool has_f64;                                /* shaderFloat64 enabled: exact NV12 division */
    VkDeviceSize host_import_align;
    VkDeviceSize max_alloc;                      /* maxMemoryAllocationSize (0 = unknown) */
    uint32_t type_of[TMEM_PLACEMENT_COUNT];      /* memory type per placement */
    uint32_t type_cached;                        /* HOST_CACHED visible type */
    uint32_t buffer_type_bits;                   /* memoryTypeBits of buffers */
    tmem__os_mutex submit_lock;                 /* the queue and pipeline */
    tmem__vk_convert conv;
} tmem__vk;

/* One pool: an array of chunks, each a VkDeviceMemory allocated on commit. */
typedef struct tmem__vk_region {
    uint32_t memory_type;
    uint64_t chunk;
    uint64_t nchunks;
    VkDeviceMemory *chunks;
    void **maps;       /* host view of each chunk (host-visible types) */
    bool host_import;  /* chunks are the region's host pages imported (TMEM_GPU_HOST_IMPORT) */
} tmem__vk_region;

/* The external handle types a resource bound to this region must declare
 * (host import, exportable chunks), 0 when none. */
VkExternalMemoryHandleTypeFlags tmem__vk_region_handle_types(const tmem_gpu *gpu, const tmem__region *r);

static inline tmem__vk *tmem__vk_of(const tmem_gpu *gpu) { return (tmem__vk *)gpu->impl; }

/* Loader (vulkan_loader.c). */
tmem_status tmem__vk_load(tmem__vk *vk);
void tmem__vk_load_instance(tmem__vk *vk);
void tmem__vk_load_device(tmem__vk *vk);
void tmem__vk_unload(tmem__vk *vk);
/* VkResult -> tmem_status. */
tmem_status tmem__vk_status(VkResult r);
/* The pool's backend (vulkan_backend.c): fills gpu->backends. */
void tmem__vk_backend_init(tmem_gpu *gpu);
/* Device copies and fills of pool ranges (vulkan_copy.c): backend.h's hooks. */
tmem_status tmem__vk_copy(const tmem__backend *be, const tmem__region *dst, uint64_t dst_off,
                          const tmem__region *src, uint64_t src_off, uint64_t size);
tmem_status tmem__vk_fill(const tmem__backend *be, const tmem__region *r, uint64_t off, uint64_t size,
                          uint32_t value);
/* Tear down the conversion pipeline (vulkan_convert.c). */
void tmem__vk_convert_destroy(tmem__vk *vk);
/* Run one command buffer to completion on the queue (vulkan_convert.c). */
typedef void (*tmem__vk_record_fn)(tmem__vk *vk, VkCommandBuffer cb, void *arg);
tmem_status tmem__vk_submit(tmem__vk *vk, tmem__vk_record_fn record, void *arg);

#endif /* TMEM_VULKAN_INTERNAL_H */

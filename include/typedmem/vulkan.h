/**
 * @file vulkan.h
 * @brief Vulkan side of typedmem_gpu: resources bound at heap offsets, camera
 *        surfaces imported without a copy, and the NV12 -> CHW compute
 *        conversion. Needs <vulkan/vulkan.h>; the core headers do not.
 *
 * A DEVICE type's pool is a row of VkDeviceMemory chunks (tmem_gpu_desc::
 * chunk_size each), allocated when the pool commits them and freed when it
 * decommits. A heap of at most one chunk lies inside one VkDeviceMemory, so
 * every allocation of it can be bound as a VkBuffer or VkImage.
 *
 * @par Aliasing
 * Transient allocations of a planned arena (tmem_plan_heap_alloc) may be
 * bound to overlapping memory. Vulkan requires, between the last use of one
 * aliased resource and the first use of the next, an execution and memory
 * dependency that covers the memory itself: record a global VkMemoryBarrier
 * (srcAccess = the earlier accesses, dstAccess = the later ones;
 * tmem_vk_cmd_alias_barrier records the usual one). Buffers are linear, so
 * bytes written through one buffer read the same through its alias after the
 * barrier; optimal images' contents are undefined after aliasing (transition
 * from VK_IMAGE_LAYOUT_UNDEFINED). docs/backend.md has the table.
 *
 * @par Threads
 * Resource creation: safe. Submissions (convert) are serialised internally.
 */
#ifndef TYPEDMEM_VULKAN_H
#define TYPEDMEM_VULKAN_H

#include <vulkan/vulkan.h>
#include "gpu.h"
#include "surface.h"

TMEM_EXTERN_C_BEGIN

/** @brief The application's own device, to share with typedmem
 *  (tmem_gpu_desc::native). All handles must come from the same Vulkan
 *  loader (libvulkan.so.1) and stay valid until the gpu goes away. The
 *  device must have been created with the extensions typedmem should use
 *  (VK_EXT_memory_budget, VK_KHR_external_memory_fd,
 *  VK_EXT_external_memory_host) listed in enabled_extensions. */
typedef struct tmem_vk_native {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family;     /**< a family with VK_QUEUE_COMPUTE_BIT */
    uint32_t api_version;      /**< the instance's apiVersion (0 = 1.1) */
    const char *const *enabled_extensions;
    uint32_t enabled_extension_count;
    /** The device was created with VkPhysicalDeviceFeatures::shaderFloat64
     *  enabled: tmem_vk_convert_nv12 then divides exactly (bit-identical to
     *  the CPU); false = the driver's OpFDiv (within 2.5 ulp). */
    bool shader_float64;
} tmem_vk_native;

/** @brief The device typedmem uses (its own or the application's).
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_get_native(tmem_gpu *gpu, tmem_vk_native *out, VkQueue *queue);

/** @brief Create a VkBuffer over [offset, offset + size) of a heap of a
 *  Vulkan DEVICE / DEVICE_HOST_VISIBLE type and bind it there. The range
 *  must honour tmem_type_resource_size_and_align(TMEM_RESOURCE_BUFFER).
 *  @param[out] out  VK_NULL_HANDLE on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (not a
 *          Vulkan heap of this gpu) | TMEM_E_ALIGNMENT (offset below the
 *          buffer's VkMemoryRequirements alignment, or straddles chunks)
 *          | TMEM_E_STATE (not committed) | TMEM_E_NO_MEMORY */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_buffer_create(tmem_gpu *gpu, const tmem_heap *heap,
                                                          uint64_t offset, uint64_t size,
                                                          VkBufferUsageFlags usage, VkBuffer *out);
/** @brief Destroy a buffer of tmem_vk_buffer_create (the memory stays).
 *  @par Threads externally synchronized on `buffer` (Vulkan's rule). */
TMEM_API void tmem_vk_buffer_destroy(tmem_gpu *gpu, VkBuffer buffer);

/** @brief Create a 2D VkImage at [offset, ...) of a heap and bind it there.
 *  `info` is the application's VkImageCreateInfo (sharing exclusive).
 *  @return as tmem_vk_buffer_create; TMEM_E_INVALID_ARG when the image's
 *          VkMemoryRequirements size does not fit the heap from offset.
 *  On failure *out is VK_NULL_HANDLE. */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_image_create(tmem_gpu *gpu, const tmem_heap *heap,
                                                         uint64_t offset,
                                                         const VkImageCreateInfo *info,
                                                         VkImage *out);
/** @brief Destroy an image of tmem_vk_image_create (the memory stays).
 *  @par Threads externally synchronized on `image` (Vulkan's rule). */
TMEM_API void tmem_vk_image_destroy(tmem_gpu *gpu, VkImage image);

/** @brief Record the barrier between two uses of aliased memory: all
 *  earlier compute/transfer writes and reads complete and are visible
 *  before later compute/transfer accesses start (a global VkMemoryBarrier).
 *  @par Threads externally synchronized on `cb` (Vulkan's rule for recording). */
TMEM_API void tmem_vk_cmd_alias_barrier(tmem_gpu *gpu, VkCommandBuffer cb);

/** @brief A surface's pixels as Vulkan memory, with no copy: the surface's
 *  mapping imported with VK_EXT_external_memory_host
 *  (VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT). */
typedef struct tmem_vk_surface_memory {
    VkDeviceMemory memory;
    VkBuffer buffer;           /**< a storage buffer over the whole mapping */
    uint64_t size;             /**< bytes imported (the mapping, page rounded) */
    tmem_surface_layout layout;
    tmem_surface *surface;     /**< retained until tmem_vk_surface_release */
} tmem_vk_surface_memory;

/** @brief Import a surface. The surface is retained; while imported, the
 *  GPU may read it at any time, so the CPU writer must not write during a
 *  submission that reads it (tmem_surface_lock brackets both sides).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (device without
 *          VK_EXT_external_memory_host, or the mapping not aligned to
 *          minImportedHostPointerAlignment) | TMEM_E_NO_MEMORY | TMEM_E_OS
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_surface_import(tmem_gpu *gpu, tmem_surface *surface,
                                                           tmem_vk_surface_memory *out);
/** @brief Release what tmem_vk_surface_import made (buffer, memory, the retain).
 *  @par Threads externally synchronized on `mem`. */
TMEM_API void tmem_vk_surface_release(tmem_gpu *gpu, tmem_vk_surface_memory *mem);

/** @brief Run the compute shader that reads an NV12 surface and writes the
 *  normalised CHW float tensor (3 x height x width, F32, contiguous) into
 *  `dst` at `dst_offset`, the same values as tmem_surface_convert (checked
 *  bit for bit by tests/gpu). Submits and waits. `desc` as for
 *  tmem_surface_convert (BILINEAR or NEAREST, any matrix, BGR flag).
 *  dst must hold 3 * width * height floats from dst_offset (a multiple of 4).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (not NV12, sizes, offset)
 *          | TMEM_E_NO_MEMORY | TMEM_E_OS */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_convert_nv12(tmem_gpu *gpu,
                                                         const tmem_vk_surface_memory *src,
                                                         const tmem_convert_desc *desc,
                                                         VkBuffer dst, uint64_t dst_offset,
                                                         uint32_t width, uint32_t height);

/** @brief Run a caller's recording on typedmem's queue and wait for it
 *  (tests, simple tools). @return TMEM_OK | TMEM_E_NO_MEMORY | TMEM_E_OS */
typedef void (*tmem_vk_record_fn)(VkCommandBuffer cb, void *user);
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_run(tmem_gpu *gpu, tmem_vk_record_fn record, void *user);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_VULKAN_H */

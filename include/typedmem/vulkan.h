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

/** @brief Device features for compute shaders that read 8/16-bit data:
 *  what typedmem enabled on a device it created (each one the device
 *  supports), or what the application says it enabled on its own. */
typedef struct tmem_vk_features {
    bool storage_buffer_16bit;   /**< storageBuffer16BitAccess */
    bool storage_buffer_8bit;    /**< storageBuffer8BitAccess (Vulkan 1.2) */
    bool shader_float16;         /**< shaderFloat16 (Vulkan 1.2) */
    bool shader_int8;            /**< shaderInt8 (Vulkan 1.2) */
    bool shader_int16;           /**< shaderInt16 */
    bool shader_int64;           /**< shaderInt64 */
    bool subgroup_size_control;  /**< subgroupSizeControl and
                                      computeFullSubgroups (Vulkan 1.3) */
} tmem_vk_features;

/** @brief The application's own device, to share with typedmem
 *  (tmem_gpu_desc::native). All handles must come from the same Vulkan
 *  loader (libvulkan.so.1) and stay valid until the gpu goes away. The
 *  device must have been created with the extensions typedmem should use
 *  (VK_EXT_memory_budget, VK_KHR_external_memory_fd,
 *  VK_EXT_external_memory_host) listed in enabled_extensions, and with the
 *  features listed in `features`.
 *
 *  tmem_vk_get_native fills the same struct for the device in use, and
 *  also the loader's two entry points, so that code above the library
 *  (the runtime's compute layer) calls Vulkan exactly as the library
 *  loaded it, never loading it a second time. */
typedef struct tmem_vk_native {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family;     /**< a family with VK_QUEUE_COMPUTE_BIT */
    uint32_t api_version;      /**< the instance's apiVersion (0 = 1.1) */
    const char *const *enabled_extensions;
    uint32_t enabled_extension_count;
    tmem_vk_features features; /**< enabled on the device (zeroed = none) */
    /** Out only (tmem_vk_get_native): the loader's vkGetInstanceProcAddr
     *  and the instance's vkGetDeviceProcAddr. Ignored on attach. */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr;
    PFN_vkGetDeviceProcAddr get_device_proc_addr;
    /** The device was created with VkPhysicalDeviceFeatures::shaderFloat64
     *  enabled: tmem_vk_convert_nv12 then divides exactly (bit-identical to
     *  the CPU); false = the driver's OpFDiv (within 2.5 ulp). */
    bool shader_float64;
} tmem_vk_native;

/** @brief The device typedmem uses (its own or the application's), its
 *  enabled features and the entry points to call it through.
 *  enabled_extensions is left NULL. On failure *out is zeroed.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, not a Vulkan gpu)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_get_native(tmem_gpu *gpu, tmem_vk_native *out, VkQueue *queue);

/** @brief Submit to typedmem's queue, serialised with typedmem's own
 *  submissions (tmem_vk_run, tmem_vk_convert_nv12): Vulkan requires a
 *  queue to be externally synchronized, so whoever shares the gpu's queue
 *  submits through here. Does not wait; `fence` (may be VK_NULL_HANDLE)
 *  signals completion.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NO_MEMORY | TMEM_E_OS
 *          (VK_ERROR_DEVICE_LOST among others)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_queue_submit(tmem_gpu *gpu, uint32_t count, const VkSubmitInfo *submits,
                                                         VkFence fence);

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

/* ======================================================================
 * Weights: a mapped file range on the device, imported or uploaded
 * ====================================================================== */

/** @brief A byte range of a mapping (a tensor's data in a GGUF). */
typedef struct tmem_vk_range {
    uint64_t offset;   /**< from the mapping's base */
    uint64_t size;     /**< bytes, > 0 */
} tmem_vk_range;

/** @brief tmem_vk_mapping_desc::flags. */
typedef enum tmem_vk_mapping_flag {
    /** Never import: upload through the staging buffer (what a device
     *  without VK_EXT_external_memory_host gets). The environment variable
     *  TMEM_VK_NO_IMPORT=1 sets it for every mapping. */
    TMEM_VK_MAPPING_UPLOAD = 1u << 0,
    /** Import or fail (TMEM_E_UNSUPPORTED): never upload. */
    TMEM_VK_MAPPING_IMPORT_ONLY = 1u << 1,
    TMEM_VK_MAPPING_FLAG_MASK = 0x3u
} tmem_vk_mapping_flag;

/** @brief Most bytes of the upload path's staging buffer (64 MiB). */
#define TMEM_VK_STAGING_MAX (64ull << 20)

/** @brief Describes a mapping to put on the device. Zeroed fields = defaults. */
typedef struct tmem_vk_mapping_desc {
    const void *base;          /**< the mapped range (read-only is fine: the device
                                    only reads it); page aligned */
    uint64_t size;             /**< bytes of the mapping from base */
    const tmem_vk_range *ranges; /**< the ranges shaders will bind; NULL = one range,
                                    the whole mapping */
    uint32_t range_count;
    uint32_t flags;            /**< tmem_vk_mapping_flag bits */
    VkBufferUsageFlags usage;  /**< of the buffers; 0 = STORAGE | TRANSFER_SRC */
    uint64_t max_piece;        /**< most bytes of one imported memory object; 0 =
                                    maxMemoryAllocationSize (and at most 4 GiB) */
    uint64_t alignment;        /**< offset alignment of each range in its buffer
                                    (upload path; imports keep the file's offsets);
                                    0 = minStorageBufferOffsetAlignment (>= 16) */
    tmem_type *device_type;    /**< upload path: a DEVICE type of this gpu; NULL = the
                                    WEIGHTS role's type when it is one, else
                                    "/memory/device-weights" (DEVICE), created */
    tmem_type *staging_type;   /**< upload path: the staging buffer's type; NULL =
                                    "/memory/staging" (DEVICE_HOST_VISIBLE,
                                    TRANSIENT, budget staging_bytes), created */
    uint64_t staging_bytes;    /**< 0 = TMEM_VK_STAGING_MAX; at most that */
} tmem_vk_mapping_desc;

/** @brief Where one range is on the device: bind `buffer` at
 *  [offset, offset + size). */
typedef struct tmem_vk_span {
    VkBuffer buffer;
    uint64_t offset;
    uint64_t size;
    uint32_t piece;            /**< index of the memory object (tmem_vk_mapping_info) */
} tmem_vk_span;

/** @brief Read-back of a mapping. */
typedef struct tmem_vk_mapping_info {
    bool imported;             /**< the file's pages are the device memory (no copy) */
    bool device_local;         /**< the memory is DEVICE_LOCAL (imports on a discrete
                                    GPU are host memory read over the bus) */
    tmem_status import_status; /**< why it was not imported: TMEM_E_UNSUPPORTED (no
                                    extension, alignment, the driver refused),
                                    TMEM_OK when imported or UPLOAD was asked */
    uint32_t pieces;           /**< memory objects (imports) or device heaps (uploads) */
    uint64_t imported_bytes;   /**< host bytes imported (pieces page-rounded) */
    uint64_t device_bytes;     /**< upload path: DEVICE bytes committed for the
                                    ranges (charged to the WEIGHTS role of device_type) */
    uint64_t staging_bytes;    /**< upload path: the staging buffer's size */
    uint64_t uploaded_bytes;   /**< bytes copied through it */
    uint32_t copies;           /**< device copy submissions */
} tmem_vk_mapping_info;

typedef struct tmem_vk_mapping tmem_vk_mapping;

/** @brief Put a mapped file range on the device as VkBuffers, with no
 *  second host copy. Where the device has VK_EXT_external_memory_host and
 *  the mapping is aligned to minImportedHostPointerAlignment, the pages are
 *  imported (VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, else
 *  HOST_MAPPED_FOREIGN_MEMORY) in pieces that keep every range inside one
 *  piece, each at most max_piece and maxMemoryAllocationSize: zero copies,
 *  the pages stay clean file pages. Otherwise (or with
 *  TMEM_VK_MAPPING_UPLOAD) the ranges are laid out in heaps of device_type
 *  no larger than one device chunk (charged to the WEIGHTS role) and copied
 *  there through one staging buffer of staging_bytes (<= 64 MiB) in
 *  staging_type, reused for every range and freed when the call returns:
 *  the host holds at most that much besides the file's clean pages.
 *  The mapping must stay mapped, and unchanged, while an import is alive.
 *  Buffers are for reading: a shader must not write them.
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, size 0, a range outside the
 *          mapping or of size 0, unknown flags, both flags, staging_bytes
 *          over 64 MiB, a type of another gpu) | TMEM_E_UNSUPPORTED
 *          (IMPORT_ONLY and no import) | TMEM_E_OVERFLOW (upload: a range
 *          larger than one device chunk; import: larger than max_piece)
 *          | TMEM_E_BUDGET (device or staging type) | TMEM_E_NO_MEMORY
 *          | TMEM_E_OS (the device failed). Nothing is left allocated.
 *  @par Threads safe (submissions serialised with typedmem's own). */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_import_mapping(tmem_gpu *gpu, const tmem_vk_mapping_desc *desc,
                                                           tmem_vk_mapping **out);

/** @brief Where range `index` (of desc.ranges; 0 for the whole mapping) is.
 *  @param[out] out  zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, index out of range)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_mapping_span(const tmem_vk_mapping *map, uint32_t index,
                                                         tmem_vk_span *out);

/** @brief Read-back. @return TMEM_OK | TMEM_E_INVALID_ARG; on failure *out is zeroed.
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_vk_mapping_get_info(const tmem_vk_mapping *map, tmem_vk_mapping_info *out);

/** @brief Free the buffers, the imported memory or the device heaps. The
 *  device must be done with them. NULL is a no-op.
 *  @par Threads externally synchronized on `map`. */
TMEM_API void tmem_vk_mapping_destroy(tmem_vk_mapping *map);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_VULKAN_H */

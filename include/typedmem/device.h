/**
 * @file device.h
 * @brief Device memory: where a heap offset of a GPU type lives, what the
 *        device requires of a resource, and the driver's budget.
 *
 * Types with placement TMEM_PLACEMENT_DEVICE or DEVICE_HOST_VISIBLE get
 * their pool from a GPU backend (Vulkan or CUDA: include/typedmem/gpu.h
 * attaches one to a context). Heaps manage offsets in that pool exactly as
 * on the host; the functions here turn an offset into the backend's memory
 * object (a VkDeviceMemory and an offset inside it, or a CUDA device
 * address), so a caller can bind a resource there. Nothing here depends on
 * a GPU API: handles are plain integers.
 *
 * @par Threads
 * Safe, like the heap and type read-backs they build on (a heap span reads
 * heap state, so a heap that is not THREAD_SAFE must not be used at the
 * same time).
 */
#ifndef TYPEDMEM_DEVICE_H
#define TYPEDMEM_DEVICE_H

#include "heap.h"

TMEM_EXTERN_C_BEGIN

/** @brief What a device resource is, for its size and alignment
 *  (tmem_type_resource_size_and_align). Vulkan's bufferImageGranularity
 *  separates linear resources (buffers, linear images) from optimal images
 *  placed next to them. */
typedef enum tmem_resource_kind {
    TMEM_RESOURCE_BUFFER = 0,       /**< a buffer (storage, uniform, transfer) */
    TMEM_RESOURCE_IMAGE_LINEAR,     /**< an image with linear tiling */
    TMEM_RESOURCE_IMAGE_OPTIMAL,    /**< an image with optimal tiling */
    TMEM_RESOURCE_KIND_COUNT
} tmem_resource_kind;

/** @brief Where [offset, offset + size) of a heap lives on the device. */
typedef struct tmem_device_span {
    const char *backend;  /**< "vulkan", "cuda", ... (static string) */
    uint64_t memory;      /**< the memory object: a VkDeviceMemory handle (Vulkan)
                               or the CUmemGenericAllocationHandle (CUDA) */
    uint64_t offset;      /**< byte offset of the range inside `memory` */
    uint64_t memory_size; /**< bytes of the memory object */
    uint64_t address;     /**< device address of the range (CUDA: a
                               CUdeviceptr; Vulkan: 0) */
    void *host;           /**< host address when the memory is mapped, else NULL */
    uint64_t pool_offset; /**< the range's offset in its type's pool */
} tmem_device_span;

/** @brief A device memory type and the heap it draws from. */
typedef struct tmem_device_memory_info {
    char backend[16];        /**< "vulkan", "cuda" */
    char device[64];         /**< device name */
    uint32_t memory_type;    /**< Vulkan memory type index; CUDA: 0 device, 1 pinned */
    uint32_t property_flags; /**< VkMemoryPropertyFlags (CUDA: 1 device local, 2|4 pinned) */
    uint32_t heap_index;
    uint64_t heap_size;      /**< bytes of the heap */
    uint64_t budget;         /**< what this process may use of the heap: the
                                  driver's figure (VK_EXT_memory_budget,
                                  cuMemGetInfo free + ours), else heap_size */
    uint64_t usage;          /**< bytes of the heap in use by this process
                                  (driver figure when budget_from_driver, else
                                  what the backend allocated) */
    uint64_t backend_bytes;  /**< device bytes this backend allocated (all types) */
    bool budget_from_driver; /**< budget and usage come from the driver */
    uint32_t placements;     /**< tmem_gpu_get_info only: bit (1 << tmem_placement)
                                  per placement this memory type serves, and
                                  TMEM_DEVICE_SERVES_HOST_CACHED for
                                  TMEM_TYPE_HOST_CACHED types; 0 elsewhere */
} tmem_device_memory_info;

/** @brief tmem_device_memory_info::placements bit: the memory type of
 *  DEVICE_HOST_VISIBLE types created with TMEM_TYPE_HOST_CACHED. */
#define TMEM_DEVICE_SERVES_HOST_CACHED (1u << 31)

/** @brief The device memory holding [offset, offset + size) of a heap of a
 *  device type (offset as returned by tmem_heap_alloc_ex).
 *  @param[out] out  zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, size 0, range outside the
 *          heap) | TMEM_E_UNSUPPORTED (the type's backend has no device
 *          memory: a host type) | TMEM_E_STATE (the range is not committed)
 *          | TMEM_E_ALIGNMENT (the range straddles two memory objects: the
 *          backend's chunk size is smaller than the heap; see docs/backend.md) */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_device_span(const tmem_heap *heap, uint64_t offset,
                                                          uint64_t size, tmem_device_span *out);

/** @brief Size and alignment a resource of `kind` and `size` bytes needs in
 *  `type`, as the device reports them (VkMemoryRequirements, raised to
 *  bufferImageGranularity for optimal images), before anything is allocated.
 *  tmem_type_size_and_align() is the backend-independent answer (sizes and
 *  alignments rounded to 256 bytes on device types); this one adds what the
 *  device itself requires. For host types and backends without
 *  requirements, the two agree.
 *  @param[out] out  zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_ALIGNMENT | TMEM_E_OVERFLOW
 *          | the backend's errors (TMEM_E_NO_MEMORY when it could not ask) */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_type_resource_size_and_align(const tmem_type *type, tmem_resource_kind kind, uint64_t size,
                                      uint64_t alignment, tmem_size_align *out);

/** @brief The device memory type of a device type, with its heap's budget.
 *  @param[out] out  zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (host type) */
TMEM_API TMEM_NODISCARD tmem_status tmem_type_device_info(const tmem_type *type, tmem_device_memory_info *out);

/** @brief Copy `size` bytes from [src_offset, ...) of heap `src` to
 *  [dst_offset, ...) of heap `dst`, without the caller touching device
 *  memory: a memmove where both heaps have host addresses
 *  (tmem_heap_ptr), else the backend's own copy (Vulkan: vkCmdCopyBuffer
 *  on typedmem's queue; the call waits, so the bytes are in place for any
 *  later submission or host read when it returns). Both heaps may be the
 *  same; device ranges of one pool must not overlap. No alignment is
 *  required; ranges may cross the backend's memory objects.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, size 0, a range outside its
 *          heap, overlapping device ranges) | TMEM_E_UNSUPPORTED (one side
 *          host and the other device-only, or two different backends: use
 *          an upload path, vulkan.h) | TMEM_E_STATE (a range not committed)
 *          | TMEM_E_NO_MEMORY | TMEM_E_OS (the device failed; device lost)
 *          Nothing is written on failure except by a device copy that
 *          failed in the queue (then dst's range is undefined).
 *  @par Threads safe for distinct ranges (submissions are serialised by
 *  the backend); the heaps' own rule for heap state. */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_copy(tmem_heap *dst, uint64_t dst_offset, const tmem_heap *src,
                                                   uint64_t src_offset, uint64_t size);

/** @brief Fill [offset, offset + size) of a heap with the 32-bit `value`
 *  repeated (little-endian, as vkCmdFillBuffer): memset-like on host
 *  heaps, the backend's fill on device ones (Vulkan: vkCmdFillBuffer; waits).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, size 0, outside the heap)
 *          | TMEM_E_ALIGNMENT (offset or size not a multiple of 4)
 *          | TMEM_E_UNSUPPORTED | TMEM_E_STATE | TMEM_E_NO_MEMORY | TMEM_E_OS
 *  @par Threads as tmem_heap_copy */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_fill(tmem_heap *heap, uint64_t offset, uint64_t size, uint32_t value);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_DEVICE_H */

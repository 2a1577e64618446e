/**
 * @file gpu.h
 * @brief GPU backends (library typedmem_gpu): attach a Vulkan or CUDA device
 *        to a context, so its DEVICE types get real device memory.
 *
 * The core library (typedmem) has no GPU dependency. typedmem_gpu is a
 * separate library, linked by those who want GPU memory; it loads the GPU
 * driver at run time (dlopen of libvulkan.so.1 / libcuda.so.1), so a program
 * linked with it still runs, without GPU types, where no driver is
 * installed. Which APIs were compiled in depends on the headers found at
 * build time (tmem_gpu_api_built).
 *
 * Attaching registers the device as the backend of placements:
 *  - Vulkan: TMEM_PLACEMENT_DEVICE (a DEVICE_LOCAL memory type) and
 *    DEVICE_HOST_VISIBLE (HOST_VISIBLE | HOST_COHERENT, HOST_CACHED for
 *    types with TMEM_TYPE_HOST_CACHED).
 *  - CUDA: TMEM_PLACEMENT_DEVICE (virtual memory management: a reserved
 *    address range, physical chunks mapped on commit) and PINNED (host
 *    pages registered with the driver, cuMemHostRegister).
 * Types created afterwards with those placements draw from the device.
 *
 * @par Lifetime
 * The gpu object is reference counted by the pools reserved from it:
 * tmem_gpu_release() may be called before or after tmem_context_destroy();
 * the device goes away when the last pool is released.
 *
 * @par Threads
 * Attach/release: externally synchronized with the context's type creation.
 * Info: safe.
 */
#ifndef TYPEDMEM_GPU_H
#define TYPEDMEM_GPU_H

#include "device.h"

TMEM_EXTERN_C_BEGIN

typedef struct tmem_gpu tmem_gpu;

/** @brief GPU API. */
typedef enum tmem_gpu_api {
    TMEM_GPU_VULKAN = 0,
    TMEM_GPU_CUDA,
    TMEM_GPU_API_COUNT
} tmem_gpu_api;

/** @brief Attach flags. */
typedef enum tmem_gpu_flag {
    /** Allocate device memory exportable as a POSIX fd (Vulkan
     *  VK_KHR_external_memory_fd, CUDA cuMemExportToShareableHandle), so
     *  tmem_gpu_export_fd works. TMEM_E_UNSUPPORTED at attach if the device
     *  cannot. */
    TMEM_GPU_EXPORTABLE = 1u << 0,
    /** Do not register for DEVICE_HOST_VISIBLE (Vulkan) / PINNED (CUDA). */
    TMEM_GPU_DEVICE_ONLY = 1u << 1,
    /** Vulkan: DEVICE_HOST_VISIBLE pools are host memory imported into the
     *  device (VK_EXT_external_memory_host), one contiguous host range: heaps
     *  over them have host pointers (tmem_heap_alloc, tmem_heap_ptr) the GPU
     *  reads and writes — the unified-memory case. Not with EXPORTABLE
     *  (imported memory cannot be re-exported). TMEM_E_UNSUPPORTED at
     *  attach without the extension. CUDA: ignored (PINNED is that already). */
    TMEM_GPU_HOST_IMPORT = 1u << 2,
    /** Vulkan: do not enable shaderFloat64 on the device typedmem creates;
     *  tmem_vk_convert_nv12 then divides with the driver's own OpFDiv, which
     *  Vulkan allows 2.5 ulp (bit-identical to the CPU only where the driver
     *  divides exactly). For tests of that path and devices where float64 is
     *  slow. CUDA: ignored. */
    TMEM_GPU_NO_FLOAT64 = 1u << 3,
    TMEM_GPU_FLAG_MASK = 0xFu
} tmem_gpu_flag;

/** @brief Describes an attach. Zeroed = the first Vulkan device. */
typedef struct tmem_gpu_desc {
    tmem_gpu_api api;
    uint32_t device_index;  /**< among the API's devices, 0 = first */
    uint64_t chunk_size;    /**< bytes of one device memory object (a power of
                                 two); 0 = TMEM_GPU_DEFAULT_CHUNK (1 GiB, Vulkan)
                                 or 2 MiB (CUDA); smaller for drivers that fail
                                 large allocations; a pool smaller than a chunk
                                 uses the next power of two of its size (64 KiB
                                 at least),
                                 raised to the CUDA allocation granularity,
                                 lowered to Vulkan's maxMemoryAllocationSize.
                                 A resource must lie in one chunk on Vulkan:
                                 heaps no larger than a chunk always do. */
    uint32_t flags;         /**< tmem_gpu_flag bits */
    const void *native;     /**< Vulkan: a `const tmem_vk_native *` (vulkan.h)
                                 to use the application's own device; NULL =
                                 create one. Must be NULL for CUDA (the
                                 device's primary context is used). */
} tmem_gpu_desc;

#define TMEM_GPU_MAX_TYPES 8

/** @brief Vulkan's default chunk (tmem_gpu_desc::chunk_size): 1 GiB. */
#define TMEM_GPU_DEFAULT_CHUNK (1ull << 30)

/** @brief One memory heap of the device, with the driver's figures. */
typedef struct tmem_gpu_heap {
    uint32_t index;           /**< VkPhysicalDeviceMemoryProperties heap index */
    uint32_t flags;           /**< VkMemoryHeapFlags (1 = DEVICE_LOCAL) */
    uint64_t size;            /**< bytes of the heap */
    uint64_t budget;          /**< VK_EXT_memory_budget heapBudget: what this
                                   process may use now; else `size` */
    uint64_t usage;           /**< heapUsage: this process's bytes on the heap,
                                   typedmem's and everyone else's; else backend_bytes */
    uint64_t backend_bytes;   /**< bytes typedmem's pools hold on this heap */
    bool budget_from_driver;  /**< budget and usage are the driver's */
    uint32_t placements;      /**< bit (1 << tmem_placement) per placement whose
                                   memory type lives on this heap */
} tmem_gpu_heap;

/** @brief Read-back of an attached device. */
typedef struct tmem_gpu_info {
    tmem_gpu_api api;
    char device[64];          /**< device name */
    char driver[64];          /**< driver / API version as text */
    char features[256];       /**< space-separated: memory_budget,
                                   external_memory_host, external_memory_fd,
                                   shader_float64,
                                   vmm, export_fd, ... */
    uint32_t placements;      /**< bit (1 << tmem_placement) per placement served */
    uint64_t chunk_size;      /**< the chunk size in effect */
    uint32_t type_count;      /**< entries in types[] */
    tmem_device_memory_info types[TMEM_GPU_MAX_TYPES]; /**< the memory types
                                   chosen per placement (DEVICE first) */
} tmem_gpu_info;

/** @brief Whether the API was compiled into typedmem_gpu. @par Threads safe */
TMEM_API bool tmem_gpu_api_built(tmem_gpu_api api);

/** @brief "vulkan", "cuda"; NULL for an unknown value. @par Threads safe */
TMEM_API const char *tmem_gpu_api_name(tmem_gpu_api api);

/** @brief Open a device and register it as the backend of its placements
 *  in ctx (see the file comment).
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, unknown api or flags, native
 *          for CUDA) | TMEM_E_UNSUPPORTED (API not compiled in, driver
 *          library not found, no memory type for DEVICE, EXPORTABLE
 *          impossible) | TMEM_E_NOT_FOUND (no device at device_index)
 *          | TMEM_E_NO_MEMORY | TMEM_E_OS (the driver failed to initialise) */
TMEM_API TMEM_NODISCARD tmem_status tmem_gpu_attach(tmem_context *ctx, const tmem_gpu_desc *desc, tmem_gpu **out);

/** @brief Drop the caller's reference. The context keeps using the device
 *  for its existing types; types created afterwards with its placements get
 *  TMEM_E_UNSUPPORTED once released. NULL is a no-op. */
TMEM_API void tmem_gpu_release(tmem_gpu *gpu);

/** @brief Describe the device and the memory types it serves, with budgets.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gpu_get_info(tmem_gpu *gpu, tmem_gpu_info *out);

/** @brief Read the driver's budget of the memory types the gpu serves
 *  (VK_EXT_memory_budget's heapBudget/heapUsage; CUDA: cuMemGetInfo) and
 *  fold it into the context's pressure level: usage at or above the
 *  context's warning fraction of the budget is WARNING, at or above the
 *  critical fraction CRITICAL; the effective level is the highest of this,
 *  the context budget's and the OS's (tmem_context_poll_os_pressure). May run
 *  the pressure callback. Poll it when convenient (per frame, per step).
 *  @param[out] level  may be NULL; the effective level after the poll.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (no memory type
 *          has a driver budget, e.g. lavapipe without VK_EXT_memory_budget:
 *          *level is then the context's level without a device part)
 *  On other failures *level is TMEM_PRESSURE_NORMAL.
 *  @par Threads safe (reads the device budget; the callback runs on this thread) */
TMEM_API TMEM_NODISCARD tmem_status tmem_gpu_poll_pressure(tmem_gpu *gpu, tmem_pressure *level);

/** @brief Every memory heap of the device, in index order, with its budget
 *  and usage: the driver's (VK_EXT_memory_budget, enabled at attach when the
 *  device has it; read on each call, so usage follows allocations and frees
 *  by anyone in the process), else the heap size and typedmem's own bytes.
 *  The cheap query (one driver call); tmem_gpu_poll_pressure folds the
 *  same figures into the context's pressure level.
 *  @param heaps  room for cap entries (may be NULL when cap is 0).
 *  @param[out] count  the heaps written; with TMEM_E_FULL the heaps there
 *                are (nothing written); 0 on other failures.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FULL (cap too small)
 *          | TMEM_E_UNSUPPORTED (CUDA: tmem_gpu_get_info has cuMemGetInfo's)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_gpu_get_heaps(tmem_gpu *gpu, tmem_gpu_heap *heaps, uint32_t cap,
                                                       uint32_t *count);

/** @brief Export the device memory object holding [offset, offset + size) of
 *  a heap as a POSIX fd another process can import (Vulkan: OPAQUE_FD of the
 *  chunk's VkDeviceMemory; CUDA: the chunk's physical allocation).
 *  *memory_offset gets the range's offset inside the exported object,
 *  *memory_size that object's size. The fd is the caller's (close-on-exec).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (attached
 *          without TMEM_GPU_EXPORTABLE, or a heap of another device)
 *          | the errors of tmem_heap_device_span | TMEM_E_OS
 *  On failure *fd is -1, *memory_offset and *memory_size 0.
 *  @par Threads as tmem_heap_device_span: a heap that is not THREAD_SAFE must
 *  not be used at the same time. */
TMEM_API TMEM_NODISCARD tmem_status tmem_gpu_export_fd(tmem_gpu *gpu, const tmem_heap *heap,
                                                       uint64_t offset, uint64_t size, int *fd,
                                                       uint64_t *memory_offset,
                                                       uint64_t *memory_size);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_GPU_H */

/*
 * Backend interface: how a pool gets its memory.
 *
 * A type's pool is one region of a backend: reserved up front (address space
 * or device memory), committed and decommitted page by page, advised, and
 * turned into a host pointer where the placement has one. Heaps never see a
 * backend: they work on offsets inside the pool (like VMA's virtual blocks),
 * and only the pool calls these functions. The host backend (host.c) is the
 * first implementation, on top of src/os/; a GPU backend (Vulkan, CUDA)
 * registers itself for TMEM_PLACEMENT_DEVICE / DEVICE_HOST_VISIBLE with
 * tmem__context_set_backend() (core/internal.h) and nothing above the pool
 * changes. This layer sits below core: it includes only base/ and os/.
 *
 * Contract for every function: offsets and sizes are multiples of the pool
 * granule and lie inside the region; on failure nothing changed. The core
 * calls commit/decommit/advise with the context lock held, so a backend must
 * not call back into the core from them.
 */
#ifndef TMEM_BACKEND_H
#define TMEM_BACKEND_H

#include "base/base.h"
#include "typedmem/placement.h"

/* Filled by a device backend's memory_info hook (typedmem/device.h). */
struct tmem_device_memory_info;

/* One reserved region. `base` is the host address of offset 0 (NULL when the
 * memory has no host view); `handle` is the backend's own (a device
 * allocation, an fd); the rest is the backend's business. */
typedef struct tmem__region {
    void *base;
    uint64_t size;
    uint64_t granule;  /* commit granule chosen by the backend at reserve */
    uint64_t base_align; /* offset 0's alignment: offsets aligned to at most
                            this are aligned addresses/device offsets too */
    uint64_t handle;
    uint32_t flags;    /* the type's tmem_type_flag bits */
    tmem_placement placement;
} tmem__region;

/* Advice for committed pages: what purgeable heaps and eviction need. */
typedef enum tmem__advice {
    TMEM__ADVICE_VOLATILE, /* contents may be dropped lazily (MADV_FREE) */
    TMEM__ADVICE_EMPTY,    /* drop contents now, stay committed (MADV_DONTNEED) */
    TMEM__ADVICE_WILLNEED, /* prefetch (a hint: failures are benign) */
    TMEM__ADVICE_COLD      /* deprioritise (a hint) */
} tmem__advice;

/* Where an offset of a device pool lives: the backend's memory object
 * (a VkDeviceMemory, a CUdeviceptr's allocation) and the offset inside it. */
typedef struct tmem__device_span {
    uint64_t memory;   /* backend handle of the memory object */
    uint64_t offset;   /* byte offset of the pool offset inside it */
    uint64_t memory_size; /* bytes of the memory object */
    uint64_t address;  /* device address of the pool offset, 0 if none */
    void *host;        /* host address of the pool offset, NULL if none */
} tmem__device_span;

typedef struct tmem__backend tmem__backend;
struct tmem__backend {
    const char *name;
    /* Reserve `size` bytes (a multiple of the granule the backend reports in
     * out->granule, which it may raise, e.g. to the huge page size). */
    tmem_status (*reserve)(const tmem__backend *be, tmem_placement placement, uint32_t type_flags,
                           uint64_t size, tmem__region *out);
    void (*release)(const tmem__backend *be, tmem__region *r);
    /* Make [off, off+size) usable; POPULATE/LOCKED flags of the region apply. */
    tmem_status (*commit)(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size);
    /* Give the pages back; the range stays reserved. */
    tmem_status (*decommit)(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size);
    tmem_status (*advise)(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size, tmem__advice advice);
    /* Bytes of [off, off+size) resident in memory right now. */
    tmem_status (*residency)(const tmem__backend *be, const tmem__region *r, uint64_t off,
                             uint64_t size, uint64_t *out_bytes);
    void *user;
    /* ---- optional, for device backends (NULL = not supported) ---- */
    /* Turn a committed range [off, off+size) into its memory object; fails
     * with TMEM_E_ALIGNMENT when the range straddles two memory objects and
     * TMEM_E_STATE when it is not committed. */
    tmem_status (*locate)(const tmem__backend *be, const tmem__region *r, uint64_t off,
                          uint64_t size, tmem__device_span *out);
    /* The device's real size and alignment for a resource of `kind`
     * (tmem_resource_kind) of `size` bytes: raise *size / *align in place. */
    tmem_status (*size_and_align)(const tmem__backend *be, const tmem__region *r, uint32_t kind,
                                  uint64_t *size, uint64_t *align);
    /* The memory type and heap the region lives in, with the driver's budget. */
    tmem_status (*memory_info)(const tmem__backend *be, const tmem__region *r,
                               struct tmem_device_memory_info *out);
    /* Copy `size` bytes from [src_off, ...) of region `src` to [dst_off, ...)
     * of `dst` (both regions of this backend, committed) on the device, and
     * wait for it: the copy is complete and visible to later device and host
     * accesses on return. Offsets and size need no alignment; the ranges may
     * cross memory objects but must not overlap. Not called with the
     * context lock held. */
    tmem_status (*copy)(const tmem__backend *be, const tmem__region *dst, uint64_t dst_off,
                        const tmem__region *src, uint64_t src_off, uint64_t size);
    /* Fill [off, off+size) of a committed range with the 32-bit `value`
     * repeated (off and size multiples of 4), on the device, and wait. */
    tmem_status (*fill)(const tmem__backend *be, const tmem__region *r, uint64_t off, uint64_t size,
                        uint32_t value);
};

/* The host backend (host.c): anonymous reserve + commit through src/os/. Serves
 * HOST, HOST_SHARED, FILE and PINNED placements. */
const tmem__backend *tmem__backend_host(void);

#endif /* TMEM_BACKEND_H */

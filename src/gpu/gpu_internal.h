/*
 * What the GPU backends (vulkan*.c, cuda*.c) share: the tmem_gpu object,
 * its reference count (one per reserved pool plus the caller's), the
 * backends it registers, device-byte accounting and the allocation fault
 * hook the tests use. Part of typedmem_gpu, not of the core library.
 */
#ifndef TMEM_GPU_INTERNAL_H
#define TMEM_GPU_INTERNAL_H

#include "os/os.h"
#include <stdatomic.h>
#include "backend/backend.h"
#include "heap/internal.h"
#include "typedmem/gpu.h"

typedef struct tmem__gpu_ops {
    void (*destroy)(tmem_gpu *gpu);
    tmem_status (*info)(tmem_gpu *gpu, tmem_gpu_info *out);
    tmem_status (*export_fd)(tmem_gpu *gpu, const tmem_device_span *span, int *fd);
    /* Per-heap figures (tmem_gpu_get_heaps); NULL = TMEM_E_UNSUPPORTED. */
    tmem_status (*heaps)(tmem_gpu *gpu, tmem_gpu_heap *out, uint32_t cap, uint32_t *count);
} tmem__gpu_ops;

struct tmem_gpu {
    uint32_t magic;
    tmem_gpu_api api;
    uint32_t flags;
    uint64_t chunk;                       /* bytes of one device memory object */
    _Atomic uint32_t refs;                /* caller + one per reserved region */
    tmem_context *ctx;
    tmem__backend backends[TMEM_PLACEMENT_COUNT]; /* .user = this gpu */
    uint32_t placements;                  /* bit per placement registered */
    const tmem__gpu_ops *ops;
    void *impl;                           /* the API's own state */
    /* device bytes allocated, all pools (under `lock`) */
    tmem__os_mutex lock;
    uint64_t device_bytes;
    /* Fault injection: when > 0, counts down device allocations; the one
     * that reaches 0 fails as the driver's out-of-memory would. */
    _Atomic int64_t fail_countdown;
};

#define TMEM__GPU_MAGIC 0x67707530u /* "gpu0" */

/* Take / drop a reference (a region reserved / released). */
void tmem__gpu_retain(tmem_gpu *gpu);
void tmem__gpu_unref(tmem_gpu *gpu);
/* The gpu of a backend registered by it. */
static inline tmem_gpu *tmem__gpu_of(const tmem__backend *be) { return (tmem_gpu *)be->user; }
/* True when the next device allocation must fail (fault injection). */
bool tmem__gpu_fault_hit(tmem_gpu *gpu);
/* Make the n-th device allocation from now fail (n >= 1; 0 = off). Tests. */
void tmem__gpu_fault_set(tmem_gpu *gpu, int64_t n);
/* Add / remove device bytes from the gpu's count. */
void tmem__gpu_count(tmem_gpu *gpu, int64_t bytes);
uint64_t tmem__gpu_device_bytes(tmem_gpu *gpu);
/* The advise hook of device pools: no driver call drops device memory
 * lazily, so VOLATILE/EMPTY are TMEM_E_UNSUPPORTED (heaps then refuse to
 * become purgeable); WILLNEED/COLD are hints, accepted. */
tmem_status tmem__gpu_advise(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size,
                             tmem__advice advice);
/* Smallest power of two >= x (x <= 2^63). */
uint64_t tmem__gpu_pow2_ceil(uint64_t x);

/* Per API: open the device into gpu->impl, fill gpu->backends and
 * gpu->placements, set gpu->ops and gpu->chunk. */
tmem_status tmem__vk_open(tmem_gpu *gpu, const tmem_gpu_desc *desc);
tmem_status tmem__cuda_open(tmem_gpu *gpu, const tmem_gpu_desc *desc);

#endif /* TMEM_GPU_INTERNAL_H */

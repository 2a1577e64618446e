/*
 * The CUDA pool backends.
 *
 * DEVICE, through the virtual memory management API: reserve is
 * cuMemAddressReserve of the whole pool (address space only); the commit
 * granule is the chunk (>= cuMemGetAllocationGranularity), and committing
 * a granule creates its physical allocation (cuMemCreate), maps it at its
 * place in the range (cuMemMap) and grants read/write (cuMemSetAccess);
 * decommit unmaps and releases it. So commit-on-demand, decommit and the
 * budgets work on the GPU as on the host, and an aliased planned arena is
 * one contiguous device range whose offsets are device addresses.
 *
 * PINNED: host memory the GPU reads at full speed: a host reservation
 * (src/os) whose granules are committed, populated and registered with the
 * driver (cuMemHostRegister), unregistered before decommit. Under unified
 * addressing the host address is the device address.
 *
 * Every call makes the primary context current and restores the caller's.
 */
#include <stdlib.h>
#include <string.h>
#include "gpu/cuda/cuda_internal.h"
#include "os/os.h"

static tmem__cu_region *region_of(const tmem__region *r) { return (tmem__cu_region *)(uintptr_t)r->handle; }

static tmem_status cu_reserve(const tmem__backend *be, tmem_placement placement, uint32_t type_flags, uint64_t size,
                              tmem__region *out) {
    tmem_gpu *gpu = tmem__gpu_of(be);
    tmem__cu *cu = tmem__cu_of(gpu);
    tmem__region r = {0};
    uint64_t chunk = gpu->chunk;
    r.granule = chunk;
    r.base_align = chunk;
    r.flags = type_flags;
    r.placement = placement;
    if (!tmem__align_up(size, chunk, &r.size) || r.size > (1ull << 46)) return tmem__err(TMEM_E_OVERFLOW);
    tmem__cu_region *cr = calloc(1, sizeof *cr);
    if (!cr) return tmem__err(TMEM_E_NO_MEMORY);
    cr->chunk = chunk;
    cr->nchunks = r.size / chunk;
    size_t n = cr->nchunks ? (size_t)cr->nchunks : 1;
    tmem_status st = TMEM_OK;
    if (placement == TMEM_PLACEMENT_DEVICE) {
        cr->handles = calloc(n, sizeof *cr->handles);
        if (!cr->handles) st = tmem__err(TMEM_E_NO_MEMORY);
        if (st == TMEM_OK && r.size) {
            if (!tmem__cu_enter(cu)) st = tmem__err(TMEM_E_OS);
            else {
                st = tmem__cu_status(cu->fn.cuMemAddressReserve(&cr->va, (size_t)r.size, (size_t)chunk, 0, 0));
                tmem__cu_leave(cu);
            }
        }
    } else {
        cr->registered = calloc(n, 1);
        if (!cr->registered) st = tmem__err(TMEM_E_NO_MEMORY);
        if (st == TMEM_OK && r.size) st = tmem__os_reserve((size_t)r.size, (size_t)chunk, &r.base);
    }
    if (st != TMEM_OK) {
        free(cr->handles);
        free(cr->registered);
        free(cr);
        return st;
    }
    r.handle = (uint64_t)(uintptr_t)cr;
    tmem__gpu_retain(gpu);
    *out = r;
    return TMEM_OK;
}

/* DEVICE: one granule's physical memory, mapped at its place. */
static tmem_status map_chunk(tmem_gpu *gpu, tmem__cu_region *cr, uint64_t i) {
    tmem__cu *cu = tmem__cu_of(gpu);
    if (tmem__gpu_fault_hit(gpu)) return tmem__cu_status(CUDA_ERROR_OUT_OF_MEMORY);
    CUmemGenericAllocationHandle h;
    CUresult res = cu->fn.cuMemCreate(&h, (size_t)cr->chunk, &cu->prop, 0);
    if (res != CUDA_SUCCESS) return tmem__cu_status(res);
    CUdeviceptr at = cr->va + i * cr->chunk;
    res = cu->fn.cuMemMap(at, (size_t)cr->chunk, 0, h, 0);
    if (res == CUDA_SUCCESS) {
        res = cu->fn.cuMemSetAccess(at, (size_t)cr->chunk, &cu->access, 1);
        if (res != CUDA_SUCCESS) (void)cu->fn.cuMemUnmap(at, (size_t)cr->chunk);
    }
    if (res != CUDA_SUCCESS) {
        (void)cu->fn.cuMemRelease(h);
        return tmem__cu_status(res);
    }
    cr->handles[i] = h;
    tmem__gpu_count(gpu, (int64_t)cr->chunk);
    return TMEM_OK;
}

static void unmap_chunk(tmem_gpu *gpu, tmem__cu_region *cr, uint64_t i) {
    tmem__cu *cu = tmem__cu_of(gpu);
    if (!cr->handles[i]) return;
    (void)cu->fn.cuMemUnmap(cr->va + i * cr->chunk, (size_t)cr->chunk);
    (void)cu->fn.cuMemRelease(cr->handles[i]);
    cr->handles[i] = 0;
    tmem__gpu_count(gpu, -(int64_t)cr->chunk);
}

/* PINNED: one granule committed, populated and registered. */
static tmem_status pin_chunk(tmem_gpu *gpu, const tmem__region *r, tmem__cu_region *cr, uint64_t i) {
    tmem__cu *cu = tmem__cu_of(gpu);
    char *p = (char *)r->base + i * cr->chunk;
    if (tmem__gpu_fault_hit(gpu)) return tmem__cu_status(CUDA_ERROR_OUT_OF_MEMORY);
    tmem_status st = tmem__os_commit(p, (size_t)cr->chunk, TMEM__OS_MAP_POPULATE);
    if (st != TMEM_OK) return st;
    CUresult res = cu->fn.cuMemHostRegister(p, (size_t)cr->chunk, CU_MEMHOSTREGISTER_PORTABLE);
    if (res != CUDA_SUCCESS) {
        (void)tmem__os_decommit(p, (size_t)cr->chunk);
        return tmem__cu_status(res);
    }
    cr->registered[i] = 1;
    return TMEM_OK;
}

static void unpin_chunk(tmem_gpu *gpu, const tmem__region *r, tmem__cu_region *cr, uint64_t i) {
    tmem__cu *cu = tmem__cu_of(gpu);
    if (!cr->registered[i]) return;
    char *p = (char *)r->base + i * cr->chunk;
    (void)cu->fn.cuMemHostUnregister(p);
    (void)tmem__os_decommit(p, (size_t)cr->chunk);
    cr->registered[i] = 0;
}

static void drop_chunk(tmem_gpu *gpu, const tmem__region *r, tmem__cu_region *cr, uint64_t i) {
    if (r->placement == TMEM_PLACEMENT_DEVICE) unmap_chunk(gpu, cr, i);
    else unpin_chunk(gpu, r, cr, i);
}

static bool chunk_live(const tmem__region *r, const tmem__cu_region *cr, uint64_t i) {
    return r->placement == TMEM_PLACEMENT_DEVICE ? cr->handles[i] != 0 : cr->registered[i] != 0;
}

static void cu_release(const tmem__backend *be, tmem__region *r) {
    tmem_gpu *gpu = tmem__gpu_of(be);
    tmem__cu *cu = tmem__cu_of(gpu);
    tmem__cu_region *cr = region_of(r);
    if (!cr) return;
    bool entered = tmem__cu_enter(cu);
    for (uint64_t i = 0; i < cr->nchunks; i++) drop_chunk(gpu, r, cr, i);
    if (cr->va) (void)cu->fn.cuMemAddressFree(cr->va, (size_t)r->size);
    if (entered) tmem__cu_leave(cu);
    if (r->base) (void)tmem__os_release(r->base, (size_t)r->size);
    free(cr->handles);
    free(cr->registered);
    free(cr);
    r->handle = 0;
    r->base = NULL;
    r->size = 0;
    tmem__gpu_unref(gpu);
}

static tmem_status cu_commit(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size) {
    tmem_gpu *gpu = tmem__gpu_of(be);
    tmem__cu *cu = tmem__cu_of(gpu);
    tmem__cu_region *cr = region_of(r);
    if (!tmem__cu_enter(cu)) return tmem__err(TMEM_E_OS);
    uint64_t a = off / cr->chunk, b = (off + size) / cr->chunk;
    tmem_status st = TMEM_OK;
    for (uint64_t i = a; i < b && st == TMEM_OK; i++) {
        if (chunk_live(r, cr, i)) continue;
        st = r->placement == TMEM_PLACEMENT_DEVICE ? map_chunk(gpu, cr, i) : pin_chunk(gpu, r, cr, i);
        if (st != TMEM_OK) /* nothing changed: the pool commits only free granules */
            for (uint64_t k = a; k < i; k++) drop_chunk(gpu, r, cr, k);
    }
    tmem__cu_leave(cu);
    return st;
}

static tmem_status cu_decommit(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size) {
    tmem_gpu *gpu = tmem__gpu_of(be);
    tmem__cu *cu = tmem__cu_of(gpu);
    tmem__cu_region *cr = region_of(r);
    if (!tmem__cu_enter(cu)) return tmem__err(TMEM_E_OS);
    for (uint64_t i = off / cr->chunk; i < (off + size) / cr->chunk; i++) drop_chunk(gpu, r, cr, i);
    tmem__cu_leave(cu);
    return TMEM_OK;
}

static tmem_status cu_residency(const tmem__backend *be, const tmem__region *r, uint64_t off,
                                uint64_t size, uint64_t *out) {
    (void)be;
    const tmem__cu_region *cr = region_of(r);
    uint64_t n = 0;
    for (uint64_t i = off / cr->chunk; i < (off + size + cr->chunk - 1) / cr->chunk && i < cr->nchunks; i++)
        n += chunk_live(r, cr, i);
    *out = n * cr->chunk;
    return TMEM_OK;
}

/* The range is contiguous in the device's address space even across
 * chunks; `memory` is the first chunk's allocation (what export shares). */
static tmem_status cu_locate(const tmem__backend *be, const tmem__region *r, uint64_t off, uint64_t size,
                             tmem__device_span *out) {
    (void)be;
    const tmem__cu_region *cr = region_of(r);
    uint64_t a = off / cr->chunk, b = (off + size - 1) / cr->chunk;
    if (b >= cr->nchunks) return tmem__err(TMEM_E_INVALID_ARG);
    for (uint64_t i = a; i <= b; i++)
        if (!chunk_live(r, cr, i)) return tmem__err(TMEM_E_STATE);
    out->offset = off % cr->chunk;
    out->memory_size = cr->chunk;
    if (r->placement == TMEM_PLACEMENT_DEVICE) {
        out->memory = (uint64_t)cr->handles[a];
        out->address = (uint64_t)cr->va + off;
        out->host = NULL;
    } else {
        out->memory = 0;
        out->host = (char *)r->base + off;
        out->address = (uint64_t)(uintptr_t)out->host; /* unified addressing */
    }
    return TMEM_OK;
}

static tmem_status cu_size_and_align(const tmem__backend *be, const tmem__region *r, uint32_t kind, uint64_t *size,
                                     uint64_t *align) {
    (void)be, (void)r, (void)size;
    /* cudaMalloc's guarantee (256 bytes) is what kernels and libraries
     * (cuBLAS, cuDNN) assume; images are not CUDA resources here. */
    if (kind != TMEM_RESOURCE_BUFFER) return tmem__err(TMEM_E_UNSUPPORTED);
    if (*align < 256) *align = 256;
    return TMEM_OK;
}

static tmem_status cu_memory_info(const tmem__backend *be, const tmem__region *r, tmem_device_memory_info *out) {
    tmem_gpu *gpu = tmem__gpu_of(be);
    tmem__cu *cu = tmem__cu_of(gpu);
    memset(out, 0, sizeof *out);
    memcpy(out->backend, "cuda", 5);
    memcpy(out->device, cu->name, sizeof out->device - 1);
    out->backend_bytes = tmem__gpu_device_bytes(gpu);
    if (r->placement == TMEM_PLACEMENT_PINNED) {
        out->memory_type = 1;
        out->property_flags = 2 | 4; /* host visible | coherent, like Vulkan's bits */
        out->heap_index = 1;
        /* host RAM: the heap is the machine's memory; usage is not the driver's to tell */
        out->heap_size = tmem__os_physical_bytes();
        out->budget = out->heap_size;
        return TMEM_OK;
    }
    out->memory_type = 0;
    out->property_flags = 1; /* device local */
    size_t free_b = 0, total_b = 0;
    if (!tmem__cu_enter(cu)) return tmem__err(TMEM_E_OS);
    CUresult res = cu->fn.cuMemGetInfo(&free_b, &total_b);
    tmem__cu_leave(cu);
    if (res != CUDA_SUCCESS) return tmem__cu_status(res);
    out->heap_size = total_b;
    out->budget = (uint64_t)free_b + out->backend_bytes; /* what we hold plus what is free */
    out->usage = (uint64_t)total_b - free_b;             /* device-wide, every process */
    out->budget_from_driver = true;
    return TMEM_OK;
}

void tmem__cu_backend_init(tmem_gpu *gpu) {
    static const tmem_placement served[] = {TMEM_PLACEMENT_DEVICE, TMEM_PLACEMENT_PINNED};
    for (unsigned k = 0; k < 2; k++)
        gpu->backends[served[k]] =
            (tmem__backend){"cuda",      cu_reserve,        cu_release,    cu_commit,
                            cu_decommit, tmem__gpu_advise,  cu_residency,  gpu,
                            cu_locate,   cu_size_and_align, cu_memory_info, NULL, NULL};
}

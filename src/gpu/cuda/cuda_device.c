/*
 * Opening a CUDA device for typedmem: load the driver API at run time,
 * retain the device's primary context, check virtual memory management
 * (cuMemAddressReserve/cuMemCreate/cuMemMap) and POSIX-fd export support,
 * and learn the allocation granularity.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/cuda/cuda_internal.h"
#include "typedmem/cuda.h"

#define TMEM__STR_(x) #x
#define TMEM__STR(x) TMEM__STR_(x)

tmem_status tmem__cu_status(CUresult r) {
    switch (r) {
    case CUDA_SUCCESS: return TMEM_OK;
    case CUDA_ERROR_OUT_OF_MEMORY: return tmem__err(TMEM_E_NO_MEMORY);
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED: return tmem__err(TMEM_E_UNSUPPORTED);
    case CUDA_ERROR_INVALID_DEVICE: return tmem__err(TMEM_E_NOT_FOUND);
    default: return tmem__err(TMEM_E_OS);
    }
}

bool tmem__cu_enter(tmem__cu *cu) { return cu->fn.cuCtxPushCurrent(cu->ctx) == CUDA_SUCCESS; }

void tmem__cu_leave(tmem__cu *cu) {
    CUcontext old;
    (void)cu->fn.cuCtxPopCurrent(&old);
}

static tmem_status load(tmem__cu *cu) {
    if (tmem__os_lib_open("libcuda.so.1", &cu->lib) != TMEM_OK) return tmem__err(TMEM_E_UNSUPPORTED);
    bool ok = true;
#define TMEM__CU_LOAD(name)                                                                                            \
    {                                                                                                                  \
        void *sym = tmem__os_lib_symbol(cu->lib, TMEM__STR(name));                                                     \
        memcpy(&cu->fn.name, &sym, sizeof sym);                                                                        \
        ok = ok && sym;                                                                                                \
    }
    TMEM__CU_FNS(TMEM__CU_LOAD)
#undef TMEM__CU_LOAD
    if (!ok) {
        tmem__os_lib_close(cu->lib);
        cu->lib = NULL;
        return tmem__err(TMEM_E_UNSUPPORTED); /* a driver older than this cuda.h */
    }
    return TMEM_OK;
}

static void cu_close(tmem__cu *cu) {
    if (cu->ctx) (void)cu->fn.cuDevicePrimaryCtxRelease(cu->device);
    /* libcuda stays mapped (not unload-safe; dlopen is reference counted). */
    free(cu);
}

static void cu_destroy(tmem_gpu *gpu) { cu_close(tmem__cu_of(gpu)); }

static tmem_status cu_info(tmem_gpu *gpu, tmem_gpu_info *out) {
    tmem__cu *cu = tmem__cu_of(gpu);
    snprintf(out->device, sizeof out->device, "%s", cu->name);
    snprintf(out->driver, sizeof out->driver, "CUDA driver %d.%d", cu->driver_version / 1000,
             cu->driver_version % 1000 / 10);
    snprintf(out->features, sizeof out->features, "vmm%s%s", cu->export_fd ? " posix_fd_export" : "",
             (gpu->flags & TMEM_GPU_EXPORTABLE) ? " export_fd" : "");
    uint32_t n = 0;
    static const tmem_placement order[] = {TMEM_PLACEMENT_DEVICE, TMEM_PLACEMENT_PINNED}; /* DEVICE first */
    for (unsigned k = 0; k < 2; k++) {
        tmem_placement p = order[k];
        if (!(gpu->placements & (1u << p))) continue;
        const tmem__backend *be = &gpu->backends[p];
        tmem__region r = {0};
        r.placement = (tmem_placement)p;
        if (!be->memory_info || n >= TMEM_GPU_MAX_TYPES) continue;
        if (be->memory_info(be, &r, &out->types[n]) != TMEM_OK) continue;
        out->types[n++].placements = 1u << p;
    }
    out->type_count = n;
    return TMEM_OK;
}

static tmem_status cu_export(tmem_gpu *gpu, const tmem_device_span *span, int *fd) {
    tmem__cu *cu = tmem__cu_of(gpu);
    if (!cu->export_fd) return tmem__err(TMEM_E_UNSUPPORTED);
    if (!tmem__cu_enter(cu)) return tmem__err(TMEM_E_OS);
    CUresult r = cu->fn.cuMemExportToShareableHandle(fd, (CUmemGenericAllocationHandle)span->memory,
                                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    tmem__cu_leave(cu);
    if (r != CUDA_SUCCESS) *fd = -1;
    return tmem__cu_status(r);
}

static const tmem__gpu_ops cu_ops = {cu_destroy, cu_info, cu_export, NULL};

tmem_status tmem__cuda_open(tmem_gpu *gpu, const tmem_gpu_desc *desc) {
    tmem__cu *cu = calloc(1, sizeof *cu);
    if (!cu) return tmem__err(TMEM_E_NO_MEMORY);
    tmem_status st = load(cu);
    if (st != TMEM_OK) {
        free(cu);
        return st;
    }
    CUresult r = cu->fn.cuInit(0);
    int count = 0;
    if (r == CUDA_SUCCESS) r = cu->fn.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) {
        cu_close(cu);
        return r == CUDA_SUCCESS || r == CUDA_ERROR_NO_DEVICE ? tmem__err(TMEM_E_NOT_FOUND) : tmem__cu_status(r);
    }
    if ((int)desc->device_index >= count) {
        cu_close(cu);
        return tmem__err(TMEM_E_NOT_FOUND);
    }
    cu->ordinal = (int)desc->device_index;
    int vmm = 0, fdx = 0;
    if ((r = cu->fn.cuDeviceGet(&cu->device, cu->ordinal)) == CUDA_SUCCESS &&
        (r = cu->fn.cuDevicePrimaryCtxRetain(&cu->ctx, cu->device)) == CUDA_SUCCESS) {
        (void)cu->fn.cuDeviceGetName(cu->name, sizeof cu->name, cu->device);
        (void)cu->fn.cuDriverGetVersion(&cu->driver_version);
        (void)cu->fn.cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, cu->device);
        (void)cu->fn.cuDeviceGetAttribute(
            &fdx, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, cu->device);
    } else {
        cu->ctx = NULL;
    }
    if (r != CUDA_SUCCESS) {
        cu_close(cu);
        return tmem__cu_status(r);
    }
    cu->vmm = vmm != 0;
    cu->export_fd = fdx != 0;
    if (!cu->vmm || ((desc->flags & TMEM_GPU_EXPORTABLE) && !cu->export_fd)) {
        cu_close(cu);
        return tmem__err(TMEM_E_UNSUPPORTED);
    }
    cu->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    cu->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    cu->prop.location.id = cu->ordinal;
    if (desc->flags & TMEM_GPU_EXPORTABLE) cu->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    cu->access.location = cu->prop.location;
    cu->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    size_t g = 0;
    r = cu->fn.cuMemGetAllocationGranularity(&g, &cu->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (r != CUDA_SUCCESS || !g) {
        cu_close(cu);
        return r == CUDA_SUCCESS ? tmem__err(TMEM_E_UNSUPPORTED) : tmem__cu_status(r);
    }
    cu->granularity = tmem__gpu_pow2_ceil(g);
    gpu->impl = cu;
    gpu->ops = &cu_ops;
    uint64_t chunk = desc->chunk_size ? desc->chunk_size : 2ull << 20;
    gpu->chunk = chunk < cu->granularity ? cu->granularity : chunk;
    tmem__cu_backend_init(gpu);
    gpu->placements = 1u << TMEM_PLACEMENT_DEVICE;
    if (!(desc->flags & TMEM_GPU_DEVICE_ONLY)) gpu->placements |= 1u << TMEM_PLACEMENT_PINNED;
    return TMEM_OK;
}

tmem_status tmem_cu_get_native(tmem_gpu *gpu, tmem_cu_native *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!gpu || gpu->magic != TMEM__GPU_MAGIC || gpu->api != TMEM_GPU_CUDA || !out)
        return tmem__err(TMEM_E_INVALID_ARG);
    const tmem__cu *cu = tmem__cu_of(gpu);
    out->device = cu->device;
    out->context = cu->ctx;
    out->ordinal = cu->ordinal;
    out->driver_version = cu->driver_version;
    return TMEM_OK;
}

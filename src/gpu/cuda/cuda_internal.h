/*
 * The CUDA backend's state: the driver API loaded at run time (dlopen of
 * libcuda.so.1; each entry point looked up under the versioned name that
 * this cuda.h maps it to, e.g. cuMemAlloc -> "cuMemAlloc_v2"), the device,
 * its primary context, and the VMM allocation properties.
 */
#ifndef TMEM_CUDA_INTERNAL_H
#define TMEM_CUDA_INTERNAL_H

#include <cuda.h>
#include "gpu/gpu_internal.h"

#define TMEM__CU_FNS(X)                                                                                                \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceTotalMem)          \
    X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxPushCurrent)               \
    X(cuCtxPopCurrent) X(cuCtxSynchronize) X(cuMemGetInfo) X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemCreate)   \
    X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess) X(cuMemGetAllocationGranularity)                       \
    X(cuMemExportToShareableHandle) X(cuMemImportFromShareableHandle) X(cuMemHostRegister) X(cuMemHostUnregister)      \
    X(cuMemAlloc) X(cuMemFree) X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuStreamCreate) X(cuStreamDestroy)               \
    X(cuStreamSynchronize) X(cuMemsetD8) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuGetErrorString)                           \
    X(cuDeviceGetDefaultMemPool) X(cuMemPoolGetAttribute) X(cuMemPoolSetAttribute) X(cuMemPoolTrimTo)                  \
    X(cuPointerGetAttribute)

typedef struct tmem__cu_fns {
#define TMEM__CU_DECL(name) __typeof__(&name) name;
    TMEM__CU_FNS(TMEM__CU_DECL)
#undef TMEM__CU_DECL
} tmem__cu_fns;

typedef struct tmem__cu {
    void *lib;
    tmem__cu_fns fn;
    CUdevice device;
    CUcontext ctx;          /* the device's primary context */
    int ordinal;
    char name[64];
    int driver_version;
    uint64_t granularity;   /* cuMemGetAllocationGranularity (minimum) */
    bool vmm, export_fd;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
} tmem__cu;

/* One pool: DEVICE: a reserved VA range and a physical chunk per granule,
 * created and mapped on commit. PINNED: host pages, registered per granule. */
typedef struct tmem__cu_region {
    CUdeviceptr va;
    uint64_t chunk, nchunks;
    CUmemGenericAllocationHandle *handles; /* DEVICE */
    uint8_t *registered;                   /* PINNED: granule registered */
} tmem__cu_region;

static inline tmem__cu *tmem__cu_of(const tmem_gpu *gpu) { return (tmem__cu *)gpu->impl; }

/* CUresult -> tmem_status (out of memory -> TMEM_E_NO_MEMORY). */
tmem_status tmem__cu_status(CUresult r);
/* Make the device's context current on this thread / restore. */
bool tmem__cu_enter(tmem__cu *cu);
void tmem__cu_leave(tmem__cu *cu);
/* The pool backends (cuda_backend.c): fills gpu->backends. */
void tmem__cu_backend_init(tmem_gpu *gpu);

#endif /* TMEM_CUDA_INTERNAL_H */

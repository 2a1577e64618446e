/**
 * @file cuda.h
 * @brief CUDA side of typedmem_gpu: the device and context typedmem uses, so
 *        an application (or a benchmark) can make its own driver calls on
 *        them. Needs <cuda.h>; the core headers do not.
 *
 * typedmem loads the driver (libcuda.so.1) at run time and never links it;
 * an application that calls the driver itself loads or links it as it
 * likes. DEVICE types of a CUDA gpu are VMM pools (cuMemAddressReserve +
 * cuMemCreate + cuMemMap per granule) in the device's primary context.
 *
 * @par Threads
 * tmem_cu_get_native: safe.
 */
#ifndef TYPEDMEM_CUDA_H
#define TYPEDMEM_CUDA_H

#include <cuda.h>
#include "gpu.h"

TMEM_EXTERN_C_BEGIN

/** @brief The device typedmem uses. */
typedef struct tmem_cu_native {
    CUdevice device;
    /** The device's primary context, retained by typedmem until
     *  tmem_gpu_release: make it current (cuCtxPushCurrent) to allocate
     *  beside typedmem's pools or to use their device pointers. */
    CUcontext context;
    int ordinal;               /**< the device's index (tmem_gpu_desc::device_index) */
    int driver_version;        /**< cuDriverGetVersion */
} tmem_cu_native;

/** @brief The device and primary context of a CUDA gpu.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, not a CUDA gpu)
 *  On failure *out is zeroed.
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_cu_get_native(tmem_gpu *gpu, tmem_cu_native *out);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_CUDA_H */

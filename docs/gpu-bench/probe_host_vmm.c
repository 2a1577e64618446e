/* Probe (docs/backend.md; run on the H200 by .devrun, output in
 * probe_host_vmm.txt; gcc -I$CUDA/include probe_host_vmm.c -lcuda):
 * can CUDA VMM map host-located physical memory into a
 * reserved VA range that both the CPU and the GPU access? (the way a CUDA
 * DEVICE_HOST_VISIBLE pool with commit/decommit per granule would work) */
#include <cuda.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
static sigjmp_buf jb;
static void on_segv(int s) { (void)s; siglongjmp(jb, 1); }
#define R(x)                                                                                       \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        const char *n_ = "";                                                                       \
        cuGetErrorName(r_, &n_);                                                                   \
        printf("%-60s -> %d %s\n", #x, (int)r_, n_);                                               \
        if (r_) ok = 0;                                                                            \
    } while (0)
int main(void) {
    int ok = 1;
    CUdevice dev; CUcontext ctx;
    R(cuInit(0));
    R(cuDeviceGet(&dev, 0));
    R(cuDevicePrimaryCtxRetain(&ctx, dev));
    R(cuCtxSetCurrent(ctx));
    int v = 0; cuDriverGetVersion(&v); printf("driver %d\n", v);
    int attr = -1;
    cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev);
    printf("host numa id attr %d\n", attr);
    int locs[2] = {CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA};
    for (int k = 0; k < 2; k++) {
        ok = 1;
        printf("== location type %d\n", locs[k]);
        CUmemAllocationProp prop; memset(&prop, 0, sizeof prop);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = (CUmemLocationType)locs[k];
        prop.location.id = 0;
        size_t gran = 0;
        R(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        printf("granularity %zu\n", gran);
        if (!ok || !gran) continue;
        CUdeviceptr p = 0; CUmemGenericAllocationHandle h = 0;
        R(cuMemAddressReserve(&p, 4 * gran, gran, 0, 0));
        R(cuMemCreate(&h, gran, &prop, 0));
        if (!ok) continue;
        R(cuMemMap(p + gran, gran, 0, h, 0));
        CUmemAccessDesc ad[2]; memset(ad, 0, sizeof ad);
        ad[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        ad[0].location.id = dev;
        ad[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        ad[1].location.type = (CUmemLocationType)locs[k];
        ad[1].location.id = 0;
        ad[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        R(cuMemSetAccess(p + gran, gran, ad, 2));
        if (!ok) { R(cuMemSetAccess(p + gran, gran, ad, 1)); }
        signal(SIGSEGV, on_segv);
        volatile unsigned char *hp = (volatile unsigned char *)(uintptr_t)(p + gran);
        if (!sigsetjmp(jb, 1)) {
            hp[0] = 0xAB;
            hp[4095] = 0xAB;
            printf("host write through the VA: ok\n");
        }
        else printf("host write through the VA: SIGSEGV\n");
        unsigned char b[4096] = {0};
        R(cuMemcpyDtoH(b, p + gran, 4096));
        bool seen = b[0] == 0xAB && b[4095] == 0xAB;
        printf("device-side copy reads host write: %s\n", seen ? "yes" : "no");
        R(cuMemsetD8(p + gran, 0xCD, 4096)); R(cuCtxSynchronize());
        if (!sigsetjmp(jb, 1))
            printf("host reads device write: %s\n", hp[17] == 0xCD ? "yes" : "no");
        else printf("host read: SIGSEGV\n");
        R(cuMemUnmap(p + gran, gran)); R(cuMemRelease(h));
        if (!sigsetjmp(jb, 1)) printf("after unmap host read did not fault (%u)\n", hp[0]);
        else printf("after unmap host read faults: yes\n");
        R(cuMemAddressFree(p, 4 * gran));
    }
    return 0;
}

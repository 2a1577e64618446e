/* The CUDA backend on a real GPU (the H200 machine): VMM pools committed
 * and decommitted chunk by chunk (unmapped addresses really fault), bytes
 * written and read back at heap offsets, aliasing in a planned arena,
 * budgets and injected allocation failures with state unchanged, PINNED
 * host memory registered with the driver, and export as a POSIX fd
 * re-imported and mapped at a second address. Skips (77) without a driver
 * or a device. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "gpu/cuda/cuda_internal.h"
#include "typedmem/cuda.h"
#include "gpu_test_util.h"

#define MiB (1ull << 20)

static tmem_context *g_ctx;
static tmem_gpu *g_gpu;
static tmem__cu *g_cu;


static CUresult put(uint64_t addr, const void *src, size_t n) {
    if (!tmem__cu_enter(g_cu)) return CUDA_ERROR_UNKNOWN;
    CUresult r = g_cu->fn.cuMemcpyHtoD((CUdeviceptr)addr, src, n);
    tmem__cu_leave(g_cu);
    return r;
}

static CUresult get(void *dst, uint64_t addr, size_t n) {
    if (!tmem__cu_enter(g_cu)) return CUDA_ERROR_UNKNOWN;
    CUresult r = g_cu->fn.cuMemcpyDtoH(dst, (CUdeviceptr)addr, n);
    tmem__cu_leave(g_cu);
    return r;
}

static void test_info(void) {
    tmem_gpu_info gi;
    REQUIRE_OK(tmem_gpu_get_info(g_gpu, &gi));
    printf("device %s (%s) features %s chunk %llu granularity %llu\n", gi.device, gi.driver, gi.features,
           (unsigned long long)gi.chunk_size, (unsigned long long)g_cu->granularity);
    CHECK(gi.api == TMEM_GPU_CUDA && gi.type_count >= 1);
    CHECK(gi.types[0].budget_from_driver && gi.types[0].heap_size > 0);
    CHECK(gi.types[0].placements == 1u << TMEM_PLACEMENT_DEVICE);
    for (uint32_t i = 1; i < gi.type_count; i++)
        CHECK(gi.types[i].placements == 1u << TMEM_PLACEMENT_PINNED);
    tmem_pressure lvl;
    CHECK_OK(tmem_gpu_poll_pressure(g_gpu, &lvl)); /* cuMemGetInfo is a driver budget */
    CHECK((unsigned)lvl <= TMEM_PRESSURE_CRITICAL);
    for (uint32_t i = 0; i < gi.type_count; i++)
        printf("  type %u flags 0x%x heap %llu budget %llu usage %llu\n", gi.types[i].memory_type,
               gi.types[i].property_flags, (unsigned long long)gi.types[i].heap_size,
               (unsigned long long)gi.types[i].budget, (unsigned long long)gi.types[i].usage);
}

/* The public face of the device (typedmem/cuda.h): what tmem bench gpu makes
 * its own driver calls on. The context is the one typedmem's pools live in. */
static void test_native(void) {
    tmem_cu_native n;
    REQUIRE_OK(tmem_cu_get_native(g_gpu, &n));
    CHECK(n.device == g_cu->device && n.context == g_cu->ctx && n.ordinal == g_cu->ordinal);
    CHECK(n.driver_version == g_cu->driver_version && n.driver_version > 0);
    REQUIRE(g_cu->fn.cuCtxPushCurrent(n.context) == CUDA_SUCCESS);
    size_t free_b = 0, total_b = 0;
    CHECK(g_cu->fn.cuMemGetInfo(&free_b, &total_b) == CUDA_SUCCESS && total_b > 0);
    CUcontext cur = NULL;
    CHECK(g_cu->fn.cuCtxPopCurrent(&cur) == CUDA_SUCCESS && cur == n.context);
    CHECK_ST(tmem_cu_get_native(NULL, &n), TMEM_E_INVALID_ARG);
    CHECK(n.context == NULL && n.device == 0);
    CHECK_ST(tmem_cu_get_native(g_gpu, NULL), TMEM_E_INVALID_ARG);
}

static void test_vmm_commit_decommit(void) {
    tmem_type *t = gpu_type(g_ctx, "/memory/cu-dev", TMEM_PLACEMENT_DEVICE, 256 * MiB, 0, 0);
    REQUIRE(t);
    uint64_t chunk = g_gpu->chunk, dev0 = tmem__gpu_device_bytes(g_gpu);
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = 64 * MiB;
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &h));
    CHECK(tmem__gpu_device_bytes(g_gpu) == dev0); /* reserved only */
    tmem_alloc_desc ad = {0};
    ad.size = chunk + 4096; /* spans two chunks */
    tmem_alloc_info ai;
    REQUIRE_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    tmem_type_stats s;
    REQUIRE_OK(tmem_type_get_stats(t, &s));
    CHECK(tmem__gpu_device_bytes(g_gpu) - dev0 == s.committed.current);
    CHECK(s.committed.current >= 2 * chunk);
    tmem_device_span sp;
    REQUIRE_OK(tmem_heap_device_span(h, ai.offset, ad.size, &sp));
    CHECK(!strcmp(sp.backend, "cuda") && sp.address != 0 && sp.host == NULL);
    size_t n = (size_t)ad.size;
    uint8_t *a = malloc(n), *b = malloc(n);
    REQUIRE(a && b);
    for (size_t i = 0; i < n; i++) a[i] = (uint8_t)(i * 31 + 7);
    CHECK(put(sp.address, a, n) == CUDA_SUCCESS);
    memset(b, 0, n);
    CHECK(get(b, sp.address, n) == CUDA_SUCCESS);
    CHECK(memcmp(a, b, n) == 0);
    uint64_t addr = sp.address;
    tmem_heap_destroy(h); /* decommit: unmapped and released */
    CHECK(tmem__gpu_device_bytes(g_gpu) == dev0);
    REQUIRE_OK(tmem_type_get_stats(t, &s));
    CHECK(s.committed.current == 0);
    CHECK_MSG(get(b, addr, 4096) != CUDA_SUCCESS, "an unmapped address must fault");
    free(a);
    free(b);
    CHECK_OK(tmem_context_check(g_ctx));
}

static void test_alias(void) {
    tmem_type *t;
    REQUIRE_OK(tmem_type_find(g_ctx, "/memory/cu-dev", &t));
    tmem_plan_problem *pp;
    REQUIRE_OK(tmem_plan_problem_create(&pp));
    tmem_plan_buffer pb[3] = {{"a", 3 * MiB, 256, 0, 2, 0, 0}, {"b", 1 * MiB, 256, 1, 3, 0, 0}, {"c", 3 * MiB, 256, 2, 4, 0, 0}};
    for (int i = 0; i < 3; i++) REQUIRE_OK(tmem_plan_problem_add(pp, &pb[i], NULL));
    tmem_plan *plan;
    REQUIRE_OK(tmem_plan_solve(pp, NULL, &plan));
    tmem_plan_info pi;
    REQUIRE_OK(tmem_plan_get_info(plan, &pi));
    CHECK(pi.arena == pi.lower_bound);
    tmem_heap_desc hd;
    REQUIRE_OK(tmem_plan_heap_desc(plan, &hd));
    hd.type = t;
    hd.flags = TMEM_HEAP_COMMIT_ALL;
    tmem_heap *arena;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &arena));
    tmem_alloc_info ia, ic;
    REQUIRE_OK(tmem_plan_heap_alloc(arena, plan, 0, TMEM_ALLOC_ALIASABLE, &ia));
    tmem_device_span sa, sc;
    REQUIRE_OK(tmem_heap_device_span(arena, ia.offset, 3 * MiB, &sa));
    uint32_t *buf = malloc(3 * MiB);
    REQUIRE(buf);
    for (size_t i = 0; i < 3 * MiB / 4; i++) buf[i] = 0xAAAA0000u + (uint32_t)i;
    CHECK(put(sa.address, buf, 3 * MiB) == CUDA_SUCCESS);
    REQUIRE_OK(tmem_heap_free_offset(arena, ia.offset));
    REQUIRE_OK(tmem_plan_heap_alloc(arena, plan, 2, TMEM_ALLOC_ALIASABLE, &ic));
    REQUIRE_OK(tmem_heap_device_span(arena, ic.offset, 3 * MiB, &sc));
    bool overlap = ic.offset < ia.offset + 3 * MiB && ia.offset < ic.offset + 3 * MiB;
    CHECK(overlap); /* the planner reuses a's bytes for c */
    for (size_t i = 0; i < 3 * MiB / 4; i++) buf[i] = 0xCCCC0000u + (uint32_t)i;
    CHECK(put(sc.address, buf, 3 * MiB) == CUDA_SUCCESS);
    /* a's bytes are c's now: one physical memory under both */
    uint32_t probe = 0;
    uint64_t shared = (ic.offset > ia.offset ? ic.offset : ia.offset);
    CHECK(get(&probe, sa.address + (shared - ia.offset), 4) == CUDA_SUCCESS);
    CHECK(probe >> 16 == 0xCCCCu);
    REQUIRE_OK(tmem_heap_free_offset(arena, ic.offset));
    free(buf);
    tmem_heap_destroy(arena);
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(pp);
    CHECK_OK(tmem_context_check(g_ctx));
}

static void test_budget_faults(void) {
    uint64_t chunk = g_gpu->chunk;
    tmem_type *t = gpu_type(g_ctx, "/memory/cu-budget", TMEM_PLACEMENT_DEVICE, 16 * chunk, 2 * chunk, 0);
    REQUIRE(t);
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.kind = TMEM_HEAP_LINEAR;
    hd.size = 16 * chunk;
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &h));
    tmem_alloc_desc ad = {0};
    ad.size = 3 * chunk;
    tmem_alloc_info ai;
    uint64_t dev0 = tmem__gpu_device_bytes(g_gpu);
    CHECK_ST(tmem_heap_alloc_ex(h, &ad, &ai), TMEM_E_BUDGET);
    CHECK(tmem__gpu_device_bytes(g_gpu) == dev0);
    REQUIRE_OK(tmem_type_set_budget(t, 0));
    for (int64_t nth = 1; nth <= 3; nth++) {
        tmem__gpu_fault_set(g_gpu, nth);
        CHECK_ST(tmem_heap_alloc_ex(h, &ad, &ai), TMEM_E_NO_MEMORY);
        tmem_type_stats s;
        REQUIRE_OK(tmem_type_get_stats(t, &s));
        CHECK(s.committed.current == 0 && tmem__gpu_device_bytes(g_gpu) == dev0);
        CHECK_OK(tmem_context_check(g_ctx));
    }
    tmem__gpu_fault_set(g_gpu, 0);
    CHECK_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    tmem_heap_destroy(h);
    CHECK(tmem__gpu_device_bytes(g_gpu) == dev0);
    CHECK_OK(tmem_context_check(g_ctx));
}

static void test_pinned(void) {
    tmem_type *t = gpu_type(g_ctx, "/memory/cu-pinned", TMEM_PLACEMENT_PINNED, 8 * MiB, 8 * MiB, 0);
    REQUIRE(t);
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = 4 * MiB;
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &h));
    void *p = NULL;
    REQUIRE_OK(tmem_heap_alloc(h, MiB, 256, &p));
    REQUIRE(p);
    memset(p, 0x5A, MiB);
    /* registered: the driver knows the pointer as host memory */
    unsigned mtype = 0;
    REQUIRE(tmem__cu_enter(g_cu));
    CUresult r = g_cu->fn.cuPointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p);
    tmem__cu_leave(g_cu);
    CHECK_MSG(r == CUDA_SUCCESS && mtype == CU_MEMORYTYPE_HOST, "cuPointerGetAttribute %d type %u", (int)r, mtype);
    tmem_type *dev;
    REQUIRE_OK(tmem_type_find(g_ctx, "/memory/cu-dev", &dev));
    tmem_heap_desc dd = {0};
    dd.type = dev;
    dd.size = 4 * MiB;
    tmem_heap *dh;
    REQUIRE_OK(tmem_heap_create(g_ctx, &dd, &dh));
    tmem_alloc_desc ad = {0};
    ad.size = MiB;
    tmem_alloc_info ai;
    REQUIRE_OK(tmem_heap_alloc_ex(dh, &ad, &ai));
    tmem_device_span sp;
    REQUIRE_OK(tmem_heap_device_span(dh, ai.offset, MiB, &sp));
    CHECK(put(sp.address, p, MiB) == CUDA_SUCCESS);
    uint8_t back[64];
    CHECK(get(back, sp.address + MiB - 64, 64) == CUDA_SUCCESS && back[0] == 0x5A && back[63] == 0x5A);
    CHECK_OK(tmem_heap_free(h, p));
    tmem_heap_destroy(dh);
    tmem_heap_destroy(h);
    CHECK_OK(tmem_context_check(g_ctx));
}

/* Map an imported fd at a fresh address and read 256 bytes at `off`. */
static CUresult read_imported(tmem__cu *cu, int fd, uint64_t msize, uint64_t off, uint8_t out[256]) {
    CUmemGenericAllocationHandle ih;
    CUresult r = cu->fn.cuMemImportFromShareableHandle(&ih, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (r != CUDA_SUCCESS) return r;
    CUdeviceptr va = 0;
    r = cu->fn.cuMemAddressReserve(&va, (size_t)msize, (size_t)msize, 0, 0);
    if (r == CUDA_SUCCESS) r = cu->fn.cuMemMap(va, (size_t)msize, 0, ih, 0);
    if (r == CUDA_SUCCESS) r = cu->fn.cuMemSetAccess(va, (size_t)msize, &cu->access, 1);
    if (r == CUDA_SUCCESS) r = cu->fn.cuMemcpyDtoH(out, va + off, 256);
    if (va) {
        (void)cu->fn.cuMemUnmap(va, (size_t)msize);
        (void)cu->fn.cuMemAddressFree(va, (size_t)msize);
    }
    (void)cu->fn.cuMemRelease(ih);
    return r;
}

/* The other process: its own context, the same physical memory. */
static int child_import(int fd, uint64_t msize, uint64_t off) {
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_gpu_desc gd = {0};
    gd.api = TMEM_GPU_CUDA;
    tmem_gpu *gpu;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK || tmem_gpu_attach(ctx, &gd, &gpu) != TMEM_OK) return 2;
    tmem__cu *cu = tmem__cu_of(gpu);
    uint8_t back[256] = {0};
    if (!tmem__cu_enter(cu)) return 3;
    CUresult r = read_imported(cu, fd, msize, off, back);
    tmem__cu_leave(cu);
    int bad = 0;
    for (int i = 0; i < 256; i++) bad += back[i] != (uint8_t)(255 - i);
    tmem_gpu_release(gpu);
    tmem_context_destroy(ctx);
    return r != CUDA_SUCCESS ? 4 : bad ? 5 : 0;
}

static void test_export(void) {
    tmem_gpu_desc gd = {0};
    gd.api = TMEM_GPU_CUDA;
    gd.flags = TMEM_GPU_EXPORTABLE;
    tmem_context *ctx;
    tmem_gpu *gpu;
    tmem_status st = gpu_attach_fresh(&gd, "no POSIX fd export on this device", &ctx, &gpu);
    if (st == TMEM_E_UNSUPPORTED) return;
    REQUIRE_OK(st);
    tmem_type *t = gpu_type(ctx, "/memory/cu-shared", TMEM_PLACEMENT_DEVICE, 8 * MiB, 0, 0);
    REQUIRE(t);
    tmem_heap *h;
    tmem_alloc_info ai;
    tmem_device_span sp;
    REQUIRE_OK(gpu_one_alloc(ctx, t, 2 * MiB, 65536, &h, &ai, &sp));
    uint8_t pat[256];
    for (int i = 0; i < 256; i++) pat[i] = (uint8_t)(255 - i);
    CHECK(put(sp.address, pat, 256) == CUDA_SUCCESS);
    int fd = -1;
    uint64_t moff = 0, msize = 0;
    REQUIRE_OK(tmem_gpu_export_fd(gpu, h, ai.offset, 65536, &fd, &moff, &msize));
    CHECK(fd >= 0 && msize == sp.memory_size);
    /* import and map at a second address: the same bytes */
    tmem__cu *cu = tmem__cu_of(gpu);
    uint8_t back[256] = {0};
    REQUIRE(tmem__cu_enter(cu));
    CUresult r = read_imported(cu, fd, msize, moff, back);
    tmem__cu_leave(cu);
    CHECK_MSG(r == CUDA_SUCCESS, "import/map: %d", (int)r);
    CHECK(memcmp(back, pat, 256) == 0);
    /* another process: the fd crosses exec, the bytes are the same */
    int child = gpu_spawn_importer("test_cuda", fd, msize, moff); /* closes fd */
    CHECK_MSG(child == 0, "importer process exited %d", child);
    CHECK_ST(tmem_gpu_export_fd(g_gpu, h, ai.offset, 65536, &fd, &moff, &msize), TMEM_E_UNSUPPORTED);
    tmem_gpu_release(gpu);
    tmem_context_destroy(ctx);
}

/* Device bytes per role on VMM device memory (gpu_test_util.h). */
static void test_role_device_bytes(void) {
    tmem_type *t = gpu_type(g_ctx, "/memory/cu-roles", TMEM_PLACEMENT_DEVICE, 16 * MiB, 0, 0);
    REQUIRE(t);
    gpu_check_role_device_bytes(g_ctx, t);
}

int main(int argc, char **argv) {
    int cfd;
    uint64_t csize, coff;
    if (gpu_is_import_child(argc, argv, &cfd, &csize, &coff)) return child_import(cfd, csize, coff);
    tmem_context_desc cd = {0};
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    cd.budget = 64ull << 30;
    if (tmem_context_create(&cd, &g_ctx) != TMEM_OK) return 1;
    tmem_gpu_desc gd = {0};
    gd.api = TMEM_GPU_CUDA;
    tmem_status st = tmem_gpu_attach(g_ctx, &gd, &g_gpu);
    if (st == TMEM_E_UNSUPPORTED || st == TMEM_E_NOT_FOUND) {
        printf("SKIP: no CUDA device (%s: %s)\n", tmem_gpu_api_built(TMEM_GPU_CUDA) ? "built" : "not built",
               tmem_status_name(st));
        tmem_context_destroy(g_ctx);
        return 77;
    }
    if (st != TMEM_OK) {
        printf("attach: %s\n", tmem_status_name(st));
        return 1;
    }
    g_cu = tmem__cu_of(g_gpu);
    RUN(test_info);
    RUN(test_native);
    RUN(test_vmm_commit_decommit);
    RUN(test_alias);
    RUN(test_budget_faults);
    RUN(test_pinned);
    RUN(test_export);
    RUN(test_role_device_bytes);
    tmem_gpu_release(g_gpu);
    tmem_context_destroy(g_ctx);
    return tmem_test_finish();
}

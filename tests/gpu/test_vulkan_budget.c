/* The device's memory heaps on a real driver (tmem_gpu_get_heaps): every
 * heap in index order with its size; typedmem's own bytes per heap move by
 * exactly the chunks a pool of each placement commits, on that placement's
 * heap (heap 1 as well where the device has one: the H200's host-visible
 * types), and go back on free; with VK_EXT_memory_budget (NVIDIA; not
 * lavapipe, which skips that part with a message) the driver's heapUsage
 * moves with them and heapBudget is read per heap (0 < budget <= size).
 * Also the chunk size: 1 GiB by default, lowered to maxMemoryAllocationSize,
 * and a configured one honoured. (tests/gpu/test_vulkan.c plays a driver
 * with a budget on every heap index for the paths lavapipe lacks.)
 * Skips (77) without a Vulkan device. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "gpu/vulkan/vulkan_internal.h"
#include "gpu_test_util.h"

#define MiB (1ull << 20)
#define CHUNK (64 * MiB)

static tmem_context *g_ctx;
static tmem_gpu *g_gpu;

static bool heaps(tmem_gpu_heap *hs, uint32_t *n) {
    return tmem_gpu_get_heaps(g_gpu, hs, VK_MAX_MEMORY_HEAPS, n) == TMEM_OK;
}

static void test_heaps(void) {
    tmem__vk *vk = tmem__vk_of(g_gpu);
    tmem_gpu_heap hs[VK_MAX_MEMORY_HEAPS];
    uint32_t n;
    REQUIRE(heaps(hs, &n));
    CHECK(n == vk->mem.memoryHeapCount && n >= 1);
    printf("%u heap(s); VK_EXT_memory_budget %s\n", n, vk->has_budget ? "enabled" : "absent");
    if (!vk->has_budget) printf("SKIP part: no VK_EXT_memory_budget here: the driver's usage is not checked\n");
    uint32_t served = 0;
    for (uint32_t h = 0; h < n; h++) {
        printf("  heap %u: flags 0x%x size %llu MiB budget %llu MiB usage %llu MiB ours %llu MiB placements 0x%x\n", h,
               hs[h].flags, (unsigned long long)(hs[h].size >> 20), (unsigned long long)(hs[h].budget >> 20),
               (unsigned long long)(hs[h].usage >> 20), (unsigned long long)(hs[h].backend_bytes >> 20),
               hs[h].placements);
        CHECK(hs[h].index == h && hs[h].size == vk->mem.memoryHeaps[h].size);
        CHECK(hs[h].budget_from_driver == vk->has_budget);
        CHECK(hs[h].budget > 0 && hs[h].budget <= hs[h].size);
        CHECK(!(served & hs[h].placements));
        served |= hs[h].placements;
    }
    CHECK(served & (1u << TMEM_PLACEMENT_DEVICE));
}

/* A pool of `pl` commits one chunk: our bytes on its heap move by it,
 * nobody else's heap moves, the driver's usage follows. */
static void check_placement(tmem_placement pl, const char *name) {
    tmem__vk *vk = tmem__vk_of(g_gpu);
    uint32_t heap = vk->mem.memoryTypes[vk->type_of[pl]].heapIndex;
    tmem_type *t = gpu_type(g_ctx, name, pl, CHUNK, 0, 0);
    REQUIRE(t);
    tmem_heap_desc hd = {.type = t, .size = CHUNK};
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &h));
    tmem_gpu_heap a[VK_MAX_MEMORY_HEAPS], b[VK_MAX_MEMORY_HEAPS], c[VK_MAX_MEMORY_HEAPS];
    uint32_t n;
    REQUIRE(heaps(a, &n));
    tmem_alloc_desc ad = {.size = MiB};
    tmem_alloc_info ai;
    REQUIRE_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    REQUIRE(heaps(b, &n));
    tmem_heap_destroy(h); /* frees the chunk */
    REQUIRE(heaps(c, &n));
    printf("%s (heap %u): ours %llu -> %llu -> %llu MiB, driver usage %llu -> %llu -> %llu MiB\n", name, heap,
           (unsigned long long)(a[heap].backend_bytes >> 20), (unsigned long long)(b[heap].backend_bytes >> 20),
           (unsigned long long)(c[heap].backend_bytes >> 20), (unsigned long long)(a[heap].usage >> 20),
           (unsigned long long)(b[heap].usage >> 20), (unsigned long long)(c[heap].usage >> 20));
    CHECK(b[heap].backend_bytes == a[heap].backend_bytes + CHUNK && c[heap].backend_bytes == a[heap].backend_bytes);
    for (uint32_t k = 0; k < n; k++)
        if (k != heap) CHECK(b[k].backend_bytes == a[k].backend_bytes);
    if (vk->has_budget) {
        /* the driver counts the process's whole use: other allocations may
         * come and go, but a 64 MiB chunk shows */
        CHECK_MSG(b[heap].usage >= a[heap].usage + CHUNK / 2, "driver usage %llu -> %llu",
                  (unsigned long long)a[heap].usage, (unsigned long long)b[heap].usage);
        CHECK_MSG(c[heap].usage + CHUNK / 2 <= b[heap].usage, "driver usage after free %llu (was %llu)",
                  (unsigned long long)c[heap].usage, (unsigned long long)b[heap].usage);
    }
}

static void test_usage_moves(void) {
    tmem__vk *vk = tmem__vk_of(g_gpu);
    check_placement(TMEM_PLACEMENT_DEVICE, "/memory/vkb-device");
    if (vk->type_of[TMEM_PLACEMENT_DEVICE_HOST_VISIBLE] != UINT32_MAX) {
        uint32_t h0 = vk->mem.memoryTypes[vk->type_of[TMEM_PLACEMENT_DEVICE]].heapIndex;
        uint32_t h1 = vk->mem.memoryTypes[vk->type_of[TMEM_PLACEMENT_DEVICE_HOST_VISIBLE]].heapIndex;
        printf("DEVICE on heap %u, DEVICE_HOST_VISIBLE on heap %u%s\n", h0, h1,
               h0 == h1 ? " (one heap: heap indices other than 0 not exercised here)" : "");
        check_placement(TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, "/memory/vkb-visible");
    }
}

static void test_chunk_size(void) {
    tmem__vk *vk = tmem__vk_of(g_gpu);
    tmem_gpu_info gi;
    REQUIRE_OK(tmem_gpu_get_info(g_gpu, &gi));
    uint64_t want = TMEM_GPU_DEFAULT_CHUNK;
    while (vk->max_alloc && want > vk->max_alloc) want >>= 1;
    printf("default chunk %llu MiB (maxMemoryAllocationSize %llu MiB)\n", (unsigned long long)(gi.chunk_size >> 20),
           (unsigned long long)(vk->max_alloc >> 20));
    CHECK(gi.chunk_size == want);
    /* configured: 8 MiB chunks; a 32 MiB pool is four of them */
    tmem_context *ctx;
    tmem_gpu *gpu;
    tmem_gpu_desc gd = {.chunk_size = 8 * MiB};
    REQUIRE_OK(gpu_attach_fresh(&gd, "vulkan", &ctx, &gpu));
    REQUIRE_OK(tmem_gpu_get_info(gpu, &gi));
    CHECK(gi.chunk_size == 8 * MiB);
    tmem_type *t = gpu_type(ctx, "/memory/vkb-small", TMEM_PLACEMENT_DEVICE, 32 * MiB, 0, 0);
    REQUIRE(t);
    tmem_heap_desc hd = {.type = t, .size = 32 * MiB};
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h));
    tmem_alloc_desc ad = {.size = 12 * MiB};
    tmem_alloc_info ai;
    REQUIRE_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    CHECK(tmem__gpu_device_bytes(gpu) == 16 * MiB); /* two chunks */
    tmem_device_span sp;
    CHECK_ST(tmem_heap_device_span(h, ai.offset, ad.size, &sp), TMEM_E_ALIGNMENT); /* straddles two */
    CHECK(tmem_heap_device_span(h, ai.offset, 4 * MiB, &sp) == TMEM_OK && sp.memory_size == 8 * MiB);
    tmem_heap_destroy(h);
    tmem_gpu_release(gpu);
    tmem_context_destroy(ctx);
    /* larger than the driver allows in one object: lowered */
    gd.chunk_size = 1ull << 44;
    REQUIRE_OK(gpu_attach_fresh(&gd, "vulkan", &ctx, &gpu));
    REQUIRE_OK(tmem_gpu_get_info(gpu, &gi));
    CHECK(!vk->max_alloc || gi.chunk_size <= vk->max_alloc);
    printf("asked 16 TiB chunks: got %llu MiB\n", (unsigned long long)(gi.chunk_size >> 20));
    tmem_gpu_release(gpu);
    tmem_context_destroy(ctx);
    gd.chunk_size = 3 * MiB; /* not a power of two */
    CHECK_ST(gpu_attach_fresh(&gd, "vulkan", &ctx, &gpu), TMEM_E_INVALID_ARG);
}

int main(void) {
    int rc = gpu_main_open(4ull << 30, 0, &g_ctx, &g_gpu);
    if (rc) return rc;
    RUN(test_heaps);
    RUN(test_usage_moves);
    RUN(test_chunk_size);
    tmem_gpu_release(g_gpu);
    tmem_context_destroy(g_ctx);
    return tmem_test_finish();
}

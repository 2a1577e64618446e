/* The Vulkan backend on a real device (lavapipe in CI): memory types per
 * placement, pools as VkDeviceMemory chunks committed on demand, buffers at
 * heap offsets with the device's requirements, budgets and injected
 * allocation failures with state unchanged, aliasing in a planned arena
 * with the documented barrier, export as an fd, and a camera surface
 * imported without a copy and converted by the compute shader, checked bit
 * for bit against the CPU conversion. Skips (77) without a Vulkan device. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "gpu/vulkan/vulkan_internal.h"
#include "gpu_test_util.h"
#ifdef TMEM_HAVE_CUDA
#include "typedmem/cuda.h"
#endif

#define MiB (1ull << 20)

static tmem_context *g_ctx;
static tmem_gpu *g_gpu;

static tmem_context *new_ctx(void) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_context *ctx = NULL;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return NULL;
    return ctx;
}


static void test_info(void) {
    tmem_gpu_info gi;
    REQUIRE_OK(tmem_gpu_get_info(g_gpu, &gi));
    printf("device %s (%s), features: %s, chunk %llu\n", gi.device, gi.driver, gi.features,
           (unsigned long long)gi.chunk_size);
    CHECK(gi.api == TMEM_GPU_VULKAN);
    CHECK(gi.placements & (1u << TMEM_PLACEMENT_DEVICE));
    CHECK(gi.type_count >= 1);
    for (uint32_t i = 0; i < gi.type_count; i++)
        printf("  memory type %u flags 0x%x heap %u size %llu budget %llu usage %llu (%s)\n", gi.types[i].memory_type,
               gi.types[i].property_flags, gi.types[i].heap_index, (unsigned long long)gi.types[i].heap_size,
               (unsigned long long)gi.types[i].budget, (unsigned long long)gi.types[i].usage,
               gi.types[i].budget_from_driver ? "driver budget" : "heap size, our usage");
    CHECK(gi.types[0].property_flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    /* every placement served is served by exactly one of the types listed */
    for (unsigned p = 0; p < TMEM_PLACEMENT_COUNT; p++) {
        unsigned serving = 0;
        for (uint32_t i = 0; i < gi.type_count; i++)
            serving += !!(gi.types[i].placements & (1u << p));
        CHECK_MSG(serving == !!(gi.placements & (1u << p)), "placement %u served by %u types", p,
                  serving);
    }
    CHECK(gi.types[0].placements & (1u << TMEM_PLACEMENT_DEVICE));
}

/* Commit on demand: a heap's first allocation allocates the chunk, the
 * heap's destroy frees it; the gpu's device bytes track the pool exactly. */
static void test_commit_on_demand(void) {
    tmem_type *t = gpu_type(g_ctx, "/memory/vk-dev", TMEM_PLACEMENT_DEVICE, 64 * MiB, 0, 0);
    REQUIRE(t);
    tmem_type_stats s0;
    REQUIRE_OK(tmem_type_get_stats(t, &s0));
    CHECK(s0.committed.current == 0);
    uint64_t before = tmem__gpu_device_bytes(g_gpu);
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = 4 * MiB;
    hd.kind = TMEM_HEAP_GENERAL;
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &h));
    CHECK(tmem__gpu_device_bytes(g_gpu) == before); /* nothing until used */
    tmem_alloc_desc ad = {0};
    ad.size = 1000;
    tmem_alloc_info ai;
    REQUIRE_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    CHECK(ai.ptr == NULL); /* no host view of DEVICE memory */
    tmem_type_stats s1;
    REQUIRE_OK(tmem_type_get_stats(t, &s1));
    CHECK(s1.committed.current > 0);
    CHECK_MSG(tmem__gpu_device_bytes(g_gpu) - before == s1.committed.current, "device %llu committed %llu",
              (unsigned long long)(tmem__gpu_device_bytes(g_gpu) - before), (unsigned long long)s1.committed.current);
    tmem_device_span sp;
    REQUIRE_OK(tmem_heap_device_span(h, ai.offset, 1000, &sp));
    CHECK(!strcmp(sp.backend, "vulkan") && sp.memory != 0);
    tmem_device_memory_info mi;
    REQUIRE_OK(tmem_type_device_info(t, &mi));
    /* mapped only where the memory type is host visible (lavapipe: UMA) */
    CHECK((sp.host != NULL) == ((mi.property_flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0));
    CHECK(sp.offset + 1000 <= sp.memory_size);
    CHECK_OK(tmem_context_check(g_ctx));
    tmem_heap_destroy(h);
    REQUIRE_OK(tmem_type_get_stats(t, &s1));
    CHECK(s1.committed.current == 0);
    CHECK(tmem__gpu_device_bytes(g_gpu) == before);
    /* a host type has no device span */
    CHECK_OK(tmem_context_check(g_ctx));
}

/* The size-and-align query answers with the device's requirements, and a
 * buffer bound there works: fill it on the GPU, read it back. */
typedef struct fill_job {
    VkBuffer a, b;
    uint64_t size;
    uint32_t value;
    tmem_gpu *gpu;
} fill_job;

static void record_fill_copy(VkCommandBuffer cb, void *u) {
    fill_job *j = u;
    tmem__vk *vk = tmem__vk_of(j->gpu);
    vk->fn.vkCmdFillBuffer(cb, j->a, 0, j->size, j->value);
    tmem_vk_cmd_alias_barrier(j->gpu, cb);
    VkBufferCopy c = {0, 0, j->size};
    vk->fn.vkCmdCopyBuffer(cb, j->a, j->b, 1, &c);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vk->fn.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

static void test_buffers(void) {
    tmem_type *dev, *vis;
    REQUIRE(tmem_type_find(g_ctx, "/memory/vk-dev", &dev) == TMEM_OK);
    vis = gpu_type(g_ctx, "/memory/vk-visible", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, 16 * MiB, 0, 0);
    REQUIRE(vis);
    tmem_size_align sa, generic;
    REQUIRE_OK(tmem_type_resource_size_and_align(dev, TMEM_RESOURCE_BUFFER, 1000, 0, &sa));
    REQUIRE_OK(tmem_type_size_and_align(dev, 1000, 0, &generic));
    CHECK(sa.size >= 1000 && sa.alignment >= generic.alignment && sa.size % sa.alignment == 0);
    tmem_size_align img;
    REQUIRE_OK(tmem_type_resource_size_and_align(dev, TMEM_RESOURCE_IMAGE_OPTIMAL, 1000, 0, &img));
    tmem__vk *vk = tmem__vk_of(g_gpu);
    CHECK(img.alignment >= vk->props.limits.bufferImageGranularity);
    CHECK(img.size % vk->props.limits.bufferImageGranularity == 0);
    printf("buffer of 1000: size %llu align %llu; optimal image: align %llu (bufferImageGranularity %llu)\n",
           (unsigned long long)sa.size, (unsigned long long)sa.alignment, (unsigned long long)img.alignment,
           (unsigned long long)vk->props.limits.bufferImageGranularity);
    /* a resource larger than a chunk cannot be placed */
    tmem_size_align big;
    CHECK_ST(tmem_type_resource_size_and_align(dev, TMEM_RESOURCE_BUFFER, 128 * MiB, 0, &big), TMEM_E_OVERFLOW);

    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_GENERAL;
    hd.type = dev;
    hd.size = 8 * MiB;
    tmem_heap *hdev, *hvis;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &hdev));
    hd.type = vis;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &hvis));
    const uint64_t n = 256 * 1024;
    tmem_alloc_desc ad = {0};
    ad.size = n;
    ad.alignment = sa.alignment;
    tmem_alloc_info a_dev, a_vis;
    REQUIRE_OK(tmem_heap_alloc_ex(hdev, &ad, &a_dev));
    REQUIRE_OK(tmem_heap_alloc_ex(hvis, &ad, &a_vis));
    tmem_device_span sv;
    REQUIRE_OK(tmem_heap_device_span(hvis, a_vis.offset, n, &sv));
    CHECK(sv.host != NULL); /* host-visible chunks are mapped */
    fill_job j = {0};
    j.gpu = g_gpu;
    j.size = n;
    j.value = 0xC0FFEE11u;
    REQUIRE_OK(tmem_vk_buffer_create(g_gpu, hdev, a_dev.offset, n, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, &j.a));
    REQUIRE_OK(tmem_vk_buffer_create(g_gpu, hvis, a_vis.offset, n, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &j.b));
    memset(sv.host, 0, n);
    REQUIRE_OK(tmem_vk_run(g_gpu, record_fill_copy, &j));
    const uint32_t *w = sv.host;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n / 4; i++) bad += w[i] != 0xC0FFEE11u;
    CHECK_MSG(bad == 0, "%llu words differ", (unsigned long long)bad);
    /* misuse: not committed / misaligned / host heap */
    VkBuffer nb;
    CHECK_ST(tmem_vk_buffer_create(g_gpu, hdev, a_dev.offset + 1, 64, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &nb),
             sa.alignment > 1 ? TMEM_E_ALIGNMENT : TMEM_OK);
    CHECK_ST(tmem_vk_buffer_create(g_gpu, hdev, 0, 0, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &nb), TMEM_E_INVALID_ARG);
    tmem_vk_buffer_destroy(g_gpu, j.a);
    tmem_vk_buffer_destroy(g_gpu, j.b);
    /* an optimal image at an offset aligned for it */
    VkImageCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, .imageType = VK_IMAGE_TYPE_2D,
                             .format = VK_FORMAT_R8G8B8A8_UNORM, .extent = {128, 128, 1}, .mipLevels = 1,
                             .arrayLayers = 1, .samples = VK_SAMPLE_COUNT_1_BIT, .tiling = VK_IMAGE_TILING_OPTIMAL,
                             .usage = VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                             .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
    REQUIRE_OK(tmem_type_resource_size_and_align(dev, TMEM_RESOURCE_IMAGE_OPTIMAL, 128 * 128 * 4, 0, &img));
    ad.size = img.size;
    ad.alignment = img.alignment;
    tmem_alloc_info a_img;
    REQUIRE_OK(tmem_heap_alloc_ex(hdev, &ad, &a_img));
    VkImage im;
    CHECK_OK(tmem_vk_image_create(g_gpu, hdev, a_img.offset, &ici, &im));
    tmem_vk_image_destroy(g_gpu, im);
    tmem_heap_destroy(hdev);
    tmem_heap_destroy(hvis);
    CHECK_OK(tmem_context_check(g_ctx));
}

/* Budgets on device bytes, and an allocation failure of the driver (fault
 * injected: VK_ERROR_OUT_OF_DEVICE_MEMORY) -> a clean status, state unchanged. */
static void test_budget_and_faults(void) {
    tmem_type *t = gpu_type(g_ctx, "/memory/vk-budget", TMEM_PLACEMENT_DEVICE, 64 * MiB, 2 * MiB, 0);
    REQUIRE(t);
    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_LINEAR;
    hd.type = t;
    hd.size = 48 * MiB;
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &h));
    tmem_alloc_desc ad = {0};
    ad.size = 40 * MiB; /* three 16 MiB chunks */
    tmem_alloc_info ai;
    uint64_t dev0 = tmem__gpu_device_bytes(g_gpu);
    CHECK_ST(tmem_heap_alloc_ex(h, &ad, &ai), TMEM_E_BUDGET); /* over the 2 MiB budget */
    CHECK(tmem__gpu_device_bytes(g_gpu) == dev0);
    tmem_type_stats s;
    REQUIRE_OK(tmem_type_get_stats(t, &s));
    CHECK(s.committed.current == 0 && s.budget_denials >= 1);
    REQUIRE_OK(tmem_type_set_budget(t, 0));
    /* the n-th chunk allocation of this commit fails: the earlier ones are given back */
    tmem_type_stats before;
    REQUIRE_OK(tmem_type_get_stats(t, &before));
    for (int64_t nth = 1; nth <= 3; nth++) {
        tmem__gpu_fault_set(g_gpu, nth);
        tmem_status st = tmem_heap_alloc_ex(h, &ad, &ai);
        CHECK_MSG(st == TMEM_E_NO_MEMORY, "nth %lld: %s", (long long)nth, tmem_status_name(st));
        CHECK(tmem__gpu_device_bytes(g_gpu) == dev0);
        REQUIRE_OK(tmem_type_get_stats(t, &s));
        CHECK(s.committed.current == before.committed.current && s.live_count == before.live_count);
        CHECK_OK(tmem_context_check(g_ctx));
    }
    tmem__gpu_fault_set(g_gpu, 0);
    CHECK_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    CHECK(tmem__gpu_device_bytes(g_gpu) > dev0);
    tmem_heap_destroy(h);
    CHECK(tmem__gpu_device_bytes(g_gpu) == dev0);
    /* device memory cannot be volatile */
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &h));
    CHECK_ST(tmem_heap_set_purgeable(h, TMEM_PURGEABLE_VOLATILE, NULL, NULL), TMEM_E_UNSUPPORTED);
    tmem_heap_destroy(h);
    tmem_device_memory_info mi;
    REQUIRE_OK(tmem_type_device_info(t, &mi));
    CHECK(mi.heap_size > 0 && mi.budget > 0);
    CHECK_OK(tmem_context_check(g_ctx));
    /* stats JSON carries the device section of device types only */
    size_t need = 0;
    tmem_status sized = tmem_stats_json(g_ctx, NULL, 0, &need); /* sizing call */
    CHECK(sized == TMEM_OK || sized == TMEM_E_FULL);
    REQUIRE(need > 1);
    char *js = malloc(need);
    REQUIRE(js);
    REQUIRE_OK(tmem_stats_json(g_ctx, js, need, NULL));
    const char *at = strstr(js, "\"name\":\"/memory/vk-budget\"");
    CHECK(at && strstr(at, "\"device\":{\"backend\":\"vulkan\""));
    free(js);
}

/* A fixed NV12 frame: gradients plus a seeded pattern. */
static void paint_nv12(tmem_surface *s, uint32_t w, uint32_t h, uint64_t seed) {
    tmem_rng r;
    tmem_rng_init(&r, seed);
    uint8_t *yp = tmem_surface_plane_ptr(s, 0), *uv = tmem_surface_plane_ptr(s, 1);
    tmem_surface_info info;
    if (tmem_surface_get_info(s, &info) != TMEM_OK) return;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            yp[y * info.layout.planes[0].bytes_per_row + x] = (uint8_t)((x * 7 + y * 3 + tmem_rng_next(&r) % 32) & 0xFF);
    for (uint32_t y = 0; y < h / 2; y++)
        for (uint32_t x = 0; x < w; x++) uv[y * info.layout.planes[1].bytes_per_row + x] = (uint8_t)(tmem_rng_next(&r) & 0xFF);
}

typedef struct alias_job {
    tmem_gpu *gpu;
    VkBuffer tensor, keep, other;
    uint64_t tensor_bytes, other_bytes;
} alias_job;

/* After the shader wrote `tensor`: copy it out, barrier, then reuse the
 * aliased bytes through `other` (a fill), as the next op of the plan would. */
static void record_keep_then_alias(VkCommandBuffer cb, void *u) {
    alias_job *j = u;
    tmem__vk *vk = tmem__vk_of(j->gpu);
    VkBufferCopy c = {0, 0, j->tensor_bytes};
    vk->fn.vkCmdCopyBuffer(cb, j->tensor, j->keep, 1, &c);
    tmem_vk_cmd_alias_barrier(j->gpu, cb); /* reads of `tensor` finish before `other` writes */
    vk->fn.vkCmdFillBuffer(cb, j->other, 0, j->other_bytes, 0x7F7F7F7Fu);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vk->fn.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

static uint32_t ulp_diff(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    int64_t d = (int64_t)ia - ib;
    return (uint32_t)(d < 0 ? -d : d);
}

/* What convert_case accepts: 0 = bit-identical to both CPU paths. */
static uint32_t g_max_ulp;

static void convert_case(uint32_t sw, uint32_t sh, uint32_t ow, uint32_t oh, const tmem_convert_desc *cd) {
    tmem_context *hctx = new_ctx();
    REQUIRE(hctx);
    tmem_type *img = gpu_type(hctx, "/memory/image", TMEM_PLACEMENT_HOST_SHARED, 64 * MiB, 0, 0);
    REQUIRE(img);
    tmem_surface_desc sd = {0};
    sd.width = sw;
    sd.height = sh;
    sd.format = TMEM_FORMAT_NV12;
    sd.type = img;
    tmem_surface *s;
    REQUIRE_OK(tmem_surface_create(hctx, &sd, &s));
    paint_nv12(s, sw, sh, 0x5eed + sw);
    /* CPU reference */
    uint64_t n = 3ull * ow * oh;
    float *cpu = calloc(n, sizeof *cpu);
    REQUIRE(cpu);
    tmem_tensor_view tv;
    REQUIRE_OK(tmem_tensor_view_chw(cpu, TMEM_DTYPE_F32, 3, oh, ow, &tv));
    REQUIRE_OK(tmem_surface_convert(s, cd, &tv)); /* the SIMD rows where the CPU has them */
    float *scalar = calloc(n, sizeof *scalar);
    REQUIRE(scalar);
    tmem_convert_desc ref = *cd;
    ref.flags |= TMEM_CONVERT_REFERENCE;
    tmem_tensor_view sv;
    REQUIRE_OK(tmem_tensor_view_chw(scalar, TMEM_DTYPE_F32, 3, oh, ow, &sv));
    REQUIRE_OK(tmem_surface_convert(s, &ref, &sv)); /* and the scalar reference */

    /* GPU: a planned arena with three transient buffers; the tensor and
     * `other` overlap (their lifetimes do not). */
    tmem_plan_problem *pp;
    REQUIRE_OK(tmem_plan_problem_create(&pp));
    tmem_size_align sa;
    tmem_type *dev;
    REQUIRE_OK(tmem_type_find(g_ctx, "/memory/vk-dev", &dev));
    REQUIRE_OK(tmem_type_resource_size_and_align(dev, TMEM_RESOURCE_BUFFER, n * 4, 0, &sa));
    tmem_plan_buffer pb[3] = {{"input_scratch", 4096, sa.alignment, 0, 1, 0, 0},
                              {"tensor", n * 4, sa.alignment, 1, 2, 0, 0},
                              {"other", n * 4, sa.alignment, 2, 3, 0, 0}};
    for (int i = 0; i < 3; i++) REQUIRE_OK(tmem_plan_problem_add(pp, &pb[i], NULL));
    tmem_plan *plan;
    REQUIRE_OK(tmem_plan_solve(pp, NULL, &plan));
    CHECK(tmem_plan_offset(plan, 1) == tmem_plan_offset(plan, 2)); /* aliased */
    tmem_heap_desc hd;
    REQUIRE_OK(tmem_plan_heap_desc(plan, &hd));
    hd.type = dev;
    hd.name = "arena";
    tmem_heap *arena;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &arena));
    tmem_alloc_info t_info, o_info;
    REQUIRE_OK(tmem_plan_heap_alloc(arena, plan, 1, TMEM_ALLOC_ALIASABLE, &t_info));

    tmem_vk_surface_memory sm;
    REQUIRE_OK(tmem_vk_surface_import(g_gpu, s, &sm));
    alias_job j = {0};
    j.gpu = g_gpu;
    j.tensor_bytes = j.other_bytes = n * 4;
    REQUIRE_OK(tmem_vk_buffer_create(g_gpu, arena, t_info.offset, n * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, &j.tensor));
    REQUIRE_OK(tmem_vk_convert_nv12(g_gpu, &sm, cd, j.tensor, 0, ow, oh));
    REQUIRE_OK(tmem_heap_free_offset(arena, t_info.offset));
    REQUIRE_OK(tmem_plan_heap_alloc(arena, plan, 2, TMEM_ALLOC_ALIASABLE, &o_info));
    CHECK(o_info.offset == t_info.offset);
    REQUIRE_OK(tmem_vk_buffer_create(g_gpu, arena, o_info.offset, n * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &j.other));
    tmem_type *vis;
    REQUIRE_OK(tmem_type_find(g_ctx, "/memory/vk-visible", &vis));
    tmem_heap_desc kd = {0};
    kd.type = vis;
    kd.size = n * 4 + 4096;
    tmem_heap *keep;
    REQUIRE_OK(tmem_heap_create(g_ctx, &kd, &keep));
    tmem_alloc_desc ad = {0};
    ad.size = n * 4;
    ad.alignment = sa.alignment;
    tmem_alloc_info k_info;
    REQUIRE_OK(tmem_heap_alloc_ex(keep, &ad, &k_info));
    REQUIRE_OK(tmem_vk_buffer_create(g_gpu, keep, k_info.offset, n * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &j.keep));
    REQUIRE_OK(tmem_vk_run(g_gpu, record_keep_then_alias, &j));
    tmem_device_span ks;
    REQUIRE_OK(tmem_heap_device_span(keep, k_info.offset, n * 4, &ks));
    const float *gpu_out = ks.host;
    uint64_t exact = 0;
    uint32_t worst = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t d = ulp_diff(cpu[i], gpu_out[i]), ds = ulp_diff(scalar[i], gpu_out[i]);
        if (ds > d) d = ds;
        exact += d == 0;
        if (d > worst) worst = d;
    }
    printf("convert %ux%u -> 3x%ux%u filter %d matrix %d: %llu/%llu values bit-identical to both CPU paths, worst %u ulp\n", sw, sh, oh,
           ow, cd ? (int)cd->filter : 0, cd ? (int)cd->matrix : 0, (unsigned long long)exact, (unsigned long long)n,
           worst);
    if (g_max_ulp) CHECK_MSG(worst <= g_max_ulp, "GPU and CPU conversions differ by %u ulp (bound %u)", worst,
                             g_max_ulp);
    else CHECK_MSG(exact == n, "GPU and CPU conversions differ (worst %u ulp)", worst);
    /* the aliased bytes now hold `other`'s fill: the tensor's contents are gone */
    if (ks.host) {
        tmem_device_span as;
        REQUIRE_OK(tmem_heap_device_span(arena, o_info.offset, n * 4, &as));
        CHECK(as.memory != 0);
    }
    tmem_vk_buffer_destroy(g_gpu, j.tensor);
    tmem_vk_buffer_destroy(g_gpu, j.other);
    tmem_vk_buffer_destroy(g_gpu, j.keep);
    tmem_vk_surface_release(g_gpu, &sm);
    CHECK_OK(tmem_heap_free_offset(arena, o_info.offset));
    tmem_heap_destroy(arena);
    tmem_heap_destroy(keep);
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(pp);
    tmem_surface_release(s);
    tmem_context_destroy(hctx);
    free(cpu);
    free(scalar);
}

static void convert_cases(void) {
    tmem_convert_desc cd = {0};
    convert_case(640, 480, 224, 224, &cd); /* downscale, BT.601 limited, 1/255 */
    cd.matrix = TMEM_YUV_BT709_FULL;
    cd.mean[0] = 0.485f, cd.mean[1] = 0.456f, cd.mean[2] = 0.406f;
    cd.std[0] = 0.229f, cd.std[1] = 0.224f, cd.std[2] = 0.225f;
    cd.flags = TMEM_CONVERT_BGR;
    convert_case(320, 240, 448, 336, &cd); /* upscale, ImageNet normalisation, BGR */
    cd.filter = TMEM_RESIZE_NEAREST;
    cd.src_rect = (tmem_rect){32, 16, 200, 150};
    convert_case(320, 240, 96, 64, &cd); /* crop + nearest */
}

static bool has_float64(void) {
    tmem_gpu_info gi;
    return tmem_gpu_get_info(g_gpu, &gi) == TMEM_OK && strstr(gi.features, "shader_float64");
}

/* With shaderFloat64 the shader divides exactly: bit-identical on every
 * driver. Without it (the device lacks it, or TMEM_GPU_NO_FLOAT64) the
 * driver's OpFDiv stands, which Vulkan allows 2.5 ulp: at most 3 ulp from
 * the CPU's correctly rounded quotient (NVIDIA: 1). Both variants run. */
static void test_convert(void) {
    bool f64 = has_float64();
    printf("exact division (shaderFloat64): %s\n", f64 ? "yes" : "no, the driver's OpFDiv (bound 3 ulp)");
    g_max_ulp = f64 ? 0 : 3;
    convert_cases();
    tmem_context *save_ctx = g_ctx;
    tmem_gpu *save_gpu = g_gpu;
    g_ctx = new_ctx();
    REQUIRE(g_ctx);
    tmem_gpu_desc gd = {0};
    gd.chunk_size = 16 * MiB;
    gd.flags = TMEM_GPU_NO_FLOAT64;
    REQUIRE_OK(tmem_gpu_attach(g_ctx, &gd, &g_gpu));
    CHECK(!has_float64());
    REQUIRE(gpu_type(g_ctx, "/memory/vk-dev", TMEM_PLACEMENT_DEVICE, 64 * MiB, 0, 0));
    REQUIRE(gpu_type(g_ctx, "/memory/vk-visible", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, 16 * MiB, 0, 0));
    printf("plain division (TMEM_GPU_NO_FLOAT64), bound 3 ulp:\n");
    g_max_ulp = 3;
    convert_cases();
    tmem_gpu_release(g_gpu);
    tmem_context_destroy(g_ctx);
    g_ctx = save_ctx;
    g_gpu = save_gpu;
    g_max_ulp = 0;
}

/* Import an OPAQUE_FD (taking it), map it, count bytes != 0xA5 in 64 KiB at
 * `offset`; -1 when the import or the map fails. */
static int64_t import_and_check(tmem__vk *vk, int fd, uint64_t size, uint64_t offset) {
    VkImportMemoryFdInfoKHR imp = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
                                   .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT, .fd = fd};
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &imp, .allocationSize = size,
                                .memoryTypeIndex = vk->type_of[TMEM_PLACEMENT_DEVICE_HOST_VISIBLE]};
    VkDeviceMemory m;
    void *map = NULL;
    if (vk->fn.vkAllocateMemory(vk->device, &mai, NULL, &m) != VK_SUCCESS) return -1;
    int64_t bad = -1;
    if (vk->fn.vkMapMemory(vk->device, m, 0, VK_WHOLE_SIZE, 0, &map) == VK_SUCCESS) {
        bad = 0;
        for (int i = 0; i < 65536; i++) bad += ((const uint8_t *)map)[offset + i] != 0xA5;
        vk->fn.vkUnmapMemory(vk->device, m);
    }
    vk->fn.vkFreeMemory(vk->device, m, NULL);
    return bad;
}

/* The other process: import the fd into its own device. */
static int child_import(int fd, uint64_t size, uint64_t offset) {
    tmem_context *ctx = new_ctx();
    tmem_gpu *gpu;
    if (!ctx || tmem_gpu_attach(ctx, NULL, &gpu) != TMEM_OK) return 2;
    int64_t bad = import_and_check(tmem__vk_of(gpu), fd, size, offset);
    tmem_gpu_release(gpu);
    tmem_context_destroy(ctx);
    return bad < 0 ? 3 : bad ? 5 : 0;
}

/* Export a chunk as an fd and import it again: the same bytes. */
static void test_export(void) {
    tmem_gpu_desc gd = {0};
    gd.flags = TMEM_GPU_EXPORTABLE;
    gd.chunk_size = 4 * MiB;
    tmem_context *ctx;
    tmem_gpu *gpu;
    tmem_status st = gpu_attach_fresh(&gd, "no VK_KHR_external_memory_fd", &ctx, &gpu);
    if (st == TMEM_E_UNSUPPORTED) return;
    REQUIRE_OK(st);
    tmem_type *t = gpu_type(ctx, "/memory/vk-shared", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, 4 * MiB, 0, 0);
    REQUIRE(t);
    tmem_heap *h;
    tmem_alloc_info ai;
    tmem_device_span sp;
    REQUIRE_OK(gpu_one_alloc(ctx, t, 4 * MiB, 65536, &h, &ai, &sp));
    REQUIRE(sp.host);
    memset(sp.host, 0xA5, 65536);
    int fd = -1;
    uint64_t moff, msize;
    REQUIRE_OK(tmem_gpu_export_fd(gpu, h, ai.offset, 65536, &fd, &moff, &msize));
    CHECK(fd >= 0 && moff == sp.offset && msize == sp.memory_size);
    CHECK(import_and_check(tmem__vk_of(gpu), fd, msize, moff) == 0); /* takes the fd */
    /* another process, its own device: the same bytes */
    REQUIRE_OK(tmem_gpu_export_fd(gpu, h, ai.offset, 65536, &fd, &moff, &msize));
    int child = gpu_spawn_importer("test_vulkan", fd, msize, moff);
    CHECK_MSG(child == 0, "importer process exited %d", child);
    /* a gpu attached without EXPORTABLE, or another gpu's heap: refused */
    CHECK_ST(tmem_gpu_export_fd(g_gpu, h, ai.offset, 65536, &fd, &moff, &msize), TMEM_E_UNSUPPORTED);
    CHECK(fd == -1);
    tmem_gpu_release(gpu);
    tmem_heap_destroy(h);
    tmem_context_destroy(ctx); /* the gpu goes with its last pool */
}

/* TMEM_GPU_HOST_IMPORT: a host-visible pool with one host base, so the
 * host fast path (tmem_heap_alloc) hands out pointers the GPU writes. */
typedef struct fill_one {
    tmem_gpu *gpu;
    VkBuffer b;
    uint64_t size;
} fill_one;

static void record_fill(VkCommandBuffer cb, void *u) {
    fill_one *f = u;
    tmem__vk *vk = tmem__vk_of(f->gpu);
    vk->fn.vkCmdFillBuffer(cb, f->b, 0, f->size, 0x01020304u);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vk->fn.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

static void test_host_import(void) {
    tmem_gpu_desc gd = {0};
    gd.flags = TMEM_GPU_HOST_IMPORT;
    gd.chunk_size = 1 * MiB;
    tmem_context *ctx;
    tmem_gpu *gpu;
    tmem_status st = gpu_attach_fresh(&gd, "no VK_EXT_external_memory_host", &ctx, &gpu);
    if (st == TMEM_E_UNSUPPORTED) return;
    REQUIRE_OK(st);
    gd.flags |= TMEM_GPU_EXPORTABLE; /* imported memory cannot be exported */
    tmem_gpu *other = NULL;
    CHECK_ST(tmem_gpu_attach(ctx, &gd, &other), TMEM_E_INVALID_ARG);
    tmem_type *t = gpu_type(ctx, "/memory/unified", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, 4 * MiB, 0, 0);
    REQUIRE(t);
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = 3 * MiB; /* spans chunks: fine for the host, a buffer stays in one */
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h));
    CHECK(tmem_heap_ptr(h, 0) != NULL);
    uint64_t dev0 = tmem__gpu_device_bytes(gpu);
    void *p = NULL;
    REQUIRE_OK(tmem_heap_alloc(h, 256 * 1024, 256, &p)); /* the host fast path */
    REQUIRE(p);
    CHECK(tmem__gpu_device_bytes(gpu) > dev0);
    memset(p, 0, 256 * 1024);
    uint64_t off = (uint64_t)((char *)p - (char *)tmem_heap_ptr(h, 0));
    tmem_device_span sp;
    REQUIRE_OK(tmem_heap_device_span(h, off, 256 * 1024, &sp));
    CHECK(sp.host == p); /* the device memory is these very pages */
    fill_one f = {gpu, VK_NULL_HANDLE, 256 * 1024};
    REQUIRE_OK(tmem_vk_buffer_create(gpu, h, off, f.size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &f.b));
    REQUIRE_OK(tmem_vk_run(gpu, record_fill, &f));
    const uint32_t *w = p;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < f.size / 4; i++) bad += w[i] != 0x01020304u;
    CHECK_MSG(bad == 0, "%llu words not written by the GPU", (unsigned long long)bad);
    tmem_vk_buffer_destroy(gpu, f.b);
    CHECK_OK(tmem_heap_free(h, p));
    CHECK_OK(tmem_context_check(ctx));
    tmem_heap_destroy(h);
    CHECK(tmem__gpu_device_bytes(gpu) == dev0); /* chunks and their pages given back */
    tmem_gpu_release(gpu);
    tmem_context_destroy(ctx);
}

/* Misuse: clean statuses, outputs cleared, nothing created. */
static void test_misuse(void) {
    tmem_gpu *gpu = (tmem_gpu *)(uintptr_t)1;
    tmem_gpu_desc gd = {0};
    CHECK_ST(tmem_gpu_attach(NULL, &gd, &gpu), TMEM_E_INVALID_ARG);
    CHECK(gpu == NULL);
    CHECK_ST(tmem_gpu_attach(g_ctx, &gd, NULL), TMEM_E_INVALID_ARG);
    gd.api = TMEM_GPU_API_COUNT;
    CHECK_ST(tmem_gpu_attach(g_ctx, &gd, &gpu), TMEM_E_INVALID_ARG);
    gd.api = TMEM_GPU_VULKAN;
    gd.flags = 0x80;
    CHECK_ST(tmem_gpu_attach(g_ctx, &gd, &gpu), TMEM_E_INVALID_ARG);
    gd.flags = 0;
    gd.chunk_size = 3 << 20; /* not a power of two */
    CHECK_ST(tmem_gpu_attach(g_ctx, &gd, &gpu), TMEM_E_INVALID_ARG);
    gd.chunk_size = 0;
    gd.api = TMEM_GPU_CUDA;
    gd.native = &gd; /* CUDA takes no native handle */
    CHECK_ST(tmem_gpu_attach(g_ctx, &gd, &gpu), TMEM_E_INVALID_ARG);
    CHECK(tmem_gpu_api_name(TMEM_GPU_API_COUNT) == NULL && !strcmp(tmem_gpu_api_name(TMEM_GPU_VULKAN), "vulkan"));
#ifdef TMEM_HAVE_CUDA
    tmem_cu_native cn;
    memset(&cn, 0xAB, sizeof cn);
    CHECK_ST(tmem_cu_get_native(g_gpu, &cn), TMEM_E_INVALID_ARG); /* a Vulkan gpu */
    CHECK(cn.context == NULL && cn.ordinal == 0);
#endif
    tmem_gpu_info gi;
    CHECK_ST(tmem_gpu_get_info(NULL, &gi), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gpu_poll_pressure(NULL, NULL), TMEM_E_INVALID_ARG);
    tmem_gpu_release(NULL);
    /* spans: a host heap has none; out of range; not committed */
    tmem_type_desc td = {0};
    td.name = "/memory/host-misuse";
    td.reserve = 4 * MiB;
    tmem_type *ht;
    REQUIRE_OK(tmem_type_create(g_ctx, &td, &ht));
    tmem_heap_desc hd = {0};
    hd.type = ht;
    hd.size = MiB;
    tmem_heap *hh;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &hh));
    tmem_device_span sp;
    CHECK_ST(tmem_heap_device_span(hh, 0, 64, &sp), TMEM_E_UNSUPPORTED);
    CHECK(sp.backend == NULL && sp.memory == 0);
    CHECK_ST(tmem_type_device_info(ht, NULL), TMEM_E_INVALID_ARG);
    tmem_device_memory_info mi;
    CHECK_ST(tmem_type_device_info(ht, &mi), TMEM_E_UNSUPPORTED);
    tmem_size_align sa;
    CHECK_OK(tmem_type_resource_size_and_align(ht, TMEM_RESOURCE_BUFFER, 100, 0, &sa)); /* host: the generic answer */
    CHECK(sa.size == 112 && sa.alignment == 16);
    CHECK_ST(tmem_type_resource_size_and_align(ht, TMEM_RESOURCE_KIND_COUNT, 100, 0, &sa), TMEM_E_INVALID_ARG);
    VkBuffer b = (VkBuffer)(uintptr_t)1;
    CHECK_ST(tmem_vk_buffer_create(g_gpu, hh, 0, 64, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &b), TMEM_E_UNSUPPORTED);
    CHECK(b == VK_NULL_HANDLE);
    tmem_heap_destroy(hh);
    tmem_type *dt;
    REQUIRE_OK(tmem_type_find(g_ctx, "/memory/vk-dev", &dt));
    hd.type = dt;
    hd.size = 4 * MiB;
    tmem_heap *dh;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &dh));
    CHECK_ST(tmem_heap_device_span(dh, 0, 64, &sp), TMEM_E_STATE); /* nothing committed yet */
    CHECK_ST(tmem_heap_device_span(dh, 4 * MiB - 32, 64, &sp), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_device_span(dh, 0, 0, &sp), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_device_span(NULL, 0, 64, &sp), TMEM_E_INVALID_ARG);
    int fd = 7;
    uint64_t mo, ms;
    CHECK_ST(tmem_gpu_export_fd(g_gpu, dh, 0, 64, &fd, &mo, &ms), TMEM_E_UNSUPPORTED); /* not EXPORTABLE */
    CHECK(fd == -1);
    tmem_vk_surface_memory sm;
    CHECK_ST(tmem_vk_surface_import(g_gpu, NULL, &sm), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_vk_convert_nv12(g_gpu, &sm, NULL, VK_NULL_HANDLE, 0, 8, 8), TMEM_E_INVALID_ARG);
    tmem_heap_destroy(dh);
    CHECK_OK(tmem_context_check(g_ctx));
}

/* VK_EXT_memory_budget, injected. lavapipe (Mesa 22.3.6) lacks the
 * extension, so the test plays the driver: it marks the extension present and
 * answers vkGetPhysicalDeviceMemoryProperties2 itself, filling the
 * VkPhysicalDeviceMemoryBudgetPropertiesEXT it finds in the pNext chain with
 * a different budget and usage per heap. What is checked is our side: the
 * struct is chained and read at the right heap index, the figures reach
 * tmem_type_device_info, stats JSON and the pressure level, and a chunk that
 * would cross the driver's budget is refused with TMEM_E_BUDGET, state
 * unchanged. A real driver's figures are not (docs/backend.md). */
static uint64_t g_heap_budget[VK_MAX_MEMORY_HEAPS], g_heap_usage[VK_MAX_MEMORY_HEAPS];
static VkPhysicalDeviceMemoryProperties g_mem;
static uint32_t g_props2_calls;

static void VKAPI_CALL fake_props2(VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties2 *p) {
    (void)pd;
    g_props2_calls++;
    p->memoryProperties = g_mem;
    for (VkBaseOutStructure *n = (VkBaseOutStructure *)p->pNext; n; n = n->pNext) {
        if (n->sType != VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT) continue;
        VkPhysicalDeviceMemoryBudgetPropertiesEXT *b =
            (VkPhysicalDeviceMemoryBudgetPropertiesEXT *)n;
        for (uint32_t h = 0; h < VK_MAX_MEMORY_HEAPS; h++) {
            b->heapBudget[h] = h < g_mem.memoryHeapCount ? g_heap_budget[h] : 0;
            b->heapUsage[h] = h < g_mem.memoryHeapCount ? g_heap_usage[h] : 0;
        }
    }
}

static int g_pressure_calls;
static tmem_pressure g_pressure_last;
static void on_pressure(tmem_context *ctx, tmem_pressure level, void *user) {
    (void)ctx, (void)user;
    g_pressure_calls++;
    g_pressure_last = level;
}

static void test_memory_budget(void) {
    tmem__vk *vk = tmem__vk_of(g_gpu);
    tmem_pressure lvl;
    tmem_gpu_info gi;
    REQUIRE_OK(tmem_gpu_get_info(g_gpu, &gi));
    printf("VK_EXT_memory_budget on this device: %s\n",
           vk->has_budget ? "present" : "absent (injected below)");
    CHECK(tmem_gpu_poll_pressure(g_gpu, &lvl) == (vk->has_budget ? TMEM_OK : TMEM_E_UNSUPPORTED));
    CHECK(gi.types[0].budget_from_driver == vk->has_budget);
    tmem_type *t = gpu_type(g_ctx, "/memory/vk-drvbudget", TMEM_PLACEMENT_DEVICE, 64 * MiB, 0, 0);
    REQUIRE(t);
    tmem_device_memory_info mi;
    REQUIRE_OK(tmem_type_device_info(t, &mi));
    uint32_t heap = mi.heap_index;
    /* play the driver */
    bool had_budget = vk->has_budget;
    PFN_vkGetPhysicalDeviceMemoryProperties2 real = vk->fn.vkGetPhysicalDeviceMemoryProperties2;
    g_mem = vk->mem;
    for (uint32_t h = 0; h < VK_MAX_MEMORY_HEAPS; h++)
        g_heap_budget[h] = (h + 3) * 1000 * MiB, g_heap_usage[h] = h * MiB;
    g_heap_budget[heap] = 1000 * MiB;
    g_heap_usage[heap] = 100 * MiB;
    vk->has_budget = true;
    vk->fn.vkGetPhysicalDeviceMemoryProperties2 = fake_props2;
    REQUIRE_OK(tmem_type_device_info(t, &mi));
    CHECK(g_props2_calls > 0 && mi.budget_from_driver);
    /* tmem_gpu_get_heaps reads every heap at its own index */
    tmem_gpu_heap hs[VK_MAX_MEMORY_HEAPS];
    uint32_t nh = 0;
    CHECK_OK(tmem_gpu_get_heaps(g_gpu, hs, VK_MAX_MEMORY_HEAPS, &nh));
    CHECK(nh == vk->mem.memoryHeapCount);
    for (uint32_t h = 0; h < nh; h++)
        CHECK_MSG(hs[h].index == h && hs[h].budget_from_driver && hs[h].budget == g_heap_budget[h] &&
                      hs[h].usage == g_heap_usage[h] && hs[h].size == vk->mem.memoryHeaps[h].size,
                  "heap %u: budget %llu usage %llu", h, (unsigned long long)hs[h].budget,
                  (unsigned long long)hs[h].usage);
    CHECK_ST(tmem_gpu_get_heaps(g_gpu, hs, 0, &nh), TMEM_E_FULL);
    CHECK(nh == vk->mem.memoryHeapCount);
    CHECK_ST(tmem_gpu_get_heaps(g_gpu, NULL, 1, &nh), TMEM_E_INVALID_ARG);
    CHECK(nh == 0);
    CHECK_MSG(mi.budget == 1000 * MiB && mi.usage == 100 * MiB, "heap %u budget %llu usage %llu",
              heap, (unsigned long long)mi.budget, (unsigned long long)mi.usage);
    char js[1 << 14];
    if (tmem_stats_json(g_ctx, js, sizeof js, NULL) == TMEM_OK) {
        const char *at = strstr(js, "\"name\":\"/memory/vk-drvbudget\"");
        char want[160];
        snprintf(want, sizeof want, "\"heap_budget\":%llu,\"heap_usage\":%llu,",
                 (unsigned long long)(1000 * MiB), (unsigned long long)(100 * MiB));
        CHECK(at && strstr(at, want) && strstr(at, "\"budget_from_driver\":true"));
    } else {
        CHECK_MSG(0, "stats JSON larger than 16 KiB");
    }
    /* the driver's budget refuses a chunk that would cross it */
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = 16 * MiB; /* one chunk */
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &h));
    tmem_alloc_desc ad = {0};
    ad.size = MiB;
    tmem_alloc_info ai;
    uint64_t dev0 = tmem__gpu_device_bytes(g_gpu);
    tmem_type_stats s0, s;
    REQUIRE_OK(tmem_type_get_stats(t, &s0));
    g_heap_usage[heap] = 1000 * MiB - 8 * MiB; /* 8 MiB left, the chunk is 16 */
    CHECK_ST(tmem_heap_alloc_ex(h, &ad, &ai), TMEM_E_BUDGET);
    REQUIRE_OK(tmem_type_get_stats(t, &s));
    CHECK(tmem__gpu_device_bytes(g_gpu) == dev0 && s.committed.current == s0.committed.current);
    CHECK(s.live_count == s0.live_count);
    CHECK_OK(tmem_context_check(g_ctx));
    g_heap_usage[heap] = 1000 * MiB - 16 * MiB; /* exactly a chunk left */
    CHECK_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    CHECK(tmem__gpu_device_bytes(g_gpu) == dev0 + 16 * MiB);
    tmem_heap_destroy(h);
    /* the driver's budget as a pressure source, with the context's fractions
     * (0.80 warning, 0.95 critical); every type the gpu serves is polled, so
     * the other heaps stay low */
    REQUIRE_OK(tmem_context_set_pressure_callback(g_ctx, on_pressure, NULL));
    g_pressure_calls = 0;
    g_heap_usage[heap] = 850 * MiB;
    CHECK_OK(tmem_gpu_poll_pressure(g_gpu, &lvl));
    CHECK(lvl == TMEM_PRESSURE_WARNING && g_pressure_calls == 1 && g_pressure_last == TMEM_PRESSURE_WARNING);
    g_heap_usage[heap] = 990 * MiB;
    CHECK_OK(tmem_gpu_poll_pressure(g_gpu, &lvl));
    CHECK(lvl == TMEM_PRESSURE_CRITICAL && g_pressure_last == TMEM_PRESSURE_CRITICAL);
    g_heap_usage[heap] = 10 * MiB;
    CHECK_OK(tmem_gpu_poll_pressure(g_gpu, &lvl));
    CHECK(lvl == TMEM_PRESSURE_NORMAL && g_pressure_calls == 3);
    REQUIRE_OK(tmem_context_set_pressure_callback(g_ctx, NULL, NULL));
    vk->fn.vkGetPhysicalDeviceMemoryProperties2 = real;
    vk->has_budget = had_budget;
}

/* Device bytes per role on Vulkan device memory (gpu_test_util.h). */
static void test_role_device_bytes(void) {
    tmem_type *t = gpu_type(g_ctx, "/memory/vk-roles", TMEM_PLACEMENT_DEVICE, 16 * MiB, 0, 0);
    REQUIRE(t);
    gpu_check_role_device_bytes(g_ctx, t);
}

/* HOST_CACHED types, and release before the context: pools keep the device. */
static void test_cached_and_lifetime(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    tmem_gpu *gpu;
    REQUIRE_OK(tmem_gpu_attach(ctx, NULL, &gpu));
    tmem_type *t = gpu_type(ctx, "/memory/readback", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, 1 * MiB, 0, TMEM_TYPE_HOST_CACHED);
    CHECK(t != NULL);
    tmem_device_memory_info mi;
    if (t) {
        REQUIRE_OK(tmem_type_device_info(t, &mi));
        CHECK(mi.property_flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    }
    /* the same from a config file: placement and flag by name */
    static const char cfg[] = "[type /memory/readback2]\nplacement = device_host_visible\nflags = host_cached\n"
                              "reserve = 1MiB\n";
    tmem_config_error ce;
    CHECK_OK(tmem_config_load_string(ctx, cfg, sizeof cfg - 1, &ce));
    tmem_type *t2;
    if (tmem_type_find(ctx, "/memory/readback2", &t2) == TMEM_OK) {
        tmem_type_info ti;
        CHECK_OK(tmem_type_get_info(t2, &ti));
        CHECK(ti.flags & TMEM_TYPE_HOST_CACHED);
        CHECK_OK(tmem_type_device_info(t2, &mi));
        CHECK(mi.property_flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    } else {
        CHECK_MSG(0, "config type not created");
    }
    tmem_gpu_release(gpu);
    /* released: new device types have no backend */
    tmem_type_desc td = {0};
    td.name = "/memory/late";
    td.placement = TMEM_PLACEMENT_DEVICE;
    td.reserve = MiB;
    tmem_type *late;
    CHECK_ST(tmem_type_create(ctx, &td, &late), TMEM_E_UNSUPPORTED);
    tmem_context_destroy(ctx);
}

/* The device typedmem opened, as code above the library sees it: the
 * loader's entry points (they resolve device functions), the compute
 * features enabled = those the device supports, and submissions to the
 * shared queue through tmem_vk_queue_submit (serialised with ours). */
static void test_native_and_submit(void) {
    tmem_vk_native nat;
    VkQueue q;
    CHECK_ST(tmem_vk_get_native(NULL, &nat, &q), TMEM_E_INVALID_ARG);
    CHECK(nat.device == VK_NULL_HANDLE && nat.get_device_proc_addr == NULL && q == VK_NULL_HANDLE);
    REQUIRE_OK(tmem_vk_get_native(g_gpu, &nat, &q));
    REQUIRE(nat.get_instance_proc_addr && nat.get_device_proc_addr && q);
    PFN_vkCreateFence create_fence = (PFN_vkCreateFence)nat.get_device_proc_addr(nat.device, "vkCreateFence");
    PFN_vkGetPhysicalDeviceFeatures2 feats2 =
        (PFN_vkGetPhysicalDeviceFeatures2)nat.get_instance_proc_addr(nat.instance, "vkGetPhysicalDeviceFeatures2");
    REQUIRE(create_fence && feats2);
    VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features v11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &v12};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &v11};
    if (nat.api_version >= VK_API_VERSION_1_2) {
        feats2(nat.physical_device, &f2);
        CHECK(nat.features.storage_buffer_16bit == !!v11.storageBuffer16BitAccess);
        CHECK(nat.features.storage_buffer_8bit == !!v12.storageBuffer8BitAccess);
        CHECK(nat.features.shader_float16 == !!v12.shaderFloat16 && nat.features.shader_int8 == !!v12.shaderInt8);
        CHECK(nat.features.shader_int16 == !!f2.features.shaderInt16);
        printf("features: 16-bit storage %d, 8-bit %d, f16 %d, int8 %d, int16 %d, int64 %d, subgroup size control %d\n",
               nat.features.storage_buffer_16bit, nat.features.storage_buffer_8bit, nat.features.shader_float16,
               nat.features.shader_int8, nat.features.shader_int16, nat.features.shader_int64,
               nat.features.subgroup_size_control);
    }
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence = VK_NULL_HANDLE;
    REQUIRE(create_fence(nat.device, &fci, NULL, &fence) == VK_SUCCESS);
    tmem__vk *vk = tmem__vk_of(g_gpu);
    CHECK_ST(tmem_vk_queue_submit(NULL, 0, NULL, fence), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_vk_queue_submit(g_gpu, 1, NULL, fence), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_vk_queue_submit(g_gpu, 0, NULL, fence)); /* signals the fence when the queue is idle */
    CHECK(vk->fn.vkWaitForFences(vk->device, 1, &fence, VK_TRUE, 5000000000ull) == VK_SUCCESS);
    vk->fn.vkDestroyFence(vk->device, fence, NULL);
}

/* The driver is loaded through the OS layer (tmem__os_lib_open): with the
 * load failed, attach answers UNSUPPORTED and leaves nothing behind, the
 * path every machine without Vulkan takes. */
static void test_driver_absent(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    int64_t fds = tmem__os_live_fds(), maps = tmem__os_live_mappings();
    tmem_gpu_desc gd = {0};
    tmem_gpu *gpu = (tmem_gpu *)(uintptr_t)1;
    tmem__os_fault_arm(TMEM__OS_LIB_OPEN, 0, true, ENOENT);
    tmem_status st = tmem_gpu_attach(ctx, &gd, &gpu);
    bool fired = tmem__os_fault_fired();
    tmem__os_fault_disarm();
    CHECK(fired);
    CHECK_ST(st, TMEM_E_UNSUPPORTED);
    CHECK(gpu == NULL);
    CHECK(tmem__os_live_fds() == fds && tmem__os_live_mappings() == maps);
    tmem_context_destroy(ctx);
}

int main(int argc, char **argv) {
    int cfd;
    uint64_t csize, coff;
    if (gpu_is_import_child(argc, argv, &cfd, &csize, &coff)) return child_import(cfd, csize, coff);
    g_ctx = new_ctx();
    if (!g_ctx) return 1;
    tmem_gpu_desc gd = {0};
    gd.chunk_size = 16 * MiB;
    tmem_status st = tmem_gpu_attach(g_ctx, &gd, &g_gpu);
    if (st == TMEM_E_UNSUPPORTED || st == TMEM_E_NOT_FOUND) {
        printf("SKIP: no Vulkan device (%s): install mesa-vulkan-drivers for lavapipe\n", tmem_status_name(st));
        tmem_context_destroy(g_ctx);
        return 77;
    }
    if (st != TMEM_OK) {
        printf("attach failed: %s\n", tmem_status_name(st));
        return 1;
    }
    RUN(test_info);
    RUN(test_commit_on_demand);
    RUN(test_buffers);
    RUN(test_budget_and_faults);
    RUN(test_convert);
    RUN(test_memory_budget);
    RUN(test_role_device_bytes);
    RUN(test_misuse);
    RUN(test_driver_absent);
    RUN(test_host_import);
    RUN(test_export);
    RUN(test_cached_and_lifetime);
    RUN(test_native_and_submit);
    tmem_gpu_release(g_gpu);
    tmem_context_destroy(g_ctx);
    return tmem_test_finish();
}

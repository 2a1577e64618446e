/* Weights on the device from a mapped file (tmem_vk_import_mapping), on
 * lavapipe in CI: the import path (VK_EXT_external_memory_host: the file's
 * pages, no copy, in pieces no larger than max_piece with every range in
 * one piece) and the upload path (forced by the flag and by
 * TMEM_VK_NO_IMPORT=1, and taken by itself for a mapping the device cannot
 * import): ranges in heaps of a DEVICE type charged to the WEIGHTS role,
 * copied through one staging buffer no larger than asked. Every range's
 * bytes are read back from the device and compared with the file. Each
 * device call of both paths fails in turn: a clean status and nothing left
 * allocated. Also under the validation layer. Skips (77) without Vulkan. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "harness.h"
#include "gpu/gpu_internal.h"
#include "gpu_test_util.h"
#include "typedmem/vulkan.h"

#define MiB (1ull << 20)
#define FILE_BYTES (3 * MiB + 123)

static tmem_context *g_ctx;
static tmem_gpu *g_gpu;
static const uint8_t *g_map;
static PFN_vkCmdCopyBuffer g_copy;
static tmem_heap *g_stage;
static VkBuffer g_stage_buf;
static uint8_t *g_stage_host;

/* Five ranges, out of order, one across the 1 MiB boundary, one to the end. */
static const tmem_vk_range g_ranges[] = {
    {2 * MiB + 16, 500000}, {0, 4096}, {MiB - 100, 300}, {4096, 10000}, {3 * MiB, 123},
};
#define NRANGES (sizeof g_ranges / sizeof g_ranges[0])

static uint8_t byte_at(uint64_t i) { return (uint8_t)(i * 2654435761u >> 13); }

typedef struct copy_arg {
    VkBuffer src;
    uint64_t off, size;
} copy_arg;

static void record_copy(VkCommandBuffer cb, void *user) {
    const copy_arg *a = user;
    VkBufferCopy r = {a->off, 0, a->size};
    g_copy(cb, a->src, g_stage_buf, 1, &r);
}

/* Range i read back from the device equals the file. */
static bool range_right(const tmem_vk_mapping *m, uint32_t i) {
    tmem_vk_span sp;
    if (tmem_vk_mapping_span(m, i, &sp) != TMEM_OK || sp.size != g_ranges[i].size || !sp.buffer) return false;
    memset(g_stage_host, 0xEE, (size_t)sp.size);
    copy_arg a = {sp.buffer, sp.offset, sp.size};
    if (tmem_vk_run(g_gpu, record_copy, &a) != TMEM_OK) return false;
    for (uint64_t k = 0; k < sp.size; k++)
        if (g_stage_host[k] != byte_at(g_ranges[i].offset + k)) return false;
    return true;
}

static uint64_t committed(const char *name) {
    tmem_type *t;
    tmem_type_stats s;
    if (tmem_type_find(g_ctx, name, &t) != TMEM_OK) return 0;
    return tmem_type_get_stats(t, &s) == TMEM_OK ? s.committed.current : UINT64_MAX;
}

static tmem_vk_mapping_desc desc_of(uint32_t flags) {
    tmem_vk_mapping_desc d = {0};
    d.base = g_map;
    d.size = FILE_BYTES;
    d.ranges = g_ranges;
    d.range_count = NRANGES;
    d.flags = flags;
    d.max_piece = MiB;
    d.staging_bytes = 256 * 1024;
    return d;
}

static void test_import(void) {
    tmem_gpu_info gi;
    REQUIRE_OK(tmem_gpu_get_info(g_gpu, &gi));
    if (!strstr(gi.features, "external_memory_host")) {
        printf("SKIP part: no VK_EXT_external_memory_host on %s\n", gi.device);
        return;
    }
    tmem_vk_mapping_desc d = desc_of(0);
    tmem_vk_mapping *m;
    uint64_t dev0 = tmem__gpu_device_bytes(g_gpu);
    REQUIRE_OK(tmem_vk_import_mapping(g_gpu, &d, &m));
    tmem_vk_mapping_info mi;
    REQUIRE_OK(tmem_vk_mapping_get_info(m, &mi));
    printf("import: %u pieces, %llu bytes imported, device_local %d\n", mi.pieces,
           (unsigned long long)mi.imported_bytes, mi.device_local);
    CHECK(mi.imported && mi.import_status == TMEM_OK && mi.device_bytes == 0 && mi.uploaded_bytes == 0);
    CHECK(mi.pieces >= 3 && mi.imported_bytes <= FILE_BYTES + 4 * 4096);
    CHECK(tmem__gpu_device_bytes(g_gpu) == dev0); /* no device memory of ours */
    for (uint32_t i = 0; i < NRANGES; i++) CHECK_MSG(range_right(m, i), "import: range %u", i);
    tmem_vk_span sp;
    CHECK_ST(tmem_vk_mapping_span(m, NRANGES, &sp), TMEM_E_INVALID_ARG);
    CHECK(sp.buffer == VK_NULL_HANDLE);
    tmem_vk_mapping_destroy(m);
    /* a range larger than max_piece cannot be imported in one piece */
    d.max_piece = 64 * 1024;
    CHECK_ST(tmem_vk_import_mapping(g_gpu, &d, &m), TMEM_E_OVERFLOW);
    CHECK(m == NULL);
    /* the whole mapping as one range */
    d = desc_of(TMEM_VK_MAPPING_IMPORT_ONLY);
    d.ranges = NULL, d.range_count = 0, d.max_piece = 0;
    REQUIRE_OK(tmem_vk_import_mapping(g_gpu, &d, &m));
    REQUIRE_OK(tmem_vk_mapping_get_info(m, &mi));
    CHECK(mi.imported && mi.pieces == 1);
    CHECK_OK(tmem_vk_mapping_span(m, 0, &sp));
    CHECK(sp.offset == 0 && sp.size == FILE_BYTES);
    tmem_vk_mapping_destroy(m);
}

static void check_upload(tmem_vk_mapping *m, const char *what) {
    tmem_vk_mapping_info mi;
    REQUIRE_OK(tmem_vk_mapping_get_info(m, &mi));
    uint64_t sum = 0;
    for (uint32_t i = 0; i < NRANGES; i++) sum += g_ranges[i].size;
    printf("%s: %u device heaps, %llu device bytes, staging %llu, %llu bytes in %u copies\n", what, mi.pieces,
           (unsigned long long)mi.device_bytes, (unsigned long long)mi.staging_bytes,
           (unsigned long long)mi.uploaded_bytes, mi.copies);
    CHECK(!mi.imported && mi.device_local && mi.device_bytes >= sum && mi.uploaded_bytes == sum);
    CHECK(mi.staging_bytes == 256 * 1024 && mi.copies >= sum / (256 * 1024));
    CHECK(committed("/memory/staging") == 0); /* the staging buffer is gone */
    CHECK(committed("/memory/device-weights") == mi.device_bytes);
    tmem_role_stats rs;
    CHECK_OK(tmem_role_get_stats(g_ctx, TMEM_ROLE_WEIGHTS, &rs));
    CHECK_MSG(rs.device_in_use.current >= sum && rs.device_live_count == mi.pieces, "weights on device %llu, %llu live",
              (unsigned long long)rs.device_in_use.current, (unsigned long long)rs.device_live_count);
    for (uint32_t i = 0; i < NRANGES; i++) CHECK_MSG(range_right(m, i), "%s: range %u", what, i);
}

static void test_upload(void) {
    tmem_vk_mapping_desc d = desc_of(TMEM_VK_MAPPING_UPLOAD);
    tmem_vk_mapping *m;
    REQUIRE_OK(tmem_vk_import_mapping(g_gpu, &d, &m));
    check_upload(m, "upload (flag)");
    tmem_vk_mapping_destroy(m);
    CHECK(committed("/memory/device-weights") == 0);
    /* the environment forces it too */
    setenv("TMEM_VK_NO_IMPORT", "1", 1);
    d = desc_of(0);
    REQUIRE_OK(tmem_vk_import_mapping(g_gpu, &d, &m));
    unsetenv("TMEM_VK_NO_IMPORT");
    check_upload(m, "upload (TMEM_VK_NO_IMPORT=1)");
    tmem_vk_mapping_destroy(m);
    /* a mapping the device cannot import (not aligned) uploads by itself,
     * and refuses with IMPORT_ONLY */
    uint8_t *copy = malloc(FILE_BYTES + 64);
    REQUIRE(copy);
    memcpy(copy + 8, g_map, FILE_BYTES);
    d = desc_of(0);
    d.base = copy + 8;
    REQUIRE_OK(tmem_vk_import_mapping(g_gpu, &d, &m));
    tmem_vk_mapping_info mi;
    REQUIRE_OK(tmem_vk_mapping_get_info(m, &mi));
    CHECK(!mi.imported && mi.import_status == TMEM_E_UNSUPPORTED);
    for (uint32_t i = 0; i < NRANGES; i++) CHECK(range_right(m, i));
    tmem_vk_mapping_destroy(m);
    d.flags = TMEM_VK_MAPPING_IMPORT_ONLY;
    CHECK_ST(tmem_vk_import_mapping(g_gpu, &d, &m), TMEM_E_UNSUPPORTED);
    free(copy);
}

static void test_misuse(void) {
    tmem_vk_mapping *m = (tmem_vk_mapping *)1;
    tmem_vk_mapping_desc d = desc_of(TMEM_VK_MAPPING_UPLOAD | TMEM_VK_MAPPING_IMPORT_ONLY);
    CHECK_ST(tmem_vk_import_mapping(g_gpu, &d, &m), TMEM_E_INVALID_ARG);
    CHECK(m == NULL);
    d = desc_of(0);
    d.staging_bytes = TMEM_VK_STAGING_MAX + 1;
    CHECK_ST(tmem_vk_import_mapping(g_gpu, &d, &m), TMEM_E_INVALID_ARG);
    tmem_vk_range bad[] = {{FILE_BYTES - 10, 11}};
    d = desc_of(0);
    d.ranges = bad, d.range_count = 1;
    CHECK_ST(tmem_vk_import_mapping(g_gpu, &d, &m), TMEM_E_INVALID_ARG);
    bad[0] = (tmem_vk_range){0, 0};
    CHECK_ST(tmem_vk_import_mapping(g_gpu, &d, &m), TMEM_E_INVALID_ARG);
    d = desc_of(0);
    d.flags = 1u << 7;
    CHECK_ST(tmem_vk_import_mapping(g_gpu, &d, &m), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_vk_import_mapping(NULL, &d, &m), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_vk_mapping_get_info(NULL, NULL), TMEM_E_INVALID_ARG);
    tmem_vk_mapping_destroy(NULL);
    /* upload of a range larger than a device chunk (1 MiB here) */
    tmem_vk_range big[] = {{0, 2 * MiB}};
    d = desc_of(TMEM_VK_MAPPING_UPLOAD);
    d.ranges = big, d.range_count = 1;
    CHECK_ST(tmem_vk_import_mapping(g_gpu, &d, &m), TMEM_E_OVERFLOW);
    CHECK(committed("/memory/device-weights") == 0);
}

static void sweep(uint32_t flags, const char *what) {
    uint64_t dev0 = tmem__gpu_device_bytes(g_gpu);
    int failed = 0;
    int64_t n;
    for (n = 1; n < 500; n++) {
        tmem_vk_mapping_desc d = desc_of(flags);
        tmem_vk_mapping *m = NULL;
        tmem__gpu_fault_set(g_gpu, n);
        tmem_status st = tmem_vk_import_mapping(g_gpu, &d, &m);
        bool fired = atomic_load(&g_gpu->fail_countdown) == 0;
        tmem__gpu_fault_set(g_gpu, 0);
        if (!fired) {
            CHECK_MSG(st == TMEM_OK, "%s unfaulted: %s", what, tmem_status_name(st));
            for (uint32_t i = 0; i < NRANGES; i++) CHECK(range_right(m, i));
            tmem_vk_mapping_destroy(m);
            break;
        }
        CHECK_MSG(st != TMEM_OK && m == NULL, "%s: fault %lld gave %s", what, (long long)n, tmem_status_name(st));
        if (st == TMEM_OK) tmem_vk_mapping_destroy(m);
        CHECK_MSG(tmem__gpu_device_bytes(g_gpu) == dev0 && committed("/memory/device-weights") == 0 &&
                      committed("/memory/staging") == 0,
                  "%s: fault %lld left memory", what, (long long)n);
        failed++;
    }
    printf("%s: %d device calls failed in turn, each cleanly; then it ran\n", what, failed);
    CHECK(failed > 0 && n < 500);
}

static void test_faults(void) {
    tmem_gpu_info gi;
    REQUIRE_OK(tmem_gpu_get_info(g_gpu, &gi));
    if (strstr(gi.features, "external_memory_host")) sweep(TMEM_VK_MAPPING_IMPORT_ONLY, "import");
    sweep(TMEM_VK_MAPPING_UPLOAD, "upload");
}

int main(void) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    if (tmem_context_create(&cd, &g_ctx) != TMEM_OK) return 1;
    tmem_gpu_desc gd = {0};
    gd.chunk_size = MiB;
    tmem_status st = tmem_gpu_attach(g_ctx, &gd, &g_gpu);
    if (st == TMEM_E_UNSUPPORTED || st == TMEM_E_NOT_FOUND) {
        printf("SKIP: no Vulkan device (%s): install mesa-vulkan-drivers for lavapipe\n", tmem_status_name(st));
        tmem_context_destroy(g_ctx);
        return 77;
    }
    if (st != TMEM_OK) return 1;
    /* the "GGUF": a file mapped read-only */
    char path[] = "/tmp/tmem_weightsXXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    unlink(path);
    uint8_t *buf = malloc(FILE_BYTES);
    if (!buf) return 1;
    for (uint64_t i = 0; i < FILE_BYTES; i++) buf[i] = byte_at(i);
    if (write(fd, buf, FILE_BYTES) != (ssize_t)FILE_BYTES) return 1;
    free(buf);
    g_map = mmap(NULL, FILE_BYTES, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (g_map == MAP_FAILED) return 1;
    /* read-back: a host-visible buffer */
    tmem_vk_native nat;
    if (tmem_vk_get_native(g_gpu, &nat, NULL) != TMEM_OK) return 1;
    g_copy = (PFN_vkCmdCopyBuffer)nat.get_device_proc_addr(nat.device, "vkCmdCopyBuffer");
    tmem_type *vt = gpu_type(g_ctx, "/memory/vk-readback", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, MiB, 0, 0);
    tmem_heap_desc hd = {.type = vt, .size = MiB};
    tmem_alloc_desc ad = {.size = MiB};
    tmem_alloc_info ai;
    tmem_device_span sp;
    if (!vt || tmem_heap_create(g_ctx, &hd, &g_stage) != TMEM_OK || tmem_heap_alloc_ex(g_stage, &ad, &ai) != TMEM_OK ||
        tmem_heap_device_span(g_stage, ai.offset, MiB, &sp) != TMEM_OK || !sp.host ||
        tmem_vk_buffer_create(g_gpu, g_stage, ai.offset, MiB, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &g_stage_buf) != TMEM_OK)
        return 1;
    g_stage_host = sp.host;
    RUN(test_import);
    RUN(test_upload);
    RUN(test_misuse);
    RUN(test_faults);
    tmem_vk_buffer_destroy(g_gpu, g_stage_buf);
    tmem_heap_destroy(g_stage);
    munmap((void *)g_map, FILE_BYTES);
    tmem_gpu_release(g_gpu);
    tmem_context_destroy(g_ctx);
    return tmem_test_finish();
}

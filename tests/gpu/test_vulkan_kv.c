/* The paged KV cache and the recurrent state in Vulkan DEVICE memory
 * (lavapipe in CI): blocks and slots named by heap offsets, never a host
 * pointer; append, fork, copy-on-write, snapshot, rollback and truncate
 * done by the backend's copy and fill; every content checked by copying it
 * back through a host-visible staging heap. Then every device call of the
 * copy-on-write, fork, snapshot and rollback paths fails in turn (the gpu's
 * fault countdown): a clean status, the cache's walker passes, the
 * surviving sequence's bytes unchanged, the committed bytes back where they
 * were once the failed sequence is freed, and the operation succeeds when
 * the fault is disarmed. Run again under the validation layer
 * (gpu/test_vulkan_kv_validation). Skips (77) without a Vulkan device. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "gpu/gpu_internal.h"
#include "gpu_test_util.h"
#include "typedmem/kv.h"

#define MiB (1ull << 20)

static tmem_context *g_ctx;
static tmem_gpu *g_gpu;
static tmem_heap *g_stage;  /* host-visible staging heap (read-back, writes) */
static uint8_t *g_stage_host;
static uint64_t g_stage_off;

/* A 2-layer KV of 1 head x 32 f16 (256 B per token, 4 KiB blocks) and one
 * DeltaNet layer of 16 x 16 f32 with a 2-tap conv (1216 B of state). */
static tmem_kv_cache_desc cache_desc(tmem_type *kv, tmem_type *state, tmem_type *snap) {
    tmem_kv_cache_desc d = {0};
    d.kv = (tmem_kv_layout){.layers = 2, .kv_heads = 1, .head_dim = 32};
    d.recurrent = (tmem_recurrent_layout){.layers = 1, .key_heads = 1, .value_heads = 1, .key_dim = 16,
                                          .value_dim = 16, .conv_kernel = 2};
    d.kv_type = kv, d.state_type = state, d.snapshot_type = snap;
    d.flags = TMEM_KV_CACHE_NO_RECLAIM;
    return d;
}

/* Copy n device bytes at (heap, off) into the staging heap and return them. */
static const uint8_t *read_back(tmem_heap *heap, uint64_t off, uint64_t n) {
    memset(g_stage_host, 0xEE, (size_t)n); /* so a copy that did nothing shows */
    if (tmem_heap_copy(g_stage, g_stage_off, heap, off, n) != TMEM_OK) return NULL;
    return g_stage_host;
}

/* Write n bytes of `seed`'s pattern at (heap, off) through the staging heap. */
static tmem_status write_pattern(tmem_heap *heap, uint64_t off, uint64_t n, uint32_t seed) {
    for (uint64_t i = 0; i < n; i++) g_stage_host[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
    return tmem_heap_copy(heap, off, g_stage, g_stage_off, n);
}

static bool is_pattern(const uint8_t *p, uint64_t n, uint32_t seed) {
    if (!p) return false;
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(seed * 131u + i * 7u + (i >> 8))) return false;
    return true;
}

static bool is_zero(const uint8_t *p, uint64_t n) {
    if (!p) return false;
    for (uint64_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
}

/* Block i of a sequence: its heap offset. */
static uint64_t block_off(tmem_kv_cache *kv, tmem_kv_seq s, uint32_t i) {
    uint64_t offs[16];
    uint32_t n = 0;
    if (tmem_kv_seq_block_offsets(kv, s, offs, 16, &n) != TMEM_OK || i >= n) return UINT64_MAX;
    return offs[i];
}

static uint64_t state_off(tmem_kv_cache *kv, tmem_kv_seq s) {
    tmem_heap *h;
    uint64_t off;
    return tmem_kv_seq_state_offset(kv, s, &h, &off) == TMEM_OK ? off : UINT64_MAX;
}

typedef struct fixture {
    tmem_type *kv_t, *st_t, *snap_t;
    tmem_kv_cache *kv;
    tmem_kv_device_info di;
} fixture;

static bool fixture_make(fixture *f) {
    memset(f, 0, sizeof *f);
    static int n;
    char a[64], b[64], c[64];
    snprintf(a, sizeof a, "/memory/vk-kv%d", n);
    snprintf(b, sizeof b, "/memory/vk-state%d", n);
    snprintf(c, sizeof c, "/memory/vk-snap%d", n++);
    f->kv_t = gpu_type(g_ctx, a, TMEM_PLACEMENT_DEVICE, 4 * MiB, 0, 0);
    f->st_t = gpu_type(g_ctx, b, TMEM_PLACEMENT_DEVICE, 2 * MiB, 0, 0);
    f->snap_t = gpu_type(g_ctx, c, TMEM_PLACEMENT_DEVICE, 2 * MiB, 0, 0);
    if (!f->kv_t || !f->st_t || !f->snap_t) return false;
    tmem_kv_cache_desc d = cache_desc(f->kv_t, f->st_t, f->snap_t);
    tmem_status st = tmem_kv_cache_create(g_ctx, &d, &f->kv);
    if (st != TMEM_OK) printf("cache: %s\n", tmem_status_name(st));
    return st == TMEM_OK && tmem_kv_cache_get_device(f->kv, &f->di) == TMEM_OK;
}

static uint64_t committed(const tmem_type *t) {
    tmem_type_stats s;
    return tmem_type_get_stats(t, &s) == TMEM_OK ? s.committed.current : UINT64_MAX;
}

/* The whole life of a device cache, contents read back at each step. */
static void test_device_cache(void) {
    fixture f;
    REQUIRE(fixture_make(&f));
    tmem_kv_cache *kv = f.kv;
    const tmem_kv_device_info *di = &f.di;
    CHECK(di->kv_device && di->state_device && di->kv_heap && di->state_heap && di->snapshot_heap);
    CHECK(di->block_bytes == 4096 && di->block_stride >= 4096 && di->block_stride % 4 == 0);
    CHECK_MSG(di->blocks_per_memory == di->memory_bytes / di->block_stride && di->blocks_per_memory > 1,
              "%u blocks in %llu", di->blocks_per_memory, (unsigned long long)di->memory_bytes);
    CHECK(di->state_bytes == 1216);
    printf("block %llu B at stride %llu, %u per %llu-byte memory object; state %llu B at stride %llu\n",
           (unsigned long long)di->block_bytes, (unsigned long long)di->block_stride, di->blocks_per_memory,
           (unsigned long long)di->memory_bytes, (unsigned long long)di->state_bytes,
           (unsigned long long)di->state_stride);
    uint64_t c0 = committed(f.kv_t);

    tmem_kv_seq s, fk;
    REQUIRE_OK(tmem_kv_seq_create(kv, &s));
    /* a new state is zeroed by the device */
    CHECK(is_zero(read_back(di->state_heap, state_off(kv, s), di->state_bytes), di->state_bytes));
    REQUIRE_OK(tmem_kv_seq_append(kv, s, 40)); /* 3 blocks */
    CHECK(committed(f.kv_t) == c0 + di->memory_bytes); /* one memory object holds them all */
    for (uint32_t i = 0; i < 3; i++) REQUIRE_OK(write_pattern(di->kv_heap, block_off(kv, s, i), 4096, 10 + i));
    REQUIRE_OK(write_pattern(di->state_heap, state_off(kv, s), di->state_bytes, 77));
    for (uint32_t i = 0; i < 3; i++)
        CHECK(is_pattern(read_back(di->kv_heap, block_off(kv, s, i), 4096), 4096, 10 + i));

    /* host addresses: none */
    const uint32_t *ids;
    uint32_t nids;
    REQUIRE_OK(tmem_kv_seq_blocks(kv, s, &ids, &nids));
    CHECK(nids == 3 && tmem_kv_block_ptr(kv, ids[0]) == NULL);
    tmem_heap *bh;
    uint64_t bo;
    CHECK_OK(tmem_kv_block_offset(kv, ids[1], &bh, &bo));
    CHECK(bh == di->kv_heap && bo == block_off(kv, s, 1));
    tmem_device_span span;
    CHECK_OK(tmem_heap_device_span(bh, bo, di->block_bytes, &span));
    CHECK(span.memory && span.offset + di->block_bytes <= span.memory_size);
    void *k = (void *)1, *ptrs[4];
    uint32_t cnt;
    CHECK_ST(tmem_kv_seq_kv(kv, s, 0, 0, 0, &k, NULL), TMEM_E_UNSUPPORTED);
    CHECK(k == NULL);
    CHECK_ST(tmem_kv_seq_block_ptrs(kv, s, ptrs, 4, &cnt), TMEM_E_UNSUPPORTED);
    CHECK_ST(tmem_kv_seq_state(kv, s, 0, &k, NULL), TMEM_E_UNSUPPORTED);
    CHECK_ST(tmem_kv_block_offset(kv, 9999, &bh, &bo), TMEM_E_NOT_FOUND);
    CHECK(bh == NULL && bo == TMEM_OFFSET_NONE);

    /* fork: blocks shared, the state copied by the device */
    REQUIRE_OK(tmem_kv_seq_fork(kv, s, &fk));
    for (uint32_t i = 0; i < 3; i++) CHECK(block_off(kv, fk, i) == block_off(kv, s, i));
    CHECK(state_off(kv, fk) != state_off(kv, s));
    CHECK(is_pattern(read_back(di->state_heap, state_off(kv, fk), di->state_bytes), di->state_bytes, 77));
    /* copy-on-write of the last block (tokens 32..39) before a kernel writes it */
    REQUIRE_OK(tmem_kv_seq_make_private(kv, fk, 32, 8));
    CHECK(block_off(kv, fk, 2) != block_off(kv, s, 2) && block_off(kv, fk, 0) == block_off(kv, s, 0));
    CHECK(is_pattern(read_back(di->kv_heap, block_off(kv, fk, 2), 4096), 4096, 12));
    REQUIRE_OK(write_pattern(di->kv_heap, block_off(kv, fk, 2), 4096, 99));
    CHECK(is_pattern(read_back(di->kv_heap, block_off(kv, s, 2), 4096), 4096, 12)); /* the parent's is intact */
    /* the one-token form: tmem_kv_seq_kv with WRITE and no addresses */
    CHECK_OK(tmem_kv_seq_kv(kv, fk, 1, 3, TMEM_KV_WRITE, NULL, NULL));
    CHECK(block_off(kv, fk, 0) != block_off(kv, s, 0));
    CHECK(is_pattern(read_back(di->kv_heap, block_off(kv, fk, 0), 4096), 4096, 10));
    CHECK_ST(tmem_kv_seq_make_private(kv, fk, 30, 20), TMEM_E_INVALID_ARG);
    tmem_kv_cache_stats cs;
    REQUIRE_OK(tmem_kv_cache_get_stats(kv, &cs));
    CHECK(cs.cow_copies == 2 && cs.blocks_used == 5 && cs.blocks_shared == 1);
    CHECK(cs.kv_bytes_allocated == di->memory_bytes);

    /* snapshot, overwrite, roll back: the device restores the state */
    tmem_kv_snap snap;
    REQUIRE_OK(tmem_kv_snapshot_take(kv, s, &snap));
    REQUIRE_OK(write_pattern(di->state_heap, state_off(kv, s), di->state_bytes, 55));
    REQUIRE_OK(tmem_kv_seq_append(kv, s, 5));
    CHECK_OK(tmem_kv_seq_rollback(kv, s, 40));
    CHECK(is_pattern(read_back(di->state_heap, state_off(kv, s), di->state_bytes), di->state_bytes, 77));
    /* fork at the snapshot of s */
    tmem_kv_seq f2;
    REQUIRE_OK(write_pattern(di->state_heap, state_off(kv, s), di->state_bytes, 56));
    REQUIRE_OK(tmem_kv_seq_append(kv, s, 1));
    CHECK_OK(tmem_kv_seq_fork_at(kv, s, 40, &f2));
    CHECK(is_pattern(read_back(di->state_heap, state_off(kv, f2), di->state_bytes), di->state_bytes, 77));

    /* truncate gives the blocks back; the memory object goes with the last one */
    CHECK_OK(tmem_kv_seq_truncate(kv, s, 10));
    CHECK(block_off(kv, s, 1) == UINT64_MAX);
    CHECK(is_pattern(read_back(di->kv_heap, block_off(kv, s, 0), 4096), 4096, 10));
    CHECK_OK(tmem_kv_cache_check(kv));
    CHECK_OK(tmem_kv_seq_free(kv, f2));
    CHECK_OK(tmem_kv_seq_free(kv, fk));
    CHECK_OK(tmem_kv_seq_free(kv, s));
    REQUIRE_OK(tmem_kv_cache_get_stats(kv, &cs));
    CHECK(cs.kv_bytes_allocated == 0 && cs.state_bytes == 0 && cs.snapshot_bytes == 0);
    CHECK(committed(f.kv_t) == c0 && committed(f.st_t) == 0 && committed(f.snap_t) == 0);
    CHECK_OK(tmem_kv_cache_check(kv));
    tmem_kv_cache_destroy(kv);
}

/* One device operation under a fault sweep: fail device call 1, 2, ...
 * until the operation runs with the countdown left unspent. */
typedef tmem_status (*op_fn)(fixture *f, tmem_kv_seq s, tmem_kv_seq *made);

static tmem_status op_fork_cow(fixture *f, tmem_kv_seq s, tmem_kv_seq *made) {
    tmem_status st = tmem_kv_seq_fork(f->kv, s, made);
    if (st == TMEM_OK) st = tmem_kv_seq_make_private(f->kv, *made, 0, 40);
    return st;
}

static tmem_status op_snapshot(fixture *f, tmem_kv_seq s, tmem_kv_seq *made) {
    (void)made;
    tmem_kv_snap sn;
    tmem_status st = tmem_kv_snapshot_take(f->kv, s, &sn);
    if (st != TMEM_OK) return st;
    st = tmem_kv_seq_rollback(f->kv, s, 40); /* a failed restore keeps the snapshot: drop it either way */
    tmem_status dr = tmem_kv_snapshot_drop(f->kv, sn);
    return st != TMEM_OK ? st : dr;
}

static tmem_status op_create_append(fixture *f, tmem_kv_seq s, tmem_kv_seq *made) {
    (void)s;
    tmem_status st = tmem_kv_seq_create(f->kv, made);
    if (st == TMEM_OK) st = tmem_kv_seq_append(f->kv, *made, 5000); /* 313 blocks: past one memory object */
    return st;
}

static void sweep(const char *name, op_fn op) {
    fixture f;
    REQUIRE(fixture_make(&f));
    const tmem_kv_device_info *di = &f.di;
    tmem_kv_seq s;
    REQUIRE_OK(tmem_kv_seq_create(f.kv, &s));
    REQUIRE_OK(tmem_kv_seq_append(f.kv, s, 40));
    for (uint32_t i = 0; i < 3; i++) REQUIRE_OK(write_pattern(di->kv_heap, block_off(f.kv, s, i), 4096, 20 + i));
    REQUIRE_OK(write_pattern(di->state_heap, state_off(f.kv, s), di->state_bytes, 33));
    uint64_t kv0 = committed(f.kv_t), st0 = committed(f.st_t), sn0 = committed(f.snap_t);
    int64_t n;
    int failed = 0;
    for (n = 1; n < 200; n++) {
        tmem_kv_seq made = TMEM_KV_SEQ_NONE;
        tmem__gpu_fault_set(g_gpu, n);
        tmem_status st = op(&f, s, &made);
        bool fired = atomic_load(&g_gpu->fail_countdown) == 0;
        tmem__gpu_fault_set(g_gpu, 0);
        CHECK_OK(tmem_kv_cache_check(f.kv));
        for (uint32_t i = 0; i < 3; i++)
            CHECK_MSG(is_pattern(read_back(di->kv_heap, block_off(f.kv, s, i), 4096), 4096, 20 + i),
                      "%s fault %lld: block %u of the survivor changed", name, (long long)n, i);
        CHECK_MSG(is_pattern(read_back(di->state_heap, state_off(f.kv, s), di->state_bytes), di->state_bytes, 33),
                  "%s fault %lld: the survivor's state changed", name, (long long)n);
        CHECK_OK(tmem_kv_seq_free(f.kv, made));
        CHECK_MSG(committed(f.kv_t) == kv0 && committed(f.st_t) == st0 && committed(f.snap_t) == sn0,
                  "%s fault %lld: committed %llu/%llu/%llu, was %llu/%llu/%llu", name, (long long)n,
                  (unsigned long long)committed(f.kv_t), (unsigned long long)committed(f.st_t),
                  (unsigned long long)committed(f.snap_t), (unsigned long long)kv0, (unsigned long long)st0,
                  (unsigned long long)sn0);
        if (!fired) {
            CHECK_MSG(st == TMEM_OK, "%s without a fault: %s", name, tmem_status_name(st));
            break;
        }
        CHECK_MSG(st != TMEM_OK, "%s: device call %lld failed but the operation said OK", name, (long long)n);
        failed++;
    }
    printf("%s: %d device calls failed in turn, each cleanly; then it ran\n", name, failed);
    CHECK(failed > 0 && n < 200);
    CHECK_OK(tmem_kv_seq_free(f.kv, s));
    tmem_kv_cache_destroy(f.kv);
}

static void test_fault_sweeps(void) {
    sweep("fork + copy-on-write", op_fork_cow);
    sweep("snapshot + rollback", op_snapshot);
    sweep("create + append", op_create_append);
}

/* tmem_heap_copy / tmem_heap_fill: misuse and the cross-memory-object case. */
static void test_copy_fill(void) {
    tmem_type *t = gpu_type(g_ctx, "/memory/vk-copy", TMEM_PLACEMENT_DEVICE, 4 * MiB, 0, 0);
    REQUIRE(t);
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = 4 * MiB; /* four 1 MiB memory objects */
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &h));
    tmem_alloc_desc ad = {0};
    ad.size = 4 * MiB;
    tmem_alloc_info ai;
    REQUIRE_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    /* a range across a memory object boundary, at odd offsets */
    uint64_t at = MiB - 1000, n = 3000;
    REQUIRE_OK(write_pattern(h, at, n, 5));
    CHECK(is_pattern(read_back(h, at, n), n, 5));
    CHECK_OK(tmem_heap_copy(h, 2 * MiB + 3, h, at, n));
    CHECK(is_pattern(read_back(h, 2 * MiB + 3, n), n, 5));
    CHECK_OK(tmem_heap_fill(h, MiB - 512, 1024, 0x01020304u));
    const uint8_t *p = read_back(h, MiB - 512, 1024);
    CHECK(p && p[0] == 4 && p[1] == 3 && p[1023] == 1);
    CHECK_ST(tmem_heap_fill(h, 2, 8, 0), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem_heap_fill(h, 0, 6, 0), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem_heap_copy(h, 0, h, 100, 200), TMEM_E_INVALID_ARG); /* overlap */
    CHECK_ST(tmem_heap_copy(h, 4 * MiB - 10, h, 0, 20), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_copy(NULL, 0, h, 0, 20), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_copy(h, 0, h, MiB, 0), TMEM_E_INVALID_ARG);
    /* a host heap and a device-only one: no copy without an upload path */
    tmem_type *ht = gpu_type(g_ctx, "/memory/vk-copy-host", TMEM_PLACEMENT_HOST, 1 * MiB, 0, 0);
    REQUIRE(ht);
    hd.type = ht;
    hd.size = MiB;
    tmem_heap *hh;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &hh));
    void *hp;
    REQUIRE_OK(tmem_heap_alloc(hh, 4096, 0, &hp));
    CHECK_ST(tmem_heap_copy(h, 0, hh, 0, 16), TMEM_E_UNSUPPORTED);
    /* uncommitted device memory */
    tmem_type *t2 = gpu_type(g_ctx, "/memory/vk-copy-empty", TMEM_PLACEMENT_DEVICE, 2 * MiB, 0, 0);
    REQUIRE(t2);
    hd.type = t2;
    hd.size = 2 * MiB;
    tmem_heap *he;
    REQUIRE_OK(tmem_heap_create(g_ctx, &hd, &he));
    CHECK_ST(tmem_heap_copy(he, 0, h, 0, 16), TMEM_E_STATE);
    CHECK_ST(tmem_heap_fill(he, 0, 16, 0), TMEM_E_STATE);
    tmem_heap_destroy(he);
    tmem_heap_destroy(hh);
    tmem_heap_destroy(h);
}

int main(void) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    if (tmem_context_create(&cd, &g_ctx) != TMEM_OK) return 1;
    tmem_gpu_desc gd = {0};
    gd.chunk_size = 1 * MiB; /* several memory objects per pool */
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
    tmem_type *stage_t = gpu_type(g_ctx, "/memory/vk-stage", TMEM_PLACEMENT_DEVICE_HOST_VISIBLE, MiB, 0, 0);
    tmem_heap_desc hd = {0};
    hd.type = stage_t;
    hd.size = MiB;
    tmem_alloc_desc ad = {0};
    ad.size = 64 * 1024;
    tmem_alloc_info ai;
    tmem_device_span sp;
    if (!stage_t || tmem_heap_create(g_ctx, &hd, &g_stage) != TMEM_OK || tmem_heap_alloc_ex(g_stage, &ad, &ai) != TMEM_OK ||
        tmem_heap_device_span(g_stage, ai.offset, ad.size, &sp) != TMEM_OK || !sp.host) {
        printf("no host-visible staging heap\n");
        return 1;
    }
    g_stage_host = sp.host;
    g_stage_off = ai.offset;
    RUN(test_device_cache);
    RUN(test_copy_fill);
    RUN(test_fault_sweeps);
    tmem_heap_destroy(g_stage);
    tmem_gpu_release(g_gpu);
    tmem_context_destroy(g_ctx);
    return tmem_test_finish();
}

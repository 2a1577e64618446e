/* Every free / destroy / release / close function of the public API is a
 * no-op on its "nothing" value (NULL, TMEM_OFFSET_NONE, handle {0},
 * TMEM_KV_SEQ_NONE, TMEM_KV_SNAP_NONE), also with a NULL owner, and leaves
 * live objects alone. (tmem_gpu_release and the Vulkan interop releases
 * live in the GPU library, not linked here; each starts with the same
 * NULL check.) */
#include "harness.h"

#define MiB (1ull << 20)

static void test_void_releases(void) {
    /* each must return without touching anything; a crash fails the test */
    tmem_context_destroy(NULL);
    tmem_heap_destroy(NULL);
    tmem_kv_cache_destroy(NULL);
    tmem_json_free(NULL);
    tmem_gguf_close(NULL);
    tmem_gguf_writer_destroy(NULL);
    tmem_plan_problem_destroy(NULL);
    tmem_plan_destroy(NULL);
    tmem_safetensors_close(NULL);
    tmem_surface_release(NULL);
    tmem_surface_share_close(NULL);
    tmem_trace_data_destroy(NULL);
    tmem_trace_string_free(NULL);
    CHECK_OK(tmem_type_destroy(NULL));
}

static void test_status_releases(void) {
    CHECK_OK(tmem_heap_free(NULL, NULL));
    CHECK_OK(tmem_heap_free_offset(NULL, TMEM_OFFSET_NONE));
    CHECK_OK(tmem_heap_free_handle(NULL, (tmem_alloc_handle){0}));
    CHECK_OK(tmem_kv_seq_free(NULL, TMEM_KV_SEQ_NONE));
    CHECK_OK(tmem_kv_snapshot_drop(NULL, TMEM_KV_SNAP_NONE));
    /* with live owners: the no-op changes nothing */
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&(tmem_context_desc){0}, &ctx));
    tmem_type *t;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_SCRATCH, &t));
    static const tmem_heap_kind kinds[] = {TMEM_HEAP_GENERAL, TMEM_HEAP_LINEAR, TMEM_HEAP_PLACEMENT, TMEM_HEAP_BLOCK};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        tmem_heap *h;
        tmem_heap_desc hd = {.kind = kinds[k], .type = t, .size = 1 * MiB, .block_size = 4096};
        REQUIRE_OK(tmem_heap_create(ctx, &hd, &h));
        tmem_alloc_info ai;
        REQUIRE_OK(tmem_heap_alloc_ex(h, &(tmem_alloc_desc){.size = 64}, &ai));
        tmem_heap_info before, after;
        REQUIRE_OK(tmem_heap_get_info(h, &before));
        CHECK_OK(tmem_heap_free(h, NULL));
        CHECK_OK(tmem_heap_free_offset(h, TMEM_OFFSET_NONE));
        CHECK_OK(tmem_heap_free_handle(h, (tmem_alloc_handle){0}));
        REQUIRE_OK(tmem_heap_get_info(h, &after));
        CHECK_MSG(after.live_count == before.live_count && after.used == before.used, "heap kind %d", (int)kinds[k]);
        CHECK_OK(tmem_heap_check(h));
        CHECK_OK(tmem_heap_free_offset(h, ai.offset));
        tmem_heap_destroy(h);
    }
    tmem_kv_cache *c;
    tmem_kv_cache_desc kd = {.kv = {.layers = 2, .kv_heads = 1, .head_dim = 64}};
    REQUIRE_OK(tmem_kv_cache_create(ctx, &kd, &c));
    tmem_kv_seq s;
    REQUIRE_OK(tmem_kv_seq_create(c, &s));
    CHECK_OK(tmem_kv_seq_free(c, TMEM_KV_SEQ_NONE));
    CHECK_OK(tmem_kv_snapshot_drop(c, TMEM_KV_SNAP_NONE));
    tmem_kv_cache_stats ks;
    REQUIRE_OK(tmem_kv_cache_get_stats(c, &ks));
    CHECK(ks.sequences == 1);
    CHECK_OK(tmem_kv_cache_check(c));
    CHECK_OK(tmem_kv_seq_free(c, s));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_void_releases);
    RUN(test_status_releases);
    return tmem_test_finish();
}

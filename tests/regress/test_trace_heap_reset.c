/* Regression: a reset (or destroyed) linear heap must free all its live
 * allocations in the trace. It used to emit one FREE of size 0 at the heap's
 * base, which matched only the first allocation, so the report's in-use of a
 * per-step scratch heap grew with every step. */
#include "harness.h"

static void test_reset_frees_everything_in_trace(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {.budget = 64u << 20};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *scratch;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_SCRATCH, &scratch));
    tmem_trace_desc td = {.capacity = 1024};
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    tmem_heap *h;
    tmem_heap_desc hd = {.kind = TMEM_HEAP_LINEAR, .type = scratch, .role = TMEM_ROLE_SCRATCH, .size = 8u << 20};
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h));
    /* The first buffer's size changes per step so later buffers land at new
     * offsets (a replay keyed by offset must not get lucky). */
    uint64_t expect = 0;
    for (uint64_t step = 0; step < 4; step++) {
        void *p;
        uint64_t first = (step + 1) * 4096;
        CHECK_OK(tmem_heap_alloc(h, first, 64, &p));
        for (int i = 0; i < 2; i++) CHECK_OK(tmem_heap_alloc(h, 1u << 20, 64, &p));
        if (first + (2u << 20) > expect) expect = first + (2u << 20);
        CHECK_OK(tmem_heap_reset(h));
    }
    tmem_heap *h2;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h2));
    void *p;
    CHECK_OK(tmem_heap_alloc(h2, 1u << 20, 64, &p));
    tmem_heap_destroy(h2);
    tmem_trace_data *data;
    REQUIRE_OK(tmem_trace_snapshot(ctx, &data));
    tmem_trace_peak_info pk;
    CHECK_OK(tmem_trace_peak(data, &pk));
    /* One step's buffers at most, never several steps' at once. */
    CHECK_MSG(pk.peak_bytes == expect, "peak %llu, want %llu", (unsigned long long)pk.peak_bytes, (unsigned long long)expect);
    CHECK(pk.unmatched_frees == 0);
    tmem_trace_data_destroy(data);
    tmem_heap_destroy(h);
    CHECK_OK(tmem_trace_stop(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_reset_frees_everything_in_trace);
    return tmem_test_finish();
}

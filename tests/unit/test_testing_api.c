/* The library's testing API (typedmem/testing.h): the trace hook a bench
 * times is the allocation paths' hook: nothing recorded with no tracer, one
 * ALLOC event per call with one. */
#include "harness.h"
#include "typedmem/testing.h"

static void test_trace_hook(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {.budget = 64ull << 20};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *act;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
    tmem_testing_trace_hook(ctx, act, 1000); /* no tracer: nothing to record */
    tmem_testing_trace_hook(NULL, act, 1000);
    tmem_trace_desc td = {0};
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    tmem_trace_info before, after;
    REQUIRE_OK(tmem_trace_get_info(ctx, &before));
    tmem_testing_trace_hook(ctx, act, 5);
    REQUIRE_OK(tmem_trace_get_info(ctx, &after));
    CHECK(after.recorded == before.recorded + 5);
    tmem_trace_data *data;
    REQUIRE_OK(tmem_trace_snapshot(ctx, &data));
    tmem_trace_data_info di;
    REQUIRE_OK(tmem_trace_data_get_info(data, &di));
    uint32_t allocs = 0;
    for (uint64_t i = 0; i < di.events; i++) {
        tmem_trace_event e;
        if (tmem_trace_data_event(data, i, &e) == TMEM_OK && e.kind == TMEM_TRACE_ALLOC && e.size == e.offset &&
            e.size < 5)
            allocs++;
    }
    CHECK(allocs == 5);
    tmem_trace_data_destroy(data);
    CHECK_OK(tmem_trace_stop(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_trace_hook);
    return tmem_test_finish();
}

/* docs/trace.md "Recording", as written there (the "..." filled in), compiled
 * by tests/docs.cmake with -Werror: TMEM_IGNORE is how the docs drop a
 * status, since a (void) cast does not silence GCC's warn_unused_result. */
#include <typedmem/typedmem.h>

int docs_trace_recording(tmem_context *ctx);

int docs_trace_recording(tmem_context *ctx) {
    tmem_trace_desc td = {0};
    td.capacity = 1u << 20;
    td.path = "run.tmtrace";
    td.flags = TMEM_TRACE_NO_COMMITS;
    if (tmem_trace_start(ctx, &td) != TMEM_OK) return 1;
    TMEM_IGNORE(tmem_trace_mark(ctx, "prefill done"));
    tmem_trace_data *t;
    TMEM_IGNORE(tmem_trace_snapshot(ctx, &t));
    TMEM_IGNORE(tmem_trace_stop(ctx));
    return 0;
}

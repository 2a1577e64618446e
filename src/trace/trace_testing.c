/* The testing API's trace hook (typedmem/testing.h): the inline hook of
 * core/internal.h in a loop, compiled with the library's flags, so a bench
 * times exactly what a traced allocation pays. Hidden in the shared library. */
#include "core/internal.h"
#include "typedmem/testing.h"

void tmem_testing_trace_hook(tmem_context *ctx, const tmem_type *type, uint64_t calls) {
    if (!ctx) return;
    for (uint64_t i = 0; i < calls; i++) tmem__trace(ctx, TMEM__TRACE_ALLOC, type, 3, i, i, "x");
}

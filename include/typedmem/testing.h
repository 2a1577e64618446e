/**
 * @file testing.h
 * @brief The library's testing API: hooks for typedmem's own benchmarks
 *        (`tmem bench trace`) that the public API has no reason to offer.
 *
 * **Not installed, not stable, not exported.** The functions have hidden
 * visibility: they are in the static library (what the tools link) and not
 * in libtypedmem.so; `cmake --install` leaves this header out
 * (cmake/install.cmake). Nothing in the other public headers refers to it.
 */
#ifndef TYPEDMEM_TESTING_H
#define TYPEDMEM_TESTING_H

#include "context.h"

TMEM_EXTERN_C_BEGIN

/** @brief Run the trace hook of the library's allocation paths `calls`
 *  times (call i: an ALLOC event of i bytes at offset i on `type`), as
 *  tmem_heap_alloc runs it: with no tracer started this is the off-path
 *  cost every traced call pays (one load and a branch); with one, each call
 *  records an event. ctx NULL is a no-op.
 *  @par Threads as the tracer (safe) */
void tmem_testing_trace_hook(tmem_context *ctx, const tmem_type *type, uint64_t calls);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_TESTING_H */

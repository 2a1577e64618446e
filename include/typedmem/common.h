/**
 * @file common.h
 * @brief Shared macros and small types used by every typedmem header.
 *
 * Nothing here allocates or talks to the OS.
 */
#ifndef TYPEDMEM_COMMON_H
#define TYPEDMEM_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define TMEM_VERSION_MAJOR 0
#define TMEM_VERSION_MINOR 1
#define TMEM_VERSION_PATCH 0

#if defined(__GNUC__) || defined(__clang__)
#define TMEM_API __attribute__((visibility("default")))
#define TMEM_NODISCARD __attribute__((warn_unused_result))
#else
#define TMEM_API
#define TMEM_NODISCARD
#endif

#ifdef __cplusplus
#define TMEM_EXTERN_C_BEGIN extern "C" {
#define TMEM_EXTERN_C_END }
#else
#define TMEM_EXTERN_C_BEGIN
#define TMEM_EXTERN_C_END
#endif

/** Ignore a result on purpose: `TMEM_IGNORE(tmem_trace_mark(ctx, "step"));`.
 *  GCC's warn_unused_result (TMEM_NODISCARD) is not silenced by a (void)
 *  cast; this assigns the status to a variable it then discards. */
#define TMEM_IGNORE(expr) do { tmem_status tmem_ignored_ = (expr); (void)tmem_ignored_; } while (0)

/** Offset value meaning "none" (VMA's convention for outputs on failure). */
#define TMEM_OFFSET_NONE UINT64_MAX

#endif /* TYPEDMEM_COMMON_H */

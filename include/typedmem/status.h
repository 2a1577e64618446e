/**
 * @file status.h
 * @brief Status codes returned by every fallible typedmem call.
 *
 * One list, TMEM_STATUS_LIST, builds the enum, tmem_status_name() and
 * tmem_strerror() (libuv's UV_ERRNO_MAP habit). Values are stable: new codes
 * are only ever appended.
 */
#ifndef TYPEDMEM_STATUS_H
#define TYPEDMEM_STATUS_H

#include "common.h"

TMEM_EXTERN_C_BEGIN

/* X(name, value, message) */
#define TMEM_STATUS_LIST(X)                                                    \
    X(TMEM_OK, 0, "success")                                                   \
    X(TMEM_E_INVALID_ARG, -1, "invalid argument")                              \
    X(TMEM_E_NO_MEMORY, -2, "out of memory: the OS refused the request")       \
    X(TMEM_E_BUDGET, -3, "budget exceeded after reclaim")                      \
    X(TMEM_E_UNSUPPORTED, -4, "not supported on this platform or build")       \
    X(TMEM_E_NOT_FOUND, -5, "no such object")                                  \
    X(TMEM_E_EXISTS, -6, "object already exists")                              \
    X(TMEM_E_OVERFLOW, -7, "size or count overflows")                          \
    X(TMEM_E_ALIGNMENT, -8, "alignment is not a power of two or too large")   \
    X(TMEM_E_DOUBLE_FREE, -9, "already freed")                                 \
    X(TMEM_E_FOREIGN, -10, "pointer or handle does not belong here")           \
    X(TMEM_E_OS, -11, "operating system call failed")                          \
    X(TMEM_E_IO, -12, "input/output error")                                    \
    X(TMEM_E_PARSE, -13, "malformed input")                                    \
    X(TMEM_E_BUSY, -14, "object is in use")                                    \
    X(TMEM_E_STATE, -15, "operation not valid in the object's current state")  \
    X(TMEM_E_FULL, -16, "no room left in the heap or pool")                    \
    X(TMEM_E_INFEASIBLE, -17, "problem has no solution under the constraints") \
    X(TMEM_E_LIMIT, -18, "search or time limit reached before an answer")      \
    X(TMEM_E_CORRUPT, -19, "data is corrupt or hostile")                       \
    X(TMEM_E_PERMISSION, -20, "operation not permitted")                       \
    X(TMEM_E_OVERLAP, -21, "range overlaps a live allocation")

/** @brief Result of a typedmem call: TMEM_OK (0) or a negative TMEM_E_* code. */
typedef enum tmem_status {
#define TMEM_STATUS_ENUM_(name, value, msg) name = value,
    TMEM_STATUS_LIST(TMEM_STATUS_ENUM_)
#undef TMEM_STATUS_ENUM_
} tmem_status;

/** @brief Human-readable message for a status; never NULL ("unknown status" for
 *  values outside the list).
 *  @par Threads safe */
TMEM_API const char *tmem_strerror(tmem_status status);

/** @brief The status's enumerator name, e.g. "TMEM_E_BUDGET"; never NULL.
 *  @par Threads safe */
TMEM_API const char *tmem_status_name(tmem_status status);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_STATUS_H */

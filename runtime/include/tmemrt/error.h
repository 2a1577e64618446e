/**
 * @file error.h
 * @brief The runtime's one error convention: every call that can fail
 *        returns a tmem_status (TMEM_OK = 0, stable negative TMEM_E_* codes,
 *        tmem_strerror) and, where a status alone cannot say what went wrong,
 *        also fills a tmrt_error the caller may pass (NULL = no message).
 *
 * The message names what is wrong (the file, key, tensor, field or limit)
 * for a human; it is NUL-terminated, clipped to fit, and set only on
 * failure (its contents after TMEM_OK are unspecified). Functions of
 * runtime.h, tokenizer.h, convert.h, image.h and vision.h all follow it:
 * TMEM_API, TMEM_NODISCARD on every status, outputs NULL / zeroed on
 * failure as each one documents.
 */
#ifndef TMEMRT_ERROR_H
#define TMEMRT_ERROR_H

#include <typedmem/typedmem.h>

TMEM_EXTERN_C_BEGIN

/** @brief What went wrong, for humans: names the file, key, tensor or limit. */
typedef struct tmrt_error {
    char message[320];
} tmrt_error;

TMEM_EXTERN_C_END

#endif /* TMEMRT_ERROR_H */

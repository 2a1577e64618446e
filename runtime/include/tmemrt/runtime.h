/**
 * @file runtime.h
 * @brief typedmem's reference runtime: a Qwen3.5 hybrid model (Gated
 *        DeltaNet + gated attention) running on typed memory.
 *
 * Built on typedmem's public API only. Prefix `tmrt_`.
 */
#ifndef TMEMRT_RUNTIME_H
#define TMEMRT_RUNTIME_H

#include <typedmem/typedmem.h>

TMEM_EXTERN_C_BEGIN

/** @brief The runtime's version string ("0.1.0").
 *  @par Threads safe */
TMEM_API const char *tmrt_version(void);

TMEM_EXTERN_C_END

#endif /* TMEMRT_RUNTIME_H */

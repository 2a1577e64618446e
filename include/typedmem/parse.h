/**
 * @file parse.h
 * @brief Strict parsing of sizes and counts: one parser shared by the config
 *        file (TMEM_CONFIG) and the tmem command line, so "512MiB" means the
 *        same bytes everywhere.
 *
 * Integer arithmetic only, overflow-checked. Digits are ASCII decimal; no
 * sign, no leading or trailing space, no hex ("0x10"), no fractions, no
 * exponent, no "nan"/"inf". A size is a whole number with an optional unit,
 * case-insensitive, optionally after one run of spaces:
 *   B (or none) = 1, K KiB = 2^10, M MiB = 2^20, G GiB = 2^30, T TiB = 2^40,
 *   KB = 10^3, MB = 10^6, GB = 10^9, TB = 10^12.
 * Pure functions: no allocation, no global state, safe from any thread.
 */
#ifndef TYPEDMEM_PARSE_H
#define TYPEDMEM_PARSE_H

#include "common.h"
#include "status.h"

TMEM_EXTERN_C_BEGIN

/**
 * @brief Parse `len` bytes of `text` (need not be NUL-terminated) as a
 *        whole number in [min, max].
 * @param why  optional: on failure, a static English phrase saying what is
 *             wrong ("not a whole number (digits only)", "out of range").
 * @return TMEM_OK; TMEM_E_PARSE (not digits, empty); TMEM_E_OVERFLOW (above
 *         2^64-1); TMEM_E_INVALID_ARG (NULL text/out, or min > max);
 *         TMEM_E_LIMIT (outside [min, max]). *out is 0 on failure.
 */
TMEM_API TMEM_NODISCARD tmem_status tmem_parse_u64(const char *text, size_t len, uint64_t min, uint64_t max,
                                                   uint64_t *out, const char **why);

/**
 * @brief Parse `len` bytes of `text` as a size in bytes ("3GiB", "1536 MiB",
 *        "64K", "4096", "2GB"; units above).
 * @param why  optional: on failure, a static English phrase (e.g. "sizes are
 *             whole numbers (write 1536MiB, not 1.5GiB)").
 * @return TMEM_OK; TMEM_E_PARSE (no leading digit, unknown unit, fraction,
 *         sign); TMEM_E_OVERFLOW (more than 2^64-1 bytes); TMEM_E_INVALID_ARG
 *         (NULL text/out). *out is 0 on failure.
 */
TMEM_API TMEM_NODISCARD tmem_status tmem_parse_size(const char *text, size_t len, uint64_t *out, const char **why);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_PARSE_H */

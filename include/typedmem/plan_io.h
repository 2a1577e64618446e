/**
 * @file plan_io.h
 * @brief Plans and files (layer io, above the planner): a plan problem read
 *        from a CSV file, plans written to a FILE as CSV, JSON or SVG.
 *
 * The planner itself (plan.h) parses CSV from memory and draws SVG into
 * memory; these calls add the file: reads go through the OS layer's file
 * calls, writes through its stream write, so a failed write is reported
 * (TMEM_E_IO) and fault injection reaches both.
 */
#ifndef TYPEDMEM_PLAN_IO_H
#define TYPEDMEM_PLAN_IO_H

#include <stdio.h>
#include "plan.h"

TMEM_EXTERN_C_BEGIN

/** @brief Read a CSV file (see tmem_plan_problem_parse_csv). Files over
 *  1 GiB are refused.
 *  @return as tmem_plan_problem_parse_csv, plus TMEM_E_IO (cannot open/read,
 *          too large)
 *  @par Threads safe
 *  On failure *out is NULL, *err is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_plan_problem_load_csv(const char *path, tmem_plan_problem **out, tmem_plan_error *err);

/** @brief Write the plan as CSV: `id,lower,upper,size,alignment,offset`
 *  (readable back by tmem_plan_problem_parse_csv as fixed buffers).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL) | TMEM_E_IO (a write failed:
 *          a prefix may be in f) | TMEM_E_NO_MEMORY
 *  @par Threads safe (the plan is read-only; f is the caller's to guard) */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_write_csv(const tmem_plan *plan, FILE *f);

/** @brief Write a one-object JSON summary (the tmem_plan_info fields, version 1).
 *  @return as tmem_plan_write_csv
 *  @par Threads as tmem_plan_write_csv */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_write_json(const tmem_plan *plan, FILE *f);

/** @brief Write the SVG drawing of tmem_plan_svg (plan.h) to f.
 *  @param desc  NULL = defaults.
 *  @return as tmem_plan_write_csv
 *  @par Threads as tmem_plan_write_csv */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_write_svg(const tmem_plan *plan,
                                                        const tmem_plan_svg_desc *desc, FILE *f);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_PLAN_IO_H */

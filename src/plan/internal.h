/*
 * The planner's contract with the layers above it (src/io/ writes plans to
 * files), beyond the public typedmem/plan.h. plan_internal.h is private to
 * src/plan/.
 */
#ifndef TMEM_PLAN_CONTRACT_H
#define TMEM_PLAN_CONTRACT_H

#include "base/text.h"
#include "typedmem/plan.h"

/* A plan as text into t (which may be any kind of text: fixed, growing or a
 * sink): the CSV of tmem_plan_write_csv (output.c), the JSON summary of
 * tmem_plan_write_json (output.c), the SVG of tmem_plan_svg (svg.c; desc
 * NULL = defaults). Failures are t's (sticky t->failed). */
void tmem__plan_csv_text(const tmem_plan *plan, tmem__text *t);
void tmem__plan_json_text(const tmem_plan *plan, tmem__text *t);
void tmem__plan_svg_text(const tmem_plan *plan, const tmem_plan_svg_desc *desc, tmem__text *t);

#endif /* TMEM_PLAN_CONTRACT_H */

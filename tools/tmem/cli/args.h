/* args.h: command-line value parsers shared by the runtime commands
 * (tmem run, tmem bench run, tmem demo). */
#ifndef TMEM_TOOL_ARGS_H
#define TMEM_TOOL_ARGS_H

#include <stdbool.h>
#include <stdint.h>

/* A decimal count: digits only (no sign, no spaces). */
bool tmem_arg_u64(const char *s, uint64_t *out);
/* A byte size: tmem_parse_size (typedmem/parse.h): a whole number with an
 * optional unit (K/KiB.. = 2^10.., KB.. = 10^3.., case-insensitive), e.g.
 * "512M", "1536MiB", "2GB"; no fractions, signs or hex. */
bool tmem_arg_size(const char *s, uint64_t *out);
/* A finite float >= 0. */
bool tmem_arg_float(const char *s, float *out);
/* "ID,ID,..." into ids (at most cap); *n the count. */
bool tmem_arg_ids(const char *s, int32_t *ids, uint32_t cap, uint32_t *n);

#endif

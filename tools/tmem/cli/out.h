/* out.h: the tool's output files through out_file.h (a temporary beside the
 * target, renamed over it on success; an input given as the output refused),
 * with the command's name on every message. */
#ifndef TMEM_CLI_OUT_H
#define TMEM_CLI_OUT_H
#include <stdbool.h>
#include "typedmem/typedmem.h"

/* Open path for writing; NULL (message printed) on refusal or failure. */
FILE *tool_out_open(const char *cmd, const char *path, const char *const *inputs, size_t n, tmem_out_file **f);
/* ok: commit (false and a message when that fails); !ok: abort, the previous
 * file stays. NULL f: returns ok. */
bool tool_out_close(const char *cmd, tmem_out_file *f, bool ok);
#endif

/* Default memory types and the default role -> type policy (defaults.c). */
#ifndef TMEM_CORE_DEFAULTS_H
#define TMEM_CORE_DEFAULTS_H

#include "typedmem/context.h"

/* Create the builtin types and map every builtin role to its type. */
tmem_status tmem__defaults_create(tmem_context *ctx);
/* Builtin role name ("weights", "kv_cache", ...); NULL outside the builtins. */
const char *tmem__builtin_role_name(tmem_role role);

#endif

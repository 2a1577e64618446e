/*
 * Roles and the role -> type policy. Builtin roles are named by defaults.c;
 * user roles (TMEM_ROLE_USER_FIRST..TMEM_ROLE_MAX-1) by tmem_role_define.
 */
#include <string.h>
#include "core/core.h"
#include "core/defaults.h"

static bool role_known_locked(const tmem_context *ctx, tmem_role role) {
    if (role >= TMEM_ROLE_BUILTIN_FIRST && role < TMEM_ROLE_BUILTIN_END) return true;
    return (unsigned)role < TMEM_ROLE_MAX && ctx->role_defined[role];
}

tmem_status tmem_role_set_type(tmem_context *ctx, tmem_role role, tmem_type *type) {
    if (!tmem__context_valid(ctx) || !tmem__type_valid(type)) return tmem__err(TMEM_E_INVALID_ARG);
    if (type->ctx != ctx) return tmem__err(TMEM_E_FOREIGN);
    tmem_status st = TMEM_OK;
    tmem__context_lock(ctx);
    if (!role_known_locked(ctx, role)) st = tmem__err(TMEM_E_INVALID_ARG);
    else ctx->role_type[role] = type;
    tmem__context_unlock(ctx);
    return st;
}

tmem_status tmem_role_get_type(tmem_context *ctx, tmem_role role, tmem_type **out) {
    if (out) *out = NULL;
    if (!tmem__context_valid(ctx) || !out || role == TMEM_ROLE_DEFAULT || (unsigned)role >= TMEM_ROLE_MAX)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    tmem_type *t = ctx->role_type[role];
    tmem__context_unlock(ctx);
    if (!t) return tmem__err(TMEM_E_NOT_FOUND);
    *out = t;
    return TMEM_OK;
}

const char *tmem_role_name(tmem_context *ctx, tmem_role role) {
    const char *b = tmem__builtin_role_name(role);
    if (b) return b;
    if (!tmem__context_valid(ctx) || (unsigned)role >= TMEM_ROLE_MAX) return NULL;
    tmem__context_lock(ctx);
    /* Names never change once defined, so the pointer stays valid. */
    const char *n = ctx->role_defined[role] ? ctx->role_names[role] : NULL;
    tmem__context_unlock(ctx);
    return n;
}

tmem_status tmem_role_define(tmem_context *ctx, tmem_role role, const char *name, tmem_type *type) {
    if (!tmem__context_valid(ctx) || !name || !*name || (unsigned)role < TMEM_ROLE_USER_FIRST ||
        (unsigned)role >= TMEM_ROLE_MAX)
        return tmem__err(TMEM_E_INVALID_ARG);
    if (strnlen(name, TMEM__ROLE_NAME_MAX) >= TMEM__ROLE_NAME_MAX) return tmem__err(TMEM_E_INVALID_ARG);
    if (type && !tmem__type_valid(type)) return tmem__err(TMEM_E_INVALID_ARG);
    if (type && type->ctx != ctx) return tmem__err(TMEM_E_FOREIGN);
    tmem_status st = TMEM_OK;
    tmem__context_lock(ctx);
    bool dup = ctx->role_defined[role];
    for (unsigned r = 0; r < TMEM_ROLE_MAX && !dup; r++) {
        const char *n = tmem__builtin_role_name((tmem_role)r);
        if (!n && ctx->role_defined[r]) n = ctx->role_names[r];
        if (n && !strcmp(n, name)) dup = true;
    }
    if (dup) {
        st = tmem__err(TMEM_E_EXISTS);
    } else {
        strcpy(ctx->role_names[role], name);
        ctx->role_defined[role] = true;
        ctx->role_type[role] = type;
    }
    tmem__context_unlock(ctx);
    return st;
}

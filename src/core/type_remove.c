/* Removing a type (tmem_type_destroy): only one nothing refers to, so no
 * heap, surface, KV cache or role is left holding a dangling pointer. Used
 * by tmem_config_load to undo what a failed load created. */
#include <string.h>
#include "core/core.h"

/* Under ctx->lock: does anything use the type? */
static bool in_use_locked(const tmem_context *ctx, const tmem_type *t) {
    if (t->pool.ncarved || t->charged_dirty || t->charged_clean || t->reserved) return true;
    for (unsigned r = 0; r < TMEM_ROLE_MAX; r++)
        if (ctx->role_type[r] == t) return true;
    return false;
}

tmem_status tmem_type_destroy(tmem_type *type) {
    if (!type) return TMEM_OK;
    if (!tmem__type_valid(type)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_context *ctx = type->ctx;
    tmem_status st = TMEM_OK;
    tmem__context_lock(ctx);
    if (in_use_locked(ctx, type) || ctx->types[type->index] != type) {
        st = tmem__err(TMEM_E_STATE);
    } else {
        /* later types move down one index: tmem_type_at stays dense */
        for (uint32_t i = type->index; i + 1 < ctx->ntypes; i++) {
            ctx->types[i] = ctx->types[i + 1];
            ctx->types[i]->index = i;
        }
        ctx->types[--ctx->ntypes] = NULL;
    }
    tmem__context_unlock(ctx);
    if (st == TMEM_OK) tmem__type_destroy(type); /* gives back a populated pool's charge */
    return st;
}

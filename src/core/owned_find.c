/*
 * tmem__context_find_owned: find a layer's per-context singleton among the
 * owned objects by its destroy function (internal.h). Kept apart from
 * context.c as an additive piece of the internal contract, added for the
 * surface registry.
 */
#include "core/core.h"

void *tmem__context_find_owned(tmem_context *ctx, tmem__destroy_fn fn) {
    if (!tmem__context_valid(ctx) || !fn) return NULL;
    void *found = NULL;
    tmem__context_lock(ctx);
    for (size_t i = ctx->nowned; i-- > 0;) {
        if (ctx->owned[i].fn == fn) {
            found = ctx->owned[i].object;
            break;
        }
    }
    tmem__context_unlock(ctx);
    return found;
}

/* Public doors onto two context services the tools and runtimes need:
 * attaching an object to the context's lifetime (the owned-object list the
 * library's own KV caches and surfaces use) and asking the OS how much of a
 * type's pool is resident (what accounting is checked against). */
#include "core/internal.h"

tmem_status tmem_context_attach(tmem_context *ctx, void *object, tmem_destroy_fn destroy) {
    if (!ctx || !object || !destroy) return tmem__err(TMEM_E_INVALID_ARG);
    return tmem__context_add_owned(ctx, object, destroy);
}

tmem_status tmem_type_get_residency(tmem_type *type, uint64_t *out_bytes) {
    if (out_bytes) *out_bytes = 0;
    if (!type || !out_bytes) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_type_info ti;
    tmem_status st = tmem_type_get_info(type, &ti);
    if (st != TMEM_OK) return st;
    return tmem__pool_residency(type, 0, ti.reserve, out_bytes);
}

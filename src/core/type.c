/*
 * Memory types: a name, a placement, a lifetime class, flags, a budget and a
 * reclaim priority, plus the pool the type reserved at creation. Types live
 * until the context is destroyed.
 */
#include <string.h>
#include "core/core.h"

bool tmem__type_valid(const tmem_type *type) {
    return type && type->magic == TMEM__TYPE_MAGIC && tmem__context_valid(type->ctx);
}

/* "/memory/<name>": letters, digits and "-_./", at most 63 bytes in all, so
 * a name never needs quoting in JSON, tables or config files. */
static bool name_ok(const char *name) {
    static const char prefix[] = "/memory/";
    if (!name || strncmp(name, prefix, sizeof prefix - 1) != 0) return false;
    size_t n = strnlen(name, 64);
    if (n >= 64 || n == sizeof prefix - 1) return false;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '-' || name[i] == '_' || name[i] == '.' || name[i] == '/'))
            return false;
    return true;
}

static tmem_type *find_locked(tmem_context *ctx, const char *name) {
    for (uint32_t i = 0; i < ctx->ntypes; i++)
        if (!strcmp(ctx->types[i]->name, name)) return ctx->types[i];
    return NULL;
}

/* Types that commit their whole reserve at creation must say how big. */
static bool populates(const tmem_type_desc *d) {
    return (d->flags & (TMEM_TYPE_POPULATE | TMEM_TYPE_CONTIGUOUS)) || d->placement == TMEM_PLACEMENT_PINNED;
}

tmem_status tmem__type_create(tmem_context *ctx, const tmem_type_desc *desc, tmem_type **out) {
    uint64_t reserve = desc->reserve ? desc->reserve : desc->budget ? desc->budget : ctx->default_reserve;
    if (populates(desc) && !desc->reserve && !desc->budget) return tmem__err(TMEM_E_INVALID_ARG);
    if (reserve > TMEM__MAX_RESERVE) return tmem__err(TMEM_E_OVERFLOW);

    tmem_type *t = tmem__calloc(ctx, 1, sizeof *t);
    if (!t) return tmem__err(TMEM_E_NO_MEMORY);
    t->magic = TMEM__TYPE_MAGIC;
    t->ctx = ctx;
    strcpy(t->name, desc->name); /* length checked by name_ok */
    t->placement = desc->placement;
    t->lifetime = desc->lifetime;
    t->flags = desc->flags;
    if (desc->placement == TMEM_PLACEMENT_PINNED) t->flags |= TMEM_TYPE_POPULATE | TMEM_TYPE_LOCKED;
    if (desc->flags & TMEM_TYPE_CONTIGUOUS) t->flags |= TMEM_TYPE_POPULATE;
    t->reserve_asked = desc->reserve;
    t->budget = desc->budget;
    t->reclaim_priority = desc->reclaim_priority;
    t->index = UINT32_MAX;

    tmem_status st = tmem__pool_init(t, reserve);
    if (st != TMEM_OK) {
        t->magic = 0;
        tmem__free(ctx, t, sizeof *t);
        return st;
    }
    /* Populate before the type is visible: a failure then leaves nothing
     * behind for another thread to have seen. */
    if (t->flags & TMEM_TYPE_POPULATE) st = tmem__pool_commit(t, 0, t->pool.region.size);
    if (st == TMEM_OK) {
        tmem__context_lock(ctx);
        if (find_locked(ctx, t->name)) st = tmem__err(TMEM_E_EXISTS);
        else if (ctx->ntypes == TMEM__MAX_TYPES) st = tmem__err(TMEM_E_FULL);
        else {
            t->index = ctx->ntypes;
            ctx->types[ctx->ntypes++] = t;
        }
        tmem__context_unlock(ctx);
    }
    if (st != TMEM_OK) {
        tmem__type_destroy(t);
        return st;
    }
    *out = t;
    return TMEM_OK;
}

void tmem__type_destroy(tmem_type *type) {
    tmem_context *ctx = type->ctx;
    uint64_t pool_bytes = tmem__pool_committed_bytes(type);
    /* Give the budget back for what the pool still holds (registered types
     * at context destroy; unregistered ones on a failed create). */
    if (pool_bytes) {
        tmem__context_lock(ctx);
        tmem__budget_uncharge_locked(type, pool_bytes, false, true);
        tmem__context_unlock(ctx);
    }
    tmem__pool_release(type);
    type->magic = 0;
    tmem__free(ctx, type, sizeof *type);
}

tmem_status tmem_type_create(tmem_context *ctx, const tmem_type_desc *desc, tmem_type **out) {
    if (out) *out = NULL;
    if (!tmem__context_valid(ctx) || !desc || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (!name_ok(desc->name) || (unsigned)desc->placement >= TMEM_PLACEMENT_COUNT ||
        (unsigned)desc->lifetime >= TMEM_LIFETIME_COUNT || (desc->flags & ~(uint32_t)TMEM_TYPE_FLAG_MASK))
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    bool exists = find_locked(ctx, desc->name) != NULL;
    bool full = ctx->ntypes == TMEM__MAX_TYPES;
    bool has_backend = ctx->backends[desc->placement] != NULL;
    tmem__context_unlock(ctx);
    if (exists) return tmem__err(TMEM_E_EXISTS);
    if (full) return tmem__err(TMEM_E_FULL);
    if (!has_backend) return tmem__err(TMEM_E_UNSUPPORTED);
    return tmem__type_create(ctx, desc, out);
}

tmem_status tmem_type_find(tmem_context *ctx, const char *name, tmem_type **out) {
    if (out) *out = NULL;
    if (!tmem__context_valid(ctx) || !name || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    tmem_type *t = find_locked(ctx, name);
    tmem__context_unlock(ctx);
    if (!t) return tmem__err(TMEM_E_NOT_FOUND);
    *out = t;
    return TMEM_OK;
}

tmem_status tmem_type_get_info(const tmem_type *type, tmem_type_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!tmem__type_valid(type) || !out) return tmem__err(TMEM_E_INVALID_ARG);
    memcpy(out->name, type->name, sizeof out->name);
    out->placement = type->placement;
    out->lifetime = type->lifetime;
    out->flags = type->flags;
    out->reserve = type->pool.region.size;
    tmem__context_lock(type->ctx);
    out->budget = type->budget;
    tmem__context_unlock(type->ctx);
    out->reclaim_priority = type->reclaim_priority;
    out->index = type->index;
    return TMEM_OK;
}

uint32_t tmem_type_count(tmem_context *ctx) {
    if (!tmem__context_valid(ctx)) return 0;
    tmem__context_lock(ctx);
    uint32_t n = ctx->ntypes;
    tmem__context_unlock(ctx);
    return n;
}

tmem_status tmem_type_at(tmem_context *ctx, uint32_t index, tmem_type **out) {
    if (out) *out = NULL;
    if (!tmem__context_valid(ctx) || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    tmem_type *t = index < ctx->ntypes ? ctx->types[index] : NULL;
    tmem__context_unlock(ctx);
    if (!t) return tmem__err(TMEM_E_NOT_FOUND);
    *out = t;
    return TMEM_OK;
}

tmem_status tmem_type_set_budget(tmem_type *type, uint64_t budget) {
    if (!tmem__type_valid(type)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(type->ctx);
    type->budget = budget;
    tmem__context_unlock(type->ctx);
    return TMEM_OK;
}

/* ---- accessors for the other layers ---- */

tmem_context *tmem__type_context(const tmem_type *type) { return type->ctx; }
uint32_t tmem__type_index(const tmem_type *type) { return type->index; }
tmem_placement tmem__type_placement(const tmem_type *type) { return type->placement; }
uint32_t tmem__type_flags(const tmem_type *type) { return type->flags; }

/*
 * The per-context surface registry: id -> surface, with references
 * (IOSurfaceLookup). Ids count up from 1 and are never reused within a
 * context, so a stale id finds nothing rather than someone else's surface.
 *
 * The registry is the context's singleton for this layer: an owned object
 * found again by its destroy function (tmem__context_find_owned), created on
 * the first surface. Being owned before any surface, it is destroyed after
 * all of them (owned objects go newest first).
 *
 * Everything here runs under the context lock; the release path takes the
 * same lock to drop the last reference, so a lookup can never revive a
 * surface that is being freed.
 */
#include "surface/surface_internal.h"
#include <string.h>

typedef struct registry {
    tmem_context *ctx;
    tmem_surface **buckets;
    size_t nbuckets;      /* power of two */
    size_t count;
    uint64_t next_id;
} registry;

static void registry_destroy(void *object) {
    registry *r = object;
    /* Surfaces were destroyed before (they were owned later). */
    tmem__free(r->ctx, r->buckets, r->nbuckets * sizeof *r->buckets);
    tmem__free(r->ctx, r, sizeof *r);
}

static size_t bucket_of(const registry *r, uint64_t id) {
    uint64_t h = id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (r->nbuckets - 1);
}

/* The registry of ctx, created if absent. Context lock held. */
static registry *registry_get(tmem_context *ctx, bool create) {
    registry *r = tmem__context_find_owned(ctx, registry_destroy);
    if (r || !create) return r;
    r = tmem__calloc(ctx, 1, sizeof *r);
    if (!r) return NULL;
    r->ctx = ctx;
    r->nbuckets = 16;
    r->next_id = 1;
    r->buckets = tmem__calloc(ctx, r->nbuckets, sizeof *r->buckets);
    if (!r->buckets || tmem__context_add_owned(ctx, r, registry_destroy) != TMEM_OK) {
        if (r->buckets) tmem__free(ctx, r->buckets, r->nbuckets * sizeof *r->buckets);
        tmem__free(ctx, r, sizeof *r);
        return NULL;
    }
    return r;
}

/* Double the table when it gets crowded; failure just keeps chains longer. */
static void registry_grow(registry *r) {
    size_t n = r->nbuckets * 2;
    tmem_surface **b = tmem__calloc(r->ctx, n, sizeof *b);
    if (!b) return;
    tmem_surface **old = r->buckets;
    size_t oldn = r->nbuckets;
    r->buckets = b;
    r->nbuckets = n;
    for (size_t i = 0; i < oldn; i++) {
        for (tmem_surface *s = old[i], *next; s; s = next) {
            next = s->reg_next;
            size_t k = bucket_of(r, s->id);
            s->reg_next = b[k];
            b[k] = s;
        }
    }
    tmem__free(r->ctx, old, oldn * sizeof *old);
}

tmem_status tmem__surface_registry_add(tmem_surface *s) {
    tmem__context_lock(s->ctx);
    registry *r = registry_get(s->ctx, true);
    if (!r) {
        tmem__context_unlock(s->ctx);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    if (r->count >= r->nbuckets * 2) registry_grow(r);
    s->id = r->next_id++;
    size_t k = bucket_of(r, s->id);
    s->reg_next = r->buckets[k];
    r->buckets[k] = s;
    r->count++;
    tmem__context_unlock(s->ctx);
    return TMEM_OK;
}

void tmem__surface_registry_remove(tmem_surface *s) {
    if (!s->id) return;
    tmem__context_lock(s->ctx);
    registry *r = registry_get(s->ctx, false);
    if (r) {
        for (tmem_surface **p = &r->buckets[bucket_of(r, s->id)]; *p; p = &(*p)->reg_next) {
            if (*p == s) {
                *p = s->reg_next;
                r->count--;
                break;
            }
        }
    }
    s->reg_next = NULL;
    tmem__context_unlock(s->ctx);
}

tmem_surface *tmem__surface_registry_find_import(tmem_context *ctx, const tmem_surface *like, bool *conflict) {
    tmem_surface *found = NULL;
    *conflict = false;
    tmem__context_lock(ctx);
    registry *r = registry_get(ctx, false);
    /* A walk: imports per context are few (a frame pool), and this runs once
     * per received message, next to several syscalls. */
    for (size_t b = 0; r && !found && b < r->nbuckets; b++) {
        for (tmem_surface *s = r->buckets[b]; s; s = s->reg_next) {
            if (s->backing != TMEM_SURFACE_BACKING_IMPORTED) continue;
            bool same_ctl = s->ctl_dev == like->ctl_dev && s->ctl_ino == like->ctl_ino;
            bool same_pix = s->pix_dev == like->pix_dev && s->pix_ino == like->pix_ino;
            /* One control page belongs to one pixel file: a peer pairing a
             * surface's control page with other pixels is forging a frame. */
            if (same_ctl != same_pix) {
                *conflict = true;
                break;
            }
            if (same_ctl && s->uid == like->uid && s->read_only == like->read_only &&
                tmem__surface_layout_equal(&s->layout, &like->layout)) {
                atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
                found = s;
                break;
            }
        }
        if (*conflict) break;
    }
    tmem__context_unlock(ctx);
    return found;
}

tmem_status tmem_surface_lookup(tmem_context *ctx, uint64_t id, tmem_surface **out) {
    if (out) *out = NULL;
    if (!ctx || !out || !id) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    registry *r = registry_get(ctx, false);
    tmem_surface *found = NULL;
    if (r) {
        for (tmem_surface *s = r->buckets[bucket_of(r, id)]; s; s = s->reg_next) {
            /* A surface in the table always has refs > 0: the last release
             * unlinks it under this lock before freeing it. */
            if (s->id == id) {
                atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
                found = s;
                break;
            }
        }
    }
    tmem__context_unlock(ctx);
    if (!found) return tmem__err(TMEM_E_NOT_FOUND);
    *out = found;
    return TMEM_OK;
}

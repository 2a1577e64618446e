/*
 * The per-context surface registry: id -> surface, with references
 * (IOSurfaceLookup), and an index of imported surfaces by file identity so a
 * received descriptor finds an existing import (or a forged pairing) in O(1).
 * Ids count up from 1 and are never reused within a context, so a stale id
 * finds nothing rather than someone else's surface.
 *
 * The registry is the context's singleton for this layer: an owned object
 * found again by its destroy function (tmem__context_find_owned, O(1)),
 * created on the first surface. Being owned before any surface, it is
 * destroyed after all of them (owned objects go newest first).
 *
 * Its own lock (a leaf: nothing else is taken under it) guards the tables;
 * the release path takes it to drop the last reference, so a lookup can
 * never revive a surface that is being freed. The context lock is taken
 * only to find or create the registry itself.
 */
#include "surface/surface_internal.h"
#include "os/os.h"
#include <string.h>

typedef struct registry {
    tmem_context *ctx;
    tmem__os_mutex lock;
    tmem_surface **buckets;   /* by id */
    tmem_surface **by_ctl;    /* imports by control file (dev, ino) */
    tmem_surface **by_pix;    /* imports by pixel file (dev, ino) */
    size_t nbuckets;          /* power of two, all three tables */
    size_t count;
    uint64_t next_id;
} registry;

static void free_tables(tmem_context *ctx, registry *r) {
    tmem__free(ctx, r->buckets, r->nbuckets * sizeof *r->buckets);
    tmem__free(ctx, r->by_ctl, r->nbuckets * sizeof *r->by_ctl);
    tmem__free(ctx, r->by_pix, r->nbuckets * sizeof *r->by_pix);
}

static void registry_destroy(void *object) {
    registry *r = object;
    /* Surfaces were destroyed before (they were owned later). */
    free_tables(r->ctx, r);
    tmem__os_mutex_destroy(&r->lock);
    tmem__free(r->ctx, r, sizeof *r);
}

static size_t mix(uint64_t a, uint64_t b, size_t n) {
    uint64_t h = (a ^ (b * 0xC2B2AE3D27D4EB4Full)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (n - 1);
}
static size_t bucket_of(const registry *r, uint64_t id) { return mix(id, 0, r->nbuckets); }
static size_t ctl_of(const registry *r, const tmem_surface *s) { return mix(s->ctl_dev, s->ctl_ino, r->nbuckets); }
static size_t pix_of(const registry *r, const tmem_surface *s) { return mix(s->pix_dev, s->pix_ino, r->nbuckets); }

static bool alloc_tables(tmem_context *ctx, registry *r, size_t n) {
    r->nbuckets = n;
    r->buckets = tmem__calloc(ctx, n, sizeof *r->buckets);
    r->by_ctl = tmem__calloc(ctx, n, sizeof *r->by_ctl);
    r->by_pix = tmem__calloc(ctx, n, sizeof *r->by_pix);
    if (r->buckets && r->by_ctl && r->by_pix) return true;
    free_tables(ctx, r);
    return false;
}

/* The registry of ctx, created if absent (under the context lock, so two
 * threads cannot both create one). */
static registry *registry_get(tmem_context *ctx, bool create) {
    registry *r = tmem__context_find_owned(ctx, registry_destroy);
    if (r || !create) return r;
    tmem__context_lock(ctx);
    r = tmem__context_find_owned(ctx, registry_destroy);
    if (!r && (r = tmem__calloc(ctx, 1, sizeof *r))) {
        r->ctx = ctx;
        r->next_id = 1;
        bool ok = !tmem__os_mutex_init(&r->lock, 0);
        if (ok && !(alloc_tables(ctx, r, 16) && tmem__context_add_owned(ctx, r, registry_destroy) == TMEM_OK)) {
            free_tables(ctx, r);
            tmem__os_mutex_destroy(&r->lock);
            ok = false;
        }
        if (!ok) {
            tmem__free(ctx, r, sizeof *r);
            r = NULL;
        }
    }
    tmem__context_unlock(ctx);
    return r;
}

static bool imported(const tmem_surface *s) { return s->backing == TMEM_SURFACE_BACKING_IMPORTED; }

static void link(registry *r, tmem_surface *s) {
    size_t k = bucket_of(r, s->id);
    s->reg_next = r->buckets[k];
    r->buckets[k] = s;
    if (!imported(s)) return;
    k = ctl_of(r, s);
    s->imp_ctl_next = r->by_ctl[k];
    r->by_ctl[k] = s;
    k = pix_of(r, s);
    s->imp_pix_next = r->by_pix[k];
    r->by_pix[k] = s;
}

static void unlink_from(tmem_surface **head, tmem_surface *s, size_t next_off) {
    for (tmem_surface **p = head; *p; p = (tmem_surface **)(void *)((char *)*p + next_off))
        if (*p == s) {
            *p = *(tmem_surface **)(void *)((char *)s + next_off);
            return;
        }
}

static void registry_unlink(registry *r, tmem_surface *s) {
    unlink_from(&r->buckets[bucket_of(r, s->id)], s, offsetof(tmem_surface, reg_next));
    if (imported(s)) {
        unlink_from(&r->by_ctl[ctl_of(r, s)], s, offsetof(tmem_surface, imp_ctl_next));
        unlink_from(&r->by_pix[pix_of(r, s)], s, offsetof(tmem_surface, imp_pix_next));
    }
    s->reg_next = s->imp_ctl_next = s->imp_pix_next = NULL;
}

/* Double the tables when they get crowded; failure keeps chains longer. */
static void registry_grow(registry *r) {
    registry bigger = *r;
    if (!alloc_tables(r->ctx, &bigger, r->nbuckets * 2)) return;
    for (size_t i = 0; i < r->nbuckets; i++)
        for (tmem_surface *s = r->buckets[i], *next; s; s = next) {
            next = s->reg_next;
            link(&bigger, s);
        }
    free_tables(r->ctx, r);
    r->buckets = bigger.buckets;
    r->by_ctl = bigger.by_ctl;
    r->by_pix = bigger.by_pix;
    r->nbuckets = bigger.nbuckets;
}

tmem_status tmem__surface_registry_add(tmem_surface *s) {
    registry *r = registry_get(s->ctx, true);
    if (!r) return tmem__err(TMEM_E_NO_MEMORY);
    tmem__os_mutex_lock(&r->lock);
    if (r->count >= r->nbuckets * 2) registry_grow(r);
    s->id = r->next_id++;
    link(r, s);
    r->count++;
    tmem__os_mutex_unlock(&r->lock);
    return TMEM_OK;
}

/* Unlink s if it is linked (a failed publish may never have linked it). */
static void remove_locked(registry *r, tmem_surface *s) {
    for (tmem_surface *p = r->buckets[bucket_of(r, s->id)]; p; p = p->reg_next)
        if (p == s) {
            registry_unlink(r, s);
            r->count--;
            return;
        }
}

void tmem__surface_registry_remove(tmem_surface *s) {
    registry *r = s->id ? registry_get(s->ctx, false) : NULL;
    if (!r) return;
    tmem__os_mutex_lock(&r->lock);
    remove_locked(r, s);
    tmem__os_mutex_unlock(&r->lock);
}

bool tmem__surface_registry_release(tmem_surface *s) {
    registry *r = s->id ? registry_get(s->ctx, false) : NULL;
    if (r) tmem__os_mutex_lock(&r->lock);
    bool last = atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1;
    if (r && last) remove_locked(r, s);
    if (r) tmem__os_mutex_unlock(&r->lock);
    return last;
}

tmem_surface *tmem__surface_registry_find_import(tmem_context *ctx, const tmem_surface *like, bool *conflict) {
    tmem_surface *found = NULL;
    *conflict = false;
    registry *r = registry_get(ctx, false);
    if (!r) return NULL;
    tmem__os_mutex_lock(&r->lock);
    /* One control page belongs to one pixel file: an import sharing either
     * file with `like` but not both is a forged pairing. */
    for (tmem_surface *s = r->by_ctl[ctl_of(r, like)]; s && !*conflict; s = s->imp_ctl_next) {
        if (s->ctl_dev != like->ctl_dev || s->ctl_ino != like->ctl_ino) continue;
        if (s->pix_dev != like->pix_dev || s->pix_ino != like->pix_ino) {
            *conflict = true;
        } else if (!found && s->uid == like->uid && s->read_only == like->read_only &&
                   tmem__surface_layout_equal(&s->layout, &like->layout)) {
            found = s;
        }
    }
    for (tmem_surface *s = r->by_pix[pix_of(r, like)]; s && !*conflict; s = s->imp_pix_next)
        if (s->pix_dev == like->pix_dev && s->pix_ino == like->pix_ino &&
            (s->ctl_dev != like->ctl_dev || s->ctl_ino != like->ctl_ino))
            *conflict = true;
    if (*conflict) found = NULL;
    if (found) atomic_fetch_add_explicit(&found->refs, 1, memory_order_relaxed);
    tmem__os_mutex_unlock(&r->lock);
    return found;
}

tmem_status tmem_surface_lookup(tmem_context *ctx, uint64_t id, tmem_surface **out) {
    if (out) *out = NULL;
    if (!ctx || !out || !id) return tmem__err(TMEM_E_INVALID_ARG);
    registry *r = registry_get(ctx, false);
    tmem_surface *found = NULL;
    if (r) {
        tmem__os_mutex_lock(&r->lock);
        for (tmem_surface *s = r->buckets[bucket_of(r, id)]; s; s = s->reg_next) {
            /* A surface in the table always has refs > 0: the last release
             * unlinks it under this lock before freeing it. */
            if (s->id == id) {
                atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
                found = s;
                break;
            }
        }
        tmem__os_mutex_unlock(&r->lock);
    }
    if (!found) return tmem__err(TMEM_E_NOT_FOUND);
    *out = found;
    return TMEM_OK;
}

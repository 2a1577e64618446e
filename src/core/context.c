/*
 * The context: owns types (and their pools), heaps, other layers' objects and
 * the tracer; holds the metadata allocator, the locks and the budget.
 */
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "core/defaults.h"
#include "os/os.h"

/* ---- metadata allocation ---- */

void *tmem__malloc(tmem_context *ctx, size_t size) {
    if (!size) size = 1;
    if (ctx && ctx->allocator.alloc) return ctx->allocator.alloc(size, ctx->allocator.user);
    return malloc(size);
}

void *tmem__calloc(tmem_context *ctx, size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) return NULL;
    if (ctx && ctx->allocator.alloc) {
        void *p = tmem__malloc(ctx, total);
        if (p) memset(p, 0, total ? total : 1);
        return p;
    }
    return calloc(count ? count : 1, size ? size : 1);
}

void tmem__free(tmem_context *ctx, void *ptr, size_t size) {
    if (!ptr) return;
    if (ctx && ctx->allocator.free) {
        ctx->allocator.free(ptr, size ? size : 1, ctx->allocator.user);
        return;
    }
    if (ctx && ctx->allocator.alloc) return; /* custom alloc without free: the caller owns the arena */
    free(ptr);
}

tmem_status tmem__grow(tmem_context *ctx, void **arr, size_t *cap, size_t want, size_t elem) {
    if (want <= *cap) return TMEM_OK;
    size_t ncap = *cap ? *cap : 4;
    while (ncap < want) {
        if (ncap > SIZE_MAX / 2) return tmem__err(TMEM_E_OVERFLOW);
        ncap *= 2;
    }
    size_t bytes;
    if (__builtin_mul_overflow(ncap, elem, &bytes)) return tmem__err(TMEM_E_OVERFLOW);
    void *n = tmem__malloc(ctx, bytes);
    if (!n) return tmem__err(TMEM_E_NO_MEMORY);
    if (*arr) memcpy(n, *arr, *cap * elem);
    tmem__free(ctx, *arr, *cap * elem);
    *arr = n;
    *cap = ncap;
    return TMEM_OK;
}

/* ---- locks, flags, validity ---- */

void tmem__context_lock(tmem_context *ctx) {
    tmem__os_mutex_lock(&ctx->lock);
    ctx->lock_depth++;
}

void tmem__context_unlock(tmem_context *ctx) {
    tmem__assert(ctx->lock_depth > 0);
    ctx->lock_depth--;
    tmem__os_mutex_unlock(&ctx->lock);
}

bool tmem__context_debug(const tmem_context *ctx) {
    return ctx && (ctx->flags & TMEM_CONTEXT_DEBUG);
}

bool tmem__context_valid(const tmem_context *ctx) {
    return ctx && ctx->magic == TMEM__CTX_MAGIC;
}

/* ---- tracer ---- */

void tmem__context_set_tracer(tmem_context *ctx, struct tmem__tracer *tracer,
                              tmem__trace_emit_fn emit) {
    if (tracer) atomic_store_explicit(&ctx->head.emit, emit, memory_order_relaxed);
    atomic_store_explicit(&ctx->head.tracer, tracer, memory_order_release);
}

/* ---- backends ---- */

tmem_status tmem__context_set_backend(tmem_context *ctx, tmem_placement placement, const tmem__backend *be) {
    if (!tmem__context_valid(ctx) || (unsigned)placement >= TMEM_PLACEMENT_COUNT) return tmem__err(TMEM_E_INVALID_ARG);
    if (be && (!be->reserve || !be->release || !be->commit || !be->decommit || !be->advise))
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    ctx->backends[placement] = be;
    tmem__context_unlock(ctx);
    return TMEM_OK;
}

const tmem__backend *tmem__context_backend(const tmem_context *ctx, tmem_placement placement) {
    if (!tmem__context_valid(ctx) || (unsigned)placement >= TMEM_PLACEMENT_COUNT) return NULL;
    tmem_context *m = (tmem_context *)ctx; /* the lock is not part of the value */
    tmem__context_lock(m);
    const tmem__backend *be = m->backends[placement];
    tmem__context_unlock(m);
    return be;
}

/* ---- members ---- */

tmem_status tmem__context_add_member(tmem_context *ctx, void *object, const tmem__member_ops *ops) {
    if (!tmem__context_valid(ctx) || !object || !ops || !ops->destroy || !ops->type)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem__os_mutex_lock(&ctx->members_lock);
    size_t want = ctx->nmembers + 1;
    tmem_status st =
        tmem__grow(ctx, (void **)&ctx->members, &ctx->capmembers, want, sizeof *ctx->members);
    if (st == TMEM_OK) ctx->members[ctx->nmembers++] = (tmem__member){object, ops};
    tmem__os_mutex_unlock(&ctx->members_lock);
    return st;
}

void tmem__context_remove_member(tmem_context *ctx, void *object) {
    if (!ctx) return;
    tmem__os_mutex_lock(&ctx->members_lock);
    for (size_t i = ctx->nmembers; i-- > 0;) {
        if (ctx->members[i].object == object) {
            size_t tail = ctx->nmembers - i - 1;
            memmove(&ctx->members[i], &ctx->members[i + 1], tail * sizeof *ctx->members);
            ctx->nmembers--;
            break;
        }
    }
    tmem__os_mutex_unlock(&ctx->members_lock);
}

void tmem__context_each_member(tmem_context *ctx, const tmem__member_ops *ops,
                               void (*visit)(void *object, void *arg), void *arg) {
    if (!tmem__context_valid(ctx) || !visit) return;
    tmem__os_mutex_lock(&ctx->members_lock);
    for (size_t i = 0; i < ctx->nmembers; i++)
        if (!ops || ctx->members[i].ops == ops) visit(ctx->members[i].object, arg);
    tmem__os_mutex_unlock(&ctx->members_lock);
}

/* ---- owned objects ---- */

static tmem__owned_kind *owned_kind(tmem_context *ctx, tmem__destroy_fn fn, bool add) {
    for (unsigned i = 0; i < TMEM__OWNED_KINDS; i++) {
        tmem__owned_kind *k = &ctx->owned_kinds[i];
        if (k->fn == fn) return k;
        if (!k->fn && add) {
            k->fn = fn;
            return k;
        }
    }
    return NULL;
}

tmem_status tmem__context_add_owned(tmem_context *ctx, void *object, tmem__destroy_fn fn) {
    if (!tmem__context_valid(ctx) || !object || !fn) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    tmem_status st = tmem__grow(ctx, (void **)&ctx->owned, &ctx->capowned, ctx->nowned + 1, sizeof *ctx->owned);
    if (st == TMEM_OK) {
        ctx->owned[ctx->nowned++] = (tmem__owned){object, fn};
        tmem__owned_kind *k = owned_kind(ctx, fn, true);
        if (k) {
            k->count++;
            k->newest = object;
        }
    }
    tmem__context_unlock(ctx);
    return st;
}

/* The owned list changed at object (removed): keep its kind's entry true. */
static void owned_forget(tmem_context *ctx, const tmem__owned *o) {
    tmem__owned_kind *k = owned_kind(ctx, o->fn, false);
    if (!k || TMEM_NEVER(!k->count)) return;
    if (--k->count == 0 || k->newest == o->object) k->newest = NULL;
}

void *tmem__context_find_owned(tmem_context *ctx, tmem__destroy_fn fn) {
    if (!tmem__context_valid(ctx) || !fn) return NULL;
    void *found = NULL;
    tmem__context_lock(ctx);
    tmem__owned_kind *k = owned_kind(ctx, fn, false);
    if (k && (!k->count || k->newest)) {
        found = k->newest; /* O(1): the common case */
    } else {
        for (size_t i = ctx->nowned; i-- > 0;)
            if (ctx->owned[i].fn == fn) {
                found = ctx->owned[i].object;
                break;
            }
        if (k) k->newest = found;
    }
    tmem__context_unlock(ctx);
    return found;
}

void tmem__context_remove_owned(tmem_context *ctx, void *object) {
    if (!ctx) return;
    tmem__context_lock(ctx);
    for (size_t i = ctx->nowned; i-- > 0;) {
        if (ctx->owned[i].object == object) {
            owned_forget(ctx, &ctx->owned[i]);
            memmove(&ctx->owned[i], &ctx->owned[i + 1], (ctx->nowned - i - 1) * sizeof *ctx->owned);
            ctx->nowned--;
            break;
        }
    }
    tmem__context_unlock(ctx);
}

/* ---- create / destroy ---- */

static tmem_status validate_desc(const tmem_context_desc *d) {
    if (d->flags & ~(uint32_t)(TMEM_CONTEXT_NO_DEFAULT_TYPES | TMEM_CONTEXT_DEBUG | TMEM_CONTEXT_READ_ENV))
        return tmem__err(TMEM_E_INVALID_ARG);
    float w = d->warning_fraction ? d->warning_fraction : 0.80f;
    float c = d->critical_fraction ? d->critical_fraction : 0.95f;
    /* NaN fails every comparison, so it is rejected too. */
    if (!(w > 0.0f && w <= 1.0f) || !(c > 0.0f && c <= 1.0f) || w > c) return tmem__err(TMEM_E_INVALID_ARG);
    if (d->allocator && !d->allocator->alloc && d->allocator->free) return tmem__err(TMEM_E_INVALID_ARG);
    return TMEM_OK;
}

/* Discovery is best effort (a fenced, benign OS call): a system that tells
 * us nothing gets no process budget, only type budgets apply. */
static uint64_t discover_budget(void) {
    tmem_system_limits lim;
    tmem__os_benign_begin();
    tmem_status st = tmem_system_limits_read(&lim);
    tmem__os_benign_end();
    if (st == TMEM_OK && lim.effective) return lim.effective;
    return UINT64_MAX;
}

static tmem_status init_locks(tmem_context *ctx) {
    if (tmem__os_mutex_init(&ctx->lock, TMEM__OS_MUTEX_RECURSIVE)) return tmem__err(TMEM_E_NO_MEMORY);
    if (tmem__os_mutex_init(&ctx->members_lock, 0)) {
        tmem__os_mutex_destroy(&ctx->lock);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    if (tmem__os_cond_init(&ctx->reclaim_cond)) {
        tmem__os_mutex_destroy(&ctx->members_lock);
        tmem__os_mutex_destroy(&ctx->lock);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    return TMEM_OK;
}

tmem_status tmem_context_create(const tmem_context_desc *desc, tmem_context **out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = NULL;
    tmem_context_desc d = {0};
    if (desc) d = *desc;
    tmem_status st = validate_desc(&d);
    if (st != TMEM_OK) return st;

    tmem_allocator al = {0};
    if (d.allocator) al = *d.allocator;
    tmem_context *ctx = al.alloc ? al.alloc(sizeof *ctx, al.user) : malloc(sizeof *ctx);
    if (!ctx) return tmem__err(TMEM_E_NO_MEMORY);
    memset(ctx, 0, sizeof *ctx);
    ctx->allocator = al;
    ctx->flags = d.flags;
    st = init_locks(ctx);
    if (st != TMEM_OK) {
        if (al.alloc) { if (al.free) al.free(ctx, sizeof *ctx, al.user); }
        else free(ctx);
        return st;
    }
    ctx->magic = TMEM__CTX_MAGIC;
    ctx->budget = d.budget ? d.budget : discover_budget();
    ctx->default_reserve = ctx->budget < TMEM__DEFAULT_RESERVE_CAP ? ctx->budget : TMEM__DEFAULT_RESERVE_CAP;
    ctx->warning_fraction = d.warning_fraction ? d.warning_fraction : 0.80f;
    ctx->critical_fraction = d.critical_fraction ? d.critical_fraction : 0.95f;
    ctx->last_notified = TMEM_PRESSURE_NORMAL;
    for (int p = 0; p < TMEM_PLACEMENT_COUNT; p++)
        if (p != TMEM_PLACEMENT_DEVICE && p != TMEM_PLACEMENT_DEVICE_HOST_VISIBLE)
            ctx->backends[p] = tmem__backend_host();

    if (!(d.flags & TMEM_CONTEXT_NO_DEFAULT_TYPES)) st = tmem__defaults_create(ctx);
    if (st == TMEM_OK && d.config_path) st = tmem_config_load(ctx, d.config_path, NULL);
    if (st == TMEM_OK && (d.flags & TMEM_CONTEXT_READ_ENV)) st = tmem__config_load_env(ctx);
    if (st != TMEM_OK) {
        tmem_context_destroy(ctx);
        return st;
    }
    *out = ctx;
    return TMEM_OK;
}

void tmem_context_destroy(tmem_context *ctx) {
    if (!tmem__context_valid(ctx)) return;
    /* Other layers' objects first, newest first: a KV cache built on a heap
     * goes before the heap. Each hook normally removes itself; pop anyway. */
    for (;;) {
        tmem__context_lock(ctx);
        tmem__owned o = {0};
        if (ctx->nowned) {
            o = ctx->owned[--ctx->nowned];
            owned_forget(ctx, &o);
        }
        tmem__context_unlock(ctx);
        if (!o.fn) break;
        o.fn(o.object);
    }
    /* Members (heaps): their destroy unregisters them; pop each ourselves in
     * case it does not, so the loop always ends. */
    for (;;) {
        tmem__os_mutex_lock(&ctx->members_lock);
        tmem__member m = ctx->nmembers ? ctx->members[ctx->nmembers - 1] : (tmem__member){0};
        tmem__os_mutex_unlock(&ctx->members_lock);
        if (!m.object) break;
        m.ops->destroy(m.object);
        tmem__context_remove_member(ctx, m.object);
    }
    /* The tracer is an owned object: its hook above stopped it and cleared
     * the head's pointer. Nothing may emit now. */
    tmem__assert(tmem__context_tracer(ctx) == NULL);
    tmem__context_set_tracer(ctx, NULL, NULL);
    for (uint32_t i = ctx->ntypes; i-- > 0;) tmem__type_destroy(ctx->types[i]);
    tmem__free(ctx, ctx->members, ctx->capmembers * sizeof *ctx->members);
    tmem__free(ctx, ctx->owned, ctx->capowned * sizeof *ctx->owned);
    tmem__os_cond_destroy(&ctx->reclaim_cond);
    tmem__os_mutex_destroy(&ctx->members_lock);
    tmem__os_mutex_destroy(&ctx->lock);
    ctx->magic = 0;
    tmem_allocator al = ctx->allocator;
    if (al.alloc) {
        if (al.free) al.free(ctx, sizeof *ctx, al.user);
    } else {
        free(ctx);
    }
}

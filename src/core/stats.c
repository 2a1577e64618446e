/*
 * Accounting: what is in use in live allocations (by type and by role), next
 * to what is committed (budget.c keeps that). The in-use counters sit on every
 * heap's allocation path, so they are relaxed atomics: a reader sees each
 * counter exactly, though not a snapshot of all of them at one instant.
 */
#include <string.h>
#include "core/core.h"

static void astat_add(tmem__astat *s, uint64_t bytes) {
    uint64_t now = atomic_fetch_add_explicit(&s->current, bytes, memory_order_relaxed) + bytes;
    atomic_fetch_add_explicit(&s->total, bytes, memory_order_relaxed);
    uint64_t peak = atomic_load_explicit(&s->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&s->peak, &peak, now, memory_order_relaxed, memory_order_relaxed)) {
    }
}

static void astat_sub(tmem__astat *s, uint64_t bytes) {
    atomic_fetch_sub_explicit(&s->current, bytes, memory_order_relaxed);
}

uint64_t tmem__astat_current(const tmem__astat *s) {
    return atomic_load_explicit(&((tmem__astat *)s)->current, memory_order_relaxed);
}

static tmem_stat astat_read(const tmem__astat *s) {
    tmem__astat *m = (tmem__astat *)s;
    tmem_stat r;
    r.current = atomic_load_explicit(&m->current, memory_order_relaxed);
    r.peak = atomic_load_explicit(&m->peak, memory_order_relaxed);
    r.total = atomic_load_explicit(&m->total, memory_order_relaxed);
    if (r.peak < r.current) r.peak = r.current; /* read between the add and the peak update */
    return r;
}

void tmem__account_alloc(tmem_type *type, int32_t role, uint64_t bytes) {
    astat_add(&type->in_use, bytes);
    atomic_fetch_add_explicit(&type->alloc_count, 1, memory_order_relaxed);
    if (role >= 0 && role < TMEM_ROLE_MAX) {
        tmem__role_acct *r = &type->ctx->roles[role];
        astat_add(&r->in_use, bytes);
        atomic_fetch_add_explicit(&r->alloc_count, 1, memory_order_relaxed);
    }
}

/* Role before type (the reverse of alloc), so a quiescent-ish reader never
 * sees a role holding bytes its type no longer has. */
void tmem__account_free(tmem_type *type, int32_t role, uint64_t bytes) {
    if (role >= 0 && role < TMEM_ROLE_MAX) {
        tmem__role_acct *r = &type->ctx->roles[role];
        astat_sub(&r->in_use, bytes);
        atomic_fetch_add_explicit(&r->free_count, 1, memory_order_relaxed);
    }
    astat_sub(&type->in_use, bytes);
    atomic_fetch_add_explicit(&type->free_count, 1, memory_order_relaxed);
}

void tmem__type_stats_read(const tmem_type *type, tmem_type_stats *out) {
    tmem_type *t = (tmem_type *)type;
    memset(out, 0, sizeof *out);
    out->reserved = t->pool.region.size;
    tmem__context_lock(t->ctx);
    out->committed = (tmem_stat){t->committed, t->committed_peak, t->committed_total};
    out->clean = t->charged_clean;
    out->dirty = t->committed - t->charged_clean;
    out->budget_denials = t->denials;
    tmem__context_unlock(t->ctx);
    out->in_use = astat_read(&t->in_use);
    out->alloc_count = atomic_load_explicit(&t->alloc_count, memory_order_relaxed);
    out->free_count = atomic_load_explicit(&t->free_count, memory_order_relaxed);
    out->live_count = out->alloc_count >= out->free_count ? out->alloc_count - out->free_count : 0;
    out->reclaimed = atomic_load_explicit(&t->reclaimed, memory_order_relaxed);
    /* Device memory is not the process's dirty memory. */
    if (t->placement == TMEM_PLACEMENT_DEVICE) out->dirty = 0;
}

tmem_status tmem_type_get_stats(const tmem_type *type, tmem_type_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!tmem__type_valid(type) || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__type_stats_read(type, out);
    return TMEM_OK;
}

tmem_status tmem_role_get_stats(tmem_context *ctx, tmem_role role, tmem_role_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!tmem__context_valid(ctx) || !out || (unsigned)role >= TMEM_ROLE_MAX) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__role_acct *r = &ctx->roles[role];
    out->in_use = astat_read(&r->in_use);
    out->alloc_count = atomic_load_explicit(&r->alloc_count, memory_order_relaxed);
    uint64_t freed = atomic_load_explicit(&r->free_count, memory_order_relaxed);
    out->live_count = out->alloc_count >= freed ? out->alloc_count - freed : 0;
    return TMEM_OK;
}

tmem_status tmem_context_accounted(tmem_context *ctx, uint64_t *dirty, uint64_t *clean) {
    if (dirty) *dirty = 0;
    if (clean) *clean = 0;
    if (!tmem__context_valid(ctx) || (!dirty && !clean)) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t d = 0, c = 0;
    tmem__context_lock(ctx);
    for (uint32_t i = 0; i < ctx->ntypes; i++) {
        const tmem_type *t = ctx->types[i];
        if (t->placement == TMEM_PLACEMENT_DEVICE) continue;
        d += t->committed - t->charged_clean;
        c += t->charged_clean;
    }
    tmem__context_unlock(ctx);
    if (dirty) *dirty = d;
    if (clean) *clean = c;
    return TMEM_OK;
}

/* Slow walk: every pool's bitmap against its counters, the types against the
 * context, roles against types, and each heap's own check. The in-use
 * comparison assumes no allocation is in flight on another thread. */
tmem_status tmem_context_check(tmem_context *ctx) {
    if (!tmem__context_valid(ctx)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = TMEM_OK;
    pthread_mutex_lock(&ctx->heaps_lock);
    tmem__context_lock(ctx);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < ctx->ntypes && st == TMEM_OK; i++) {
        const tmem_type *t = ctx->types[i];
        if (t->ctx != ctx || t->index != i || t->magic != TMEM__TYPE_MAGIC) st = tmem__err(TMEM_E_CORRUPT);
        else st = tmem__pool_check(t);
        if (st == TMEM_OK && (t->committed_peak < t->committed || t->committed_total < t->committed)) st = tmem__err(TMEM_E_CORRUPT);
        if (st == TMEM_OK && t->budget && t->committed > t->budget) st = tmem__err(TMEM_E_CORRUPT);
        if (st == TMEM_OK && atomic_load_explicit(&t->free_count, memory_order_relaxed) > atomic_load_explicit(&t->alloc_count, memory_order_relaxed))
            st = tmem__err(TMEM_E_CORRUPT);
        sum += t->committed;
    }
    if (st == TMEM_OK && (sum != ctx->committed || ctx->committed_peak < ctx->committed)) st = tmem__err(TMEM_E_CORRUPT);
    /* Roles: each role's bytes come from some type, so the role sum cannot
     * exceed the type sum (allocations without a role count only by type). */
    uint64_t role_sum = 0, type_sum = 0;
    for (unsigned r = 0; r < TMEM_ROLE_MAX; r++) role_sum += tmem__astat_current(&ctx->roles[r].in_use);
    for (uint32_t i = 0; i < ctx->ntypes; i++) type_sum += tmem__astat_current(&ctx->types[i]->in_use);
    if (st == TMEM_OK && role_sum > type_sum) st = tmem__err(TMEM_E_CORRUPT);
    tmem__context_unlock(ctx);
    for (size_t i = 0; i < ctx->nheaps && st == TMEM_OK; i++) {
        const tmem_type *ht = tmem__heap_type(ctx->heaps[i]);
        if (!ht || ht->ctx != ctx) st = tmem__err(TMEM_E_CORRUPT);
        else st = tmem_heap_check(ctx->heaps[i]);
    }
    pthread_mutex_unlock(&ctx->heaps_lock);
    return st == TMEM_OK ? TMEM_OK : tmem__err(TMEM_E_CORRUPT);
}

/*
 * Accounting: what is in use in live allocations (by type and by role), next
 * to what is committed (budget.c keeps that). The in-use counters sit on every
 * heap's allocation path: see tmem__acct in core.h for the split between the
 * shared `cur`/`peak` (relaxed RMWs) and each heap's own counts (plain
 * single-writer stores), summed when read. A reader sees each counter
 * exactly, though not a snapshot of all of them at one instant.
 */
#include <string.h>
#include "core/core.h"

static inline uint64_t ld(const _Atomic uint64_t *v) {
    return atomic_load_explicit((_Atomic uint64_t *)v, memory_order_relaxed);
}

/* One writer: a plain load and store (no lock prefix), still atomic for readers. */
static inline void bump(_Atomic uint64_t *v, uint64_t d) {
    atomic_store_explicit(v, ld(v) + d, memory_order_relaxed);
}

static inline void cur_in(tmem__acct *a, uint64_t bytes) {
    uint64_t now = atomic_fetch_add_explicit(&a->cur, bytes, memory_order_relaxed) + bytes;
    uint64_t peak = ld(&a->peak);
    while (__builtin_expect(now > peak, 0) &&
           !atomic_compare_exchange_weak_explicit(&a->peak, &peak, now, memory_order_relaxed, memory_order_relaxed)) {
    }
}

static inline void cur_out(tmem__acct *a, uint64_t bytes) {
    atomic_fetch_sub_explicit(&a->cur, bytes, memory_order_relaxed);
}

static inline void sum_in(tmem__acct_counts *c, uint64_t bytes) {
    atomic_fetch_add_explicit(&c->bytes_in, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->count_in, 1, memory_order_relaxed);
}

uint64_t tmem__acct_current(const tmem__acct *a) { return ld(&a->cur); }

static inline bool role_ok(int32_t role) { return role >= 0 && role < TMEM_ROLE_MAX; }

/* Callers outside heaps (and whole-heap drops): shared counters only. */
void tmem__account_alloc(tmem_type *type, int32_t role, uint64_t bytes) {
    sum_in(&type->acct.sum, bytes);
    cur_in(&type->acct, bytes);
    if (role_ok(role)) {
        sum_in(&type->ctx->roles[role].sum, bytes);
        cur_in(&type->ctx->roles[role], bytes);
    }
}

/* Role before type (the reverse of alloc), so a quiescent-ish reader never
 * sees a role holding bytes its type no longer has. */
void tmem__account_free(tmem_type *type, int32_t role, uint64_t bytes) {
    if (role_ok(role)) {
        cur_out(&type->ctx->roles[role], bytes);
        atomic_fetch_add_explicit(&type->ctx->roles[role].sum.count_out, 1, memory_order_relaxed);
    }
    cur_out(&type->acct, bytes);
    atomic_fetch_add_explicit(&type->acct.sum.count_out, 1, memory_order_relaxed);
}

/* The heap hot path: two RMWs per allocation and two per free (the shared
 * `cur` of the type and of the role); the counts are the heap's own. */
void tmem__account_heap_alloc(tmem__heap_acct *local, tmem_type *type, int32_t role, uint64_t bytes) {
    bump(&local->type.bytes_in, bytes);
    bump(&local->type.count_in, 1);
    cur_in(&type->acct, bytes);
    if (role_ok(role)) {
        bump(&local->roles[role].bytes_in, bytes);
        bump(&local->roles[role].count_in, 1);
        cur_in(&type->ctx->roles[role], bytes);
    }
}

void tmem__account_heap_free(tmem__heap_acct *local, tmem_type *type, int32_t role, uint64_t bytes) {
    if (role_ok(role)) {
        cur_out(&type->ctx->roles[role], bytes);
        bump(&local->roles[role].count_out, 1);
    }
    cur_out(&type->acct, bytes);
    bump(&local->type.count_out, 1);
}

static void fold(tmem__acct_counts *into, tmem__acct_counts *from) {
    atomic_fetch_add_explicit(&into->bytes_in, ld(&from->bytes_in), memory_order_relaxed);
    atomic_fetch_add_explicit(&into->count_in, ld(&from->count_in), memory_order_relaxed);
    atomic_fetch_add_explicit(&into->count_out, ld(&from->count_out), memory_order_relaxed);
    atomic_store_explicit(&from->bytes_in, 0, memory_order_relaxed);
    atomic_store_explicit(&from->count_in, 0, memory_order_relaxed);
    atomic_store_explicit(&from->count_out, 0, memory_order_relaxed);
}

/* Under heaps_lock, so a reader counts the heap's numbers exactly once:
 * either in the heap or in the shared sums. */
void tmem__account_heap_retire(tmem_heap *heap) {
    tmem_type *type = tmem__heap_type(heap);
    tmem_context *ctx = type->ctx;
    tmem__heap_acct *local = tmem__heap_acct_of(heap);
    pthread_mutex_lock(&ctx->heaps_lock);
    fold(&type->acct.sum, &local->type);
    for (unsigned r = 0; r < TMEM_ROLE_MAX; r++) fold(&ctx->roles[r].sum, &local->roles[r]);
    pthread_mutex_unlock(&ctx->heaps_lock);
}

typedef struct counts {
    uint64_t bytes_in, count_in, count_out;
} counts;

/* Outs before ins (per source): every free read was preceded by its allocation. */
static void add_counts(counts *c, const tmem__acct_counts *a) {
    c->count_out += ld(&a->count_out);
    c->count_in += ld(&a->count_in);
    c->bytes_in += ld(&a->bytes_in);
}

/* The shared sums plus every registered heap's: of `type` (role < 0) or of
 * role `role` (type NULL). The caller holds heaps_lock. */
static counts sum_locked(tmem_context *ctx, const tmem_type *type, int32_t role) {
    counts c = {0, 0, 0};
    for (size_t i = 0; i < ctx->nheaps; i++) {
        tmem_heap *h = ctx->heaps[i];
        if (type && tmem__heap_type(h) != type) continue;
        tmem__heap_acct *l = tmem__heap_acct_of(h);
        add_counts(&c, type ? &l->type : &l->roles[role]);
    }
    add_counts(&c, type ? &type->acct.sum : &ctx->roles[role].sum);
    return c;
}

static void acct_read(tmem_context *ctx, const tmem_type *type, int32_t role, tmem_stat *in_use, uint64_t *allocs,
                      uint64_t *frees) {
    pthread_mutex_lock(&ctx->heaps_lock);
    counts c = sum_locked(ctx, type, role);
    pthread_mutex_unlock(&ctx->heaps_lock);
    const tmem__acct *a = type ? &type->acct : &ctx->roles[role];
    in_use->current = ld(&a->cur);
    in_use->peak = ld(&a->peak);
    if (in_use->peak < in_use->current) in_use->peak = in_use->current; /* read between the add and the peak update */
    in_use->total = c.bytes_in;
    *allocs = c.count_in;
    *frees = c.count_out < c.count_in ? c.count_out : c.count_in;
}

uint64_t tmem__type_committed(const tmem_type *type) {
    tmem_type *t = (tmem_type *)type;
    tmem__context_lock(t->ctx);
    uint64_t c = t->committed;
    tmem__context_unlock(t->ctx);
    return c;
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
    acct_read(t->ctx, t, -1, &out->in_use, &out->alloc_count, &out->free_count);
    out->live_count = out->alloc_count - out->free_count;
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
    uint64_t freed;
    acct_read(ctx, NULL, (int32_t)role, &out->in_use, &out->alloc_count, &freed);
    out->live_count = out->alloc_count - freed;
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
        counts c = sum_locked(ctx, t, -1);
        if (st == TMEM_OK && (c.count_out > c.count_in || tmem__acct_current(&t->acct) > c.bytes_in)) st = tmem__err(TMEM_E_CORRUPT);
        sum += t->committed;
    }
    if (st == TMEM_OK && (sum != ctx->committed || ctx->committed_peak < ctx->committed)) st = tmem__err(TMEM_E_CORRUPT);
    /* Roles: each role's bytes come from some type, so the role sum cannot
     * exceed the type sum (allocations without a role count only by type). */
    uint64_t role_sum = 0, type_sum = 0;
    for (unsigned r = 0; r < TMEM_ROLE_MAX; r++) role_sum += tmem__acct_current(&ctx->roles[r]);
    for (uint32_t i = 0; i < ctx->ntypes; i++) type_sum += tmem__acct_current(&ctx->types[i]->acct);
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

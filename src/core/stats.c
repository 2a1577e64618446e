/*
 * Accounting: what is in use in live allocations (by type and by role), next
 * to what is committed (budget.c keeps that).
 *
 * Two paths. Heaps count their own allocations in a slot of their own
 * (internal.h: plain stores, no RMW, no shared line), attached here; these
 * are folded when stats are read, under the context lock (VMA's cheap /
 * expensive split: the hot path stays cheap, a read walks the slots).
 * Everything else (surfaces, mapped files, KV slabs, heap allocations with a
 * role other than the heap's) uses the shared counters: relaxed atomics.
 * A reader sees each counter exactly, though not a snapshot of all of them
 * at one instant; the in-use peak of a type or role is the sum of its
 * parts' peaks (exact with one heap, else an upper bound; see internal.h).
 */
#include <string.h>
#include "core/core.h"

static inline uint64_t ld(const _Atomic uint64_t *v) {
    return atomic_load_explicit((_Atomic uint64_t *)v, memory_order_relaxed);
}

static inline void acct_in(tmem__acct *a, uint64_t bytes) {
    uint64_t in = atomic_fetch_add_explicit(&a->bytes_in, bytes, memory_order_relaxed) + bytes;
    atomic_fetch_add_explicit(&a->count_in, 1, memory_order_relaxed);
    uint64_t out = ld(&a->bytes_out), now = in > out ? in - out : 0;
    uint64_t peak = ld(&a->peak);
    while (now > peak &&
           !atomic_compare_exchange_weak_explicit(&a->peak, &peak, now, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

static inline void acct_out(tmem__acct *a, uint64_t bytes) {
    atomic_fetch_add_explicit(&a->bytes_out, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->count_out, 1, memory_order_relaxed);
}

/* The folded counters of one type or one role. */
typedef struct acct_sum {
    uint64_t bytes, total, allocs, frees;
    uint64_t peak;       /* the reported peak: see fold() */
    uint64_t peaks;      /* shared part's peak + attached slots' peaks */
} acct_sum;

static inline uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* One attached slot into a fold. */
static void add_slot(acct_sum *out, const tmem__acct_slot *s) {
    uint64_t frees = tmem__slot_get(&s->frees), bytes = tmem__slot_get(&s->bytes);
    uint64_t allocs = tmem__slot_get(&s->allocs);
    out->bytes += bytes;
    out->total += tmem__slot_get(&s->total);
    out->allocs += allocs;
    out->frees += frees < allocs ? frees : allocs;
    out->peaks += max_u64(tmem__slot_get(&s->peak), bytes);
}

/* Shared counters + retired totals + the attached slots of `type` (or, with
 * type NULL, of `role`). Under the context lock. The peak: the greatest of
 * the retired peak and the sum of the live parts' peaks (each part's peak is
 * exact; their sum bounds the true peak from above). */
static void fold_parts(tmem_context *ctx, const tmem__acct *a, const tmem__acct_retired *r,
                       const tmem_type *type, int32_t role, bool device_only, acct_sum *out) {
    uint64_t cout = ld(&a->count_out), bout = ld(&a->bytes_out);
    uint64_t cin = ld(&a->count_in), bin = ld(&a->bytes_in);
    uint64_t shared = bin > bout ? bin - bout : 0;
    out->bytes = shared + r->bytes;
    out->total = bin + r->total;
    out->allocs = cin + r->allocs;
    out->frees = (cout < cin ? cout : cin) + r->frees;
    out->peaks = max_u64(ld(&a->peak), shared); /* read between the add and the peak update */
    for (const tmem__acct_slot *s = ctx->slots; s; s = s->next) {
        if (type ? s->type != type : s->role != role) continue;
        if (device_only && !tmem__placement_is_device(s->type->placement)) continue;
        add_slot(out, s);
    }
    out->peak = max_u64(max_u64(r->peak, out->peaks), out->bytes);
}

static void fold(tmem_context *ctx, const tmem__acct *a, const tmem__acct_retired *r,
                 const tmem_type *type, int32_t role, acct_sum *out) {
    fold_parts(ctx, a, r, type, role, false, out);
}

/* The device part of a role (tmem__placement_is_device types): its shared
 * device counters plus the slots of device-type heaps of that role. Under
 * the context lock. Retired slots are not kept apart by placement, so a
 * destroyed device heap's totals leave the device part (its live bytes are
 * zero by then). */
static void fold_device(tmem_context *ctx, int32_t role, acct_sum *out) {
    static const tmem__acct_retired none;
    fold_parts(ctx, &ctx->roles_device[role], &none, NULL, role, true, out);
}

static void sum_to_stats(const acct_sum *f, tmem_stat *in_use, uint64_t *allocs, uint64_t *frees) {
    in_use->current = f->bytes;
    in_use->total = f->total;
    in_use->peak = f->peak;
    *allocs = f->allocs;
    *frees = f->frees;
}

void tmem__account_attach(tmem_type *type, int32_t role, tmem__acct_slot *slot) {
    tmem_context *ctx = type->ctx;
    slot->type = type;
    slot->role = role;
    tmem__context_lock(ctx);
    slot->prev = NULL;
    slot->next = ctx->slots;
    if (ctx->slots) ctx->slots->prev = slot;
    ctx->slots = slot;
    tmem__context_unlock(ctx);
}

static void retire(tmem__acct_retired *r, const acct_sum *before, const tmem__acct_slot *s) {
    r->bytes += tmem__slot_get(&s->bytes);
    r->total += tmem__slot_get(&s->total);
    r->allocs += tmem__slot_get(&s->allocs);
    r->frees += tmem__slot_get(&s->frees);
    r->peak = max_u64(r->peak, before->peaks); /* the peak as readers saw it, this slot included */
}

void tmem__account_detach(tmem__acct_slot *slot) {
    tmem_type *t = slot->type;
    if (!t) return;
    tmem_context *ctx = t->ctx;
    tmem__context_lock(ctx);
    acct_sum ts, rs;
    fold(ctx, &t->acct, &t->retired, t, 0, &ts);
    fold(ctx, &ctx->roles[slot->role], &ctx->roles_retired[slot->role], NULL, slot->role, &rs);
    retire(&t->retired, &ts, slot);
    retire(&ctx->roles_retired[slot->role], &rs, slot);
    if (slot->prev) slot->prev->next = slot->next;
    else ctx->slots = slot->next;
    if (slot->next) slot->next->prev = slot->prev;
    slot->prev = slot->next = NULL;
    slot->type = NULL;
    tmem__context_unlock(ctx);
}

void tmem__account_alloc(tmem_type *type, int32_t role, uint64_t bytes) {
    acct_in(&type->acct, bytes);
    if (role < 0 || role >= TMEM_ROLE_MAX) return;
    acct_in(&type->ctx->roles[role], bytes);
    if (tmem__placement_is_device(type->placement)) acct_in(&type->ctx->roles_device[role], bytes);
}

/* Role before type (the reverse of alloc), so a quiescent-ish reader never
 * sees a role holding bytes its type no longer has. */
void tmem__account_free(tmem_type *type, int32_t role, uint64_t bytes) {
    if (role >= 0 && role < TMEM_ROLE_MAX) {
        if (tmem__placement_is_device(type->placement))
            acct_out(&type->ctx->roles_device[role], bytes);
        acct_out(&type->ctx->roles[role], bytes);
    }
    acct_out(&type->acct, bytes);
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
    acct_sum f;
    fold(t->ctx, &t->acct, &t->retired, t, 0, &f);
    tmem__context_unlock(t->ctx);
    sum_to_stats(&f, &out->in_use, &out->alloc_count, &out->free_count);
    out->live_count = out->alloc_count - out->free_count;
    out->reclaimed = atomic_load_explicit(&t->reclaimed, memory_order_relaxed);
    /* Device memory is not the process's dirty memory. */
    if (t->placement == TMEM_PLACEMENT_DEVICE) out->dirty = 0;
}

void tmem__context_counters_read(tmem_context *ctx, tmem__context_counters *out) {
    memset(out, 0, sizeof *out);
    tmem__context_lock(ctx);
    out->budget = ctx->budget;
    out->committed = ctx->committed;
    out->committed_peak = ctx->committed_peak;
    out->committed_total = ctx->committed_total;
    out->committed_clean = ctx->committed_clean;
    out->denials = ctx->denials;
    out->warning_fraction = ctx->warning_fraction;
    out->critical_fraction = ctx->critical_fraction;
    tmem__context_unlock(ctx);
    out->reclaimed = atomic_load_explicit(&ctx->reclaimed, memory_order_relaxed);
    out->pressure = tmem__pressure_level(ctx);
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
    acct_sum f;
    acct_sum dev;
    tmem__context_lock(ctx);
    fold(ctx, &ctx->roles[role], &ctx->roles_retired[role], NULL, (int32_t)role, &f);
    fold_device(ctx, (int32_t)role, &dev);
    tmem__context_unlock(ctx);
    sum_to_stats(&f, &out->in_use, &out->alloc_count, &freed);
    out->live_count = out->alloc_count - freed;
    out->device_in_use.current = dev.bytes;
    out->device_in_use.total = dev.total;
    out->device_in_use.peak = dev.peak;
    out->device_live_count = dev.allocs - dev.frees;
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
 * context, roles against types, and each member's own check (heaps). The in-use
 * comparison assumes no allocation is in flight on another thread. */
tmem_status tmem_context_check(tmem_context *ctx) {
    if (!tmem__context_valid(ctx)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = TMEM_OK;
    tmem__os_mutex_lock(&ctx->members_lock);
    tmem__context_lock(ctx);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < ctx->ntypes && st == TMEM_OK; i++) {
        const tmem_type *t = ctx->types[i];
        if (t->ctx != ctx || t->index != i || t->magic != TMEM__TYPE_MAGIC) st = tmem__err(TMEM_E_CORRUPT);
        else st = tmem__pool_check(t);
        if (st == TMEM_OK &&
            (t->committed_peak < t->committed || t->committed_total < t->committed))
            st = tmem__err(TMEM_E_CORRUPT);
        /* committed > budget is legal: a budget lowered below what is
         * committed only stops new commits (tmem_type_set_budget). */
        if (st == TMEM_OK &&
            (ld(&t->acct.count_out) > ld(&t->acct.count_in) ||
             ld(&t->acct.bytes_out) > ld(&t->acct.bytes_in)))
            st = tmem__err(TMEM_E_CORRUPT);
        sum += t->committed;
    }
    if (st == TMEM_OK && (sum != ctx->committed || ctx->committed_peak < ctx->committed))
        st = tmem__err(TMEM_E_CORRUPT);
    /* Roles: each role's bytes come from some type, so the role sum cannot
     * exceed the type sum (allocations without a role count only by type). */
    uint64_t role_sum = 0, type_sum = 0, role_device_sum = 0, type_device_sum = 0;
    for (unsigned r = 0; r < TMEM_ROLE_MAX; r++) {
        acct_sum f, dev;
        fold(ctx, &ctx->roles[r], &ctx->roles_retired[r], NULL, (int32_t)r, &f);
        fold_device(ctx, (int32_t)r, &dev);
        if (st == TMEM_OK && dev.bytes > f.bytes)
            st = tmem__err(TMEM_E_CORRUPT); /* a part beyond its whole */
        role_sum += f.bytes;
        role_device_sum += dev.bytes;
    }
    for (uint32_t i = 0; i < ctx->ntypes; i++) {
        acct_sum f;
        fold(ctx, &ctx->types[i]->acct, &ctx->types[i]->retired, ctx->types[i], 0, &f);
        type_sum += f.bytes;
        if (tmem__placement_is_device(ctx->types[i]->placement)) type_device_sum += f.bytes;
    }
    if (st == TMEM_OK && role_sum > type_sum) st = tmem__err(TMEM_E_CORRUPT);
    if (st == TMEM_OK && role_device_sum > type_device_sum) st = tmem__err(TMEM_E_CORRUPT);
    /* every slot: its frees follow its allocations, its bytes were allocated */
    for (const tmem__acct_slot *s = ctx->slots; s && st == TMEM_OK; s = s->next) {
        uint64_t bytes = tmem__slot_get(&s->bytes);
        bool ok = tmem__slot_get(&s->frees) <= tmem__slot_get(&s->allocs) &&
                  bytes <= tmem__slot_get(&s->total) && bytes <= tmem__slot_get(&s->peak) &&
                  s->type && s->type->ctx == ctx && (unsigned)s->role < TMEM_ROLE_MAX;
        if (!ok) st = tmem__err(TMEM_E_CORRUPT);
    }
    tmem__context_unlock(ctx);
    for (size_t i = 0; i < ctx->nmembers && st == TMEM_OK; i++) {
        const tmem__member *m = &ctx->members[i];
        const tmem_type *mt = m->ops->type(m->object);
        if (!mt || mt->ctx != ctx) st = tmem__err(TMEM_E_CORRUPT);
        else if (m->ops->check) st = m->ops->check(m->object);
    }
    tmem__os_mutex_unlock(&ctx->members_lock);
    return st == TMEM_OK ? TMEM_OK : tmem__err(TMEM_E_CORRUPT);
}

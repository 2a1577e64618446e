/*
 * Internal contract between the layers above the OS: core <-> heap <-> trace
 * <-> surface/kv/model. Nothing here is public; names are tmem__<module>_*.
 *
 * Groups follow the file that defines them (mimalloc's internal.h habit).
 */
#ifndef TMEM_CORE_INTERNAL_H
#define TMEM_CORE_INTERNAL_H

#include <stdatomic.h>
#include "base/base.h"
#include "backend/backend.h"
#include "typedmem/context.h"

/* ---- context (context.c) ---- */
/* Magic checks: a live context / a live type of a live context. */
bool tmem__context_valid(const tmem_context *ctx);
bool tmem__type_valid(const tmem_type *type);
/* Metadata allocation through the context's allocator. */
void *tmem__malloc(tmem_context *ctx, size_t size);
void *tmem__calloc(tmem_context *ctx, size_t count, size_t size);
void tmem__free(tmem_context *ctx, void *ptr, size_t size);
/* The context's lock (a plain mutex); used for registries and budgets. */
void tmem__context_lock(tmem_context *ctx);
void tmem__context_unlock(tmem_context *ctx);
bool tmem__context_debug(const tmem_context *ctx);
/* Members: objects of upper layers (heaps) that the context purges, checks
 * and destroys through a small vtable, without knowing what they are.
 * Lock order: the member registry lock -> a member's own lock -> the context
 * lock, so a member's destroy must call tmem__context_remove_member while NOT
 * holding its own lock (reclaim may be purging it under the registry lock). */
typedef struct tmem__member_ops {
    /* At tmem_context_destroy, newest first, after the owned objects below;
     * it unregisters the member. */
    void (*destroy)(void *object);
    /* tmem_context_check: the member's own invariants (NULL: none). */
    tmem_status (*check)(void *object);
    /* Reclaim, before the reclaim steps of priority >= 0, in the order of
     * the members' types' reclaim priority: give back what can be dropped
     * (a VOLATILE heap's pages), return the bytes. Runs on whichever thread
     * hit a budget, maybe inside another member's call: must not block on
     * the member's own lock (trylock, return 0 when busy), and uncommits
     * through tmem__pool_decommit so the bytes come off the budget. NULL:
     * nothing to give. */
    uint64_t (*purge)(void *object);
    /* The type the member draws from (purge order, check). */
    tmem_type *(*type)(const void *object);
} tmem__member_ops;
tmem_status tmem__context_add_member(tmem_context *ctx, void *object, const tmem__member_ops *ops);
void tmem__context_remove_member(tmem_context *ctx, void *object);
/* Call visit(object, arg) for every member registered with ops, oldest
 * first, under the registry lock (visit must not add or remove members). */
void tmem__context_each_member(tmem_context *ctx, const tmem__member_ops *ops,
                               void (*visit)(void *object, void *arg), void *arg);
/* Cleanup hooks for objects owned by other layers (surfaces, kv caches,
 * models): run in reverse order at tmem_context_destroy. */
typedef void (*tmem__destroy_fn)(void *object);
tmem_status tmem__context_add_owned(tmem_context *ctx, void *object, tmem__destroy_fn fn);
void tmem__context_remove_owned(tmem_context *ctx, void *object);
/* The newest owned object registered with destroy function fn, or NULL: a
 * layer's per-context singleton (the surface registry) without a field in the
 * context. Call with the context lock held when the answer decides whether to
 * add one. */
void *tmem__context_find_owned(tmem_context *ctx, tmem__destroy_fn fn);

/* Register a backend for a placement (context.c; the interface is
 * backend/backend.h). NULL unregisters: types created afterwards with that placement get TMEM_E_UNSUPPORTED. Types
 * already created keep the backend they reserved with, so a backend must
 * outlive the context. */
tmem_status tmem__context_set_backend(tmem_context *ctx, tmem_placement placement,
                                      const tmem__backend *be);
const tmem__backend *tmem__context_backend(const tmem_context *ctx, tmem_placement placement);

/* ---- types and pools (type.c, pool.c) ---- */
tmem_context *tmem__type_context(const tmem_type *type);
uint32_t tmem__type_index(const tmem_type *type);
tmem_placement tmem__type_placement(const tmem_type *type);
uint32_t tmem__type_flags(const tmem_type *type);
/* Take a sub-range of the type's reserved pool for a heap (first fit over the
 * pool's free ranges). TMEM_E_FULL when the reserve has no room;
 * TMEM_E_ALIGNMENT when align is not a power of two or exceeds what the
 * pool's base guarantees (2 MiB on the host). Size rounds up to the granule. */
tmem_status tmem__pool_carve(tmem_type *type, uint64_t size, uint64_t align, uint64_t *out_offset);
void tmem__pool_uncarve(tmem_type *type, uint64_t offset, uint64_t size);
/* Pool functions take the context lock themselves: never call them while
 * holding tmem__context_lock (a budget crossed then cannot run reclaim and
 * fails with TMEM_E_BUDGET). */
/* Commit the pages of [offset, offset+size) not yet committed, charging only
 * the new bytes to the type and context budgets; runs reclaim steps first if
 * a budget would be crossed; TMEM_E_BUDGET if still over (nothing changed). */
tmem_status tmem__pool_commit(tmem_type *type, uint64_t offset, uint64_t size);
/* Decommit the whole pages inside [offset, offset+size) and uncharge them. */
void tmem__pool_decommit(tmem_type *type, uint64_t offset, uint64_t size);
/* Advise the backend on whole committed pages (purgeable heaps): VOLATILE ->
 * MADV_FREE, EMPTY -> MADV_DONTNEED. Stays committed and charged.
 * TMEM_E_INVALID_ARG for a range outside the pool or an unknown advice. */
tmem_status tmem__pool_advise(tmem_type *type, uint64_t offset, uint64_t size,
                              tmem__advice advice);
/* Host address for an offset of the pool; NULL for device placements. */
void *tmem__pool_ptr(const tmem_type *type, uint64_t offset);
/* Bytes of [offset, offset+size) resident in memory now (committed granules
 * only; mincore on the host). For purgeable heaps: "were the contents lost?".
 * TMEM_E_UNSUPPORTED when the backend cannot tell. */
tmem_status tmem__pool_residency(tmem_type *type, uint64_t offset, uint64_t size, uint64_t *out_bytes);
/* Is memory plentiful for `type`: pressure NORMAL and at least `bytes` of
 * headroom under the context budget and the type's own (if any)? One short
 * lock; for a heap's decommit policy (heap/commit.c). */
bool tmem__budget_has_room(tmem_type *type, uint64_t bytes);
/* Page granule of commits in this pool. */
uint64_t tmem__pool_granule(const tmem_type *type);
/* Charge / uncharge bytes that are committed outside a pool (a surface's
 * memfd, a mapped model file): same budget and reclaim rules as a commit.
 * `clean` bytes are file-backed and go to the clean counter. */
tmem_status tmem__type_charge(tmem_type *type, uint64_t bytes, bool clean);
void tmem__type_uncharge(tmem_type *type, uint64_t bytes, bool clean);

/* ---- accounting (stats.c) ---- */
/* The context's budget counters in one consistent read (under the context
 * lock), for reports above core (src/stats). */
typedef struct tmem__context_counters {
    uint64_t budget;                  /* UINT64_MAX: none */
    uint64_t committed, committed_peak, committed_total;
    uint64_t committed_clean;         /* of committed: clean file maps, outside the budget */
    uint64_t denials, reclaimed;
    float warning_fraction, critical_fraction;
    tmem_pressure pressure;
} tmem__context_counters;
void tmem__context_counters_read(tmem_context *ctx, tmem__context_counters *out);
/* "normal", "warning", "critical" (pressure.c). */
extern const char *const tmem__pressure_names[3];
/* In-use bytes of live allocations by type and role (not commits), through
 * the shared counters: relaxed atomic RMWs on lines every user of the type
 * touches. For callers off the hot path (surfaces, mapped files, KV slabs,
 * a heap's allocations with a role other than its own). */
void tmem__account_alloc(tmem_type *type, int32_t role, uint64_t bytes);
void tmem__account_free(tmem_type *type, int32_t role, uint64_t bytes);

/* An accounting slot: the counters of one allocator (a heap) for one type
 * and role, written only by the allocator's owner (the one thread using it,
 * or under its own lock) with plain loads and stores, no RMW, on a line no
 * other heap writes (mimalloc's thread-local stats). Readers (type and role
 * stats) fold every attached slot with relaxed loads, under the context
 * lock; a detached slot folds into the type's and role's retired totals.
 * Exactness: current bytes, totals and counts fold exactly. The in-use peak
 * of a type (role) is the sum of its parts' peaks: exact for one heap,
 * otherwise an upper bound of the true peak (equal when the heaps peak
 * together), as mimalloc's merged peaks. Budgets do not use these counters:
 * they charge committed bytes, exactly, under the context lock. */
typedef struct tmem__acct_slot {
    _Atomic uint64_t bytes;               /* in use now */
    _Atomic uint64_t peak, total;         /* most in use; bytes ever allocated */
    _Atomic uint64_t allocs, frees;
    /* owner: stats.c, under the context lock */
    tmem_type *type;
    int32_t role;                         /* 0..TMEM_ROLE_MAX-1 */
    struct tmem__acct_slot *prev, *next;  /* the context's attached slots */
} tmem__acct_slot;

static inline uint64_t tmem__slot_get(const _Atomic uint64_t *v) {
    return atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)v, memory_order_relaxed);
}
static inline void tmem__slot_set(_Atomic uint64_t *v, uint64_t x) {
    atomic_store_explicit(v, x, memory_order_relaxed);
}
static inline void tmem__slot_alloc(tmem__acct_slot *s, uint64_t bytes) {
    uint64_t now = tmem__slot_get(&s->bytes) + bytes;
    tmem__slot_set(&s->bytes, now);
    if (now > tmem__slot_get(&s->peak)) tmem__slot_set(&s->peak, now);
    tmem__slot_set(&s->total, tmem__slot_get(&s->total) + bytes);
    tmem__slot_set(&s->allocs, tmem__slot_get(&s->allocs) + 1);
}
static inline void tmem__slot_free(tmem__acct_slot *s, uint64_t bytes) {
    tmem__slot_set(&s->bytes, tmem__slot_get(&s->bytes) - bytes);
    tmem__slot_set(&s->frees, tmem__slot_get(&s->frees) + 1);
}
/* Attach a zeroed slot for (type, role) (role 0..TMEM_ROLE_MAX-1). Cannot
 * fail. Detach folds it into the retired totals; call it once nothing is
 * counted through the slot any more (all its allocations freed). */
void tmem__account_attach(tmem_type *type, int32_t role, tmem__acct_slot *slot);
void tmem__account_detach(tmem__acct_slot *slot);


/* ---- trace events: cheap when off ---- */
typedef enum tmem__trace_kind {
    TMEM__TRACE_ALLOC, TMEM__TRACE_FREE, TMEM__TRACE_ALIAS, TMEM__TRACE_PURGE,
    TMEM__TRACE_COMMIT, TMEM__TRACE_DECOMMIT, TMEM__TRACE_LOCK,
    TMEM__TRACE_UNLOCK, TMEM__TRACE_EVICT, TMEM__TRACE_BUDGET_DENIED,
    TMEM__TRACE_PRESSURE, TMEM__TRACE_MARK,
    /* A heap reset or destroyed: every live allocation of `type` in
     * [offset, offset + size) is gone (offset = heap base, size = its extent),
     * without one FREE per allocation. */
    TMEM__TRACE_RESET,
    TMEM__TRACE_KIND_COUNT /* same values as the public tmem_trace_kind */
} tmem__trace_kind;
/* The trace hook. The trace layer keeps its state in the context (NULL when
 * tracing is off) and gives the function that records an event: core and
 * every layer emit through this pointer, never by calling src/trace. Every
 * tmem_context starts with this head (core.h), so the hot paths read it
 * inline: one load and one branch when tracing is off. The tracer object is
 * owned by src/trace (registered with tmem__context_add_owned, whose hook
 * stops it and clears the pointer). */
struct tmem__tracer;
typedef void (*tmem__trace_emit_fn)(struct tmem__tracer *tracer, tmem__trace_kind kind,
                                    const tmem_type *type, int32_t role, uint64_t size,
                                    uint64_t offset, const char *name);
typedef struct tmem__context_head {
    _Atomic(struct tmem__tracer *) tracer;
    _Atomic(tmem__trace_emit_fn) emit; /* set before tracer is published */
} tmem__context_head;
static inline tmem__context_head *tmem__context_head_of(const tmem_context *ctx) {
    return (tmem__context_head *)(void *)(uintptr_t)ctx;
}
static inline struct tmem__tracer *tmem__context_tracer(const tmem_context *ctx) {
    return atomic_load_explicit(&tmem__context_head_of(ctx)->tracer, memory_order_acquire);
}
/* Publish (tracer, emit) or clear (NULL, NULL) the hook (context.c). */
void tmem__context_set_tracer(tmem_context *ctx, struct tmem__tracer *tracer,
                              tmem__trace_emit_fn emit);
/* Record an event if tracing is on for ctx (one branch when off). type may
 * be NULL; role -1 = none; name may be NULL (copied, bounded). What size and
 * offset mean per kind is in include/typedmem/trace.h (tmem_trace_kind); a
 * FREE must carry the type and offset of its ALLOC (pool offsets), so the
 * report can match them. */
static inline void tmem__trace(tmem_context *ctx, tmem__trace_kind kind, const tmem_type *type,
                               int32_t role, uint64_t size, uint64_t offset, const char *name) {
    struct tmem__tracer *tracer = tmem__context_tracer(ctx);
    if (__builtin_expect(tracer != NULL, 0)) {
        tmem__context_head *h = tmem__context_head_of(ctx);
        tmem__trace_emit_fn emit = atomic_load_explicit(&h->emit, memory_order_relaxed);
        emit(tracer, kind, type, role, size, offset, name);
    }
}

/* ---- config (config.c) ---- */
/* Load the file named by env TMEM_CONFIG into ctx (TMEM_CONTEXT_READ_ENV);
 * TMEM_OK when the variable is unset or empty. */
tmem_status tmem__config_load_env(tmem_context *ctx);

#endif /* TMEM_CORE_INTERNAL_H */

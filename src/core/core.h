/*
 * Private to src/core/: the context, type and pool structures and the
 * functions the core files share. Other layers use internal.h only.
 *
 * Locks (see docs/core.md, "Threads"):
 *  - ctx->lock (recursive): type registry, role policy, pools (bitmaps, carve
 *    lists), budget counters, reclaim step list. Never held across a system
 *    call: a pool commit reserves its bytes under the lock (admission), makes
 *    the OS calls unlocked, then publishes (bits set, bytes charged) or rolls
 *    back the reservation. Never held while user code (reclaim or pressure
 *    callbacks) runs.
 *  - ctx->members_lock: the member registry (heaps, through their vtable);
 *    held while members are purged so one cannot be unregistered under the
 *    purge.
 *  Order: members_lock -> (a member's own lock) -> ctx->lock.
 *  Accounting of allocations (in_use, counts): each heap counts in its own
 *  slot (internal.h) with plain stores; readers fold the slots under
 *  ctx->lock. Other callers use the shared counters (relaxed atomics).
 */
#ifndef TMEM_CORE_CORE_H
#define TMEM_CORE_CORE_H

#include "os/os.h"
#include <stdatomic.h>
#include "core/internal.h"
#include "backend/backend.h"

#define TMEM__MAX_TYPES 64
#define TMEM__MAX_RECLAIM 32
#define TMEM__ROLE_NAME_MAX 32
#define TMEM__CTX_MAGIC 0x544d4358u  /* "TMCX" */
#define TMEM__TYPE_MAGIC 0x544d5459u /* "TMTY" */

/* Default reserve of a type whose size nothing else fixes: the context budget
 * clamped to this (address space is plentiful, not infinite). */
#define TMEM__DEFAULT_RESERVE_CAP (256ull << 30)
/* Largest reserve accepted: well inside a 47-bit user address space. */
#define TMEM__MAX_RESERVE (1ull << 46)

/* Allocation accounting, on every heap's hot path: two relaxed RMWs per
 * allocation and two per free. Current = in - out (bytes and counts); total
 * is `bytes_in`. The peak is updated from the allocating side with a relaxed
 * read of `bytes_out`, so under concurrent frees it may overstate by the
 * bytes in flight; single-threaded it is exact. */
typedef struct tmem__acct {
    _Atomic uint64_t bytes_in, count_in;   /* cumulative allocated */
    _Atomic uint64_t bytes_out, count_out; /* cumulative freed */
    _Atomic uint64_t peak;
} tmem__acct;

/* What detached accounting slots (internal.h) leave behind, under ctx->lock:
 * their totals and counts, and the greatest sum of peaks seen at a detach
 * (so the folded peak never drops when a heap goes). */
typedef struct tmem__acct_retired {
    uint64_t bytes, total, allocs, frees, peak;
} tmem__acct_retired;

/* ---- pool (pool.c) ----
 * Commits are tracked with one bit per granule in a two-level bitmap: the top
 * level is an array of leaves of TMEM__LEAF_BITS bits, allocated the first
 * time a page in their span is committed, so a 256 GiB reserve costs a few
 * KiB until it is used. */
#define TMEM__LEAF_WORDS 512u
#define TMEM__LEAF_BITS (TMEM__LEAF_WORDS * 64u)

typedef struct tmem__range {
    uint64_t offset, size;
} tmem__range;

typedef struct tmem__pool {
    const tmem__backend *backend;
    tmem__region region;
    char *host_base;           /* region.base, cached for tmem__pool_ptr */
    uint32_t granule_shift;
    uint64_t pages;            /* region.size >> granule_shift */
    uint64_t **leaves;         /* [nleaves], NULL = nothing committed there */
    uint32_t *leaf_count;      /* set bits per leaf */
    size_t nleaves;
    uint64_t committed_pages;
    /* Carving: sorted, coalesced free ranges. Capacity is kept at
     * ncarved + 2 so uncarve never allocates (and never fails). */
    tmem__range *free;
    size_t nfree, capfree;
    size_t ncarved;
    uint64_t carved_bytes;
} tmem__pool;

struct tmem_type {
    uint32_t magic;
    uint32_t index;
    tmem_context *ctx;
    char name[64];
    tmem_placement placement;
    tmem_lifetime lifetime;
    uint32_t flags;
    uint64_t reserve_asked;    /* desc->reserve as given (0 = default) */
    int32_t reclaim_priority;
    tmem__pool pool;
    /* Under ctx->lock. committed = pool pages + charged_dirty + charged_clean. */
    uint64_t budget;
    uint64_t committed, committed_peak, committed_total;
    uint64_t reserved;         /* admitted, OS commit in flight (budget.c) */
    uint64_t charged_dirty, charged_clean;
    uint64_t denials;
    /* Bumped from reclaim frames (no lock needed for the reader's purpose,
     * but kept atomic so TSan sees no race). */
    _Atomic uint64_t reclaimed;
    tmem__acct acct; /* accounting of live allocations outside heap slots */
    tmem__acct_retired retired; /* detached heap slots (under ctx->lock) */
};


typedef struct tmem__reclaim_step {
    int32_t priority;
    uint32_t seq;              /* insertion order: ties run oldest first */
    tmem_reclaim_fn fn;
    void *user;
    uint32_t running;          /* callbacks in flight (under ctx->lock) */
    bool removed;
} tmem__reclaim_step;

typedef struct tmem__owned {
    void *object;
    tmem__destroy_fn fn;
} tmem__owned;

typedef struct tmem__member {
    void *object;
    const tmem__member_ops *ops;
} tmem__member;

/* Per destroy function: how many owned objects have it and the newest of
 * them (NULL = not known: find it by a walk), so a layer's singleton (the
 * surface registry, the tracer) is found in O(1) however many surfaces or
 * caches are owned. Full table: lookups walk the owned list (correct). */
#define TMEM__OWNED_KINDS 16
typedef struct tmem__owned_kind {
    tmem__destroy_fn fn;
    size_t count;
    void *newest;
} tmem__owned_kind;

struct tmem_context {
    tmem__context_head head;   /* first: read inline by tmem__trace (internal.h) */
    uint32_t magic;
    uint32_t flags;
    tmem_allocator allocator;
    tmem__os_mutex lock;      /* recursive */
    uint32_t lock_depth;       /* owner-only: depth of ctx->lock */
    tmem__os_mutex members_lock;
    tmem__os_cond reclaim_cond;

    /* budget (under lock) */
    uint64_t budget;
    uint64_t committed, committed_peak, committed_total;
    /* clean charges among committed (read-only file maps): outside the
     * budget, which counts what a footprint limit counts */
    uint64_t committed_clean;
    uint64_t reserved;         /* admitted, OS commit in flight (budget.c) */
    uint64_t denials;
    _Atomic uint64_t reclaimed;
    uint64_t default_reserve;

    /* pressure */
    float warning_fraction, critical_fraction;
    _Atomic int level_budget;  /* from committed/budget */
    _Atomic int level_os;      /* from the last tmem_context_poll_os_pressure */
    _Atomic int level_device;  /* from the last GPU driver budget poll (typedmem_gpu) */
    _Atomic int notifying;
    int last_notified;         /* only touched by the notifying thread */
    tmem_pressure_fn pressure_fn;   /* under lock */
    void *pressure_user;
    uint64_t last_events_high; /* under lock */
    bool events_seen;

    /* reclaim steps (under lock), sorted by (priority, seq) */
    tmem__reclaim_step steps[TMEM__MAX_RECLAIM];
    uint32_t nsteps;
    uint32_t next_seq;

    /* types and roles (under lock; types are never removed before destroy) */
    tmem_type *types[TMEM__MAX_TYPES];
    uint32_t ntypes;
    tmem_type *role_type[TMEM_ROLE_MAX];
    char role_names[TMEM_ROLE_MAX][TMEM__ROLE_NAME_MAX];
    bool role_defined[TMEM_ROLE_MAX];
    tmem__acct roles[TMEM_ROLE_MAX];
    tmem__acct_retired roles_retired[TMEM_ROLE_MAX];
    tmem__acct_slot *slots;    /* attached accounting slots (under lock) */
    /* the part of roles[] allocated in device types (tmem__placement_is_device) */
    tmem__acct roles_device[TMEM_ROLE_MAX];

    /* members: upper layers' objects with hooks (under members_lock) */
    tmem__member *members;
    size_t nmembers, capmembers;

    /* owned objects of other layers (under lock) */
    tmem__owned *owned;
    size_t nowned, capowned;
    tmem__owned_kind owned_kinds[TMEM__OWNED_KINDS];

    const tmem__backend *backends[TMEM_PLACEMENT_COUNT];
};

/* ---- context.c ---- */
/* Grow a metadata array to hold at least `want` elements of `elem` bytes. */
tmem_status tmem__grow(tmem_context *ctx, void **arr, size_t *cap, size_t want, size_t elem);

/* ---- pool.c ---- */
tmem_status tmem__pool_init(tmem_type *type, uint64_t size);
void tmem__pool_release(tmem_type *type);
uint64_t tmem__pool_committed_bytes(const tmem_type *type);
/* Bytes of committed granules touched by [offset, offset+size). */
uint64_t tmem__pool_committed_in(tmem_type *type, uint64_t offset, uint64_t size);
/* Invariants of one pool (under ctx->lock). */
tmem_status tmem__pool_check(const tmem_type *type);

/* ---- type.c ---- */
/* Create a type (desc already validated); under no lock. */
tmem_status tmem__type_create(tmem_context *ctx, const tmem_type_desc *desc, tmem_type **out);
void tmem__type_destroy(tmem_type *type);

/* ---- budget.c ----
 * Charging:
 *   tmem__budget_admit(type, bytes)   lock held on return when TMEM_OK;
 *                                     runs reclaim (unlocked) if needed;
 *                                     TMEM_E_BUDGET: lock not held, counted
 *   then either charge at once (no OS work: tmem__budget_charge_locked), or
 *   tmem__budget_reserve_locked, unlock, do the OS work, lock, and
 *   tmem__budget_unreserve_locked + tmem__budget_charge_locked (published)
 *   or tmem__budget_unreserve_locked alone (rolled back). Reserved bytes
 *   count against the budgets like committed ones, so two threads cannot
 *   both be admitted into the same headroom.
 * `bytes_fn` recomputes the bytes still needed after a reclaim round (the
 * pages a reclaim freed may be the very ones being committed). */
typedef uint64_t (*tmem__need_fn)(tmem_type *type, void *arg);
tmem_status tmem__budget_admit(tmem_type *type, tmem__need_fn need, void *arg, uint64_t *out_bytes);
void tmem__budget_charge_locked(tmem_type *type, uint64_t bytes, bool clean, bool pool);
void tmem__budget_reserve_locked(tmem_type *type, uint64_t bytes);
void tmem__budget_unreserve_locked(tmem_type *type, uint64_t bytes);
void tmem__budget_uncharge_locked(tmem_type *type, uint64_t bytes, bool clean, bool pool);
/* Run the reclaim steps until `fits` holds or they are exhausted (no lock
 * held on entry or exit). Returns the bytes the steps reported. */
uint64_t tmem__reclaim_run(tmem_context *ctx, tmem_type *type, uint64_t needed,
                           bool (*fits)(tmem_context *, tmem_type *, void *), void *arg);
/* True when this thread is inside a reclaim step of ctx. */
bool tmem__reclaim_active(const tmem_context *ctx);

/* ---- pressure.c ---- */
/* Recompute the budget level (lock held). */
void tmem__pressure_update_locked(tmem_context *ctx);
/* Call the pressure callback if the level changed (no lock held). */
void tmem__pressure_notify(tmem_context *ctx);
tmem_pressure tmem__pressure_level(const tmem_context *ctx);
/* A device backend's level from its driver budget (tmem_gpu_poll_pressure):
 * stored, folded into the effective level, the callback run if it changed. */
void tmem__pressure_set_device(tmem_context *ctx, tmem_pressure level);
/* The context's warning / critical fractions. */
void tmem__pressure_fractions(tmem_context *ctx, float *warning, float *critical);

/* ---- stats.c ---- */
void tmem__type_stats_read(const tmem_type *type, tmem_type_stats *out);

#endif /* TMEM_CORE_CORE_H */

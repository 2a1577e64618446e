/**
 * @file context.h
 * @brief Context, memory types, roles, budgets, pressure and accounting.
 *
 * A context owns everything typedmem creates: types (with their pools), heaps,
 * surfaces, caches. There is no global mutable state outside a context.
 *
 * @par Threads
 * Unless a function says otherwise, calls on one context may be made from
 * several threads at once: the context serialises what it must. Destroying a
 * context while other calls on it are in flight is undefined.
 *
 * @par Quick start
 * @code
 *   tmem_context *ctx;
 *   tmem_context_desc cd = {0};            // zeroed = defaults
 *   cd.budget = 3ull << 30;                // 3 GiB for the whole process
 *   if (tmem_context_create(&cd, &ctx) != TMEM_OK) return;
 *   tmem_type *act;
 *   TMEM_IGNORE(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
 *   ...
 *   tmem_context_destroy(ctx);
 * @endcode
 */
#ifndef TYPEDMEM_CONTEXT_H
#define TYPEDMEM_CONTEXT_H

#include "status.h"
#include "system.h"
#include "placement.h"

TMEM_EXTERN_C_BEGIN

typedef struct tmem_context tmem_context;
typedef struct tmem_type tmem_type;

/** @brief What memory holds. Builtin roles are TMEM_ROLE_BUILTIN_FIRST ..
 *  TMEM_ROLE_BUILTIN_END-1; user roles TMEM_ROLE_USER_FIRST .. TMEM_ROLE_MAX-1,
 *  named with tmem_role_define(). 0 is TMEM_ROLE_DEFAULT, so a zeroed
 *  descriptor never charges a role by accident: in a tmem_alloc_desc it
 *  means the heap's role; in a tmem_heap_desc the first role the policy maps
 *  to the heap's type (or none). It is not a role of its own: the role
 *  functions answer TMEM_E_INVALID_ARG for it, traces record "no role". */
typedef enum tmem_role {
    TMEM_ROLE_DEFAULT = 0,
    TMEM_ROLE_WEIGHTS = 1,
    TMEM_ROLE_KV_CACHE,
    TMEM_ROLE_RECURRENT_STATE,
    TMEM_ROLE_ACTIVATION,
    TMEM_ROLE_SCRATCH,
    TMEM_ROLE_IMAGE,
    TMEM_ROLE_VISION_INTERMEDIATE,
    TMEM_ROLE_OUTPUT_TOKENS,
    TMEM_ROLE_BUILTIN_END,                                   /**< one past the last builtin role */
    TMEM_ROLE_BUILTIN_FIRST = TMEM_ROLE_WEIGHTS,
    TMEM_ROLE_BUILTIN_COUNT = TMEM_ROLE_BUILTIN_END - TMEM_ROLE_BUILTIN_FIRST, /**< 8 builtin roles */
    TMEM_ROLE_USER_FIRST = 16,
    TMEM_ROLE_MAX = 32
} tmem_role;

/* tmem_placement, tmem_lifetime, tmem_type_flag and their names:
 * typedmem/placement.h. */

/** @brief Describes a memory type. Zeroed fields take defaults. */
typedef struct tmem_type_desc {
    const char *name;          /**< "/memory/<name>" (letters, digits, "-_./"), at most 63 bytes; required, unique */
    tmem_placement placement;
    tmem_lifetime lifetime;
    uint32_t flags;            /**< tmem_type_flag bits */
    uint64_t reserve;          /**< address space reserved for the pool; 0 = budget,
                                    or the context budget if the type has none */
    uint64_t budget;           /**< most bytes this type may commit; 0 = no own limit */
    int32_t reclaim_priority;  /**< lower is reclaimed first under pressure */
} tmem_type_desc;

/** @brief Read-back of a type's description and state. */
typedef struct tmem_type_info {
    char name[64];
    tmem_placement placement;
    tmem_lifetime lifetime;
    uint32_t flags;
    uint64_t reserve;
    uint64_t budget;
    int32_t reclaim_priority;
    uint32_t index;            /**< stable small integer, 0..count-1, for tables */
} tmem_type_info;

/** @brief Pressure levels, from the context's committed bytes against its budget. */
typedef enum tmem_pressure {
    TMEM_PRESSURE_NORMAL = 0,
    TMEM_PRESSURE_WARNING,
    TMEM_PRESSURE_CRITICAL
} tmem_pressure;

/** @brief Called when the pressure level changes. Runs on the thread whose
 *  call changed it; must not destroy the context. */
typedef void (*tmem_pressure_fn)(tmem_context *ctx, tmem_pressure level, void *user);

/** @brief A reclaim step: try to give back at least `needed` bytes of `type`
 *  (or of any type when type is NULL). Returns the bytes actually released.
 *  Runs with no context lock held; it may free typedmem memory. */
typedef uint64_t (*tmem_reclaim_fn)(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user);

/** @brief Allocator for typedmem's own metadata. NULL fields = libc. */
typedef struct tmem_allocator {
    void *(*alloc)(size_t size, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} tmem_allocator;

/** @brief Context flags. */
typedef enum tmem_context_flag {
    TMEM_CONTEXT_NO_DEFAULT_TYPES = 1u << 0, /**< create no builtin types */
    TMEM_CONTEXT_DEBUG = 1u << 1,            /**< poison freed/aliased memory, overlap checks */
    TMEM_CONTEXT_READ_ENV = 1u << 2,         /**< load TMEM_CONFIG if set */
} tmem_context_flag;

/** @brief Describes a context. Zeroed = defaults. */
typedef struct tmem_context_desc {
    uint64_t budget;            /**< process budget in bytes; 0 = discovered limit
                                     (tmem_system_limits::effective). It counts
                                     dirty bytes, what a phone's footprint limit
                                     (jetsam) and a cgroup's OOM killer count:
                                     clean read-only file mappings (weights)
                                     are charged to their type, and its own
                                     budget, not to this one */
    uint32_t flags;             /**< tmem_context_flag bits */
    float warning_fraction;     /**< 0 = 0.80 */
    float critical_fraction;    /**< 0 = 0.95 */
    const char *config_path;    /**< optional config file, see docs/config.md */
    const tmem_allocator *allocator;
} tmem_context_desc;

/** @brief Where a config file went wrong. */
typedef struct tmem_config_error {
    uint32_t line;              /**< 1-based; 0 when not about one line */
    char message[160];
} tmem_config_error;

/** @brief {current, peak, total} counter; total is cumulative. */
typedef struct tmem_stat {
    uint64_t current;
    uint64_t peak;
    uint64_t total;
} tmem_stat;

/** @brief Accounting for one type. */
typedef struct tmem_type_stats {
    uint64_t reserved;          /**< address space reserved */
    tmem_stat committed;        /**< bytes committed (charged to budgets) */
    tmem_stat in_use;           /**< bytes handed out in live allocations: current and total
                                     exact; peak = the sum of the peaks of the type's heaps
                                     (each exact, see ::tmem_heap_info), exact for one heap,
                                     else an upper bound of the true peak (equal when the
                                     heaps peak together); it never drops when a heap goes */
    uint64_t alloc_count;       /**< allocations made */
    uint64_t free_count;
    uint64_t live_count;
    uint64_t dirty;             /**< committed bytes that are private dirty */
    uint64_t clean;             /**< file-backed clean bytes mapped */
    uint64_t budget_denials;    /**< requests refused with TMEM_E_BUDGET */
    uint64_t reclaimed;         /**< bytes given back by reclaim steps */
} tmem_type_stats;

/** @brief Accounting for one role, over every type it allocated in. */
typedef struct tmem_role_stats {
    tmem_stat in_use;           /**< as in ::tmem_type_stats: the peak is the sum of the peaks
                                     of the role's heaps (exact for one heap) */
    uint64_t alloc_count;
    uint64_t live_count;
    /** the part of in_use / live_count in device types (placements DEVICE and
     *  DEVICE_HOST_VISIBLE: a GPU backend's memory); zero without them */
    tmem_stat device_in_use;
    uint64_t device_live_count;
} tmem_role_stats;

/** @brief The cheap budget query (no walk). */
typedef struct tmem_budget_info {
    uint64_t budget;
    uint64_t committed;         /**< every committed byte, clean file maps included */
    uint64_t committed_clean;   /**< of which clean (read-only file mappings):
                                     outside the budget */
    uint64_t peak_committed;
    uint64_t available;         /**< budget - (committed - committed_clean), 0 if over */
    tmem_pressure pressure;
} tmem_budget_info;

/* ---- context ---- */

/** @brief Create a context.
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL out, fractions outside (0,1] or
 *          warning > critical) | TMEM_E_NO_MEMORY | TMEM_E_PARSE (config file;
 *          use tmem_config_load for the line) | TMEM_E_IO
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_context_create(const tmem_context_desc *desc, tmem_context **out);

/** @brief Destroy a context and everything it owns. NULL is a no-op.
 *  @par Threads externally synchronized: no other call on ctx may be in flight. */
TMEM_API void tmem_context_destroy(tmem_context *ctx);

/** @brief Cheap budget read: budget, committed, peak, pressure level.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_context_budget(tmem_context *ctx, tmem_budget_info *out);

/** @brief Change the process budget. Lowering it below what is committed runs
 *  reclaim; if that is not enough the budget still changes and new commits fail.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (invalid ctx, budget 0: a context
 *          always has a budget) */
TMEM_API TMEM_NODISCARD tmem_status tmem_context_set_budget(tmem_context *ctx, uint64_t budget);

/** @brief Set the pressure callback (NULL to remove).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_context_set_pressure_callback(tmem_context *ctx, tmem_pressure_fn fn, void *user);

/** @brief Add a reclaim step, run in ascending priority when a commit would
 *  cross a budget (after volatile heaps are purged, which run at priority 0).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FULL (more than 32 steps) */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_context_add_reclaim(tmem_context *ctx, int32_t priority, tmem_reclaim_fn fn, void *user);

/** @brief Remove a reclaim step added with the same fn and user.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND */
TMEM_API TMEM_NODISCARD tmem_status tmem_context_remove_reclaim(tmem_context *ctx, tmem_reclaim_fn fn, void *user);

/** @brief What tmem_context_attach calls on an attached object. */
typedef void (*tmem_destroy_fn)(void *object);

/** @brief Attach an object to the context's lifetime: tmem_context_destroy
 *  calls destroy(object) before it destroys any heap or type, newest attached
 *  first, together with the library's own context-owned objects (KV caches,
 *  surfaces). So an object may still use the context's heaps and types in its
 *  destroy, but no other attached object newer than itself. There is no
 *  detach: attach what lives as long as the context.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL ctx, object or destroy)
 *          | TMEM_E_NO_MEMORY (nothing attached; destroy is not called)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_context_attach(tmem_context *ctx, void *object, tmem_destroy_fn destroy);

/** @brief Poll the OS pressure signals (PSI, cgroup memory.events) and fold
 *  them into the pressure level (PSI some avg10 >= 10% counts as WARNING,
 *  >= 40% or a new memory.high event as CRITICAL). The first poll only
 *  learns the memory.high event count. May run the pressure callback.
 *  @param[out] level  may be NULL; the effective level (on
 *                     TMEM_E_UNSUPPORTED: the budget's level alone, NORMAL
 *                     for an invalid ctx).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (no source)
 *  On failure *level is NORMAL, or the budget level if the OS read failed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_context_poll_os_pressure(tmem_context *ctx, tmem_pressure *level);

/* ---- types and roles ---- */

/** @brief Create a type and reserve its pool (populating it if asked).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (bad name, placement, lifetime, flags;
 *          POPULATE/PINNED/CONTIGUOUS without a reserve or budget)
 *          | TMEM_E_EXISTS | TMEM_E_FULL (64 types) | TMEM_E_BUDGET (populate
 *          exceeds budget) | TMEM_E_NO_MEMORY | TMEM_E_UNSUPPORTED (DEVICE
 *          without a backend) | TMEM_E_PERMISSION (mlock refused)
 *          | TMEM_E_OVERFLOW (reserve above 64 TiB)
 *  On failure *out is NULL. */
TMEM_API TMEM_NODISCARD tmem_status tmem_type_create(tmem_context *ctx, const tmem_type_desc *desc, tmem_type **out);

/** @brief Remove a type nothing uses and release its pool (a populated
 *  pool's charge goes back to the budget). Types after it move down one
 *  index (tmem_type_at stays dense); the handle is invalid afterwards.
 *  NULL is a no-op (TMEM_OK).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (not a live type) | TMEM_E_STATE (in
 *          use: a heap, KV cache or surface over its pool, bytes charged to
 *          it, or a role mapped to it; nothing changes)
 *  @par Threads  safe with the other type calls, but no other call may be
 *       using this type (as for any destroy). */
TMEM_API TMEM_NODISCARD tmem_status tmem_type_destroy(tmem_type *type);

/** @brief Find a type by name ("/memory/kv").
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND
 *  On failure *out is NULL. */
TMEM_API TMEM_NODISCARD tmem_status tmem_type_find(tmem_context *ctx, const char *name, tmem_type **out);

/** @brief Describe a type. @return TMEM_OK | TMEM_E_INVALID_ARG
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_type_get_info(const tmem_type *type, tmem_type_info *out);

/** @brief Number of types (0 for an invalid ctx); tmem_type_at() walks them
 *  by index, 0 .. count-1, in creation order (types are never removed).
 *  @param[out] out  (tmem_type_at) NULL on failure.
 *  @return (tmem_type_at) TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND
 *          (index >= count) */
TMEM_API uint32_t tmem_type_count(tmem_context *ctx);
TMEM_API TMEM_NODISCARD tmem_status tmem_type_at(tmem_context *ctx, uint32_t index, tmem_type **out);

/** @brief Change a type's budget (0 = none). Lowering it below what the
 *  type has committed reclaims nothing by itself: the budget changes and the
 *  type's next commits fail until it is back under.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (invalid type) */
TMEM_API TMEM_NODISCARD tmem_status tmem_type_set_budget(tmem_type *type, uint64_t budget);

/** @brief Map a role to a type (the role -> type policy).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FOREIGN (type of another context) */
TMEM_API TMEM_NODISCARD tmem_status tmem_role_set_type(tmem_context *ctx, tmem_role role, tmem_type *type);

/** @brief The type a role maps to.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NOT_FOUND (no mapping)
 *  On failure *out is NULL. */
TMEM_API TMEM_NODISCARD tmem_status tmem_role_get_type(tmem_context *ctx, tmem_role role, tmem_type **out);

/** @brief Name of a role ("weights", "kv_cache", ... or a user role's name);
 *  NULL for an undefined role. */
TMEM_API const char *tmem_role_name(tmem_context *ctx, tmem_role role);

/** @brief Define a user role (TMEM_ROLE_USER_FIRST..TMEM_ROLE_MAX-1).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_EXISTS */
TMEM_API TMEM_NODISCARD tmem_status tmem_role_define(tmem_context *ctx, tmem_role role,
                                                     const char *name, tmem_type *type);

/** @brief Load types, budgets and role policy from a config file (see
 *  docs/config.md). All or nothing: on any error the context is as before
 *  (types the load created are removed, the context budget, existing types'
 *  budgets and the role table are put back).
 *  @param[out] err  may be NULL; filled with line and message on TMEM_E_PARSE.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_IO | TMEM_E_PARSE |
 *          TMEM_E_BUDGET (a context `budget` above the process's memory
 *          limit: the tightest of TMEM_LIMIT, cgroup memory.max and
 *          memory.high, else the machine's RAM; err names the line) | the
 *          errors of tmem_type_create
 *  On failure *err holds the line (0 if none) and the message. */
TMEM_API TMEM_NODISCARD tmem_status tmem_config_load(tmem_context *ctx, const char *path, tmem_config_error *err);

/** @brief Same as tmem_config_load, from a string of `len` bytes (no NUL
 *  needed; a NUL inside is a parse error). text may be NULL when len is 0.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL ctx, NULL text with len > 0)
 *          | TMEM_E_PARSE (also: len above 1 MiB)
 *          | TMEM_E_NO_MEMORY | the errors of tmem_type_create
 *  On failure *err holds the line (0 if none) and the message. */
TMEM_API TMEM_NODISCARD tmem_status tmem_config_load_string(tmem_context *ctx, const char *text,
                                                            size_t len, tmem_config_error *err);

/* ---- accounting ---- */

/** @brief Per-type accounting. @return TMEM_OK | TMEM_E_INVALID_ARG
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_type_get_stats(const tmem_type *type, tmem_type_stats *out);

/** @brief Bytes of the type's pool resident in memory now, as the OS reports
 *  them (mincore on the host; committed granules only), to compare with what
 *  is accounted. Bytes charged to the type outside its pool (memfd surfaces,
 *  mapped model files) are not in it.
 *  @param[out] out_bytes  0 on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (the backend
 *          cannot tell, e.g. device memory) | an OS error
 *  @par Threads safe; the figure may be stale by the time it returns */
TMEM_API TMEM_NODISCARD tmem_status tmem_type_get_residency(tmem_type *type, uint64_t *out_bytes);

/** @brief Per-role accounting. @return TMEM_OK | TMEM_E_INVALID_ARG
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_role_get_stats(tmem_context *ctx, tmem_role role, tmem_role_stats *out);

/** @brief Stats as JSON (schema: docs/stats.schema.json), NUL-terminated.
 *  Writes at most cap bytes; *needed gets the full length + 1 (may be NULL).
 *  Call with buf NULL, cap 0 to size the buffer.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FULL (cap too small; buf holds
 *          a truncated, NUL-terminated prefix)
 *  On failure *needed is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_stats_json(tmem_context *ctx, char *buf, size_t cap, size_t *needed);

/** @brief Stats as a human table (one row per type, then per role), same
 *  buffer contract as tmem_stats_json.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (invalid ctx, buf NULL with cap > 0)
 *          | TMEM_E_FULL (cap too small; buf holds a truncated,
 *          NUL-terminated prefix)
 *  On failure *needed is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_stats_table(tmem_context *ctx, char *buf, size_t cap, size_t *needed);

/** @brief Sum of what the context accounts as private dirty (committed
 *  anonymous/shared memory) and clean (file-backed) bytes, for comparison with
 *  tmem_footprint_read(). @return TMEM_OK | TMEM_E_INVALID_ARG
 *  On failure *dirty and *clean are 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_context_accounted(tmem_context *ctx, uint64_t *dirty, uint64_t *clean);

/** @brief Walk every pool and heap and verify invariants (slow, for tests).
 *  @return TMEM_OK | TMEM_E_CORRUPT */
TMEM_API TMEM_NODISCARD tmem_status tmem_context_check(tmem_context *ctx);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_CONTEXT_H */

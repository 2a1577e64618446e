/**
 * @file plan.h
 * @brief Lifetime planner: offsets for transient buffers so that buffers alive
 *        at the same time never overlap and the arena is as small as possible.
 *
 * This is the dynamic storage allocation problem (NP-hard). Each buffer has a
 * size, an alignment and a lifetime `[start, end)` (end exclusive: a buffer
 * ending at t and one starting at t may share bytes). A plan gives every
 * buffer an offset; its arena is the largest `offset + size`.
 *
 * The planner reports how close a plan is to the best possible: the lower
 * bound is the largest sum of sizes alive at one time (a sweep over time), and
 * `arena / lower_bound` is the ratio shown by `tmem plan`. Every plan the
 * library returns has passed an independent validator (tmem_plan_validate).
 *
 * @par Quick start
 * @code
 *   tmem_plan_problem *p;
 *   if (tmem_plan_problem_create(&p)) ...;
 *   tmem_plan_buffer b = {.size = 4096, .start = 0, .end = 3};
 *   if (tmem_plan_problem_add(p, &b, NULL)) ...;        // repeat per buffer
 *   tmem_plan *plan;
 *   tmem_plan_desc d = {0};                              // minimise, defaults
 *   if (tmem_plan_solve(p, &d, &plan) == TMEM_OK) {
 *       uint64_t off = tmem_plan_offset(plan, 0);
 *       tmem_plan_info info; TMEM_IGNORE(tmem_plan_get_info(plan, &info));
 *       tmem_plan_destroy(plan);
 *   }
 *   tmem_plan_problem_destroy(p);
 * @endcode
 *
 * @par How it solves
 * A portfolio of greedy orders (size, area, lifetime, conflicts, start) with
 * best-fit gap placement gives a first plan in O(n log n + overlaps). If the
 * plan is above the lower bound, an exact branch and bound over canonical
 * placements (every buffer at offset 0 or on top of a buffer alive with it),
 * with per-time-section capacity inference, dominance pruning and
 * decomposition at time points no buffer spans, searches decision problems
 * downwards from the heuristic's arena, within a node and time limit. A plan
 * is reported optimal when its arena equals the lower bound or the search
 * proved that one step less is infeasible.
 *
 * @par Layers
 * This header is the planner alone: pure arithmetic, no typedmem context, no
 * heap, no file. Plans bound to PLACEMENT heaps are in plan_heap.h (layer
 * bind, above the planner and the heaps); reading a plan problem from a file
 * and writing plans to a FILE are in plan_io.h (layer io). typedmem.h
 * includes all three.
 *
 * @par Memory
 * The planner is pure computation with no typedmem context: problems and
 * plans take their memory from the C library's malloc and free it on destroy.
 * Peak use is O(n + overlaps) for the problem plus O(n^2) words at worst for
 * the exact search's undo log.
 *
 * @par Threads
 * Objects are externally synchronized: a problem may be read (solved,
 * validated) from many threads at once as long as nobody adds to it; a plan is
 * read-only after tmem_plan_solve and may be shared freely.
 */
#ifndef TYPEDMEM_PLAN_H
#define TYPEDMEM_PLAN_H

#include "common.h"
#include "status.h"

TMEM_EXTERN_C_BEGIN

/** @brief A set of buffers to plan (opaque). */
typedef struct tmem_plan_problem tmem_plan_problem;
/** @brief A solved plan: one offset per buffer (opaque, read-only). */
typedef struct tmem_plan tmem_plan;

/** @brief Per-buffer flags. */
typedef enum tmem_plan_buffer_flag {
    /** The buffer is pre-placed at tmem_plan_buffer::offset; the planner
     *  places the others around it. */
    TMEM_PLAN_BUFFER_FIXED = 1u << 0,
    /** The buffer must not alias anything: it is treated as alive for the
     *  whole plan (from the first start to the last end of the problem). */
    TMEM_PLAN_BUFFER_NO_ALIAS = 1u << 1,
} tmem_plan_buffer_flag;

/** @brief One buffer. Zeroed = defaults except size and lifetime. */
typedef struct tmem_plan_buffer {
    const char *id;       /**< name; copied (up to 255 bytes); NULL = "b<index>" */
    uint64_t size;        /**< bytes, > 0 */
    uint64_t alignment;   /**< power of two; 0 = 1 (no alignment) */
    int64_t start;        /**< first step the buffer is alive */
    int64_t end;          /**< exclusive: alive on [start, end); end > start */
    uint64_t offset;      /**< with TMEM_PLAN_BUFFER_FIXED: where it is; else ignored */
    uint32_t flags;       /**< tmem_plan_buffer_flag bits */
} tmem_plan_buffer;

/** @brief Where and why input was rejected (CSV parsing). */
typedef struct tmem_plan_error {
    uint64_t line;        /**< 1-based line of the input; 0 if not line-specific */
    char field[32];       /**< the column name ("size", "lower", ...) or "" */
    char message[160];    /**< what is wrong, for humans */
} tmem_plan_error;

/** @brief Create an empty problem.
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (out NULL) | TMEM_E_NO_MEMORY
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_problem_create(tmem_plan_problem **out);

/** @brief Destroy a problem. NULL is a no-op. Plans made from it stay valid.
 *  @par Threads externally synchronized */
TMEM_API void tmem_plan_problem_destroy(tmem_plan_problem *problem);

/** @brief Add a buffer. The problem is unchanged on failure.
 *  @param[out] index  may be NULL; set to the buffer's index (0, 1, ...).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (size 0, end <= start, FIXED offset
 *          not a multiple of the alignment, unknown flags)
 *          | TMEM_E_ALIGNMENT (not a power of two) | TMEM_E_EXISTS (an id
 *          already used) | TMEM_E_OVERFLOW (offset + size, or the problem's
 *          total size, overflows 64 bits; more than 2^31-1 buffers)
 *          | TMEM_E_NO_MEMORY
 *  @par Threads externally synchronized */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_problem_add(tmem_plan_problem *problem,
                                                          const tmem_plan_buffer *buffer,
                                                          uint32_t *index);

/** @brief Number of buffers (0 for NULL). @par Threads safe (read) */
TMEM_API uint32_t tmem_plan_problem_count(const tmem_plan_problem *problem);

/** @brief Read back buffer `index` (its id points into the problem).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL) | TMEM_E_NOT_FOUND (index)
 *  @par Threads safe (read)
 *  On failure *out is zeroed, out->offset TMEM_OFFSET_NONE. */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_problem_get(const tmem_plan_problem *problem,
                                                          uint32_t index, tmem_plan_buffer *out);

/** @brief Parse CSV text in MiniMalloc's format.
 *
 *  One header line naming the columns, in any order: `id` (or `buffer`,
 *  `buffer_id`), `lower` (or `start`, `begin`), `upper` (or `end`), `size`,
 *  and optionally `alignment` and `offset` (a fixed offset; empty = free).
 *  Unknown columns are ignored. **`end`/`upper` are exclusive** in both
 *  spellings (our shared data's convention; MiniMalloc's legacy reader took
 *  `end` as inclusive). Blank lines and lines starting with `#` are skipped;
 *  CRLF is accepted. Integers are decimal, sizes must be > 0, times may be
 *  negative.
 *  @param text  not necessarily NUL-terminated; `len` bytes are read.
 *  @param[out] out  NULL on failure.
 *  @param[out] err  may be NULL; on failure names the line and the field.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL text/out) | TMEM_E_PARSE (bad
 *          header, empty input, non-numeric field, missing column, negative or
 *          zero size, end <= start, bad alignment, duplicate id, overflowing
 *          totals, more than 2^31-1 lines) | TMEM_E_NO_MEMORY
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_plan_problem_parse_csv(const char *text, size_t len, tmem_plan_problem **out,
                                tmem_plan_error *err);

/** @brief The lower bound: the largest sum of sizes alive at one time
 *  (NO_ALIAS buffers count as always alive), or the highest fixed buffer's
 *  end if larger. O(n log n).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NO_MEMORY
 *  @par Threads safe (read)
 *  On failure *out is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_problem_lower_bound(const tmem_plan_problem *problem, uint64_t *out);

/** @brief What the validator found wrong. */
typedef struct tmem_plan_violation {
    uint32_t a, b;        /**< buffer indices involved (b = a if one buffer) */
    uint64_t value;       /**< the offending offset or height */
} tmem_plan_violation;

/** @brief Check offsets against a problem, independently of the solver:
 *  alignment, fixed offsets kept, arena within `capacity` (0 = no limit),
 *  and no two buffers alive at the same time overlapping (sweep, O(n log n)).
 *  @param offsets  one per buffer, in index order.
 *  @param[out] why  may be NULL; the first violation found.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL) | TMEM_E_ALIGNMENT (misaligned)
 *          | TMEM_E_STATE (a fixed buffer moved) | TMEM_E_FULL (above
 *          capacity) | TMEM_E_OVERFLOW (offset + size overflows)
 *          | TMEM_E_OVERLAP (two live buffers share bytes) | TMEM_E_NO_MEMORY
 *  @par Threads safe (read)
 *  On failure *why holds the first violation (untouched on INVALID_ARG). */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_validate(const tmem_plan_problem *problem,
                                                       const uint64_t *offsets, uint64_t capacity,
                                                       tmem_plan_violation *why);

/** @brief Solve modes. */
typedef enum tmem_plan_mode {
    TMEM_PLAN_MINIMIZE = 0,  /**< smallest arena (anytime: best within limits) */
    TMEM_PLAN_DECIDE         /**< any plan with arena <= capacity */
} tmem_plan_mode;

/** @brief Solve flags. */
typedef enum tmem_plan_flag {
    /** Heuristic portfolio only: no exact search (fast, big graphs). */
    TMEM_PLAN_HEURISTIC_ONLY = 1u << 0,
    /** Do not split the problem at time points no buffer spans. */
    TMEM_PLAN_NO_DECOMPOSE = 1u << 1,
} tmem_plan_flag;

/** Default work budget of tmem_plan_solve, in exact-search nodes over all
 *  parts: min(TMEM_PLAN_DEFAULT_NODES, TMEM_PLAN_DEFAULT_WORK / buffers), at
 *  least 10,000 (a node costs about O(buffers)); under the default budget
 *  an independent part of more than 4096 buffers keeps its greedy plan (give
 *  a node_limit to search it anyway). A second or two of search on
 *  a 2-core x86-64 machine of 2024; MiniMalloc's challenging A-K reach their
 *  best-known heights within it (docs/plan.md). */
#define TMEM_PLAN_DEFAULT_NODES 400000ull
#define TMEM_PLAN_DEFAULT_WORK 200000000ull

/** @brief How to solve. Zeroed = minimise with default limits. */
typedef struct tmem_plan_desc {
    tmem_plan_mode mode;
    /** DECIDE: required, the arena limit. MINIMIZE: 0 = none, else a plan
     *  above it is refused (TMEM_E_INFEASIBLE / TMEM_E_LIMIT). */
    uint64_t capacity;
    /** Work budget of the exact search in nodes: 0 = the default (see
     *  TMEM_PLAN_DEFAULT_NODES), UINT64_MAX = none. Without a time limit this
     *  is the only limit, so the same input gives the same plan on an idle
     *  or a loaded machine. */
    uint64_t node_limit;
    /** Wall-clock limit for the exact search in seconds, measured with
     *  clock_ns (required then: the planner has no clock of its own); <= 0 =
     *  none. With a time limit the result depends on the machine's speed and
     *  load; node_limit then still applies unless 0 or UINT64_MAX. */
    double time_limit_s;
    /** Monotonic nanoseconds, for time_limit_s and tmem_plan_info::seconds;
     *  NULL = no clock (the result is then pure arithmetic on the input). */
    uint64_t (*clock_ns)(void *user);
    void *clock_user;
    uint32_t flags;          /**< tmem_plan_flag bits */
    /** Threads for the exact search when minimising; 0 or 1 = the calling
     *  thread only. With 2 or more, the lower-bound probe runs on one extra
     *  thread (the planner's only OS call) with 30% of the part's budget of
     *  its own while the caller's thread searches above it with the whole
     *  budget; the call returns when both are done. Under a work budget the
     *  plan does not depend on how the threads were scheduled (when the goal
     *  is reached its plan wins; otherwise both searches ran their whole
     *  budgets). When the system gives no thread, the caller's thread
     *  searches alone, as with 1. */
    uint32_t threads;
} tmem_plan_desc;

/** @brief Read-back of a plan. */
typedef struct tmem_plan_info {
    uint32_t buffers;
    uint32_t parts;          /**< independent time parts solved separately */
    uint64_t arena;          /**< max offset + size */
    uint64_t lower_bound;    /**< see tmem_plan_problem_lower_bound */
    uint64_t sum_sizes;      /**< arena without any aliasing */
    uint64_t heuristic_arena;/**< best of the greedy portfolio */
    bool optimal;            /**< arena proved minimal */
    uint64_t nodes;          /**< exact-search nodes visited */
    double seconds;          /**< wall time of tmem_plan_solve by clock_ns;
                                  0 without a clock */
    const char *method;      /**< "greedy:<order>", "exact", "lower-bound" */
} tmem_plan_info;

/** @brief Solve. The returned plan has passed tmem_plan_validate.
 *  @param desc  NULL = defaults.
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, DECIDE without capacity, empty
 *          problem) | TMEM_E_INFEASIBLE (proved: no plan within capacity)
 *          | TMEM_E_LIMIT (limits hit before a plan within capacity was found)
 *          | TMEM_E_OVERFLOW | TMEM_E_NO_MEMORY | TMEM_E_CORRUPT (a candidate
 *          plan failed validation: a planner bug, never returned as a plan)
 *  @par Threads safe for distinct plans; the problem is only read */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_solve(const tmem_plan_problem *problem,
                                                    const tmem_plan_desc *desc, tmem_plan **out);

/** @brief Destroy a plan. NULL is a no-op.
 *  @par Threads externally synchronized: no other call on the plan may be in
 *  flight (a plan is shared read-only only until it is destroyed). */
TMEM_API void tmem_plan_destroy(tmem_plan *plan);

/** @brief Read-back. @return TMEM_OK | TMEM_E_INVALID_ARG @par Threads safe
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_get_info(const tmem_plan *plan, tmem_plan_info *out);

/** @brief Offset of buffer `index`; TMEM_OFFSET_NONE if out of range/NULL. */
TMEM_API uint64_t tmem_plan_offset(const tmem_plan *plan, uint32_t index);

/** @brief The buffer as planned (copy of the problem's, id points into the
 *  plan, offset = planned offset). @return TMEM_OK | TMEM_E_INVALID_ARG
 *  | TMEM_E_NOT_FOUND
 *  On failure *out is zeroed, out->offset TMEM_OFFSET_NONE. */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_get_buffer(const tmem_plan *plan, uint32_t index, tmem_plan_buffer *out);

/** @brief SVG drawing options. Zeroed = defaults. */
typedef struct tmem_plan_svg_desc {
    uint32_t width, height;  /**< pixels of the drawing area; 0 = 960 x 540 */
    const char *title;       /**< shown on top; NULL = none; XML-escaped */
} tmem_plan_svg_desc;

/** @brief Draw the plan as a standalone SVG document into memory (to a
 *  FILE: tmem_plan_write_svg, plan_io.h): time on x, offset on y (0 at the
 *  bottom), one rectangle per buffer with a tooltip (id, size, lifetime,
 *  offset), the lower bound as a dashed line, the arena as a line. Writes
 *  at most `cap` bytes (NUL terminated when `cap` > 0) and sets `*len` to
 *  the full length (without the NUL) so a second call with a larger buffer
 *  gets it all (snprintf style).
 *  @param buf  may be NULL when cap is 0.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NO_MEMORY
 *  On failure *len is 0. */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_svg(const tmem_plan *plan,
                                                  const tmem_plan_svg_desc *desc, char *buf,
                                                  size_t cap, size_t *len);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_PLAN_H */

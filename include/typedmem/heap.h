/**
 * @file heap.h
 * @brief Heaps: sub-allocators over a type's pool.
 *
 * A heap manages offsets inside its own range of a type's pool (like VMA's
 * virtual blocks); only the type's backend turns an offset into a pointer (host
 * placements) or a device handle. Three kinds:
 *  - GENERAL: O(1) allocate/free with coalescing (TLSF), any power-of-two
 *    alignment.
 *  - LINEAR: bump allocation for per-step scratch; tmem_heap_reset() frees all.
 *    With TMEM_HEAP_RING it wraps around, freeing in FIFO order.
 *  - PLACEMENT: the caller gives the offset (the planner's output); checked
 *    against bounds and, in debug contexts, against live non-aliasable
 *    allocations.
 *  - BLOCK: fixed-size blocks (tmem_heap_desc.block_size), each a whole
 *    number of pool granules, committed when handed out and decommitted the
 *    moment it is freed: the budget charge and the OS footprint drop by the
 *    block at once (no hysteresis). For evictable fixed-size data such as KV
 *    cache blocks, where the bytes must leave the budget when the policy
 *    frees them. Allocate/free are O(1) (a free stack and a live bitmap); a
 *    double free or a foreign offset is refused. No aliasing, no purgeable
 *    state, no handles. With TMEM_HEAP_THREAD_SAFE the lock is not held
 *    across the commit or decommit system call.
 *
 * @par Aliasing
 * An allocation marked aliasable (TMEM_ALLOC_ALIASABLE at creation, or later
 * tmem_heap_make_aliasable(), Metal's makeAliasable) gives its bytes back for
 * reuse while it stays "live" for its owner. In a debug context, aliased and
 * freed bytes are poisoned (0xDD) and tmem_heap_check_alias() reports whether
 * an aliased allocation's bytes were overwritten by a later one.
 *
 * @par Purgeable state
 * NON_VOLATILE (normal), VOLATILE (the OS may drop the contents under
 * pressure; the context purges it first when a budget is hit), EMPTY (dropped
 * now). Going back to NON_VOLATILE reports whether contents were lost.
 *
 * @par Threads
 * A heap is externally synchronized: one thread at a time per heap, unless
 * created with TMEM_HEAP_THREAD_SAFE (a lock per heap). Different heaps may be
 * used from different threads freely; budgets are shared safely.
 */
#ifndef TYPEDMEM_HEAP_H
#define TYPEDMEM_HEAP_H

#include "context.h"

TMEM_EXTERN_C_BEGIN

typedef struct tmem_heap tmem_heap;

typedef enum tmem_heap_kind {
    TMEM_HEAP_GENERAL = 0,
    TMEM_HEAP_LINEAR,
    TMEM_HEAP_PLACEMENT,
    TMEM_HEAP_BLOCK
} tmem_heap_kind;

typedef enum tmem_heap_flag {
    TMEM_HEAP_RING = 1u << 0,        /**< LINEAR only: wrap around, free FIFO */
    TMEM_HEAP_THREAD_SAFE = 1u << 1, /**< internal lock */
    TMEM_HEAP_COMMIT_ALL = 1u << 2,  /**< commit the whole size at creation */
} tmem_heap_flag;

/** @brief Describes a heap. Zeroed = defaults. */
typedef struct tmem_heap_desc {
    tmem_heap_kind kind;
    tmem_type *type;      /**< required: the pool it sub-allocates from */
    tmem_role role;       /**< default role charged for its allocations; TMEM_ROLE_DEFAULT (0)
                               = the first role the policy maps to `type`, or no role (bytes
                               counted in the type only) when none does */
    uint64_t size;        /**< bytes of the pool's range it manages; required */
    uint32_t flags;       /**< tmem_heap_flag bits */
    const char *name;     /**< for reports; copied; may be NULL */
    uint64_t block_size;  /**< BLOCK: bytes of one block (required, > 0); every allocation takes
                               one block. Ignored by the other kinds. */
} tmem_heap_desc;

typedef enum tmem_alloc_flag {
    TMEM_ALLOC_ALIASABLE = 1u << 0, /**< bytes may be reused by later allocations */
    TMEM_ALLOC_ZERO = 1u << 1,      /**< zero the bytes (host placements) */
} tmem_alloc_flag;

/** @brief Describes one allocation. Zeroed = defaults (alignment 16, heap's role). */
typedef struct tmem_alloc_desc {
    uint64_t size;        /**< bytes, > 0 */
    uint64_t alignment;   /**< power of two; 0 = 16 */
    uint64_t offset;      /**< PLACEMENT heaps only: where to place it */
    uint32_t flags;       /**< tmem_alloc_flag bits */
    int32_t role;         /**< tmem_role; TMEM_ROLE_DEFAULT (0) or -1 = the heap's role */
    const char *name;     /**< for traces/reports; not copied beyond 31 bytes */
} tmem_alloc_desc;

/** @brief Where an allocation landed. */
typedef struct tmem_alloc_info {
    uint64_t offset;      /**< within the heap; TMEM_OFFSET_NONE on failure */
    uint64_t size;        /**< the size asked for */
    void *ptr;            /**< host address, NULL for device placements or failure */
} tmem_alloc_info;

/** @brief Size and alignment an allocation of `size` needs in this type
 *  before anything is allocated (Metal's heapBufferSizeAndAlign): size rounded
 *  to the heap granule, alignment at least the requested one. */
typedef struct tmem_size_align {
    uint64_t size;
    uint64_t alignment;
} tmem_size_align;

typedef enum tmem_purgeable {
    TMEM_PURGEABLE_KEEP_CURRENT = 0, /**< query only */
    TMEM_PURGEABLE_NON_VOLATILE,
    TMEM_PURGEABLE_VOLATILE,
    TMEM_PURGEABLE_EMPTY
} tmem_purgeable;

/** @brief Read-back of a heap. */
typedef struct tmem_heap_info {
    tmem_heap_kind kind;
    uint64_t size;
    uint64_t used;            /**< bytes in live non-aliased allocations */
    uint64_t committed;
    uint64_t peak_used;
    uint64_t largest_free;    /**< largest allocation that would succeed now */
    uint64_t live_count;
    tmem_purgeable purgeable;
    uint64_t block_stride;    /**< BLOCK: pool bytes one block occupies and commits (block_size
                                   rounded up to the pool granule); 0 for other kinds */
} tmem_heap_info;

/** @brief Size and alignment query for `type` (no heap needed).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_ALIGNMENT | TMEM_E_OVERFLOW
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_type_size_and_align(const tmem_type *type, uint64_t size, uint64_t alignment,
                             tmem_size_align *out);

/** @brief The bytes a heap of `size` bytes over `type` commits at most
 *  (every byte in use): size rounded up to the pool's granule (a heap carves
 *  whole granules and clips its last commit chunk there). What a memory
 *  plan counts for a heap (tmem_fit's lines, the reference runtime's
 *  admission).
 *  @param[out] out  0 on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, size 0) | TMEM_E_OVERFLOW
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_type_heap_bytes(const tmem_type *type, uint64_t size, uint64_t *out);

/** @brief Create a heap over `desc->type`'s pool.
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_FULL (pool reserve exhausted)
 *          | TMEM_E_BUDGET (COMMIT_ALL over budget) | TMEM_E_NO_MEMORY */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_create(tmem_context *ctx, const tmem_heap_desc *desc, tmem_heap **out);

/** @brief Destroy a heap; live allocations are released with it. NULL is a no-op.
 *  @par Threads externally synchronized even with TMEM_HEAP_THREAD_SAFE: no
 *  other call on the heap may be in flight. */
TMEM_API void tmem_heap_destroy(tmem_heap *heap);

/** @brief Allocate host memory (the fast path): GENERAL and LINEAR heaps.
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (size 0, PLACEMENT heap, device type)
 *          | TMEM_E_ALIGNMENT | TMEM_E_OVERFLOW | TMEM_E_FULL | TMEM_E_BUDGET
 *          | TMEM_E_NO_MEMORY | TMEM_E_STATE (heap not NON_VOLATILE) */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_alloc(tmem_heap *heap, uint64_t size, uint64_t alignment, void **out);

/** @brief Free a pointer from tmem_heap_alloc / tmem_heap_alloc_ex. A NULL
 *  ptr is a no-op (TMEM_OK, whatever the heap), as free(NULL).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (invalid heap) | TMEM_E_FOREIGN (not
 *          from this heap) | TMEM_E_DOUBLE_FREE. Nothing changes on failure. */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_free(tmem_heap *heap, void *ptr);

/** @brief Allocate with a full description (offset, flags, role, name).
 *  @return as tmem_heap_alloc, plus TMEM_E_OVERLAP (PLACEMENT: range overlaps a
 *          live non-aliasable allocation; checked in every context) and, for
 *          PLACEMENT, TMEM_E_INVALID_ARG when offset + size passes the end and
 *          TMEM_E_ALIGNMENT when the address is not aligned
 *  On failure *out is {TMEM_OFFSET_NONE, 0, NULL}. */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_alloc_ex(tmem_heap *heap, const tmem_alloc_desc *desc,
                                                       tmem_alloc_info *out);

/** @brief Free by offset (any heap kind, device placements too).
 *  TMEM_OFFSET_NONE (what a failed allocation reports) is a no-op (TMEM_OK).
 *  @return TMEM_OK | TMEM_E_FOREIGN | TMEM_E_DOUBLE_FREE | TMEM_E_INVALID_ARG
 *          (invalid heap). Nothing changes on failure. */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_free_offset(tmem_heap *heap, uint64_t offset);

/** @brief A handle naming one allocation of a GENERAL heap. It carries the
 *  allocation's block (a size-class page and block, or a TLSF record) and a
 *  generation, so tmem_heap_free_handle needs no lookup and a stale handle
 *  (its allocation freed, by handle, pointer or offset, and maybe the bytes
 *  reused since) is refused instead of freeing someone else's memory.
 *  Generations are finite: a stale handle may read as live again if its
 *  block was reallocated after exactly a multiple of 64 allocations from its
 *  page (sizes <= 8 KiB) or 2^31 reuses of its record (larger) since.
 *  value 0 = no handle. Valid until the allocation is freed, the heap reset
 *  or destroyed. */
typedef struct tmem_alloc_handle {
    uint64_t value;
} tmem_alloc_handle;

/** @brief Allocate from a GENERAL heap (as tmem_heap_alloc, the heap's role)
 *  and return a handle and the offset (the host address is
 *  tmem_heap_ptr(heap, offset); device heaps work too). The allocation is an
 *  ordinary one: it may also be freed by pointer or offset, or made
 *  aliasable (its handle then reads as stale: free it by offset).
 *  Thread safety: as tmem_heap_alloc.
 *  @param out_offset may be NULL
 *  @return as tmem_heap_alloc, plus TMEM_E_UNSUPPORTED for LINEAR and
 *          PLACEMENT heaps. On failure *out_handle is {0} and *out_offset
 *          TMEM_OFFSET_NONE. */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_alloc_handle(tmem_heap *heap, uint64_t size, uint64_t alignment,
                                                           tmem_alloc_handle *out_handle, uint64_t *out_offset);

/** @brief Free the allocation a handle names: no hash or map lookup. Handle
 *  {0} (no handle, what a failed allocation reports) is a no-op (TMEM_OK).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (bad heap) |
 *          TMEM_E_UNSUPPORTED (not GENERAL) | TMEM_E_DOUBLE_FREE (stale: the
 *          allocation was freed already) | TMEM_E_FOREIGN (never a handle of
 *          this heap). Nothing changes on failure. */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_free_handle(tmem_heap *heap, tmem_alloc_handle handle);

/** @brief Mark a live allocation aliasable: its bytes may be reused by later
 *  allocations; it must still be freed. @return TMEM_OK | TMEM_E_FOREIGN |
 *  TMEM_E_DOUBLE_FREE */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_make_aliasable(tmem_heap *heap, uint64_t offset);

/** @brief Debug contexts: TMEM_OK if the aliasable allocation at `offset` was
 *  not reused, TMEM_E_OVERLAP if a later allocation took (some of) its bytes —
 *  reading it now is a use-after-alias. TMEM_E_UNSUPPORTED without DEBUG;
 *  TMEM_E_FOREIGN when no live allocation starts at `offset`. */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_check_alias(tmem_heap *heap, uint64_t offset);

/** @brief Free everything (LINEAR: rewind; others: free all live allocations).
 *  @return TMEM_OK | TMEM_E_INVALID_ARG */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_reset(tmem_heap *heap);

/** @brief Set the purgeable state and read the old one.
 *  @param[out] old_state may be NULL.
 *  @param[out] lost  may be NULL; when moving to NON_VOLATILE, true if the
 *               contents were dropped since the heap became VOLATILE.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (device)
 *          | TMEM_E_NO_MEMORY (VOLATILE: the per-page sentinel table)
 *          | TMEM_E_BUDGET (NON_VOLATILE after a reclaim purge: the live
 *          allocations' pages no longer fit; the heap stays EMPTY)
 *          | an OS advice error (the state is unchanged). docs/heap.md.
 *  On failure *lost is false; *old_state is the state before the call, untouched on INVALID_ARG. */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_set_purgeable(tmem_heap *heap, tmem_purgeable state,
                                                            tmem_purgeable *old_state, bool *lost);

/** @brief Read-back. @return TMEM_OK | TMEM_E_INVALID_ARG
 *  On failure *out is zeroed. */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_get_info(const tmem_heap *heap, tmem_heap_info *out);

/** @brief Host pointer for an offset (NULL for device placements or out of range). */
TMEM_API void *tmem_heap_ptr(const tmem_heap *heap, uint64_t offset);

/** @brief Walk the heap's metadata and verify invariants (slow).
 *  @return TMEM_OK | TMEM_E_CORRUPT */
TMEM_API TMEM_NODISCARD tmem_status tmem_heap_check(const tmem_heap *heap);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_HEAP_H */

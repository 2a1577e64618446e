/**
 * @file plan_heap.h
 * @brief Plans bound to placement heaps (layer bind, above the planner and
 *        the heaps): a heap sized for a plan, each buffer allocated at its
 *        planned offset, or the whole plan bound at once.
 *
 * These take PLACEMENT heaps only: any other kind is refused
 * (TMEM_E_INVALID_ARG), since a GENERAL or LINEAR heap would ignore the
 * planned offsets. The planner (plan.h) knows nothing of heaps.
 */
#ifndef TYPEDMEM_PLAN_HEAP_H
#define TYPEDMEM_PLAN_HEAP_H

#include "heap.h"
#include "plan.h"

TMEM_EXTERN_C_BEGIN

/** @brief Fill a PLACEMENT heap description big enough for the plan: its
 *  arena rounded up to the largest buffer alignment (at least 16).
 *  `type`, `role`, `flags` and `name` are left for the caller to set.
 *  @param[out] out  Untouched on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_OVERFLOW
 *  @par Threads safe (the plan is read-only) */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_heap_desc(const tmem_plan *plan, tmem_heap_desc *out);

/** @brief Allocate buffer `index` of the plan in a PLACEMENT heap at its
 *  planned offset (when its lifetime starts; free it with
 *  tmem_heap_free_offset when it ends). `flags` are tmem_alloc_flag bits.
 *  @param[out] out  may be NULL; as tmem_heap_alloc_ex leaves it on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, not a PLACEMENT heap)
 *          | TMEM_E_NOT_FOUND (index) | what tmem_heap_alloc_ex returns
 *          (TMEM_E_OVERLAP if a live allocation is in the way)
 *  @par Threads as the heap */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_heap_alloc(tmem_heap *heap, const tmem_plan *plan,
                                                         uint32_t index, uint32_t flags,
                                                         tmem_alloc_info *out);

/** @brief Bind flags. */
typedef enum tmem_plan_bind_flag {
    /** Each buffer becomes its own aliasable allocation at its planned
     *  offset (instead of one allocation covering the arena), so the
     *  placement heap's overlap check and use-after-alias detection
     *  (tmem_heap_check_alias) see the real buffers of a run. */
    TMEM_PLAN_BIND_PER_BUFFER = 1u << 0,
} tmem_plan_bind_flag;

/** @brief Where to bind a plan. Zeroed = the arena at offset 0, one allocation. */
typedef struct tmem_plan_bind_desc {
    uint64_t offset;     /**< the arena's offset in the heap; a multiple of
                              the plan's largest alignment (at least 16) */
    uint32_t flags;      /**< tmem_plan_bind_flag bits */
} tmem_plan_bind_desc;

/** @brief A bound plan, for tmem_plan_heap_unbind_ex. */
typedef struct tmem_plan_binding {
    uint64_t offset;     /**< the arena's offset in the heap */
    uint64_t size;       /**< the arena's bytes */
    uint32_t flags;      /**< as bound */
} tmem_plan_binding;

/** @brief Bind the whole plan at once in a PLACEMENT heap (sized with
 *  tmem_plan_heap_desc, or larger when desc->offset > 0): every buffer's host
 *  pointer = base + its planned offset (NULL entries for device heaps). The
 *  pointers stay valid for every step of the same shape, so a plan is made
 *  once and re-used; aliasing buffers share bytes by design.
 *  @param desc  NULL = defaults.
 *  @param ptrs  array of tmem_plan_info::buffers entries; may be NULL. On
 *               failure all NULL (untouched when heap or plan is invalid).
 *  @param[out] out  may be NULL; zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, not a PLACEMENT heap, unknown
 *          flags) | TMEM_E_ALIGNMENT (desc->offset) | TMEM_E_OVERFLOW | what
 *          tmem_heap_alloc_ex returns; on failure nothing stays allocated
 *  @par Threads as the heap */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_heap_bind_ex(tmem_heap *heap, const tmem_plan *plan,
                                                           const tmem_plan_bind_desc *desc,
                                                           void **ptrs, tmem_plan_binding *out);

/** @brief Free what tmem_plan_heap_bind_ex bound.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL, not a PLACEMENT heap) | what
 *          tmem_heap_free_offset returns (TMEM_E_FOREIGN: nothing bound
 *          there); per buffer, every buffer is freed and the first error is
 *          returned
 *  @par Threads as the heap */
TMEM_API TMEM_NODISCARD tmem_status
    tmem_plan_heap_unbind_ex(tmem_heap *heap, const tmem_plan *plan,
                             const tmem_plan_binding *binding);

/** @brief tmem_plan_heap_bind_ex with the defaults: the arena at offset 0,
 *  one allocation. Errors and outputs on failure as tmem_plan_heap_bind_ex.
 *  @par Threads as the heap */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_heap_bind(tmem_heap *heap, const tmem_plan *plan, void **ptrs);

/** @brief Undo tmem_plan_heap_bind (the arena at offset 0).
 *  @return as tmem_plan_heap_unbind_ex
 *  @par Threads as the heap */
TMEM_API TMEM_NODISCARD tmem_status tmem_plan_heap_unbind(tmem_heap *heap, const tmem_plan *plan);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_PLAN_HEAP_H */

/*
 * Linear and ring allocation over a range of offsets [0, size).
 *
 * Bump allocation at the head; records kept in allocation order in a deque.
 * Space comes back at the ends only: freeing the newest allocation rolls the
 * head back (stack order), freeing the oldest advances the tail; a free in
 * the middle is remembered and its space returns once the ends reach it.
 * Everything comes back at reset, or when the last live allocation is freed.
 *
 * Ring mode: when the head reaches the end of the range it wraps to offset 0
 * as long as it stays behind the tail (the oldest live allocation), so
 * allocations freed in FIFO order are reused forever. Positions are kept as a
 * monotonically increasing "virtual" position (lap * size + offset), which
 * keeps the deque sorted across the wrap for O(log n) free-by-offset.
 *
 * Costs: allocate O(1) (amortised deque growth); free O(log n).
 */
#ifndef TMEM_HEAP_LINEAR_H
#define TMEM_HEAP_LINEAR_H

#include "heap/meta.h"

typedef struct tmem__linear_rec {
    uint64_t vpos;   /* virtual position; offset = vpos % size */
    uint64_t size;   /* rounded to the granule */
    uint64_t user;
    uint32_t freed;
    uint32_t pad_;
} tmem__linear_rec;

typedef struct tmem__linear {
    tmem_allocator a;
    uint64_t size;
    uint64_t granule;
    uint64_t bias;          /* alignment applies to offset + bias (see tlsf.h) */
    bool ring;
    tmem__linear_rec *recs; /* circular deque: first .. first+count-1 mod cap */
    uint32_t cap, first, count;
    uint32_t live_count;
    uint64_t vhead;         /* virtual position after the newest allocation */
    uint64_t live_bytes;
    tmem__recent recent;
} tmem__linear;

tmem_status tmem__linear_init(tmem__linear *l, uint64_t size, uint64_t granule, bool ring, const tmem_allocator *a);
void tmem__linear_destroy(tmem__linear *l);
/* TMEM_E_INVALID_ARG (0) | TMEM_E_ALIGNMENT | TMEM_E_FULL | TMEM_E_NO_MEMORY */
tmem_status tmem__linear_alloc(tmem__linear *l, uint64_t size, uint64_t align, uint64_t user,
                               uint64_t *out_offset, uint64_t *out_size);
/* The live record at offset, or NULL. Valid until the next alloc/free. */
tmem__linear_rec *tmem__linear_find(tmem__linear *l, uint64_t offset);
/* TMEM_E_DOUBLE_FREE | TMEM_E_FOREIGN; *out gets the freed record. */
tmem_status tmem__linear_free(tmem__linear *l, uint64_t offset, tmem__linear_rec *out);
void tmem__linear_reset(tmem__linear *l);
uint64_t tmem__linear_largest_free(const tmem__linear *l);
static inline uint64_t tmem__linear_offset(const tmem__linear *l, const tmem__linear_rec *r) {
    return r->vpos % l->size;
}
/* Visit live records oldest first; stop when fn returns false. */
typedef bool (*tmem__linear_visit)(void *ctx, uint64_t offset, const tmem__linear_rec *r);
void tmem__linear_walk(const tmem__linear *l, tmem__linear_visit fn, void *ctx);
tmem_status tmem__linear_check(const tmem__linear *l);

#endif

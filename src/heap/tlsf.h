/*
 * TLSF (two-level segregated fit) over a range of offsets [0, size).
 *
 * Knows nothing of pointers: block metadata lives out of band (device memory
 * cannot hold headers, and poisoning/aliasing must not clobber them), in an
 * array of block records linked in physical order, with an open-addressing
 * hash from block start offset to record so free-by-offset, double free and
 * foreign offsets are found in O(1). VMA's virtual block, Conte's TLSF.
 *
 * Costs: allocate and free are O(1) (a bitmap search with ctz, at most two
 * splits or two merges, O(1) expected hash probes). The only non-constant
 * work is growing the record array / hash (doubling, amortised) and, when
 * the O(1) "good fit" search finds nothing, a scan of at most
 * TMEM__TLSF_FALLBACK_SCAN blocks of one list before reporting TMEM_E_FULL.
 *
 * Not thread-safe: the owner serialises.
 */
#ifndef TMEM_HEAP_TLSF_H
#define TMEM_HEAP_TLSF_H

#include "heap/meta.h"

#define TMEM__TLSF_SL_LOG2 5
#define TMEM__TLSF_SL_COUNT (1u << TMEM__TLSF_SL_LOG2)
#define TMEM__TLSF_FL_COUNT 64
#define TMEM__TLSF_NIL UINT32_MAX
#define TMEM__TLSF_FALLBACK_SCAN 64

typedef struct tmem__tlsf_block {
    uint64_t offset;
    uint64_t size;
    uint64_t user;        /* owner's word for used blocks */
    uint32_t prev_phys;   /* neighbours in offset order, NIL at the ends */
    uint32_t next_phys;
    uint32_t prev_free;   /* bucket list links while free; next_free also */
    uint32_t next_free;   /* chains recycled records */
    uint16_t is_free;
    uint16_t live;        /* record in use (not on the recycled chain) */
    uint32_t gen;         /* bumped each time the record becomes a used
                             block: (index, gen) names one allocation */
} tmem__tlsf_block;

/* A hash slot keeps the key next to the index, so probes and deletions
 * never touch the block records (one cache line per probe sequence). */
typedef struct tmem__tlsf_slot {
    uint64_t offset;
    uint32_t index;       /* NIL = empty */
    uint32_t pad_;
} tmem__tlsf_slot;

typedef struct tmem__tlsf {
    tmem_allocator a;
    uint64_t size;        /* range managed, a multiple of the granule */
    uint64_t free_bytes;
    uint64_t bias;        /* alignment applies to offset + bias (set after init:
                             the host address of offset 0, so pointers align) */
    uint32_t granule_log2;
    uint32_t block_count; /* records in use (free + used blocks) */
    uint32_t used_count;
    uint64_t fl_bitmap;
    uint32_t sl_bitmap[TMEM__TLSF_FL_COUNT];
    uint32_t heads[TMEM__TLSF_FL_COUNT][TMEM__TLSF_SL_COUNT];
    tmem__tlsf_block *blocks;
    uint32_t cap;         /* records allocated */
    uint32_t top;         /* records handed out since the last reset */
    uint32_t inited;      /* records ever initialised (>= top; keeps gens) */
    uint32_t recycled;    /* chain of recycled records */
    uint32_t nrecycled;
    struct tmem__tlsf_slot *table; /* hash: block start -> record index */
    uint32_t table_mask;
    tmem__recent recent;
} tmem__tlsf;

/* What a free released: the block and the free span it coalesced into. */
typedef struct tmem__tlsf_freed {
    uint64_t size;        /* the freed block's size */
    uint64_t user;
    uint64_t span_offset; /* the coalesced free block now covering it */
    uint64_t span_size;
} tmem__tlsf_freed;

/* Manage [0, size); size is rounded down to the granule (a power of two, the
 * smallest alignment and size unit). `a` may be NULL (libc).
 * TMEM_E_INVALID_ARG | TMEM_E_NO_MEMORY. */
tmem_status tmem__tlsf_init(tmem__tlsf *t, uint64_t size, uint64_t granule, const tmem_allocator *a);
void tmem__tlsf_destroy(tmem__tlsf *t);
/* Allocate size bytes (rounded up to the granule) with offset + bias a
 * multiple of align (power of two; below the granule means the granule),
 * storing `user` with the block. *out_size gets the block size (may be
 * NULL). Nothing changes on failure.
 * TMEM_E_INVALID_ARG (0) | TMEM_E_ALIGNMENT | TMEM_E_FULL | TMEM_E_NO_MEMORY */
tmem_status tmem__tlsf_alloc(tmem__tlsf *t, uint64_t size, uint64_t align, uint64_t user,
                             uint64_t *out_offset, uint64_t *out_size);
/* The same, also giving the block's record index (valid until it is freed). */
tmem_status tmem__tlsf_alloc_index(tmem__tlsf *t, uint64_t size, uint64_t align, uint64_t user, uint64_t *out_offset,
                                   uint64_t *out_size, uint32_t *out_index);
/* The used block of record `index` if its generation is still `gen`, else
 * NULL (freed, merged away, or reused since). */
static inline tmem__tlsf_block *tmem__tlsf_used_gen(tmem__tlsf *t, uint32_t index, uint32_t gen) {
    if (index >= t->top) return NULL;
    tmem__tlsf_block *b = &t->blocks[index];
    return b->live && !b->is_free && b->gen == gen ? b : NULL;
}
/* Free the block starting at offset. TMEM_E_DOUBLE_FREE | TMEM_E_FOREIGN. */
tmem_status tmem__tlsf_free(tmem__tlsf *t, uint64_t offset, tmem__tlsf_freed *out);
/* Record index of the used block starting at offset, or NIL; and free by
 * that index (no lookup). Indices stay valid until the block is freed. */
uint32_t tmem__tlsf_used_index(const tmem__tlsf *t, uint64_t offset);
void tmem__tlsf_free_index(tmem__tlsf *t, uint32_t index, tmem__tlsf_freed *out);
/* The used block starting at offset, or NULL. The pointer is valid until the
 * next alloc/free/reset. */
tmem__tlsf_block *tmem__tlsf_find_used(tmem__tlsf *t, uint64_t offset);
/* Free everything (keeps the metadata capacity). */
void tmem__tlsf_reset(tmem__tlsf *t);
/* Largest block an allocation with granule alignment could get now. */
uint64_t tmem__tlsf_largest_free(const tmem__tlsf *t);
/* Visit every block in offset order; stop early when fn returns false. */
typedef bool (*tmem__tlsf_visit)(void *ctx, const tmem__tlsf_block *b);
void tmem__tlsf_walk(const tmem__tlsf *t, tmem__tlsf_visit fn, void *ctx);
/* Verify every invariant (slow): TMEM_OK or TMEM_E_CORRUPT. */
tmem_status tmem__tlsf_check(const tmem__tlsf *t);

#endif

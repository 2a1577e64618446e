/*
 * BLOCK heaps (block.c): fixed-size blocks over a carved range of a pool,
 * each committed when handed out and decommitted when freed.
 *
 * Block i lives at heap offset i * stride. Blocks [0, high) have been handed
 * out at least once; each of them is live (its bit in `live` set), on the
 * free stack, or in flight (taken by an allocation whose commit runs, or by a
 * free whose decommit runs, with the heap lock released). The free stack and
 * the bitmap grow with `high` (capacity `cap` blocks), before anything that
 * can fail, so a free never needs memory.
 */
#ifndef TMEM_HEAP_BLOCK_H
#define TMEM_HEAP_BLOCK_H

#include <stdint.h>

typedef struct tmem__block {
    uint64_t block_size;  /* bytes asked per block: what is accounted in use */
    uint64_t stride;      /* pool bytes per block: block_size rounded to the granule */
    uint32_t nblocks;     /* capacity of the range */
    uint32_t high;        /* blocks handed out at least once */
    uint32_t cap;         /* blocks the stack and the bitmap can describe */
    uint32_t nfree;       /* depth of the free stack */
    uint32_t in_flight;   /* taken or being given back with the lock released */
    uint32_t *free;       /* given-back block indices, newest on top */
    uint64_t *live;       /* one bit per block */
} tmem__block;

#endif

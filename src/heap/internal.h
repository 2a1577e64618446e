/*
 * The heap layer's contract with the layers above it (surface, kv, bind,
 * stats, GPU backends), beyond the public typedmem/heap.h. heap_internal.h
 * is private to src/heap/; this is what other layers may use.
 */
#ifndef TMEM_HEAP_CONTRACT_H
#define TMEM_HEAP_CONTRACT_H

#include "core/internal.h"
#include "typedmem/heap.h"

/* The type a heap draws from. */
tmem_type *tmem__heap_type(const tmem_heap *heap);

/* A live heap's place in its type's pool: `*base` its first pool offset,
 * `*size` the bytes it manages (for the layers that turn heap offsets into
 * pool offsets: device spans). false, outputs untouched, when `heap` is not
 * a live heap. */
bool tmem__heap_extent(const tmem_heap *heap, uint64_t *base, uint64_t *size);

/* Reclaim: purge this heap if VOLATILE; returns the bytes dropped. The
 * context calls it through tmem__heap_member_ops.purge (see
 * tmem__member_ops in core/internal.h for the rules it keeps). */
uint64_t tmem__heap_purge_volatile(tmem_heap *heap);

/* Every heap is a member of its context with these hooks (heap.c). */
extern const tmem__member_ops tmem__heap_member_ops;

#endif /* TMEM_HEAP_CONTRACT_H */

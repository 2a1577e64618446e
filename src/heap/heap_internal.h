/*
 * Private to src/heap/: the heap object and the functions its files share.
 *
 *   heap.c        create/destroy, info, check, reset, size_and_align
 *   heap_alloc.c  alloc/free by pointer and by offset (the hot paths)
 *   small.c       size-class pages for allocations <= 8 KiB (GENERAL)
 *   commit.c      commit on demand, decommit policy (hysteresis)
 *   alias.c       aliasable allocations, poisoning, use-after-alias
 *   purgeable.c   NON_VOLATILE / VOLATILE / EMPTY, reclaim purge
 *   block.c       BLOCK heaps: fixed-size blocks, decommitted when freed
 *
 * Locking. h->lock is always initialised. THREAD_SAFE heaps take it on every
 * call. Other heaps belong to one thread at a time and take it only while
 * their purgeable state is not NON_VOLATILE: that is the only time a second
 * party (the context's reclaim, from another thread's commit) may touch the
 * heap, and it does so with trylock. The owner moves the heap out of
 * NON_VOLATILE under the lock, so an unlocked read of NON_VOLATILE by the
 * owner is always current. Order: the context's members_lock -> h->lock ->
 * ctx->lock.
 */
#ifndef TMEM_HEAP_INTERNAL_H
#define TMEM_HEAP_INTERNAL_H

#include "os/os.h"
#include <stdatomic.h>
#include "heap/internal.h"
#include "heap/tlsf.h"
#include "heap/linear.h"
#include "heap/interval.h"
#include "heap/small.h"
#include "heap/block.h"

#define TMEM__HEAP_MAGIC 0x544d4850u        /* "TMHP" */
#define TMEM__HEAP_MAX_SIZE (1ull << 56)    /* sizes are packed with the role */
#define TMEM__HEAP_MAX_ALIGN (1ull << 30)
#define TMEM__HEAP_DEFAULT_ALIGN 16u
#define TMEM__HEAP_POISON 0xDD
/* Decommit hysteresis: free committed bytes a heap keeps (see commit.c). */
#define TMEM__HEAP_RETAIN_MIN (4ull << 20)
#define TMEM__HEAP_DECOMMIT_MIN (1ull << 20)
/* Commit granularity of heaps (at least the pool granule; see commit.c). */
#define TMEM__HEAP_COMMIT_CHUNK (64ull << 10)
#define TMEM__HEAP_FLAG_MASK (TMEM_HEAP_RING | TMEM_HEAP_THREAD_SAFE | TMEM_HEAP_COMMIT_ALL)
#define TMEM__ALLOC_FLAG_MASK (TMEM_ALLOC_ALIASABLE | TMEM_ALLOC_ZERO)

/* TLSF user word of a block that is a small-size page (small.h); no real
 * word is all ones: sizes are < 2^56. */
#define TMEM__HEAP_SMALL_PAGE UINT64_MAX

/* The owner's word kept with every allocation: requested size and role. */
static inline uint64_t tmem__heap_pack(uint64_t size, int32_t role) { return size << 8 | (uint64_t)(uint32_t)role; }
static inline uint64_t tmem__heap_user_size(uint64_t user) { return user >> 8; }
static inline int32_t tmem__heap_user_role(uint64_t user) { return (int32_t)(user & 0xFF); }

struct tmem_heap {
    uint32_t magic;
    tmem_heap_kind kind;
    uint32_t flags;
    int32_t role;
    tmem_context *ctx;
    tmem_type *type;
    bool debug;               /* the context's DEBUG flag, read once */
    char name[32];
    uint64_t size;            /* bytes the metadata manages */
    uint64_t base;            /* offset of the heap in the pool */
    uint64_t carved;          /* bytes carved from the pool (granule multiple) */
    uint8_t *ptr;             /* host address of offset 0; NULL for devices */
    uint64_t granule;         /* allocation granule (16 host, 256 device) */
    /* commit state, one bit per commit chunk ("page") of the heap */
    uint32_t page_shift;
    uint64_t npages;
    uint64_t *bits;
    uint64_t committed;
    /* metadata, by kind */
    tmem__tlsf tlsf;          /* GENERAL */
    tmem__small small;        /* GENERAL: size-class pages (map NULL when off) */
    tmem__linear lin;         /* LINEAR */
    tmem__ivx live;           /* PLACEMENT: every live allocation */
    tmem__ivx alias;          /* GENERAL/LINEAR: aliasable allocations whose
                                 bytes went back to the allocator */
    tmem__recent recent;      /* PLACEMENT: recently freed offsets */
    tmem__block block;        /* BLOCK */
    /* stats */
    uint64_t used, peak_used, live_count;
    /* type and role accounting of the allocations with the heap's role (the
     * others go through the shared counters); see internal.h */
    tmem__acct_slot acct;
    /* purgeable state */
    _Atomic int purgeable;    /* tmem_purgeable */
    bool lost;                /* contents dropped since leaving NON_VOLATILE */
    bool decommitted;         /* purged by reclaim: pages are gone */
    uint64_t *saved;          /* VOLATILE: first word of each sentinel page */
    uint64_t nsaved;
    uint64_t sentinel;
    tmem__os_mutex lock;
};

/* Take the lock if this call needs it (see the header comment). */
static inline bool tmem__heap_enter(tmem_heap *h) {
    if ((h->flags & TMEM_HEAP_THREAD_SAFE) ||
        atomic_load_explicit(&h->purgeable, memory_order_relaxed) != TMEM_PURGEABLE_NON_VOLATILE) {
        tmem__os_mutex_lock(&h->lock);
        return true;
    }
    return false;
}
static inline void tmem__heap_leave(tmem_heap *h, bool locked) {
    if (locked) tmem__os_mutex_unlock(&h->lock);
}
/* Type and role accounting of one allocation or free (no RMW for the heap's
 * own role). */
static inline void tmem__heap_count_alloc(tmem_heap *h, int32_t role, uint64_t size) {
    if (__builtin_expect(role == h->role, 1)) tmem__slot_alloc(&h->acct, size);
    else tmem__account_alloc(h->type, role, size);
}
static inline void tmem__heap_count_free(tmem_heap *h, int32_t role, uint64_t size) {
    if (__builtin_expect(role == h->role, 1)) tmem__slot_free(&h->acct, size);
    else tmem__account_free(h->type, role, size);
}
static inline bool tmem__heap_valid(const tmem_heap *h) { return h && h->magic == TMEM__HEAP_MAGIC; }
static inline tmem_purgeable tmem__heap_state(const tmem_heap *h) {
    return (tmem_purgeable)atomic_load_explicit(&((tmem_heap *)h)->purgeable, memory_order_relaxed);
}

/* ---- commit.c ---- */
static inline uint64_t tmem__heap_commit_chunk(const tmem_type *t) {
    uint64_t g = tmem__pool_granule(t);
    return g > TMEM__HEAP_COMMIT_CHUNK ? g : TMEM__HEAP_COMMIT_CHUNK;
}
tmem_status tmem__heap_commit_init(tmem_heap *h);
/* Committed bytes according to the bitmap (for check). */
uint64_t tmem__heap_bits_bytes(const tmem_heap *h);
void tmem__heap_commit_fini(tmem_heap *h);
/* Commit the pages under [off, off+size) (heap offsets) that are not yet. */
tmem_status tmem__heap_commit_slow(tmem_heap *h, uint64_t off, uint64_t size);
static inline tmem_status tmem__heap_commit(tmem_heap *h, uint64_t off, uint64_t size) {
    uint64_t a = off >> h->page_shift, b = (off + size - 1) >> h->page_shift;
    if (a == b && (h->bits[a >> 6] >> (a & 63) & 1)) return TMEM_OK; /* the common case */
    return tmem__heap_commit_slow(h, off, size);
}
/* A span [off, off+size) became free: decommit its whole pages if the heap
 * holds more free committed bytes than the hysteresis allows. */
void tmem__heap_release(tmem_heap *h, uint64_t off, uint64_t size);
/* Decommit every committed page (destroy, purge); returns the bytes. */
uint64_t tmem__heap_decommit_all(tmem_heap *h);
/* Call fn on each run of committed pages [off, off+size) (heap offsets). */
typedef tmem_status (*tmem__heap_run_fn)(tmem_heap *h, uint64_t off, uint64_t size, void *arg);
tmem_status tmem__heap_committed_runs(tmem_heap *h, tmem__heap_run_fn fn, void *arg);

/* ---- alias.c ---- */
/* Poison [off, off+size) in debug contexts (host heaps, NON_VOLATILE). */
void tmem__heap_poison(tmem_heap *h, uint64_t off, uint64_t size);
/* A new allocation took [off, off+size): flag aliasable ones it overlaps. */
void tmem__heap_note_overlap(tmem_heap *h, uint64_t off, uint64_t size);

/* ---- heap_alloc.c ---- */
/* GENERAL: give every empty small page back to TLSF (reset, FULL, purge). */
void tmem__heap_small_trim(tmem_heap *h);
/* GENERAL: the live allocation at off (a small block or a TLSF block):
 * true with its user word and block bytes. */
bool tmem__heap_live_at(tmem_heap *h, uint64_t off, uint64_t *user, uint64_t *bytes);
/* GENERAL: why off names no live allocation: TMEM_E_DOUBLE_FREE or
 * TMEM_E_FOREIGN (nothing changes). */
tmem_status tmem__heap_not_live(tmem_heap *h, uint64_t off);
/* GENERAL/LINEAR: free the live block at off (it must exist); *span gets the
 * free span it joined. */
void tmem__heap_give_back(tmem_heap *h, uint64_t off, uint64_t *span_off, uint64_t *span_size);
/* Visit every live allocation (offset, bytes it occupies, user word, and
 * whether it is aliasable), alias records last. */
typedef tmem_status (*tmem__heap_live_fn)(tmem_heap *h, uint64_t off, uint64_t size, uint64_t user,
                                          bool aliasable, void *arg);
tmem_status tmem__heap_for_each_live(tmem_heap *h, tmem__heap_live_fn fn, void *arg);

/* ---- block.c (BLOCK heaps; the public entry points dispatch here) ---- */
/* desc validated (kind BLOCK), role resolved. */
tmem_status tmem__block_heap_create(tmem_context *ctx, const tmem_heap_desc *d, int32_t role, tmem_heap **out);
void tmem__block_heap_destroy(tmem_heap *h);
tmem_status tmem__block_reset(tmem_heap *h);
/* heap, out and size validated as tmem_heap_alloc / _ex do before dispatch. */
tmem_status tmem__block_alloc_ptr(tmem_heap *h, uint64_t size, uint64_t alignment, void **out);
tmem_status tmem__block_alloc_ex(tmem_heap *h, const tmem_alloc_desc *d, tmem_alloc_info *out);
/* off < h->size. */
tmem_status tmem__block_free(tmem_heap *h, uint64_t off);
void tmem__block_info(tmem_heap *h, tmem_heap_info *out);
tmem_status tmem__block_check(tmem_heap *h);

/* ---- purgeable.c ---- */
void tmem__heap_drop_sentinels(tmem_heap *h);

#endif

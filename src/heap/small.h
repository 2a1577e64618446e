/*
 * Size-class pages for small allocations of GENERAL heaps (mimalloc's
 * pages, with the metadata out of band like everything in src/heap/).
 *
 * A page is one 64 KiB block taken from the heap's TLSF (aligned to 64 KiB,
 * committed whole) and cut into equal blocks of one size class: every
 * multiple of the granule up to 512 B ("small"), then eight classes per
 * power of two up to TMEM__SMALL_MAX = 8 KiB ("medium", at most 12.5%
 * internal waste, mimalloc's spacing; only where those sizes are granule
 * multiples, i.e. host heaps). A flat map with one entry per
 * 64 KiB of the heap names the page an offset falls in, so a free is
 *   page = map[off >> 16]; index = (off - page) / block size (a multiply);
 *   one bit set in the page's free bitmap,
 * with no hash and no TLSF record touched. An allocation takes the lowest
 * free block of the class's first partial page: two count-trailing-zeros
 * (a summary word says which bitmap words have free bits). A bit already
 * set on free is a double free; an offset inside a page that is not a block
 * start is foreign.
 *
 * Each block keeps a 16-bit tag: its slack (block size minus the size asked
 * for, < 1024) so frees, walks and checks know the requested size, and a
 * 6-bit generation (the page's allocation count when the block was taken);
 * with the page
 * record's own generation (bumped when the record is retired) it makes
 * allocation handles (tmem_alloc_handle) that detect stale use. The
 * heap's role is implied: allocations with another role, an alignment above
 * the granule, or flags go to TLSF.
 *
 * A page that becomes empty stays with its class if the class has no other
 * empty page (so churn at a page boundary does not split and merge TLSF);
 * otherwise it goes back to TLSF, where the decommit hysteresis applies.
 * tmem__small_trim gives every empty page back (TLSF full, purge, info).
 *
 * Costs: 4 bytes of map per 64 KiB of heap (0.006%), ~600 bytes per page
 * record plus two bytes per block (12.5% of 16-byte blocks, 3% of 64-byte
 * ones; TLSF spent a 48-byte record and two 16-byte hash slots on each).
 * Not thread-safe: the heap serialises.
 */
#ifndef TMEM_HEAP_SMALL_H
#define TMEM_HEAP_SMALL_H

#include "heap/meta.h"

#define TMEM__SMALL_MAX 8192u
#define TMEM__SMALL_LINEAR_MAX 512u   /* granule multiples up to here */
#define TMEM__SMALL_STEPS_LOG2 3u     /* 8 classes per power of two above */
#define TMEM__SMALL_PAGE_SHIFT 16u
#define TMEM__SMALL_PAGE (1ull << TMEM__SMALL_PAGE_SHIFT)
#define TMEM__SMALL_MIN_GRANULE 16u
#define TMEM__SMALL_WORDS (TMEM__SMALL_PAGE / TMEM__SMALL_MIN_GRANULE / 64)
/* 32 linear classes (16 B granule) + 8 per doubling from 512 B to 8 KiB */
#define TMEM__SMALL_CLASSES (TMEM__SMALL_LINEAR_MAX / TMEM__SMALL_MIN_GRANULE + 4 * 8)
#define TMEM__SMALL_NIL UINT32_MAX
/* Heaps smaller than this do not use pages (a page would be a large share). */
#define TMEM__SMALL_MIN_HEAP (1ull << 20)

typedef struct tmem__small_page {
    uint64_t offset;          /* heap offset, a multiple of TMEM__SMALL_PAGE */
    uint64_t summary;         /* bit w set: free[w] has a free block */
    uint32_t tlsf_index;      /* TLSF record of the page's block */
    uint32_t cls;
    uint32_t bsize;           /* block bytes */
    uint32_t inv;             /* ceil(2^32 / bsize): index by multiplication */
    uint32_t nblocks, nfree;
    uint32_t prev, next;      /* class's list of pages with free blocks; next
                                 also chains unused records */
    uint32_t listed;          /* on its class's list */
    uint32_t in_use;          /* holds a TLSF block (not an unused record) */
    uint64_t free[TMEM__SMALL_WORDS]; /* bit set = block free */
    uint16_t *tag;            /* [TMEM__SMALL_PAGE >> granule_log2]: slack | gen << 10 */
    uint32_t pgen;            /* bumped when the record is retired or reset */
    uint32_t epoch;           /* allocations from this record (generations) */
} tmem__small_page;

typedef struct tmem__small {
    tmem_allocator a;
    uint32_t *map;            /* [nmap]: page index + 1; 0 = not a page */
    uint64_t nmap;
    tmem__small_page *pages;
    uint32_t npages, cap;     /* records handed out, allocated */
    uint32_t unused;          /* chain of unused records */
    uint32_t live_pages;
    uint32_t granule_log2;
    uint32_t nclasses;
    uint32_t nlinear;         /* classes that are granule multiples */
    uint64_t max_size;        /* largest size served (512 B or 8 KiB) */
    uint32_t head[TMEM__SMALL_CLASSES];  /* first page with free blocks */
    uint32_t empty[TMEM__SMALL_CLASSES]; /* empty pages kept per class */
} tmem__small;

/* What a small free or lookup found. */
typedef struct tmem__small_hit {
    uint32_t page, index;
    uint64_t bytes;           /* block size */
    uint64_t size;            /* size asked for */
} tmem__small_hit;

/* Verdict of a lookup at an offset. */
typedef enum tmem__small_find {
    TMEM__SMALL_NONE,         /* not inside a page: ask TLSF */
    TMEM__SMALL_LIVE,         /* a live block starts here */
    TMEM__SMALL_FREE,         /* a free block starts here */
    TMEM__SMALL_INSIDE        /* inside a page, not at a block start */
} tmem__small_find;

tmem_status tmem__small_init(tmem__small *s, uint64_t heap_size, uint64_t granule, const tmem_allocator *a);
void tmem__small_destroy(tmem__small *s);
static inline bool tmem__small_on(const tmem__small *s) { return s->map != NULL; }
static inline bool tmem__small_fits(const tmem__small *s, uint64_t size, uint64_t align) {
    return size <= s->max_size && align <= (1ull << s->granule_log2);
}
static inline uint32_t tmem__small_class(const tmem__small *s, uint64_t size) {
    if (size <= TMEM__SMALL_LINEAR_MAX) return (uint32_t)((size - 1) >> s->granule_log2);
    uint64_t m = size - 1;
    uint32_t b = 63u - (uint32_t)__builtin_clzll(m); /* 9..12 */
    uint32_t j = (uint32_t)(m >> (b - TMEM__SMALL_STEPS_LOG2)) & 7u;
    return s->nlinear + (b - 9u) * 8u + j;
}
/* Block bytes of class cls. */
static inline uint32_t tmem__small_class_size(const tmem__small *s, uint32_t cls) {
    if (cls < s->nlinear) return (cls + 1) << s->granule_log2;
    uint32_t k = cls - s->nlinear, b = 9u + k / 8u;
    return (9u + k % 8u) << (b - TMEM__SMALL_STEPS_LOG2);
}
#define TMEM__SMALL_SLACK_BITS 10u
static inline uint32_t tmem__small_slack(const tmem__small_page *pg, uint32_t i) {
    return pg->tag[i] & ((1u << TMEM__SMALL_SLACK_BITS) - 1);
}

/* Handle of block i of page p (tmem_alloc_handle's bits): bit 63 set, page
 * generation (7 bits), block generation (6), page record (32), block (16). */
static inline uint64_t tmem__small_handle(const tmem__small_page *pg, uint32_t p, uint32_t i) {
    uint64_t bgen = (uint64_t)(pg->tag[i] >> TMEM__SMALL_SLACK_BITS);
    return 1ull << 63 | (uint64_t)(pg->pgen & 0x7F) << 56 | bgen << 48 | (uint64_t)p << 16 | i;
}

/* Take a block of class cls from a page with room; false when the class has
 * none (the caller adds a page and retries). *where: bit 63, page, block. */
static inline bool tmem__small_take(tmem__small *s, uint32_t cls, uint64_t size, uint64_t *off, uint64_t *bytes,
                                    uint64_t *where) {
    uint32_t p = s->head[cls];
    if (p == TMEM__SMALL_NIL) return false;
    tmem__small_page *pg = &s->pages[p];
    uint32_t w = (uint32_t)__builtin_ctzll(pg->summary);
    uint64_t word = pg->free[w];
    uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(word);
    word &= word - 1;
    pg->free[w] = word;
    if (!word) pg->summary &= ~(1ull << w);
    if (pg->nfree-- == pg->nblocks) s->empty[cls]--;
    if (!pg->nfree) {
        s->head[cls] = pg->next;
        if (pg->next != TMEM__SMALL_NIL) s->pages[pg->next].prev = TMEM__SMALL_NIL;
        pg->listed = 0;
    }
    /* the page's allocation count as the block's generation: a store only
     * (reading the old tag would be a cache miss on the allocation path) */
    uint32_t gen = ++pg->epoch & 63u;
    pg->tag[i] = (uint16_t)(gen << TMEM__SMALL_SLACK_BITS | (pg->bsize - (uint32_t)size));
    *where = 1ull << 63 | (uint64_t)p << 16 | i; /* tmem__small_handle adds generations */
    *off = pg->offset + (uint64_t)i * pg->bsize;
    *bytes = pg->bsize;
    return true;
}

/* Add a fresh page for class cls at heap offset `off` (a TLSF block of
 * TMEM__SMALL_PAGE bytes, record tlsf_index, committed). TMEM_E_NO_MEMORY. */
tmem_status tmem__small_add_page(tmem__small *s, uint32_t cls, uint64_t off, uint32_t tlsf_index);

/* What is at off (see tmem__small_find); *hit filled for LIVE and FREE. */
static inline tmem__small_find tmem__small_lookup(const tmem__small *s, uint64_t off, tmem__small_hit *hit) {
    uint64_t m = off >> TMEM__SMALL_PAGE_SHIFT;
    uint32_t p = m < s->nmap ? s->map[m] : 0;
    if (!p) return TMEM__SMALL_NONE;
    const tmem__small_page *pg = &s->pages[p - 1];
    uint32_t rel = (uint32_t)(off - pg->offset);
    uint32_t i = (uint32_t)(((uint64_t)rel * pg->inv) >> 32);
    if (i * pg->bsize != rel || i >= pg->nblocks) return TMEM__SMALL_INSIDE;
    hit->page = p - 1;
    hit->index = i;
    hit->bytes = pg->bsize;
    hit->size = pg->bsize - tmem__small_slack(pg, i);
    return pg->free[i >> 6] >> (i & 63) & 1 ? TMEM__SMALL_FREE : TMEM__SMALL_LIVE;
}

/* The live block a handle names (hit filled), or false when the handle is
 * stale (*foreign: it never named a block of this heap). */
static inline bool tmem__small_resolve(const tmem__small *s, uint64_t handle, tmem__small_hit *hit, bool *foreign) {
    uint32_t p = (uint32_t)(handle >> 16), i = (uint32_t)(handle & 0xFFFF);
    *foreign = p >= s->npages;
    if (*foreign) return false;
    const tmem__small_page *pg = &s->pages[p];
    *foreign = i >= TMEM__SMALL_PAGE / TMEM__SMALL_MIN_GRANULE;
    if (*foreign || !pg->in_use || i >= pg->nblocks || (pg->free[i >> 6] >> (i & 63) & 1)) return false;
    if (tmem__small_handle(pg, p, i) != handle) return false;
    hit->page = p;
    hit->index = i;
    hit->bytes = pg->bsize;
    hit->size = pg->bsize - tmem__small_slack(pg, i);
    return true;
}

/* The cold halves of tmem__small_release (small.c). */
void tmem__small_relist(tmem__small *s, uint32_t p);
bool tmem__small_emptied(tmem__small *s, uint32_t p, uint32_t *tlsf_index);

/* Free the live block of a lookup. Returns true when the page became empty
 * and should go back to TLSF (the caller frees record *tlsf_index there;
 * the page is already unmapped). */
static inline bool tmem__small_release(tmem__small *s, const tmem__small_hit *hit,
                                       uint32_t *tlsf_index) {
    tmem__small_page *pg = &s->pages[hit->page];
    uint32_t i = hit->index;
    pg->free[i >> 6] |= 1ull << (i & 63);
    pg->summary |= 1ull << (i >> 6);
    if (__builtin_expect(!pg->listed, 0)) tmem__small_relist(s, hit->page);
    if (__builtin_expect(++pg->nfree < pg->nblocks, 1)) return false;
    return tmem__small_emptied(s, hit->page, tlsf_index);
}

/* Unmap every empty page; fn gets each page's TLSF record to free. */
typedef void (*tmem__small_give_fn)(void *ctx, uint32_t tlsf_index);
void tmem__small_trim(tmem__small *s, tmem__small_give_fn fn, void *ctx);
/* Forget every page (the TLSF under them is being reset). */
void tmem__small_reset(tmem__small *s);
/* Visit every live block: offset, block bytes, size asked for. */
typedef bool (*tmem__small_visit)(void *ctx, uint64_t off, uint64_t bytes, uint64_t size);
void tmem__small_walk(const tmem__small *s, tmem__small_visit fn, void *ctx);
/* Invariants (slow): TMEM_OK or TMEM_E_CORRUPT. */
tmem_status tmem__small_check(const tmem__small *s);

#endif

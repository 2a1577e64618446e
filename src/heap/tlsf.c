/*
 * TLSF over offsets. See tlsf.h for the contract; the tricks, in order:
 *
 * 1. Sizes are counted in granules (u = size >> granule_log2). Buckets:
 *    u < 32 map linearly (fl 0, sl u: exact small sizes); above, fl is the
 *    position of the top bit (shifted so fl 1 starts at 32) and sl the next
 *    5 bits: 32 subdivisions per power of two, so a bucket's sizes differ by
 *    at most 1/32 (3%) and internal fragmentation from "good fit" is bounded.
 * 2. Search rounds the request up to the next bucket boundary, so the head of
 *    any non-empty bucket at or above it fits: one ctz on the second-level
 *    bitmap of that row, else one ctz on the first-level bitmap. O(1).
 * 3. Alignment (of offset + bias) above the granule searches for size + align - granule (the
 *    worst-case front padding) and splits the padding off as a free block.
 *    Its physical predecessor is used (free neighbours are always merged),
 *    so the padding needs no merge.
 * 4. Records are recycled through a chain; a hash keyed by block start finds
 *    any block (free or used) in O(1) expected: linear probing on a table
 *    of (offset, index) slots (keys inline: probes never touch records)
 *    kept at most half full, deletions by backward shift (no tombstones).
 * 5. Every operation reserves its metadata (two records, two hash slots)
 *    before touching anything, so TMEM_E_NO_MEMORY leaves the range as it was.
 */
#include <string.h>
#include "heap/tlsf.h"

#define NIL TMEM__TLSF_NIL

_Static_assert(TMEM__TLSF_SL_COUNT <= 32, "sl bitmap is 32 bits");

/* ---- size classes ---- */

static inline uint32_t fls64(uint64_t x) { return 63u - (uint32_t)__builtin_clzll(x); }

static void mapping(uint64_t units, uint32_t *fl, uint32_t *sl) {
    if (units < TMEM__TLSF_SL_COUNT) {
        *fl = 0;
        *sl = (uint32_t)units;
        return;
    }
    uint32_t f = fls64(units);
    *fl = f - TMEM__TLSF_SL_LOG2 + 1;
    *sl = (uint32_t)(units >> (f - TMEM__TLSF_SL_LOG2)) ^ TMEM__TLSF_SL_COUNT;
}

/* Round up to the next bucket boundary so any block of the found bucket fits. */
static uint64_t round_to_bucket(uint64_t units) {
    if (units < TMEM__TLSF_SL_COUNT) return units;
    uint64_t step = (uint64_t)1 << (fls64(units) - TMEM__TLSF_SL_LOG2);
    return (units + step - 1) & ~(step - 1);
}

/* ---- free lists ---- */

static void list_insert(tmem__tlsf *t, uint32_t i) {
    tmem__tlsf_block *b = &t->blocks[i];
    uint32_t fl, sl;
    mapping(b->size >> t->granule_log2, &fl, &sl);
    uint32_t head = t->heads[fl][sl];
    b->prev_free = NIL;
    b->next_free = head;
    if (head != NIL) t->blocks[head].prev_free = i;
    t->heads[fl][sl] = i;
    t->fl_bitmap |= 1ull << fl;
    t->sl_bitmap[fl] |= 1u << sl;
    b->is_free = 1;
}

static void list_remove(tmem__tlsf *t, uint32_t i) {
    tmem__tlsf_block *b = &t->blocks[i];
    uint32_t fl, sl;
    mapping(b->size >> t->granule_log2, &fl, &sl);
    if (b->prev_free != NIL) t->blocks[b->prev_free].next_free = b->next_free;
    else t->heads[fl][sl] = b->next_free;
    if (b->next_free != NIL) t->blocks[b->next_free].prev_free = b->prev_free;
    if (t->heads[fl][sl] == NIL) {
        t->sl_bitmap[fl] &= ~(1u << sl);
        if (!t->sl_bitmap[fl]) t->fl_bitmap &= ~(1ull << fl);
    }
    b->is_free = 0;
    b->prev_free = b->next_free = NIL;
}

/* Head of the first non-empty bucket at or above (fl, sl), or NIL. */
static uint32_t find_suitable(const tmem__tlsf *t, uint32_t fl, uint32_t sl) {
    if (fl >= TMEM__TLSF_FL_COUNT) return NIL;
    uint32_t sl_map = sl < 32 ? t->sl_bitmap[fl] & (~0u << sl) : 0;
    if (!sl_map) {
        uint64_t fl_map = fl + 1 < 64 ? t->fl_bitmap & (~0ull << (fl + 1)) : 0;
        if (!fl_map) return NIL;
        fl = (uint32_t)__builtin_ctzll(fl_map);
        sl_map = t->sl_bitmap[fl];
    }
    return t->heads[fl][(uint32_t)__builtin_ctz(sl_map)];
}

/* ---- hash: block start -> record ---- */

static inline uint32_t slot_of(const tmem__tlsf *t, uint64_t offset) {
    uint64_t h = (offset >> t->granule_log2) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32) & t->table_mask;
}

static uint32_t table_find(const tmem__tlsf *t, uint64_t offset) {
    for (uint32_t s = slot_of(t, offset);; s = (s + 1) & t->table_mask) {
        const tmem__tlsf_slot *e = &t->table[s];
        if (e->index == NIL || e->offset == offset) return e->index;
    }
}

static void table_put(tmem__tlsf *t, uint64_t offset, uint32_t i) {
    uint32_t s = slot_of(t, offset);
    while (t->table[s].index != NIL) s = (s + 1) & t->table_mask;
    t->table[s].offset = offset;
    t->table[s].index = i;
}

static void table_insert(tmem__tlsf *t, uint32_t i) { table_put(t, t->blocks[i].offset, i); }

static void table_delete(tmem__tlsf *t, uint64_t offset) {
    uint32_t s = slot_of(t, offset);
    while (t->table[s].offset != offset || t->table[s].index == NIL) s = (s + 1) & t->table_mask;
    /* Backward shift: pull later entries of the cluster whose home slot is
     * not cyclically inside (s, j] into the hole. */
    for (uint32_t j = (s + 1) & t->table_mask; t->table[j].index != NIL; j = (j + 1) & t->table_mask) {
        uint32_t home = slot_of(t, t->table[j].offset);
        if (((j - home) & t->table_mask) >= ((j - s) & t->table_mask)) {
            t->table[s] = t->table[j];
            s = j;
        }
    }
    t->table[s].index = NIL;
}

static void table_clear(tmem__tlsf_slot *tab, uint64_t slots) {
    for (uint64_t s = 0; s < slots; s++) tab[s].index = NIL;
}

/* ---- records ---- */

static uint32_t record_take(tmem__tlsf *t) {
    uint32_t i = t->recycled;
    if (i != NIL) {
        t->recycled = t->blocks[i].next_free;
        t->nrecycled--;
    } else {
        i = t->top++;
        /* generations survive reset (stale handles stay stale) */
        if (i >= t->inited) {
            t->blocks[i].gen = 0;
            t->inited = i + 1;
        }
    }
    t->blocks[i].live = 1;
    t->block_count++;
    return i;
}

static void record_give(tmem__tlsf *t, uint32_t i) {
    t->blocks[i].live = 0;
    t->blocks[i].is_free = 0;
    t->blocks[i].next_free = t->recycled;
    t->recycled = i;
    t->nrecycled++;
    t->block_count--;
}

/* Make room for `n` more blocks: records and hash slots (load <= 1/2). */
static tmem_status reserve(tmem__tlsf *t, uint32_t n) {
    uint64_t need = (uint64_t)t->block_count + n;
    if (need >= NIL / 4) return tmem__err(TMEM_E_FULL);
    if (t->cap - t->top + t->nrecycled < n) {
        uint32_t cap = t->cap * 2;
        while (cap - t->top < n || cap < t->inited) cap *= 2;
        tmem__tlsf_block *nb = tmem__meta_alloc(&t->a, (size_t)cap * sizeof *nb);
        if (!nb) return tmem__err(TMEM_E_NO_MEMORY);
        memcpy(nb, t->blocks, (size_t)t->inited * sizeof *nb);
        tmem__meta_free(&t->a, t->blocks, (size_t)t->cap * sizeof *nb);
        t->blocks = nb;
        t->cap = cap;
    }
    uint64_t slots = (uint64_t)t->table_mask + 1;
    if (need * 2 > slots) {
        uint64_t ns = slots * 2;
        while (need * 2 > ns) ns *= 2;
        tmem__tlsf_slot *nt = tmem__meta_alloc(&t->a, (size_t)ns * sizeof *nt);
        if (!nt) return tmem__err(TMEM_E_NO_MEMORY);
        tmem__tlsf_slot *old = t->table;
        t->table = nt;
        t->table_mask = (uint32_t)(ns - 1);
        table_clear(nt, ns);
        for (uint64_t s = 0; s < slots; s++)
            if (old[s].index != NIL) table_put(t, old[s].offset, old[s].index);
        tmem__meta_free(&t->a, old, (size_t)slots * sizeof *old);
    }
    return TMEM_OK;
}

/* ---- public (internal) API ---- */

static void start_empty(tmem__tlsf *t) {
    t->fl_bitmap = 0;
    memset(t->sl_bitmap, 0, sizeof t->sl_bitmap);
    memset(t->heads, 0xFF, sizeof t->heads);
    table_clear(t->table, (uint64_t)t->table_mask + 1);
    t->top = 0;
    t->recycled = NIL;
    t->nrecycled = 0;
    t->block_count = t->used_count = 0;
    t->free_bytes = t->size;
    tmem__recent_clear(&t->recent);
    uint32_t i = record_take(t);
    tmem__tlsf_block *b = &t->blocks[i];
    b->offset = 0;
    b->size = t->size;
    b->user = 0;
    b->prev_phys = b->next_phys = NIL;
    b->is_free = 0;
    list_insert(t, i);
    table_insert(t, i);
}

tmem_status tmem__tlsf_init(tmem__tlsf *t, uint64_t size, uint64_t granule, const tmem_allocator *a) {
    if (!t || !tmem__is_pow2(granule)) return tmem__err(TMEM_E_INVALID_ARG);
    memset(t, 0, sizeof *t);
    if (a) t->a = *a;
    t->granule_log2 = (uint32_t)__builtin_ctzll(granule);
    t->size = size & ~(granule - 1);
    if (!t->size || size >= (1ull << 62)) return tmem__err(TMEM_E_INVALID_ARG);
    t->cap = 64;
    t->blocks = tmem__meta_alloc(&t->a, t->cap * sizeof *t->blocks);
    t->table = tmem__meta_alloc(&t->a, 128 * sizeof *t->table);
    if (!t->blocks || !t->table) {
        tmem__meta_free(&t->a, t->blocks, t->cap * sizeof *t->blocks);
        tmem__meta_free(&t->a, t->table, 128 * sizeof *t->table);
        memset(t, 0, sizeof *t);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    t->table_mask = 127;
    start_empty(t);
    return TMEM_OK;
}

void tmem__tlsf_destroy(tmem__tlsf *t) {
    if (!t || !t->blocks) return;
    tmem__meta_free(&t->a, t->blocks, (size_t)t->cap * sizeof *t->blocks);
    tmem__meta_free(&t->a, t->table, ((size_t)t->table_mask + 1) * sizeof *t->table);
    memset(t, 0, sizeof *t);
}

void tmem__tlsf_reset(tmem__tlsf *t) { start_empty(t); }

/* Split `i` at `at` bytes: the tail becomes a new block (returned), linked
 * after i in physical order and entered in the hash. Records are reserved. */
static uint32_t split(tmem__tlsf *t, uint32_t i, uint64_t at) {
    uint32_t n = record_take(t);
    tmem__tlsf_block *b = &t->blocks[i], *nb = &t->blocks[n];
    nb->offset = b->offset + at;
    nb->size = b->size - at;
    nb->user = 0;
    nb->is_free = 0;
    nb->prev_free = nb->next_free = NIL;
    nb->prev_phys = i;
    nb->next_phys = b->next_phys;
    if (b->next_phys != NIL) t->blocks[b->next_phys].prev_phys = n;
    b->next_phys = n;
    b->size = at;
    table_insert(t, n);
    return n;
}

/* Block that fits `units` granules at `align`, or NIL: O(1) good fit, then a
 * bounded scan of the exact bucket (a block there may fit though the rounded
 * search skipped it: matters only when the range is nearly full). */
static uint32_t find_fit(const tmem__tlsf *t, uint64_t size, uint64_t align, uint64_t search) {
    uint32_t fl, sl;
    mapping(round_to_bucket(search >> t->granule_log2), &fl, &sl);
    uint32_t i = find_suitable(t, fl, sl);
    if (i != NIL) return i;
    mapping(size >> t->granule_log2, &fl, &sl);
    uint32_t budget = TMEM__TLSF_FALLBACK_SCAN;
    for (i = t->heads[fl][sl]; i != NIL && budget--; i = t->blocks[i].next_free) {
        const tmem__tlsf_block *b = &t->blocks[i];
        uint64_t pad = ((b->offset + t->bias + align - 1) & ~(align - 1)) - (b->offset + t->bias);
        if (b->size >= pad && b->size - pad >= size) return i;
    }
    return NIL;
}

tmem_status tmem__tlsf_alloc(tmem__tlsf *t, uint64_t size, uint64_t align, uint64_t user,
                             uint64_t *out_offset, uint64_t *out_size) {
    uint32_t index;
    return tmem__tlsf_alloc_index(t, size, align, user, out_offset, out_size, &index);
}

tmem_status tmem__tlsf_alloc_index(tmem__tlsf *t, uint64_t size, uint64_t align, uint64_t user, uint64_t *out_offset,
                                   uint64_t *out_size, uint32_t *out_index) {
    uint64_t granule = 1ull << t->granule_log2;
    if (out_offset) *out_offset = TMEM_OFFSET_NONE;
    if (!size) return tmem__err(TMEM_E_INVALID_ARG);
    if (!tmem__is_pow2(align)) return tmem__err(TMEM_E_ALIGNMENT);
    if (align < granule) align = granule;
    if (align > t->size) return tmem__err(TMEM_E_FULL);
    uint64_t search;
    if (!tmem__align_up(size, granule, &size) || size > t->size ||
        tmem__add_overflow(size, align - granule, &search))
        return tmem__err(TMEM_E_FULL);
    if (size > t->free_bytes) return tmem__err(TMEM_E_FULL);
    tmem_status st = reserve(t, 2);
    if (st != TMEM_OK) return st;
    uint32_t i = find_fit(t, size, align, search);
    if (i == NIL) return tmem__err(TMEM_E_FULL);
    list_remove(t, i);
    tmem__tlsf_block *b = &t->blocks[i];
    uint64_t pad = ((b->offset + t->bias + align - 1) & ~(align - 1)) - (b->offset + t->bias);
    if (pad) {
        uint32_t n = split(t, i, pad);
        list_insert(t, i); /* the padding stays free; its predecessor is used */
        i = n;
    }
    b = &t->blocks[i];
    if (b->size - size >= granule) {
        uint32_t n = split(t, i, size);
        list_insert(t, n); /* its successor is used: no merge needed */
        b = &t->blocks[i];
    }
    b->user = user;
    b->gen++;
    t->free_bytes -= b->size;
    t->used_count++;
    if (out_offset) *out_offset = b->offset;
    if (out_size) *out_size = b->size;
    *out_index = i;
    return TMEM_OK;
}

tmem__tlsf_block *tmem__tlsf_find_used(tmem__tlsf *t, uint64_t offset) {
    if (offset >= t->size) return NULL;
    uint32_t i = table_find(t, offset);
    return i != NIL && !t->blocks[i].is_free ? &t->blocks[i] : NULL;
}

/* Merge i's physical successor into i: i grows, the successor's record goes
 * away. Neither may be on a free list (the caller takes them off). */
static void absorb_next(tmem__tlsf *t, uint32_t i) {
    tmem__tlsf_block *b = &t->blocks[i];
    uint32_t n = b->next_phys;
    tmem__tlsf_block *nb = &t->blocks[n];
    table_delete(t, nb->offset);
    b->size += nb->size;
    b->next_phys = nb->next_phys;
    if (nb->next_phys != NIL) t->blocks[nb->next_phys].prev_phys = i;
    record_give(t, n);
}

uint32_t tmem__tlsf_used_index(const tmem__tlsf *t, uint64_t offset) {
    uint32_t i = offset < t->size ? table_find(t, offset) : NIL;
    return i != NIL && !t->blocks[i].is_free ? i : NIL;
}

void tmem__tlsf_free_index(tmem__tlsf *t, uint32_t i, tmem__tlsf_freed *out) {
    tmem__tlsf_block *b = &t->blocks[i];
    uint64_t offset = b->offset;
    if (out) {
        out->size = b->size;
        out->user = b->user;
    }
    t->free_bytes += b->size;
    t->used_count--;
    b->user = 0;
    if (b->next_phys != NIL && t->blocks[b->next_phys].is_free) {
        list_remove(t, b->next_phys);
        absorb_next(t, i);
    }
    uint32_t p = t->blocks[i].prev_phys;
    if (p != NIL && t->blocks[p].is_free) {
        list_remove(t, p);
        absorb_next(t, p);
        i = p;
    }
    list_insert(t, i);
    tmem__recent_push(&t->recent, offset);
    if (out) {
        out->span_offset = t->blocks[i].offset;
        out->span_size = t->blocks[i].size;
    }
}

tmem_status tmem__tlsf_free(tmem__tlsf *t, uint64_t offset, tmem__tlsf_freed *out) {
    uint32_t i = offset < t->size ? table_find(t, offset) : NIL;
    if (i == NIL) return tmem__err(tmem__recent_has(&t->recent, offset) ? TMEM_E_DOUBLE_FREE : TMEM_E_FOREIGN);
    if (t->blocks[i].is_free) return tmem__err(TMEM_E_DOUBLE_FREE);
    tmem__tlsf_free_index(t, i, out);
    return TMEM_OK;
}

uint64_t tmem__tlsf_largest_free(const tmem__tlsf *t) {
    if (!t->fl_bitmap) return 0;
    uint32_t fl = fls64(t->fl_bitmap);
    uint32_t sl = 31u - (uint32_t)__builtin_clz(t->sl_bitmap[fl]);
    uint64_t best = 0;
    for (uint32_t i = t->heads[fl][sl]; i != NIL; i = t->blocks[i].next_free)
        if (t->blocks[i].size > best) best = t->blocks[i].size;
    return best;
}

void tmem__tlsf_walk(const tmem__tlsf *t, tmem__tlsf_visit fn, void *ctx) {
    uint32_t i = table_find(t, 0); /* the first block always starts at 0 */
    for (; i != NIL; i = t->blocks[i].next_phys)
        if (!fn(ctx, &t->blocks[i])) return;
}

/* ---- checker ---- */

#define CHECK_(c) do { if (!(c)) return tmem__err(TMEM_E_CORRUPT); } while (0)

static tmem_status check_lists(const tmem__tlsf *t, uint32_t *listed) {
    *listed = 0;
    for (uint32_t fl = 0; fl < TMEM__TLSF_FL_COUNT; fl++) {
        CHECK_(!!(t->fl_bitmap & (1ull << fl)) == !!t->sl_bitmap[fl]);
        for (uint32_t sl = 0; sl < TMEM__TLSF_SL_COUNT; sl++) {
            uint32_t head = t->heads[fl][sl];
            CHECK_(!!(t->sl_bitmap[fl] & (1u << sl)) == (head != NIL));
            uint32_t prev = NIL;
            for (uint32_t i = head; i != NIL; i = t->blocks[i].next_free) {
                CHECK_(i < t->top && t->blocks[i].live && t->blocks[i].is_free);
                CHECK_(t->blocks[i].prev_free == prev);
                uint32_t f, s;
                mapping(t->blocks[i].size >> t->granule_log2, &f, &s);
                CHECK_(f == fl && s == sl);
                CHECK_(++*listed <= t->block_count);
                prev = i;
            }
        }
    }
    return TMEM_OK;
}

tmem_status tmem__tlsf_check(const tmem__tlsf *t) {
    CHECK_(t && t->blocks && t->table);
    uint32_t listed;
    tmem_status st = check_lists(t, &listed);
    if (st != TMEM_OK) return st;
    uint64_t granule = 1ull << t->granule_log2, expect = 0, free_bytes = 0;
    uint32_t n = 0, nfree = 0, nused = 0, prev = NIL;
    for (uint32_t i = table_find(t, 0); i != NIL; i = t->blocks[i].next_phys) {
        const tmem__tlsf_block *b = &t->blocks[i];
        CHECK_(i < t->top && b->live && ++n <= t->block_count);
        CHECK_(b->offset == expect && b->size && !(b->size & (granule - 1)));
        CHECK_(b->prev_phys == prev);
        CHECK_(table_find(t, b->offset) == i);
        if (b->is_free) {
            nfree++;
            free_bytes += b->size;
            CHECK_(prev == NIL || !t->blocks[prev].is_free); /* coalesced */
        } else {
            nused++;
        }
        expect = b->offset + b->size;
        prev = i;
    }
    CHECK_(expect == t->size && n == t->block_count && nused == t->used_count);
    CHECK_(nfree == listed && free_bytes == t->free_bytes);
    uint32_t entries = 0;
    for (uint64_t s = 0; s <= t->table_mask; s++) {
        uint32_t i = t->table[s].index;
        if (i == NIL) continue;
        CHECK_(i < t->top && t->blocks[i].live && t->blocks[i].offset == t->table[s].offset);
        entries++;
    }
    CHECK_(entries == t->block_count && (uint64_t)entries * 2 <= (uint64_t)t->table_mask + 1);
    uint32_t recycled = 0;
    for (uint32_t i = t->recycled; i != NIL; i = t->blocks[i].next_free) {
        CHECK_(i < t->top && !t->blocks[i].live && ++recycled <= t->top);
    }
    CHECK_(recycled + t->block_count == t->top && recycled == t->nrecycled);
    return TMEM_OK;
}

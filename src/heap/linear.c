/* Linear / ring allocation over offsets; see linear.h. */
#include <string.h>
#include "heap/linear.h"

static inline tmem__linear_rec *at(const tmem__linear *l, uint32_t i) { return &l->recs[(l->first + i) % l->cap]; }
static inline uint64_t vtail(const tmem__linear *l) { return l->count ? at(l, 0)->vpos : l->vhead; }

tmem_status tmem__linear_init(tmem__linear *l, uint64_t size, uint64_t granule, bool ring, const tmem_allocator *a) {
    if (!l || !tmem__is_pow2(granule)) return tmem__err(TMEM_E_INVALID_ARG);
    memset(l, 0, sizeof *l);
    if (a) l->a = *a;
    l->size = size & ~(granule - 1);
    if (!l->size || size >= (1ull << 62)) return tmem__err(TMEM_E_INVALID_ARG);
    l->granule = granule;
    l->ring = ring;
    l->cap = 64;
    l->recs = tmem__meta_alloc(&l->a, l->cap * sizeof *l->recs);
    if (!l->recs) return tmem__err(TMEM_E_NO_MEMORY);
    tmem__recent_clear(&l->recent);
    return TMEM_OK;
}

void tmem__linear_destroy(tmem__linear *l) {
    if (!l || !l->recs) return;
    tmem__meta_free(&l->a, l->recs, (size_t)l->cap * sizeof *l->recs);
    memset(l, 0, sizeof *l);
}

void tmem__linear_reset(tmem__linear *l) {
    l->first = l->count = l->live_count = 0;
    l->vhead = l->live_bytes = 0;
    tmem__recent_clear(&l->recent);
}

static tmem_status grow(tmem__linear *l) {
    if (l->cap >= UINT32_MAX / 2) return tmem__err(TMEM_E_FULL);
    uint32_t cap = l->cap * 2;
    tmem__linear_rec *n = tmem__meta_alloc(&l->a, (size_t)cap * sizeof *n);
    if (!n) return tmem__err(TMEM_E_NO_MEMORY);
    for (uint32_t i = 0; i < l->count; i++) n[i] = *at(l, i);
    tmem__meta_free(&l->a, l->recs, (size_t)l->cap * sizeof *n);
    l->recs = n;
    l->cap = cap;
    l->first = 0;
    return TMEM_OK;
}

tmem_status tmem__linear_alloc(tmem__linear *l, uint64_t size, uint64_t align, uint64_t user,
                               uint64_t *out_offset, uint64_t *out_size) {
    if (out_offset) *out_offset = TMEM_OFFSET_NONE;
    if (!size) return tmem__err(TMEM_E_INVALID_ARG);
    if (!tmem__is_pow2(align)) return tmem__err(TMEM_E_ALIGNMENT);
    if (align < l->granule) align = l->granule;
    if (!tmem__align_up(size, l->granule, &size) || size > l->size || align > l->size)
        return tmem__err(TMEM_E_FULL);
    if (l->count == l->cap) {
        tmem_status st = grow(l);
        if (st != TMEM_OK) return st;
    }
    uint64_t head = l->count ? l->vhead : 0; /* empty: rewind */
    uint64_t phys = head % l->size, lap = head - phys, b = l->bias % align;
    uint64_t aligned = ((phys + b + align - 1) & ~(align - 1)) - b, first = b ? align - b : 0;
    uint64_t vpos;
    if (aligned + size <= l->size) vpos = lap + aligned;
    else if (l->ring && first + size <= l->size) vpos = lap + l->size + first; /* wrap */
    else return tmem__err(TMEM_E_FULL);
    /* The live span (oldest .. newest) must fit in one lap. */
    if (l->count && vpos + size > vtail(l) + l->size) return tmem__err(TMEM_E_FULL);
    if (vpos + size > (1ull << 63)) return tmem__err(TMEM_E_FULL); /* after ~2^63 bytes of churn */
    tmem__linear_rec *r = at(l, l->count);
    r->vpos = vpos;
    r->size = size;
    r->user = user;
    r->freed = 0;
    l->count++;
    l->live_count++;
    l->vhead = vpos + size;
    l->live_bytes += size;
    if (out_offset) *out_offset = vpos % l->size;
    if (out_size) *out_size = size;
    return TMEM_OK;
}

/* Index of the record at virtual position v, or count. */
static uint32_t search(const tmem__linear *l, uint64_t v) {
    uint32_t lo = 0, hi = l->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (at(l, mid)->vpos < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < l->count && at(l, lo)->vpos == v ? lo : l->count;
}

/* Any record (live or freed-in-the-middle) at offset: live records span at
 * most two laps, the tail's and the next. */
static uint32_t find_index(const tmem__linear *l, uint64_t offset) {
    if (!l->count || offset >= l->size) return l->count;
    uint64_t t = vtail(l), v = t - t % l->size + offset;
    uint32_t i = search(l, v);
    return i < l->count ? i : search(l, v + l->size);
}

tmem__linear_rec *tmem__linear_find(tmem__linear *l, uint64_t offset) {
    uint32_t i = find_index(l, offset);
    return i < l->count && !at(l, i)->freed ? at(l, i) : NULL;
}

tmem_status tmem__linear_free(tmem__linear *l, uint64_t offset, tmem__linear_rec *out) {
    uint32_t i = find_index(l, offset);
    if (i == l->count) return tmem__err(tmem__recent_has(&l->recent, offset) ? TMEM_E_DOUBLE_FREE : TMEM_E_FOREIGN);
    tmem__linear_rec *r = at(l, i);
    if (r->freed) return tmem__err(TMEM_E_DOUBLE_FREE);
    if (out) *out = *r;
    r->freed = 1;
    l->live_count--;
    l->live_bytes -= r->size;
    /* Space returns at the ends only. */
    while (l->count && at(l, l->count - 1)->freed) l->count--;
    while (l->count && at(l, 0)->freed) {
        l->first = (l->first + 1) % l->cap;
        l->count--;
    }
    if (l->count) {
        tmem__linear_rec *last = at(l, l->count - 1);
        l->vhead = last->vpos + last->size;
    } else {
        l->first = 0;
        l->vhead = 0;
    }
    tmem__recent_push(&l->recent, offset);
    return TMEM_OK;
}

uint64_t tmem__linear_largest_free(const tmem__linear *l) {
    if (!l->count) return l->size;
    uint64_t t = vtail(l), phys = l->vhead % l->size, lap = l->vhead - phys;
    uint64_t end = lap + l->size < t + l->size ? lap + l->size : t + l->size;
    uint64_t best = end > l->vhead ? end - l->vhead : 0;
    if (l->ring && t > lap && t - lap > best) best = t - lap; /* after a wrap */
    return best;
}

void tmem__linear_walk(const tmem__linear *l, tmem__linear_visit fn, void *ctx) {
    for (uint32_t i = 0; i < l->count; i++) {
        const tmem__linear_rec *r = at(l, i);
        if (!r->freed && !fn(ctx, r->vpos % l->size, r)) return;
    }
}

#define CHECK_(c) do { if (!(c)) return tmem__err(TMEM_E_CORRUPT); } while (0)

tmem_status tmem__linear_check(const tmem__linear *l) {
    CHECK_(l && l->recs && l->count <= l->cap);
    uint64_t prev_end = 0, live = 0;
    uint32_t nlive = 0;
    for (uint32_t i = 0; i < l->count; i++) {
        const tmem__linear_rec *r = at(l, i);
        CHECK_(r->size && r->size % l->granule == 0);
        CHECK_(r->vpos >= prev_end);
        CHECK_(r->vpos % l->size + r->size <= l->size); /* never straddles a lap */
        prev_end = r->vpos + r->size;
        if (!r->freed) {
            live += r->size;
            nlive++;
        }
    }
    CHECK_(live == l->live_bytes && nlive == l->live_count);
    if (l->count) {
        CHECK_(!at(l, 0)->freed && !at(l, l->count - 1)->freed);
        CHECK_(l->vhead == prev_end && l->vhead - vtail(l) <= l->size);
        if (!l->ring) CHECK_(l->vhead <= l->size);
    } else {
        CHECK_(l->vhead == 0 && live == 0);
    }
    return TMEM_OK;
}

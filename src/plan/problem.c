/*
 * Planner problems: buffers as the caller gives them, with ids kept in one
 * pool and a small open-addressing table to refuse duplicate ids in O(1).
 * Also builds the solvers' instance: times compressed to sections.
 */
#include "plan_internal.h"
#include <stdlib.h>
#include <string.h>

#define PLAN_MAX_BUFFERS 0x7fffffffu
#define PLAN_ID_MAX 255

tmem_status tmem_plan_problem_create(tmem_plan_problem **out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = NULL;
    tmem_plan_problem *p = calloc(1, sizeof *p);
    if (!p) return tmem__err(TMEM_E_NO_MEMORY);
    *out = p;
    return TMEM_OK;
}

void tmem_plan_problem_destroy(tmem_plan_problem *p) {
    if (!p) return;
    free(p->items);
    free(p->ids);
    free(p->hash);
    free(p);
}

uint32_t tmem_plan_problem_count(const tmem_plan_problem *p) { return p ? p->n : 0; }

const char *tmem__plan_problem_id(const tmem_plan_problem *p, uint32_t i) { return p->ids + p->items[i].id; }

static uint64_t hash_str(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* Slot of `id` in the table: where it is, or the empty slot it would take. */
static uint32_t hash_find(const tmem_plan_problem *p, const char *id, size_t len) {
    uint32_t mask = p->hash_cap - 1, h = (uint32_t)hash_str(id, len) & mask;
    while (p->hash[h]) {
        const char *other = p->ids + p->items[p->hash[h] - 1].id;
        if (strlen(other) == len && memcmp(other, id, len) == 0) return h;
        h = (h + 1) & mask;
    }
    return h;
}

static bool hash_grow(tmem_plan_problem *p) {
    uint32_t cap = p->hash_cap ? p->hash_cap * 2 : 64;
    if (cap < p->hash_cap) return false;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return false;
    uint32_t *old = p->hash;
    p->hash = t;
    p->hash_cap = cap;
    for (uint32_t i = 0; i < p->n; i++) {
        const char *id = p->ids + p->items[i].id;
        t[hash_find(p, id, strlen(id))] = i + 1;
    }
    free(old);
    return true;
}

static bool reserve(void **ptr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return false;
        c *= 2;
    }
    void *q = realloc(*ptr, c * elem);
    if (!q) return false;
    *ptr = q;
    *cap = c;
    return true;
}

tmem_status tmem_plan_problem_add(tmem_plan_problem *p, const tmem_plan_buffer *b, uint32_t *index) {
    if (!p || !b) return tmem__err(TMEM_E_INVALID_ARG);
    if (b->size == 0 || b->end <= b->start) return tmem__err(TMEM_E_INVALID_ARG);
    if (b->flags & ~(uint32_t)(TMEM_PLAN_BUFFER_FIXED | TMEM_PLAN_BUFFER_NO_ALIAS)) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t align = b->alignment ? b->alignment : 1;
    if (!tmem__is_pow2(align)) return tmem__err(TMEM_E_ALIGNMENT);
    uint64_t t;
    if (b->flags & TMEM_PLAN_BUFFER_FIXED) {
        if (b->offset % align) return tmem__err(TMEM_E_INVALID_ARG);
        if (tmem__add_overflow(b->offset, b->size, &t)) return tmem__err(TMEM_E_OVERFLOW);
    }
    uint64_t sum;
    if (tmem__add_overflow(p->sum, b->size, &sum)) return tmem__err(TMEM_E_OVERFLOW);
    if (p->n >= PLAN_MAX_BUFFERS) return tmem__err(TMEM_E_OVERFLOW);

    char gen[24];
    const char *id = b->id;
    if (!id) {
        snprintf(gen, sizeof gen, "b%u", p->n);
        id = gen;
    }
    size_t len = strnlen(id, PLAN_ID_MAX);
    if ((uint64_t)(p->n + 1) * 2 > p->hash_cap && !hash_grow(p)) return tmem__err(TMEM_E_NO_MEMORY);
    uint32_t slot = hash_find(p, id, len);
    if (p->hash[slot]) return tmem__err(TMEM_E_EXISTS);
    if (p->ids_len + len + 1 > UINT32_MAX) return tmem__err(TMEM_E_OVERFLOW);
    if (!reserve((void **)&p->items, &p->cap, (size_t)p->n + 1, sizeof *p->items)) return tmem__err(TMEM_E_NO_MEMORY);
    if (!reserve((void **)&p->ids, &p->ids_cap, p->ids_len + len + 1, 1)) return tmem__err(TMEM_E_NO_MEMORY);
    memcpy(p->ids + p->ids_len, id, len);
    p->ids[p->ids_len + len] = 0;
    tmem__plan_item *it = &p->items[p->n];
    it->size = b->size;
    it->align = align;
    it->offset = (b->flags & TMEM_PLAN_BUFFER_FIXED) ? b->offset : 0;
    it->start = b->start;
    it->end = b->end;
    it->flags = b->flags;
    it->id = (uint32_t)p->ids_len;
    p->ids_len += len + 1;
    p->hash[slot] = p->n + 1;
    p->sum = sum;
    if (index) *index = p->n;
    p->n++;
    return TMEM_OK;
}

tmem_status tmem_plan_problem_get(const tmem_plan_problem *p, uint32_t i, tmem_plan_buffer *out) {
    if (out) {
        memset(out, 0, sizeof *out);
        out->offset = TMEM_OFFSET_NONE;
    }
    if (!p || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (i >= p->n) return tmem__err(TMEM_E_NOT_FOUND);
    const tmem__plan_item *it = &p->items[i];
    out->id = p->ids + it->id;
    out->size = it->size;
    out->alignment = it->align;
    out->start = it->start;
    out->end = it->end;
    out->offset = it->offset;
    out->flags = it->flags;
    return TMEM_OK;
}

uint64_t tmem__plan_gcd(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

tmem_status tmem__plan_inst_alloc(tmem__plan_inst *inst, uint32_t n, uint32_t nsec) {
    memset(inst, 0, sizeof *inst);
    size_t words = (size_t)n * 4 * sizeof(uint64_t) + (size_t)n * 3 * sizeof(uint32_t) + 64;
    char *blk = malloc(words);
    if (!blk) return tmem__err(TMEM_E_NO_MEMORY);
    inst->block_ = blk;
    inst->n = n;
    inst->nsec = nsec;
    inst->size = (uint64_t *)blk;
    inst->align = inst->size + n;
    inst->fixed = inst->align + n;
    inst->len = inst->fixed + n;
    inst->lo = (uint32_t *)(inst->len + n);
    inst->hi = inst->lo + n;
    inst->orig = inst->hi + n;
    inst->step = 0;
    return TMEM_OK;
}

void tmem__plan_inst_free(tmem__plan_inst *inst) {
    if (!inst) return;
    free(inst->block_);
    memset(inst, 0, sizeof *inst);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Index of v in the sorted unique array pts[0..m). */
static uint32_t point_index(const int64_t *pts, uint32_t m, int64_t v) {
    uint32_t lo = 0, hi = m;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (pts[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

tmem_status tmem__plan_inst_from_problem(const tmem_plan_problem *p, tmem__plan_inst *out) {
    uint32_t n = p->n;
    int64_t tmin = INT64_MAX, tmax = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        if (p->items[i].start < tmin) tmin = p->items[i].start;
        if (p->items[i].end > tmax) tmax = p->items[i].end;
    }
    int64_t *pts = malloc(((size_t)n * 2 + 2) * sizeof *pts);
    if (!pts) return tmem__err(TMEM_E_NO_MEMORY);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        pts[m++] = p->items[i].start;
        pts[m++] = p->items[i].end;
    }
    qsort(pts, m, sizeof *pts, cmp_i64);
    uint32_t u = 0;
    for (uint32_t i = 0; i < m; i++)
        if (u == 0 || pts[i] != pts[u - 1]) pts[u++] = pts[i];
    tmem_status st = tmem__plan_inst_alloc(out, n, u ? u - 1 : 0);
    if (st) {
        free(pts);
        return st;
    }
    uint64_t step = 0;
    for (uint32_t i = 0; i < n; i++) {
        const tmem__plan_item *it = &p->items[i];
        int64_t s = it->start, e = it->end;
        if (it->flags & TMEM_PLAN_BUFFER_NO_ALIAS) {
            s = tmin;
            e = tmax;
        }
        out->size[i] = it->size;
        out->align[i] = it->align;
        out->fixed[i] = (it->flags & TMEM_PLAN_BUFFER_FIXED) ? it->offset : TMEM_OFFSET_NONE;
        out->lo[i] = point_index(pts, u, s);
        out->hi[i] = point_index(pts, u, e);
        out->len[i] = (uint64_t)e - (uint64_t)s;
        out->orig[i] = i;
        step = tmem__plan_gcd(step, it->size);
        if (it->align > 1) step = tmem__plan_gcd(step, it->align);
        if (out->fixed[i] != TMEM_OFFSET_NONE && out->fixed[i]) step = tmem__plan_gcd(step, out->fixed[i]);
    }
    out->step = step ? step : 1;
    free(pts);
    return TMEM_OK;
}

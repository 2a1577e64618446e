/*
 * The heuristic portfolio. Each member sorts the buffers by one key and
 * places them one by one in the best gap among the already placed buffers
 * alive at the same time (best fit: the smallest gap that holds it, lowest
 * offset on ties; or first fit: the lowest gap), else on top of them. The
 * best arena of the portfolio wins. O(n log n + overlaps log overlaps) per
 * member with the overlap lists. Without them (too many pairs to list) the
 * members scan everything placed so far in offset order (O(n^2), TFLite's
 * own cost, but a streaming scan with no sort), next to a sweep in start
 * order with best fit over the live set.
 *
 * The classic greedy by size (TFLite's GreedyBySizeOffsetCalculation:
 * size descending, ties in input order, best fit) and greedy by conflicts
 * are always members, so the portfolio is never worse than either.
 */
#include "plan_internal.h"
#include <stdlib.h>
#include <string.h>

typedef struct span { uint64_t off, top; } span;

typedef struct order_key {
    double k1, k2;      /* descending */
    uint32_t idx;
} order_key;

static int cmp_key(const void *a, const void *b) {
    const order_key *x = a, *y = b;
    if (x->k1 != y->k1) return x->k1 > y->k1 ? -1 : 1;
    if (x->k2 != y->k2) return x->k2 > y->k2 ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Spans by offset: insertion sort for short runs, an iterative quicksort
 * (median of three, smaller side first) above that. qsort's indirect
 * comparisons dominated the portfolio's time. */
static void insertion(span *s, uint32_t m) {
    for (uint32_t i = 1; i < m; i++) {
        span v = s[i];
        uint32_t j = i;
        while (j && s[j - 1].off > v.off) {
            s[j] = s[j - 1];
            j--;
        }
        s[j] = v;
    }
}

static void sort_spans(span *s, uint32_t m) {
    uint32_t stack[128][2];
    int sp = 0;
    stack[sp][0] = 0;
    stack[sp++][1] = m;
    while (sp) {
        sp--;
        uint32_t lo = stack[sp][0], hi = stack[sp][1];
        while (hi - lo > 16) {
            uint32_t mid = lo + (hi - lo) / 2;
            uint64_t a = s[lo].off, b = s[mid].off, c = s[hi - 1].off;
            uint64_t pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
            uint32_t i = lo, j = hi - 1;
            for (;;) {
                while (s[i].off < pivot) i++;
                while (s[j].off > pivot) j--;
                if (i >= j) break;
                span t = s[i];
                s[i] = s[j];
                s[j] = t;
                i++;
                j--;
            }
            /* [lo, j] <= pivot <= [j+1, hi) */
            uint32_t cut = j + 1;
            if (cut - lo < hi - cut) {
                if (sp < 128) { stack[sp][0] = cut; stack[sp++][1] = hi; } else insertion(s + cut, hi - cut);
                hi = cut;
            } else {
                if (sp < 128) { stack[sp][0] = lo; stack[sp++][1] = cut; } else insertion(s + lo, cut - lo);
                lo = cut;
            }
        }
        insertion(s + lo, hi - lo);
    }
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/* Offset for `size` among occupied spans sorted by offset. */
static uint64_t fit(const span *s, uint32_t m, uint64_t size, uint64_t align, bool best) {
    uint64_t cur = 0, pick = UINT64_MAX, pick_waste = UINT64_MAX;
    for (uint32_t k = 0; k < m; k++) {
        if (s[k].off > cur) {
            uint64_t o = align_up(cur, align);
            if (o <= s[k].off && s[k].off - o >= size) {
                uint64_t waste = s[k].off - o - size;
                if (!best) return o;
                if (waste < pick_waste) {
                    pick_waste = waste;
                    pick = o;
                    if (!waste) return o;
                }
            }
        }
        if (s[k].top > cur) cur = s[k].top;
    }
    return pick != UINT64_MAX ? pick : align_up(cur, align);
}

/* Max over each buffer's sections of the section's total: how crowded the
 * busiest moment of its life is. Iterative segment tree for range max. */
static bool crowding(const tmem__plan_inst *inst, double *out) {
    uint32_t ns = inst->nsec ? inst->nsec : 1;
    uint64_t *tree = calloc((size_t)ns * 2, sizeof *tree);
    if (!tree) return false;
    uint64_t *load = tree + ns;
    for (uint32_t i = 0; i < inst->n; i++) {
        load[inst->lo[i]] += inst->size[i];
        if (inst->hi[i] < ns) load[inst->hi[i]] -= inst->size[i];
    }
    for (uint32_t s = 1; s < ns; s++) load[s] += load[s - 1];
    for (uint32_t v = ns - 1; v >= 1; v--) tree[v] = tree[2 * v] > tree[2 * v + 1] ? tree[2 * v] : tree[2 * v + 1];
    for (uint32_t i = 0; i < inst->n; i++) {
        uint64_t m = 0;
        for (uint32_t l = inst->lo[i] + ns, r = inst->hi[i] + ns; l < r; l >>= 1, r >>= 1) {
            if (l & 1) { if (tree[l] > m) m = tree[l]; l++; }
            if (r & 1) { --r; if (tree[r] > m) m = tree[r]; }
        }
        out[i] = (double)m;
    }
    free(tree);
    return true;
}

enum { ORD_SIZE, ORD_SIZE_INPUT, ORD_AREA, ORD_CROWD, ORD_LIFE, ORD_CONFLICT, ORD_START, ORD_COUNT };

/* Buffers alive with each one (its conflicts) without overlap lists: those
 * starting before its end minus those ending at or before its start. */
static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint32_t count_below(const uint32_t *v, uint32_t n, uint32_t x) {
    uint32_t lo = 0, hi = n;   /* first index with v[i] >= x */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool conflicts(const tmem__plan_inst *inst, double *deg) {
    uint32_t n = inst->n;
    uint32_t *starts = malloc((size_t)n * sizeof *starts + 1), *ends = malloc((size_t)n * sizeof *ends + 1);
    if (!starts || !ends) {
        free(starts);
        free(ends);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        starts[i] = inst->lo[i];
        ends[i] = inst->hi[i];
    }
    qsort(starts, n, sizeof *starts, cmp_u32);
    qsort(ends, n, sizeof *ends, cmp_u32);
    for (uint32_t i = 0; i < n; i++)
        deg[i] = (double)count_below(starts, n, inst->hi[i]) - (double)count_below(ends, n, inst->lo[i] + 1) - 1;
    free(starts);
    free(ends);
    return true;
}

static void make_order(const tmem__plan_inst *inst, const double *deg, const double *crowd, int kind,
                       order_key *keys) {
    for (uint32_t i = 0; i < inst->n; i++) {
        double size = (double)inst->size[i], len = (double)inst->len[i];
        order_key *k = &keys[i];
        k->idx = i;
        switch (kind) {
        case ORD_SIZE: k->k1 = size; k->k2 = len; break;
        case ORD_SIZE_INPUT: k->k1 = size; k->k2 = 0; break;  /* ties: input order */
        case ORD_AREA: k->k1 = size * len; k->k2 = size; break;
        case ORD_CROWD: k->k1 = crowd[i]; k->k2 = size * len; break;
        case ORD_LIFE: k->k1 = len; k->k2 = size; break;
        case ORD_CONFLICT: k->k1 = deg[i]; k->k2 = size; break;
        default: k->k1 = -(double)inst->lo[i]; k->k2 = size; break;
        }
        /* Fixed buffers go first whatever the order: they are obstacles. */
        if (inst->fixed[i] != TMEM_OFFSET_NONE) k->k1 = 1e300;
    }
    qsort(keys, inst->n, sizeof *keys, cmp_key);
}

/* One member of the portfolio with overlap lists. Returns the arena. */
static uint64_t run_adj(const tmem__plan_inst *inst, const tmem__plan_adj *adj, const order_key *keys, bool best,
                        uint64_t *off, span *tmp) {
    uint64_t arena = 0;
    for (uint32_t i = 0; i < inst->n; i++) off[i] = TMEM_OFFSET_NONE;
    for (uint32_t k = 0; k < inst->n; k++) {
        uint32_t b = keys[k].idx;
        uint64_t o = inst->fixed[b];
        if (o == TMEM_OFFSET_NONE) {
            uint32_t m = 0;
            for (uint32_t e = adj->start[b]; e < adj->start[b + 1]; e++) {
                uint32_t j = adj->adj[e];
                if (off[j] != TMEM_OFFSET_NONE) tmp[m++] = (span){off[j], off[j] + inst->size[j]};
            }
            sort_spans(tmp, m);
            o = fit(tmp, m, inst->size[b], inst->align[b], best);
        }
        off[b] = o;
        if (o + inst->size[b] > arena) arena = o + inst->size[b];
    }
    return arena;
}

/* The placed buffers in offset order, for members without overlap lists:
 * blocks of up to PLACED_BLOCK entries (insert shifts one block, not the
 * whole array; a full block splits), scanned front to back so the spans of
 * the buffers alive with the one being placed come out sorted by offset and
 * no per-buffer sort is needed. */
#define PLACED_BLOCK 512u

typedef struct placed_block {
    uint32_t count;
    uint64_t off[PLACED_BLOCK], top[PLACED_BLOCK];
    uint32_t lo[PLACED_BLOCK], hi[PLACED_BLOCK];
} placed_block;

typedef struct placed_set {
    placed_block **blocks;
    uint32_t nblocks, cap;
} placed_set;

static void placed_free(placed_set *ps) {
    for (uint32_t b = 0; b < ps->nblocks; b++) free(ps->blocks[b]);
    free(ps->blocks);
    ps->blocks = NULL;
    ps->nblocks = ps->cap = 0;
}

static bool placed_insert(placed_set *ps, uint64_t off, uint64_t top, uint32_t lo, uint32_t hi) {
    uint32_t b = 0;
    while (b + 1 < ps->nblocks && ps->blocks[b + 1]->count && ps->blocks[b + 1]->off[0] <= off) b++;
    if (ps->nblocks == 0 || ps->blocks[b]->count == PLACED_BLOCK) {
        if (ps->nblocks == ps->cap) {
            uint32_t cap = ps->cap ? ps->cap * 2 : 16;
            placed_block **nb = realloc(ps->blocks, (size_t)cap * sizeof *nb);
            if (!nb) return false;
            ps->blocks = nb;
            ps->cap = cap;
        }
        placed_block *fresh = malloc(sizeof *fresh);
        if (!fresh) return false;
        fresh->count = 0;
        if (ps->nblocks == 0) {
            ps->blocks[ps->nblocks++] = fresh;
        } else {
            /* split block b: its upper half moves to a new block after it */
            placed_block *full = ps->blocks[b];
            uint32_t half = PLACED_BLOCK / 2;
            memcpy(fresh->off, full->off + half, half * sizeof *fresh->off);
            memcpy(fresh->top, full->top + half, half * sizeof *fresh->top);
            memcpy(fresh->lo, full->lo + half, half * sizeof *fresh->lo);
            memcpy(fresh->hi, full->hi + half, half * sizeof *fresh->hi);
            fresh->count = half;
            full->count = half;
            memmove(ps->blocks + b + 2, ps->blocks + b + 1, (size_t)(ps->nblocks - b - 1) * sizeof *ps->blocks);
            ps->blocks[b + 1] = fresh;
            ps->nblocks++;
            if (off >= fresh->off[0]) b++;
        }
    }
    placed_block *k = ps->blocks[b];
    uint32_t at = k->count;
    while (at && k->off[at - 1] > off) at--;
    uint32_t tail = k->count - at;
    memmove(k->off + at + 1, k->off + at, tail * sizeof *k->off);
    memmove(k->top + at + 1, k->top + at, tail * sizeof *k->top);
    memmove(k->lo + at + 1, k->lo + at, tail * sizeof *k->lo);
    memmove(k->hi + at + 1, k->hi + at, tail * sizeof *k->hi);
    k->off[at] = off, k->top[at] = top, k->lo[at] = lo, k->hi[at] = hi;
    k->count++;
    return true;
}

/* fit() over the placed buffers alive during [lo, hi), in offset order. */
static uint64_t placed_fit(const placed_set *ps, uint32_t lo, uint32_t hi, uint64_t size, uint64_t align, bool best) {
    uint64_t cur = 0, pick = UINT64_MAX, pick_waste = UINT64_MAX;
    for (uint32_t b = 0; b < ps->nblocks; b++) {
        const placed_block *k = ps->blocks[b];
        for (uint32_t i = 0; i < k->count; i++) {
            if (k->lo[i] >= hi || lo >= k->hi[i]) continue;
            if (k->off[i] > cur) {
                uint64_t o = align_up(cur, align);
                if (o <= k->off[i] && k->off[i] - o >= size) {
                    uint64_t waste = k->off[i] - o - size;
                    if (!best) return o;
                    if (waste < pick_waste) {
                        pick_waste = waste;
                        pick = o;
                        if (!waste) return o;
                    }
                }
            }
            if (k->top[i] > cur) cur = k->top[i];
        }
    }
    return pick != UINT64_MAX ? pick : align_up(cur, align);
}

/* One member without overlap lists. Returns the arena, 0 out of memory. */
static uint64_t run_scan(const tmem__plan_inst *inst, const order_key *keys, bool best, uint64_t *off) {
    uint64_t arena = 0;
    placed_set ps = {NULL, 0, 0};
    for (uint32_t k = 0; k < inst->n; k++) {
        uint32_t b = keys[k].idx;
        uint64_t o = inst->fixed[b];
        if (o == TMEM_OFFSET_NONE) o = placed_fit(&ps, inst->lo[b], inst->hi[b], inst->size[b], inst->align[b], best);
        off[b] = o;
        if (!placed_insert(&ps, o, o + inst->size[b], inst->lo[b], inst->hi[b])) {
            placed_free(&ps);
            return 0;
        }
        if (o + inst->size[b] > arena) arena = o + inst->size[b];
    }
    placed_free(&ps);
    return arena;
}

/* Without overlap lists: buffers in start order, live set kept sorted by
 * offset; fixed buffers stay in it for their lifetime. */
static int cmp_start(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static tmem_status run_sweep(const tmem__plan_inst *inst, uint64_t *off, uint64_t *arena_out) {
    uint32_t n = inst->n;
    uint64_t (*ord)[2] = malloc((size_t)n * sizeof *ord + 1);
    span *live = malloc((size_t)n * 2 * sizeof *live + 1);
    uint32_t *live_idx = malloc((size_t)n * sizeof *live_idx + 1);
    uint32_t *fixed = malloc((size_t)n * sizeof *fixed + 1);
    if (!ord || !live || !live_idx || !fixed) {
        free(fixed);
        free(ord);
        free(live);
        free(live_idx);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    /* fixed first at equal start so they are in place before the free ones */
    for (uint32_t i = 0; i < n; i++) {
        ord[i][0] = (uint64_t)inst->lo[i] << 1 | (inst->fixed[i] == TMEM_OFFSET_NONE);
        ord[i][1] = i;
    }
    qsort(ord, n, sizeof *ord, cmp_start);
    uint32_t nfixed = 0;
    for (uint32_t i = 0; i < n; i++)
        if (inst->fixed[i] != TMEM_OFFSET_NONE) fixed[nfixed++] = i;
    uint32_t m = 0;
    uint64_t arena = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t b = (uint32_t)ord[k][1], now = inst->lo[b];
        uint32_t w = 0;
        for (uint32_t r = 0; r < m; r++)
            if (inst->hi[live_idx[r]] > now) {
                live[w] = live[r];
                live_idx[w++] = live_idx[r];
            }
        m = w;
        /* Fixed buffers starting later may still collide: they are placed
         * when their start comes, and free buffers placed before avoid them
         * only if alive then. Check all fixed ones overlapping b as well. */
        uint64_t o = inst->fixed[b];
        if (o == TMEM_OFFSET_NONE && nfixed == 0) {
            o = fit(live, m, inst->size[b], inst->align[b], true);   /* live is sorted */
        } else if (o == TMEM_OFFSET_NONE) {
            span *s = live + m;   /* scratch after the live set */
            uint32_t c = 0;
            for (uint32_t r = 0; r < m; r++) s[c++] = live[r];
            for (uint32_t f = 0; f < nfixed; f++) {
                uint32_t j = fixed[f];
                if (inst->lo[j] > now && inst->lo[j] < inst->hi[b])
                    s[c++] = (span){inst->fixed[j], inst->fixed[j] + inst->size[j]};
            }
            sort_spans(s, c);
            o = fit(s, c, inst->size[b], inst->align[b], true);
        }
        off[b] = o;
        if (o + inst->size[b] > arena) arena = o + inst->size[b];
        uint32_t pos = m;
        while (pos && live[pos - 1].off > o) {
            live[pos] = live[pos - 1];
            live_idx[pos] = live_idx[pos - 1];
            pos--;
        }
        live[pos] = (span){o, o + inst->size[b]};
        live_idx[pos] = b;
        m++;
    }
    free(fixed);
    free(ord);
    free(live);
    free(live_idx);
    *arena_out = arena;
    return TMEM_OK;
}

/* Members in the order they run; the portfolio shrinks with the instance
 * (a prefix of this list): on big graphs the first members are nearly
 * always the winners, and the classic two are always in. */
static const struct { int order; bool best; const char *label; } members[] = {
    {ORD_SIZE_INPUT, true, "greedy:size-tflite"}, {ORD_CONFLICT, true, "greedy:conflicts"},
    {ORD_CROWD, true, "greedy:crowding"},         {ORD_SIZE, true, "greedy:size"},
    {ORD_AREA, true, "greedy:area"},              {ORD_LIFE, true, "greedy:lifetime"},
    {ORD_START, true, "greedy:start"},            {ORD_SIZE, false, "greedy:size-first-fit"},
    {ORD_CROWD, false, "greedy:crowding-first-fit"},
};

tmem_status tmem__plan_greedy(const tmem__plan_inst *inst, const tmem__plan_adj *adj, bool fast, uint64_t *offsets,
                              uint64_t *arena, const char **name) {
    uint32_t n = inst->n;
    *arena = 0;
    *name = "none";
    if (n == 0) return TMEM_OK;
    size_t count = sizeof members / sizeof members[0];
    if (n > 5000) count = 5;
    if (n > 50000 || fast) count = 3;
    if (!adj && n > 20000) count = 2;   /* O(n^2) each: the classic two */
    /* Past 65,536 buffers (or asked to be fast) an O(n^2) scan costs seconds:
     * without overlap lists the sweep alone answers then. */
    if (!adj && (n > 65536 || fast)) count = 0;
    uint64_t best = UINT64_MAX;
    if (!adj) {
        tmem_status st = run_sweep(inst, offsets, &best);
        if (st) return st;
        *name = "sweep";
    }
    uint32_t maxdeg = 0;
    if (adj) {
        maxdeg = 0;
        for (uint32_t i = 0; i < n; i++)
            if (adj->start[i + 1] - adj->start[i] > maxdeg) maxdeg = adj->start[i + 1] - adj->start[i];
    }
    order_key *keys = malloc((size_t)n * sizeof *keys);
    double *crowd = malloc((size_t)n * sizeof *crowd), *deg = malloc((size_t)n * sizeof *deg);
    uint64_t *off = malloc((size_t)n * sizeof *off);
    span *tmp = adj ? malloc(((size_t)maxdeg + 1) * sizeof *tmp) : NULL;
    bool ok = keys && crowd && deg && off && (!adj || tmp) && crowding(inst, crowd);
    if (ok && adj)
        for (uint32_t i = 0; i < n; i++) deg[i] = (double)(adj->start[i + 1] - adj->start[i]);
    else if (ok)
        ok = conflicts(inst, deg);
    for (size_t m = 0; ok && m < count; m++) {
        make_order(inst, deg, crowd, members[m].order, keys);
        uint64_t a = adj ? run_adj(inst, adj, keys, members[m].best, off, tmp)
                         : run_scan(inst, keys, members[m].best, off);
        if (a == 0) {
            ok = false;
            break;
        }
        if (a < best) {
            best = a;
            memcpy(offsets, off, (size_t)n * sizeof *off);
            *name = members[m].label;
        }
    }
    free(keys);
    free(crowd);
    free(deg);
    free(off);
    free(tmp);
    if (!ok) return tmem__err(TMEM_E_NO_MEMORY);
    *arena = best;
    return TMEM_OK;
}

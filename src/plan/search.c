/*
 * Exact decision search: offsets for every buffer of an instance with all
 * tops <= capacity, or a proof that there are none.
 *
 * Canonical placements (MiniMalloc's idea, Moffitt, ASPLOS 2023): push every
 * buffer of any solution down as far as it goes; then each sits at offset 0,
 * on top of a buffer alive with it or of a fixed buffer, and placing the
 * buffers in order of (offset, preorder rank) each one lands exactly at its
 * "minimum offset" (the lowest position above the placed buffers alive with
 * it that avoids the fixed ones). So the search only ever places a buffer at
 * its minimum offset and only in increasing (offset, rank) order: complete,
 * and free of permutation symmetry. On top of that:
 *  - dominance: a buffer is not placed at an offset at or above the top that
 *    some unplaced buffer would have at its own minimum offset (that buffer
 *    would fit entirely below: the gap is wasted, a canonical twin exists);
 *  - section inference: in every section the unplaced buffers stack above
 *    max(the highest placed top there, the current offset), so their sizes
 *    must fit under the capacity;
 *  - several static preorders are tried round-robin with doubling node
 *    limits, so one unlucky order does not stall the search.
 * The search is iterative (explicit frame stack, undo logs): no recursion
 * whatever the instance size.
 */
#include "plan_internal.h"
#include <stdlib.h>
#include <string.h>

typedef struct frame {
    uint32_t cbeg, cend, cpos;  /* candidates: cand[cbeg..cend) */
    int32_t placed;             /* buffer placed by this frame, -1 none */
    uint32_t upos;              /* its position in the unplaced array */
    uint32_t mlog, slog;        /* undo log marks */
} frame;

typedef struct mchange { uint32_t buf; uint64_t old; } mchange;
typedef struct schange { uint32_t sec; uint64_t old; } schange;

typedef struct search {
    const tmem__plan_inst *in;
    uint64_t cap;
    uint32_t n, nfree, nsec;
    /* free-neighbour and fixed-obstacle lists (CSR) */
    uint32_t *nb_start, *nb;
    uint32_t *ob_start, *ob;    /* obstacles sorted by offset */
    uint64_t *base_min;         /* minimum offset with nothing placed */
    uint64_t *total0;           /* per section: sum of free sizes */
    /* state */
    uint64_t *off, *minoff, *floor, *tot;
    uint32_t *rank;             /* preorder rank of each buffer */
    uint32_t *unplaced, *where, nun;
    uint32_t *cand;
    size_t cand_cap;
    frame *frames;
    mchange *mlog;
    schange *slog;
    size_t mlog_len, mlog_cap, slog_len, slog_cap;
} search;

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/* Lowest offset >= x for buffer u that avoids its fixed obstacles. Values
 * beyond the capacity are returned as they are (the caller prunes them). */
static uint64_t bump(const search *s, uint32_t u, uint64_t x) {
    uint64_t a = s->in->align[u], size = s->in->size[u];
    if (x > s->cap) return x;
    x = align_up(x, a);
    for (uint32_t e = s->ob_start[u]; e < s->ob_start[u + 1]; e++) {
        uint32_t f = s->ob[e];
        uint64_t fo = s->in->fixed[f], ft = fo + s->in->size[f];
        if (fo >= x + size) break;
        if (ft > x) {
            x = align_up(ft, a);
            if (x > s->cap) return x;
        }
    }
    return x;
}

static bool push_m(search *s, uint32_t buf) {
    if (s->mlog_len == s->mlog_cap) {
        size_t c = s->mlog_cap ? s->mlog_cap * 2 : 1024;
        mchange *q = realloc(s->mlog, c * sizeof *q);
        if (!q) return false;
        s->mlog = q;
        s->mlog_cap = c;
    }
    s->mlog[s->mlog_len++] = (mchange){buf, s->minoff[buf]};
    return true;
}

static bool push_s(search *s, uint32_t sec) {
    if (s->slog_len == s->slog_cap) {
        size_t c = s->slog_cap ? s->slog_cap * 2 : 1024;
        schange *q = realloc(s->slog, c * sizeof *q);
        if (!q) return false;
        s->slog = q;
        s->slog_cap = c;
    }
    s->slog[s->slog_len++] = (schange){sec, s->floor[sec]};
    return true;
}

/* Place b at its minimum offset; false on out of memory. */
static bool place(search *s, frame *f, uint32_t b) {
    const tmem__plan_inst *in = s->in;
    uint64_t o = s->minoff[b], h = o + in->size[b];
    f->placed = (int32_t)b;
    f->mlog = (uint32_t)s->mlog_len;
    f->slog = (uint32_t)s->slog_len;
    s->off[b] = o;
    /* swap-remove from the unplaced array */
    uint32_t p = s->where[b], last = s->unplaced[s->nun - 1];
    f->upos = p;
    s->unplaced[p] = last;
    s->where[last] = p;
    s->unplaced[s->nun - 1] = b;
    s->where[b] = s->nun - 1;
    s->nun--;
    for (uint32_t e = s->nb_start[b]; e < s->nb_start[b + 1]; e++) {
        uint32_t u = s->nb[e];
        if (s->off[u] != TMEM_OFFSET_NONE || s->minoff[u] >= h) continue;
        if (!push_m(s, u)) return false;
        s->minoff[u] = bump(s, u, h);
    }
    for (uint32_t sec = in->lo[b]; sec < in->hi[b]; sec++) {
        if (!push_s(s, sec)) return false;
        if (h > s->floor[sec]) s->floor[sec] = h;
        s->tot[sec] -= in->size[b];
    }
    return true;
}

static void undo(search *s, frame *f) {
    const tmem__plan_inst *in = s->in;
    uint32_t b = (uint32_t)f->placed;
    while (s->mlog_len > f->mlog) {
        mchange *c = &s->mlog[--s->mlog_len];
        s->minoff[c->buf] = c->old;
    }
    while (s->slog_len > f->slog) {
        schange *c = &s->slog[--s->slog_len];
        s->floor[c->sec] = c->old;
    }
    for (uint32_t sec = in->lo[b]; sec < in->hi[b]; sec++) s->tot[sec] += in->size[b];
    s->off[b] = TMEM_OFFSET_NONE;
    /* undo the swap-remove: b is at nun, the element moved is at upos */
    s->nun++;
    uint32_t p = f->upos, moved = s->unplaced[p];
    s->unplaced[p] = b;
    s->where[b] = p;
    s->unplaced[s->nun - 1] = moved;
    s->where[moved] = s->nun - 1;
    f->placed = -1;
}

/* Section inference after placing at offset `cur`. */
static bool sections_ok(const search *s, uint64_t cur) {
    for (uint32_t sec = 0; sec < s->nsec; sec++) {
        uint64_t t = s->tot[sec];
        if (!t) continue;
        uint64_t fl = s->floor[sec] > cur ? s->floor[sec] : cur;
        if (fl + t > s->cap) return false;
    }
    return true;
}

static bool cand_less(const search *s, uint32_t a, uint32_t b) {
    if (s->minoff[a] != s->minoff[b]) return s->minoff[a] < s->minoff[b];
    return s->rank[a] < s->rank[b];
}

/* Candidates of a new node into cand[beg..), canonical after (thr_off,
 * thr_rank). Returns the count; 0 also when the node is dead (or when out of
 * memory, with *oom set). */
static uint32_t candidates(search *s, uint32_t beg, uint64_t thr_off, int64_t thr_rank, bool *oom) {
    if ((size_t)beg + s->nun > s->cand_cap) {
        size_t c = s->cand_cap * 2 > (size_t)beg + s->nun ? s->cand_cap * 2 : (size_t)beg + s->nun;
        uint32_t *q = realloc(s->cand, c * sizeof *q);
        if (!q) {
            *oom = true;
            return 0;
        }
        s->cand = q;
        s->cand_cap = c;
    }
    uint64_t mh = UINT64_MAX;
    for (uint32_t k = 0; k < s->nun; k++) {
        uint32_t u = s->unplaced[k];
        uint64_t t = s->minoff[u] + s->in->size[u];
        if (t > s->cap) return 0;   /* u fits nowhere any more */
        if (t < mh) mh = t;
    }
    uint32_t c = 0, *out = s->cand + beg;
    for (uint32_t k = 0; k < s->nun; k++) {
        uint32_t u = s->unplaced[k];
        uint64_t m = s->minoff[u];
        if (m >= mh) continue;
        if (m < thr_off || (m == thr_off && (int64_t)s->rank[u] < thr_rank)) continue;
        /* insertion into the sorted run */
        uint32_t j = c++;
        while (j && cand_less(s, u, out[j - 1])) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = u;
    }
    return c;
}

typedef struct pre { double k[3]; uint32_t idx; } pre;

static int cmp_pre(const void *a, const void *b) {
    const pre *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x->k[i] != y->k[i]) return x->k[i] > y->k[i] ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* One depth-first run with the current ranks, at most `budget` nodes.
 * Returns FOUND / NONE (exhausted) / STOPPED (budget, time, memory). */
static tmem__plan_search_result run(search *s, tmem__plan_limits *lim, uint64_t budget, uint64_t *offsets) {
    const tmem__plan_inst *in = s->in;
    s->nun = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (in->fixed[i] != TMEM_OFFSET_NONE) {
            s->off[i] = in->fixed[i];
            continue;
        }
        s->off[i] = TMEM_OFFSET_NONE;
        s->minoff[i] = s->base_min[i];
        s->where[i] = s->nun;
        s->unplaced[s->nun++] = i;
    }
    for (uint32_t sec = 0; sec < s->nsec; sec++) {
        s->floor[sec] = 0;
        s->tot[sec] = s->total0[sec];
    }
    s->mlog_len = s->slog_len = 0;
    if (s->nun == 0) {
        memcpy(offsets, s->off, (size_t)s->n * sizeof *offsets);
        return TMEM__PLAN_FOUND;
    }
    uint32_t depth = 0;
    frame *f = &s->frames[0];
    f->cbeg = 0;
    f->cend = candidates(s, 0, 0, -1, &lim->oom);
    if (lim->oom) return TMEM__PLAN_STOPPED;
    f->cpos = 0;
    f->placed = -1;
    uint64_t used = 0;
    for (;;) {
        f = &s->frames[depth];
        if (f->placed >= 0) undo(s, f);
        if (f->cpos == f->cend) {
            if (depth == 0) return TMEM__PLAN_NONE;
            depth--;
            continue;
        }
        uint32_t b = s->cand[f->cpos++];
        lim->nodes++;
        if (++used > budget) return TMEM__PLAN_STOPPED;
        if (lim->nodes_left && lim->nodes >= lim->nodes_left) return TMEM__PLAN_STOPPED;
        if (lim->deadline > 0 && (lim->nodes & 255) == 0 && tmem__plan_now() > lim->deadline)
            return TMEM__PLAN_STOPPED;
        uint64_t o = s->minoff[b];
        if (!place(s, f, b)) {
            lim->oom = true;
            return TMEM__PLAN_STOPPED;
        }
        if (!sections_ok(s, o)) continue;
        if (s->nun == 0) {
            memcpy(offsets, s->off, (size_t)s->n * sizeof *offsets);
            return TMEM__PLAN_FOUND;
        }
        frame *c = &s->frames[depth + 1];
        c->cbeg = f->cend;
        c->cend = c->cbeg + candidates(s, c->cbeg, o, s->rank[b], &lim->oom);
        if (lim->oom) return TMEM__PLAN_STOPPED;
        if (c->cend == c->cbeg) continue;
        c->cpos = c->cbeg;
        c->placed = -1;
        depth++;
    }
}

static void search_free(search *s) {
    free(s->nb_start);
    free(s->nb);
    free(s->ob_start);
    free(s->ob);
    free(s->base_min);
    free(s->total0);
    free(s->off);
    free(s->minoff);
    free(s->floor);
    free(s->tot);
    free(s->rank);
    free(s->unplaced);
    free(s->where);
    free(s->cand);
    free(s->frames);
    free(s->mlog);
    free(s->slog);
}

static bool setup(search *s, const tmem__plan_inst *in, const tmem__plan_adj *adj, uint64_t cap) {
    uint32_t n = in->n;
    s->in = in;
    s->cap = cap;
    s->n = n;
    s->nsec = in->nsec;
    size_t nn = (size_t)n + 1, ns = (size_t)in->nsec + 1;
    s->nb_start = calloc(nn, sizeof *s->nb_start);
    s->ob_start = calloc(nn, sizeof *s->ob_start);
    s->nb = malloc(((size_t)adj->start[n] + 1) * sizeof *s->nb);
    s->ob = malloc(((size_t)adj->start[n] + 1) * sizeof *s->ob);
    s->base_min = malloc(nn * sizeof *s->base_min);
    s->total0 = calloc(ns, sizeof *s->total0);
    s->off = malloc(nn * sizeof *s->off);
    s->minoff = malloc(nn * sizeof *s->minoff);
    s->floor = malloc(ns * sizeof *s->floor);
    s->tot = malloc(ns * sizeof *s->tot);
    s->rank = malloc(nn * sizeof *s->rank);
    s->unplaced = malloc(nn * sizeof *s->unplaced);
    s->where = malloc(nn * sizeof *s->where);
    /* candidate lists of the frames on the current path; grown on demand */
    s->cand_cap = nn * 4;
    s->cand = malloc(s->cand_cap * sizeof *s->cand);
    s->frames = malloc((nn + 1) * sizeof *s->frames);
    if (!s->nb_start || !s->ob_start || !s->nb || !s->ob || !s->base_min || !s->total0 || !s->off || !s->minoff ||
        !s->floor || !s->tot || !s->rank || !s->unplaced || !s->where || !s->cand || !s->frames)
        return false;
    uint32_t ne = 0, oe = 0;
    for (uint32_t i = 0; i < n; i++) {
        s->nb_start[i] = ne;
        s->ob_start[i] = oe;
        if (in->fixed[i] != TMEM_OFFSET_NONE) continue;
        for (uint32_t e = adj->start[i]; e < adj->start[i + 1]; e++) {
            uint32_t j = adj->adj[e];
            if (in->fixed[j] == TMEM_OFFSET_NONE) {
                s->nb[ne++] = j;
            } else {
                /* insertion by offset: obstacle lists are short */
                uint32_t k = oe++;
                while (k > s->ob_start[i] && in->fixed[s->ob[k - 1]] > in->fixed[j]) {
                    s->ob[k] = s->ob[k - 1];
                    k--;
                }
                s->ob[k] = j;
            }
        }
    }
    s->nb_start[n] = ne;
    s->ob_start[n] = oe;
    for (uint32_t i = 0; i < n; i++) {
        if (in->fixed[i] != TMEM_OFFSET_NONE) continue;
        s->base_min[i] = bump(s, i, 0);
        for (uint32_t sec = in->lo[i]; sec < in->hi[i]; sec++) s->total0[sec] += in->size[i];
    }
    return true;
}

/* Preorder keys: three of MiniMalloc's static orders (W = lifetime length,
 * A = area, T = crowding of the busiest section), each descending. */
static void set_ranks(search *s, pre *keys, const double *crowd, int which) {
    const tmem__plan_inst *in = s->in;
    for (uint32_t i = 0; i < s->n; i++) {
        double w = (double)in->len[i], a = (double)in->size[i] * w, t = crowd[i];
        pre *k = &keys[i];
        k->idx = i;
        switch (which) {
        case 0: k->k[0] = w; k->k[1] = a; k->k[2] = t; break;
        case 1: k->k[0] = t; k->k[1] = a; k->k[2] = w; break;
        default: k->k[0] = t; k->k[1] = w; k->k[2] = a; break;
        }
    }
    qsort(keys, s->n, sizeof *keys, cmp_pre);
    for (uint32_t r = 0; r < s->n; r++) s->rank[keys[r].idx] = r;
}

tmem__plan_search_result tmem__plan_search(const tmem__plan_inst *in, const tmem__plan_adj *adj, uint64_t cap,
                                           tmem__plan_limits *lim, uint64_t *offsets) {
    search s;
    memset(&s, 0, sizeof s);
    tmem__plan_search_result res = TMEM__PLAN_STOPPED;
    pre *keys = malloc(((size_t)in->n + 1) * sizeof *keys);
    double *crowd = malloc(((size_t)in->n + 1) * sizeof *crowd);
    if (!keys || !crowd || !setup(&s, in, adj, cap)) {
        lim->oom = true;
        goto out;
    }
    /* Quick refusals: a fixed buffer above the capacity, or a section whose
     * load cannot fit. */
    for (uint32_t i = 0; i < in->n; i++)
        if (in->fixed[i] != TMEM_OFFSET_NONE && in->fixed[i] + in->size[i] > cap) {
            res = TMEM__PLAN_NONE;
            goto out;
        }
    for (uint32_t i = 0; i < in->n; i++) {
        crowd[i] = 0;
        if (in->fixed[i] != TMEM_OFFSET_NONE) continue;
        uint64_t m = 0;
        for (uint32_t sec = in->lo[i]; sec < in->hi[i]; sec++)
            if (s.total0[sec] > m) m = s.total0[sec];
        crowd[i] = (double)m;
        if (s.base_min[i] + in->size[i] > cap) {
            res = TMEM__PLAN_NONE;
            goto out;
        }
    }
    for (uint32_t sec = 0; sec < in->nsec; sec++)
        if (s.total0[sec] > cap) {
            res = TMEM__PLAN_NONE;
            goto out;
        }
    /* Round robin over the preorders with doubling budgets. */
    for (uint64_t budget = (uint64_t)in->n * 2 + 16;; budget *= 2) {
        for (int which = 0; which < 3; which++) {
            set_ranks(&s, keys, crowd, which);
            res = run(&s, lim, budget, offsets);
            if (res != TMEM__PLAN_STOPPED) goto out;
            if (lim->oom) goto out;
            if (lim->nodes_left && lim->nodes >= lim->nodes_left) goto out;
            if (lim->deadline > 0 && tmem__plan_now() > lim->deadline) goto out;
        }
        if (budget > UINT64_MAX / 4) break;
    }
out:
    search_free(&s);
    free(keys);
    free(crowd);
    return res;
}

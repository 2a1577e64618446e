/*
 * Exact decision search: offsets for every buffer of an instance with all
 * tops <= capacity, or a proof that there are none.
 *
 * Canonical placements (the idea of MiniMalloc, Moffitt, ASPLOS 2023): push
 * every buffer of any solution down as far as it goes; then each sits at
 * offset 0, on top of a buffer alive with it or on a fixed buffer, and placing
 * the buffers in increasing (offset, preorder rank) each lands exactly at its
 * "minimum offset" (the lowest position above the placed buffers alive with
 * it that avoids the fixed ones). So the search only places a buffer at its
 * minimum offset and only in increasing (offset, rank) order: complete, and
 * free of permutation symmetry. On top of that:
 *  - dominance: no buffer is placed at or above the top some unplaced buffer
 *    would have at its own minimum offset (that one would fit entirely below:
 *    the gap is wasted and a canonical twin without it exists);
 *  - section inference: in every section the unplaced buffers stack above
 *    the section's floor (its highest placed top, the lowest minimum offset
 *    of its unplaced buffers, the current offset), so their sizes must fit;
 *  - dynamic decomposition: when every buffer spanning some time point is
 *    placed, the two sides are independent; each is searched on its own and
 *    a failure on one side fails the node at once (no thrashing through the
 *    other side's alternatives);
 *  - several static preorders tried round-robin with doubling node budgets.
 * The search loop is iterative (frame stack, undo logs); only decomposition
 * nests, and at most MAX_NEST deep (deeper splits are simply not taken).
 */
#include "plan_internal.h"
#include <stdlib.h>
#include <string.h>

#ifndef MAX_NEST
#define MAX_NEST 48
#endif
/* Section member lists (for the lowest-minimum-offset floor) are built only
 * below this many entries. */
#define MEMBER_BUDGET ((uint64_t)1 << 22)

typedef struct frame {
    uint32_t cbeg, cend, cpos;  /* candidates: level cand[cbeg..cend) */
    int32_t placed;             /* buffer placed by this frame, -1 none */
    bool hatless;               /* it had no unplaced neighbour */
    uint32_t upos;              /* its position in the level's unplaced list */
    uint32_t pmark, mmark, smark; /* undo marks */
    uint64_t h1, h2;            /* state hash before its placement */
    uint64_t k1, k2;            /* memo key of the node it represents */
} frame;

typedef struct mchange { uint32_t buf; uint64_t old; } mchange;
typedef struct bstate { uint64_t off, min; } bstate;
typedef struct ckey { uint64_t min; uint32_t rank, u; } ckey;

static int cmp_ckey(const void *a, const void *b) {
    const ckey *x = a, *y = b;
    if (x->min != y->min) return x->min < y->min ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}
typedef struct pre { double k[3]; uint32_t idx; } pre;
typedef struct schange { uint32_t sec; uint64_t old; } schange;

/* What one nesting level (one independent sub-problem) needs. */
typedef struct level {
    uint32_t *unplaced, *where, nun;
    uint32_t *saved_rank;       /* ranks of its buffers before re-ranking */
    uint32_t *cand;
    size_t cand_cap;
    frame *frames;
} level;

typedef struct search {
    const tmem__plan_inst *in;
    uint64_t cap;
    uint32_t n, nsec;
    uint32_t *nb_start, *nb;    /* free neighbours (CSR) */
    uint32_t *ob_start, *ob;    /* fixed obstacles sorted by offset (CSR) */
    uint32_t *sm_start, *sm;    /* free members of each section (CSR), or NULL */
    uint32_t *sm_cnt;           /* the first sm_cnt[sec] members are unplaced */
    uint32_t *up_start, *upos;  /* position of (buffer, its k-th section) in sm */
    uint64_t *base_min, *total0;
    /* state shared by all levels */
    bstate *st;                 /* per buffer: offset (or NONE) and minimum offset */
    uint64_t *floor, *tot;
    uint64_t *tmax;             /* segment tree: max of tot over section ranges */
    bool violated;              /* the last placement broke a section's capacity */
    uint32_t *cuts;             /* unplaced buffers spanning boundary k */
    uint32_t *rank;
    uint32_t *stamp, stamp_now; /* affected-section marks */
    uint32_t *dirty, ndirty;    /* sections whose floor may rise */
    uint32_t *pstack;
    size_t plen;
    mchange *mlog;
    schange *slog;
    size_t mlen, mcap, slen, scap;
    level lv[MAX_NEST];
    uint64_t budget_left;
    tmem__plan_limits *lim;
    int order;                  /* which preorder (rank_list) */
    /* Zobrist-style hash of the unplaced buffers and their minimum offsets,
     * and a lossy table of nodes proved to fail (see memo_*). */
    uint64_t h1, h2;
    uint64_t *memo;             /* pairs (k1, k2); 0,0 = empty */
    uint32_t memo_mask;
    pre *keys;                  /* scratch for ranking */
    ckey *ckeys;                /* scratch for sorting candidates */
    uint64_t time_mask;         /* look at the clock every time_mask+1 nodes */
} search;

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Hash of "buffer u is unplaced with minimum offset m" (two independent
 * 64-bit halves: 128 bits make a false match practically impossible). */
static void pair_hash(uint32_t u, uint64_t m, uint64_t *a, uint64_t *b) {
    *a = mix64((uint64_t)u * 0x9E3779B97F4A7C15ull + m * 0xD1B54A32D192ED03ull + 1);
    *b = mix64((uint64_t)u * 0xC2B2AE3D27D4EB4Full ^ mix64(m + 0x165667B19E3779F9ull));
}

static void hash_toggle(search *s, uint32_t u, uint64_t m) {
    uint64_t a, b;
    pair_hash(u, m, &a, &b);
    s->h1 ^= a;
    s->h2 ^= b;
}

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

static bool grow(void **p, size_t *cap, size_t elem) {
    size_t c = *cap ? *cap * 2 : 1024;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static bool set_min(search *s, uint32_t u, uint64_t v) {
    if (s->mlen == s->mcap && !grow((void **)&s->mlog, &s->mcap, sizeof *s->mlog)) return false;
    s->mlog[s->mlen++] = (mchange){u, s->st[u].min};
    hash_toggle(s, u, s->st[u].min);
    hash_toggle(s, u, v);
    s->st[u].min = v;
    return true;
}

static bool set_floor(search *s, uint32_t sec, uint64_t v) {
    if (s->slen == s->scap && !grow((void **)&s->slog, &s->scap, sizeof *s->slog)) return false;
    s->slog[s->slen++] = (schange){sec, s->floor[sec]};
    s->floor[sec] = v;
    return true;
}

/* Lowest minimum offset among the unplaced buffers of a section. */
static uint64_t section_min(const search *s, uint32_t sec) {
    uint64_t m = UINT64_MAX;
    for (uint32_t e = s->sm_start[sec], end = e + s->sm_cnt[sec]; e < end; e++) {
        uint32_t u = s->sm[e];
        if (s->st[u].off == TMEM_OFFSET_NONE && s->st[u].min < m) m = s->st[u].min;
    }
    return m;
}

static void mark_dirty(search *s, uint32_t sec) {
    if (s->stamp[sec] == s->stamp_now) return;
    s->stamp[sec] = s->stamp_now;
    s->dirty[s->ndirty++] = sec;
}

static void tree_set(search *s, uint32_t sec) {
    uint32_t i = sec + s->nsec;
    s->tmax[i] = s->tot[sec];
    for (i >>= 1; i; i >>= 1) s->tmax[i] = s->tmax[2 * i] > s->tmax[2 * i + 1] ? s->tmax[2 * i] : s->tmax[2 * i + 1];
}

static uint64_t tree_max(const search *s, uint32_t lo, uint32_t hi) {
    uint64_t m = 0;
    for (uint32_t l = lo + s->nsec, r = hi + s->nsec; l < r; l >>= 1, r >>= 1) {
        if (l & 1) { if (s->tmax[l] > m) m = s->tmax[l]; l++; }
        if (r & 1) { --r; if (s->tmax[r] > m) m = s->tmax[r]; }
    }
    return m;
}

/* Place b at its minimum offset (state only; the level list is the caller's).
 * *hatless tells whether no unplaced buffer is alive with b. False on out of
 * memory.
 *
 * With member lists, every section's floor is kept equal to the lowest
 * minimum offset of its unplaced buffers (all of them stack above it). It can
 * only rise where b sat or where the buffer holding that lowest value moved,
 * so only those sections are rescanned. */
static bool place(search *s, uint32_t b, bool *hatless) {
    const tmem__plan_inst *in = s->in;
    uint64_t o = s->st[b].min, h = o + in->size[b];
    s->st[b].off = o;
    s->pstack[s->plen++] = b;
    hash_toggle(s, b, o);
    if (++s->stamp_now == 0) {
        memset(s->stamp, 0, ((size_t)s->nsec + 1) * sizeof *s->stamp);
        s->stamp_now = 1;
    }
    s->ndirty = 0;
    for (uint32_t k = in->lo[b] + 1; k < in->hi[b]; k++) s->cuts[k]--;
    s->violated = false;
    if (s->sm)
        for (uint32_t sec = in->lo[b], k = s->up_start[b]; sec < in->hi[b]; sec++, k++) {
            /* swap-remove b from the section's unplaced prefix; undo is a
             * plain count increment because undos come in reverse order */
            uint32_t base = s->sm_start[sec], last_pos = --s->sm_cnt[sec], p = s->upos[k];
            uint32_t last = s->sm[base + last_pos];
            s->sm[base + p] = last;
            s->upos[s->up_start[last] + (sec - in->lo[last])] = p;
            s->sm[base + last_pos] = b;
            s->upos[k] = last_pos;
        }
    for (uint32_t sec = in->lo[b]; sec < in->hi[b]; sec++) {
        s->tot[sec] -= in->size[b];
        tree_set(s, sec);
        if (h > s->floor[sec] && !set_floor(s, sec, h)) return false;
        if (s->floor[sec] + s->tot[sec] > s->cap) s->violated = true;
        if (s->sm) mark_dirty(s, sec);
    }
    *hatless = true;
    for (uint32_t e = s->nb_start[b]; e < s->nb_start[b + 1]; e++) {
        uint32_t u = s->nb[e];
        if (s->st[u].off != TMEM_OFFSET_NONE) continue;
        *hatless = false;
        uint64_t old = s->st[u].min;
        if (old >= h) continue;
        if (!set_min(s, u, bump(s, u, h))) return false;
        if (s->sm)
            for (uint32_t sec = in->lo[u]; sec < in->hi[u]; sec++)
                if (old <= s->floor[sec]) mark_dirty(s, sec);
    }
    /* Section inference, incrementally: only the sections whose floor or
     * total changed can newly break floor + unplaced total <= capacity. */
    for (uint32_t k = 0; k < s->ndirty; k++) {
        uint32_t sec = s->dirty[k];
        uint64_t m = section_min(s, sec);
        if (m != UINT64_MAX && m > s->floor[sec] && !set_floor(s, sec, m)) return false;
        if (s->tot[sec] && s->floor[sec] + s->tot[sec] > s->cap) s->violated = true;
    }
    return true;
}

/* Undo placements and changes back to the marks. */
static void rollback(search *s, uint32_t pmark, uint32_t mmark, uint32_t smark) {
    const tmem__plan_inst *in = s->in;
    while (s->plen > pmark) {
        uint32_t b = s->pstack[--s->plen];
        s->st[b].off = TMEM_OFFSET_NONE;
        for (uint32_t k = in->lo[b] + 1; k < in->hi[b]; k++) s->cuts[k]++;
        for (uint32_t sec = in->lo[b]; sec < in->hi[b]; sec++) {
            s->tot[sec] += in->size[b];
            tree_set(s, sec);
            if (s->sm) s->sm_cnt[sec]++;
        }
    }
    while (s->mlen > mmark) {
        mchange *c = &s->mlog[--s->mlen];
        s->st[c->buf].min = c->old;
    }
    while (s->slen > smark) {
        schange *c = &s->slog[--s->slen];
        s->floor[c->sec] = c->old;
    }
}

static void list_remove(level *L, uint32_t b, uint32_t *upos) {
    uint32_t p = L->where[b], last = L->unplaced[L->nun - 1];
    *upos = p;
    L->unplaced[p] = last;
    L->where[last] = p;
    L->unplaced[L->nun - 1] = b;
    L->where[b] = L->nun - 1;
    L->nun--;
}

static void list_restore(level *L, uint32_t b, uint32_t p) {
    L->nun++;
    uint32_t moved = L->unplaced[p];
    L->unplaced[p] = b;
    L->where[b] = p;
    L->unplaced[L->nun - 1] = moved;
    L->where[moved] = L->nun - 1;
}

static bool cand_less(const search *s, uint32_t a, uint32_t b) {
    if (s->st[a].min != s->st[b].min) return s->st[a].min < s->st[b].min;
    return s->rank[a] < s->rank[b];
}

/* Candidates of a new node into cand[beg..), canonical after (thr_off,
 * thr_rank), sorted. Returns the count; 0 when the node is dead or on out of
 * memory (lim->oom set).
 *
 * Section inference happens here, once per node: every section's unplaced
 * buffers stack above its floor, and above the offset of whatever is placed
 * next (placements only go up). So floor + total <= capacity everywhere, and
 * no candidate may sit higher than capacity - (largest total left). */
static uint32_t candidates(search *s, level *L, uint32_t beg, uint64_t thr_off, int64_t thr_rank, uint32_t slo,
                           uint32_t shi) {
    uint64_t maxtot = tree_max(s, slo, shi);
    if (maxtot > s->cap) return 0;
    uint64_t omax = s->cap - maxtot;
    if (thr_off > omax) return 0;
    if ((size_t)beg + L->nun > L->cand_cap) {
        size_t c = L->cand_cap * 2 > (size_t)beg + L->nun ? L->cand_cap * 2 : (size_t)beg + L->nun;
        uint32_t *q = realloc(L->cand, c * sizeof *q);
        if (!q) {
            s->lim->oom = true;
            return 0;
        }
        L->cand = q;
        L->cand_cap = c;
    }
    /* One pass: the lowest top any unplaced buffer could have (mh), and
     * the buffers below the running mh that pass the canonical order; a
     * final filter drops those at or above the final mh, then they are
     * sorted by (minimum offset, rank). */
    uint64_t mh = UINT64_MAX;
    uint32_t c = 0, *out = L->cand + beg;
    for (uint32_t k = 0; k < L->nun; k++) {
        uint32_t u = L->unplaced[k];
        uint64_t m = s->st[u].min, t = m + s->in->size[u];
        if (t > s->cap) return 0;   /* u fits nowhere any more */
        if (t < mh) mh = t;
        if (m >= mh || m > omax) continue;
        if (m < thr_off || (m == thr_off && (int64_t)s->rank[u] <= thr_rank)) continue;
        out[c++] = u;
    }
    uint32_t w = 0;
    if (c > 32) {
        /* many candidates (typically at the root, where everything sits at
         * offset 0): sort packed keys in O(c log c), not by insertion */
        for (uint32_t k = 0; k < c; k++) {
            uint32_t u = out[k];
            if (s->st[u].min < mh) s->ckeys[w++] = (ckey){s->st[u].min, s->rank[u], u};
        }
        qsort(s->ckeys, w, sizeof *s->ckeys, cmp_ckey);
        for (uint32_t k = 0; k < w; k++) out[k] = s->ckeys[k].u;
        return w;
    }
    for (uint32_t k = 0; k < c; k++) {
        uint32_t u = out[k];
        if (s->st[u].min >= mh) continue;
        uint32_t j = w++;
        while (j && cand_less(s, u, out[j - 1])) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = u;
    }
    c = w;
    return c;
}

/* Memo of failed nodes. A node's future depends only on its level's
 * unplaced buffers with their minimum offsets (section floors follow from
 * them when the lowest-minimum-offset floors are on), the canonical threshold
 * and the preorder: two different pasts that leave the same picture share
 * one fate, so a proved failure is recorded and the twin pruned. Lossy (a
 * full bucket overwrites), never unsound. */
#define MEMO_BITS 19
static void node_key(const search *s, uint64_t lh1, uint64_t lh2, uint64_t off, int64_t rank, uint64_t *k1,
                     uint64_t *k2) {
    uint64_t t = mix64(off * 0x9E3779B97F4A7C15ull ^ (uint64_t)(rank + 2) * 0xD6E8FEB86659FD93ull ^
                       (uint64_t)(s->order + 1) << 56);
    *k1 = lh1 ^ t;
    *k2 = lh2 ^ mix64(t + 0x632BE59BD9B4E019ull);
    if (!*k1 && !*k2) *k1 = 1;
}

static bool memo_has(const search *s, uint64_t k1, uint64_t k2) {
    if (!s->memo) return false;
    uint32_t i = (uint32_t)k1 & s->memo_mask & ~3u;
    for (uint32_t j = 0; j < 4; j++)
        if (s->memo[2 * (i + j)] == k1 && s->memo[2 * (i + j) + 1] == k2) return true;
    return false;
}

static void memo_put(search *s, uint64_t k1, uint64_t k2) {
    if (!s->memo) return;
    uint32_t i = (uint32_t)k1 & s->memo_mask & ~3u, slot = i + (uint32_t)(k2 >> 62);
    for (uint32_t j = 0; j < 4; j++)
        if (!s->memo[2 * (i + j)] && !s->memo[2 * (i + j) + 1]) {
            slot = i + j;
            break;
        }
    s->memo[2 * slot] = k1;
    s->memo[2 * slot + 1] = k2;
}

static tmem__plan_search_result solve_level(search *s, int nest, uint32_t slo, uint32_t shi);
static void rank_list(search *s, const uint32_t *bufs, uint32_t m, const uint64_t *sec_total);

/* After b was placed at level `nest` whose range is [slo, shi): if some
 * boundaries inside b's life are no longer spanned, split the level's other
 * unplaced buffers at them and solve each side on its own. Returns FOUND
 * (all sides solved, state kept), NONE (a side is infeasible, state rolled
 * back), STOPPED; or -1 when there is nothing to split. */
static int split_and_solve(search *s, int nest, uint32_t slo, uint32_t shi, uint32_t b) {
    const tmem__plan_inst *in = s->in;
    level *L = &s->lv[nest];
    if (nest + 1 >= MAX_NEST || L->nun < 2) return -1;
    bool any = false;
    for (uint32_t k = in->lo[b] + 1; k < in->hi[b]; k++)
        if (k > slo && k < shi && s->cuts[k] == 0) any = true;
    if (!any) return -1;
    /* cut points: slo, every zero-cut boundary in (slo, shi), shi. Walk the
     * segments in order; each gets the unplaced buffers starting in it. */
    level *C = &s->lv[nest + 1];
    if (!C->unplaced) {
        size_t nn = (size_t)s->n + 1;
        C->unplaced = malloc(nn * sizeof *C->unplaced);
        C->where = malloc(nn * sizeof *C->where);
        C->frames = malloc((nn + 1) * sizeof *C->frames);
        C->saved_rank = malloc(nn * sizeof *C->saved_rank);
        C->cand_cap = nn * 2;
        C->cand = malloc(C->cand_cap * sizeof *C->cand);
        if (!C->unplaced || !C->where || !C->frames || !C->cand || !C->saved_rank) {
            s->lim->oom = true;
            return TMEM__PLAN_STOPPED;
        }
    }
    uint32_t pmark = (uint32_t)s->plen, mmark = (uint32_t)s->mlen, smark = (uint32_t)s->slen;
    uint64_t sh1 = s->h1, sh2 = s->h2;
    for (uint32_t k = 0; k < L->nun; k++) C->saved_rank[k] = s->rank[L->unplaced[k]];
    uint32_t seg_lo = slo;
    while (seg_lo < shi) {
        uint32_t seg_hi = seg_lo + 1;
        while (seg_hi < shi && s->cuts[seg_hi] != 0) seg_hi++;
        /* collect the level's unplaced buffers inside [seg_lo, seg_hi) */
        C->nun = 0;
        for (uint32_t k = 0; k < L->nun; k++) {
            uint32_t u = L->unplaced[k];
            if (s->st[u].off == TMEM_OFFSET_NONE && in->lo[u] >= seg_lo && in->lo[u] < seg_hi) {
                C->where[u] = C->nun;
                C->unplaced[C->nun++] = u;
            }
        }
        if (C->nun) {
            /* MiniMalloc re-sorts a sub-problem with the sizes still to
             * place: the preorder follows what is left, not the start.
             * Big sub-problems keep their ranks (still a valid order):
             * the sort would cost more than it helps. */
            if (C->nun <= 512) rank_list(s, C->unplaced, C->nun, s->tot);
            tmem__plan_search_result r = solve_level(s, nest + 1, seg_lo, seg_hi);
            if (r != TMEM__PLAN_FOUND) {
                rollback(s, pmark, mmark, smark);
                s->h1 = sh1;
                s->h2 = sh2;
                for (uint32_t k = 0; k < L->nun; k++) s->rank[L->unplaced[k]] = C->saved_rank[k];
                return (int)r;
            }
        }
        seg_lo = seg_hi;
    }
    return TMEM__PLAN_FOUND;
}

/* Depth-first search over the unplaced buffers of level `nest` (already in
 * its list), sections [slo, shi). On FOUND the placements stay; otherwise
 * the state is as on entry. */
static tmem__plan_search_result solve_level(search *s, int nest, uint32_t slo, uint32_t shi) {
    level *L = &s->lv[nest];
    tmem__plan_limits *lim = s->lim;
    if (L->nun == 0) return TMEM__PLAN_FOUND;
    /* level hash = hash of its own unplaced buffers: global ^ base ^ lp */
    uint64_t base1 = s->h1, base2 = s->h2, lp1 = 0, lp2 = 0;
    for (uint32_t k = 0; k < L->nun; k++) {
        uint64_t a, b2;
        pair_hash(L->unplaced[k], s->st[L->unplaced[k]].min, &a, &b2);
        lp1 ^= a;
        lp2 ^= b2;
    }
#define LEVEL_KEY(off_, rank_, k1_, k2_) node_key(s, s->h1 ^ base1 ^ lp1, s->h2 ^ base2 ^ lp2, off_, rank_, k1_, k2_)
    uint32_t depth = 0;
    frame *f = &L->frames[0];
    LEVEL_KEY(0, -1, &f->k1, &f->k2);
    if (memo_has(s, f->k1, f->k2)) return TMEM__PLAN_NONE;
    f->cbeg = 0;
    f->cend = candidates(s, L, 0, 0, -1, slo, shi);
    f->cpos = 0;
    f->placed = -1;
    f->hatless = false;
    if (lim->oom) return TMEM__PLAN_STOPPED;
    for (;;) {
        f = &L->frames[depth];
        if (f->placed >= 0) {
            rollback(s, f->pmark, f->mmark, f->smark);
            s->h1 = f->h1;
            s->h2 = f->h2;
            list_restore(L, (uint32_t)f->placed, f->upos);
            f->placed = -1;
            /* A buffer with no unplaced neighbour never moves: skipping it
             * now would leave it below every later placement, unplaceable.
             * So if placing it failed, the node fails. */
            if (f->hatless) f->cpos = f->cend;
        }
        if (f->cpos == f->cend) {
            memo_put(s, f->k1, f->k2);   /* every child failed: proved */
            if (depth == 0) return TMEM__PLAN_NONE;
            depth--;
            continue;
        }
        uint32_t b = L->cand[f->cpos++];
        lim->nodes++;
        if (s->budget_left == 0 || --s->budget_left == 0) return TMEM__PLAN_STOPPED;
        if (lim->nodes_left && lim->nodes >= lim->nodes_left) return TMEM__PLAN_STOPPED;
        if ((lim->nodes & s->time_mask) == 0) {
            if (lim->deadline > 0 && tmem__plan_now(lim) > lim->deadline) return TMEM__PLAN_STOPPED;
            if (lim->stop && atomic_load_explicit(lim->stop, memory_order_relaxed)) return TMEM__PLAN_STOPPED;
        }
        uint64_t o = s->st[b].min;
        f->pmark = (uint32_t)s->plen;
        f->mmark = (uint32_t)s->mlen;
        f->smark = (uint32_t)s->slen;
        f->h1 = s->h1;
        f->h2 = s->h2;
        f->placed = (int32_t)b;
        list_remove(L, b, &f->upos);
        if (!place(s, b, &f->hatless)) {
            lim->oom = true;
            return TMEM__PLAN_STOPPED;
        }
        if (s->violated) continue;
        if (L->nun == 0) return TMEM__PLAN_FOUND;
        int r = split_and_solve(s, nest, slo, shi, b);
        if (r == TMEM__PLAN_FOUND) return TMEM__PLAN_FOUND;
        if (r == TMEM__PLAN_STOPPED) return TMEM__PLAN_STOPPED;
        if (r == TMEM__PLAN_NONE) continue;
        frame *c = &L->frames[depth + 1];
        LEVEL_KEY(o, s->rank[b], &c->k1, &c->k2);
        if (memo_has(s, c->k1, c->k2)) continue;
        c->cbeg = f->cend;
        c->cend = c->cbeg + candidates(s, L, c->cbeg, o, s->rank[b], slo, shi);
        if (lim->oom) return TMEM__PLAN_STOPPED;
        if (c->cend == c->cbeg) continue;
        c->cpos = c->cbeg;
        c->placed = -1;
        c->hatless = false;
        depth++;
    }
#undef LEVEL_KEY
}

/* One run with the current ranks and a node budget. */
static tmem__plan_search_result run(search *s, uint64_t budget, uint64_t *offsets) {
    const tmem__plan_inst *in = s->in;
    level *L = &s->lv[0];
    L->nun = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (in->fixed[i] != TMEM_OFFSET_NONE) {
            s->st[i].off = in->fixed[i];
            continue;
        }
        s->st[i].off = TMEM_OFFSET_NONE;
        s->st[i].min = s->base_min[i];
        L->where[i] = L->nun;
        L->unplaced[L->nun++] = i;
    }
    memset(s->cuts, 0, ((size_t)s->nsec + 1) * sizeof *s->cuts);
    for (uint32_t i = 0; i < s->n; i++)
        if (in->fixed[i] == TMEM_OFFSET_NONE)
            for (uint32_t k = in->lo[i] + 1; k < in->hi[i]; k++) s->cuts[k]++;
    if (s->sm) {
        /* all free buffers unplaced again: full member lists, positions */
        for (uint32_t sec = 0; sec < s->nsec; sec++) {
            s->sm_cnt[sec] = s->sm_start[sec + 1] - s->sm_start[sec];
            for (uint32_t e = s->sm_start[sec]; e < s->sm_start[sec + 1]; e++) {
                uint32_t u = s->sm[e];
                s->upos[s->up_start[u] + (sec - in->lo[u])] = e - s->sm_start[sec];
            }
        }
    }
    for (uint32_t sec = 0; sec < s->nsec; sec++) {
        s->tot[sec] = s->total0[sec];
        uint64_t m = s->sm ? section_min(s, sec) : UINT64_MAX;
        s->floor[sec] = m == UINT64_MAX ? 0 : m;
        s->tmax[s->nsec + sec] = s->tot[sec];
        if (s->tot[sec] && s->floor[sec] + s->tot[sec] > s->cap) return TMEM__PLAN_NONE;
    }
    for (uint32_t i = s->nsec - 1; i >= 1 && s->nsec > 1; i--)
        s->tmax[i] = s->tmax[2 * i] > s->tmax[2 * i + 1] ? s->tmax[2 * i] : s->tmax[2 * i + 1];
    s->plen = s->mlen = s->slen = 0;
    s->h1 = s->h2 = 0;
    s->budget_left = budget;
    tmem__plan_search_result r = solve_level(s, 0, 0, s->nsec);
    if (r == TMEM__PLAN_FOUND)
        for (uint32_t i = 0; i < s->n; i++) offsets[i] = s->st[i].off;
    return r;
}

static void search_free(search *s) {
    free(s->nb_start);
    free(s->nb);
    free(s->ob_start);
    free(s->ob);
    free(s->sm_start);
    free(s->sm);
    free(s->sm_cnt);
    free(s->up_start);
    free(s->upos);
    free(s->base_min);
    free(s->total0);
    free(s->st);
    free(s->floor);
    free(s->tot);
    free(s->tmax);
    free(s->cuts);
    free(s->rank);
    free(s->ckeys);
    free(s->stamp);
    free(s->dirty);
    free(s->pstack);
    free(s->mlog);
    free(s->slog);
    free(s->memo);
    for (int k = 0; k < MAX_NEST; k++) {
        free(s->lv[k].unplaced);
        free(s->lv[k].where);
        free(s->lv[k].cand);
        free(s->lv[k].frames);
        free(s->lv[k].saved_rank);
    }
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
    s->st = malloc(nn * sizeof *s->st);
    s->floor = malloc(ns * sizeof *s->floor);
    s->tot = malloc(ns * sizeof *s->tot);
    s->tmax = calloc(ns * 2, sizeof *s->tmax);
    s->cuts = malloc(ns * sizeof *s->cuts);
    s->rank = malloc(nn * sizeof *s->rank);
    s->ckeys = malloc(nn * sizeof *s->ckeys);
    /* a node costs O(n): on big instances look at the clock more often */
    s->time_mask = n > 4096 ? 0 : n > 512 ? 15 : 255;
    s->stamp = calloc(ns, sizeof *s->stamp);
    s->dirty = malloc(ns * sizeof *s->dirty);
    s->pstack = malloc(nn * sizeof *s->pstack);
    level *L = &s->lv[0];
    L->unplaced = malloc(nn * sizeof *L->unplaced);
    L->where = malloc(nn * sizeof *L->where);
    L->frames = malloc((nn + 1) * sizeof *L->frames);
    L->cand_cap = nn * 4;
    L->cand = malloc(L->cand_cap * sizeof *L->cand);
    if (!s->nb_start || !s->ob_start || !s->nb || !s->ob || !s->base_min || !s->total0 || !s->st ||
        !s->floor || !s->tot || !s->tmax || !s->cuts || !s->rank || !s->ckeys || !s->stamp ||
        !s->dirty || !s->pstack || !L->unplaced || !L->where || !L->frames || !L->cand)
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
    uint64_t members = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (in->fixed[i] != TMEM_OFFSET_NONE) continue;
        s->base_min[i] = bump(s, i, 0);
        members += in->hi[i] - in->lo[i];
        for (uint32_t sec = in->lo[i]; sec < in->hi[i]; sec++) s->total0[sec] += in->size[i];
    }
#ifdef NO_REFLOOR
    members = MEMBER_BUDGET + 1;
#endif
    if (members <= MEMBER_BUDGET) {
        s->sm_start = calloc(ns + 1, sizeof *s->sm_start);
        s->sm = malloc((members + 1) * sizeof *s->sm);
        s->sm_cnt = calloc(ns, sizeof *s->sm_cnt);
        s->up_start = calloc(nn, sizeof *s->up_start);
        s->upos = malloc((members + 1) * sizeof *s->upos);
        if (!s->sm_start || !s->sm || !s->sm_cnt || !s->up_start || !s->upos) {
            free(s->sm_start);
            free(s->sm);
            free(s->sm_cnt);
            free(s->up_start);
            free(s->upos);
            s->sm_start = s->sm = s->sm_cnt = s->up_start = s->upos = NULL;
        } else {
            for (uint32_t i = 0; i < n; i++)
                if (in->fixed[i] == TMEM_OFFSET_NONE)
                    for (uint32_t sec = in->lo[i]; sec < in->hi[i]; sec++) s->sm_start[sec + 1]++;
            for (uint32_t sec = 0; sec < in->nsec; sec++) s->sm_start[sec + 1] += s->sm_start[sec];
            uint32_t *fill = s->cuts; /* scratch */
            memcpy(fill, s->sm_start, ns * sizeof *fill);
            for (uint32_t i = 0; i < n; i++)
                if (in->fixed[i] == TMEM_OFFSET_NONE)
                    for (uint32_t sec = in->lo[i]; sec < in->hi[i]; sec++) s->sm[fill[sec]++] = i;
            uint32_t acc = 0;
            for (uint32_t i = 0; i < n; i++) {
                s->up_start[i] = acc;
                if (in->fixed[i] == TMEM_OFFSET_NONE) acc += in->hi[i] - in->lo[i];
            }
        }
    }
    return true;
}

static int cmp_pre(const void *a, const void *b) {
    const pre *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x->k[i] != y->k[i]) return x->k[i] > y->k[i] ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Preorder keys: three of MiniMalloc's static orders (W = lifetime length,
 * A = area, T = the largest total still to place in one of its sections),
 * each descending. Ranks 0.. are given to bufs[0..m) in that order. */
static void rank_list(search *s, const uint32_t *bufs, uint32_t m, const uint64_t *sec_total) {
    const tmem__plan_inst *in = s->in;
    for (uint32_t k = 0; k < m; k++) {
        uint32_t i = bufs[k];
        uint64_t t = 0;
        for (uint32_t sec = in->lo[i]; sec < in->hi[i]; sec++)
            if (sec_total[sec] > t) t = sec_total[sec];
        double w = (double)in->len[i], a = (double)in->size[i] * w, tt = (double)t;
        pre *p = &s->keys[k];
        p->idx = i;
        switch (s->order) {
#ifdef PLAN_RANDOM_TIES
        case 99: { static uint64_t x = 88172645463325252ull; x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            p->k[0] = tt; p->k[1] = (double)(x % 1000); p->k[2] = a; break; }
#endif
        case 0: p->k[0] = w; p->k[1] = a; p->k[2] = tt; break;
        case 1: p->k[0] = tt; p->k[1] = a; p->k[2] = w; break;
        default: p->k[0] = tt; p->k[1] = w; p->k[2] = a; break;
        }
    }
    qsort(s->keys, m, sizeof *s->keys, cmp_pre);
    for (uint32_t r = 0; r < m; r++) s->rank[s->keys[r].idx] = r;
}

tmem__plan_search_result tmem__plan_search(const tmem__plan_inst *in, const tmem__plan_adj *adj, uint64_t cap,
                                           tmem__plan_limits *lim, uint64_t *offsets) {
    search s;
    memset(&s, 0, sizeof s);
    s.lim = lim;
    tmem__plan_search_result res = TMEM__PLAN_STOPPED;
    s.keys = malloc(((size_t)in->n + 1) * sizeof *s.keys);
    uint32_t *all = malloc(((size_t)in->n + 1) * sizeof *all);
    if (!s.keys || !all || !setup(&s, in, adj, cap)) {
        lim->oom = true;
        goto out;
    }
    /* Quick refusals: a fixed buffer above the capacity, a buffer that fits
     * nowhere, or a section whose load cannot fit. */
    for (uint32_t i = 0; i < in->n; i++)
        if (in->fixed[i] != TMEM_OFFSET_NONE && in->fixed[i] + in->size[i] > cap) {
            res = TMEM__PLAN_NONE;
            goto out;
        }
    for (uint32_t i = 0; i < in->n; i++) {
        all[i] = i;
        if (in->fixed[i] != TMEM_OFFSET_NONE) continue;
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
#ifdef PLAN_ONLY_ORDER
            if (which != PLAN_ONLY_ORDER) continue;
            budget = UINT64_MAX / 8;
#endif
#ifdef PLAN_RANDOM_TIES
            which = 99; budget = PLAN_RANDOM_TIES;
#endif
            /* The memo (sound only with the lowest-minimum-offset floors)
             * is allocated once the first quick run failed: most searches
             * end before that and need not pay for the table. */
            if (s.sm && !s.memo && in->n >= 8 && budget > (uint64_t)in->n * 2 + 16) {
                s.memo = calloc((size_t)2 << MEMO_BITS, sizeof *s.memo);
                s.memo_mask = (1u << MEMO_BITS) - 1;
            }
            s.order = which;
            rank_list(&s, all, in->n, s.total0);
            res = run(&s, budget, offsets);
            if (res != TMEM__PLAN_STOPPED || lim->oom) goto out;
            if (lim->nodes_left && lim->nodes >= lim->nodes_left) goto out;
            if (lim->deadline > 0 && tmem__plan_now(lim) > lim->deadline) goto out;
            if (lim->stop && atomic_load_explicit(lim->stop, memory_order_relaxed)) goto out;
        }
        if (budget > UINT64_MAX / 4) break;
    }
out:
    search_free(&s);
    free(s.keys);
    free(all);
    return res;
}

/* Interval treap; see interval.h. Split/merge treap: every update is a split
 * by key and merges, with `pull` recomputing the two max-end fields on the
 * way back up, so the augmentation is always exact. */
#include <string.h>
#include "heap/interval.h"

#define NIL TMEM__IVX_NIL

static inline uint64_t max3(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t m = a > b ? a : b;
    return m > c ? m : c;
}

static void pull(tmem__ivx *x, uint32_t i) {
    tmem__ivx_node *n = &x->nodes[i];
    uint64_t la = 0, ls = 0, ra = 0, rs = 0;
    if (n->left != NIL) la = x->nodes[n->left].max_all, ls = x->nodes[n->left].max_solid;
    if (n->right != NIL) ra = x->nodes[n->right].max_all, rs = x->nodes[n->right].max_solid;
    n->max_all = max3(n->end, la, ra);
    n->max_solid = max3(n->flags & TMEM__IVX_ALIASABLE ? 0 : n->end, ls, rs);
}

static inline bool key_less(const tmem__ivx_node *n, uint64_t start, uint64_t seq) {
    return n->start < start || (n->start == start && n->seq < seq);
}

/* Nodes with key < (start, seq) go to *l, the rest to *r. */
static void split(tmem__ivx *x, uint32_t i, uint64_t start, uint64_t seq, uint32_t *l, uint32_t *r) {
    if (i == NIL) {
        *l = *r = NIL;
        return;
    }
    tmem__ivx_node *n = &x->nodes[i];
    if (key_less(n, start, seq)) {
        split(x, n->right, start, seq, &n->right, r);
        *l = i;
    } else {
        split(x, n->left, start, seq, l, &n->left);
        *r = i;
    }
    pull(x, i);
}

/* Every key of a is below every key of b. */
static uint32_t merge(tmem__ivx *x, uint32_t a, uint32_t b) {
    if (a == NIL) return b;
    if (b == NIL) return a;
    if (x->nodes[a].prio > x->nodes[b].prio) {
        x->nodes[a].right = merge(x, x->nodes[a].right, b);
        pull(x, a);
        return a;
    }
    x->nodes[b].left = merge(x, a, x->nodes[b].left);
    pull(x, b);
    return b;
}

void tmem__ivx_init(tmem__ivx *x, const tmem_allocator *a) {
    memset(x, 0, sizeof *x);
    if (a) x->a = *a;
    x->root = x->recycled = NIL;
    x->rng = 0x9E3779B9u;
}

void tmem__ivx_destroy(tmem__ivx *x) {
    if (!x) return;
    tmem__meta_free(&x->a, x->nodes, (size_t)x->cap * sizeof *x->nodes);
    tmem__ivx_init(x, &x->a);
}

void tmem__ivx_reset(tmem__ivx *x) {
    x->top = x->count = 0;
    x->root = x->recycled = NIL;
}

tmem_status tmem__ivx_reserve(tmem__ivx *x) {
    if (x->recycled != NIL || x->top < x->cap) return TMEM_OK;
    if (x->cap >= UINT32_MAX / 4) return tmem__err(TMEM_E_FULL);
    uint32_t cap = x->cap ? x->cap * 2 : 32;
    tmem__ivx_node *n = tmem__meta_alloc(&x->a, (size_t)cap * sizeof *n);
    if (!n) return tmem__err(TMEM_E_NO_MEMORY);
    if (x->top) memcpy(n, x->nodes, (size_t)x->top * sizeof *n);
    tmem__meta_free(&x->a, x->nodes, (size_t)x->cap * sizeof *n);
    x->nodes = n;
    x->cap = cap;
    return TMEM_OK;
}

static uint32_t next_prio(tmem__ivx *x) {
    /* xorshift32: priorities only need to look random to the key order */
    uint32_t s = x->rng;
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return x->rng = s;
}

static void link_in(tmem__ivx *x, uint32_t i) {
    uint32_t l, r;
    split(x, x->root, x->nodes[i].start, x->nodes[i].seq, &l, &r);
    x->root = merge(x, merge(x, l, i), r);
}

static void unlink_out(tmem__ivx *x, uint32_t i) {
    uint32_t l, m, r;
    split(x, x->root, x->nodes[i].start, x->nodes[i].seq, &l, &r);
    split(x, r, x->nodes[i].start, x->nodes[i].seq + 1, &m, &r);
    x->root = merge(x, l, r);
}

uint32_t tmem__ivx_insert(tmem__ivx *x, uint64_t start, uint64_t size, uint32_t flags, uint64_t user) {
    uint32_t i = x->recycled;
    if (i != NIL) x->recycled = x->nodes[i].left;
    else i = x->top++;
    tmem__ivx_node *n = &x->nodes[i];
    n->start = start;
    n->end = start + size;
    n->seq = ++x->seq;
    n->user = user;
    n->flags = flags;
    n->prio = next_prio(x);
    n->left = n->right = NIL;
    pull(x, i);
    link_in(x, i);
    x->count++;
    return i;
}

void tmem__ivx_remove(tmem__ivx *x, uint32_t i) {
    unlink_out(x, i);
    x->nodes[i].left = x->recycled;
    x->nodes[i].right = NIL;
    x->nodes[i].end = 0; /* marks a recycled node for check() */
    x->recycled = i;
    x->count--;
}

void tmem__ivx_set_flags(tmem__ivx *x, uint32_t i, uint32_t flags) {
    unlink_out(x, i);
    x->nodes[i].flags = flags;
    x->nodes[i].left = x->nodes[i].right = NIL;
    pull(x, i);
    link_in(x, i);
}

uint32_t tmem__ivx_find(const tmem__ivx *x, uint64_t start) {
    uint32_t best = NIL;
    for (uint32_t i = x->root; i != NIL;) {
        const tmem__ivx_node *n = &x->nodes[i];
        if (n->start > start) i = n->left;
        else {
            if (n->start == start) best = i; /* a newer one may lie right */
            i = n->right;
        }
    }
    return best;
}

/* Nodes with this start form one key range; visit that range only. */
static uint32_t find_flagged(const tmem__ivx *x, uint32_t i, uint64_t start, uint32_t flag) {
    if (i == NIL) return NIL;
    const tmem__ivx_node *n = &x->nodes[i];
    if (n->start < start) return find_flagged(x, n->right, start, flag);
    if (n->start > start) return find_flagged(x, n->left, start, flag);
    uint32_t r = find_flagged(x, n->right, start, flag); /* newer first */
    if (r != NIL) return r;
    if (n->flags & flag) return i;
    return find_flagged(x, n->left, start, flag);
}

uint32_t tmem__ivx_find_flagged(const tmem__ivx *x, uint64_t start, uint32_t flag) {
    return find_flagged(x, x->root, start, flag);
}

/* CLRS interval search (optionally over solid intervals only, using the
 * matching max-end): going left is safe because if the left subtree has an
 * end > start but no overlap, that interval starts at or after `end` and so
 * does everything to the right. */
static bool overlaps(const tmem__ivx *x, uint64_t start, uint64_t end, bool solid) {
    uint32_t i = x->root;
    uint32_t skip = solid ? TMEM__IVX_ALIASABLE : 0;
    while (i != NIL) {
        const tmem__ivx_node *n = &x->nodes[i];
        if (!(n->flags & skip) && n->start < end && n->end > start) return true;
        if (n->left != NIL && (solid ? x->nodes[n->left].max_solid : x->nodes[n->left].max_all) > start) i = n->left;
        else i = n->right;
    }
    return false;
}

bool tmem__ivx_overlaps_solid(const tmem__ivx *x, uint64_t start, uint64_t end) {
    return overlaps(x, start, end, true);
}
bool tmem__ivx_overlaps_any(const tmem__ivx *x, uint64_t start, uint64_t end) { return overlaps(x, start, end, false); }

static uint32_t mark(tmem__ivx *x, uint32_t i, uint64_t start, uint64_t end) {
    if (i == NIL || x->nodes[i].max_all <= start) return 0;
    tmem__ivx_node *n = &x->nodes[i];
    uint32_t c = mark(x, n->left, start, end);
    if (n->start >= end) return c;
    if ((n->flags & TMEM__IVX_ALIASABLE) && n->end > start) {
        n->flags |= TMEM__IVX_OVERLAPPED; /* does not change the augmentation */
        c++;
    }
    return c + mark(x, n->right, start, end);
}

uint32_t tmem__ivx_mark_overlaps(tmem__ivx *x, uint64_t start, uint64_t end) {
    return mark(x, x->root, start, end);
}

static bool walk(const tmem__ivx *x, uint32_t i, tmem__ivx_visit fn, void *ctx) {
    if (i == NIL) return true;
    const tmem__ivx_node *n = &x->nodes[i];
    return walk(x, n->left, fn, ctx) && fn(ctx, n) && walk(x, n->right, fn, ctx);
}

void tmem__ivx_walk(const tmem__ivx *x, tmem__ivx_visit fn, void *ctx) { (void)walk(x, x->root, fn, ctx); }

#define CHECK_(c) do { if (!(c)) return false; } while (0)

typedef struct check_state {
    const tmem__ivx_node *prev;
    uint32_t seen;
} check_state;

static bool check_node(const tmem__ivx *x, uint32_t i, check_state *s) {
    if (i == NIL) return true;
    CHECK_(i < x->top && ++s->seen <= x->count);
    const tmem__ivx_node *n = &x->nodes[i];
    CHECK_(n->end > n->start);
    uint64_t ma = n->end, ms = n->flags & TMEM__IVX_ALIASABLE ? 0 : n->end;
    uint32_t kids[2] = {n->left, n->right};
    for (int k = 0; k < 2; k++) {
        if (kids[k] == NIL) continue;
        const tmem__ivx_node *c = &x->nodes[kids[k]];
        CHECK_(c->prio <= n->prio);
        if (c->max_all > ma) ma = c->max_all;
        if (c->max_solid > ms) ms = c->max_solid;
    }
    CHECK_(ma == n->max_all && ms == n->max_solid);
    CHECK_(check_node(x, n->left, s));
    CHECK_(!s->prev || key_less(s->prev, n->start, n->seq));
    s->prev = n;
    return check_node(x, n->right, s);
}

tmem_status tmem__ivx_check(const tmem__ivx *x) {
    check_state s = {NULL, 0};
    if (!check_node(x, x->root, &s) || s.seen != x->count) return tmem__err(TMEM_E_CORRUPT);
    uint32_t recycled = 0;
    for (uint32_t i = x->recycled; i != NIL; i = x->nodes[i].left)
        if (i >= x->top || ++recycled > x->top) return tmem__err(TMEM_E_CORRUPT);
    return recycled + x->count == x->top ? TMEM_OK : tmem__err(TMEM_E_CORRUPT);
}

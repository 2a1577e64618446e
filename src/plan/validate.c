/*
 * The independent validator. It shares nothing with the solvers (no
 * compressed sections, no overlap lists): a sweep over the original times
 * keeps the live buffers in a treap ordered by offset and checks each new
 * buffer against its neighbours there, O(n log n).
 */
#include "plan_internal.h"
#include <stdlib.h>

typedef struct vnode {
    uint64_t off;
    uint32_t idx, prio;
    int32_t l, r;
} vnode;

typedef struct vevent {
    int64_t t;
    uint32_t idx;
    uint32_t start;   /* 0 = end (sorted first at equal t: half-open), 1 = start */
} vevent;

static int cmp_event(const void *a, const void *b) {
    const vevent *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->start != y->start) return (int)x->start - (int)y->start;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static bool key_less(const vnode *a, const vnode *b) {
    return a->off != b->off ? a->off < b->off : a->idx < b->idx;
}

/* Split the treap at key k: left < k, right >= k. */
static void split(vnode *t, int32_t root, const vnode *k, int32_t *l, int32_t *r) {
    if (root < 0) {
        *l = *r = -1;
        return;
    }
    if (key_less(&t[root], k)) {
        split(t, t[root].r, k, &t[root].r, r);
        *l = root;
    } else {
        split(t, t[root].l, k, l, &t[root].l);
        *r = root;
    }
}

static int32_t merge(vnode *t, int32_t a, int32_t b) {
    if (a < 0) return b;
    if (b < 0) return a;
    if (t[a].prio > t[b].prio) {
        t[a].r = merge(t, t[a].r, b);
        return a;
    }
    t[b].l = merge(t, a, t[b].l);
    return b;
}

static int32_t rightmost(const vnode *t, int32_t x) {
    if (x < 0) return -1;
    while (t[x].r >= 0) x = t[x].r;
    return x;
}

static int32_t leftmost(const vnode *t, int32_t x) {
    if (x < 0) return -1;
    while (t[x].l >= 0) x = t[x].l;
    return x;
}

tmem_status tmem_plan_validate(const tmem_plan_problem *p, const uint64_t *offsets, uint64_t capacity,
                               tmem_plan_violation *why) {
    if (!p || (!offsets && p->n)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_plan_violation dummy;
    if (!why) why = &dummy;
    uint32_t n = p->n;
    int64_t tmin = INT64_MAX, tmax = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        const tmem__plan_item *it = &p->items[i];
        why->a = why->b = i;
        why->value = offsets[i];
        if (offsets[i] % it->align) return tmem__err(TMEM_E_ALIGNMENT);
        if ((it->flags & TMEM_PLAN_BUFFER_FIXED) && offsets[i] != it->offset) return tmem__err(TMEM_E_STATE);
        uint64_t top;
        if (tmem__add_overflow(offsets[i], it->size, &top)) return tmem__err(TMEM_E_OVERFLOW);
        why->value = top;
        if (capacity && top > capacity) return tmem__err(TMEM_E_FULL);
        if (it->start < tmin) tmin = it->start;
        if (it->end > tmax) tmax = it->end;
    }
    if (n == 0) return TMEM_OK;
    vevent *ev = malloc((size_t)n * 2 * sizeof *ev);
    vnode *t = malloc((size_t)n * sizeof *t);
    if (!ev || !t) {
        free(ev);
        free(t);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    for (uint32_t i = 0; i < n; i++) {
        const tmem__plan_item *it = &p->items[i];
        bool all = it->flags & TMEM_PLAN_BUFFER_NO_ALIAS;
        ev[2 * i] = (vevent){all ? tmin : it->start, i, 1};
        ev[2 * i + 1] = (vevent){all ? tmax : it->end, i, 0};
    }
    qsort(ev, (size_t)n * 2, sizeof *ev, cmp_event);
    int32_t root = -1;
    uint32_t rng = 0x9E3779B9u;
    tmem_status st = TMEM_OK;
    for (size_t e = 0; e < (size_t)n * 2 && st == TMEM_OK; e++) {
        uint32_t i = ev[e].idx;
        vnode key = {offsets[i], i, 0, -1, -1};
        int32_t l, r;
        split(t, root, &key, &l, &r);
        if (ev[e].start) {
            int32_t pred = rightmost(t, l), succ = leftmost(t, r);
            uint64_t top = offsets[i] + p->items[i].size;
            if (pred >= 0 && offsets[t[pred].idx] + p->items[t[pred].idx].size > offsets[i]) {
                why->a = t[pred].idx;
                why->b = i;
                why->value = offsets[i];
                st = tmem__err(TMEM_E_OVERLAP);
            } else if (succ >= 0 && t[succ].off < top) {
                why->a = i;
                why->b = t[succ].idx;
                why->value = t[succ].off;
                st = tmem__err(TMEM_E_OVERLAP);
            }
            rng ^= rng << 13;
            rng ^= rng >> 17;
            rng ^= rng << 5;
            t[i] = (vnode){offsets[i], i, rng, -1, -1};
            root = merge(t, merge(t, l, (int32_t)i), r);
        } else {
            /* r starts with node i itself: drop it. */
            int32_t x = r, parent = -1;
            while (x >= 0 && t[x].l >= 0) {
                parent = x;
                x = t[x].l;
            }
            if (x >= 0) {
                if (parent < 0) r = t[x].r;
                else t[parent].l = t[x].r;
            }
            root = merge(t, l, r);
        }
    }
    free(ev);
    free(t);
    return st;
}

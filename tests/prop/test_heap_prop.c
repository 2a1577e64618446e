/* Property test through the public API: seeded random alloc / free /
 * make_aliasable / reset / purgeable round trips on a GENERAL, a LINEAR ring
 * and a PLACEMENT heap sharing one type under a tight budget, in a DEBUG
 * context. A model tracks every live allocation. After every step:
 *  - tmem_heap_check and tmem_context_check pass;
 *  - no two live non-aliased allocations of a heap overlap, and each lies in
 *    the heap's range;
 *  - each heap's used = sum of its live non-aliased sizes, live_count = its
 *    live allocations;
 *  - the type's in_use = sum of all live sizes; committed <= budget and
 *    = sum of the heaps' committed;
 *  - tmem_heap_check_alias agrees with the model (an aliasable allocation is
 *    overlapped once a later allocation of its heap took some of its bytes);
 *  - a live non-aliased allocation still holds the byte pattern written. */
#include <string.h>
#include "harness.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define MAXLIVE 96
#define NHEAPS 3

typedef struct live {
    uint64_t off, size;
    bool aliasable, overlapped;
    unsigned char tag;
} live;

typedef struct model {
    tmem_heap *h;
    live l[MAXLIVE];
    int n;
} model;

static tmem_context *ctx;
/* coverage: what the run exercised */
static struct { int allocs, budget, full, overlap, alias_checked, overlapped; } cov;
static tmem_type *type;
static const uint64_t BUDGET = 1280 * KiB;

static bool overlaps(uint64_t a, uint64_t as, uint64_t b, uint64_t bs) { return a < b + bs && b < a + as; }

/* A later allocation [off, off+size) flags the aliasable ones it overlaps. */
static void note_new(model *m, uint64_t off, uint64_t size) {
    for (int i = 0; i < m->n; i++)
        if (m->l[i].aliasable && overlaps(off, size, m->l[i].off, m->l[i].size)) m->l[i].overlapped = true;
}

static void add(model *m, uint64_t off, uint64_t size, bool aliasable, unsigned char tag) {
    note_new(m, off, size);
    m->l[m->n++] = (live){off, size, aliasable, false, tag};
    if (!aliasable) memset(tmem_heap_ptr(m->h, off), tag, size);
}

/* Index of the allocation an offset names: the newest live one there. */
static int named(const model *m, uint64_t off) {
    for (int i = m->n - 1; i >= 0; i--)
        if (m->l[i].off == off) return i;
    return -1;
}

static void drop(model *m, int i) {
    memmove(&m->l[i], &m->l[i + 1], (size_t)(m->n - i - 1) * sizeof m->l[0]);
    m->n--;
}

static uint64_t rand_size(tmem_rng *r) { return tmem_rng_range(r, 1, 1ull << tmem_rng_range(r, 4, 18)); }

static void step_alloc(model *m, tmem_rng *r, int step) {
    if (m->n >= MAXLIVE) return;
    tmem_heap_info hi;
    REQUIRE_OK(tmem_heap_get_info(m->h, &hi));
    tmem_alloc_desc ad = {0};
    ad.size = rand_size(r);
    ad.alignment = 16ull << tmem_rng_range(r, 0, 4);
    ad.role = (int32_t)tmem_rng_range(r, TMEM_ROLE_BUILTIN_FIRST, TMEM_ROLE_BUILTIN_END - 1);
    ad.flags = tmem_rng_range(r, 0, 5) == 0 ? TMEM_ALLOC_ALIASABLE : 0;
    if (hi.kind == TMEM_HEAP_PLACEMENT) {
        uint64_t span = hi.size > ad.size ? hi.size - ad.size : 0;
        ad.offset = tmem_rng_range(r, 0, span) & ~(ad.alignment - 1);
    }
    tmem_alloc_info ai;
    tmem_status st = tmem_heap_alloc_ex(m->h, &ad, &ai);
    if (st == TMEM_OK) {
        CHECK_MSG(ai.offset % 16 == 0 && ai.size == ad.size && ai.ptr == tmem_heap_ptr(m->h, ai.offset), "step %d", step);
        add(m, ai.offset, ad.size, ad.flags & TMEM_ALLOC_ALIASABLE, (unsigned char)(step | 1));
        cov.allocs++;
        return;
    }
    CHECK_MSG(ai.offset == TMEM_OFFSET_NONE && ai.ptr == NULL, "step %d", step);
    bool expected = st == TMEM_E_BUDGET || st == TMEM_E_FULL ||
                    (hi.kind == TMEM_HEAP_PLACEMENT && (st == TMEM_E_OVERLAP || st == TMEM_E_INVALID_ARG));
    CHECK_MSG(expected, "step %d: alloc of %llu -> %s", step, (unsigned long long)ad.size, tmem_status_name(st));
    cov.budget += st == TMEM_E_BUDGET;
    cov.full += st == TMEM_E_FULL;
    cov.overlap += st == TMEM_E_OVERLAP;
    if (st == TMEM_E_OVERLAP) {
        /* the model agrees there is a solid overlap */
        bool any = false;
        for (int i = 0; i < m->n; i++)
            if (!m->l[i].aliasable && overlaps(ad.offset, ad.size, m->l[i].off, m->l[i].size)) any = true;
        CHECK_MSG(any, "step %d: OVERLAP without a solid neighbour", step);
    }
}

static void step_free(model *m, tmem_rng *r, int step) {
    if (!m->n) return;
    int k = named(m, m->l[tmem_rng_range(r, 0, (uint64_t)m->n - 1)].off);
    CHECK_MSG(tmem_heap_free_offset(m->h, m->l[k].off) == TMEM_OK, "step %d", step);
    uint64_t off = m->l[k].off;
    drop(m, k);
    if (named(m, off) < 0) {
        tmem_status st = tmem_heap_free_offset(m->h, off);
        CHECK_MSG(st == TMEM_E_DOUBLE_FREE || st == TMEM_E_FOREIGN, "step %d: second free -> %s", step, tmem_status_name(st));
    }
}

static void step_alias(model *m, tmem_rng *r, int step) {
    if (!m->n) return;
    int k = named(m, m->l[tmem_rng_range(r, 0, (uint64_t)m->n - 1)].off);
    CHECK_MSG(tmem_heap_make_aliasable(m->h, m->l[k].off) == TMEM_OK, "step %d", step);
    m->l[k].aliasable = true;
}

static void step_purgeable(model *m, int step) {
    /* VOLATILE and back with no memory pressure: nothing lost */
    tmem_status st = tmem_heap_set_purgeable(m->h, TMEM_PURGEABLE_VOLATILE, NULL, NULL);
    CHECK_MSG(st == TMEM_OK, "step %d: %s", step, tmem_status_name(st));
    bool lost = true;
    st = tmem_heap_set_purgeable(m->h, TMEM_PURGEABLE_NON_VOLATILE, NULL, &lost);
    CHECK_MSG(st == TMEM_OK && !lost, "step %d: %s lost=%d", step, tmem_status_name(st), lost);
}

static void verify(model *ms, int step) {
    uint64_t sum_all = 0, committed = 0;
    for (int h = 0; h < NHEAPS; h++) {
        model *m = &ms[h];
        tmem_heap_info hi;
        REQUIRE_OK(tmem_heap_get_info(m->h, &hi));
        CHECK_MSG(tmem_heap_check(m->h) == TMEM_OK, "step %d heap %d: check", step, h);
        uint64_t used = 0;
        for (int i = 0; i < m->n; i++) {
            const live *a = &m->l[i];
            sum_all += a->size;
            CHECK_MSG(a->off + a->size <= hi.size, "step %d heap %d: out of range", step, h);
            if (a->aliasable) {
                tmem_status want = a->overlapped ? TMEM_E_OVERLAP : TMEM_OK;
                /* an offset shared with a newer allocation names that one */
                if (named(m, a->off) == i) {
                    CHECK_MSG(tmem_heap_check_alias(m->h, a->off) == want, "step %d heap %d: alias", step, h);
                    cov.alias_checked++;
                    cov.overlapped += a->overlapped;
                }
                continue;
            }
            used += a->size;
            const unsigned char *p = tmem_heap_ptr(m->h, a->off);
            CHECK_MSG(p[0] == a->tag && p[a->size - 1] == a->tag, "step %d heap %d: contents", step, h);
            for (int j = i + 1; j < m->n; j++)
                if (!m->l[j].aliasable)
                    CHECK_MSG(!overlaps(a->off, a->size, m->l[j].off, m->l[j].size), "step %d heap %d: overlap", step, h);
        }
        CHECK_MSG(hi.used == used && hi.live_count == (uint64_t)m->n, "step %d heap %d: used %llu want %llu, live %llu want %d", step, h,
                  (unsigned long long)hi.used, (unsigned long long)used, (unsigned long long)hi.live_count, m->n);
        committed += hi.committed;
    }
    tmem_type_stats ts;
    REQUIRE_OK(tmem_type_get_stats(type, &ts));
    CHECK_MSG(ts.in_use.current == sum_all, "step %d: in_use %llu want %llu", step, (unsigned long long)ts.in_use.current,
              (unsigned long long)sum_all);
    CHECK_MSG(ts.committed.current == committed && ts.committed.peak <= BUDGET, "step %d: committed %llu heaps %llu peak %llu", step,
              (unsigned long long)ts.committed.current, (unsigned long long)committed, (unsigned long long)ts.committed.peak);
    CHECK_MSG(tmem_context_check(ctx) == TMEM_OK, "step %d: context check", step);
}

static void test_random(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(2026));
    model ms[NHEAPS];
    memset(ms, 0, sizeof ms);
    const tmem_heap_kind kinds[NHEAPS] = {TMEM_HEAP_GENERAL, TMEM_HEAP_LINEAR, TMEM_HEAP_PLACEMENT};
    for (int h = 0; h < NHEAPS; h++) {
        tmem_heap_desc hd = {0};
        hd.kind = kinds[h];
        hd.type = type;
        hd.size = 2 * MiB;
        hd.flags = kinds[h] == TMEM_HEAP_LINEAR ? TMEM_HEAP_RING : 0;
        REQUIRE_OK(tmem_heap_create(ctx, &hd, &ms[h].h));
    }
    for (int step = 0; step < 3000 && !tmem_test_failures; step++) {
        model *m = &ms[tmem_rng_range(&r, 0, NHEAPS - 1)];
        uint64_t op = tmem_rng_range(&r, 0, 99);
        if (op < 50) step_alloc(m, &r, step);
        else if (op < 88) step_free(m, &r, step);
        else if (op < 95) step_alias(m, &r, step);
        else if (op < 97) step_purgeable(m, step);
        else if (op < 99) {
            CHECK_OK(tmem_heap_reset(m->h));
            m->n = 0;
        } else {
            tmem_heap_destroy(m->h); /* and a fresh one of the same kind */
            tmem_heap_desc hd = {0};
            hd.kind = kinds[m - ms];
            hd.type = type;
            hd.size = 2 * MiB;
            hd.flags = hd.kind == TMEM_HEAP_LINEAR ? TMEM_HEAP_RING : 0;
            m->n = 0;
            REQUIRE_OK(tmem_heap_create(ctx, &hd, &m->h));
        }
        verify(ms, step);
    }
    printf("allocs %d, budget denials %d, full %d, overlap refusals %d, alias checks %d (%d overlapped)\n", cov.allocs, cov.budget,
           cov.full, cov.overlap, cov.alias_checked, cov.overlapped);
    CHECK(cov.allocs > 500 && cov.budget > 0 && cov.overlap > 0 && cov.overlapped > 0 && cov.overlapped < cov.alias_checked);
}

int main(void) {
    tmem_context_desc cd = {0};
    cd.budget = 256 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES | TMEM_CONTEXT_DEBUG;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    tmem_type_desc td = {0};
    td.name = "/memory/prop";
    td.reserve = 64 * MiB;
    td.budget = BUDGET;
    if (tmem_type_create(ctx, &td, &type) != TMEM_OK) return 1;
    RUN(test_random);
    tmem_context_destroy(ctx);
    return tmem_test_finish();
}

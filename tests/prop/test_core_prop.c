/* Property test across types and heaps under a tight budget: random
 * allocate / free / make-aliasable / reset sequences. After every step:
 *  - no two live non-aliased allocations overlap (by address, across heaps),
 *    and their bytes still hold what was written;
 *  - committed <= the context budget and each type's budget;
 *  - each type's and role's in-use bytes and live counts equal the sum over
 *    the live allocations (aliased ones are live until freed);
 *  - tmem_context_check passes;
 *  - a refused allocation changed nothing.
 * Seed printed; TMEM_SEED replays. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "core/core.h"

#define MiB (1ull << 20)
#define MAXLIVE 512
#define NHEAPS 3
#define NROLES 4

typedef struct live {
    int heap;
    uint64_t offset, size;
    unsigned char *ptr;
    bool aliased;
    int role;
    unsigned char fill;
} live;

typedef struct world {
    tmem_context *ctx;
    tmem_type *type[NHEAPS];
    tmem_heap *heap[NHEAPS];
    tmem_heap_kind kind[NHEAPS];
    live l[MAXLIVE];
    int n;
} world;

static const tmem_role roles[NROLES] = {TMEM_ROLE_ACTIVATION, TMEM_ROLE_SCRATCH, TMEM_ROLE_KV_CACHE, TMEM_ROLE_IMAGE};

static int cmp_ptr(const void *a, const void *b) {
    const live *x = *(const live *const *)a, *y = *(const live *const *)b;
    return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

static bool invariants(world *w, const char **why) {
    static const live *sorted[MAXLIVE];
    int k = 0;
    for (int i = 0; i < w->n; i++)
        if (!w->l[i].aliased) sorted[k++] = &w->l[i];
    qsort(sorted, (size_t)k, sizeof sorted[0], cmp_ptr);
    for (int i = 1; i < k; i++)
        if (sorted[i - 1]->ptr + sorted[i - 1]->size > sorted[i]->ptr) { *why = "overlap"; return false; }
    for (int i = 0; i < k; i++) {
        const live *a = sorted[i];
        if (a->ptr[0] != a->fill || a->ptr[a->size - 1] != a->fill || a->ptr[a->size / 2] != a->fill) { *why = "contents"; return false; }
    }
    tmem_budget_info bi;
    if (tmem_context_budget(w->ctx, &bi) != TMEM_OK || bi.committed > bi.budget) { *why = "context budget"; return false; }
    uint64_t type_bytes[NHEAPS] = {0}, type_n[NHEAPS] = {0}, role_bytes[NROLES] = {0}, role_n[NROLES] = {0};
    for (int i = 0; i < w->n; i++) {
        type_bytes[w->l[i].heap] += w->l[i].size;
        type_n[w->l[i].heap]++;
        role_bytes[w->l[i].role] += w->l[i].size;
        role_n[w->l[i].role]++;
    }
    for (int h = 0; h < NHEAPS; h++) {
        tmem_type_stats s;
        tmem_type_info ti;
        if (tmem_type_get_stats(w->type[h], &s) != TMEM_OK || tmem_type_get_info(w->type[h], &ti) != TMEM_OK) { *why = "stats"; return false; }
        if (ti.budget && s.committed.current > ti.budget) { *why = "type budget"; return false; }
        if (s.in_use.current != type_bytes[h] || s.live_count != type_n[h]) { *why = "type accounting"; return false; }
    }
    for (int r = 0; r < NROLES; r++) {
        tmem_role_stats rs;
        if (tmem_role_get_stats(w->ctx, roles[r], &rs) != TMEM_OK || rs.in_use.current != role_bytes[r] || rs.live_count != role_n[r]) {
            *why = "role accounting";
            return false;
        }
    }
    if (tmem_context_check(w->ctx) != TMEM_OK) { *why = "tmem_context_check"; return false; }
    return true;
}

static void drop(world *w, int i) { w->l[i] = w->l[--w->n]; }

static void run(uint64_t seed, int steps) {
    tmem_rng rng;
    tmem_rng_init(&rng, seed);
    world *w = calloc(1, sizeof *w);
    tmem_context_desc cd = {0};
    cd.budget = 3 * MiB; /* far tighter than the heaps together (11 MiB) */
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES | TMEM_CONTEXT_DEBUG;
    REQUIRE_OK(tmem_context_create(&cd, &w->ctx));
    /* Roles must map somewhere to be named; map them to the first type. */
    const char *names[NHEAPS] = {"/memory/general", "/memory/linear", "/memory/capped"};
    const uint64_t heap_size[NHEAPS] = {4 * MiB, 3 * MiB, 4 * MiB};
    const uint64_t type_budget[NHEAPS] = {0, 0, 1 * MiB};
    w->kind[0] = TMEM_HEAP_GENERAL;
    w->kind[1] = TMEM_HEAP_LINEAR;
    w->kind[2] = TMEM_HEAP_GENERAL;
    for (int h = 0; h < NHEAPS; h++) {
        tmem_type_desc td = {0};
        td.name = names[h];
        td.reserve = 8 * MiB;
        td.budget = type_budget[h];
        td.lifetime = h == 1 ? TMEM_LIFETIME_TRANSIENT : TMEM_LIFETIME_PERSISTENT;
        REQUIRE_OK(tmem_type_create(w->ctx, &td, &w->type[h]));
        tmem_heap_desc hd = {0};
        hd.kind = w->kind[h];
        hd.type = w->type[h];
        hd.role = roles[h];
        hd.size = heap_size[h];
        REQUIRE_OK(tmem_heap_create(w->ctx, &hd, &w->heap[h]));
    }
    for (int r = 0; r < NROLES; r++) REQUIRE_OK(tmem_role_set_type(w->ctx, roles[r], w->type[0]));

    uint64_t allocs = 0, refused = 0, refused_budget = 0, frees = 0, aliases = 0, resets = 0;
    for (int step = 0; step < steps; step++) {
        uint64_t op = tmem_rng_range(&rng, 0, 99);
        if (op < 55 && w->n < MAXLIVE) {
            int h = (int)tmem_rng_range(&rng, 0, NHEAPS - 1);
            tmem_alloc_desc ad = {0};
            ad.size = 1ull << tmem_rng_range(&rng, 4, 18);
            ad.size += tmem_rng_range(&rng, 0, ad.size - 1);
            ad.alignment = 1ull << tmem_rng_range(&rng, 4, 12);
            ad.flags = tmem_rng_range(&rng, 0, 9) == 0 ? TMEM_ALLOC_ALIASABLE : 0;
            int role = (int)tmem_rng_range(&rng, 0, NROLES - 1);
            ad.role = roles[role];
            tmem_budget_info before, after;
            CHECK_OK(tmem_context_budget(w->ctx, &before));
            tmem_alloc_info ai;
            tmem_status st = tmem_heap_alloc_ex(w->heap[h], &ad, &ai);
            if (st == TMEM_OK) {
                allocs++;
                live *l = &w->l[w->n++];
                *l = (live){h, ai.offset, ad.size, ai.ptr, (ad.flags & TMEM_ALLOC_ALIASABLE) != 0, role, (unsigned char)(step | 1)};
                CHECK(ai.ptr != NULL && ((uintptr_t)ai.ptr & (ad.alignment - 1)) == 0);
                if (!l->aliased) memset(l->ptr, l->fill, l->size);
            } else {
                refused++;
                if (st == TMEM_E_BUDGET) refused_budget++;
                CHECK_MSG(st == TMEM_E_BUDGET || st == TMEM_E_FULL, "step %d: %s", step, tmem_status_name(st));
                CHECK_OK(tmem_context_budget(w->ctx, &after));
                CHECK_MSG(after.committed == before.committed, "step %d: a refused allocation changed committed", step);
            }
        } else if (op < 80 && w->n) {
            int i = (int)tmem_rng_range(&rng, 0, (uint64_t)w->n - 1);
            /* An aliased allocation's offset may be shared by a later one; a
             * free by offset then takes the non-aliased one. Model exactly
             * that, and skip offsets the model cannot tell apart. */
            int h = w->l[i].heap, plain = -1, nplain = 0, nalias = 0, alias = -1;
            for (int j = 0; j < w->n; j++)
                if (w->l[j].heap == h && w->l[j].offset == w->l[i].offset) {
                    if (w->l[j].aliased) nalias++, alias = j;
                    else nplain++, plain = j;
                }
            int victim = nplain == 1 ? plain : (nplain == 0 && nalias == 1 ? alias : -1);
            if (w->kind[h] == TMEM_HEAP_GENERAL && victim >= 0) {
                CHECK_OK(tmem_heap_free_offset(w->heap[h], w->l[victim].offset));
                if (nplain + nalias == 1) {
                    /* Refused, and (checked below) nothing changed. A freed
                     * block merged into a neighbour may read as foreign. */
                    tmem_status again = tmem_heap_free_offset(w->heap[h], w->l[victim].offset);
                    CHECK_MSG(again == TMEM_E_DOUBLE_FREE || again == TMEM_E_FOREIGN, "second free: %s", tmem_status_name(again));
                }
                drop(w, victim);
                frees++;
            }
        } else if (op < 96 && w->n) {
            int i = (int)tmem_rng_range(&rng, 0, (uint64_t)w->n - 1);
            if (!w->l[i].aliased) {
                CHECK_OK(tmem_heap_make_aliasable(w->heap[w->l[i].heap], w->l[i].offset));
                w->l[i].aliased = true;
                aliases++;
            }
        } else {
            int h = (int)tmem_rng_range(&rng, 0, NHEAPS - 1);
            CHECK_OK(tmem_heap_reset(w->heap[h]));
            for (int i = w->n; i-- > 0;)
                if (w->l[i].heap == h) drop(w, i);
            resets++;
        }
        const char *why = "";
        if (!invariants(w, &why)) {
            CHECK_MSG(false, "seed %llu step %d: %s", (unsigned long long)seed, step, why);
            break;
        }
    }
    printf("seed %llu: %llu allocs, %llu refused (%llu over budget), %llu frees, %llu aliased, %llu resets\n", (unsigned long long)seed,
           (unsigned long long)allocs, (unsigned long long)refused, (unsigned long long)refused_budget, (unsigned long long)frees, (unsigned long long)aliases,
           (unsigned long long)resets);
    CHECK(allocs > 0 && refused_budget > 0); /* the budget really was tight */
    tmem_context_destroy(w->ctx);
    free(w);
}

int main(void) {
    uint64_t seed = tmem_test_seed(20261129);
    for (uint64_t i = 0; i < 4; i++) run(seed + i, 2500);
    return tmem_test_finish();
}

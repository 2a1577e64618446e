/* BLOCK heaps: fixed-size blocks committed when handed out and decommitted
 * the moment they are freed. Geometry, immediate decommit (in the type's
 * accounting and in the OS: mincore and the process footprint), refused
 * misuse with nothing changed, budget denial with nothing changed, a reclaim
 * step that frees into the allocation that triggered it, a fixed-seed
 * property run against a model, and THREAD_SAFE heaps from two threads. */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "harness.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

typedef struct fixture {
    tmem_context *ctx;
    tmem_type *type;
} fixture;

static bool fixture_init(fixture *f, uint64_t budget) {
    memset(f, 0, sizeof *f);
    tmem_context_desc cd = {.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES | TMEM_CONTEXT_DEBUG};
    if (tmem_context_create(&cd, &f->ctx) != TMEM_OK) return false;
    tmem_type_desc td = {.name = "/memory/blocks", .reserve = 256 * MiB, .budget = budget};
    return tmem_type_create(f->ctx, &td, &f->type) == TMEM_OK;
}

static tmem_heap *block_heap(fixture *f, uint64_t size, uint64_t block, uint32_t flags) {
    tmem_heap_desc hd = {.kind = TMEM_HEAP_BLOCK, .type = f->type, .size = size, .block_size = block,
                         .flags = flags, .name = "blocks"};
    tmem_heap *h = NULL;
    return tmem_heap_create(f->ctx, &hd, &h) == TMEM_OK ? h : NULL;
}

static uint64_t type_committed(const fixture *f) {
    tmem_type_stats s;
    return tmem_type_get_stats(f->type, &s) == TMEM_OK ? s.committed.current : ~0ull;
}

static uint64_t type_in_use(const fixture *f) {
    tmem_type_stats s;
    return tmem_type_get_stats(f->type, &s) == TMEM_OK ? s.in_use.current : ~0ull;
}

static uint64_t page_size(void) { return (uint64_t)sysconf(_SC_PAGESIZE); }

/* Resident pages of [p, p+n) by mincore. */
static uint64_t resident_pages(void *p, uint64_t n) {
    uint64_t ps = page_size(), pages = (n + ps - 1) / ps, count = 0;
    unsigned char vec[256];
    if (pages > sizeof vec || mincore(p, n, vec) != 0) return ~0ull;
    for (uint64_t i = 0; i < pages; i++) count += vec[i] & 1;
    return count;
}

static bool info_equal(const tmem_heap_info *a, const tmem_heap_info *b) {
    return a->used == b->used && a->committed == b->committed && a->live_count == b->live_count &&
           a->largest_free == b->largest_free && a->peak_used == b->peak_used && a->size == b->size;
}

static void test_geometry(void) {
    fixture f;
    REQUIRE(fixture_init(&f, 0));
    tmem_heap *h = block_heap(&f, 1 * MiB, 10000, 0);
    REQUIRE(h);
    tmem_heap_info hi;
    REQUIRE_OK(tmem_heap_get_info(h, &hi));
    uint64_t ps = page_size();
    CHECK(hi.kind == TMEM_HEAP_BLOCK);
    CHECK(hi.block_stride >= 10000 && hi.block_stride % ps == 0 && hi.block_stride - 10000 < ps);
    CHECK(hi.size == (1 * MiB / hi.block_stride) * hi.block_stride);
    CHECK(hi.used == 0 && hi.committed == 0 && hi.live_count == 0 && hi.largest_free == 10000);
    CHECK(type_committed(&f) == 0); /* nothing committed up front */
    void *a, *b;
    REQUIRE_OK(tmem_heap_alloc(h, 10000, 0, &a));
    REQUIRE_OK(tmem_heap_alloc(h, 100, ps, &b)); /* any size up to the block; alignment up to a page */
    CHECK(((uintptr_t)a % ps) == 0 && ((uintptr_t)b % ps) == 0);
    uint64_t gap = a < b ? (uint64_t)((char *)b - (char *)a) : (uint64_t)((char *)a - (char *)b);
    CHECK(gap % hi.block_stride == 0 && gap >= hi.block_stride);
    memset(a, 1, 10000);
    memset(b, 2, 10000); /* the whole block is the caller's */
    REQUIRE_OK(tmem_heap_get_info(h, &hi));
    CHECK(hi.used == 20000 && hi.committed == 2 * hi.block_stride && hi.live_count == 2);
    CHECK(type_committed(&f) == 2 * hi.block_stride && type_in_use(&f) == 20000);
    CHECK_OK(tmem_heap_check(h));
    /* alloc_ex: offsets, ZERO, the heap's role only */
    tmem_alloc_info ai;
    tmem_alloc_desc ad = {.size = 64, .flags = TMEM_ALLOC_ZERO};
    REQUIRE_OK(tmem_heap_alloc_ex(h, &ad, &ai));
    CHECK(ai.offset % hi.block_stride == 0 && ai.ptr == tmem_heap_ptr(h, ai.offset) && ai.size == 64);
    CHECK(((unsigned char *)ai.ptr)[9999] == 0);
    CHECK_OK(tmem_heap_free_offset(h, ai.offset));
    CHECK_OK(tmem_heap_free(h, a));
    CHECK_OK(tmem_heap_free(h, b));
    tmem_heap_destroy(h);
    CHECK(type_committed(&f) == 0 && type_in_use(&f) == 0);
    tmem_context_destroy(f.ctx);
}

/* Freeing a block takes it out of the budget and out of the process's
 * memory at once: mincore sees no page, the footprint drops by the blocks. */
static void test_immediate_decommit(void) {
    fixture f;
    REQUIRE(fixture_init(&f, 0));
    enum { N = 64 };
    const uint64_t bs = 64 * KiB;
    tmem_heap *h = block_heap(&f, N * bs, bs, 0);
    REQUIRE(h);
    void *p[N];
    tmem_footprint fp0, fp1, fp2;
    REQUIRE_OK(tmem_footprint_read(&fp0));
    for (int i = 0; i < N; i++) {
        REQUIRE_OK(tmem_heap_alloc(h, bs, 0, &p[i]));
        memset(p[i], i + 1, bs);
    }
    REQUIRE_OK(tmem_footprint_read(&fp1));
    CHECK(resident_pages(p[0], bs) == bs / page_size());
    CHECK(type_committed(&f) == N * bs);
    tmem_heap_info hi;
    for (int i = 0; i < N; i++) {
        uint64_t before = type_committed(&f);
        REQUIRE_OK(tmem_heap_free(h, p[i]));
        CHECK_MSG(type_committed(&f) == before - bs, "free %d: the charge drops by one block now", i);
        CHECK_MSG(resident_pages(p[i], bs) == 0, "free %d: no page of the block resident", i);
    }
    REQUIRE_OK(tmem_footprint_read(&fp2));
    REQUIRE_OK(tmem_heap_get_info(h, &hi));
    CHECK(hi.committed == 0 && hi.used == 0 && type_committed(&f) == 0);
    /* 4 MiB written then freed: the footprint rose and fell by (about) that */
    if (fp1.private_dirty || fp0.private_dirty) {
        CHECK_MSG(fp1.private_dirty >= fp0.private_dirty + 3 * MiB, "rise %llu -> %llu",
                  (unsigned long long)fp0.private_dirty, (unsigned long long)fp1.private_dirty);
        CHECK_MSG(fp2.private_dirty + 3 * MiB <= fp1.private_dirty, "fall %llu -> %llu",
                  (unsigned long long)fp1.private_dirty, (unsigned long long)fp2.private_dirty);
    } else {
        tmem_test_skip_part("footprint: smaps_rollup not readable here");
    }
    /* a block handed out again is committed again, zeroed by the OS */
    void *q;
    REQUIRE_OK(tmem_heap_alloc(h, bs, 0, &q));
    CHECK(((unsigned char *)q)[100] == 0 && type_committed(&f) == bs);
    CHECK_OK(tmem_heap_free(h, q));
    tmem_heap_destroy(h);
    tmem_context_destroy(f.ctx);
}

/* Every refused call returns its status and changes nothing. */
static void test_misuse(void) {
    fixture f;
    REQUIRE(fixture_init(&f, 0));
    tmem_heap *h = block_heap(&f, 1 * MiB, 4096, 0);
    REQUIRE(h);
    void *a = NULL, *b = NULL, *out = (void *)1;
    REQUIRE_OK(tmem_heap_alloc(h, 4096, 0, &a));
    REQUIRE_OK(tmem_heap_alloc(h, 4096, 0, &b));
    tmem_heap_info before, after;
    REQUIRE_OK(tmem_heap_get_info(h, &before));
    uint64_t off_b = (uint64_t)((char *)b - (char *)tmem_heap_ptr(h, 0));
    CHECK_ST(tmem_heap_alloc(h, 4097, 0, &out), TMEM_E_INVALID_ARG); /* more than a block */
    CHECK(out == NULL);
    CHECK_ST(tmem_heap_alloc(h, 0, 0, &out), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_heap_alloc(h, 16, 3, &out), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem_heap_alloc(h, 16, 2 * page_size(), &out), TMEM_E_ALIGNMENT);
    tmem_alloc_info ai;
    tmem_alloc_desc alias = {.size = 16, .flags = TMEM_ALLOC_ALIASABLE};
    CHECK_ST(tmem_heap_alloc_ex(h, &alias, &ai), TMEM_E_UNSUPPORTED);
    CHECK(ai.offset == TMEM_OFFSET_NONE && ai.ptr == NULL);
    tmem_alloc_desc role = {.size = 16, .role = TMEM_ROLE_WEIGHTS};
    CHECK_ST(tmem_heap_alloc_ex(h, &role, &ai), TMEM_E_INVALID_ARG);
    tmem_alloc_handle ah;
    uint64_t ho;
    CHECK_ST(tmem_heap_alloc_handle(h, 16, 0, &ah, &ho), TMEM_E_UNSUPPORTED);
    CHECK(ah.value == 0 && ho == TMEM_OFFSET_NONE);
    CHECK_ST(tmem_heap_set_purgeable(h, TMEM_PURGEABLE_VOLATILE, NULL, NULL), TMEM_E_UNSUPPORTED);
    CHECK_ST(tmem_heap_make_aliasable(h, off_b), TMEM_E_UNSUPPORTED);
    CHECK_ST(tmem_heap_check_alias(h, off_b), TMEM_E_UNSUPPORTED);
    /* foreign: inside a block, a block never handed out, past the end, another heap's pointer */
    CHECK_ST(tmem_heap_free_offset(h, off_b + 16), TMEM_E_FOREIGN);
    CHECK_ST(tmem_heap_free_offset(h, 100 * 4096), TMEM_E_FOREIGN);
    CHECK_ST(tmem_heap_free_offset(h, 1 * MiB), TMEM_E_FOREIGN);
    CHECK_ST(tmem_heap_free(h, (char *)b + 8), TMEM_E_FOREIGN);
    int local;
    CHECK_ST(tmem_heap_free(h, &local), TMEM_E_FOREIGN);
    REQUIRE_OK(tmem_heap_get_info(h, &after));
    CHECK(info_equal(&before, &after));
    CHECK_OK(tmem_heap_check(h));
    /* double free, by pointer and by offset */
    CHECK_OK(tmem_heap_free(h, b));
    REQUIRE_OK(tmem_heap_get_info(h, &before));
    uint64_t committed = type_committed(&f);
    CHECK_ST(tmem_heap_free(h, b), TMEM_E_DOUBLE_FREE);
    CHECK_ST(tmem_heap_free_offset(h, off_b), TMEM_E_DOUBLE_FREE);
    REQUIRE_OK(tmem_heap_get_info(h, &after));
    CHECK(info_equal(&before, &after) && type_committed(&f) == committed);
    CHECK_OK(tmem_heap_check(h));
    /* reset frees every block and decommits it */
    CHECK_OK(tmem_heap_reset(h));
    REQUIRE_OK(tmem_heap_get_info(h, &after));
    CHECK(after.used == 0 && after.live_count == 0 && after.committed == 0 && type_committed(&f) == 0);
    CHECK_ST(tmem_heap_free(h, a), TMEM_E_DOUBLE_FREE);
    CHECK_OK(tmem_heap_check(h));
    tmem_heap_destroy(h);
    /* bad descriptors */
    tmem_heap_desc hd = {.kind = TMEM_HEAP_BLOCK, .type = f.type, .size = 1 * MiB};
    tmem_heap *bad = (tmem_heap *)1;
    CHECK_ST(tmem_heap_create(f.ctx, &hd, &bad), TMEM_E_INVALID_ARG); /* block_size 0 */
    CHECK(bad == NULL);
    hd.block_size = 2 * MiB; /* not one block fits */
    CHECK_ST(tmem_heap_create(f.ctx, &hd, &bad), TMEM_E_INVALID_ARG);
    hd.block_size = 4096;
    hd.flags = TMEM_HEAP_COMMIT_ALL; /* would contradict decommit on free */
    CHECK_ST(tmem_heap_create(f.ctx, &hd, &bad), TMEM_E_INVALID_ARG);
    hd.flags = TMEM_HEAP_RING;
    CHECK_ST(tmem_heap_create(f.ctx, &hd, &bad), TMEM_E_INVALID_ARG);
    CHECK(type_committed(&f) == 0);
    tmem_context_destroy(f.ctx);
}

/* A full heap and a budget denial leave everything as it was. */
static void test_full_and_budget(void) {
    fixture f;
    REQUIRE(fixture_init(&f, 3 * 8 * KiB));
    tmem_heap *h = block_heap(&f, 5 * 8 * KiB, 8 * KiB, 0);
    REQUIRE(h);
    void *p[5] = {0};
    for (int i = 0; i < 3; i++) REQUIRE_OK(tmem_heap_alloc(h, 8 * KiB, 0, &p[i]));
    tmem_heap_info before, after;
    tmem_type_stats ts0, ts1;
    REQUIRE_OK(tmem_heap_get_info(h, &before));
    REQUIRE_OK(tmem_type_get_stats(f.type, &ts0));
    void *out = (void *)1;
    CHECK_ST(tmem_heap_alloc(h, 8 * KiB, 0, &out), TMEM_E_BUDGET);
    CHECK(out == NULL);
    REQUIRE_OK(tmem_heap_get_info(h, &after));
    REQUIRE_OK(tmem_type_get_stats(f.type, &ts1));
    CHECK(info_equal(&before, &after));
    CHECK(ts1.committed.current == ts0.committed.current && ts1.in_use.current == ts0.in_use.current);
    CHECK(ts1.live_count == ts0.live_count && ts1.budget_denials == ts0.budget_denials + 1);
    CHECK_OK(tmem_heap_check(h));
    /* the denied block is the one handed out next: nothing leaked from the range */
    CHECK_OK(tmem_heap_free(h, p[2]));
    REQUIRE_OK(tmem_heap_alloc(h, 8 * KiB, 0, &p[2]));
    tmem_heap_destroy(h);
    /* FULL: a range of two blocks without a budget */
    REQUIRE_OK(tmem_type_set_budget(f.type, 0));
    h = block_heap(&f, 2 * 8 * KiB, 8 * KiB, 0);
    REQUIRE(h);
    REQUIRE_OK(tmem_heap_alloc(h, 1, 0, &p[0]));
    REQUIRE_OK(tmem_heap_alloc(h, 1, 0, &p[1]));
    REQUIRE_OK(tmem_heap_get_info(h, &before));
    CHECK(before.largest_free == 0);
    CHECK_ST(tmem_heap_alloc(h, 1, 0, &out), TMEM_E_FULL);
    REQUIRE_OK(tmem_heap_get_info(h, &after));
    CHECK(info_equal(&before, &after));
    CHECK_OK(tmem_heap_free(h, p[0]));
    REQUIRE_OK(tmem_heap_get_info(h, &after));
    CHECK(after.largest_free == 8 * KiB);
    tmem_heap_destroy(h); /* with a live block: destroy gives it back */
    CHECK(type_committed(&f) == 0 && type_in_use(&f) == 0);
    tmem_context_destroy(f.ctx);
}

/* The commit of one block runs a reclaim step that frees another block of
 * the same heap (a KV cache evicting for its own allocation): the heap must
 * take that re-entrant free and the allocation then succeed. */
typedef struct reentry {
    tmem_heap *heap;
    void *victim;
    uint64_t calls;
} reentry;

static uint64_t free_victim(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user) {
    (void)ctx;
    (void)type;
    (void)needed;
    reentry *r = user;
    r->calls++;
    if (!r->victim) return 0;
    tmem_heap_info hi;
    if (tmem_heap_free(r->heap, r->victim) != TMEM_OK || tmem_heap_get_info(r->heap, &hi) != TMEM_OK) return 0;
    r->victim = NULL;
    return hi.block_stride;
}

static void reentrant_free(uint32_t flags) {
    fixture f;
    REQUIRE(fixture_init(&f, 2 * 8 * KiB));
    reentry r = {block_heap(&f, 8 * 8 * KiB, 8 * KiB, flags), NULL, 0};
    REQUIRE(r.heap);
    REQUIRE_OK(tmem_context_add_reclaim(f.ctx, 0, free_victim, &r));
    void *a, *b, *c;
    REQUIRE_OK(tmem_heap_alloc(r.heap, 8 * KiB, 0, &a));
    REQUIRE_OK(tmem_heap_alloc(r.heap, 8 * KiB, 0, &b));
    r.victim = a;
    CHECK_OK(tmem_heap_alloc(r.heap, 8 * KiB, 0, &c));
    CHECK(r.calls >= 1 && r.victim == NULL);
    tmem_heap_info hi;
    REQUIRE_OK(tmem_heap_get_info(r.heap, &hi));
    CHECK(hi.live_count == 2 && hi.committed == 2 * 8 * KiB && type_committed(&f) == 2 * 8 * KiB);
    CHECK_OK(tmem_heap_check(r.heap));
    CHECK_OK(tmem_context_check(f.ctx));
    /* nothing to reclaim any more: the denial leaves the heap as it was */
    CHECK_ST(tmem_heap_alloc(r.heap, 8 * KiB, 0, &a), TMEM_E_BUDGET);
    CHECK_OK(tmem_heap_check(r.heap));
    CHECK_OK(tmem_context_remove_reclaim(f.ctx, free_victim, &r));
    tmem_context_destroy(f.ctx);
}

static void test_reentrant_free(void) {
    reentrant_free(0);
    reentrant_free(TMEM_HEAP_THREAD_SAFE);
}

/* Random alloc / free (by pointer and by offset) / reset against a model;
 * the heap's check, its info and the type's accounting after every step,
 * each live block's contents at the end. */
static void test_property(void) {
    uint64_t seed = tmem_test_seed(0xB10C); /* printed by the harness; TMEM_SEED replays */
    tmem_rng rng;
    tmem_rng_init(&rng, seed);
    fixture f;
    REQUIRE(fixture_init(&f, 0));
    enum { NB = 40, STEPS = 4000 };
    const uint64_t bs = 5000;
    tmem_heap *h = block_heap(&f, NB * 8 * KiB, bs, 0);
    REQUIRE(h);
    tmem_heap_info hi;
    REQUIRE_OK(tmem_heap_get_info(h, &hi));
    uint32_t nblocks = (uint32_t)(hi.size / hi.block_stride);
    unsigned char *live[NB * 4] = {0};
    uint32_t nlive = 0, stamp = 0;
    unsigned char tag[NB * 4];
    for (int step = 0; step < STEPS; step++) {
        uint64_t dice = tmem_rng_range(&rng, 0, 99);
        if (dice < 1) {
            REQUIRE_OK(tmem_heap_reset(h));
            nlive = 0;
        } else if (dice < 55) {
            void *p = NULL;
            tmem_status st = tmem_heap_alloc(h, tmem_rng_range(&rng, 1, bs), 0, &p);
            if (nlive == nblocks) {
                CHECK_ST(st, TMEM_E_FULL);
            } else {
                REQUIRE_OK(st);
                for (uint32_t i = 0; i < nlive; i++) REQUIRE(live[i] != p);
                tag[nlive] = (unsigned char)(++stamp | 1);
                memset(p, tag[nlive], bs);
                live[nlive++] = p;
            }
        } else if (nlive) {
            uint32_t k = (uint32_t)tmem_rng_range(&rng, 0, nlive - 1);
            REQUIRE(live[k][0] == tag[k] && live[k][bs - 1] == tag[k]);
            uint64_t off = (uint64_t)(live[k] - (unsigned char *)tmem_heap_ptr(h, 0));
            REQUIRE_OK(dice & 1 ? tmem_heap_free(h, live[k]) : tmem_heap_free_offset(h, off));
            CHECK_ST(tmem_heap_free_offset(h, off), TMEM_E_DOUBLE_FREE);
            live[k] = live[nlive - 1];
            tag[k] = tag[nlive - 1];
            nlive--;
        }
        REQUIRE_OK(tmem_heap_check(h));
        REQUIRE_OK(tmem_heap_get_info(h, &hi));
        REQUIRE(hi.live_count == nlive && hi.used == nlive * bs && hi.committed == nlive * hi.block_stride);
        REQUIRE(type_committed(&f) == hi.committed && type_in_use(&f) == hi.used);
    }
    for (uint32_t i = 0; i < nlive; i++) CHECK(live[i][bs / 2] == tag[i]);
    tmem_heap_destroy(h);
    CHECK(type_committed(&f) == 0);
    CHECK_OK(tmem_context_check(f.ctx));
    tmem_context_destroy(f.ctx);
}

/* THREAD_SAFE: two threads allocate and free blocks of one heap. */
typedef struct worker {
    tmem_heap *heap;
    uint64_t seed;
    int failures;
} worker;

static void *churn(void *arg) {
    worker *w = arg;
    tmem_rng rng;
    tmem_rng_init(&rng, w->seed);
    void *held[16] = {0};
    for (int i = 0; i < 3000; i++) {
        uint32_t k = (uint32_t)tmem_rng_range(&rng, 0, 15);
        if (held[k]) {
            if (*(uint64_t *)held[k] != (uint64_t)(uintptr_t)held[k]) w->failures++;
            if (tmem_heap_free(w->heap, held[k]) != TMEM_OK) w->failures++;
            held[k] = NULL;
        } else if (tmem_heap_alloc(w->heap, 64, 0, &held[k]) == TMEM_OK) {
            *(uint64_t *)held[k] = (uint64_t)(uintptr_t)held[k];
        } else {
            w->failures++;
        }
    }
    for (int k = 0; k < 16; k++)
        if (held[k] && tmem_heap_free(w->heap, held[k]) != TMEM_OK) w->failures++;
    return NULL;
}

static void test_threads(void) {
    fixture f;
    REQUIRE(fixture_init(&f, 0));
    tmem_heap *h = block_heap(&f, 40 * 4096, 4096, TMEM_HEAP_THREAD_SAFE);
    REQUIRE(h);
    worker w[2] = {{h, 1, 0}, {h, 2, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) REQUIRE(pthread_create(&t[i], NULL, churn, &w[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    CHECK(w[0].failures == 0 && w[1].failures == 0);
    tmem_heap_info hi;
    REQUIRE_OK(tmem_heap_get_info(h, &hi));
    CHECK(hi.live_count == 0 && hi.committed == 0 && type_committed(&f) == 0);
    CHECK_OK(tmem_heap_check(h));
    tmem_context_destroy(f.ctx); /* destroys the heap with it */
}

int main(void) {
    RUN(test_geometry);
    RUN(test_immediate_decommit);
    RUN(test_misuse);
    RUN(test_full_and_budget);
    RUN(test_reentrant_free);
    RUN(test_property);
    RUN(test_threads);
    return tmem_test_finish();
}

/* Several threads commit and decommit against one shared budget while a
 * reclaimable cache gives memory back, reclaim steps come and go, and readers
 * take stats. Under TSan (make test-tsan) this checks the locking; always it
 * checks that the budget is never crossed and the books balance. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "core/core.h"

#define MiB (1ull << 20)
#define WORKERS 4
#define ITERS 1500
#define SLICE (4 * MiB)

typedef struct shared {
    tmem_context *ctx;
    tmem_type *work, *cache_type;
    uint64_t budget;
    atomic_int over_budget_seen;
    atomic_int stop;
    atomic_uint pressure_calls;
    /* the cache: chunks [head, tail) committed, guarded by mu */
    pthread_mutex_t mu;
    uint64_t head, tail;
    atomic_ullong evicted;
} shared;

typedef struct worker {
    shared *sh;
    uint64_t base;
    uint64_t seed;
    uint64_t ok, denied;
} worker;

static const uint64_t CHUNK = 256 << 10;

/* Reclaim step: evict cache chunks. Never blocks: a committing thread may be
 * inside the cache (holding mu) when reclaim runs on it. */
static uint64_t cache_evict(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user) {
    (void)ctx;
    shared *sh = user;
    if (type && type != sh->cache_type) return 0;
    if (pthread_mutex_trylock(&sh->mu)) return 0;
    uint64_t got = 0;
    while (got < needed && sh->head < sh->tail) {
        tmem__pool_decommit(sh->cache_type, (sh->head % 64) * CHUNK, CHUNK);
        sh->head++;
        got += CHUNK;
    }
    pthread_mutex_unlock(&sh->mu);
    atomic_fetch_add(&sh->evicted, got);
    return got;
}

static void on_pressure(tmem_context *ctx, tmem_pressure level, void *user) {
    (void)ctx; (void)level;
    atomic_fetch_add(&((shared *)user)->pressure_calls, 1);
}

static void check_budget(shared *sh) {
    tmem_budget_info bi;
    if (tmem_context_budget(sh->ctx, &bi) != TMEM_OK || bi.committed > bi.budget) atomic_store(&sh->over_budget_seen, 1);
}

static void *work_main(void *p) {
    worker *w = p;
    shared *sh = w->sh;
    tmem_rng rng;
    tmem_rng_init(&rng, w->seed);
    for (int i = 0; i < ITERS; i++) {
        uint64_t off = tmem_rng_range(&rng, 0, SLICE / 4096 - 1) * 4096;
        uint64_t len = tmem_rng_range(&rng, 1, 64) * 4096;
        if (off + len > SLICE) len = SLICE - off;
        if (tmem_rng_range(&rng, 0, 2)) {
            tmem_status st = tmem__pool_commit(sh->work, w->base + off, len);
            if (st == TMEM_OK) {
                w->ok++;
                ((volatile char *)tmem__pool_ptr(sh->work, w->base + off))[0] = 1; /* writable */
            } else if (st == TMEM_E_BUDGET) {
                w->denied++;
            } else {
                atomic_store(&sh->over_budget_seen, 2);
            }
        } else {
            tmem__pool_decommit(sh->work, w->base + off, len);
        }
        check_budget(sh);
    }
    return NULL;
}

/* Fills the cache whenever there is room. */
static void *cache_main(void *p) {
    shared *sh = p;
    while (!atomic_load(&sh->stop)) {
        pthread_mutex_lock(&sh->mu);
        if (sh->tail - sh->head < 64) {
            /* Commit without reclaim for our own type's sake: reclaim may run
             * and find mu held (trylock fails), which is the point. */
            if (tmem__pool_commit(sh->cache_type, (sh->tail % 64) * CHUNK, CHUNK) == TMEM_OK) sh->tail++;
        }
        pthread_mutex_unlock(&sh->mu);
        check_budget(sh);
    }
    return NULL;
}

/* Adds and removes a step whose user data is freed right after removal: if
 * removal did not wait for in-flight runs, ASan/TSan would see it. */
typedef struct transient_step {
    atomic_int calls;
    char pad[64];
} transient_step;

static uint64_t transient_fn(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user) {
    (void)ctx; (void)type; (void)needed;
    transient_step *t = user;
    atomic_fetch_add(&t->calls, 1);
    return 0;
}

static void *churn_main(void *p) {
    shared *sh = p;
    while (!atomic_load(&sh->stop)) {
        transient_step *t = calloc(1, sizeof *t);
        if (tmem_context_add_reclaim(sh->ctx, 5, transient_fn, t) == TMEM_OK)
            TMEM__IGNORE(tmem_context_remove_reclaim(sh->ctx, transient_fn, t));
        free(t);
    }
    return NULL;
}

static void *reader_main(void *p) {
    shared *sh = p;
    char *buf = malloc(1 << 16);
    while (!atomic_load(&sh->stop)) {
        size_t need;
        TMEM__IGNORE(tmem_stats_json(sh->ctx, buf, 1 << 16, &need));
        tmem_type_stats s;
        TMEM__IGNORE(tmem_type_get_stats(sh->work, &s));
        check_budget(sh);
    }
    free(buf);
    return NULL;
}

static void test_threads(void) {
    shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    sh.budget = 24 * MiB;
    tmem_context_desc cd = {0};
    cd.budget = sh.budget;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &sh.ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/work";
    td.reserve = WORKERS * SLICE;
    REQUIRE_OK(tmem_type_create(sh.ctx, &td, &sh.work));
    td.name = "/memory/cache";
    td.reserve = 64 * CHUNK;
    REQUIRE_OK(tmem_type_create(sh.ctx, &td, &sh.cache_type));
    REQUIRE_OK(tmem_context_add_reclaim(sh.ctx, 1, cache_evict, &sh));
    REQUIRE_OK(tmem_context_set_pressure_callback(sh.ctx, on_pressure, &sh));

    uint64_t seed = tmem_test_seed(7);
    worker w[WORKERS];
    pthread_t tw[WORKERS], tc, tch, tr;
    pthread_create(&tc, NULL, cache_main, &sh);
    pthread_create(&tch, NULL, churn_main, &sh);
    pthread_create(&tr, NULL, reader_main, &sh);
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (worker){&sh, (uint64_t)i * SLICE, seed + (uint64_t)i, 0, 0};
        pthread_create(&tw[i], NULL, work_main, &w[i]);
    }
    for (int i = 0; i < WORKERS; i++) pthread_join(tw[i], NULL);
    atomic_store(&sh.stop, 1);
    pthread_join(tc, NULL);
    pthread_join(tch, NULL);
    pthread_join(tr, NULL);

    uint64_t ok = 0, denied = 0;
    for (int i = 0; i < WORKERS; i++) ok += w[i].ok, denied += w[i].denied;
    printf("commits ok %llu, denied %llu, evicted %llu bytes, pressure calls %u\n", (unsigned long long)ok, (unsigned long long)denied,
           (unsigned long long)atomic_load(&sh.evicted), atomic_load(&sh.pressure_calls));
    CHECK(atomic_load(&sh.over_budget_seen) == 0);
    CHECK(ok > 0);
    CHECK(atomic_load(&sh.evicted) > 0); /* the cache gave memory back under pressure */
    CHECK(atomic_load(&sh.pressure_calls) > 0);
    CHECK_OK(tmem_context_check(sh.ctx));
    /* The books: what the bitmaps hold is what is charged. */
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(sh.ctx, &bi));
    uint64_t held = tmem__pool_committed_in(sh.work, 0, WORKERS * SLICE) + tmem__pool_committed_in(sh.cache_type, 0, 64 * CHUNK);
    CHECK(held == bi.committed && bi.committed <= sh.budget);
    tmem_type_stats s;
    CHECK_OK(tmem_type_get_stats(sh.work, &s));
    CHECK(s.budget_denials == denied);
    CHECK_OK(tmem_context_remove_reclaim(sh.ctx, cache_evict, &sh));
    tmem_context_destroy(sh.ctx);
    pthread_mutex_destroy(&sh.mu);
}

int main(void) {
    RUN(test_threads);
    return tmem_test_finish();
}

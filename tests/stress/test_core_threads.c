/* Several threads commit and decommit against one shared budget while a
 * reclaimable cache gives memory back, reclaim steps come and go, and readers
 * take stats. Under TSan (make test-tsan) this checks the locking; always it
 * checks that the budget is never crossed and the books balance. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
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

/* Add one chunk to the cache if there is room; the commit runs outside mu
 * so evictions are rarely refused (only this thread moves `tail`). */
static bool cache_add(shared *sh) {
    pthread_mutex_lock(&sh->mu);
    bool room = sh->tail - sh->head < 64;
    uint64_t slot = sh->tail % 64;
    pthread_mutex_unlock(&sh->mu);
    if (!room || tmem__pool_commit(sh->cache_type, slot * CHUNK, CHUNK) != TMEM_OK) return false;
    pthread_mutex_lock(&sh->mu);
    sh->tail++;
    pthread_mutex_unlock(&sh->mu);
    return true;
}

/* Refills the cache whenever there is room. Sometimes with mu held across
 * the commit: reclaim then finds mu taken (trylock fails), which must be
 * harmless too. */
static void *cache_main(void *p) {
    shared *sh = p;
    for (unsigned i = 0; !atomic_load(&sh->stop); i++) {
        if (i % 8 == 0) {
            pthread_mutex_lock(&sh->mu);
            if (sh->tail - sh->head < 64 && tmem__pool_commit(sh->cache_type, (sh->tail % 64) * CHUNK, CHUNK) == TMEM_OK) sh->tail++;
            pthread_mutex_unlock(&sh->mu);
        } else {
            (void)cache_add(sh);
        }
        check_budget(sh);
        sched_yield();
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

    /* Start with a full cache (16 of the 24 MiB): workers must evict. */
    while (cache_add(&sh)) {
    }
    CHECK(sh.tail == 64);
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

/* Types created, found and mapped from several threads at once: each name
 * is created exactly once, indexes stay dense, the registry stays sound. */
typedef struct creator {
    tmem_context *ctx;
    int id;
    int created, exists;
} creator;

static void *create_main(void *p) {
    creator *c = p;
    char name[64];
    for (int i = 0; i < 24; i++) {
        snprintf(name, sizeof name, "/memory/t%d", i);
        tmem_type_desc td = {0};
        td.name = name;
        td.reserve = 1 * MiB;
        tmem_type *t;
        tmem_status st = tmem_type_create(c->ctx, &td, &t);
        if (st == TMEM_OK) c->created++;
        else if (st == TMEM_E_EXISTS) c->exists++;
        if (tmem_type_find(c->ctx, name, &t) == TMEM_OK) {
            TMEM__IGNORE(tmem_role_set_type(c->ctx, TMEM_ROLE_SCRATCH, t));
            TMEM__IGNORE(tmem__pool_commit(t, 0, 64 << 10));
        }
    }
    return NULL;
}

static void test_type_registry_threads(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 64 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    creator c[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (creator){ctx, i, 0, 0};
        pthread_create(&th[i], NULL, create_main, &c[i]);
    }
    int created = 0, exists = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        created += c[i].created;
        exists += c[i].exists;
    }
    CHECK(created == 24 && exists == 3 * 24);
    CHECK(tmem_type_count(ctx) == 24);
    for (uint32_t i = 0; i < 24; i++) {
        tmem_type *t;
        tmem_type_info ti;
        CHECK_OK(tmem_type_at(ctx, i, &t));
        CHECK_OK(tmem_type_get_info(t, &ti));
        CHECK(ti.index == i);
    }
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.committed == 24 * (64 << 10));
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_type_registry_threads);
    RUN(test_threads);
    return tmem_test_finish();
}

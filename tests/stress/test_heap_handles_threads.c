/* Threads and the fast paths: each thread owns a GENERAL heap of one shared
 * type with a tight budget (concurrent commits: reservation, unlocked OS
 * calls, publish or roll back) and churns size-class and TLSF blocks, freed
 * by handle, pointer and offset; one THREAD_SAFE heap is shared by all of
 * them through handles. A reader thread polls stats and budgets meanwhile.
 * Verdicts: no unexpected error, every heap and the context check clean, the
 * type's committed bytes never above its budget. Run under TSan (label). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include "harness.h"
#include "typedmem/typedmem.h"

#define MiB (1ull << 20)
#define THREADS 3
#define STEPS 20000
#define SLOTS 256

typedef struct worker {
    tmem_heap *own, *shared;
    uint64_t seed;
    int errors;
    uint64_t denials;
} worker;

static _Atomic int running;

static void *churn(void *arg) {
    worker *w = arg;
    tmem_rng r;
    tmem_rng_init(&r, w->seed);
    tmem_alloc_handle h[SLOTS] = {{0}};
    void *p[SLOTS] = {0};
    tmem_heap *where[SLOTS] = {0};
    for (int step = 0; step < STEPS; step++) {
        uint64_t u = tmem_rng_next(&r);
        int k = (int)(u % SLOTS);
        if (h[k].value || p[k]) {
            tmem_status st = h[k].value ? tmem_heap_free_handle(where[k], h[k]) : tmem_heap_free(where[k], p[k]);
            if (st != TMEM_OK) w->errors++;
            h[k].value = 0;
            p[k] = NULL;
            continue;
        }
        uint64_t size = u >> 60 ? 1 + (u >> 8) % 2000 : 1 + (u >> 8) % (256 * 1024);
        tmem_heap *heap = (u >> 20) % 4 ? w->own : w->shared;
        tmem_status st;
        if ((u >> 24) & 1) {
            st = tmem_heap_alloc_handle(heap, size, 0, &h[k], NULL);
        } else {
            st = tmem_heap_alloc(heap, size, 0, &p[k]);
            if (st == TMEM_OK) memset(p[k], 0x5A, size < 64 ? size : 64);
        }
        if (st == TMEM_E_BUDGET) w->denials++;
        else if (st != TMEM_OK) w->errors++;
        else where[k] = heap;
    }
    for (int k = 0; k < SLOTS; k++) {
        tmem_status st = TMEM_OK;
        if (h[k].value) st = tmem_heap_free_handle(where[k], h[k]);
        else if (p[k]) st = tmem_heap_free(where[k], p[k]);
        if (st != TMEM_OK) w->errors++;
    }
    return NULL;
}

typedef struct reader {
    tmem_context *ctx;
    tmem_type *type;
    uint64_t budget, worst;
    int errors;
} reader;

static void *poll_stats(void *arg) {
    reader *rd = arg;
    while (atomic_load(&running)) {
        tmem_type_stats ts;
        tmem_budget_info bi;
        if (tmem_type_get_stats(rd->type, &ts) != TMEM_OK || tmem_context_budget(rd->ctx, &bi) != TMEM_OK) rd->errors++;
        if (ts.committed.current > rd->worst) rd->worst = ts.committed.current;
    }
    return NULL;
}

static void test_threads(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 1024 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/fast";
    td.reserve = 512 * MiB;
    td.budget = 12 * MiB; /* less than the threads want together */
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = 64 * MiB;
    hd.flags = TMEM_HEAP_THREAD_SAFE;
    tmem_heap *shared, *own[THREADS];
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &shared));
    hd.flags = 0;
    worker w[THREADS];
    uint64_t seed = tmem_test_seed(777);
    for (int i = 0; i < THREADS; i++) {
        REQUIRE_OK(tmem_heap_create(ctx, &hd, &own[i]));
        w[i] = (worker){own[i], shared, seed + (uint64_t)i, 0, 0};
    }
    reader rd = {ctx, t, td.budget, 0, 0};
    atomic_store(&running, 1);
    pthread_t tid[THREADS], rt;
    REQUIRE(pthread_create(&rt, NULL, poll_stats, &rd) == 0);
    for (int i = 0; i < THREADS; i++) REQUIRE(pthread_create(&tid[i], NULL, churn, &w[i]) == 0);
    uint64_t denials = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(tid[i], NULL);
        CHECK_MSG(w[i].errors == 0, "thread %d: %d errors", i, w[i].errors);
        denials += w[i].denials;
    }
    atomic_store(&running, 0);
    pthread_join(rt, NULL);
    CHECK(rd.errors == 0);
    CHECK_MSG(rd.worst <= td.budget, "committed %llu over the budget", (unsigned long long)rd.worst);
    printf("budget denials: %llu, worst committed seen %.1f MiB\n", (unsigned long long)denials, (double)rd.worst / MiB);
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(t, &ts));
    CHECK(ts.committed.peak <= td.budget && ts.in_use.current == 0);
    CHECK(denials > 0); /* the budget path ran */
    CHECK_OK(tmem_heap_check(shared));
    for (int i = 0; i < THREADS; i++) CHECK_OK(tmem_heap_check(own[i]));
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_threads);
    return tmem_test_finish();
}

/* Threads: one THREAD_SAFE heap hammered by several threads, and one heap per
 * thread sharing a type budget (so commits race on the budget and some are
 * denied). Runs under TSan via `make test-tsan` (label tsan). */
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <string.h>
#include "harness.h"

#define MiB (1ull << 20)
#define THREADS 4
#define OPS 20000

typedef struct worker {
    tmem_heap *heap;
    uint64_t seed;
    uint64_t allocs, denials;
    int errors;
    atomic_int *stop; /* NULL: run OPS steps; else run until set */
} worker;

static void *churn(void *arg) {
    worker *w = arg;
    tmem_rng r;
    tmem_rng_init(&r, w->seed);
    void *live[64] = {0};
    uint64_t sizes[64] = {0};
    for (int i = 0; w->stop ? !atomic_load(w->stop) : i < OPS; i++) {
        int k = (int)tmem_rng_range(&r, 0, 63);
        if (live[k]) {
            /* our bytes are still ours */
            if (((unsigned char *)live[k])[0] != (unsigned char)k || ((unsigned char *)live[k])[sizes[k] - 1] != (unsigned char)k) w->errors++;
            if (tmem_heap_free(w->heap, live[k]) != TMEM_OK) w->errors++;
            live[k] = NULL;
            continue;
        }
        uint64_t size = tmem_rng_range(&r, 1, 1ull << tmem_rng_range(&r, 4, 17));
        tmem_status st = tmem_heap_alloc(w->heap, size, 16u << tmem_rng_range(&r, 0, 3), &live[k]);
        if (st == TMEM_OK) {
            memset(live[k], k, size);
            sizes[k] = size;
            w->allocs++;
        } else if (st == TMEM_E_BUDGET || st == TMEM_E_FULL) {
            w->denials++;
        } else {
            w->errors++;
        }
    }
    for (int k = 0; k < 64; k++)
        if (live[k] && tmem_heap_free(w->heap, live[k]) != TMEM_OK) w->errors++;
    return NULL;
}

static void run(worker *w, int n) {
    pthread_t th[THREADS];
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, churn, &w[i]);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
}

static void test_shared_heap(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 512 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES | TMEM_CONTEXT_DEBUG;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/shared";
    td.reserve = 128 * MiB;
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = 64 * MiB;
    hd.flags = TMEM_HEAP_THREAD_SAFE;
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h));
    uint64_t seed = tmem_test_seed(99);
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) w[i] = (worker){h, seed + (uint64_t)i, 0, 0, 0, NULL};
    run(w, THREADS);
    for (int i = 0; i < THREADS; i++) CHECK_MSG(w[i].errors == 0 && w[i].allocs > OPS / 4, "thread %d: %d errors", i, w[i].errors);
    tmem_heap_info info;
    CHECK_OK(tmem_heap_get_info(h, &info));
    CHECK(info.used == 0 && info.live_count == 0);
    CHECK_OK(tmem_heap_check(h));
    tmem_context_destroy(ctx);
}

static void test_heap_per_thread_shared_budget(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 512 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/tight";
    td.reserve = 256 * MiB;
    td.budget = 2 * MiB; /* less than the threads want together */
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    worker w[THREADS];
    tmem_heap *hs[THREADS];
    uint64_t seed = tmem_test_seed(1234);
    for (int i = 0; i < THREADS; i++) {
        tmem_heap_desc hd = {0};
        hd.type = t;
        hd.size = 32 * MiB;
        REQUIRE_OK(tmem_heap_create(ctx, &hd, &hs[i]));
        w[i] = (worker){hs[i], seed + (uint64_t)i, 0, 0, 0, NULL};
    }
    run(w, THREADS);
    uint64_t denials = 0;
    for (int i = 0; i < THREADS; i++) {
        CHECK_MSG(w[i].errors == 0, "thread %d: %d errors", i, w[i].errors);
        denials += w[i].denials;
        CHECK_OK(tmem_heap_check(hs[i]));
    }
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(t, &ts));
    CHECK(ts.committed.peak <= 2 * MiB && ts.in_use.current == 0);
    CHECK(denials > 0);
    printf("budget denials across threads: %llu\n", (unsigned long long)denials);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

/* One thread flips its heap between VOLATILE and NON_VOLATILE (allocating
 * while NON_VOLATILE) while others hit the type budget, so reclaim purges
 * the volatile heap from their threads, concurrently with its owner. */
typedef struct flipper {
    tmem_heap *heap;
    int rounds, lost, errors;
} flipper;

static void *flip(void *arg) {
    flipper *f = arg;
    for (int i = 0; i < f->rounds; i++) {
        void *p = NULL;
        tmem_status st;
        for (int y = 0; (st = tmem_heap_alloc(f->heap, 768 << 10, 16, &p)) == TMEM_E_BUDGET && y < 100; y++) sched_yield();
        if (st == TMEM_OK) memset(p, 1, 768 << 10);
        else if (st != TMEM_E_BUDGET) f->errors++;
        if (tmem_heap_set_purgeable(f->heap, TMEM_PURGEABLE_VOLATILE, NULL, NULL) != TMEM_OK) f->errors++;
        /* let the others hit the budget and purge us (or give up waiting) */
        tmem_heap_info hi;
        for (int y = 0; y < 1000; y++) {
            if (tmem_heap_get_info(f->heap, &hi) == TMEM_OK && hi.purgeable == TMEM_PURGEABLE_EMPTY) break;
            sched_yield();
        }
        bool lost = false;
        st = tmem_heap_set_purgeable(f->heap, TMEM_PURGEABLE_NON_VOLATILE, NULL, &lost);
        if (st == TMEM_E_BUDGET) { /* purged and no room to come back: free and retry */
            if (p && tmem_heap_free(f->heap, p) != TMEM_OK) f->errors++;
            p = NULL;
            st = tmem_heap_set_purgeable(f->heap, TMEM_PURGEABLE_NON_VOLATILE, NULL, &lost);
        }
        if (st != TMEM_OK) f->errors++;
        f->lost += lost;
        if (p && tmem_heap_free(f->heap, p) != TMEM_OK) f->errors++;
        if (tmem_heap_check(f->heap) != TMEM_OK) f->errors++;
    }
    return NULL;
}

static void test_purge_races_owner(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 512 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/purge";
    td.reserve = 256 * MiB;
    td.budget = 2 * MiB;
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = 16 * MiB;
    tmem_heap *fh, *hs[2];
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &fh));
    flipper f = {fh, 60, 0, 0};
    worker w[2];
    atomic_int stop = 0;
    uint64_t seed = tmem_test_seed(77);
    for (int i = 0; i < 2; i++) {
        REQUIRE_OK(tmem_heap_create(ctx, &hd, &hs[i]));
        w[i] = (worker){hs[i], seed + (uint64_t)i, 0, 0, 0, &stop};
    }
    pthread_t ft, th[2];
    pthread_create(&ft, NULL, flip, &f);
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, churn, &w[i]);
    pthread_join(ft, NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK_MSG(f.errors == 0, "flipper: %d errors", f.errors);
    for (int i = 0; i < 2; i++) CHECK_MSG(w[i].errors == 0, "worker %d: %d errors", i, w[i].errors);
    printf("volatile heap purged under pressure in %d of %d rounds\n", f.lost, f.rounds);
    CHECK(f.lost > 0); /* the race was exercised */
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(t, &ts));
    CHECK(ts.committed.peak <= 2 * MiB);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_shared_heap);
    RUN(test_heap_per_thread_shared_budget);
    RUN(test_purge_races_owner);
    return tmem_test_finish();
}

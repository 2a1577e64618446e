/* Accounting slots under threads: one heap per thread, all of one type and
 * role, counting with plain stores while a reader folds the type's and the
 * role's stats concurrently (TSan: `make test-tsan`, label tsan). The reader
 * never sees more frees than allocations, or current above total; at the
 * end the folded counts and bytes are exactly what the workers did, and the
 * peak is at least every heap's own peak and at most their sum. */
#include <pthread.h>
#include <stdatomic.h>
#include "harness.h"

#define MiB (1ull << 20)
#define THREADS 3
#define OPS 20000

typedef struct worker {
    tmem_heap *heap;
    uint64_t seed;
    uint64_t allocs, frees, bytes;
    int errors;
} worker;

static void *churn(void *arg) {
    worker *w = arg;
    tmem_rng r;
    tmem_rng_init(&r, w->seed);
    void *live[32] = {0};
    for (int i = 0; i < OPS; i++) {
        int k = (int)tmem_rng_range(&r, 0, 31);
        if (live[k]) {
            if (tmem_heap_free(w->heap, live[k]) != TMEM_OK) w->errors++;
            live[k] = NULL;
            w->frees++;
            continue;
        }
        uint64_t size = tmem_rng_range(&r, 1, 1ull << tmem_rng_range(&r, 4, 15));
        if (tmem_heap_alloc(w->heap, size, 0, &live[k]) != TMEM_OK) {
            w->errors++;
            continue;
        }
        w->allocs++;
        w->bytes += size;
    }
    for (int k = 0; k < 32; k++)
        if (live[k]) {
            if (tmem_heap_free(w->heap, live[k]) != TMEM_OK) w->errors++;
            w->frees++;
        }
    return NULL;
}

typedef struct reader {
    tmem_context *ctx;
    tmem_type *type;
    atomic_int *stop;
    int reads, errors;
} reader;

static void *read_stats(void *arg) {
    reader *rd = arg;
    while (!atomic_load(rd->stop)) {
        tmem_type_stats ts;
        tmem_role_stats rs;
        if (tmem_type_get_stats(rd->type, &ts) != TMEM_OK ||
            tmem_role_get_stats(rd->ctx, TMEM_ROLE_ACTIVATION, &rs) != TMEM_OK)
            rd->errors++;
        else if (ts.free_count > ts.alloc_count || ts.in_use.current > ts.in_use.total ||
                 ts.in_use.current > ts.in_use.peak || rs.in_use.current > rs.in_use.total)
            rd->errors++;
        rd->reads++;
    }
    return NULL;
}

static void test_slots_fold_under_threads(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 512 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/acct";
    td.reserve = 256 * MiB;
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    worker w[THREADS];
    uint64_t seed = tmem_test_seed(4242);
    for (int i = 0; i < THREADS; i++) {
        tmem_heap_desc hd = {0};
        hd.type = t;
        hd.size = 32 * MiB;
        hd.role = TMEM_ROLE_ACTIVATION;
        w[i] = (worker){NULL, seed + (uint64_t)i, 0, 0, 0, 0};
        REQUIRE_OK(tmem_heap_create(ctx, &hd, &w[i].heap));
    }
    atomic_int stop = 0;
    reader rd = {ctx, t, &stop, 0, 0};
    pthread_t rt, th[THREADS];
    pthread_create(&rt, NULL, read_stats, &rd);
    for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, churn, &w[i]);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    atomic_store(&stop, 1);
    pthread_join(rt, NULL);
    CHECK_MSG(rd.errors == 0, "reader: %d inconsistent reads of %d", rd.errors, rd.reads);
    uint64_t allocs = 0, frees = 0, bytes = 0, peaks = 0, top = 0;
    for (int i = 0; i < THREADS; i++) {
        CHECK_MSG(w[i].errors == 0, "worker %d: %d errors", i, w[i].errors);
        allocs += w[i].allocs;
        frees += w[i].frees;
        bytes += w[i].bytes;
        tmem_heap_info hi;
        CHECK_OK(tmem_heap_get_info(w[i].heap, &hi));
        peaks += hi.peak_used;
        if (hi.peak_used > top) top = hi.peak_used;
    }
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(t, &ts));
    CHECK(ts.alloc_count == allocs && ts.free_count == frees && allocs == frees);
    CHECK(ts.in_use.current == 0 && ts.in_use.total == bytes);
    CHECK_MSG(ts.in_use.peak >= top && ts.in_use.peak <= peaks,
              "peak %llu, heaps' max %llu, sum %llu", (unsigned long long)ts.in_use.peak,
              (unsigned long long)top, (unsigned long long)peaks);
    tmem_role_stats rs;
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_ACTIVATION, &rs));
    CHECK(rs.alloc_count == allocs && rs.live_count == 0 && rs.in_use.total == bytes);
    CHECK_OK(tmem_context_check(ctx));
    printf("%d concurrent stats reads\n", rd.reads);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_slots_fold_under_threads);
    return tmem_test_finish();
}

/* test_kern_pool: the kernels' thread pool: argument errors, every index of
 * [0, n) visited exactly once in whole-grain chunks for random (n, grain),
 * the thread index in range, back-to-back jobs and jobs after the workers
 * went to sleep, several pools at once. Fixed seed. */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>
#include "kern_test_util.h"

typedef struct visit_job {
    _Atomic int *count;
    int64_t grain;
    int threads;
    _Atomic int bad_chunks;
    _Atomic int bad_thread;
} visit_job;

static void visit(void *arg, int64_t begin, int64_t end, int thread) {
    visit_job *job = arg;
    if (begin % job->grain || end <= begin) atomic_fetch_add(&job->bad_chunks, 1);
    if (thread < 0 || thread >= job->threads) atomic_fetch_add(&job->bad_thread, 1);
    for (int64_t i = begin; i < end; i++) atomic_fetch_add(&job->count[i], 1);
}

static void test_errors(void) {
    kern_pool *pool = (kern_pool *)1;
    CHECK(tmrt__kern_pool_bytes(0) == 0);
    CHECK(tmrt__kern_pool_bytes(257) == 0);
    CHECK(tmrt__kern_pool_bytes(1) > 0 && tmrt__kern_pool_bytes(1) % 64 == 0);
    void *mem = kern_test_alloc(tmrt__kern_pool_bytes(4) + 64);
    CHECK(tmrt__kern_pool_init(mem, 0, &pool) == EINVAL && pool == NULL);
    CHECK(tmrt__kern_pool_init(NULL, 2, &pool) == EINVAL);
    CHECK(tmrt__kern_pool_init((char *)mem + 8, 2, &pool) == EINVAL);
    CHECK(tmrt__kern_pool_init(mem, 2, NULL) == EINVAL);
    CHECK(tmrt__kern_pool_threads(NULL) == 1);
    tmrt__kern_pool_fini(NULL);
    free(mem);
}

static void run_visits(tmem_rng *r, kern_pool *pool, int jobs) {
    enum { MAX_N = 5000 };
    static _Atomic int count[MAX_N];
    for (int j = 0; j < jobs; j++) {
        int64_t n = (int64_t)tmem_rng_range(r, 0, MAX_N);
        visit_job job = {.count = count, .grain = (int64_t)tmem_rng_range(r, 1, 70),
                         .threads = tmrt__kern_pool_threads(pool)};
        for (int64_t i = 0; i < n; i++) atomic_store(&count[i], 0);
        tmrt__kern_pool_for(pool, n, job.grain, visit, &job);
        int wrong = 0;
        for (int64_t i = 0; i < n; i++) wrong += atomic_load(&count[i]) != 1;
        CHECK_MSG(wrong == 0, "n %lld grain %lld: %d indices not visited once", (long long)n,
                  (long long)job.grain, wrong);
        CHECK(atomic_load(&job.bad_chunks) == 0);
        CHECK(atomic_load(&job.bad_thread) == 0);
        if (j % 97 == 5) {
            /* long enough for the workers to stop spinning and sleep */
            struct timespec ts = {0, 3 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

static void test_visits(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(0x706f6f6c31ull));
    run_visits(&r, NULL, 50);
    for (int n = 1; n <= 4; n++) {
        void *mem;
        kern_pool *pool = kern_test_pool(n, &mem);
        CHECK(tmrt__kern_pool_threads(pool) == n);
        run_visits(&r, pool, 600);
        tmrt__kern_pool_fini(pool);
        free(mem);
    }
}

static void test_two_pools(void) {
    tmem_rng r;
    tmem_rng_init(&r, 99);
    void *m1, *m2;
    kern_pool *a = kern_test_pool(3, &m1), *b = kern_test_pool(2, &m2);
    for (int i = 0; i < 50; i++) {
        run_visits(&r, a, 3);
        run_visits(&r, b, 3);
    }
    tmrt__kern_pool_fini(a);
    tmrt__kern_pool_fini(b);
    free(m1);
    free(m2);
}

static void test_chunking(void) {
    CHECK(tmrt__kern_pool_chunk(2, 1000, 12) % 12 == 0);
    CHECK(tmrt__kern_pool_chunk(2, 1000, 12) >= 1000 / 8);
    CHECK(tmrt__kern_pool_chunk(4, 5, 12) == 12);
    CHECK(tmrt__kern_pool_chunk(1, 100, 0) >= 1);
}

int main(void) {
    RUN(test_errors);
    RUN(test_chunking);
    RUN(test_visits);
    RUN(test_two_pools);
    return tmem_test_finish();
}

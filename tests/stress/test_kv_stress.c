/* Threads on one KV cache: workers append, write, fork and free their own
 * sequences (pinning them while they hold row pointers) while a reaper
 * thread keeps running the eviction policy and a pressure thread allocates
 * activations past the context budget, so the core calls the cache's
 * reclaim step from a thread outside the cache. Workers that find their
 * sequence evicted get TMEM_E_STATE, free it and start over. Rows a worker
 * wrote read back intact while pinned; the invariants hold at the end.
 * Labelled tsan. */
#include <pthread.h>
#include <unistd.h>
#include <stdatomic.h>
#include "kv_test_util.h"

#define WORKERS 4
#define ITERS 1500

static tmem_kv_cache *cache;
static atomic_int stop;
static atomic_int bad;
static atomic_int evicted_seen;

typedef struct worker { uint64_t seed; int id; } worker;

static void *work(void *arg) {
    worker *w = arg;
    tmem_rng r;
    tmem_rng_init(&r, w->seed);
    tmem_kv_seq s = TMEM_KV_SEQ_NONE;
    uint32_t len = 0;
    for (int it = 0; it < ITERS; it++) {
        if (s == TMEM_KV_SEQ_NONE) {
            if (tmem_kv_seq_create(cache, &s) != TMEM_OK) continue;
            len = 0;
        }
        /* pin first: after this nothing evicts it under us */
        tmem_status st = tmem_kv_seq_pin(cache, s, true);
        if (st == TMEM_E_STATE) {
            atomic_fetch_add(&evicted_seen, 1);
            if (tmem_kv_seq_free(cache, s) != TMEM_OK) atomic_fetch_add(&bad, 1);
            s = TMEM_KV_SEQ_NONE;
            continue;
        }
        if (st != TMEM_OK) { atomic_fetch_add(&bad, 1); break; }
        uint32_t n = (uint32_t)tmem_rng_range(&r, 1, 8);
        if (len + n <= 200 && tmem_kv_seq_append(cache, s, n) == TMEM_OK) {
            for (uint32_t t = len; t < len + n; t++)
                if (kvt_write(cache, s, 0, t, (uint32_t)(w->id << 24 | t)) != TMEM_OK) atomic_fetch_add(&bad, 1);
            len += n;
        }
        for (uint32_t t = 0; t < len; t += 7)
            if (kvt_read(cache, s, 0, t) != (uint32_t)(w->id << 24 | t)) atomic_fetch_add(&bad, 1);
        if (tmem_rng_range(&r, 0, 9) == 0) { /* fork, write into the child, drop it */
            tmem_kv_seq f;
            if (tmem_kv_seq_fork(cache, s, &f) == TMEM_OK) {
                if (len && tmem_kv_seq_pin(cache, f, true) == TMEM_OK) {
                    /* a copy-on-write needs a block: under pressure it may be refused */
                    tmem_status ws = kvt_write(cache, f, 0, len - 1, 0xABCDu);
                    if (ws != TMEM_OK && ws != TMEM_E_BUDGET) atomic_fetch_add(&bad, 1);
                    if (kvt_read(cache, s, 0, len - 1) != (uint32_t)(w->id << 24 | (len - 1))) atomic_fetch_add(&bad, 1);
                }
                if (tmem_kv_seq_free(cache, f) != TMEM_OK) atomic_fetch_add(&bad, 1);
            }
        }
        if (tmem_kv_seq_pin(cache, s, false) != TMEM_OK) atomic_fetch_add(&bad, 1);
        if (len >= 200 || tmem_rng_range(&r, 0, 29) == 0) {
            if (tmem_kv_seq_free(cache, s) != TMEM_OK) atomic_fetch_add(&bad, 1);
            s = TMEM_KV_SEQ_NONE;
        }
    }
    if (s != TMEM_KV_SEQ_NONE && tmem_kv_seq_free(cache, s) != TMEM_OK) atomic_fetch_add(&bad, 1);
    return NULL;
}

static void *reap(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        uint64_t freed;
        tmem_status st = tmem_kv_cache_reclaim(cache, KVT_BLOCK_BYTES, &freed);
        if (st != TMEM_OK && st != TMEM_E_BUDGET) atomic_fetch_add(&bad, 1);
        tmem_kv_cache_stats cs;
        if (tmem_kv_cache_get_stats(cache, &cs) != TMEM_OK) atomic_fetch_add(&bad, 1);
        if (tmem_kv_cache_check(cache) != TMEM_OK) atomic_fetch_add(&bad, 1);
    }
    return NULL;
}

static tmem_heap *act;
static atomic_int pressure_hits;

static void *pressure(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        void *p;
        tmem_status st = tmem_heap_alloc(act, 1536u << 10, 64, &p);
        if (st == TMEM_OK) {
            atomic_fetch_add(&pressure_hits, 1);
            if (tmem_heap_free(act, p) != TMEM_OK) atomic_fetch_add(&bad, 1);
        } else if (st != TMEM_E_BUDGET) {
            atomic_fetch_add(&bad, 1);
        }
    }
    return NULL;
}

static void test_threads(void) {
    uint64_t seed = tmem_test_seed(77);
    tmem_context *ctx = kvt_context(2u << 20, 0, 0, 0);
    REQUIRE(ctx);
    tmem_kv_cache_desc d = kvt_desc(false, NULL);
    d.on_evict = NULL;
    REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &cache));
    tmem_type_desc td = {0};
    td.name = "/memory/activations";
    td.lifetime = TMEM_LIFETIME_TRANSIENT;
    td.reserve = 8u << 20;
    tmem_type *at;
    REQUIRE_OK(tmem_type_create(ctx, &td, &at));
    tmem_heap_desc hd = {0};
    hd.type = at;
    hd.role = TMEM_ROLE_ACTIVATION;
    hd.size = 4u << 20;
    hd.flags = TMEM_HEAP_THREAD_SAFE;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &act));
    pthread_t th[WORKERS], rp, pr;
    worker w[WORKERS];
    REQUIRE(pthread_create(&rp, NULL, reap, NULL) == 0);
    REQUIRE(pthread_create(&pr, NULL, pressure, NULL) == 0);
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (worker){seed + (uint64_t)i, i + 1};
        REQUIRE(pthread_create(&th[i], NULL, work, &w[i]) == 0);
    }
    for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
    /* With the workers gone the budget is free again: give the pressure
     * thread a bounded chance to land one allocation, so the check below does
     * not depend on how a loaded machine scheduled the threads. */
    for (int i = 0; i < 5000 && atomic_load(&pressure_hits) == 0; i++) usleep(1000);
    atomic_store(&stop, 1);
    pthread_join(rp, NULL);
    pthread_join(pr, NULL);
    CHECK_MSG(atomic_load(&bad) == 0, "%d bad results", atomic_load(&bad));
    printf("evicted handles seen by workers: %d, activation allocations that fit: %d\n", atomic_load(&evicted_seen),
           atomic_load(&pressure_hits));
    CHECK(atomic_load(&pressure_hits) > 0);
    CHECK_OK(tmem_kv_cache_check(cache));
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(cache, &st));
    CHECK(st.sequences == 0 && st.blocks_used == 0 && st.evicted == 0);
    tmem_kv_cache_destroy(cache);
    tmem_heap_destroy(act);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_threads);
    return tmem_test_finish();
}

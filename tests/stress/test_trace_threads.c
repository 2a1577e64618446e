/* Several threads emit while another snapshots, and tracing is stopped and
 * restarted under them: every event is counted exactly once, each thread's
 * own events stay in order, and nothing races (run under TSan: label tsan). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include "harness.h"
#include "trace/trace_internal.h"

enum { THREADS = 4, PER_THREAD = 20000 };

typedef struct worker {
    tmem_context *ctx;
    int index;
    uint64_t ok, refused;
} worker;

static atomic_int finished;

static void *emit(void *arg) {
    worker *w = arg;
    char name[32];
    for (int i = 0; i < PER_THREAD; i++) {
        snprintf(name, sizeof name, "w%d.%d", w->index, i);
        tmem_status st = tmem_trace_mark(w->ctx, name);
        if (st == TMEM_OK) w->ok++;
        else if (st == TMEM_E_STATE) w->refused++;
    }
    atomic_fetch_add(&finished, 1);
    return NULL;
}

static void run_threads(tmem_context *ctx, worker *w, pthread_t *th) {
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){ctx, i, 0, 0};
        pthread_create(&th[i], NULL, emit, &w[i]);
    }
}

static void test_concurrent_ring(void) {
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 20;
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_trace_desc td = {0};
    td.capacity = 1u << 17; /* holds every event */
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    worker w[THREADS];
    pthread_t th[THREADS];
    run_threads(ctx, w, th);
    int snaps = 0;
    for (int k = 0; k < 20; k++) { /* snapshot while they emit */
        tmem_trace_data *d;
        if (tmem_trace_snapshot(ctx, &d) == TMEM_OK) {
            for (uint64_t i = 1; i < d->count; i++) CHECK(d->events[i].time_ns >= d->events[i - 1].time_ns);
            tmem_trace_data_destroy(d);
            snaps++;
        }
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    tmem_trace_data *d;
    REQUIRE_OK(tmem_trace_snapshot(ctx, &d));
    CHECK(d->count == THREADS * PER_THREAD && d->dropped == 0 && snaps == 20);
    /* Per thread id, the sequence numbers in the names run 0,1,2,... */
    int next[THREADS + 2] = {0}, owner[THREADS + 2];
    for (int i = 0; i < THREADS + 2; i++) owner[i] = -1;
    for (uint64_t i = 0; i < d->count; i++) {
        const tmem_trace_event *ev = &d->events[i];
        int wi, seq;
        REQUIRE(sscanf(ev->name, "w%d.%d", &wi, &seq) == 2);
        REQUIRE(ev->thread >= 1 && ev->thread <= THREADS);
        if (owner[ev->thread] < 0) owner[ev->thread] = wi;
        CHECK(owner[ev->thread] == wi); /* one id per thread */
        CHECK(seq == next[ev->thread]);
        next[ev->thread] = seq + 1;
    }
    tmem_trace_data_destroy(d);
    CHECK_OK(tmem_trace_stop(ctx));
    tmem_context_destroy(ctx);
}

/* Stop and restart while threads emit: ok + refused = all, and each run's
 * ring holds exactly the events accepted during it. */
static void test_stop_start_under_load(void) {
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 20;
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_trace_desc td = {0};
    td.capacity = 1u << 10; /* small: wraps */
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    worker w[THREADS];
    pthread_t th[THREADS];
    atomic_store(&finished, 0);
    run_threads(ctx, w, th);
    uint64_t recorded = 0;
    int cycles = 0;
    while (cycles < 5 || atomic_load(&finished) < THREADS) {
        tmem_trace_info info;
        CHECK_OK(tmem_trace_stop(ctx));
        nanosleep(&(struct timespec){0, 20000}, NULL); /* let marks hit the stopped tracer */
        cycles++;
        CHECK_OK(tmem_trace_get_info(ctx, &info));
        CHECK(!info.on && info.dropped == (info.recorded > 1024 ? info.recorded - 1024 : 0));
        recorded += info.recorded;
        REQUIRE_OK(tmem_trace_start(ctx, &td));
        nanosleep(&(struct timespec){0, 50000}, NULL); /* and let some be recorded */
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    tmem_trace_info info;
    CHECK_OK(tmem_trace_get_info(ctx, &info));
    recorded += info.recorded;
    uint64_t ok = 0, refused = 0;
    for (int i = 0; i < THREADS; i++) ok += w[i].ok, refused += w[i].refused;
    CHECK(ok + refused == (uint64_t)THREADS * PER_THREAD);
    CHECK_MSG(recorded == ok, "recorded %llu, accepted %llu", (unsigned long long)recorded, (unsigned long long)ok);
    printf("%d stop/start cycles: accepted %llu, refused while stopped %llu\n", cycles, (unsigned long long)ok, (unsigned long long)refused);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_concurrent_ring);
    RUN(test_stop_start_under_load);
    return tmem_test_finish();
}

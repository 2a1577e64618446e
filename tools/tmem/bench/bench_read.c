/* bench_read.c: the streaming-read baseline (bench_read.h). */
#include <time.h>
#include "bench/bench_read.h"

void bench_read_task(void *arg, int64_t begin, int64_t end, int thread) {
    bench_read_job *job = arg;
    const int streams = job->streams;
    const size_t part = (size_t)(end - begin) * 512 / (size_t)streams; /* words */
    const uint64_t *base = job->words + begin * 512;
    uint64_t sum[BENCH_READ_STREAMS] = {0};
    for (size_t i = 0; i < part; i += 8) {
        for (int s = 0; s < streams; s++) {
            const uint64_t *p = base + (size_t)s * part + i;
            sum[s] += (p[0] ^ p[1]) + (p[2] ^ p[3]) + (p[4] ^ p[5]) + (p[6] ^ p[7]);
        }
    }
    uint64_t total = 0;
    for (int s = 0; s < streams; s++) total += sum[s];
    job->sums[thread * 8] += total;
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_read_best_gbs(tmrt_testing_pool *pool, const void *buf, size_t bytes, int streams, int reps) {
    bench_read_job job = {.words = buf, .streams = streams};
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = wall_s();
        tmrt_testing_pool_for(pool, (int64_t)(bytes / 4096), 16, bench_read_task, &job);
        double dt = wall_s() - t0;
        if (dt > 0 && (double)bytes / dt * 1e-9 > best) best = (double)bytes / dt * 1e-9;
    }
    volatile uint64_t sink = job.sums[0];
    (void)sink;
    return best;
}

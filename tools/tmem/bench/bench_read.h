/* bench_read.h: the streaming-read baseline of the memory-bound benches
 * (bench kern's decode rows, bench run's bandwidth bound), one
 * implementation so both compare against the same read. */
#ifndef TMEM_BENCH_READ_H
#define TMEM_BENCH_READ_H

#include <stddef.h>
#include <stdint.h>
#include "tmemrt/testing.h"

/* Interleaved sequential streams per thread: the fastest plain read found
 * on the project's Zen 3 VM (1 stream ~14.5 GB/s per core, 8 ~24). */
#define BENCH_READ_STREAMS 8

typedef struct bench_read_job {
    const uint64_t *words;   /* the buffer, 4 KiB pages */
    int streams;             /* 1..BENCH_READ_STREAMS */
    uint64_t sums[256 * 8];  /* per thread, 64 bytes apart (keeps the reads) */
} bench_read_job;

/* tmrt_testing_pool_for task: pages [begin, end) of job->words read as job->streams
 * interleaved sequential streams, each 64-byte line folded into a sum. */
void bench_read_task(void *arg, int64_t begin, int64_t end, int thread);

/* Best of `reps` wall-clock GB/s reading `bytes` (a multiple of 4096) of buf
 * through the pool with `streams` streams per thread. */
double bench_read_best_gbs(tmrt_testing_pool *pool, const void *buf, size_t bytes, int streams, int reps);

#endif

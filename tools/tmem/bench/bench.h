/* Benchmarks run by `tmem bench <name> [--json]`. Each prints ours vs a
 * baseline measured in the same run, as ratios, plus the command that
 * reproduces it; returns a process exit code. One file per bench
 * (bench_<name>.c), registered in tools/tmem/cmd_bench.c. */
#ifndef TMEM_BENCH_H
#define TMEM_BENCH_H

#include <stdbool.h>
#include <stddef.h>

typedef int (*tmem_bench_fn)(int argc, char **argv, bool json);

typedef struct tmem_bench {
    const char *name;
    const char *what;  /* one line */
    tmem_bench_fn run;
} tmem_bench;

/* (add one declaration per bench_<name>.c here) */
int tmem_bench_heap(int argc, char **argv, bool json);
int tmem_bench_plan(int argc, char **argv, bool json);
int tmem_bench_surface(int argc, char **argv, bool json);
int tmem_bench_trace(int argc, char **argv, bool json);
int tmem_bench_kv(int argc, char **argv, bool json);
int tmem_bench_kern(int argc, char **argv, bool json);
int tmem_bench_run(int argc, char **argv, bool json);
/* bench run --image (bench_run_image.c) */
int tmem_bench_run_image(int argc, char **argv, bool json);
int tmem_bench_tok(int argc, char **argv, bool json);
int tmem_bench_vision(int argc, char **argv, bool json);
int tmem_bench_gpu(int argc, char **argv, bool json);
int tmem_bench_gpu_run(int argc, char **argv, bool json);

/* Run `/proc/self/exe args...` (args[0] is argv[0], NULL-terminated) with its
 * stdout into out (NUL-terminated, at most cap - 1 bytes). false if it could
 * not run or printed nothing. (bench_child.c) */
bool tmem_bench_child(char *const *args, char *out, size_t cap);

/* What tmem_bench_sampled saw of a child: its peak Private_Dirty (bytes,
 * sampled from /proc/PID/smaps_rollup every TMEM_BENCH_SAMPLE_MS), wall and
 * CPU seconds (user + system). */
#define TMEM_BENCH_SAMPLE_MS 10
typedef struct tmem_bench_sample {
    double peak_dirty, wall_s, cpu_s;
} tmem_bench_sample;

/* Run argv[0] (a path) with argv, its stdout (and its stderr too if
 * with_stderr; else stderr stays ours) into out (NUL-terminated, at most cap - 1
 * bytes; the rest is drained and dropped), sampling its footprint meanwhile
 * into *r. true if it ran and exited with status 0. (bench_child.c) */
bool tmem_bench_sampled(char *const *argv, bool with_stderr, char *out, size_t cap,
                        tmem_bench_sample *r);

#endif

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
int tmem_bench_serve(int argc, char **argv, bool json);

/* Run `/proc/self/exe args...` (args[0] is argv[0], NULL-terminated) with its
 * stdout into out (NUL-terminated, at most cap - 1 bytes). false if it could
 * not run or printed nothing. (bench_child.c) */
bool tmem_bench_child(char *const *args, char *out, size_t cap);

#endif

/* tmem bench plan [--json] [--nodes N] [--time-limit S] [--shared DIR]
 *
 * For every instance in <shared>/bench/graphs/ (every .csv) and
 * <shared>/bench/minimalloc/challenging/: lower bound, naive sum, two
 * baselines implemented here from their published descriptions, and ours
 * (tmem_plan_solve), all measured in this run:
 *  - "tflite": greedy by size for offset calculation (Pisarchyk & Lee 2020,
 *    "Efficient Memory Management for Deep Neural Net Inference"; TFLite's
 *    GreedyBySizeOffsetCalculation): tensors by size descending; each goes
 *    into the smallest gap among already-placed tensors alive with it that
 *    fits, else above the highest of them.
 *  - "online": online best fit in execution order, as ggml-alloc and ONNX
 *    Runtime's memory patterns behave: walk time; free what ended, then
 *    allocate what starts (in file order) in the smallest free block of the
 *    arena that fits, else at the end; the arena is the high-water mark.
 * Plus a synthetic 100,000-buffer instance planned in heuristic mode.
 * Options: --nodes N work budget per instance (0: the library's default),
 * --time-limit S (none: the plans are then the same on any machine), --threads N (2: the exact
 * search's lower-bound probe on a second thread), --shared DIR.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench/bench.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "typedmem/plan_io.h"

typedef struct bbuf { int64_t s, e; uint64_t size, align; uint32_t idx; } bbuf;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_size_desc(const void *a, const void *b) {
    const bbuf *x = a, *y = b;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static uint64_t up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* TFLite greedy by size, O(n^2) as published. */
static uint64_t tflite_greedy(const bbuf *in, uint32_t n) {
    bbuf *v = malloc(n * sizeof *v);
    uint64_t *off = malloc(n * sizeof *off);
    uint32_t *live = malloc(n * sizeof *live);
    if (!v || !off || !live) {
        free(v); free(off); free(live);
        return 0;
    }
    memcpy(v, in, n * sizeof *v);
    qsort(v, n, sizeof *v, by_size_desc);
    uint64_t arena = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* placed tensors alive with v[i], ordered by offset (insertion) */
        uint32_t m = 0;
        for (uint32_t j = 0; j < i; j++) {
            if (v[j].e <= v[i].s || v[i].e <= v[j].s) continue;
            uint32_t k = m++;
            while (k && off[live[k - 1]] > off[j]) { live[k] = live[k - 1]; k--; }
            live[k] = j;
        }
        uint64_t prev_top = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
        for (uint32_t k = 0; k < m; k++) {
            uint32_t j = live[k];
            uint64_t o = up(prev_top, v[i].align);
            if (off[j] > o && off[j] - o >= v[i].size && off[j] - o < best_gap) {
                best_gap = off[j] - o;
                best = o;
            }
            if (off[j] + v[j].size > prev_top) prev_top = off[j] + v[j].size;
        }
        off[i] = best != UINT64_MAX ? best : up(prev_top, v[i].align);
        if (off[i] + v[i].size > arena) arena = off[i] + v[i].size;
    }
    free(v); free(off); free(live);
    return arena;
}

typedef struct ev { int64_t t; int kind; uint32_t i; } ev; /* kind 0 = free, 1 = alloc */

static int by_time(const void *a, const void *b) {
    const ev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->kind != y->kind) return x->kind - y->kind;
    return (x->i > y->i) - (x->i < y->i);
}

/* Online best fit over a sorted list of live blocks. */
static uint64_t online_best_fit(const bbuf *v, uint32_t n) {
    ev *e = malloc(2 * n * sizeof *e);
    uint64_t *off = malloc(n * sizeof *off);
    uint32_t *live = malloc(n * sizeof *live);
    if (!e || !off || !live) {
        free(e); free(off); free(live);
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        e[2 * i] = (ev){v[i].s, 1, i};
        e[2 * i + 1] = (ev){v[i].e, 0, i};
    }
    qsort(e, 2 * (size_t)n, sizeof *e, by_time);
    uint32_t m = 0;
    uint64_t arena = 0;
    for (uint32_t k = 0; k < 2 * n; k++) {
        uint32_t i = e[k].i;
        if (e[k].kind == 0) {
            for (uint32_t p = 0; p < m; p++)
                if (live[p] == i) {
                    memmove(live + p, live + p + 1, (m - p - 1) * sizeof *live);
                    m--;
                    break;
                }
            continue;
        }
        uint64_t prev = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
        for (uint32_t p = 0; p < m; p++) {
            uint64_t o = up(prev, v[i].align);
            if (off[live[p]] > o && off[live[p]] - o >= v[i].size && off[live[p]] - o < best_gap) {
                best_gap = off[live[p]] - o;
                best = o;
            }
            prev = off[live[p]] + v[live[p]].size;
        }
        /* free space above the last block up to the high-water mark counts
         * as a free block too; else the arena grows */
        uint64_t o = up(prev, v[i].align);
        if (best == UINT64_MAX || (arena > o && arena - o >= v[i].size && arena - o < best_gap)) best = o;
        off[i] = best;
        if (best + v[i].size > arena) arena = best + v[i].size;
        uint32_t p = m++;
        while (p && off[live[p - 1]] > best) { live[p] = live[p - 1]; p--; }
        live[p] = i;
    }
    free(e); free(off); free(live);
    return arena;
}

typedef struct row {
    char name[96];
    const char *suite;
    uint32_t n;
    uint64_t lb, sum, tfl, onl, ours;
    bool optimal;
    double secs, cpu;
} row;

static uint64_t bench_clock_ns(void *user) {
    (void)user;
    return (uint64_t)(now_s() * 1e9);
}

static bool run_file(const char *path, const char *name, const char *suite, double limit, uint64_t nodes,
                     uint32_t threads, row *r) {
    tmem_plan_problem *p;
    tmem_plan_error err;
    if (tmem_plan_problem_load_csv(path, &p, &err)) {
        fprintf(stderr, "bench plan: %s:%llu: %s\n", path, (unsigned long long)err.line, err.message);
        return false;
    }
    uint32_t n = tmem_plan_problem_count(p);
    bbuf *v = malloc(n * sizeof *v);
    if (!v) {
        tmem_plan_problem_destroy(p);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        tmem_plan_buffer b;
        if (tmem_plan_problem_get(p, i, &b)) b = (tmem_plan_buffer){0};
        v[i] = (bbuf){b.start, b.end, b.size, b.alignment ? b.alignment : 1, i};
    }
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->suite = suite;
    r->n = n;
    r->tfl = tflite_greedy(v, n);
    r->onl = online_best_fit(v, n);
    free(v);
    tmem_plan_desc d = {0};
    d.time_limit_s = limit;
    d.node_limit = nodes;
    d.clock_ns = bench_clock_ns;
    d.threads = threads;
    tmem_plan *pl;
    double t0 = now_s(), c0 = cpu_s();
    tmem_status st = tmem_plan_solve(p, &d, &pl);
    r->secs = now_s() - t0;
    r->cpu = cpu_s() - c0;
    bool ok = st == TMEM_OK;
    if (ok) {
        tmem_plan_info in;
        if (tmem_plan_get_info(pl, &in) == TMEM_OK) {
            r->lb = in.lower_bound;
            r->sum = in.sum_sizes;
            r->ours = in.arena;
            r->optimal = in.optimal;
        }
        tmem_plan_destroy(pl);
    } else {
        fprintf(stderr, "bench plan: %s: %s\n", name, tmem_strerror(st));
    }
    tmem_plan_problem_destroy(p);
    return ok;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static uint32_t list_csv(const char *dir, char ***out) {
    DIR *d = opendir(dir);
    uint32_t n = 0, cap = 0;
    *out = NULL;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".csv")) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **q = realloc(*out, cap * sizeof *q);
            if (!q) break;
            *out = q;
        }
        (*out)[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(*out, n, sizeof **out, cmp_str);
    return n;
}

/* 100,000 random buffers shaped like a long inference graph: mostly short
 * lifetimes, a few long-lived ones, sizes spread over 4 KiB .. 16 MiB. */
static double random_heuristic(uint32_t n, uint64_t *arena, uint64_t *lb) {
    tmem_plan_problem *p;
    if (tmem_plan_problem_create(&p)) return -1;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int64_t start = (int64_t)(i / 2);
        uint64_t r = x % 100;
        int64_t len = r < 80   ? 1 + (int64_t)(x >> 20) % 8
                      : r < 98 ? 8 + (int64_t)(x >> 24) % 200
                               : 1000 + (int64_t)(x >> 28) % 20000;
        tmem_plan_buffer b = {0};
        b.size = (uint64_t)4096 << ((x >> 40) % 13);
        b.start = start;
        b.end = start + len;
        if (tmem_plan_problem_add(p, &b, NULL)) {
            tmem_plan_problem_destroy(p);
            return -1;
        }
    }
    tmem_plan_desc d = {0};
    d.flags = TMEM_PLAN_HEURISTIC_ONLY;
    tmem_plan *pl;
    double t0 = now_s();
    tmem_status st = tmem_plan_solve(p, &d, &pl);
    double t = now_s() - t0;
    if (st == TMEM_OK) {
        tmem_plan_info in;
        if (tmem_plan_get_info(pl, &in) == TMEM_OK) {
            *arena = in.arena;
            *lb = in.lower_bound;
        }
        tmem_plan_destroy(pl);
    } else {
        t = -1;
    }
    tmem_plan_problem_destroy(p);
    return t;
}

int tmem_bench_plan(int argc, char **argv, bool json) {
    double limit = 0;
    uint64_t nodes = 0; /* the library's default budget */
    bool idealloc = false;
    uint32_t threads = 2;
    const char *shared = getenv("TMEM_SHARED_DIR");
    if (!shared) shared = "../shared";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *cmd = "tmem bench plan";
        if (!strcmp(a, "--time-limit")) { if (!tmem_cli_value_seconds(cmd, a, v, 86400, &limit)) return 2; i++; }
        else if (!strcmp(a, "--idealloc")) idealloc = true;
        else if (!strcmp(a, "--nodes")) { if (!tmem_cli_value_u64(cmd, a, v, 1, UINT64_MAX, &nodes)) return 2; i++; }
        else if (!strcmp(a, "--shared") && v) shared = argv[++i];
        else if (!strcmp(a, "--threads")) { if (!tmem_cli_value_u32(cmd, a, v, 1, 64, &threads)) return 2; i++; }
        else if (strcmp(a, "--json")) {
            fprintf(stderr, "usage: tmem bench plan [--json] [--idealloc] [--nodes N] "
                            "[--time-limit S] [--threads N] [--shared DIR]\n");
            return 2;
        }
    }
    typedef struct { const char *dir, *suite; } suite_dir;
    static const suite_dir standard[] = {
        {"bench/graphs", "graphs"},
        {"bench/minimalloc/challenging", "minimalloc"},
    };
    /* --idealloc: the large real traces (1k-62k buffers; the O(n^2)
     * baselines take a while on the biggest). */
    static const suite_dir large[] = {
        {"bench/idealloc/somas_tensors", "somas"},
        {"bench/idealloc/iopddl", "iopddl"},
    };
    const suite_dir *suites = idealloc ? large : standard;
    row rows[64];
    uint32_t nr = 0, seen = 0;
    char **names[2];
    uint32_t counts[2];
    char dirs[2][1024];
    for (size_t s = 0; s < 2; s++) {
        snprintf(dirs[s], sizeof dirs[s], "%s/%s", shared, suites[s].dir);
        counts[s] = list_csv(dirs[s], &names[s]);
    }
    tmem_progress prog;
    tmem_progress_begin(&prog, "bench plan", counts[0] + counts[1]);
    for (size_t s = 0; s < 2; s++) {
        for (uint32_t i = 0; i < counts[s]; i++) {
            char path[2048];
            const int len = snprintf(path, sizeof path, "%s/%s", dirs[s], names[s][i]);
            const bool fits = len > 0 && (size_t)len < sizeof path;
            if (fits && nr < 64 &&
                run_file(path, names[s][i], suites[s].suite, limit, nodes, threads, &rows[nr]))
                nr++;
            free(names[s][i]);
            tmem_progress_update(&prog, ++seen);
        }
        free(names[s]);
    }
    tmem_progress_end(&prog);
    if (nr == 0) {
        fprintf(stderr, "bench plan: no instances under %s (set TMEM_SHARED_DIR or --shared)\n", shared);
        return 1;
    }
    uint64_t rarena = 0, rlb = 0;
    double rt = random_heuristic(100000, &rarena, &rlb);
    double total[2] = {0, 0};
    uint32_t at_lb[2] = {0, 0}, within[2] = {0, 0}, count[2] = {0, 0}, beat[2] = {0, 0};
    for (uint32_t i = 0; i < nr; i++) {
        int s = strcmp(rows[i].suite, suites[0].suite) != 0;
        total[s] += rows[i].secs;
        count[s]++;
        if (rows[i].ours == rows[i].lb) at_lb[s]++;
        if ((double)rows[i].ours <= 1.001 * (double)rows[i].lb) within[s]++;
        uint64_t best = rows[i].tfl < rows[i].onl ? rows[i].tfl : rows[i].onl;
        if (rows[i].ours <= best) beat[s]++;
    }
    if (json) {
        printf("{\"bench\":\"plan\",\"time_limit_s\":%.3f,\"threads\":%u,\"instances\":[\n", limit, threads);
        for (uint32_t i = 0; i < nr; i++) {
            row *r = &rows[i];
            printf("  {\"suite\":\"%s\",\"name\":\"%s\",\"buffers\":%u,\"lower_bound\":%llu,"
                   "\"sum\":%llu,\"tflite\":%llu,"
                   "\"online_best_fit\":%llu,\"ours\":%llu,\"ratio\":%.6f,\"optimal\":%s,"
                   "\"seconds\":%.6f,\"cpu_seconds\":%.6f}%s\n",
                   r->suite, r->name, r->n, (unsigned long long)r->lb, (unsigned long long)r->sum,
                   (unsigned long long)r->tfl, (unsigned long long)r->onl,
                   (unsigned long long)r->ours, (double)r->ours / (double)r->lb,
                   r->optimal ? "true" : "false", r->secs, r->cpu, i + 1 < nr ? "," : "");
        }
        printf("],\"random_100k\":{\"seconds\":%.6f,\"arena\":%llu,\"lower_bound\":%llu},"
               "\"graphs\":{\"count\":%u,\"at_lower_bound\":%u,\"within_1.001\":%u,"
               "\"not_worse_than_baselines\":%u,\"seconds\":%.6f},"
               "\"minimalloc\":{\"count\":%u,\"at_lower_bound\":%u,\"not_worse_than_baselines\":%u,"
               "\"seconds\":%.6f}}\n",
               rt, (unsigned long long)rarena, (unsigned long long)rlb, count[0], at_lb[0],
               within[0], beat[0], total[0], count[1], at_lb[1], beat[1], total[1]);
        return 0;
    }
    printf("tmem bench plan: ours vs TFLite greedy-by-size and online best fit (same run), "
           "ratios to the lower bound\n");
    printf("%-10s %-40s %6s %12s %8s %8s %8s %8s %4s %9s %9s\n", "suite", "instance", "n", "lower bound", "sum",
           "tflite", "online", "ours", "opt", "ms", "cpu ms");
    for (uint32_t i = 0; i < nr; i++) {
        row *r = &rows[i];
        double lb = (double)r->lb;
        printf("%-10s %-40s %6u %12llu %8.3f %8.4f %8.4f %8.4f %4s %9.2f %9.2f\n", r->suite, r->name, r->n,
               (unsigned long long)r->lb, (double)r->sum / lb, (double)r->tfl / lb, (double)r->onl / lb,
               (double)r->ours / lb, r->optimal ? "yes" : "-", r->secs * 1e3, r->cpu * 1e3);
    }
    printf("\n%-11s %u/%u at the lower bound, %u/%u within 1.001x, %u/%u <= best baseline, %.1f ms total\n",
           suites[0].suite, at_lb[0],
           count[0], within[0], count[0], beat[0], count[0], total[0] * 1e3);
    printf("%-11s %u/%u at the lower bound, %u/%u <= best baseline, %.2f s total (%s)\n", suites[1].suite,
           at_lb[1], count[1], beat[1], count[1], total[1], limit > 0 ? "with a time limit" : "work budget");
    printf("random 100k buffers, heuristic mode: %.1f ms, arena %.4f x lower bound\n", rt * 1e3,
           rlb ? (double)rarena / (double)rlb : 0.0);
    printf("reproduce: TMEM_SHARED_DIR=%s tmem bench plan [--json] --nodes %llu --threads %u%s\n", shared,
           (unsigned long long)nodes, threads, limit > 0 ? " --time-limit S" : "");
    return 0;
}

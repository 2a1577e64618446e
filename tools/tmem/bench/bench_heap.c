/*
 * tmem bench heap [--json] [--ops N] [--seed S] [--slots N] [--only NAME] [--heap-gib G]
 *                 [--threads N] [--precommitted]
 *
 * The GENERAL heap against glibc malloc, mimalloc and jemalloc, same run,
 * same pre-generated workload:
 *  - a table of `slots` slots (default 8192); each step picks a slot at
 *    random: a live slot is freed, an empty one gets a new allocation, so
 *    about half the slots are live and the live set churns;
 *  - sizes 16 B .. 64 MiB, log-uniform inside four bands weighted towards
 *    small (80% 16-512 B, 15% 512 B-64 KiB, 4.9% 64 KiB-4 MiB, 0.1%
 *    4-64 MiB): many small tensors and a few big ones, as in inference;
 *  - alignment 16; the first byte of every allocation is written, so lazy
 *    commit (page faults) costs the same for everyone.
 * Throughput: one untimed pass (ops = allocs + frees per second). Latency:
 * a second pass with a clock_gettime pair around each allocation (call +
 * first-byte touch); the timer's own cost (median of back-to-back reads) is
 * subtracted and printed.
 *
 * Scaling (--threads N, default 2, with --json 0; 0 = off; with --json it is
 * a second JSON object on its own line): the same workload (a seed per
 * thread) on 1 and on N threads at once, each thread with its own heap of one
 * shared type (typedmem, commit on demand) or its own thread-local heap
 * (mimalloc, glibc); throughput = all threads' steps / wall time of the
 * slowest. Reported: N-thread / 1-thread ratio and ours / mimalloc at N.
 *
 * Pre-committed (--precommitted; issue 12's "p99.99 < 1 us on a
 * pre-committed heap"): every allocator gets its memory up front and keeps
 * it, then one untimed warm-up pass of the workload before the measured
 * ones: ours is a COMMIT_ALL heap in a POPULATE type (committed and touched
 * at creation, 2x the workload's peak live bytes; row typedmem-pre, the
 * on-demand heap warmed next to it), glibc with mmap off and no trimming,
 * mimalloc with an arena of the same size reserved committed and
 * decommit off, jemalloc with decay off (no purging). The page faults of
 * each latency pass are printed, so "nobody faulted" is checked, not assumed.
 *
 * Peers are loaded with dlopen(RTLD_LOCAL) at run time: Debian's
 * libmimalloc.so / libjemalloc.so export `malloc` and, if linked, would
 * replace glibc's malloc for the whole binary (and for our own metadata).
 * Absent peers are reported as skipped.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "bench/bench.h"
#include "cli/cli.h"
#include "typedmem/typedmem.h"

#define MiB (1ull << 20)

/* ---- workload ---- */

typedef struct step {
    uint32_t slot;
    uint32_t size; /* 0 = free the slot */
} step;

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) {
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* log-uniform in [lo, hi) */
static uint32_t log_uniform(uint64_t *s, double lo, double hi) {
    double l = log(lo), h = log(hi);
    return (uint32_t)exp(l + (h - l) * rng_unit(s));
}

static uint32_t pick_size(uint64_t *s) {
    double u = rng_unit(s);
    if (u < 0.80) return log_uniform(s, 16, 512);
    if (u < 0.95) return log_uniform(s, 512, 64 * 1024);
    if (u < 0.999) return log_uniform(s, 64 * 1024, 4 * MiB);
    return log_uniform(s, 4 * MiB, 64 * MiB);
}

static step *make_workload(uint64_t seed, uint32_t slots, uint64_t n, uint64_t *allocs,
                           uint64_t *peak_live) {
    step *w = malloc(n * sizeof *w);
    uint32_t *live = calloc(slots, sizeof *live);
    if (!w || !live) {
        free(w);
        free(live);
        return NULL;
    }
    *allocs = 0;
    uint64_t bytes = 0;
    *peak_live = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)(rng_next(&seed) % slots);
        w[i].slot = k;
        w[i].size = live[k] ? 0 : pick_size(&seed);
        if (w[i].size) {
            ++*allocs;
            bytes += w[i].size;
            if (bytes > *peak_live) *peak_live = bytes;
        } else {
            bytes -= live[k];
        }
        live[k] = w[i].size;
    }
    free(live);
    return w;
}

/* ---- allocators ---- */

typedef struct allocator {
    const char *name;
    void *(*alloc)(void *self, size_t size);
    void (*free)(void *self, void *p);
    void *self;
    const char *skipped; /* why not measured, or NULL */
    /* results */
    double ops_per_s;
    double p50, p99, p9999, max;
    uint64_t failures;
    uint64_t faults; /* page faults during the latency pass */
    /* pre-committed: each allocation's minimum over LAT_PASSES passes */
    double min_p50, min_p99, min_p9999, min_max;
} allocator;

static void *glibc_alloc(void *self, size_t n) {
    (void)self;
    return malloc(n);
}
static void glibc_free(void *self, void *p) {
    (void)self;
    free(p);
}

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*mallocx_fn)(size_t, int);
typedef void (*dallocx_fn)(void *, int);

static malloc_fn mi_malloc_p;
static free_fn mi_free_p;
static mallocx_fn je_mallocx_p;
static dallocx_fn je_dallocx_p;

static void *mi_alloc(void *self, size_t n) {
    (void)self;
    return mi_malloc_p(n);
}
static void mi_free_(void *self, void *p) {
    (void)self;
    mi_free_p(p);
}
static void *je_alloc(void *self, size_t n) {
    (void)self;
    return je_mallocx_p(n, 0);
}
static void je_free(void *self, void *p) {
    (void)self;
    je_dallocx_p(p, 0);
}

static void *tm_alloc(void *self, size_t n) {
    void *p;
    return tmem_heap_alloc(self, n, 16, &p) == TMEM_OK ? p : NULL;
}
static void tm_free(void *self, void *p) {
    tmem_status st = tmem_heap_free(self, p);
    (void)st;
}

static char dl_err[2][256];

/* dlsym returns an object pointer; POSIX guarantees it converts to a
 * function pointer, ISO C does not, so copy the bits. */
static void sym(void *lib, const char *name, void *fnptr) {
    void *p = dlsym(lib, name);
    memcpy(fnptr, &p, sizeof p);
}

static void *open_peer(const char *const *names, int which) {
    void *h = NULL;
    for (int i = 0; names[i] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(dl_err[which], sizeof dl_err[which], "skipped: %s not loadable (%s)", names[0],
                 e ? e : "?");
    }
    return h;
}

/* ---- running ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Median cost of one clock read, in ns. */
static double timer_overhead(void) {
    enum { N = 10001 };
    static uint32_t d[N];
    for (int i = 0; i < N; i++) {
        uint64_t a = now_ns(), b = now_ns();
        d[i] = (uint32_t)(b - a);
    }
    qsort(d, N, sizeof *d, cmp_u32);
    return d[N / 2];
}

static void free_all(allocator *a, void **slots, uint32_t n) {
    for (uint32_t k = 0; k < n; k++)
        if (slots[k]) {
            a->free(a->self, slots[k]);
            slots[k] = NULL;
        }
}

static void pass_throughput(allocator *a, const step *w, uint64_t n, void **slots,
                            uint32_t nslots) {
    double t0 = now_s();
    for (uint64_t i = 0; i < n; i++) {
        void **s = &slots[w[i].slot];
        if (w[i].size) {
            *s = a->alloc(a->self, w[i].size);
            if (*s)
                *(volatile char *)*s = 1;
            else
                a->failures++;
        } else if (*s) {
            a->free(a->self, *s);
            *s = NULL;
        }
    }
    double t1 = now_s();
    a->ops_per_s = (double)n / (t1 - t0);
    free_all(a, slots, nslots);
}

/* Pre-committed warm-up: the workload once, every page of every allocation
 * written, so all the memory an allocator hands out again is touched. */
static void pass_warm(allocator *a, const step *w, uint64_t n, void **slots, uint32_t nslots) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (uint64_t i = 0; i < n; i++) {
        void **s = &slots[w[i].slot];
        if (w[i].size) {
            *s = a->alloc(a->self, w[i].size);
            for (size_t b = 0; *s && b < w[i].size; b += page) ((volatile char *)*s)[b] = 1;
        } else if (*s) {
            a->free(a->self, *s);
            *s = NULL;
        }
    }
    free_all(a, slots, nslots);
}

static uint64_t page_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

/* The latency of each allocation, in workload order, into lat[0..m). */
static uint64_t pass_latency_raw(allocator *a, const step *w, uint64_t n, void **slots,
                                 uint32_t nslots, uint32_t *lat, uint64_t allocs) {
    uint64_t m = 0, faults = page_faults();
    for (uint64_t i = 0; i < n; i++) {
        void **s = &slots[w[i].slot];
        if (w[i].size) {
            uint64_t t0 = now_ns();
            *s = a->alloc(a->self, w[i].size);
            if (*s) *(volatile char *)*s = 1;
            uint64_t t1 = now_ns();
            if (m < allocs) lat[m++] = (uint32_t)(t1 - t0 > UINT32_MAX ? UINT32_MAX : t1 - t0);
        } else if (*s) {
            a->free(a->self, *s);
            *s = NULL;
        }
    }
    a->faults += page_faults() - faults;
    free_all(a, slots, nslots);
    return m;
}

/* Percentiles of lat[0..m) (sorted here), the clock's cost subtracted. */
static void percentiles(uint32_t *lat, uint64_t m, double o, double *p50, double *p99,
                        double *p9999, double *max) {
    qsort(lat, m, sizeof *lat, cmp_u32);
#define PCT(q) ((double)lat[(uint64_t)((double)(m - 1) * (q))] - o)
    *p50 = PCT(0.50);
    *p99 = PCT(0.99);
    *p9999 = PCT(0.9999);
    *max = (double)lat[m - 1] - o;
#undef PCT
}

static void pass_latency(allocator *a, const step *w, uint64_t n, void **slots, uint32_t nslots,
                         uint32_t *lat, uint64_t allocs, double overhead) {
    uint64_t m = pass_latency_raw(a, w, n, slots, nslots, lat, allocs);
    percentiles(lat, m, overhead, &a->p50, &a->p99, &a->p9999, &a->max);
}

/* Pre-committed: LAT_PASSES latency passes; the first gives the plain
 * percentiles, the per-allocation minimum over all of them the filtered
 * ones. On a loaded machine a preemption inside one timed call lands on a
 * random allocation and is gone in the other passes; a slow path of the
 * allocator recurs at the same step of the same workload. */
#define LAT_PASSES 3
static void pass_latency_min(allocator *a, const step *w, uint64_t n, void **slots, uint32_t nslots,
                             uint32_t *lat, uint32_t *low, uint64_t allocs, double overhead) {
    uint64_t m = pass_latency_raw(a, w, n, slots, nslots, low, allocs);
    memcpy(lat, low, m * sizeof *lat);
    percentiles(lat, m, overhead, &a->p50, &a->p99, &a->p9999, &a->max);
    for (int k = 1; k < LAT_PASSES; k++) {
        uint64_t mk = pass_latency_raw(a, w, n, slots, nslots, lat, allocs);
        for (uint64_t i = 0; i < mk && i < m; i++)
            if (lat[i] < low[i]) low[i] = lat[i];
    }
    percentiles(low, m, overhead, &a->min_p50, &a->min_p99, &a->min_p9999, &a->min_max);
}

/* ---- reporting ---- */

/* as[]: our two heaps first, then the peers. */
#define NALLOC 5
#define NOURS 2
#define MIMALLOC 3

/* What one run printed: the run's settings. */
typedef struct run_info {
    uint64_t ops, seed;
    uint32_t slots;
    double overhead;
    bool pre; /* --precommitted */
} run_info;

static double ratio_lat(double ours, double peer) { return ours / fmax(peer, 1); }

static void print_command(const run_info *r) {
    printf("tmem bench heap --ops %" PRIu64 " --seed %" PRIu64 " --slots %u%s", r->ops, r->seed,
           r->slots, r->pre ? " --precommitted" : "");
}

static void print_targets(const allocator *as, const run_info *r) {
    const allocator *mi = &as[MIMALLOC];
    for (int o = 0; o < NOURS; o++) {
        const char *thr = mi->skipped          ? "mimalloc skipped"
            : as[o].ops_per_s >= mi->ops_per_s ? "met"
                                               : "NOT met";
        printf("targets (issue %s), %-12s: throughput >= mimalloc's: %s; p99.99 allocate < 1 us%s: "
               "%s (%.0f ns",
               r->pre ? "12" : "2", as[o].name, thr, r->pre ? " pre-committed" : "",
               as[o].p9999 < 1000 ? "met" : "NOT met", as[o].p9999);
        if (r->pre)
            printf("; per-allocation minimum of %d passes %.0f ns: %s", LAT_PASSES, as[o].min_p9999,
                   as[o].min_p9999 < 1000 ? "met" : "NOT met");
        printf(")\n");
    }
}

/* Pre-committed: the filtered latencies (see pass_latency_min). */
static void print_filtered(const allocator *as, int n) {
    printf("\nper-allocation minimum over %d latency passes (filters preemption on a loaded "
           "machine)\n",
           LAT_PASSES);
    printf("%-14s %9s %9s %10s %10s   p99.99 / mimalloc's\n", "allocator", "p50 ns", "p99 ns",
           "p99.99 ns", "max ns");
    for (int i = 0; i < n; i++) {
        const allocator *a = &as[i];
        if (a->skipped) continue;
        printf("%-14s %9.0f %9.0f %10.0f %10.0f", a->name, a->min_p50, a->min_p99, a->min_p9999,
               a->min_max);
        const allocator *mi = &as[MIMALLOC];
        if (!mi->skipped) printf("   %5.2fx", ratio_lat(a->min_p9999, mi->min_p9999));
        printf("\n");
    }
}

static void print_human(const allocator *as, int n, const run_info *r) {
    printf("heap bench%s: %" PRIu64 " ops (alloc+free), %u slots, seed %" PRIu64
           ", sizes 16 B..64 MiB, align 16\n",
           r->pre ? " (pre-committed, after a warm-up pass)" : "", r->ops, r->slots, r->seed);
    printf("allocate latency = call + first-byte write, clock overhead %.0f ns subtracted; "
           "faults = page faults in the latency pass\n\n",
           r->overhead);
    printf("%-14s %12s %9s %9s %10s %10s %8s\n", "allocator", "Mops/s", "p50 ns", "p99 ns",
           "p99.99 ns", "max ns", "faults");
    for (int i = 0; i < n; i++) {
        const allocator *a = &as[i];
        if (a->skipped) {
            printf("%-14s %s\n", a->name, a->skipped);
            continue;
        }
        printf("%-14s %12.2f %9.0f %9.0f %10.0f %10.0f %8" PRIu64 "%s\n", a->name,
               a->ops_per_s / 1e6, a->p50, a->p99, a->p9999, a->max, a->faults,
               a->failures ? "  (allocation failures!)" : "");
    }
    printf("\nratios ours / peer: throughput (>1 = we are faster), latency (<1 = we are faster)\n");
    for (int o = 0; o < NOURS; o++)
        for (int i = NOURS; i < n; i++) {
            const allocator *a = &as[o], *p = &as[i];
            if (p->skipped || a->skipped) continue;
            printf("  %-12s vs %-9s throughput %5.2fx   p50 %5.2fx   p99 %5.2fx   p99.99 %5.2fx\n",
                   a->name, p->name, a->ops_per_s / p->ops_per_s, ratio_lat(a->p50, p->p50),
                   ratio_lat(a->p99, p->p99), ratio_lat(a->p9999, p->p9999));
        }
    if (r->pre) print_filtered(as, n);
    print_targets(as, r);
    printf("reproduce: ");
    print_command(r);
    printf("\n");
}

/* dlerror text: keep it valid JSON */
static void print_json_text(const char *t) {
    for (const char *c = t; *c; c++)
        if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) putchar(*c);
}

static void print_json(const allocator *as, int n, const run_info *r) {
    printf("{\"bench\":\"heap\",\"precommitted\":%s,\"ops\":%" PRIu64 ",\"seed\":%" PRIu64
           ",\"slots\":%u,\"timer_overhead_ns\":%.0f,\"allocators\":[",
           r->pre ? "true" : "false", r->ops, r->seed, r->slots, r->overhead);
    for (int i = 0; i < n; i++) {
        const allocator *a = &as[i];
        printf("%s{\"name\":\"%s\"", i ? "," : "", a->name);
        if (a->skipped) {
            printf(",\"skipped\":\"");
            print_json_text(a->skipped);
            printf("\"}");
            continue;
        }
        printf(",\"ops_per_s\":%.0f,\"alloc_ns\":{\"p50\":%.0f,\"p99\":%.0f,\"p99_99\":%.0f,"
               "\"max\":%.0f}",
               a->ops_per_s, a->p50, a->p99, a->p9999, a->max);
        if (r->pre)
            printf(",\"alloc_ns_min\":{\"p50\":%.0f,\"p99\":%.0f,\"p99_99\":%.0f,\"max\":%.0f}",
                   a->min_p50, a->min_p99, a->min_p9999, a->min_max);
        printf(",\"faults\":%" PRIu64 ",\"failures\":%" PRIu64 "}", a->faults, a->failures);
    }
    printf("],\"ratios\":{");
    bool first = true;
    for (int o = 0; o < NOURS; o++)
        for (int i = NOURS; i < n; i++) {
            const allocator *a = &as[o], *p = &as[i];
            if (p->skipped || a->skipped) continue;
            printf("%s\"%s/%s\":{\"throughput\":%.3f,\"p50\":%.3f,\"p99\":%.3f,\"p99_99\":%.3f}",
                   first ? "" : ",", a->name, p->name, a->ops_per_s / p->ops_per_s,
                   ratio_lat(a->p50, p->p50), ratio_lat(a->p99, p->p99),
                   ratio_lat(a->p9999, p->p9999));
            first = false;
        }
    printf("},\"command\":\"");
    print_command(r);
    printf("\"}\n");
}

/* ---- scaling: one heap per thread ---- */

#define MAX_THREADS 8

typedef struct worker {
    allocator a;
    step *w;
    uint64_t n;
    void **slots;
    uint32_t nslots;
    pthread_barrier_t *go;
} worker;

static void *worker_main(void *arg) {
    worker *k = arg;
    pthread_barrier_wait(k->go);
    pass_throughput(&k->a, k->w, k->n, k->slots, k->nslots);
    return NULL;
}

/* Steps per second of `threads` workers at once (their slowest sets the
 * wall time); heaps[t] is worker t's heap (NULL for the peers). */
static double run_parallel(const allocator *proto, tmem_heap **heaps, step **ws, uint64_t n,
                           uint32_t nslots, int threads, uint64_t *failures) {
    worker k[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned)threads);
    int started = 0;
    for (int t = 0; t < threads; t++) {
        k[t] = (worker){*proto, ws[t], n, calloc(nslots, sizeof(void *)), nslots, &go};
        if (heaps) k[t].a.self = heaps[t];
    }
    for (int t = 0; t < threads; t++)
        if (k[t].slots && pthread_create(&tid[t], NULL, worker_main, &k[t]) == 0) started++;
    if (started != threads) { /* cannot happen short of resource exhaustion */
        fprintf(stderr, "tmem bench heap: could not start %d threads\n", threads);
        exit(1);
    }
    double slowest = 1e300;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        double secs = (double)n / k[t].a.ops_per_s;
        if (slowest > 1e299 || secs > slowest) slowest = secs;
        *failures += k[t].a.failures;
        free(k[t].slots);
    }
    pthread_barrier_destroy(&go);
    return (double)threads * (double)n / slowest;
}

typedef struct scaling {
    const char *name;
    double one, many; /* steps/s on 1 thread, on N */
    uint64_t failures;
    const char *skipped;
} scaling;

/* A context with `threads` on-demand GENERAL heaps of one type. */
static tmem_status make_thread_heaps(tmem_context **ctx, tmem_heap **heaps, int threads,
                                     uint64_t heap_size) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 40;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_status st = tmem_context_create(&cd, ctx);
    if (st != TMEM_OK) return st;
    tmem_type_desc td = {0};
    td.name = "/memory/bench-threads";
    td.reserve = (uint64_t)threads * heap_size + (64ull << 20);
    tmem_type *t = NULL;
    st = tmem_type_create(*ctx, &td, &t);
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.size = heap_size;
    hd.role = TMEM_ROLE_ACTIVATION;
    for (int i = 0; i < threads && st == TMEM_OK; i++) st = tmem_heap_create(*ctx, &hd, &heaps[i]);
    if (st != TMEM_OK) tmem_context_destroy(*ctx);
    return st;
}

static int bench_scaling(allocator *as, int threads, uint64_t ops, uint64_t seed, uint32_t slots,
                         uint64_t heap_gib, bool json, const char *only) {
    step *ws[MAX_THREADS] = {0};
    uint64_t allocs, peak;
    for (int t = 0; t < threads; t++)
        ws[t] = make_workload(seed + (uint64_t)t, slots, ops, &allocs, &peak);
    tmem_context *ctx = NULL;
    tmem_heap *heaps[MAX_THREADS] = {0};
    uint64_t heap_size = (heap_gib << 30) / (uint64_t)threads;
    tmem_status st = make_thread_heaps(&ctx, heaps, threads, heap_size);
    scaling sc[3] = {{"typedmem", 0, 0, 0, NULL},
                     {"glibc", 0, 0, 0, NULL},
                     {"mimalloc", 0, 0, 0, as[MIMALLOC].skipped}};
    if (st != TMEM_OK) sc[0].skipped = "skipped: cannot create the heaps";
    const allocator *proto[3] = {&as[0], &as[2], &as[MIMALLOC]};
    for (int i = 0; i < 3; i++) {
        if (only && strcmp(only, sc[i].name) && !sc[i].skipped) sc[i].skipped = "skipped: --only";
        if (sc[i].skipped || !ws[threads - 1]) continue;
        tmem_heap **hs = i == 0 ? heaps : NULL;
        sc[i].one = run_parallel(proto[i], hs, ws, ops, slots, 1, &sc[i].failures);
        sc[i].many = run_parallel(proto[i], hs, ws, ops, slots, threads, &sc[i].failures);
    }
    if (json) {
        printf("{\"bench\":\"heap-scaling\",\"threads\":%d,\"ops_per_thread\":%" PRIu64
               ",\"allocators\":[",
               threads, ops);
        for (int i = 0; i < 3; i++) {
            printf("%s{\"name\":\"%s\"", i ? "," : "", sc[i].name);
            if (sc[i].skipped)
                printf(",\"skipped\":true}");
            else
                printf(",\"ops_per_s_1\":%.0f,\"ops_per_s_n\":%.0f,\"scaling\":%.3f,\"failures\":"
                       "%" PRIu64 "}",
                       sc[i].one, sc[i].many, sc[i].many / sc[i].one, sc[i].failures);
        }
        printf("]");
        if (!sc[0].skipped && !sc[2].skipped)
            printf(",\"typedmem/mimalloc_n\":%.3f", sc[0].many / sc[2].many);
        printf("}\n");
    } else {
        printf(
            "\nscaling: %d threads, one heap per thread (typedmem: %d heaps of one type), %" PRIu64
            " steps each\n",
            threads, threads, ops);
        printf("%-14s %12s %12s %9s\n", "allocator", "1 thr Mops/s", "N thr Mops/s", "scaling");
        for (int i = 0; i < 3; i++) {
            if (sc[i].skipped)
                printf("%-14s %s\n", sc[i].name, sc[i].skipped);
            else
                printf("%-14s %12.2f %12.2f %8.2fx%s\n", sc[i].name, sc[i].one / 1e6,
                       sc[i].many / 1e6, sc[i].many / sc[i].one,
                       sc[i].failures ? "  (allocation failures!)" : "");
        }
        if (!sc[0].skipped && !sc[2].skipped)
            printf("targets (issue 12): %d-thread scaling >= 1.8x: %s (%.2fx); typedmem / mimalloc "
                   "at %d threads >= 1.0x: %s "
                   "(%.2fx)\n",
                   threads, sc[0].many / sc[0].one >= 1.8 ? "met" : "NOT met",
                   sc[0].many / sc[0].one, threads, sc[0].many >= sc[2].many ? "met" : "NOT met",
                   sc[0].many / sc[2].many);
        printf("reproduce: tmem bench heap --threads %d --ops %" PRIu64 " --seed %" PRIu64
               " --slots %u\n",
               threads, ops, seed, slots);
    }
    if (st == TMEM_OK) tmem_context_destroy(ctx);
    for (int t = 0; t < threads; t++) free(ws[t]);
    return sc[0].failures ? 1 : 0;
}

/* ---- entry ---- */

/* Debian's libjemalloc/libmimalloc use initial-exec TLS (STATIC_TLS), which
 * dlopen can only place in glibc's small static TLS surplus. When that is
 * too small, run ourselves again with a larger surplus (a glibc tunable that
 * must be set before start-up). Returns only if that is impossible. */
static void reexec_with_tls_surplus(int argc, char **argv) {
    if (getenv("TMEM_BENCH_HEAP_REEXEC")) return;
    char tun[512];
    const char *old = getenv("GLIBC_TUNABLES");
    snprintf(tun, sizeof tun, "%s%sglibc.rtld.optional_static_tls=65536", old ? old : "",
             old ? ":" : "");
    if (setenv("GLIBC_TUNABLES", tun, 1) || setenv("TMEM_BENCH_HEAP_REEXEC", "1", 1)) return;
    char **nargv = calloc((size_t)argc + 3, sizeof *nargv);
    if (!nargv) return;
    nargv[0] = (char *)"tmem";
    nargv[1] = (char *)"bench";
    for (int i = 0; i < argc; i++) nargv[i + 2] = argv[i];
    fflush(NULL);
    execv("/proc/self/exe", nargv);
    free(nargv); /* exec failed: carry on without the peer */
}

/* One context, two heaps: commit on demand (the default), and COMMIT_ALL
 * sized at twice the workload's peak live bytes (an inference arena whose
 * worst case is claimed before work starts). Pre-committed: the arena's type
 * is POPULATE (its reserve, the arena, committed and touched at creation). */
static tmem_status make_heaps(tmem_context **ctx, tmem_heap **heap, tmem_heap **arena,
                              uint64_t arena_size, uint64_t heap_size, bool pre) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 40; /* the bench measures speed, not limits */
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_status st = tmem_context_create(&cd, ctx);
    if (st != TMEM_OK) return st;
    tmem_type_desc td = {0};
    td.name = "/memory/bench";
    td.reserve = pre ? heap_size : 2 * heap_size;
    tmem_type *t = NULL, *at = NULL;
    tmem_heap_desc hd = {0};
    hd.size = heap_size;
    hd.role = TMEM_ROLE_ACTIVATION;
    st = tmem_type_create(*ctx, &td, &t);
    if (st == TMEM_OK && pre) {
        td.name = "/memory/bench-pre";
        td.reserve = arena_size;
        td.flags = TMEM_TYPE_POPULATE;
        st = tmem_type_create(*ctx, &td, &at);
    } else {
        at = t;
    }
    if (st == TMEM_OK) {
        hd.type = t;
        st = tmem_heap_create(*ctx, &hd, heap);
    }
    if (st == TMEM_OK) {
        hd.type = at;
        hd.size = arena_size;
        hd.flags = TMEM_HEAP_COMMIT_ALL;
        st = tmem_heap_create(*ctx, &hd, arena);
    }
    if (st != TMEM_OK) tmem_context_destroy(*ctx);
    return st;
}

/* Pre-committed: the peers keep what they get (set before they load). */
static void peers_keep_memory(void) {
    mallopt(M_MMAP_MAX, 0); /* glibc: everything from the heap... */
    mallopt(M_TRIM_THRESHOLD, INT_MAX); /* ...which it never gives back */
    setenv("MIMALLOC_ALLOW_DECOMMIT", "0", 1);
    setenv("MALLOC_CONF", "dirty_decay_ms:-1,muzzy_decay_ms:-1", 1);
}

/* mimalloc, pre-committed: an arena of `bytes` reserved and committed. */
static void mi_reserve(void *mi, uint64_t bytes) {
    int (*reserve)(size_t, bool, bool) = NULL;
    sym(mi, "mi_reserve_os_memory", &reserve);
    if (!reserve || reserve((size_t)bytes, true, false) != 0)
        fprintf(stderr, "tmem bench heap: mimalloc: no arena reserved (it maps per segment)\n");
}

typedef struct options {
    uint64_t ops, seed, heap_gib;
    uint32_t slots;
    int threads;
    const char *only; /* measure one allocator (profiling) */
    bool pre;
} options;

static const char usage[] =
    "usage: tmem bench heap [--json] [--ops N] [--seed S] [--slots N] [--only NAME] "
    "[--heap-gib G] [--threads N] [--precommitted]\n";

static int parse_options(int argc, char **argv, bool json, options *o) {
    *o = (options){2000000, 42, 32, 8192, json ? 0 : 2, NULL, false};
    bool threads_given = false;
    const char *cmd = "tmem bench heap";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true, value = true;
        uint32_t n = 0;
        if (!strcmp(a, "--ops"))
            ok = tmem_cli_value_u64(cmd, a, v, 1000, UINT64_MAX, &o->ops);
        else if (!strcmp(a, "--seed"))
            ok = tmem_cli_value_u64(cmd, a, v, 0, UINT64_MAX, &o->seed);
        else if (!strcmp(a, "--slots"))
            ok = tmem_cli_value_u32(cmd, a, v, 16, UINT32_MAX, &o->slots);
        else if (!strcmp(a, "--only") && v)
            o->only = v;
        else if (!strcmp(a, "--threads")) {
            ok = tmem_cli_value_u32(cmd, a, v, 0, MAX_THREADS, &n);
            o->threads = (int)n;
            threads_given = true;
        }
        /* valgrind cannot reserve 64 GiB: `--heap-gib 4` lets callgrind run it */
        else if (!strcmp(a, "--heap-gib"))
            ok = tmem_cli_value_u64(cmd, a, v, 1, 1024, &o->heap_gib);
        else if (!strcmp(a, "--precommitted"))
            o->pre = true, value = false;
        else if (!strcmp(a, "--json"))
            value = false;
        else {
            fputs(usage, stderr);
            return 2;
        }
        if (!ok) return 2;
        if (value) i++;
    }
    if (o->pre && !threads_given) o->threads = 0; /* the scaling runs measure on-demand heaps */
    return 0;
}

int tmem_bench_heap(int argc, char **argv, bool json) {
    options o;
    if (parse_options(argc, argv, json, &o)) return 2;
    if (o.pre) peers_keep_memory();
    uint64_t allocs = 0, peak = 0;
    step *w = make_workload(o.seed, o.slots, o.ops, &allocs, &peak);
    void **slot = calloc(o.slots, sizeof *slot);
    size_t lat_bytes = (allocs ? allocs : 1) * sizeof(uint32_t);
    uint32_t *lat = malloc(lat_bytes), *low = o.pre ? malloc(lat_bytes) : NULL;
    if (!w || !slot || !lat || (o.pre && !low)) {
        fprintf(stderr, "tmem bench heap: out of memory\n");
        free(w);
        free(slot);
        free(lat);
        free(low);
        return 1;
    }
    /* their page faults are not the allocators' */
    memset(lat, 0, lat_bytes);
    if (low) memset(low, 0, lat_bytes);
    tmem_context *ctx = NULL;
    tmem_heap *heap = NULL, *arena = NULL;
    uint64_t arena_size = (2 * peak + MiB - 1) & ~(MiB - 1);
    tmem_status st = make_heaps(&ctx, &heap, &arena, arena_size, o.heap_gib << 30, o.pre);
    if (st != TMEM_OK) {
        fprintf(stderr, "tmem bench heap: cannot create the heap: %s\n", tmem_strerror(st));
        free(w);
        free(slot);
        free(lat);
        free(low);
        return 1;
    }
    static const char *const mi_names[] = {"libmimalloc.so.2", "libmimalloc.so", NULL};
    static const char *const je_names[] = {"libjemalloc.so.2", "libjemalloc.so", NULL};
    void *mi = open_peer(mi_names, 0), *je = open_peer(je_names, 1);
    bool tls = strstr(dl_err[0], "static TLS") || strstr(dl_err[1], "static TLS");
    if (tls && !getenv("TMEM_BENCH_HEAP_REEXEC")) {
        if (mi) dlclose(mi);
        tmem_heap_destroy(heap);
        tmem_context_destroy(ctx);
        free(w);
        free(slot);
        free(lat);
        free(low);
        reexec_with_tls_surplus(argc, argv);
        fprintf(stderr, "tmem bench heap: could not re-run with a larger static TLS surplus\n");
        return 1;
    }
    if (mi) {
        sym(mi, "mi_malloc", &mi_malloc_p);
        sym(mi, "mi_free", &mi_free_p);
        if (!mi_malloc_p || !mi_free_p)
            snprintf(dl_err[0], sizeof dl_err[0], "skipped: mi_malloc/mi_free not exported");
        else if (o.pre)
            mi_reserve(mi, arena_size);
    }
    if (je) {
        sym(je, "mallocx", &je_mallocx_p);
        sym(je, "dallocx", &je_dallocx_p);
        if (!je_mallocx_p || !je_dallocx_p)
            snprintf(dl_err[1], sizeof dl_err[1], "skipped: mallocx/dallocx not exported");
    }
    const char *mi_skip = dl_err[0][0] ? dl_err[0] : NULL;
    const char *je_skip = dl_err[1][0] ? dl_err[1] : NULL;
    allocator as[NALLOC] = {
        {.name = "typedmem", .alloc = tm_alloc, .free = tm_free, .self = heap},
        {.name = o.pre ? "typedmem-pre" : "typedmem-all", .alloc = tm_alloc, .free = tm_free,
         .self = arena},
        {.name = "glibc", .alloc = glibc_alloc, .free = glibc_free},
        {.name = "mimalloc", .alloc = mi_alloc, .free = mi_free_, .skipped = mi_skip},
        {.name = "jemalloc", .alloc = je_alloc, .free = je_free, .skipped = je_skip},
    };
    run_info ri = {o.ops, o.seed, o.slots, timer_overhead(), o.pre};
    for (int i = 0; i < NALLOC; i++) {
        allocator *a = &as[i];
        if (o.only && strcmp(o.only, a->name) && !a->skipped) a->skipped = "skipped: --only";
        if (a->skipped) continue;
        if (o.pre)
            pass_warm(a, w, o.ops, slot, o.slots); /* the memory every allocator will reuse */
        pass_throughput(a, w, o.ops, slot, o.slots);
        if (o.pre) pass_latency_min(a, w, o.ops, slot, o.slots, lat, low, allocs, ri.overhead);
        else pass_latency(a, w, o.ops, slot, o.slots, lat, allocs, ri.overhead);
    }
    if (json)
        print_json(as, NALLOC, &ri);
    else
        print_human(as, NALLOC, &ri);
    bool failed = as[0].failures != 0 || as[1].failures != 0;
    if (o.threads >= 2)
        failed |=
            bench_scaling(as, o.threads, o.ops, o.seed, o.slots, o.heap_gib, json, o.only) != 0;
    tmem_heap_destroy(heap);
    tmem_context_destroy(ctx);
    /* peers stay loaded: their TLS destructors may still run at exit */
    free(w);
    free(slot);
    free(lat);
    free(low);
    return failed ? 1 : 0;
}

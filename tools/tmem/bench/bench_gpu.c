/* tmem bench gpu [--json] [--graphs DIR] [--time-limit S] [--repeat N]
 *
 * Device memory for real model graphs (every .csv in <shared>/bench/graphs: every
 * activation buffer's size and lifetime, recorded from PyTorch on CUDA),
 * replayed on the GPU in execution order (at each step, free what ended,
 * then allocate what starts) three ways, in the same run:
 *  - typed: the planner's offsets (tmem_plan_solve) in a PLACEMENT heap of
 *    a DEVICE type of the CUDA backend (VMM pool, the arena committed once
 *    at heap creation; transient buffers aliased);
 *  - cudaMalloc per tensor: cuMemAlloc/cuMemFree (the driver calls that
 *    cudaMalloc/cudaFree make; the runtime is not linked);
 *  - cudaMallocAsync: cuMemAllocAsync/cuMemFreeAsync on one stream with the
 *    device's default memory pool (what cudaMallocAsync uses).
 * Peak device bytes: cuMemGetInfo (total - free, minus the value before the
 * replay, sampled after every allocation in a second, untimed pass) and each
 * method's own accounting (typed: the type's committed peak; per tensor:
 * the peak of live requested bytes; async: the pool's reserved high-water
 * mark). Time: the whole replay (allocations and frees, plus the final
 * stream sync for async) divided by the number of tensors, best of
 * --repeat runs (3). Another process on the same GPU moves cuMemGetInfo;
 * the accounting columns do not move.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench/bench.h"
#include "typedmem/gpu.h"
#include "typedmem/plan_heap.h"
#include "typedmem/plan_io.h"

#ifndef TMEM_HAVE_CUDA
int tmem_bench_gpu(int argc, char **argv, bool json) {
    (void)argc, (void)argv, (void)json;
    fprintf(stderr, "tmem bench gpu: built without the CUDA toolkit (cuda.h not found)\n");
    return 77;
}
#else
#include <dlfcn.h>
#include "typedmem/cuda.h"

/* The baselines' driver calls, made by the bench itself on the device and
 * context typedmem uses (tmem_cu_get_native): libcuda.so.1 is already
 * loaded by the attach, so this dlopen finds it. Each entry point under the
 * versioned name this cuda.h maps it to (cuMemAlloc -> "cuMemAlloc_v2"). */
#define BENCH_CU_FNS(X)                                                                                    \
    X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemAllocAsync) \
    X(cuMemFreeAsync) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)                        \
    X(cuDeviceGetDefaultMemPool) X(cuMemPoolGetAttribute) X(cuMemPoolSetAttribute) X(cuMemPoolTrimTo)
#define BENCH_STR_(x) #x
#define BENCH_STR(x) BENCH_STR_(x)

typedef struct bench_cu {
#define BENCH_CU_DECL(name) __typeof__(&name) name;
    BENCH_CU_FNS(BENCH_CU_DECL)
#undef BENCH_CU_DECL
    CUdevice device;
    CUcontext ctx;
} bench_cu;

static bool bench_cu_load(tmem_gpu *gpu, bench_cu *cu) {
    tmem_cu_native n;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib || tmem_cu_get_native(gpu, &n) != TMEM_OK) return false;
    bool ok = true;
#define BENCH_CU_LOAD(name)                                                                                \
    {                                                                                                      \
        void *sym = dlsym(lib, BENCH_STR(name));                                                           \
        memcpy(&cu->name, &sym, sizeof sym);                                                               \
        ok = ok && sym;                                                                                    \
    }
    BENCH_CU_FNS(BENCH_CU_LOAD)
#undef BENCH_CU_LOAD
    cu->device = n.device;
    cu->ctx = n.context;
    return ok; /* the library stays loaded: typedmem holds it too */
}

typedef struct ev {
    int64_t t;
    int kind; /* 0 free, 1 alloc: frees first at the same step */
    uint32_t idx;
} ev;

static int by_time(const void *a, const void *b) {
    const ev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->kind != y->kind) return x->kind - y->kind;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct gpu_row {
    char name[96];
    uint32_t n;
    uint64_t lb, arena, sum;
    uint64_t typed_acct, typed_info, malloc_acct, malloc_info, async_pool, async_info;
    double typed_ns, malloc_ns, async_ns, typed_setup_ms;
    bool ok;
} gpu_row;

typedef struct replay {
    bench_cu *cu;
    const tmem_plan *plan;
    const uint64_t *size;
    const ev *e;
    uint32_t n, ne;
    uint64_t used0;
} replay;

static uint64_t used_now(bench_cu *cu) {
    size_t f = 0, t = 0;
    if (cu->cuMemGetInfo(&f, &t) != CUDA_SUCCESS) return 0;
    return (uint64_t)(t - f);
}

static uint64_t above(uint64_t v, uint64_t base) { return v > base ? v - base : 0; }

/* typed: plan offsets in a placement heap over the VMM pool */
static bool run_typed(tmem_context *ctx, const replay *r, int repeat, gpu_row *row, uint32_t serial) {
    tmem_type_desc td = {0};
    char name[64];
    snprintf(name, sizeof name, "/memory/bench-gpu-%u", serial);
    td.name = name;
    td.placement = TMEM_PLACEMENT_DEVICE;
    td.lifetime = TMEM_LIFETIME_TRANSIENT;
    tmem_heap_desc hd;
    if (tmem_plan_heap_desc(r->plan, &hd) != TMEM_OK) return false;
    td.reserve = hd.size;
    tmem_type *type;
    if (tmem_type_create(ctx, &td, &type) != TMEM_OK) return false;
    hd.type = type;
    hd.role = TMEM_ROLE_ACTIVATION;
    hd.flags = TMEM_HEAP_COMMIT_ALL;
    double t0 = now_s();
    tmem_heap *heap;
    if (tmem_heap_create(ctx, &hd, &heap) != TMEM_OK) return false;
    row->typed_setup_ms = (now_s() - t0) * 1e3;
    uint64_t *off = malloc(r->n * sizeof *off);
    if (!off) return false;
    bool ok = true;
    double best = 1e30;
    for (int k = 0; k < repeat && ok; k++) {
        double a = now_s();
        for (uint32_t i = 0; i < r->ne && ok; i++) {
            const ev *e = &r->e[i];
            if (e->kind) {
                tmem_alloc_info ai;
                ok = tmem_plan_heap_alloc(heap, r->plan, e->idx, 0, &ai) == TMEM_OK;
                off[e->idx] = ai.offset;
            } else {
                ok = tmem_heap_free_offset(heap, off[e->idx]) == TMEM_OK;
            }
        }
        double d = now_s() - a;
        if (d < best) best = d;
    }
    row->typed_ns = best * 1e9 / r->n;
    row->typed_info = above(used_now(r->cu), r->used0);
    tmem_type_stats s;
    if (tmem_type_get_stats(type, &s) == TMEM_OK) row->typed_acct = s.committed.peak;
    tmem_heap_destroy(heap);
    free(off);
    return ok;
}

static bool run_malloc(const replay *r, int repeat, gpu_row *row) {
    bench_cu *cu = r->cu;
    CUdeviceptr *p = calloc(r->n, sizeof *p);
    if (!p) return false;
    bool ok = true;
    double best = 1e30;
    for (int pass = 0; pass <= repeat && ok; pass++) {
        bool sample = pass == repeat; /* last pass: untimed, samples cuMemGetInfo */
        uint64_t live = 0, peak_live = 0, peak = 0;
        double a = now_s();
        for (uint32_t i = 0; i < r->ne && ok; i++) {
            const ev *e = &r->e[i];
            if (e->kind) {
                ok = cu->cuMemAlloc(&p[e->idx], (size_t)r->size[e->idx]) == CUDA_SUCCESS;
                live += r->size[e->idx];
                if (live > peak_live) peak_live = live;
                if (sample) {
                    uint64_t u = used_now(cu);
                    if (u > peak) peak = u;
                }
            } else {
                ok = cu->cuMemFree(p[e->idx]) == CUDA_SUCCESS;
                live -= r->size[e->idx];
            }
        }
        double d = now_s() - a;
        if (!sample && d < best) best = d;
        if (sample) {
            row->malloc_acct = peak_live;
            row->malloc_info = above(peak, r->used0);
        }
    }
    row->malloc_ns = best * 1e9 / r->n;
    free(p);
    return ok;
}

static bool run_async(const replay *r, int repeat, gpu_row *row) {
    bench_cu *cu = r->cu;
    CUmemoryPool pool;
    CUstream st;
    if (cu->cuDeviceGetDefaultMemPool(&pool, cu->device) != CUDA_SUCCESS) return false;
    if (cu->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return false;
    CUdeviceptr *p = calloc(r->n, sizeof *p);
    bool ok = p != NULL;
    double best = 1e30;
    for (int pass = 0; pass <= repeat && ok; pass++) {
        bool sample = pass == repeat;
        cuuint64_t zero = 0;
        (void)cu->cuMemPoolTrimTo(pool, 0);
        (void)cu->cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero);
        uint64_t peak = 0;
        double a = now_s();
        for (uint32_t i = 0; i < r->ne && ok; i++) {
            const ev *e = &r->e[i];
            if (e->kind) {
                ok = cu->cuMemAllocAsync(&p[e->idx], (size_t)r->size[e->idx], st) == CUDA_SUCCESS;
                if (sample) {
                    uint64_t u = used_now(cu);
                    if (u > peak) peak = u;
                }
            } else {
                ok = cu->cuMemFreeAsync(p[e->idx], st) == CUDA_SUCCESS;
            }
        }
        ok = ok && cu->cuStreamSynchronize(st) == CUDA_SUCCESS;
        double d = now_s() - a;
        if (!sample && d < best) best = d;
        if (sample) {
            cuuint64_t high = 0;
            (void)cu->cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &high);
            row->async_pool = high;
            row->async_info = above(peak, r->used0);
        }
    }
    row->async_ns = best * 1e9 / r->n;
    (void)cu->cuMemPoolTrimTo(pool, 0);
    (void)cu->cuStreamDestroy(st);
    free(p);
    return ok;
}

static uint64_t gpu_bench_clock_ns(void *user) {
    (void)user;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static bool run_graph(tmem_context *ctx, bench_cu *cu, const char *path, double limit, int repeat, gpu_row *row,
                      uint32_t serial) {
    tmem_plan_problem *pp;
    tmem_plan_error err;
    if (tmem_plan_problem_load_csv(path, &pp, &err) != TMEM_OK) return false;
    uint32_t n = tmem_plan_problem_count(pp);
    tmem_plan_desc pd = {0};
    /* The planner's default work budget (the same plan on any machine);
     * --time-limit adds a wall-clock limit on top. */
    pd.time_limit_s = limit;
    pd.clock_ns = gpu_bench_clock_ns;
    tmem_plan *plan = NULL;
    uint64_t *size = malloc(n * sizeof *size);
    ev *e = malloc(2 * (size_t)n * sizeof *e);
    bool ok = size && e && tmem_plan_solve(pp, &pd, &plan) == TMEM_OK;
    for (uint32_t i = 0; ok && i < n; i++) {
        tmem_plan_buffer b;
        ok = tmem_plan_problem_get(pp, i, &b) == TMEM_OK;
        size[i] = b.size;
        e[2 * i] = (ev){b.start, 1, i};
        e[2 * i + 1] = (ev){b.end, 0, i};
    }
    if (ok) {
        qsort(e, 2 * (size_t)n, sizeof *e, by_time);
        tmem_plan_info pi;
        ok = tmem_plan_get_info(plan, &pi) == TMEM_OK;
        row->n = n;
        row->lb = pi.lower_bound;
        row->arena = pi.arena;
        row->sum = pi.sum_sizes;
        replay r = {cu, plan, size, e, n, 2 * n, 0};
        r.used0 = used_now(cu);
        ok = ok && run_malloc(&r, repeat, row);
        r.used0 = used_now(cu);
        ok = ok && run_async(&r, repeat, row);
        r.used0 = used_now(cu);
        ok = ok && run_typed(ctx, &r, repeat, row, serial);
    }
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(pp);
    free(size);
    free(e);
    row->ok = ok;
    return ok;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tmem_bench_gpu(int argc, char **argv, bool json) {
    const char *dir = NULL;
    char buf[4096];
    double limit = 0; /* none: the planner's work budget alone */
    int repeat = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--graphs") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) limit = atof(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    }
    if (repeat < 1) repeat = 1;
    if (!dir) {
        const char *sh = getenv("TMEM_SHARED_DIR");
        snprintf(buf, sizeof buf, "%s/bench/graphs", sh ? sh : "../shared");
        dir = buf;
    }
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    cd.budget = 1ull << 40;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    tmem_gpu_desc gd = {0};
    gd.api = TMEM_GPU_CUDA;
    gd.flags = TMEM_GPU_DEVICE_ONLY;
    tmem_gpu *gpu;
    tmem_status st = tmem_gpu_attach(ctx, &gd, &gpu);
    if (st != TMEM_OK) {
        fprintf(stderr, "tmem bench gpu: no CUDA device (%s)\n", tmem_status_name(st));
        tmem_context_destroy(ctx);
        return 77;
    }
    bench_cu cuda, *cu = &cuda;
    if (!bench_cu_load(gpu, cu)) {
        fprintf(stderr, "tmem bench gpu: the CUDA driver's entry points are missing\n");
        tmem_gpu_release(gpu);
        tmem_context_destroy(ctx);
        return 1;
    }
    tmem_gpu_info gi;
    if (tmem_gpu_get_info(gpu, &gi) != TMEM_OK) memset(&gi, 0, sizeof gi);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "tmem bench gpu: cannot open %s\n", dir);
        return 1;
    }
    char *names[256];
    uint32_t nn = 0;
    struct dirent *de;
    while ((de = readdir(d)) && nn < 256) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".csv")) names[nn++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof *names, cmp_str);
    if (cu->cuCtxPushCurrent(cu->ctx) != CUDA_SUCCESS) return 1;
    if (!json)
        printf("tmem bench gpu: %s, %s, chunk %llu; graphs in %s\n"
               "%-38s %5s %9s %7s | %9s %9s %6s | %9s %9s | %9s %9s | %8s %8s %8s %6s\n",
               gi.device, gi.driver, (unsigned long long)gi.chunk_size, dir, "graph", "bufs", "LB", "arena/LB",
               "typed", "(getinfo)", "vs_pt", "per-tensor", "(getinfo)", "async-pool", "(getinfo)", "typed_ns",
               "malloc_ns", "async_ns", "x_mall");
    else
        printf("[\n");
    int fails = 0;
    for (uint32_t i = 0; i < nn; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        gpu_row r;
        memset(&r, 0, sizeof r);
        snprintf(r.name, sizeof r.name, "%.*s", (int)(strlen(names[i]) - 4), names[i]);
        if (!run_graph(ctx, cu, path, limit, repeat, &r, i)) {
            fprintf(stderr, "tmem bench gpu: %s failed\n", names[i]);
            fails++;
            continue;
        }
        double vs = r.malloc_info ? (double)r.typed_acct / (double)r.malloc_info : 0;
        if (json)
            printf("%s{\"graph\":\"%s\",\"buffers\":%u,\"lower_bound\":%llu,\"arena\":%llu,\"sum\":%llu,"
                   "\"typed_peak_accounted\":%llu,\"typed_peak_getinfo\":%llu,\"per_tensor_peak_live\":%llu,"
                   "\"per_tensor_peak_getinfo\":%llu,\"async_pool_reserved_high\":%llu,\"async_peak_getinfo\":%llu,"
                   "\"typed_ns_per_tensor\":%.1f,\"malloc_ns_per_tensor\":%.1f,\"async_ns_per_tensor\":%.1f,"
                   "\"typed_setup_ms\":%.3f}\n",
                   i ? "," : "", r.name, r.n, (unsigned long long)r.lb, (unsigned long long)r.arena,
                   (unsigned long long)r.sum, (unsigned long long)r.typed_acct, (unsigned long long)r.typed_info,
                   (unsigned long long)r.malloc_acct, (unsigned long long)r.malloc_info,
                   (unsigned long long)r.async_pool, (unsigned long long)r.async_info, r.typed_ns, r.malloc_ns,
                   r.async_ns, r.typed_setup_ms);
        else
            printf("%-38.38s %5u %9llu %7.4f | %9llu %9llu %6.3f | %9llu %9llu | %9llu %9llu | %8.0f %8.0f %8.0f "
                   "%6.1f\n",
                   r.name, r.n, (unsigned long long)r.lb, r.lb ? (double)r.arena / (double)r.lb : 0,
                   (unsigned long long)r.typed_acct, (unsigned long long)r.typed_info, vs,
                   (unsigned long long)r.malloc_acct, (unsigned long long)r.malloc_info,
                   (unsigned long long)r.async_pool, (unsigned long long)r.async_info, r.typed_ns, r.malloc_ns,
                   r.async_ns, r.typed_ns > 0 ? r.malloc_ns / r.typed_ns : 0);
    }
    if (json) printf("]\n");
    else
        printf("typed = planner arena committed in the VMM pool (setup once per graph, not in typed_ns); vs_pt = "
               "typed / per-tensor cuMemGetInfo peak; x_mall = cuMemAlloc time / typed time.\n"
               "reproduce: tmem bench gpu [--graphs DIR] [--time-limit S] [--repeat N]\n");
    CUcontext popped;
    (void)cu->cuCtxPopCurrent(&popped);
    for (uint32_t i = 0; i < nn; i++) free(names[i]);
    tmem_gpu_release(gpu);
    tmem_context_destroy(ctx);
    return fails ? 1 : 0;
}
#endif

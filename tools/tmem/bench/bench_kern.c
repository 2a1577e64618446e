/* tmem bench kern [--json] [--quick] [--mb N] [--tokens N]
 *
 * The runtime's matmul kernels against baselines measured in the same run:
 *  - decode (one token, mat-vec, memory-bound): GB/s of weight bytes read by
 *    the runtime's matmul (tmemrt/testing.h) against a plain streaming read of the same bytes with the
 *    same thread count (1 and 2), per weight type; the read runs 8
 *    interleaved streams per thread, the fastest plain read we found (one
 *    stream gets ~60% of it). The matrix is larger than the last-level
 *    cache, as the weights of a model are.
 *  - prefill (n_tok tokens, compute-bound) on the Qwen3.5-0.8B projection
 *    shapes: GFLOP/s against the scalar reference (tmrt_testing_matmul_ref, one
 *    thread, by definition) and against the FMA peak estimate of the threads
 *    (2 FMA pipes x 8 lanes x 2 flops per cycle at the measured clock), and
 *    the prefill tok/s the projections alone allow for the 0.8B layer mix.
 * Times are medians of several runs (the machine may be shared). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench/bench.h"
#include "bench/bench_read.h"
#include "tmemrt/testing.h"
#include "typedmem/model.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *alloc64(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (p) memset(p, 0, (bytes + 63) & ~(size_t)63);
    return p;
}

/* ---- the streaming-read baseline ---- */

/* Medians of wall-clock seconds and of process CPU seconds per thread (the
 * second is what the run would take had it the cores to itself; spinning
 * waits count, so it is not flattering). */
typedef struct timing { double wall, cpu; } timing;

static double process_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static timing timing_median(double *wall, double *cpu, int reps) {
    return (timing){median(wall, reps), median(cpu, reps)};
}

static timing time_read(tmrt_testing_pool *pool, const void *buf, size_t bytes, int streams, int reps) {
    bench_read_job job = {.words = buf, .streams = streams};
    double t[16], c[16];
    for (int r = 0; r < reps; r++) {
        double c0 = process_cpu(), t0 = now();
        tmrt_testing_pool_for(pool, (int64_t)(bytes / 4096), 16, bench_read_task, &job);
        t[r] = now() - t0;
        c[r] = (process_cpu() - c0) / tmrt_testing_pool_threads(pool);
    }
    volatile uint64_t sink = job.sums[0];
    (void)sink;
    return timing_median(t, c, reps);
}

/* ---- clock and FMA peak ---- */

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Cycles per second of CPU time from a chain of dependent adds (one cycle
 * each): the clock while we run, whoever else shares the machine. */
static double measure_hz(void) {
#if defined(__x86_64__) || defined(__aarch64__)
    const long iters = 50 * 1000 * 1000;
    double best = 0.0;
    for (int r = 0; r < 3; r++) {
        uint64_t x = 0;
        double t0 = cpu_now();
        for (long i = 0; i < iters; i++)
#if defined(__x86_64__)
            __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
#else
            __asm__ volatile("add %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1"
                             : "+r"(x));
#endif
        double hz = 4.0 * (double)iters / (cpu_now() - t0);
        if (hz > best) best = hz;
    }
    return best;
#else
    return 0.0;
#endif
}

/* ---- matmul timing ---- */

typedef struct mat {
    tmrt_testing_matrix w;
    void *data;
    float *x, *y;
    void *scratch;
} mat;

static bool mat_make(mat *m, uint32_t type, int64_t n_in, int64_t n_out, int64_t n_tok) {
    memset(m, 0, sizeof *m);
    m->w = (tmrt_testing_matrix){.type = type, .n_in = n_in, .n_out = n_out,
                                 .row_bytes = tmrt_testing_row_bytes(type, n_in)};
    m->data = alloc64(m->w.row_bytes * (size_t)n_out);
    m->x = alloc64((size_t)(n_in * n_tok) * sizeof(float));
    m->y = alloc64((size_t)(n_out * n_tok) * sizeof(float));
    size_t sb = tmrt_testing_matmul_scratch_bytes(&m->w, n_tok, 2);
    m->scratch = sb ? alloc64(sb) : NULL;
    if (!m->data || !m->x || !m->y || (sb && !m->scratch)) return false;
    m->w.data = m->data;
    /* plausible weights: quantise a few random rows and repeat them (the
     * values do not change the speed; quantising 100+ MB would) */
    float row[8192];
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t o = 0; o < n_out; o++) {
        char *dst = (char *)m->data + (size_t)o * m->w.row_bytes;
        if (o < 16) {
            for (int64_t i = 0; i < n_in; i++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                row[i] = (float)((int64_t)(s >> 40) - (1 << 23)) * (0.05f / (1 << 23));
            }
            if (tmrt_testing_quantize_row(type, row, dst, n_in) != TMEM_OK) return false;
        } else {
            memcpy(dst, (char *)m->data + (size_t)(o % 16) * m->w.row_bytes, m->w.row_bytes);
        }
    }
    for (int64_t i = 0; i < n_in * n_tok; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        m->x[i] = (float)((int64_t)(s >> 40) - (1 << 23)) * (1.0f / (1 << 23));
    }
    return true;
}

static void mat_free(mat *m) {
    free(m->data);
    free(m->x);
    free(m->y);
    free(m->scratch);
}

static timing time_matmul(mat *m, int64_t n_tok, tmrt_testing_pool *pool, int reps, bool ref) {
    double t[16], c[16];
    for (int r = 0; r < reps; r++) {
        double c0 = process_cpu(), t0 = now();
        if (ref) tmrt_testing_matmul_ref(&m->w, m->x, (size_t)m->w.n_in, n_tok, m->y, (size_t)m->w.n_out);
        else tmrt_testing_matmul(&m->w, m->x, (size_t)m->w.n_in, n_tok, m->y, (size_t)m->w.n_out, m->scratch, pool);
        t[r] = now() - t0;
        c[r] = (process_cpu() - c0) / tmrt_testing_pool_threads(pool);
    }
    return timing_median(t, c, reps);
}

/* ---- the bench ---- */

static const char *type_name(uint32_t type) {
    tmem_ggml_type_info info;
    return tmem_ggml_type_get_info(type, &info) == TMEM_OK ? info.name : "?";
}

/* The Qwen3.5-0.8B projections (n_in -> n_out) and how many of each a
 * forward pass runs: 24 layers, 18 Gated DeltaNet and 6 full attention. */
typedef struct shape { const char *what; int64_t n_in, n_out; int count; } shape;
static const shape qwen_shapes[] = {
    {"ffn_gate/up", 1024, 3584, 48},
    {"ffn_down", 3584, 1024, 24},
    {"deltanet qkv", 1024, 6144, 18},
    {"deltanet z", 1024, 2048, 18},
    {"deltanet out", 2048, 1024, 18},
    {"attn q+gate", 1024, 4096, 6},
    {"attn k/v", 1024, 512, 12},
    {"attn out", 2048, 1024, 6},
};
#define N_SHAPES (int)(sizeof qwen_shapes / sizeof qwen_shapes[0])

int tmem_bench_kern(int argc, char **argv, bool json) {
    bool quick = false;
    int64_t mb = 128, tokens = 256;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--mb") && i + 1 < argc) mb = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) tokens = atoll(argv[++i]);
        else if (strcmp(argv[i], "--json")) {
            fprintf(stderr, "usage: tmem bench kern [--json] [--quick] [--mb N] [--tokens N]\n");
            return 2;
        }
    }
    if (quick) {
        mb = 2;
        tokens = 8;
    }
    if (mb < 1 || mb > 4096 || tokens < 1 || tokens > 4096) {
        fprintf(stderr, "tmem bench kern: --mb 1..4096, --tokens 1..4096\n");
        return 2;
    }
    const int reps = quick ? 3 : 7;
    tmrt_testing_pool *pools[2] = {NULL, NULL};
    if (tmrt_testing_pool_create(1, &pools[0]) != TMEM_OK || tmrt_testing_pool_create(2, &pools[1]) != TMEM_OK) {
        tmrt_testing_pool_destroy(pools[0]);
        fprintf(stderr, "tmem bench kern: no thread pool\n");
        return 1;
    }
    const double hz = quick ? 0.0 : measure_hz();
    if (json) printf("{\"bench\":\"kern\",\"clock_ghz\":%.3f,\"decode\":[", hz * 1e-9);
    else {
        printf("runtime kernels (clock %.2f GHz measured)\n", hz * 1e-9);
        printf("decode: mat-vec over %lld MiB of weights vs a streaming read of the same bytes\n",
               (long long)mb);
        printf("  (wall clock | CPU time per thread, what the run takes with the cores to itself;\n"
               "  read: 8 streams per thread, the baseline | read1: 1 stream, for context)\n");
        printf("  %-5s %3s %10s %10s %7s | %9s %9s %7s | %8s %7s\n", "type", "thr", "ours GB/s",
               "read GB/s", "ratio", "cpu ours", "cpu read", "ratio", "read1", "ratio");
    }
    const uint32_t dtypes[] = {TMEM_GGML_F32, TMEM_GGML_F16, TMEM_GGML_BF16, TMEM_GGML_Q8_0,
                               TMEM_GGML_Q4_K, TMEM_GGML_Q6_K};
    int rows = 0;
    for (size_t ti = 0; ti < sizeof dtypes / sizeof dtypes[0]; ti++) {
        const int64_t n_in = 2048;
        const size_t rb = tmrt_testing_row_bytes(dtypes[ti], n_in);
        const int64_t n_out = (int64_t)((size_t)mb * 1024 * 1024 / rb);
        mat m;
        if (!mat_make(&m, dtypes[ti], n_in, n_out, 1)) {
            fprintf(stderr, "tmem bench kern: out of memory\n");
            return 1;
        }
        const size_t bytes = rb * (size_t)n_out;
        for (int th = 1; th <= 2; th++) {
            time_matmul(&m, 1, pools[th - 1], 1, false); /* warm: page in */
            time_read(pools[th - 1], m.data, bytes, BENCH_READ_STREAMS, 1);
            timing tm = time_matmul(&m, 1, pools[th - 1], reps, false);
            timing tr = time_read(pools[th - 1], m.data, bytes, BENCH_READ_STREAMS, reps);
            timing t1 = time_read(pools[th - 1], m.data, bytes, 1, reps);
            double gm = (double)bytes / tm.wall * 1e-9, gr = (double)bytes / tr.wall * 1e-9;
            double cm = (double)bytes / tm.cpu * 1e-9, cr = (double)bytes / tr.cpu * 1e-9;
            double c1 = (double)bytes / t1.cpu * 1e-9;
            if (json)
                printf("%s{\"type\":\"%s\",\"threads\":%d,\"bytes\":%zu,\"ours_gbps\":%.2f,"
                       "\"read_gbps\":%.2f,\"ratio\":%.3f,\"cpu_ours_gbps\":%.2f,"
                       "\"cpu_read_gbps\":%.2f,\"cpu_ratio\":%.3f,\"cpu_read1_gbps\":%.2f,"
                       "\"cpu_ratio1\":%.3f}",
                       rows++ ? "," : "", type_name(dtypes[ti]), th, bytes, gm, gr, gm / gr, cm,
                       cr, cm / cr, c1, cm / c1);
            else
                printf("  %-5s %3d %10.2f %10.2f %6.1f%% | %9.2f %9.2f %6.1f%% | %8.2f %6.1f%%\n",
                       type_name(dtypes[ti]), th, gm, gr, 100.0 * gm / gr, cm, cr, 100.0 * cm / cr,
                       c1, 100.0 * cm / c1);
        }
        mat_free(&m);
    }

    if (json) printf("],\"prefill_tokens\":%lld,\"prefill\":[", (long long)tokens);
    else
        printf("prefill: %lld tokens, 2 threads, Qwen3.5-0.8B projections; scalar ref 1 thread\n"
               "  (GFLOP/s by wall clock and by CPU time per thread; the ref by CPU time;\n"
               "  x ref: ours (2 threads) / ref (1 thread), both by CPU time; of peak: ours\n"
               "  by CPU time / the FMA peak of 2 cores)\n"
               "  %-5s %-13s %9s %9s %9s %8s %8s\n", (long long)tokens, "type", "shape",
               "ours", "ours cpu", "ref", "x ref", "of peak");
    const double peak2 = 2.0 * 32.0 * hz * 1e-9;
    const uint32_t ptypes[] = {TMEM_GGML_F16, TMEM_GGML_Q8_0, TMEM_GGML_Q4_K};
    rows = 0;
    double layer_s[3] = {0}, layer_cpu[3] = {0};
    for (size_t ti = 0; ti < sizeof ptypes / sizeof ptypes[0]; ti++) {
        for (int s = 0; s < N_SHAPES; s++) {
            const shape *sh = &qwen_shapes[s];
            mat m;
            if (!mat_make(&m, ptypes[ti], sh->n_in, sh->n_out, tokens)) {
                fprintf(stderr, "tmem bench kern: out of memory\n");
                return 1;
            }
            time_matmul(&m, tokens, pools[1], 1, false);
            timing tm = time_matmul(&m, tokens, pools[1], reps, false);
            const int64_t ref_tok = tokens < 4 ? tokens : 4;
            timing tref = time_matmul(&m, ref_tok, NULL, quick ? 1 : 3, true);
            const double flops = 2.0 * (double)(sh->n_in * sh->n_out);
            double gf = flops * (double)tokens / tm.wall * 1e-9;
            double cgf = flops * (double)tokens / tm.cpu * 1e-9;
            double gref = flops * (double)ref_tok / tref.cpu * 1e-9;
            layer_s[ti] += tm.wall * sh->count;
            layer_cpu[ti] += tm.cpu * sh->count;
            if (json)
                printf("%s{\"type\":\"%s\",\"shape\":\"%s\",\"n_in\":%lld,\"n_out\":%lld,"
                       "\"ours_gflops\":%.2f,\"cpu_ours_gflops\":%.2f,\"ref_gflops\":%.3f,"
                       "\"vs_ref\":%.1f,\"vs_peak\":%.3f}",
                       rows++ ? "," : "", type_name(ptypes[ti]), sh->what, (long long)sh->n_in,
                       (long long)sh->n_out, gf, cgf, gref, cgf / gref,
                       peak2 > 0 ? cgf / peak2 : 0.0);
            else
                printf("  %-5s %-13s %9.1f %9.1f %9.2f %7.1fx %7.1f%%\n", type_name(ptypes[ti]),
                       sh->what, gf, cgf, gref, cgf / gref, peak2 > 0 ? 100.0 * cgf / peak2 : 0.0);
            mat_free(&m);
        }
    }
    if (json) {
        printf("],\"fma_peak_gflops_2t\":%.1f,\"projection_tok_s\":{", peak2);
        for (size_t ti = 0; ti < 3; ti++)
            printf("%s\"%s\":%.1f", ti ? "," : "", type_name(ptypes[ti]),
                   (double)tokens / layer_s[ti]);
        printf("},\"cpu_projection_tok_s\":{");
        for (size_t ti = 0; ti < 3; ti++)
            printf("%s\"%s\":%.1f", ti ? "," : "", type_name(ptypes[ti]),
                   (double)tokens / layer_cpu[ti]);
        printf("},\"command\":\"tmem bench kern --json%s\"}\n", quick ? " --quick" : "");
    } else {
        printf("FMA peak estimate, 2 threads: %.1f GFLOP/s\n", peak2);
        for (size_t ti = 0; ti < 3; ti++)
            printf("prefill tok/s from the projections alone (0.8B layer mix, %s): %.1f wall,"
                   " %.1f by CPU time\n", type_name(ptypes[ti]), (double)tokens / layer_s[ti],
                   (double)tokens / layer_cpu[ti]);
        printf("reproduce: tmem bench kern%s\n", quick ? " --quick" : "");
    }
    tmrt_testing_pool_destroy(pools[0]);
    tmrt_testing_pool_destroy(pools[1]);
    return 0;
}

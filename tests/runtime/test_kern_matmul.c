/* test_kern_matmul: tmrt__kern_matmul (SIMD where the CPU has it) against the
 * scalar tmrt__kern_matmul_ref on random shapes of every weight type: n_in odd
 * multiples of the block (plus odd float widths), odd n_out, n_tok 1..37,
 * padded ldx/ldy and weight rows; y's padding untouched; the same bits for
 * 1..4 threads and for a token alone or in a batch; tmrt__kern_get_row.
 * Run once per instruction set this CPU has (TMRT_KERN_ISA: the widest,
 * then avx2, then scalar), so the AVX-512, AVX2 and scalar tiles each meet
 * the oracle on the same odd shapes and tails.
 * Tolerance: |dy| <= 1e-5 * sum_i |W x| (f32 reassociation; the integer
 * block sums are exact). Fixed seed. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include "kern_test_util.h"

static uint64_t seed;

/* sum_i |W[o][i] * x[i]| with W dequantised: the scale of the rounding. */
static double magnitude(const kern_wmat *w, const float *wrow_f32, const float *x) {
    double m = 0.0;
    for (int64_t i = 0; i < w->n_in; i++) m += fabs((double)wrow_f32[i] * x[i]);
    return m;
}

static void check_shape(tmem_rng *r, uint32_t type, int64_t n_in, int64_t n_out, int64_t n_tok,
                        kern_pool **pools, int n_pools) {
    const size_t ldx = (size_t)n_in + tmem_rng_range(r, 0, 9);
    const size_t ldy = (size_t)n_out + tmem_rng_range(r, 0, 5);
    const size_t wpad = (size_t)tmem_rng_range(r, 0, 1) * 64;
    kern_wmat w = kern_test_wmat(r, type, n_in, n_out, wpad, 0.1f, NULL);
    float *x = kern_test_alloc(ldx * (size_t)n_tok * sizeof(float));
    kern_test_fill(r, x, (int64_t)(ldx * (size_t)n_tok), 1.0f);
    float *want = kern_test_alloc(ldy * (size_t)n_tok * sizeof(float));
    float *got = kern_test_alloc(ldy * (size_t)n_tok * sizeof(float));
    float *first = kern_test_alloc(ldy * (size_t)n_tok * sizeof(float));
    float *wrow = kern_test_alloc((size_t)n_in * sizeof(float));
    void *scratch = kern_test_alloc(tmrt__kern_matmul_scratch_bytes(&w, n_tok, 4));
    tmrt__kern_matmul_ref(&w, x, ldx, n_tok, want, ldy);

    for (int p = 0; p < n_pools; p++) {
        for (size_t i = 0; i < ldy * (size_t)n_tok; i++) got[i] = -12345.0f;
        tmrt__kern_matmul(&w, x, ldx, n_tok, got, ldy, scratch, pools[p]);
        int bad = 0, pad_bad = 0;
        for (int64_t t = 0; t < n_tok; t++)
            for (size_t o = (size_t)n_out; o < ldy; o++)
                if (got[(size_t)t * ldy + o] != -12345.0f) pad_bad++;
        if (p == 0) {
            double worst = 0.0;
            for (int64_t o = 0; o < n_out; o++) {
                tmrt__kern_get_row(&w, o, wrow);
                for (int64_t t = 0; t < n_tok; t++) {
                    double mag = magnitude(&w, wrow, x + (size_t)t * ldx);
                    double d = fabs((double)got[(size_t)t * ldy + (size_t)o] -
                                    want[(size_t)t * ldy + (size_t)o]);
                    if (d > 1e-5 * mag + 1e-30) bad++;
                    if (mag > 0) worst = fmax(worst, d / mag);
                }
            }
            memcpy(first, got, ldy * (size_t)n_tok * sizeof(float));
            CHECK_MSG(bad == 0, "%s %lldx%lld tok %lld: %d outputs off the reference (worst %.3g)",
                      kern_test_type_name(type), (long long)n_out, (long long)n_in,
                      (long long)n_tok, bad, worst);
        } else {
            for (int64_t t = 0; t < n_tok; t++)
                if (memcmp(first + (size_t)t * ldy, got + (size_t)t * ldy,
                           (size_t)n_out * sizeof(float)))
                    bad++;
            CHECK_MSG(bad == 0, "%s %lldx%lld tok %lld: %d token rows differ with %d threads",
                      kern_test_type_name(type), (long long)n_out, (long long)n_in,
                      (long long)n_tok, bad, tmrt__kern_pool_threads(pools[p]));
        }
        CHECK_MSG(pad_bad == 0, "%s: %d padding floats of y written", kern_test_type_name(type),
                  pad_bad);
    }
    free((void *)w.data);
    free(x);
    free(want);
    free(got);
    free(first);
    free(wrow);
    free(scratch);
}

static void test_random_shapes(void) {
    tmem_rng r;
    tmem_rng_init(&r, seed);
    void *mem[4];
    kern_pool *pools[5] = {NULL};
    for (int n = 1; n <= 4; n++) pools[n] = kern_test_pool(n, &mem[n - 1]);
    for (int ti = 0; ti < KERN_TEST_NTYPES; ti++) {
        uint32_t type = kern_test_types[ti];
        const kern_type_traits *tr = tmrt__kern__traits(type);
        for (int trial = 0; trial < 14; trial++) {
            int64_t n_in;
            if (tr->block == 1)
                n_in = trial % 3 == 0 ? (int64_t)tmem_rng_range(&r, 1, 67)
                                      : 64 * (int64_t)tmem_rng_range(&r, 1, 24) + (trial & 1);
            else
                n_in = tr->block *
                       (2 * (int64_t)tmem_rng_range(&r, 0, tr->block == 32 ? 40 : 8) + 1);
            int64_t n_out = 2 * (int64_t)tmem_rng_range(&r, 0, 40) + 1;
            int64_t n_tok = trial < 4 ? 1 : (int64_t)tmem_rng_range(&r, 1, 37);
            check_shape(&r, type, n_in, n_out, n_tok, pools, 5);
        }
        /* one bigger than the reference's 4096-element x slice */
        check_shape(&r, type, tr->block == 1 ? 4801 : 4864 + (tr->block == 32 ? 32 : 0), 37, 5,
                    pools, 5);
    }
    for (int n = 1; n <= 4; n++) {
        tmrt__kern_pool_fini(pools[n]);
        free(mem[n - 1]);
    }
}

/* The reference itself against a double-precision dequantised product. */
static void test_ref_vs_dense(void) {
    tmem_rng r;
    tmem_rng_init(&r, seed + 7);
    for (int ti = 0; ti < KERN_TEST_NTYPES; ti++) {
        uint32_t type = kern_test_types[ti];
        int64_t n_in = 512, n_out = 9, n_tok = 3;
        kern_wmat w = kern_test_wmat(&r, type, n_in, n_out, 0, 0.1f, NULL);
        float x[3 * 512], y[3 * 9], wrow[512];
        kern_test_fill(&r, x, n_in * n_tok, 1.0f);
        tmrt__kern_matmul_ref(&w, x, (size_t)n_in, n_tok, y, (size_t)n_out);
        int bad = 0;
        for (int64_t o = 0; o < n_out; o++) {
            tmrt__kern_get_row(&w, o, wrow);
            for (int64_t t = 0; t < n_tok; t++) {
                double exact = 0.0, mag = 0.0;
                for (int64_t i = 0; i < n_in; i++) {
                    exact += (double)wrow[i] * x[t * n_in + i];
                    mag += fabs((double)wrow[i] * x[t * n_in + i]);
                }
                /* x's Q8 rounding: at most half a step of 1/127 of the block max (<= 4.4) */
                double tol = tmrt__kern__traits(type)->xform == KERN_X_F32 ? 1e-5 * mag : 0.02 * mag;
                if (fabs(y[t * n_out + o] - exact) > tol) bad++;
            }
        }
        CHECK_MSG(bad == 0, "%s: %d reference outputs off the dense product",
                  kern_test_type_name(type), bad);
        free((void *)w.data);
    }
}

static void test_scratch_and_support(void) {
    kern_wmat w = {.type = TMEM_GGML_F16, .n_in = 1024, .n_out = 8, .row_bytes = 2048};
    CHECK(tmrt__kern_matmul_scratch_bytes(&w, 7, 2) == 0);
    w.type = TMEM_GGML_Q8_0;
    CHECK(tmrt__kern_matmul_scratch_bytes(&w, 3, 2) == (3 * 32 * 34 + 63) / 64 * 64);
    w.type = TMEM_GGML_Q4_K;
    CHECK(tmrt__kern_matmul_scratch_bytes(&w, 2, 1) == (2 * 4 * 292 + 63) / 64 * 64);
    CHECK(tmrt__kern_type_supported(TMEM_GGML_Q6_K, 512));
    CHECK(!tmrt__kern_type_supported(TMEM_GGML_Q6_K, 500));
    CHECK(!tmrt__kern_type_supported(TMEM_GGML_Q4_0, 512));
    CHECK(tmrt__kern_type_supported(TMEM_GGML_BF16, 7));
    CHECK(!tmrt__kern_type_supported(TMEM_GGML_F32, 0));
}

/* A token's outputs do not depend on the batch it is computed in: prefill
 * tiles (several tokens) and decode tiles (one token) give the same bits,
 * so chunked prefill and decode agree exactly. */
static void test_batch_invariance(void) {
    tmem_rng r;
    tmem_rng_init(&r, seed + 11);
    void *mem;
    kern_pool *pool = kern_test_pool(2, &mem);
    for (int ti = 0; ti < KERN_TEST_NTYPES; ti++) {
        uint32_t type = kern_test_types[ti];
        const int64_t n_in = tmrt__kern__traits(type)->block == 1 ? 301 : 768, n_out = 53, n_tok = 11;
        kern_wmat w = kern_test_wmat(&r, type, n_in, n_out, 0, 0.1f, NULL);
        float *x = kern_test_alloc((size_t)(n_in * n_tok) * sizeof(float));
        float *all = kern_test_alloc((size_t)(n_out * n_tok) * sizeof(float));
        float *one = kern_test_alloc((size_t)n_out * sizeof(float));
        void *scratch = kern_test_alloc(tmrt__kern_matmul_scratch_bytes(&w, n_tok, 2));
        kern_test_fill(&r, x, n_in * n_tok, 1.0f);
        tmrt__kern_matmul(&w, x, (size_t)n_in, n_tok, all, (size_t)n_out, scratch, pool);
        int bad = 0;
        for (int64_t t = 0; t < n_tok; t++) {
            tmrt__kern_matmul(&w, x + t * n_in, (size_t)n_in, 1, one, (size_t)n_out, scratch, pool);
            bad += memcmp(one, all + t * n_out, (size_t)n_out * sizeof(float)) != 0;
        }
        CHECK_MSG(bad == 0, "%s: %d tokens differ alone vs in a batch of %lld",
                  kern_test_type_name(type), bad, (long long)n_tok);
        free((void *)w.data);
        free(x);
        free(all);
        free(one);
        free(scratch);
    }
    tmrt__kern_pool_fini(pool);
    free(mem);
}

#if defined(__aarch64__)
/* Every NEON level this CPU has (plain ARMv8.0, then +dotprod), tile by
 * tile, against the oracle on odd shapes: quantised tiles must give the
 * oracle's bits (exact integer block sums, the oracle's f32 expression),
 * float tiles the reassociation tolerance. Under qemu, -cpu cortex-a53 has
 * no dotprod (only the first level runs), -cpu max has it. */
static void test_neon_levels(void) {
    const unsigned have = tmrt__kern__cpu_features();
    printf("   aarch64 features: neon%s%s%s\n", (have & KERN_CPU_FP16) ? " fp16" : "",
           (have & KERN_CPU_DOTPROD) ? " dotprod" : "", (have & KERN_CPU_I8MM) ? " i8mm" : "");
    CHECK(have & KERN_CPU_NEON);
    const unsigned levels[2] = {KERN_CPU_NEON, KERN_CPU_NEON | KERN_CPU_DOTPROD};
    tmem_rng r;
    tmem_rng_init(&r, seed + 11);
    int cases = 0;
    for (int li = 0; li < 2; li++) {
        if ((levels[li] & have) != levels[li]) {
            printf("   level %d (dotprod) not on this CPU: not run\n", li);
            continue;
        }
        for (int ti = 0; ti < KERN_TEST_NTYPES; ti++) {
            const uint32_t type = kern_test_types[ti];
            const kern_type_traits *tr = tmrt__kern__traits(type);
            kern_tile_fn tile = tmrt__kern__tile_neon(type, levels[li]);
            CHECK(tile != NULL);
            for (int trial = 0; trial < 6; trial++) {
                const int64_t n_in = tr->block == 1 ? (int64_t)tmem_rng_range(&r, 1, 300)
                                                    : tr->block * (int64_t)tmem_rng_range(&r, 1, 7);
                const int64_t n_out = (int64_t)tmem_rng_range(&r, 1, 29);
                const int64_t n_tok = (int64_t)tmem_rng_range(&r, 1, 9);
                kern_wmat w = kern_test_wmat(&r, type, n_in, n_out, 0, 0.1f, NULL);
                float *x = kern_test_alloc((size_t)(n_in * n_tok) * sizeof(float));
                kern_test_fill(&r, x, n_in * n_tok, 1.0f);
                float *want = kern_test_alloc((size_t)(n_out * n_tok) * sizeof(float));
                float *got = kern_test_alloc((size_t)(n_out * n_tok) * sizeof(float));
                float *wrow = kern_test_alloc((size_t)n_in * sizeof(float));
                tmrt__kern_matmul_ref(&w, x, (size_t)n_in, n_tok, want, (size_t)n_out);
                const size_t xs = tr->xform == KERN_X_F32 ? (size_t)n_in * sizeof(float)
                                                          : tmrt__kern__xrow_bytes(tr->xform, n_in);
                void *xq = tr->xform == KERN_X_F32 ? NULL : kern_test_alloc(xs * (size_t)n_tok);
                for (int64_t t = 0; t < n_tok; t++) {
                    if (tr->xform == KERN_X_Q8_0)
                        tmrt__kern__quantize_q8_0(x + t * n_in, (void *)((char *)xq + t * xs), n_in);
                    else if (tr->xform == KERN_X_Q8_K)
                        tmrt__kern__quantize_q8_k(x + t * n_in, (void *)((char *)xq + t * xs), n_in);
                }
                /* in two row ranges, as two threads would */
                const int64_t mid = n_out / 2;
                tile(&w, xq ? xq : x, xs, n_tok, 0, mid, got, (size_t)n_out);
                tile(&w, xq ? xq : x, xs, n_tok, mid, n_out, got, (size_t)n_out);
                int bad = 0;
                for (int64_t o = 0; o < n_out; o++) {
                    tmrt__kern_get_row(&w, o, wrow);
                    for (int64_t t = 0; t < n_tok; t++) {
                        const float g = got[t * n_out + o], e = want[t * n_out + o];
                        if (xq) bad += memcmp(&g, &e, sizeof g) != 0;
                        else bad += fabs((double)g - e) > 1e-5 * magnitude(&w, wrow, x + t * n_in) + 1e-30;
                    }
                }
                CHECK_MSG(bad == 0, "neon level %d %s %lldx%lld tok %lld: %d outputs off the oracle", li,
                          kern_test_type_name(type), (long long)n_out, (long long)n_in,
                          (long long)n_tok, bad);
                cases++;
                free((void *)w.data);
                free(x);
                free(want);
                free(got);
                free(wrow);
                free(xq);
            }
        }
    }
    printf("   %d NEON tile cases checked against the oracle\n", cases);
}
#endif

/* The path each type takes follows TMRT_KERN_ISA and the CPU. */
static void test_paths(void) {
    char buf[512];
    size_t n = tmrt__kern_paths(buf, sizeof buf);
    CHECK(n > 0 && n < sizeof buf && strlen(buf) == n);
    bool quant512 = strstr(buf, "Q4_K avx512-vnni") != NULL;
    const char *isa = getenv("TMRT_KERN_ISA");
    if (isa && !strcmp(isa, "scalar")) CHECK_MSG(strstr(buf, "Q4_K scalar") && strstr(buf, "F16 scalar"), "%s", buf);
    else if (isa && !strcmp(isa, "avx2"))
        CHECK_MSG(!quant512 && (!tmrt__kern__have_avx2() || strstr(buf, "Q4_K avx2")), "%s", buf);
    else CHECK_MSG(quant512 == tmrt__kern__have_avx512(), "%s", buf);
    CHECK(tmrt__kern_paths(buf, 8) == n && strlen(buf) == 7); /* truncated, NUL-terminated */
    printf("  kernels (TMRT_KERN_ISA=%s): %s\n", isa ? isa : "", (tmrt__kern_paths(buf, sizeof buf), buf));
}

int main(void) {
    seed = tmem_test_seed(0x6d61746d756c3031ull);
    RUN(test_scratch_and_support);
    RUN(test_ref_vs_dense);
    /* the widest paths first, then each narrower one on the same shapes */
#if defined(__aarch64__)
    /* NEON, then scalar (there is no narrower NEON cap; test_neon_levels
     * takes each NEON level in turn) */
    static const char *const isas[] = {NULL, "scalar"};
#else
    static const char *const isas[] = {NULL, "avx2", "scalar"};
#endif
    for (int i = 0; i < (int)(sizeof isas / sizeof isas[0]); i++) {
        if (isas[i]) setenv("TMRT_KERN_ISA", isas[i], 1);
        else unsetenv("TMRT_KERN_ISA");
        RUN(test_paths);
        RUN(test_random_shapes);
        RUN(test_batch_invariance);
    }
    unsetenv("TMRT_KERN_ISA");
#if defined(__aarch64__)
    RUN(test_neon_levels);
#endif
    return tmem_test_finish();
}

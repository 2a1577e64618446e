/* test_kern_quant: f16/bf16 conversions, quantise -> dequantise round trips
 * of the six weight types with per-element error bounds, the block layouts
 * against hand-built blocks, and every type's dot product against
 * dequantise-then-f32. Fixed seed (TMEM_SEED replays). */
#include "kern_test_util.h"
#include "kern/kern_half.h"

static uint64_t seed;

static void test_f16_exhaustive(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kern_f16_to_f32((uint16_t)h);
        uint16_t back = kern_f32_to_f16(f);
        if (isnan(f)) {
            if (!isnan(kern_f16_to_f32(back))) bad++;
        } else if (back != h) {
            bad++;
        }
    }
    CHECK_MSG(bad == 0, "%d f16 values do not round-trip", bad);
    CHECK(kern_f16_to_f32(0x3c00) == 1.0f);
    CHECK(kern_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    CHECK(kern_f16_to_f32(0xfbff) == -65504.0f);
    CHECK(kern_f32_to_f16(65520.0f) == 0x7c00);        /* rounds to infinity */
    CHECK(kern_f32_to_f16(65519.0f) == 0x7bff);
    CHECK(kern_f32_to_f16(ldexpf(1.0f, -25)) == 0x0000); /* tie to even: 0 */
    CHECK(kern_f32_to_f16(ldexpf(3.0f, -25)) == 0x0002); /* tie to even: 2 */
    CHECK(kern_f32_to_f16(1.0f + ldexpf(1.0f, -11)) == 0x3c00); /* tie down to even */
    CHECK(kern_f32_to_f16(1.0f + ldexpf(3.0f, -11)) == 0x3c02); /* tie up to even */
}

/* f32 -> f16 picks the nearest f16 (its neighbours are no closer). */
static void test_f16_nearest(void) {
    tmem_rng r;
    tmem_rng_init(&r, seed);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        float f = ldexpf(kern_test_uniform(&r), (int)tmem_rng_range(&r, 0, 40) - 26);
        uint16_t h = kern_f32_to_f16(f);
        double err = fabs((double)kern_f16_to_f32(h) - f);
        for (int d = -1; d <= 1; d += 2) {
            uint16_t nb = (uint16_t)(h + d);
            if ((nb & 0x7c00) == 0x7c00 || ((h ^ nb) & 0x8000)) continue;
            if (fabs((double)kern_f16_to_f32(nb) - f) < err) bad++;
        }
    }
    CHECK_MSG(bad == 0, "%d conversions not to the nearest f16", bad);
}

static void test_bf16(void) {
    CHECK(kern_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(kern_bf16_to_f32(0x3f80) == 1.0f);
    CHECK(kern_f32_to_bf16(kern_bits_f32(0x3f808000u)) == 0x3f80); /* tie to even */
    CHECK(kern_f32_to_bf16(kern_bits_f32(0x3f818000u)) == 0x3f82);
    CHECK(isnan(kern_bf16_to_f32(kern_f32_to_bf16(NAN))));
    CHECK(isnan(kern_bf16_to_f32(kern_f32_to_bf16(kern_bits_f32(0x7f800001u)))));
}

/* Hand-built blocks decode as ggml's dequantize_row_* would. */
static void test_layouts(void) {
    kern_block_q8_0 q8 = {.d = 0x3800 /* 0.5 */};
    for (int j = 0; j < 32; j++) q8.qs[j] = (int8_t)(j - 16);
    float out[256];
    CHECK(tmrt__kern_dequantize_row(TMEM_GGML_Q8_0, &q8, out, 32));
    CHECK(out[0] == -8.0f && out[31] == 7.5f);

    kern_block_q4_k q4;
    memset(&q4, 0, sizeof q4);
    q4.d = 0x3c00;     /* 1.0 */
    q4.dmin = 0x3800;  /* 0.5 */
    /* sub-block 1: scale 3, min 2; sub-block 5: scale 33 (0b100001), min 18 (0b010010) */
    q4.scales[1] = 3;
    q4.scales[5] = 2;
    q4.scales[9] = (uint8_t)((33 & 0xf) | ((18 & 0xf) << 4));
    q4.scales[1] |= (uint8_t)((33 >> 4) << 6);
    q4.scales[5] |= (uint8_t)((18 >> 4) << 6);
    q4.qs[0] = 0x70;           /* weight 32 (sub-block 1) = high nibble 7 */
    q4.qs[64 + 3] = 0x0c;      /* chunk 2, low nibble: weight 128+3 in sub-block 4 */
    q4.qs[64 + 5] = 0x90;      /* chunk 2, high nibble: weight 160+5 in sub-block 5 */
    uint8_t sc, m;
    kern_q4k_scale_min(q4.scales, 5, &sc, &m);
    CHECK(sc == 33 && m == 18);
    kern_q4k_scale_min(q4.scales, 1, &sc, &m);
    CHECK(sc == 3 && m == 2);
    CHECK(tmrt__kern_dequantize_row(TMEM_GGML_Q4_K, &q4, out, 256));
    CHECK(out[32] == 3.0f * 7.0f - 1.0f);
    CHECK(out[33] == -1.0f);
    CHECK(out[165] == 33.0f * 9.0f - 9.0f);
    CHECK(out[131] == 0.0f); /* sub-block 4 has scale 0 */

    kern_block_q6_k q6;
    memset(&q6, 0, sizeof q6);
    q6.d = 0x3c00;
    for (int g = 0; g < 16; g++) q6.scales[g] = (int8_t)(g + 1);
    /* weight 128 + 64 + 5 (half 1, l=5, third quarter): high nibble of
     * ql[64+5], bits 4-5 of qh[32+5] */
    q6.ql[64 + 5] = 0xa0;           /* 10 */
    q6.qh[32 + 5] = 0x30;           /* 3 << 4 */
    CHECK(tmrt__kern_dequantize_row(TMEM_GGML_Q6_K, &q6, out, 256));
    CHECK(out[197] == 13.0f * (float)((10 | (3 << 4)) - 32));
    CHECK(out[0] == 1.0f * -32.0f);
}

/* Round trips with per-element bounds, and RMS error figures. */
static void test_round_trip(void) {
    tmem_rng r;
    tmem_rng_init(&r, seed + 1);
    const int64_t n = 2048;
    float *x = kern_test_alloc(n * sizeof(float)), *y = kern_test_alloc(n * sizeof(float));
    void *q = kern_test_alloc(tmrt__kern_row_bytes(TMEM_GGML_F32, n));
    const double rms_limit[KERN_TEST_NTYPES] = {0.0, 3e-4, 3e-3, 0.01, 0.09, 0.025};
    for (int ti = 0; ti < KERN_TEST_NTYPES; ti++) {
        uint32_t type = kern_test_types[ti];
        double worst_rms = 0.0;
        for (int trial = 0; trial < 40; trial++) {
            /* the RMS figures (every 5th trial) at unit scale; the bounds
             * down to scales whose f16 block scales are subnormal */
            float scale = trial % 5 ? ldexpf(1.0f, (int)tmem_rng_range(&r, 0, 24) - 16) : 1.0f;
            kern_test_fill(&r, x, n, scale);
            if (trial % 5 == 1) /* a shifted block: all positive */
                for (int64_t i = 0; i < 256; i++) x[i] = fabsf(x[i]) + scale;
            if (trial % 5 == 2) /* an outlier and a zero block */
                for (int64_t i = 256; i < 512; i++) x[i] = i == 300 ? 50.0f * scale : 0.0f;
            REQUIRE(tmrt__kern_quantize_row(type, x, q, n));
            REQUIRE(tmrt__kern_dequantize_row(type, q, y, n));
            double se = 0.0, sx = 0.0;
            int bad = 0;
            for (int64_t i = 0; i < n; i++) {
                double e = fabs((double)y[i] - x[i]);
                se += e * e;
                sx += (double)x[i] * x[i];
                double bound = 0.0;
                if (type == TMEM_GGML_F16) bound = fmax(fabs(x[i]) * 0x1p-11, 0x1p-25);
                if (type == TMEM_GGML_BF16) bound = fabs(x[i]) * 0x1p-8;
                if (type == TMEM_GGML_Q8_0) {
                    const kern_block_q8_0 *b = (const kern_block_q8_0 *)q + i / 32;
                    float amax = 0.0f;
                    for (int64_t j = i / 32 * 32; j < i / 32 * 32 + 32; j++)
                        amax = fmaxf(amax, fabsf(x[j]));
                    const double d = amax / 127.0;
                    bound = 0.5 * d + 127.0 * fabs(d - kern_f16_to_f32(b->d));
                }
                if (type == TMEM_GGML_Q4_K) {
                    const kern_block_q4_k *b = (const kern_block_q4_k *)q + i / 256;
                    uint8_t sc, m;
                    kern_q4k_scale_min(b->scales, (int)(i % 256) / 32, &sc, &m);
                    bound = 0.5 * kern_f16_to_f32(b->d) * sc + kern_f16_to_f32(b->dmin);
                }
                if (type == TMEM_GGML_Q6_K) {
                    const kern_block_q6_k *b = (const kern_block_q6_k *)q + i / 256;
                    bound = 0.5 * kern_f16_to_f32(b->d) * b->scales[(i % 256) / 16];
                }
                if (e > bound * 1.0001 + 1e-30 * scale) bad++;
            }
            CHECK_MSG(bad == 0, "%s trial %d: %d elements beyond their bound",
                      kern_test_type_name(type), trial, bad);
            if (trial % 5 == 0) worst_rms = fmax(worst_rms, sqrt(se / sx));
        }
        printf("   %-5s relative RMS error %.3g (limit %.3g)\n", kern_test_type_name(type),
               worst_rms, rms_limit[ti]);
        CHECK_MSG(worst_rms <= rms_limit[ti], "%s rms %g", kern_test_type_name(type), worst_rms);
    }
    /* refused inputs write nothing */
    memset(q, 0x5a, 64);
    CHECK(!tmrt__kern_quantize_row(TMEM_GGML_Q4_K, x, q, 255));
    CHECK(!tmrt__kern_quantize_row(TMEM_GGML_Q4_0, x, q, 256));
    CHECK(!tmrt__kern_dequantize_row(TMEM_GGML_Q8_0, q, y, 33));
    CHECK(((unsigned char *)q)[0] == 0x5a);
    CHECK(tmrt__kern_row_bytes(TMEM_GGML_Q6_K, 512) == 420);
    CHECK(tmrt__kern_row_bytes(TMEM_GGML_Q4_K, 100) == 0);
    free(x);
    free(y);
    free(q);
}

/* Each type's dot product: exact integer sums against the dequantised
 * weights and the dequantised x rows, and within the quantisation error of
 * the f32 dot. */
static void test_dots(void) {
    tmem_rng r;
    tmem_rng_init(&r, seed + 2);
    const int64_t n = 4096;
    float *w = kern_test_alloc(n * sizeof(float)), *wd = kern_test_alloc(n * sizeof(float));
    float *x = kern_test_alloc(n * sizeof(float)), *xd = kern_test_alloc(n * sizeof(float));
    void *wq = kern_test_alloc(n * 4), *xq = kern_test_alloc(n * 4);
    for (int ti = 0; ti < KERN_TEST_NTYPES; ti++) {
        uint32_t type = kern_test_types[ti];
        const kern_type_traits *tr = tmrt__kern__traits(type);
        int bad_exact = 0, bad_f32 = 0;
        for (int trial = 0; trial < 30; trial++) {
            int64_t len = tr->block * (int64_t)tmem_rng_range(&r, 1, (uint64_t)(n / tr->block));
            kern_test_fill(&r, w, len, 0.05f);
            kern_test_fill(&r, x, len, 3.0f);
            REQUIRE(tmrt__kern_quantize_row(type, w, wq, len));
            REQUIRE(tmrt__kern_dequantize_row(type, wq, wd, len));
            if (tr->xform == KERN_X_F32) {
                memcpy(xq, x, (size_t)len * sizeof(float));
                memcpy(xd, x, (size_t)len * sizeof(float));
            } else if (tr->xform == KERN_X_Q8_0) {
                tmrt__kern__quantize_q8_0(x, xq, len);
                REQUIRE(tmrt__kern_dequantize_row(TMEM_GGML_Q8_0, xq, xd, len));
            } else {
                tmrt__kern__quantize_q8_k(x, xq, len);
                const kern_block_q8_k *b = xq;
                for (int64_t i = 0; i < len; i++) xd[i] = b[i / 256].d * b[i / 256].qs[i % 256];
                for (int64_t k = 0; k < len / 16; k++) {
                    int s = 0;
                    for (int j = 0; j < 16; j++) s += b[k / 16].qs[16 * (k % 16) + j];
                    CHECK(b[k / 16].bsums[k % 16] == s);
                }
            }
            double exact = 0.0, mag = 0.0, truth = 0.0, qerr = 0.0;
            for (int64_t i = 0; i < len; i++) {
                exact += (double)wd[i] * xd[i];
                mag += fabs((double)wd[i] * xd[i]);
                truth += (double)wd[i] * x[i];
                qerr += fabs((double)wd[i]) * fabs((double)xd[i] - x[i]);
            }
            double got = tmrt__kern__dot_row(type, wq, xq, len);
            if (fabs(got - exact) > 1e-5 * mag + 1e-30) bad_exact++;
            if (fabs(got - truth) > 1e-5 * mag + qerr) bad_f32++;
        }
        CHECK_MSG(bad_exact == 0, "%s: %d dots off the dequantised product",
                  kern_test_type_name(type), bad_exact);
        CHECK_MSG(bad_f32 == 0, "%s: %d dots beyond the x quantisation error",
                  kern_test_type_name(type), bad_f32);
    }
    free(w);
    free(wd);
    free(x);
    free(xd);
    free(wq);
    free(xq);
}

/* The SIMD x quantisers give the scalar ones' bits (the matmul's results
 * then differ from the reference only by f32 reassociation). */
static void test_simd_xquant(void) {
#if defined(__x86_64__)
    if (!tmrt__kern__have_avx2()) {
        printf("   no AVX2 on this CPU: SIMD quantisers not tested\n");
        return;
    }
    tmem_rng r;
    tmem_rng_init(&r, seed + 3);
    const int64_t n = 2048;
    float *x = kern_test_alloc(n * sizeof(float));
    void *a = kern_test_alloc(n * 2), *b = kern_test_alloc(n * 2);
    for (int trial = 0; trial < 200; trial++) {
        kern_test_fill(&r, x, n, ldexpf(1.0f, (int)tmem_rng_range(&r, 0, 30) - 20));
        if (trial % 7 == 3) memset(x + 256, 0, 256 * sizeof(float));        /* zero blocks */
        if (trial % 7 == 4) { /* a +-max tie: the first one gives the sign */
            x[17] = 1e3f;
            x[40] = -1e3f;
        }
        tmrt__kern__quantize_q8_0(x, a, n);
        tmrt__kern__quantize_q8_0_avx2(x, b, n);
        CHECK_MSG(!memcmp(a, b, tmrt__kern__xrow_bytes(KERN_X_Q8_0, n)), "q8_0 trial %d", trial);
        tmrt__kern__quantize_q8_k(x, a, n);
        tmrt__kern__quantize_q8_k_avx2(x, b, n);
        CHECK_MSG(!memcmp(a, b, tmrt__kern__xrow_bytes(KERN_X_Q8_K, n)), "q8_K trial %d", trial);
    }
    free(x);
    free(a);
    free(b);
#endif
}

int main(void) {
    seed = tmem_test_seed(0x6b65726e71756e74ull);
    RUN(test_f16_exhaustive);
    RUN(test_f16_nearest);
    RUN(test_bf16);
    RUN(test_layouts);
    RUN(test_round_trip);
    RUN(test_dots);
    RUN(test_simd_xquant);
    return tmem_test_finish();
}

/* The attention's SIMD f16 loops (F16C on x86-64, NEON on aarch64) against
 * the scalar ones, on random rows of every length 1..300 (tails included),
 * and the f16 conversion round trip against the exactly representable
 * values. Skips (77) on other ISAs or on an x86-64 CPU without
 * AVX2/FMA/F16C. */
#include <math.h>
#include <stdio.h>
#include "harness.h"
#include "rt_internal.h"

int main(void) {
#if defined(__x86_64__) || defined(__aarch64__)
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c")) {
        printf("SKIP: no AVX2/FMA/F16C on this CPU\n");
        return 77;
    }
#define DOT_F16 tmrt__dot_f16_avx2
#define AXPY_F16 tmrt__axpy_f16_avx2
#else
#define DOT_F16 tmrt__dot_f16_neon
#define AXPY_F16 tmrt__axpy_f16_neon
#endif
    tmem_rng rng;
    tmem_rng_init(&rng, tmem_test_seed(31));
    static float q[300], acc_s[300], acc_v[300];
    static uint16_t k[300];
    for (uint32_t n = 1; n <= 300; n++) {
        double mag = 0;
        for (uint32_t i = 0; i < n; i++) {
            q[i] = (float)((int64_t)tmem_rng_range(&rng, 0, 2000) - 1000) / 250.0f;
            k[i] = kern_f32_to_f16((float)((int64_t)tmem_rng_range(&rng, 0, 2000) - 1000) / 300.0f);
            acc_s[i] = acc_v[i] = (float)i * 0.01f;
            mag += fabs(q[i] * kern_f16_to_f32(k[i]));
        }
        float ref = 0;
        for (uint32_t i = 0; i < n; i++) ref += q[i] * kern_f16_to_f32(k[i]);
        float got = DOT_F16(q, k, n);
        CHECK_MSG(fabs(got - ref) <= 1e-5 * (mag + 1), "n %u: dot %g vs %g", n, got, ref);
        for (uint32_t i = 0; i < n; i++) acc_s[i] += 0.37f * kern_f16_to_f32(k[i]);
        AXPY_F16(acc_v, 0.37f, k, n);
        for (uint32_t i = 0; i < n; i++)
            CHECK_MSG(fabsf(acc_s[i] - acc_v[i]) <= 1e-6f * (fabsf(acc_s[i]) + 1), "n %u: axpy[%u]", n, i);
    }
    /* every finite half converts to float and back unchanged */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7C00u) == 0x7C00u) continue; /* inf / NaN */
        CHECK(kern_f32_to_f16(kern_f16_to_f32((uint16_t)h)) == h);
    }
    CHECK(kern_f32_to_f16(65520.0f) == 0x7C00u);          /* rounds to inf */
    CHECK(kern_f32_to_f16(1.0f + 1.0f / 2048) == 0x3C00u); /* a tie to even */
    return tmem_test_finish();
#else
    printf("SKIP: neither an x86-64 nor an aarch64 build\n");
    return 77;
#endif
}

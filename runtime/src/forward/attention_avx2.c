/* attention_avx2.c: the f16 K/V row loops of attention with F16C + FMA
 * (8 halves converted per instruction), chosen at run time by attention.c.
 * Same results as the scalar loops up to the order of the additions. */
#include <immintrin.h>
#include "rt_internal.h"

float tmrt__dot_f16_avx2(const float *q, const uint16_t *k, uint32_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    uint32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 k0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i)));
        __m256 k1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i + 8)));
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), k0, s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), k1, s1);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i))), s0);
    s0 = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float s = _mm_cvtss_f32(h);
    for (; i < n; i++) s += q[i] * kern_f16_to_f32(k[i]);
    return s;
}

void tmrt__axpy_f16_avx2(float *acc, float p, const uint16_t *v, uint32_t n) {
    __m256 pv = _mm256_set1_ps(p);
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i)));
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(pv, x, _mm256_loadu_ps(acc + i)));
    }
    for (; i < n; i++) acc[i] += p * kern_f16_to_f32(v[i]);
}

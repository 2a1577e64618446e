/* kern_avx2.h: small AVX2 helpers shared by the *_avx2.c files (and only
 * them: it needs -mavx2 -mfma -mf16c). */
#ifndef TMRT_KERN_AVX2_H
#define TMRT_KERN_AVX2_H

#include <immintrin.h>

#define KERN_ALWAYS_INLINE inline __attribute__((always_inline))

/* Sum and max of the 8 lanes, in a fixed order. */
static KERN_ALWAYS_INLINE float kern_hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static KERN_ALWAYS_INLINE float kern_hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static KERN_ALWAYS_INLINE __m256 kern_abs8(__m256 v) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

#endif /* TMRT_KERN_AVX2_H */

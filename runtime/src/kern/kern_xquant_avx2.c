/* kern_xquant_avx2.c: AVX2 quantisation of x rows for the integer dot
 * products (Q8_0 and Q8_K). Bit-identical to tmrt__kern__quantize_q8_0/_q8_k in
 * kern_quant.c: the same scale arithmetic, the same round-to-even. */
#include <math.h>
#include "kern_avx2.h"
#include "kern_half.h"
#include "kern_impl.h"

/* 32 floats times `scale`, rounded to even, saturated to int8, in order. */
static inline __m256i quantize32(const float *x, __m256 scale) {
    __m256i q[4];
    for (int k = 0; k < 4; k++) {
        __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), scale),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q[k] = _mm256_cvtps_epi32(v);
    }
    /* packs work per 128-bit lane: (0 1 | 2 3) interleave; undo it */
    __m256i q01 = _mm256_packs_epi32(q[0], q[1]);
    __m256i q23 = _mm256_packs_epi32(q[2], q[3]);
    __m256i b = _mm256_packs_epi16(q01, q23);
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void tmrt__kern__quantize_q8_0_avx2(const float *x, kern_block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / KERN_QK8_0; b++, x += KERN_QK8_0) {
        __m256 m = kern_abs8(_mm256_loadu_ps(x));
        for (int k = 1; k < 4; k++) m = _mm256_max_ps(m, kern_abs8(_mm256_loadu_ps(x + 8 * k)));
        const float amax = kern_hmax8(m);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = kern_f32_to_f16(d);
        _mm256_storeu_si256((__m256i *)y[b].qs, quantize32(x, _mm256_set1_ps(id)));
    }
}

void tmrt__kern__quantize_q8_k_avx2(const float *x, kern_block_q8_k *y, int64_t n) {
    for (int64_t b = 0; b < n / KERN_QK_K; b++, x += KERN_QK_K) {
        __m256 m = kern_abs8(_mm256_loadu_ps(x));
        for (int k = 1; k < 32; k++) m = _mm256_max_ps(m, kern_abs8(_mm256_loadu_ps(x + 8 * k)));
        const float amax = kern_hmax8(m);
        kern_block_q8_k *blk = &y[b];
        if (amax == 0.0f) {
            memset(blk, 0, sizeof *blk);
            continue;
        }
        /* the first element of that magnitude gives the sign, as in the
         * scalar scan */
        const __m256 va = _mm256_set1_ps(amax);
        float max = amax;
        for (int k = 0; k < 32; k++) {
            int hit = _mm256_movemask_ps(_mm256_cmp_ps(kern_abs8(_mm256_loadu_ps(x + 8 * k)), va,
                                                       _CMP_EQ_OQ));
            if (hit) {
                max = x[8 * k + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i ones = _mm256_set1_epi8(1);
        for (int k = 0; k < 8; k++) {
            __m256i q = quantize32(x + 32 * k, vs);
            _mm256_storeu_si256((__m256i *)(blk->qs + 32 * k), q);
            /* sums of 16: maddubs(1, q) adds pairs, then madd adds pairs of
             * those; four int32 per 16 bytes left to add */
            __m256i s16 = _mm256_maddubs_epi16(ones, q);
            __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
            __m128i lo = _mm256_castsi256_si128(s32), hi = _mm256_extracti128_si256(s32, 1);
            lo = _mm_hadd_epi32(lo, hi);           /* (a0+a1, a2+a3, b0+b1, b2+b3) */
            lo = _mm_hadd_epi32(lo, lo);           /* (a, b, a, b) */
            blk->bsums[2 * k] = (int16_t)_mm_cvtsi128_si32(lo);
            blk->bsums[2 * k + 1] = (int16_t)_mm_extract_epi32(lo, 1);
        }
        blk->d = 1.0f / iscale;
    }
}

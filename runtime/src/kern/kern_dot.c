/* tmrt__kern_dot.c: scalar dot products of one weight row with one row of x, per
 * weight type: the reference every SIMD path is tested against.
 *
 * Float weights (F32, F16, BF16) meet x in f32, summed in order. Quantised
 * weights meet x quantised once per row (Q8_0 for Q8_0 weights, Q8_K for
 * the K-quants, as in ggml): each block's integer sum is exact, then scaled
 * by the two blocks' scales and added in block order in f32. */
#include "kern_half.h"
#include "kern_impl.h"
#include "typedmem/model.h"

float tmrt__kern__dot_f32(const float *w, const float *x, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += w[i] * x[i];
    return sum;
}

float tmrt__kern__dot_f16(const uint16_t *w, const float *x, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += kern_f16_to_f32(w[i]) * x[i];
    return sum;
}

float tmrt__kern__dot_bf16(const uint16_t *w, const float *x, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += kern_bf16_to_f32(w[i]) * x[i];
    return sum;
}

float tmrt__kern__dot_q8_0(const kern_block_q8_0 *w, const kern_block_q8_0 *x, int64_t n) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / KERN_QK8_0; b++) {
        int32_t isum = 0;
        for (int j = 0; j < KERN_QK8_0; j++) isum += (int32_t)w[b].qs[j] * x[b].qs[j];
        sum += kern_f16_to_f32(w[b].d) * kern_f16_to_f32(x[b].d) * (float)isum;
    }
    return sum;
}

/* Per super-block: sum_j sc_j * (q . xq over sub-block j) - m_j * (sum of
 * xq over sub-block j, from the Q8_K bsums), both exact in int32. */
float tmrt__kern__dot_q4_k(const kern_block_q4_k *w, const kern_block_q8_k *x, int64_t n) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / KERN_QK_K; b++) {
        const int8_t *xq = x[b].qs;
        int32_t isum = 0, msum = 0;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            kern_q4k_scale_min(w[b].scales, j, &sc, &m);
            const uint8_t *q = w[b].qs + 32 * (j / 2);
            const int shift = (j & 1) * 4;
            int32_t dot = 0;
            for (int l = 0; l < 32; l++) dot += ((q[l] >> shift) & 0xf) * xq[32 * j + l];
            isum += sc * dot;
            msum += m * (x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
        }
        const float dx = x[b].d;
        sum += dx * kern_f16_to_f32(w[b].d) * (float)isum -
               dx * kern_f16_to_f32(w[b].dmin) * (float)msum;
    }
    return sum;
}

float tmrt__kern__dot_q6_k(const kern_block_q6_k *w, const kern_block_q8_k *x, int64_t n) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / KERN_QK_K; b++) {
        int32_t isum = 0;
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
            const int8_t *xq = x[b].qs + 128 * h;
            int32_t group[8] = {0};
            for (int l = 0; l < 32; l++) {
                const int g = l / 16;
                int q[4];
                kern_q6k_quad(ql, qh, l, q);
                for (int k = 0; k < 4; k++) group[g + 2 * k] += q[k] * xq[l + 32 * k];
            }
            for (int g = 0; g < 8; g++) isum += w[b].scales[8 * h + g] * group[g];
        }
        sum += x[b].d * kern_f16_to_f32(w[b].d) * (float)isum;
    }
    return sum;
}

float tmrt__kern__dot_row(uint32_t type, const void *wrow, const void *xrow, int64_t n) {
    switch (type) {
    case TMEM_GGML_F32: return tmrt__kern__dot_f32(wrow, xrow, n);
    case TMEM_GGML_F16: return tmrt__kern__dot_f16(wrow, xrow, n);
    case TMEM_GGML_BF16: return tmrt__kern__dot_bf16(wrow, xrow, n);
    case TMEM_GGML_Q8_0: return tmrt__kern__dot_q8_0(wrow, xrow, n);
    case TMEM_GGML_Q4_K: return tmrt__kern__dot_q4_k(wrow, xrow, n);
    case TMEM_GGML_Q6_K: return tmrt__kern__dot_q6_k(wrow, xrow, n);
    default: return 0.0f;
    }
}

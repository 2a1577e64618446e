/* kern_qdot_neon.h: the NEON quantised tiles (Q8_0, Q4_K, Q6_K), included
 * by one .c file per int8 dot primitive. The includer defines
 *   KERN_DOT16(acc, a, b)  acc (int32x4_t) + the 16 products a[i]*b[i]
 *   KERN_QNAME(x)          the tile names of this variant
 * Each weight block's integer sum is exact in int32 and is then scaled and
 * added in f32 with the very expression of the scalar oracle (kern_dot.c),
 * in block order: the tiles give the oracle's bits, whatever the primitive,
 * the token grouping or the thread count. */
#include "typedmem/model.h"

#define QTOKS 4

/* f16 -> f32 with FCVT (ARMv8.0): exact, the value of kern_f16_to_f32 for
 * every non-NaN input (a NaN scale gives a NaN either way), in 2
 * instructions instead of the portable bit twiddling's ~12. */
static KERN_ALWAYS_INLINE float qf16(uint16_t h) {
    return vget_lane_f32(vget_low_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h)))), 0);
}

static KERN_ALWAYS_INLINE int32_t qdot32(int8x16_t w0, int8x16_t w1, const int8_t *x) {
    int32x4_t acc = vdupq_n_s32(0);
    acc = KERN_DOT16(acc, w0, vld1q_s8(x));
    acc = KERN_DOT16(acc, w1, vld1q_s8(x + 16));
    return vaddvq_s32(acc);
}

static KERN_ALWAYS_INLINE void dot_q8_0(int T, const kern_block_q8_0 *w,
                                        const kern_block_q8_0 *const *x, int64_t nb, float *out) {
    float sum[QTOKS] = {0};
    for (int64_t b = 0; b < nb; b++) {
        const int8x16_t w0 = vld1q_s8(w[b].qs), w1 = vld1q_s8(w[b].qs + 16);
        const float dw = qf16(w[b].d);
        for (int t = 0; t < T; t++) {
            const int32_t isum = qdot32(w0, w1, x[t][b].qs);
            sum[t] += dw * qf16(x[t][b].d) * (float)isum;
        }
    }
    for (int t = 0; t < T; t++) out[t] = sum[t];
}

static KERN_ALWAYS_INLINE void dot_q4_k(int T, const kern_block_q4_k *w,
                                        const kern_block_q8_k *const *x, int64_t nb, float *out) {
    const uint8x16_t low4 = vdupq_n_u8(0x0f);
    float sum[QTOKS] = {0};
    for (int64_t b = 0; b < nb; b++) {
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) kern_q4k_scale_min(w[b].scales, j, &sc[j], &m[j]);
        /* sub-block j = 2c (low nibbles of chunk c) or 2c+1 (high nibbles) */
        int8x16_t q[16];
        for (int c = 0; c < 4; c++) {
            const uint8x16_t a = vld1q_u8(w[b].qs + 32 * c), b2 = vld1q_u8(w[b].qs + 32 * c + 16);
            q[4 * c + 0] = vreinterpretq_s8_u8(vandq_u8(a, low4));
            q[4 * c + 1] = vreinterpretq_s8_u8(vandq_u8(b2, low4));
            q[4 * c + 2] = vreinterpretq_s8_u8(vshrq_n_u8(a, 4));
            q[4 * c + 3] = vreinterpretq_s8_u8(vshrq_n_u8(b2, 4));
        }
        const int16x8_t mv = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(m)));
        const float dw = qf16(w[b].d), dmin = qf16(w[b].dmin);
        for (int t = 0; t < T; t++) {
            const int8_t *xq = x[t][b].qs;
            int32x4_t acc = vdupq_n_s32(0);
            for (int j = 0; j < 8; j++) {
                int32x4_t d = vdupq_n_s32(0);
                d = KERN_DOT16(d, q[2 * j], vld1q_s8(xq + 32 * j));
                d = KERN_DOT16(d, q[2 * j + 1], vld1q_s8(xq + 32 * j + 16));
                acc = vmlaq_n_s32(acc, d, sc[j]);
            }
            const int32_t isum = vaddvq_s32(acc);
            /* sub-block sums of x: bsums pairs */
            const int16x8_t bs = vpaddq_s16(vld1q_s16(x[t][b].bsums), vld1q_s16(x[t][b].bsums + 8));
            const int32x4_t mm = vmlal_high_s16(vmull_s16(vget_low_s16(bs), vget_low_s16(mv)), bs, mv);
            const int32_t msum = vaddvq_s32(mm);
            const float dx = x[t][b].d;
            sum[t] += dx * dw * (float)isum - dx * dmin * (float)msum;
        }
    }
    for (int t = 0; t < T; t++) out[t] = sum[t];
}

static KERN_ALWAYS_INLINE void dot_q6_k(int T, const kern_block_q6_k *w,
                                        const kern_block_q8_k *const *x, int64_t nb, float *out) {
    const uint8x16_t low4 = vdupq_n_u8(0x0f), three = vdupq_n_u8(3);
    const int8x16_t m32 = vdupq_n_s8(32);
    float sum[QTOKS] = {0};
    for (int64_t b = 0; b < nb; b++) {
        /* q[16h + 4k + s]: weights 128h + 32k + 16s .. +15, as q - 32 */
        int8x16_t q[32];
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
            for (int s = 0; s < 2; s++) {
                const uint8x16_t l0 = vld1q_u8(ql + 16 * s), l1 = vld1q_u8(ql + 32 + 16 * s);
                const uint8x16_t hb = vld1q_u8(qh + 16 * s);
                const uint8x16_t v[4] = {
                    vorrq_u8(vandq_u8(l0, low4), vshlq_n_u8(vandq_u8(hb, three), 4)),
                    vorrq_u8(vandq_u8(l1, low4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), three), 4)),
                    vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), three), 4)),
                    vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4))};
                for (int k = 0; k < 4; k++)
                    q[16 * h + 4 * k + s] = vsubq_s8(vreinterpretq_s8_u8(v[k]), m32);
            }
        }
        const float dw = qf16(w[b].d);
        for (int t = 0; t < T; t++) {
            const int8_t *xq = x[t][b].qs;
            int32x4_t acc = vdupq_n_s32(0);
            for (int h = 0; h < 2; h++)
                for (int k = 0; k < 4; k++)
                    for (int s = 0; s < 2; s++) {
                        const int32x4_t d = KERN_DOT16(vdupq_n_s32(0), q[16 * h + 4 * k + s],
                                                       vld1q_s8(xq + 128 * h + 32 * k + 16 * s));
                        /* 16 weights 128h + 32k + 16s: scale 8h + s + 2k */
                        acc = vmlaq_n_s32(acc, d, w[b].scales[8 * h + 2 * k + s]);
                    }
            const int32_t isum = vaddvq_s32(acc);
            sum[t] += x[t][b].d * dw * (float)isum;
        }
    }
    for (int t = 0; t < T; t++) out[t] = sum[t];
}

/* Rows o0..o1 against every x row, QTOKS tokens at a time (the rest one by
 * one): a weight block is unpacked once for the tokens that pass. */
#define KERN_QTILE(name, wblock, xblock, dot, qk)                                             \
    static void name(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0,    \
                     int64_t o1, float *y, size_t ldy) {                                      \
        const int64_t nb = w->n_in / (qk);                                                    \
        for (int64_t o = o0; o < o1; o++) {                                                   \
            const wblock *wr =                                                                \
                (const wblock *)((const char *)w->data + (size_t)o * w->row_bytes);           \
            for (int64_t t = 0; t < nt;) {                                                    \
                const int T = nt - t >= QTOKS ? QTOKS : 1;                                    \
                const xblock *xr[QTOKS];                                                      \
                float out[QTOKS];                                                             \
                for (int k = 0; k < T; k++)                                                   \
                    xr[k] = (const xblock *)((const char *)x + (size_t)(t + k) * xs);         \
                if (T == QTOKS) dot(QTOKS, wr, xr, nb, out);                                  \
                else dot(1, wr, xr, nb, out);                                                 \
                for (int k = 0; k < T; k++) y[(size_t)(t + k) * ldy + (size_t)o] = out[k];    \
                t += T;                                                                       \
            }                                                                                 \
        }                                                                                     \
    }

KERN_QTILE(tile_q8_0, kern_block_q8_0, kern_block_q8_0, dot_q8_0, KERN_QK8_0)
KERN_QTILE(tile_q4_k, kern_block_q4_k, kern_block_q8_k, dot_q4_k, KERN_QK_K)
KERN_QTILE(tile_q6_k, kern_block_q6_k, kern_block_q8_k, dot_q6_k, KERN_QK_K)

kern_tile_fn KERN_QNAME(uint32_t type) {
    switch (type) {
    case TMEM_GGML_Q8_0: return tile_q8_0;
    case TMEM_GGML_Q4_K: return tile_q4_k;
    case TMEM_GGML_Q6_K: return tile_q6_k;
    default: return NULL;
    }
}

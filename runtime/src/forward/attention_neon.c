/* attention_neon.c: the f16 K/V row loops of attention in NEON (aarch64:
 * FCVTL widens 4 halves per instruction, ARMv8.0; the products stay f32),
 * chosen by attention.c. Same results as the scalar loops up to the order
 * of the additions. */
#include <arm_neon.h>
#include "rt_internal.h"

float tmrt__dot_f16_neon(const float *q, const uint16_t *k, uint32_t n) {
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = vdupq_n_f32(0.0f);
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(k + i));
        s0 = vfmaq_f32(s0, vld1q_f32(q + i), vcvt_f32_f16(vget_low_f16(h)));
        s1 = vfmaq_f32(s1, vld1q_f32(q + i + 4), vcvt_high_f32_f16(h));
    }
    for (; i + 4 <= n; i += 4)
        s0 = vfmaq_f32(s0, vld1q_f32(q + i), vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(k + i))));
    float s = vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; i++) s += q[i] * kern_f16_to_f32(k[i]);
    return s;
}

void tmrt__axpy_f16_neon(float *acc, float p, const uint16_t *v, uint32_t n) {
    const float32x4_t pv = vdupq_n_f32(p);
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t x = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(v + i)));
        vst1q_f32(acc + i, vfmaq_f32(vld1q_f32(acc + i), pv, x));
    }
    for (; i < n; i++) acc[i] += p * kern_f16_to_f32(v[i]);
}

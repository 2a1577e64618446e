/* kern_vec_neon.c: NEON paths of the f32 vector primitives (kern_vec.c
 * dispatches here on aarch64). The same algorithms as kern_vec_avx2.c in
 * four lanes: reductions keep eight lanes in two registers and add them in
 * a fixed order at the end; tails run scalar. */
#include <math.h>
#include "kern_neon.h"

/* exp(x) to about 1 ulp: Cephes' expf polynomial on the reduced argument
 * (the constants of kern_vec_avx2.c's exp8), 2^n put in the exponent bits;
 * 0 below -87.3 (-inf included). */
static inline float32x4_t exp4(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(-87.33654f), hi = vdupq_n_f32(88.72283f);
    const uint32x4_t underflow = vcltq_f32(x, lo);
    x = vminq_f32(vmaxq_f32(x, lo), hi);
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    /* 2^n as 2^(n/2) * 2^(n - n/2): n in [-126, 128] stays in range */
    const int32x4_t ni = vcvtq_s32_f32(n);
    const int32x4_t half = vshrq_n_s32(ni, 1);
    const float32x4_t s1 =
        vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(half, vdupq_n_s32(127)), 23));
    const float32x4_t s2 =
        vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vsubq_s32(ni, half), vdupq_n_s32(127)), 23));
    p = vmulq_f32(vmulq_f32(p, s1), s2);
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(p), underflow));
}

float tmrt__kern__dot_f32_neon(const float *a, const float *b, int64_t n) {
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
        acc1 = vfmaq_f32(acc1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    }
    for (; i + 4 <= n; i += 4) acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
    float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}

float tmrt__kern__sumsq_neon(const float *x, int64_t n) { return tmrt__kern__dot_f32_neon(x, x, n); }

void tmrt__kern__axpy_neon(float *y, float a, const float *x, int64_t n) {
    const float32x4_t va = vdupq_n_f32(a);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), va, vld1q_f32(x + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

void tmrt__kern__scale_neon(float *x, float a, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), a));
    for (; i < n; i++) x[i] *= a;
}

void tmrt__kern__rms_apply_neon(float *out, const float *x, const float *w, float w_offset,
                                float s, int64_t n) {
    const float32x4_t voff = vdupq_n_f32(w_offset);
    int64_t i = 0;
    if (w) {
        for (; i + 4 <= n; i += 4) {
            const float32x4_t wi = vaddq_f32(vld1q_f32(w + i), voff);
            vst1q_f32(out + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), s), wi));
        }
        for (; i < n; i++) out[i] = x[i] * s * (w[i] + w_offset);
    } else {
        for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_n_f32(vld1q_f32(x + i), s));
        for (; i < n; i++) out[i] = x[i] * s;
    }
}

static inline float32x4_t silu4(float32x4_t g) {
    return vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(g))));
}

void tmrt__kern__silu_mul_neon(float *out, const float *gate, const float *up, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(out + i, vmulq_f32(silu4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
    for (; i < n; i++) out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

void tmrt__kern__silu_neon(float *out, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, silu4(vld1q_f32(x + i)));
    for (; i < n; i++) out[i] = x[i] / (1.0f + expf(-x[i]));
}

float tmrt__kern__max_neon(const float *x, int64_t n) {
    int64_t i = 0;
    float m = x[0];
    if (n >= 4) {
        float32x4_t vm = vld1q_f32(x);
        for (i = 4; i + 4 <= n; i += 4) vm = vmaxq_f32(vm, vld1q_f32(x + i));
        m = vmaxvq_f32(vm);
    }
    for (; i < n; i++) m = fmaxf(m, x[i]);
    return m;
}

float tmrt__kern__exp_sub_sum_neon(float *x, float m, int64_t n) {
    const float32x4_t vm = vdupq_n_f32(m);
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const float32x4_t e0 = exp4(vsubq_f32(vld1q_f32(x + i), vm));
        const float32x4_t e1 = exp4(vsubq_f32(vld1q_f32(x + i + 4), vm));
        vst1q_f32(x + i, e0);
        vst1q_f32(x + i + 4, e1);
        acc0 = vaddq_f32(acc0, e0);
        acc1 = vaddq_f32(acc1, e1);
    }
    float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; i++) {
        x[i] = expf(x[i] - m);
        sum += x[i];
    }
    return sum;
}

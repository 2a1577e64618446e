/* kern_vec.c: f32 vector primitives: scalar references (kern_*_ref) and the
 * entry points, which take the AVX2 path when the CPU has it, the NEON path
 * on aarch64. */
#include <math.h>
#include "kern_impl.h"

/* ---- scalar references ---- */

float tmrt__kern_dot_ref(const float *a, const float *b, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

void tmrt__kern_axpy_ref(float *y, float a, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

void tmrt__kern_scale_ref(float *x, float a, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] *= a;
}

static float rms_inverse(float sumsq, int64_t n, float eps) {
    return 1.0f / sqrtf(sumsq / (float)n + eps);
}

void tmrt__kern_rmsnorm_offset_ref(float *out, const float *x, const float *w, float w_offset,
                             int64_t n, float eps) {
    if (n <= 0) return;
    float sumsq = 0.0f;
    for (int64_t i = 0; i < n; i++) sumsq += x[i] * x[i];
    const float s = rms_inverse(sumsq, n, eps);
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * s * (w ? w[i] + w_offset : 1.0f);
}

void tmrt__kern_rmsnorm_ref(float *out, const float *x, const float *w, int64_t n, float eps) {
    tmrt__kern_rmsnorm_offset_ref(out, x, w, 0.0f, n, eps);
}

void tmrt__kern_silu_mul_ref(float *out, const float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

float tmrt__kern_softmax_ref(float *x, int64_t n) {
    if (n <= 0) return -INFINITY;
    float m = x[0];
    for (int64_t i = 1; i < n; i++) m = fmaxf(m, x[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
    return m;
}

void tmrt__kern_silu_ref(float *out, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = x[i] / (1.0f + expf(-x[i]));
}

float tmrt__kern_exp_sub_sum_ref(float *x, float m, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += x[i] = expf(x[i] - m);
    return sum;
}

/* ---- dispatching entry points ---- */

/* SIMD_OR_REF(call): run `call` (which returns) on the SIMD path of this
 * build: AVX2 on x86-64 CPUs with AVX2/FMA/F16C, NEON on aarch64 (every
 * aarch64 CPU has Advanced SIMD); else fall through to the scalar
 * reference after it. SIMD(name) names the path's function. */
#if TMRT_HAVE_AVX2
#define SIMD_OR_REF(...) do { if (tmrt__kern__have_avx2()) { __VA_ARGS__; } } while (0)
#define SIMD(name) tmrt__kern__##name##_avx2
#elif TMRT_HAVE_NEON
#define SIMD_OR_REF(...) do { __VA_ARGS__; } while (0)
#define SIMD(name) tmrt__kern__##name##_neon
#else
#define SIMD_OR_REF(...) ((void)0)
#endif

float tmrt__kern_dot(const float *a, const float *b, int64_t n) {
    SIMD_OR_REF(return SIMD(dot_f32)(a, b, n));
    return tmrt__kern_dot_ref(a, b, n);
}

void tmrt__kern_axpy(float *y, float a, const float *x, int64_t n) {
    SIMD_OR_REF(SIMD(axpy)(y, a, x, n); return);
    tmrt__kern_axpy_ref(y, a, x, n);
}

void tmrt__kern_scale(float *x, float a, int64_t n) {
    SIMD_OR_REF(SIMD(scale)(x, a, n); return);
    tmrt__kern_scale_ref(x, a, n);
}

void tmrt__kern_rmsnorm_offset(float *out, const float *x, const float *w, float w_offset,
                         int64_t n, float eps) {
    if (n <= 0) return;
    SIMD_OR_REF(SIMD(rms_apply)(out, x, w, w_offset, rms_inverse(SIMD(sumsq)(x, n), n, eps), n);
              return);
    tmrt__kern_rmsnorm_offset_ref(out, x, w, w_offset, n, eps);
}

void tmrt__kern_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps) {
    tmrt__kern_rmsnorm_offset(out, x, w, 0.0f, n, eps);
}

void tmrt__kern_silu_mul(float *out, const float *gate, const float *up, int64_t n) {
    SIMD_OR_REF(SIMD(silu_mul)(out, gate, up, n); return);
    tmrt__kern_silu_mul_ref(out, gate, up, n);
}

void tmrt__kern_silu(float *out, const float *x, int64_t n) {
    SIMD_OR_REF(SIMD(silu)(out, x, n); return);
    tmrt__kern_silu_ref(out, x, n);
}

float tmrt__kern_exp_sub_sum(float *x, float m, int64_t n) {
    SIMD_OR_REF(return SIMD(exp_sub_sum)(x, m, n));
    return tmrt__kern_exp_sub_sum_ref(x, m, n);
}

float tmrt__kern_softmax(float *x, int64_t n) {
    if (n <= 0) return -INFINITY;
    SIMD_OR_REF(const float m = SIMD(max)(x, n);
              SIMD(scale)(x, 1.0f / SIMD(exp_sub_sum)(x, m, n), n);
              return m);
    return tmrt__kern_softmax_ref(x, n);
}

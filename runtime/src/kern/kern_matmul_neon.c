/* kern_matmul_neon.c: NEON tiles of tmrt__kern_matmul (aarch64; ARMv8.0
 * Advanced SIMD, which every aarch64 CPU has).
 *
 * Float weights (F32, F16, BF16): register tiles of up to 4 weight rows x 4
 * tokens (16 accumulators of 4 lanes, of the 32 vector registers), 8 rows x
 * 1 token for decode. F16 is widened with FCVTL (ARMv8.0: conversion only;
 * the products stay f32, so the FP16-arithmetic extension is not needed),
 * BF16 with a 16-bit shift. Every output element has exactly one 4-lane
 * accumulator, filled in increasing i by the same FMA whatever tile
 * computes it, reduced by FADDP and the same scalar tail: its bits depend
 * on neither the tile shape nor the thread count.
 *
 * Quantised weights: kern_qdot_neon.h with the ARMv8.0 int8 dot (SMULL +
 * SADALP); kern_matmul_dotprod_neon.c has the SDOT twin. */
#include "kern_half.h"
#include "kern_neon.h"
#include "typedmem/model.h"

#define UNROLL _Pragma("GCC unroll 8")
#define TILE_ROWS 4
#define TILE_TOKS 4
#define DECODE_ROWS 8

/* ---- float weights ---- */

static KERN_ALWAYS_INLINE float32x4_t load_w4(uint32_t type, const void *row, int64_t i) {
    if (type == TMEM_GGML_F32) return vld1q_f32((const float *)row + i);
    const uint16x4_t h = vld1_u16((const uint16_t *)row + i);
    if (type == TMEM_GGML_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

static KERN_ALWAYS_INLINE float load_w1(uint32_t type, const void *row, int64_t i) {
    if (type == TMEM_GGML_F32) return ((const float *)row)[i];
    const uint16_t h = ((const uint16_t *)row)[i];
    return type == TMEM_GGML_F16 ? kern_f16_to_f32(h) : kern_bf16_to_f32(h);
}

/* R rows x T tokens; R, T constants after inlining. */
static KERN_ALWAYS_INLINE void micro_float(uint32_t type, int R, int T, const char *w0,
                                           size_t wstride, int64_t n, const float *x0,
                                           size_t ldx, float *y0, size_t ldy) {
    float32x4_t acc[DECODE_ROWS][TILE_TOKS];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = vdupq_n_f32(0.0f);
    const int64_t n4 = n & ~(int64_t)3;
    for (int64_t i = 0; i < n4; i += 4) {
        float32x4_t wv[DECODE_ROWS];
        UNROLL for (int r = 0; r < R; r++) wv[r] = load_w4(type, w0 + (size_t)r * wstride, i);
        UNROLL for (int t = 0; t < T; t++) {
            const float32x4_t xv = vld1q_f32(x0 + (size_t)t * ldx + i);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = vfmaq_f32(acc[r][t], wv[r], xv);
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        UNROLL for (int t = 0; t < T; t++) {
            float sum = vaddvq_f32(acc[r][t]);
            const float *x = x0 + (size_t)t * ldx;
            for (int64_t i = n4; i < n; i++)
                sum += load_w1(type, w0 + (size_t)r * wstride, i) * x[i];
            y0[(size_t)t * ldy + (size_t)r] = sum;
        }
    }
}

static KERN_ALWAYS_INLINE void dispatch_float(uint32_t type, int R, int T, const char *w0,
                                              size_t wstride, int64_t n, const float *x0,
                                              size_t ldx, float *y0, size_t ldy) {
#define MF(r, t) micro_float(type, r, t, w0, wstride, n, x0, ldx, y0, ldy)
    switch (R * 16 + T) {
    case 8 * 16 + 1: MF(8, 1); break;
    case 7 * 16 + 1: MF(7, 1); break;
    case 6 * 16 + 1: MF(6, 1); break;
    case 5 * 16 + 1: MF(5, 1); break;
    case 4 * 16 + 1: MF(4, 1); break;
    case 4 * 16 + 4: MF(4, 4); break;
    case 4 * 16 + 3: MF(4, 3); break;
    case 4 * 16 + 2: MF(4, 2); break;
    case 3 * 16 + 4: MF(3, 4); break;
    case 3 * 16 + 3: MF(3, 3); break;
    case 3 * 16 + 2: MF(3, 2); break;
    case 3 * 16 + 1: MF(3, 1); break;
    case 2 * 16 + 4: MF(2, 4); break;
    case 2 * 16 + 3: MF(2, 3); break;
    case 2 * 16 + 2: MF(2, 2); break;
    case 2 * 16 + 1: MF(2, 1); break;
    case 1 * 16 + 4: MF(1, 4); break;
    case 1 * 16 + 3: MF(1, 3); break;
    case 1 * 16 + 2: MF(1, 2); break;
    default: MF(1, 1); break;
    }
#undef MF
}

static KERN_ALWAYS_INLINE void tile_float(uint32_t type, const kern_wmat *w, const void *xv,
                                          size_t xstride, int64_t n_tok, int64_t o0, int64_t o1,
                                          float *y, size_t ldy) {
    const float *x = xv;
    const size_t ldx = xstride / sizeof(float);
    for (int64_t t0 = 0; t0 < n_tok; t0 += TILE_TOKS) {
        const int T = (int)(n_tok - t0 < TILE_TOKS ? n_tok - t0 : TILE_TOKS);
        const int rows = T == 1 ? DECODE_ROWS : TILE_ROWS;
        for (int64_t r0 = o0; r0 < o1; r0 += rows) {
            const int R = (int)(o1 - r0 < rows ? o1 - r0 : rows);
            dispatch_float(type, R, T, (const char *)w->data + (size_t)r0 * w->row_bytes,
                           w->row_bytes, w->n_in, x + (size_t)t0 * ldx, ldx,
                           y + (size_t)t0 * ldy + (size_t)r0, ldy);
        }
    }
}

static void tile_f32(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0,
                     int64_t o1, float *y, size_t ldy) {
    tile_float(TMEM_GGML_F32, w, x, xs, nt, o0, o1, y, ldy);
}

static void tile_f16(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0,
                     int64_t o1, float *y, size_t ldy) {
    tile_float(TMEM_GGML_F16, w, x, xs, nt, o0, o1, y, ldy);
}

static void tile_bf16(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0,
                      int64_t o1, float *y, size_t ldy) {
    tile_float(TMEM_GGML_BF16, w, x, xs, nt, o0, o1, y, ldy);
}

/* ---- quantised weights, ARMv8.0 int8 dot ---- */

static KERN_ALWAYS_INLINE int32x4_t dot16_v80(int32x4_t acc, int8x16_t a, int8x16_t b) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}
#define KERN_DOT16(acc, a, b) dot16_v80((acc), (a), (b))
#define KERN_QNAME tmrt__kern__tile_qneon
#include "kern_qdot_neon.h"

kern_tile_fn tmrt__kern__tile_neon(uint32_t type, unsigned features) {
    switch (type) {
    case TMEM_GGML_F32: return tile_f32;
    case TMEM_GGML_F16: return tile_f16;
    case TMEM_GGML_BF16: return tile_bf16;
    default:
        return (features & KERN_CPU_DOTPROD) ? tmrt__kern__tile_qdotprod(type)
                                             : tmrt__kern__tile_qneon(type);
    }
}

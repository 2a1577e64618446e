/* kern_quant.c: reference quantisers and dequantisers of the six weight
 * types, and the activation quantisers (Q8_0, Q8_K) of the dot products.
 *
 * Output is in ggml's block layouts (kern_blocks.h), so a row quantised here
 * is read by ggml and back. Q8_0 and Q8_K give ggml's reference bits except
 * that ties round to even (what the SIMD paths do). Q4_K and Q6_K pick their
 * scales from the block's range in one pass (ggml searches for a lower-error
 * scale): a little less accurate than llama-quantize, never out of range. */
#include <math.h>
#include <string.h>
#include "kern_half.h"
#include "kern_impl.h"
#include "typedmem/model.h"

static const kern_type_traits traits_table[] = {
    {TMEM_GGML_F32, 1, 4, KERN_X_F32},
    {TMEM_GGML_F16, 1, 2, KERN_X_F32},
    {TMEM_GGML_BF16, 1, 2, KERN_X_F32},
    {TMEM_GGML_Q8_0, KERN_QK8_0, (int)sizeof(kern_block_q8_0), KERN_X_Q8_0},
    {TMEM_GGML_Q4_K, KERN_QK_K, (int)sizeof(kern_block_q4_k), KERN_X_Q8_K},
    {TMEM_GGML_Q6_K, KERN_QK_K, (int)sizeof(kern_block_q6_k), KERN_X_Q8_K},
};

const kern_type_traits *tmrt__kern__traits(uint32_t type) {
    for (size_t i = 0; i < sizeof traits_table / sizeof traits_table[0]; i++)
        if (traits_table[i].type == type) return &traits_table[i];
    return NULL;
}

size_t tmrt__kern__xrow_bytes(kern_xform xf, int64_t n) {
    switch (xf) {
    case KERN_X_Q8_0: return (size_t)(n / KERN_QK8_0) * sizeof(kern_block_q8_0);
    case KERN_X_Q8_K: return (size_t)(n / KERN_QK_K) * sizeof(kern_block_q8_k);
    case KERN_X_F32: break;
    }
    return (size_t)n * sizeof(float);
}

bool tmrt__kern_type_supported(uint32_t type, int64_t n_in) {
    const kern_type_traits *t = tmrt__kern__traits(type);
    return t && n_in > 0 && n_in % t->block == 0;
}

size_t tmrt__kern_row_bytes(uint32_t type, int64_t n) {
    const kern_type_traits *t = tmrt__kern__traits(type);
    if (!t || n < 0 || n % t->block) return 0;
    return (size_t)(n / t->block) * (size_t)t->block_bytes;
}

/* Round to nearest, ties to even (the default FPU mode; what SIMD rounding
 * with _MM_FROUND_TO_NEAREST_INT does). */
static inline int round_even(float v) { return (int)nearbyintf(v); }

static inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The smallest f16 >= v (v >= 0): scales rounded up keep q in range. */
static uint16_t f16_at_least(float v) {
    uint16_t h = kern_f32_to_f16(v);
    if (kern_f16_to_f32(h) < v) h++;
    return h;
}

void tmrt__kern__quantize_q8_0(const float *x, kern_block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / KERN_QK8_0; b++, x += KERN_QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < KERN_QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = kern_f32_to_f16(d);
        for (int j = 0; j < KERN_QK8_0; j++) y[b].qs[j] = (int8_t)round_even(x[j] * id);
    }
}

void tmrt__kern__quantize_q8_k(const float *x, kern_block_q8_k *y, int64_t n) {
    for (int64_t b = 0; b < n / KERN_QK_K; b++, x += KERN_QK_K) {
        float amax = 0.0f, max = 0.0f; /* max: the value of largest magnitude */
        for (int j = 0; j < KERN_QK_K; j++) {
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        /* -127/max maps the largest magnitude to -127 exactly */
        const float iscale = -127.0f / max;
        for (int j = 0; j < KERN_QK_K; j++) {
            int q = round_even(iscale * x[j]);
            y[b].qs[j] = (int8_t)(q > 127 ? 127 : q);
        }
        for (int g = 0; g < KERN_QK_K / 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) sum += y[b].qs[16 * g + j];
            y[b].bsums[g] = (int16_t)sum;
        }
        y[b].d = 1.0f / iscale;
    }
}

/* Q4_K: per 32-weight sub-block j, w ~ scale_j * q - min_j with q in 0..15;
 * the sub-block scales and mins are then stored as 6-bit multiples of the
 * super-block's d and dmin (rounded up so the range is always covered), and
 * q recomputed from the stored values. */
void tmrt__kern__quantize_q4_k(const float *x, kern_block_q4_k *y, int64_t n) {
    for (int64_t b = 0; b < n / KERN_QK_K; b++, x += KERN_QK_K) {
        float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < 8; j++) {
            float lo = x[32 * j], hi = x[32 * j];
            for (int l = 1; l < 32; l++) {
                lo = fminf(lo, x[32 * j + l]);
                hi = fmaxf(hi, x[32 * j + l]);
            }
            if (lo > 0.0f) lo = 0.0f; /* the min is subtracted: keep it >= 0 */
            scale[j] = (hi - lo) / 15.0f;
            min[j] = -lo;
            max_scale = fmaxf(max_scale, scale[j]);
            max_min = fmaxf(max_min, min[j]);
        }
        kern_block_q4_k *blk = &y[b];
        memset(blk, 0, sizeof *blk);
        blk->d = f16_at_least(max_scale / 63.0f);
        blk->dmin = f16_at_least(max_min / 63.0f);
        const float d = kern_f16_to_f32(blk->d), dmin = kern_f16_to_f32(blk->dmin);
        uint8_t L[KERN_QK_K];
        for (int j = 0; j < 8; j++) {
            int ls = d > 0.0f ? clamp_int((int)ceilf(scale[j] / d), 0, 63) : 0;
            int lm = dmin > 0.0f ? clamp_int((int)ceilf(min[j] / dmin), 0, 63) : 0;
            if (j < 4) {
                blk->scales[j] = (uint8_t)ls;
                blk->scales[j + 4] = (uint8_t)lm;
            } else {
                blk->scales[j + 4] = (uint8_t)((ls & 0xf) | ((lm & 0xf) << 4));
                blk->scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
                blk->scales[j] |= (uint8_t)((lm >> 4) << 6);
            }
            const float ds = d * (float)ls, dm = dmin * (float)lm;
            for (int l = 0; l < 32; l++) {
                int q = ds > 0.0f ? round_even((x[32 * j + l] + dm) / ds) : 0;
                L[32 * j + l] = (uint8_t)clamp_int(q, 0, 15);
            }
        }
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++)
                blk->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
}

/* Q6_K: per 16-weight group g, w ~ d * scales[g] * (q - 32), q in 0..63;
 * scales[g] (int8, 1..127) rounded up from the group's max |w| / 31. */
void tmrt__kern__quantize_q6_k(const float *x, kern_block_q6_k *y, int64_t n) {
    for (int64_t b = 0; b < n / KERN_QK_K; b++, x += KERN_QK_K) {
        float gscale[16], max_scale = 0.0f;
        for (int g = 0; g < 16; g++) {
            float amax = 0.0f;
            for (int l = 0; l < 16; l++) amax = fmaxf(amax, fabsf(x[16 * g + l]));
            gscale[g] = amax / 31.0f;
            max_scale = fmaxf(max_scale, gscale[g]);
        }
        kern_block_q6_k *blk = &y[b];
        memset(blk, 0, sizeof *blk);
        blk->d = f16_at_least(max_scale / 127.0f);
        const float d = kern_f16_to_f32(blk->d);
        uint8_t L[KERN_QK_K];
        for (int g = 0; g < 16; g++) {
            int s = d > 0.0f ? clamp_int((int)ceilf(gscale[g] / d), 0, 127) : 0;
            blk->scales[g] = (int8_t)s;
            const float ds = d * (float)s;
            for (int l = 0; l < 16; l++) {
                int q = ds > 0.0f ? round_even(x[16 * g + l] / ds) : 0;
                L[16 * g + l] = (uint8_t)(clamp_int(q, -32, 31) + 32);
            }
        }
        for (int h = 0; h < 2; h++) {
            const uint8_t *Lh = L + 128 * h;
            uint8_t *ql = blk->ql + 64 * h, *qh = blk->qh + 32 * h;
            for (int l = 0; l < 32; l++) {
                ql[l] = (uint8_t)((Lh[l] & 0xf) | ((Lh[l + 64] & 0xf) << 4));
                ql[l + 32] = (uint8_t)((Lh[l + 32] & 0xf) | ((Lh[l + 96] & 0xf) << 4));
                qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                                  ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
            }
        }
    }
}

bool tmrt__kern_quantize_row(uint32_t type, const float *x, void *dst, int64_t n) {
    if (!tmrt__kern_type_supported(type, n) || !x || !dst) return false;
    switch (type) {
    case TMEM_GGML_F32: memcpy(dst, x, (size_t)n * sizeof(float)); break;
    case TMEM_GGML_F16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = kern_f32_to_f16(x[i]);
        break;
    case TMEM_GGML_BF16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = kern_f32_to_bf16(x[i]);
        break;
    case TMEM_GGML_Q8_0: tmrt__kern__quantize_q8_0(x, dst, n); break;
    case TMEM_GGML_Q4_K: tmrt__kern__quantize_q4_k(x, dst, n); break;
    case TMEM_GGML_Q6_K: tmrt__kern__quantize_q6_k(x, dst, n); break;
    default: return false;
    }
    return true;
}

static void dequantize_q8_0(const kern_block_q8_0 *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / KERN_QK8_0; b++) {
        const float d = kern_f16_to_f32(x[b].d);
        for (int j = 0; j < KERN_QK8_0; j++) *y++ = d * (float)x[b].qs[j];
    }
}

static void dequantize_q4_k(const kern_block_q4_k *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / KERN_QK_K; b++) {
        const float d = kern_f16_to_f32(x[b].d), dmin = kern_f16_to_f32(x[b].dmin);
        for (int c = 0; c < 4; c++) {
            const uint8_t *q = x[b].qs + 32 * c;
            uint8_t sc, m;
            kern_q4k_scale_min(x[b].scales, 2 * c, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            kern_q4k_scale_min(x[b].scales, 2 * c + 1, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0xf) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

static void dequantize_q6_k(const kern_block_q6_k *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / KERN_QK_K; b++, y += KERN_QK_K) {
        const float d = kern_f16_to_f32(x[b].d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[b].ql + 64 * h, *qh = x[b].qh + 32 * h;
            const int8_t *sc = x[b].scales + 8 * h;
            float *yh = y + 128 * h;
            for (int l = 0; l < 32; l++) {
                const int g = l / 16;
                int q[4];
                kern_q6k_quad(ql, qh, l, q);
                for (int k = 0; k < 4; k++)
                    yh[l + 32 * k] = d * (float)sc[g + 2 * k] * (float)q[k];
            }
        }
    }
}

bool tmrt__kern_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n) {
    if (!tmrt__kern_type_supported(type, n) || !src || !dst) return false;
    switch (type) {
    case TMEM_GGML_F32: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    case TMEM_GGML_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = kern_f16_to_f32(((const uint16_t *)src)[i]);
        break;
    case TMEM_GGML_BF16:
        for (int64_t i = 0; i < n; i++) dst[i] = kern_bf16_to_f32(((const uint16_t *)src)[i]);
        break;
    case TMEM_GGML_Q8_0: dequantize_q8_0(src, dst, n); break;
    case TMEM_GGML_Q4_K: dequantize_q4_k(src, dst, n); break;
    case TMEM_GGML_Q6_K: dequantize_q6_k(src, dst, n); break;
    default: return false;
    }
    return true;
}

void tmrt__kern_get_row(const kern_wmat *w, int64_t row, float *out) {
    const char *base = (const char *)w->data + (size_t)row * w->row_bytes;
    (void)tmrt__kern_dequantize_row(w->type, base, out, w->n_in);
}

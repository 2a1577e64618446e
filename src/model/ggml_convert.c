/*
 * Rows of the float ggml types to and from f32 (tmem_ggml_row_to_f32 /
 * _from_f32): what a converter or a random-weight generator needs to write
 * F32, F16 and BF16 tensors exactly as ggml/gguf-py do. F16 rounds to
 * nearest even (surface/half.c); BF16 rounds to nearest even and keeps NaN a
 * quiet NaN, as gguf-py's quantizer does. Quantised types live with the
 * runtime's kernels, which own the one quantizer.
 */
#include "model_internal.h"
#include "surface/surface_internal.h"
#include <string.h>

static uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u | 0x00400000u) >> 16); /* quiet NaN */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void wr16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

tmem_status tmem_ggml_row_to_f32(uint32_t type, const void *src, float *dst, uint64_t n) {
    if ((!src || !dst) && n) return tmem__err(TMEM_E_INVALID_ARG);
    const uint8_t *s = src;
    switch (type) {
    case TMEM_GGML_F32:
        if (n) memcpy(dst, src, (size_t)n * 4);
        return TMEM_OK;
    case TMEM_GGML_F16:
        for (uint64_t i = 0; i < n; i++) dst[i] = tmem__f16_to_f32(rd16(s + 2 * i));
        return TMEM_OK;
    case TMEM_GGML_BF16:
        for (uint64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(rd16(s + 2 * i));
        return TMEM_OK;
    default: return tmem__err(TMEM_E_UNSUPPORTED);
    }
}

tmem_status tmem_ggml_row_from_f32(uint32_t type, const float *src, void *dst, uint64_t n) {
    if ((!src || !dst) && n) return tmem__err(TMEM_E_INVALID_ARG);
    uint8_t *d = dst;
    switch (type) {
    case TMEM_GGML_F32:
        if (n) memcpy(dst, src, (size_t)n * 4);
        return TMEM_OK;
    case TMEM_GGML_F16:
        for (uint64_t i = 0; i < n; i++) wr16(d + 2 * i, tmem__f32_to_f16(src[i]));
        return TMEM_OK;
    case TMEM_GGML_BF16:
        for (uint64_t i = 0; i < n; i++) wr16(d + 2 * i, f32_to_bf16(src[i]));
        return TMEM_OK;
    default: return tmem__err(TMEM_E_UNSUPPORTED);
    }
}

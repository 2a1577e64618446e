/*
 * Rows of the float ggml types to and from f32 (tmem_ggml_row_to_f32 /
 * _from_f32): what a converter or a random-weight generator needs to write
 * F32, F16 and BF16 tensors exactly as ggml/gguf-py do, with the library's
 * one half/bfloat16 conversion (base/half.h): both round to nearest even;
 * a NaN stays a quiet NaN, as gguf-py's quantizer does. Quantised types live with the
 * runtime's kernels, which own the one quantizer.
 */
#include "model_internal.h"
#include "base/half.h"
#include <string.h>

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
        for (uint64_t i = 0; i < n; i++) dst[i] = tmem__bf16_to_f32(rd16(s + 2 * i));
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
        for (uint64_t i = 0; i < n; i++) wr16(d + 2 * i, tmem__f32_to_bf16(src[i]));
        return TMEM_OK;
    default: return tmem__err(TMEM_E_UNSUPPORTED);
    }
}

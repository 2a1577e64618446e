/* kern_half.h: f16 and bf16 <-> f32 conversions (scalar, bit-exact): the
 * runtime's one copy (kernels, KV rows, weights). The runtime sees only the
 * public API, and a call per element into the library would cost the hot
 * loops, so it keeps this inline copy instead of the library's base/half.h;
 * tests/runtime/test_half_twins checks the two give the same bits.
 *
 * f16 -> f32 and bf16 -> f32 are exact. f32 -> f16 rounds to nearest even
 * (what F16C's vcvtps2ph does with _MM_FROUND_TO_NEAREST_INT), so a value
 * converted here and there gives the same bits. f32 -> bf16 rounds to
 * nearest even and keeps NaNs quiet (ggml's rule). */
#ifndef TMRT_KERN_HALF_H
#define TMRT_KERN_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t kern_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float kern_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float kern_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf or NaN: keep the payload */
        return kern_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return kern_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t kern_f32_to_f16(float f) {
    uint32_t u = kern_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) /* NaN: quiet, keep the top payload bits */
        return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    if (abs >= 0x477ff000u) /* rounds to >= 65520: infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (abs < 0x38800000u) {
        /* below the smallest normal f16 (2^-14): a subnormal or zero.
         * Adding 0.5 makes the FPU round the mantissa at 2^-24 for us
         * (round to nearest even), the low bits are then the f16 mantissa. */
        float r = kern_bits_f32(abs) + 0.5f;
        return (uint16_t)(sign | (uint16_t)(kern_f32_bits(r) - 0x3f000000u));
    }
    /* normal: rebias the exponent, round the 13 dropped bits to even */
    uint32_t odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + odd; /* (15 - 127) << 23, plus the rounding bias */
    return (uint16_t)(sign | (uint16_t)(abs >> 13));
}

static inline float kern_bf16_to_f32(uint16_t h) {
    return kern_bits_f32((uint32_t)h << 16);
}

static inline uint16_t kern_f32_to_bf16(float f) {
    uint32_t u = kern_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif /* TMRT_KERN_HALF_H */

/*
 * IEEE 754 binary16 and bfloat16 <-> binary32 in portable C11 (no _Float16,
 * no F16C intrinsics): round to nearest even, subnormals, infinities and NaN
 * kept (base/half.h).
 */
#include "base/half.h"
#include <string.h>

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t tmem__f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xFFu;
    uint32_t man = x & 0x7FFFFFu;
    if (exp == 0xFFu) /* inf or NaN (keep NaN quiet and non-zero) */
        return (uint16_t)(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0u));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7C00u); /* overflow -> inf */
    if (e <= 0) {
        /* Subnormal half (or zero): shift the implicit-one mantissa right,
         * rounding to nearest even on the bits shifted out. */
        if (e < -10) return sign;
        uint32_t m = man | 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half_bits = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half_bits & 1u))) half_bits++;
        return (uint16_t)(sign | half_bits);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1FFFu;
    /* A carry out of the mantissa bumps the exponent, which is right (and
     * turns the largest finite value into infinity, also right). */
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float tmem__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0) {
        if (!man) return bits_f32(sign);
        /* Subnormal: normalise. */
        int32_t e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        man &= 0x3FFu;
        return bits_f32(sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13));
    }
    if (exp == 31) return bits_f32(sign | 0x7F800000u | (man << 13));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

/* bfloat16 is the top half of a binary32: round the low 16 bits to nearest
 * even; a NaN keeps its top bits and gets the quiet bit (gguf-py's rule). */
uint16_t tmem__f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u | 0x00400000u) >> 16);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float tmem__bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

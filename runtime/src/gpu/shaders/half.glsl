// half.glsl: f32 -> f16 bits, round to nearest even, subnormals and
// infinities kept, NaN quiet with its top payload bits: the same bits as the
// CPU's kern_f32_to_f16 (runtime/src/kern/kern_half.h), so the KV rows are
// the same on both (packHalf2x16 leaves the rounding to the driver).
uint f32_to_f16(float f) {
    uint u = floatBitsToUint(f);
    uint sign = (u >> 16) & 0x8000u, ex = (u >> 23) & 0xFFu, man = u & 0x7FFFFFu;
    if (ex == 0xFFu) return man != 0u ? sign | 0x7E00u | (man >> 13) : sign | 0x7C00u;
    int e = int(ex) - 127 + 15;
    if (e >= 31) return sign | 0x7C00u;
    if (e <= 0) {
        if (e < -10) return sign;
        man |= 0x800000u;
        uint shift = uint(14 - e), half_ = 1u << (shift - 1u);
        uint r = man >> shift, rem = man & ((1u << shift) - 1u);
        if (rem > half_ || (rem == half_ && (r & 1u) != 0u)) r++;
        return sign | r;
    }
    uint r = (uint(e) << 10) | (man >> 13), rem = man & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u)) r++;
    return sign | r;
}

// bf16.glsl: BF16 weights (the top half of an f32), 2 bytes an element.
#define HAS_LOAD1 1
const uint QK = 1u, UNIT = 8u;
float load1(uint rb, uint k) { return bf16_bits(rd_u16(rb + 2u * k)); }
void pair(uint v, out float lo, out float hi) {
    lo = uintBitsToFloat(v << 16), hi = uintBitsToFloat(v & 0xFFFF0000u);
}
void load8(uint rb, uint k, out float w[8]) {
    uint b = rb + 2u * k;
    if ((b & 3u) == 0u) {
        for (uint i = 0u; i < 4u; i++) pair(rd_u32(b + 4u * i), w[2u * i], w[2u * i + 1u]);
    } else {
        for (uint i = 0u; i < 8u; i++) w[i] = load1(rb, k + i);
    }
}
void load_unit(uint rb, uint u, out float w[UNIT]) {
    uvec4 q = rd_u128(rb + 16u * u);
    pair(q.x, w[0], w[1]), pair(q.y, w[2], w[3]), pair(q.z, w[4], w[5]), pair(q.w, w[6], w[7]);
}

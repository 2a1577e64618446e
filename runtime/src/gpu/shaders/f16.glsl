// f16.glsl: F16 weights (IEEE binary16), 2 bytes an element.
#define HAS_LOAD1 1
const uint QK = 1u, UNIT = 8u;
float load1(uint rb, uint k) { return half_bits(rd_u16(rb + 2u * k)); }
void load8(uint rb, uint k, out float w[8]) {
    uint b = rb + 2u * k;
    if ((b & 3u) == 0u) {
        for (uint i = 0u; i < 4u; i++) {
            vec2 h = unpackHalf2x16(rd_u32(b + 4u * i));
            w[2u * i] = h.x, w[2u * i + 1u] = h.y;
        }
    } else {
        for (uint i = 0u; i < 8u; i++) w[i] = load1(rb, k + i);
    }
}
// the UNIT weights from 8*u, one 16-byte read (rows 16-byte aligned)
void load_unit(uint rb, uint u, out float w[UNIT]) {
    uvec4 q = rd_u128(rb + 16u * u);
    vec2 a = unpackHalf2x16(q.x), b = unpackHalf2x16(q.y), c = unpackHalf2x16(q.z), d = unpackHalf2x16(q.w);
    w[0] = a.x, w[1] = a.y, w[2] = b.x, w[3] = b.y, w[4] = c.x, w[5] = c.y, w[6] = d.x, w[7] = d.y;
}

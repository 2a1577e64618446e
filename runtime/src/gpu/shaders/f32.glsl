// f32.glsl: F32 weights, 4 bytes an element.
#define HAS_LOAD1 1
const uint QK = 1u, UNIT = 4u;
float load1(uint rb, uint k) { return uintBitsToFloat(rd_u32(rb + 4u * k)); }
void load8(uint rb, uint k, out float w[8]) {
    for (uint i = 0u; i < 8u; i++) w[i] = load1(rb, k + i);
}
// the UNIT weights from 4*u, one 16-byte read (rows 16-byte aligned)
void load_unit(uint rb, uint u, out float w[UNIT]) {
    uvec4 q = rd_u128(rb + 16u * u);
    w[0] = uintBitsToFloat(q.x), w[1] = uintBitsToFloat(q.y), w[2] = uintBitsToFloat(q.z), w[3] = uintBitsToFloat(q.w);
}

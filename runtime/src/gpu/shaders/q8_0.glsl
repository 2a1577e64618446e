// q8_0.glsl: ggml Q8_0 blocks of 32 weights, 34 bytes: d (f16) | qs[32] (int8);
// w = d * q. Blocks are 2-byte aligned.
const uint QK = 32u, QB = 34u, UNIT = 8u;
// 8 weights from k (a multiple of 8) of the row at byte rb
void load8(uint rb, uint k, out float w[8]) {
    uint bb = rb + QB * (k >> 5);
    float d = half_bits(rd_u16(bb));
    uvec2 q = rd_u64_a2(bb + 2u + (k & 24u));
    for (uint i = 0u; i < 4u; i++) w[i] = d * float(sbyte(q.x, i)), w[4u + i] = d * float(sbyte(q.y, i));
}

// q6_k.glsl: ggml Q6_K super-blocks of 256 weights, 210 bytes:
// ql[128] (low 4 bits) | qh[64] (high 2 bits) | scales[16] (int8) | d (f16);
// w = d * scales[i/16] * (q - 32). For half h (128 weights) and l < 32,
// weights 128h + 32m + l (m 0..3) take nibble m>>1 of ql[64h + 32(m&1) + l]
// and bits 2m of qh[32h + l]. Blocks are 2-byte aligned.
const uint QK = 256u, QB = 210u, UNIT = 32u;

void load8(uint rb, uint k, out float w[8]) {
    uint bb = rb + QB * (k >> 8), kk = k & 255u, h = kk >> 7, m = (kk >> 5) & 3u, l = kk & 31u;
    float d = half_bits(rd_u16(bb + 208u));
    uint si = 8u * h + 2u * m + (l >> 4);
    float s = d * float(sbyte(rd_u32_a2(bb + 192u + (si & ~1u)), si & 1u));
    uvec2 ql = rd_u64_a2(bb + 64u * h + 32u * (m & 1u) + l);
    uvec2 qh = rd_u64_a2(bb + 128u + 32u * h + l);
    uint ns = 4u * (m >> 1), hs = 2u * m;
    for (uint i = 0u; i < 8u; i++) {
        uint lo = ((i < 4u ? ql.x : ql.y) >> (8u * (i & 3u) + ns)) & 15u;
        uint hb = ((i < 4u ? qh.x : qh.y) >> (8u * (i & 3u) + hs)) & 3u;
        w[i] = s * float(int(lo | (hb << 4)) - 32);
    }
}

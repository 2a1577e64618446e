// q4_k.glsl: ggml Q4_K super-blocks of 256 weights, 144 bytes:
// d, dmin (f16) | scales[12] (6-bit scale and min of 8 sub-blocks of 32) |
// qs[128]: chunk c (64 weights) is qs[32c..32c+32), low nibbles weights
// 64c + l, high nibbles 64c + 32 + l.  w = d*sc*q - dmin*m.
const uint QK = 256u, QB = 144u, UNIT = 32u;

uint byte_of(uvec3 s, uint i) { return (s[i >> 2] >> (8u * (i & 3u))) & 255u; }

// scale and min of sub-block j (0..7) from the 12 scale bytes (three words)
void scale_min(uvec3 s, uint j, out float sc, out float m) {
    if (j < 4u) {
        sc = float(byte_of(s, j) & 63u), m = float(byte_of(s, j + 4u) & 63u);
    } else {
        uint b = byte_of(s, j + 4u);
        sc = float((b & 15u) | ((byte_of(s, j - 4u) >> 6) << 4));
        m = float((b >> 4) | ((byte_of(s, j) >> 6) << 4));
    }
}

void load8(uint rb, uint k, out float w[8]) {
    uint bb = rb + QB * (k >> 8), kk = k & 255u, c = kk >> 6, hi = (kk >> 5) & 1u;
    vec2 dm = unpackHalf2x16(rd_u32(bb));
    float sc, m;
    scale_min(uvec3(rd_u32(bb + 4u), rd_u32(bb + 8u), rd_u32(bb + 12u)), 2u * c + hi, sc, m);
    uint p = bb + 16u + 32u * c + (kk & 31u);
    uvec2 q = uvec2(rd_u32(p), rd_u32(p + 4u));
    float a = dm.x * sc, b = dm.y * m;
    for (uint i = 0u; i < 4u; i++) {
        w[i] = a * float((q.x >> (8u * i + 4u * hi)) & 15u) - b;
        w[4u + i] = a * float((q.y >> (8u * i + 4u * hi)) & 15u) - b;
    }
}

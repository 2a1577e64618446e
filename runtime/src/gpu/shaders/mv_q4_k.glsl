// mv_q4_k.glsl: mat-vec pieces of Q4_K rows: 16 bytes of qs a unit (32
// weights: 16 low nibbles of sub-block 2c, 16 high nibbles of 2c + 1),
// eight threads on one super-block.
uint mv_units() { return pc.n_in / 32u; }
void mv_unit(uint rb, uint u, uint r) {
    uint bb = rb + QB * (u >> 3), j = u & 7u, c = j >> 1, l0 = 16u * (j & 1u);
    vec2 dm = unpackHalf2x16(rd_u32(bb));
    uvec3 s = uvec3(rd_u32(bb + 4u), rd_u32(bb + 8u), rd_u32(bb + 12u));
    float sl, ml, sh, mh;
    scale_min(s, 2u * c, sl, ml);
    scale_min(s, 2u * c + 1u, sh, mh);
    uint p = bb + 16u + 32u * c + l0;
    uvec4 q = (pc.flags & FLAG_VEC) != 0u ? rd_u128(p)
                                          : uvec4(rd_u32(p), rd_u32(p + 4u), rd_u32(p + 8u), rd_u32(p + 12u));
    uint k = 256u * (u >> 3) + 64u * c + l0;
    for (uint t = 0u; t < MAX_TOK; t++) {
        if (t >= nt) break;
        uint o = xoff[t] + k;
        float lo = 0.0, hi = 0.0, xl = 0.0, xh = 0.0;
        for (uint i = 0u; i < 16u; i++) {
            uint b = (q[i >> 2] >> (8u * (i & 3u))) & 255u;
            float a = x[o + i], e = x[o + 32u + i];
            lo += float(b & 15u) * a, xl += a;
            hi += float(b >> 4) * e, xh += e;
        }
        acc[r][t] += dm.x * (sl * lo + sh * hi) - dm.y * (ml * xl + mh * xh);
    }
}
void mv_tail(uint rb, uint tid, uint r) {}

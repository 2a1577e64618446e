// mv_q6_k.glsl: mat-vec pieces of Q6_K rows: 32 weights a unit (half h,
// l0..l0+7, the four quarters m), eight threads on one super-block.
uint mv_units() { return pc.n_in / 32u; }
void mv_unit(uint rb, uint u, uint r) {
    uint bb = rb + QB * (u >> 3), j = u & 7u, h = j >> 2, l0 = 8u * (j & 3u);
    float d = half_bits(rd_u16(bb + 208u));
    uvec2 sc = rd_u64_a2(bb + 192u + 8u * h); // the half's 8 scales
    uvec2 qa = rd_u64_a2(bb + 64u * h + l0), qb = rd_u64_a2(bb + 64u * h + 32u + l0);
    uvec2 qh = rd_u64_a2(bb + 128u + 32u * h + l0);
    uint k = 256u * (u >> 3) + 128u * h + l0, si = l0 >> 4;
    float s[4];
    for (uint m = 0u; m < 4u; m++) s[m] = d * float(sbyte(sc[(si + 2u * m) >> 2], (si + 2u * m) & 3u));
    for (uint t = 0u; t < MAX_TOK; t++) {
        if (t >= nt) break;
        uint o = xoff[t] + k;
        float v[4] = float[4](0.0, 0.0, 0.0, 0.0);
        for (uint i = 0u; i < 8u; i++) {
            uint sh = 8u * (i & 3u);
            uint a = (qa[i >> 2] >> sh) & 255u, b = (qb[i >> 2] >> sh) & 255u, e = (qh[i >> 2] >> sh) & 255u;
            v[0] += float(int((a & 15u) | ((e & 3u) << 4)) - 32) * x[o + i];
            v[1] += float(int((b & 15u) | (((e >> 2) & 3u) << 4)) - 32) * x[o + 32u + i];
            v[2] += float(int((a >> 4) | (((e >> 4) & 3u) << 4)) - 32) * x[o + 64u + i];
            v[3] += float(int((b >> 4) | (((e >> 6) & 3u) << 4)) - 32) * x[o + 96u + i];
        }
        acc[r][t] += s[0] * v[0] + s[1] * v[1] + s[2] * v[2] + s[3] * v[3];
    }
}
void mv_tail(uint rb, uint tid, uint r) {}

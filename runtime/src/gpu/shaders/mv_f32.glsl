// mv_f32.glsl: mat-vec pieces of f32 rows: 8 weights (two 16-byte reads) a
// unit when the rows are 16-byte aligned, element by element otherwise and
// for the tail.
uint mv_units() { return (pc.flags & FLAG_VEC) != 0u ? pc.n_in / 8u : 0u; }
void mv_unit(uint rb, uint u, uint r) {
    float a[4], b[4], w[8];
    load_unit(rb, 2u * u, a);
    load_unit(rb, 2u * u + 1u, b);
    for (uint i = 0u; i < 4u; i++) w[i] = a[i], w[4u + i] = b[i];
    dot8(r, 8u * u, w);
}
void mv_tail(uint rb, uint tid, uint r) { tail1(rb, mv_units() * 8u, r); }

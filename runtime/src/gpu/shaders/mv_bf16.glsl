// mv_bf16.glsl: mat-vec pieces of bf16 rows: 8 weights (16 bytes) a unit when
// the rows are 16-byte aligned, element by element otherwise and for the tail.
uint mv_units() { return (pc.flags & FLAG_VEC) != 0u ? pc.n_in / 8u : 0u; }
void mv_unit(uint rb, uint u, uint r) {
    float w[8];
    load_unit(rb, u, w);
    dot8(r, 8u * u, w);
}
void mv_tail(uint rb, uint tid, uint r) { tail1(rb, mv_units() * 8u, r); }

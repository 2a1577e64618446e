// mv_q8_0.glsl: mat-vec pieces of Q8_0 rows: a quarter block (8 weights) a
// unit, four threads on one block.
uint mv_units() { return pc.n_in / 8u; }
void mv_unit(uint rb, uint u, uint r) {
    float w[8];
    load8(rb, 8u * u, w);
    dot8(r, 8u * u, w);
}
void mv_tail(uint rb, uint tid, uint r) {}

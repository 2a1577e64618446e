// get_rows.glsl: out[t][0..n_in) = row ids[t] of W dequantised (the
// embedding lookup), PER consecutive elements a thread; an id past the
// table gives a row of zeros. A table past maxStorageBufferRange is bound in
// pieces of rows [row0, row0 + n_rows), a dispatch each: a piece writes the
// tokens whose id it holds (the last one the zeros).
// Bindings: 0 W, 1 ids (uint), 2 out f32 [n][ld].
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
layout(std430, set = 0, binding = 1) readonly buffer I { uint ids[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { float o[]; };
layout(push_constant) uniform P {
    uint n_in, n_rows, row_bytes, w_base;
    uint n_tok, ld, per_tok;          // per_tok: workgroups a token
    uint row0, n_total, last;         // this piece's first row; the table's rows; last piece
} pc;

void main() {
    uint g = group_id(), t = g / pc.per_tok;
    if (t >= pc.n_tok) return;
    uint k = ((g % pc.per_tok) * WG + gl_LocalInvocationID.x) * PER;
    uint id = ids[t], local = id - pc.row0; // wraps for ids below the piece
    bool ok = local < pc.n_rows;
    if (k >= pc.n_in || (!ok && (pc.last == 0u || id < pc.n_total))) return;
    uint rb = pc.w_base + min(local, pc.n_rows - 1u) * pc.row_bytes;
#if PER == 8
    float w[8];
    load8(rb, k, w);
    for (uint i = 0u; i < 8u; i++) o[t * pc.ld + k + i] = ok ? w[i] : 0.0;
#else
    o[t * pc.ld + k] = ok ? load1(rb, k) : 0.0;
#endif
}

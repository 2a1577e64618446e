// matvec_head.glsl: declarations of the mat-vec shaders (decode: up to
// MAX_TOK token rows per workgroup).  y[t][y_col0 + o] = W[o] . x[xrow(t)]
// for o < n_out (rows of this dispatch), t < n_tok.
// Bindings: 0 W (the type's blocks, rows of row_bytes from w_base),
// 1 x f32 [..][ldx], 2 y f32 [n_tok][ldy], 3 xrows uint (token -> x row,
// read when FLAG_XROWS). A workgroup of WG threads takes ROWS rows and
// MAX_TOK tokens; its threads split the row into UNIT-weight pieces.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 32u;
layout(constant_id = 1) const uint ROWS = 2u;
#define MAX_TOK 8u
#define FLAG_XROWS 1u
#define FLAG_VEC 2u   // rows and w_base 16-byte aligned: vector reads

layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 3) readonly buffer XR { uint xrows[]; };
layout(push_constant) uniform P {
    uint n_in, n_out, row_bytes, w_base;
    uint n_tok, ldx, ldy, y_col0;
    uint flags, row_groups;
} pc;

float acc[ROWS][MAX_TOK];
uint xoff[MAX_TOK];
uint nt;

// acc[r][t] += sum_i w[i] * x[t][k + i], i < 8
void dot8(uint r, uint k, float w[8]) {
    for (uint t = 0u; t < MAX_TOK; t++) {
        if (t >= nt) break;
        uint o = xoff[t] + k;
        float s = 0.0;
        for (uint i = 0u; i < 8u; i++) s += w[i] * x[o + i];
        acc[r][t] += s;
    }
}

#ifdef HAS_LOAD1
// the element-wise tail of float rows: weights from k0 on, one per thread
void tail1(uint rb, uint k0, uint r) {
    for (uint k = k0 + gl_LocalInvocationID.x; k < pc.n_in; k += WG) {
        float w = load1(rb, k);
        for (uint t = 0u; t < MAX_TOK; t++)
            if (t < nt) acc[r][t] += w * x[xoff[t] + k];
    }
}
#endif

// layernorm.comp: LayerNorm of rows of n floats (the vision encoder's,
// vision/ops.c), one workgroup a row:
//   out = (x - mean) / sqrt(var + eps) * w + b    (var: mean of (x - mean)^2)
// Bindings: 0 w, 1 b (vectors, vec_w), 2 x, 3 out (out may alias x).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#include "common.glsl"
#include "vecw.glsl"
#include "reduce.glsl"
layout(std430, set = 0, binding = 0) readonly buffer W { uint w32[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b32[]; };
VEC_W(weight, w32)
VEC_W(bias, b32)
layout(std430, set = 0, binding = 2) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 3) writeonly buffer O { float o[]; };
layout(push_constant) uniform P { uint n, n_rows, ld_x, ld_out, w_type, w_base, b_type, b_base; float eps; } pc;

void main() {
    uint r = group_id();
    if (r >= pc.n_rows) return;
    uint tid = gl_LocalInvocationID.x, xb = r * pc.ld_x;
    float s = 0.0;
    for (uint i = tid; i < pc.n; i += WG) s += x[xb + i];
    float mean = red_sum(s) / float(pc.n), v = 0.0;
    for (uint i = tid; i < pc.n; i += WG) v += (x[xb + i] - mean) * (x[xb + i] - mean);
    float inv = 1.0 / sqrt(red_sum(v) / float(pc.n) + pc.eps);
    for (uint i = tid; i < pc.n; i += WG) {
        float w = weight(pc.w_type, pc.w_base, i), b = bias(pc.b_type, pc.b_base, i);
        o[r * pc.ld_out + i] = (x[xb + i] - mean) * inv * w + b;
    }
}

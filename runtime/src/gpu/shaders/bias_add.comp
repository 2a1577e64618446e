// bias_add.comp: y[t][i] += b[i] for i < n, t < n_tok (rows ld apart), one
// element a thread (the vision encoder's bias rows). Bindings: 0 b (vector,
// vec_w), 1 y.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#include "common.glsl"
#include "vecw.glsl"
layout(std430, set = 0, binding = 0) readonly buffer B { uint b32[]; };
VEC_W(bias, b32)
layout(std430, set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { uint n, n_tok, ld, b_type, b_base; } pc;

void main() {
    uint e = group_id() * WG + gl_LocalInvocationID.x, i = e % pc.n, t = e / pc.n;
    if (t >= pc.n_tok) return;
    y[t * pc.ld + i] += bias(pc.b_type, pc.b_base, i);
}

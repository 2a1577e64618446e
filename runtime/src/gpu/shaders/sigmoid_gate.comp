// sigmoid_gate.comp: the attention output gate, x[t][h][i] *= sigmoid(g)
// with g = gate[t*gts + h*ghs + i] (the second half of each head of the
// joint q + gate projection) and x at t*xts + h*xhs + i.
// Bindings: 0 x (in place), 1 gate.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer G { float gate[]; };
layout(push_constant) uniform P { uint n, n_head, n_tok, xts, xhs, gts, ghs; } pc;
void main() {
    uint e = group_id() * WG + gl_LocalInvocationID.x, i = e % pc.n, th = e / pc.n;
    uint h = th % pc.n_head, t = th / pc.n_head;
    if (t >= pc.n_tok) return;
    uint xi = t * pc.xts + h * pc.xhs + i;
    x[xi] *= 1.0 / (1.0 + exp(-gate[t * pc.gts + h * pc.ghs + i]));
}

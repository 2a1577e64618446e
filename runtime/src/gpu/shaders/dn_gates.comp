// dn_gates.comp: the Gated DeltaNet's per-head gates, for t < n_tok, h < n_head:
//   gate[t][h] = softplus(alpha[t][h] + dt_bias[h]) * ssm_a[h]   (softplus as the CPU's)
//   beta[t][h] = sigmoid(beta[t][h])                               (in place)
// Bindings: 0 dt_bias (vector), 1 ssm_a (vector), 2 alpha, 3 beta, 4 gate.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#include "common.glsl"
#include "vecw.glsl"
layout(std430, set = 0, binding = 0) readonly buffer DB { uint db32[]; };
layout(std430, set = 0, binding = 1) readonly buffer SA { uint sa32[]; };
VEC_W(dt_bias, db32)
VEC_W(ssm_a, sa32)
layout(std430, set = 0, binding = 2) readonly buffer AL { float alpha[]; };
layout(std430, set = 0, binding = 3) buffer BE { float beta[]; };
layout(std430, set = 0, binding = 4) writeonly buffer GA { float gate[]; };
layout(push_constant) uniform P { uint n_head, n; uint bias_type, bias_base, a_type, a_base; } pc;

// log1p(exp(v)) without losing exp(v) below f32's epsilon: log(u) * e / (u - 1)
float softplus(float v) {
    if (v > 20.0) return v;
    float e = exp(v), u = 1.0 + e;
    return u == 1.0 ? e : log(u) * (e / (u - 1.0));
}

void main() {
    uint i = group_id() * WG + gl_LocalInvocationID.x;
    if (i >= pc.n) return;
    uint h = i % pc.n_head;
    gate[i] = softplus(alpha[i] + dt_bias(pc.bias_type, pc.bias_base, h)) * ssm_a(pc.a_type, pc.a_base, h);
    beta[i] = 1.0 / (1.0 + exp(-beta[i]));
}

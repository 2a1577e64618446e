// l2norm.comp: L2 norm of groups of n floats in place, one workgroup a
// group (token t, head h at t*ts + h*hs): the DeltaNet's q and k heads,
//   x = x * s / max(sqrt(sum x^2), eps),  s = scale for h < n_scaled, else 1.
// Binding: 0 x.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#include "common.glsl"
#include "reduce.glsl"
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform P { uint n, n_head, n_groups, ts, hs, n_scaled; float eps, scale; } pc;

void main() {
    uint g = group_id();
    if (g >= pc.n_groups) return;
    uint h = g % pc.n_head, base = (g / pc.n_head) * pc.ts + h * pc.hs, tid = gl_LocalInvocationID.x;
    float ss = 0.0;
    for (uint i = tid; i < pc.n; i += WG) ss += x[base + i] * x[base + i];
    float norm = sqrt(red_sum(ss)), s = (h < pc.n_scaled ? pc.scale : 1.0) / max(norm, pc.eps);
    for (uint i = tid; i < pc.n; i += WG) x[base + i] *= s;
}

// rmsnorm.comp: RMS norm of groups of n floats, one workgroup a group
// (token t, head h at t*ts + h*hs): the rows of a layer (n_head 1) and the
// per-head q/k norms. With FLAG_ADD the group is x + a, written to `sum`
// first (the residual add fused with the next norm). With FLAG_GATE the
// result is multiplied by silu(a) (the DeltaNet's gated norm, a = z).
//   out = v / sqrt(mean(v^2) + eps) * (w + w_offset)    (w absent: 1)
// Bindings: 0 w (vector, vec_w), 1 x, 2 out, 3 a, 4 sum.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#include "common.glsl"
#include "vecw.glsl"
layout(std430, set = 0, binding = 0) readonly buffer W { uint w32[]; };
VEC_W(vec_w, w32)
#include "reduce.glsl"
#define FLAG_ADD 1u
#define FLAG_W 2u
#define FLAG_GATE 4u
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { float o[]; };
layout(std430, set = 0, binding = 3) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 4) buffer S { float sum[]; };
layout(push_constant) uniform P {
    uint n, n_head, n_groups, ts, hs;
    uint w_type, w_base, flags;
    float eps, w_offset;
} pc;

void main() {
    uint g = group_id();
    if (g >= pc.n_groups) return;
    uint base = (g / pc.n_head) * pc.ts + (g % pc.n_head) * pc.hs, tid = gl_LocalInvocationID.x;
    bool add = (pc.flags & FLAG_ADD) != 0u;
    float ss = 0.0;
    for (uint i = tid; i < pc.n; i += WG) {
        float v = x[base + i];
        if (add) v += a[base + i], sum[base + i] = v;
        ss += v * v;
    }
    float scale = 1.0 / sqrt(red_sum(ss) / float(pc.n) + pc.eps);
    for (uint i = tid; i < pc.n; i += WG) {
        float v = add ? sum[base + i] : x[base + i]; // this thread wrote sum[i]: sum may alias x
        float w = (pc.flags & FLAG_W) != 0u ? vec_w(pc.w_type, pc.w_base, i) + pc.w_offset : 1.0;
        float r = v * scale * w;
        if ((pc.flags & FLAG_GATE) != 0u) {
            float z = a[base + i];
            r = z / (1.0 + exp(-z)) * r;
        }
        o[base + i] = r;
    }
}

// rmsnorm.comp: RMS norm of groups of n floats, one workgroup a group
// (token t, head h at t*ts + h*hs): the rows of a layer (n_head 1) and the
// per-head q/k norms. With FLAG_ADD the group is x + a, written to `sum`
// first (the residual add fused with the next norm). With FLAG_GATE the
// result is multiplied by silu(a) (the DeltaNet's gated norm, a = z). With
// FLAG_ROPE the first n_rot dims of the normed group are then rotated as
// rope.comp does (the q/k norm and RoPE of attention in one dispatch).
//   out = v / sqrt(mean(v^2) + eps) * (w + w_offset)    (w absent: 1)
// Bindings: 0 w (vector, vec_w), 1 x, 2 out, 3 a, 4 sum, 5 pos, 6 step.
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
#define FLAG_ROPE 8u
#define FLAG_POS 16u
#define FLAG_STEP 32u
#define POS_BIND 5
#define STEP_BIND 6
#include "step.glsl"
#include "ffloat.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { float o[]; };
layout(std430, set = 0, binding = 3) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 4) buffer S { float sum[]; };
layout(push_constant) uniform P {
    uint n, n_head, n_groups, ts, hs;
    uint w_type, w_base, flags;
    float eps, w_offset;
    uint n_rot, n_past;
    int s0, s1, s2, s3;
    float scale_hi, scale_lo;
} pc;
#include "rope.glsl"

// element i of the group, normed (and weighted, gated)
float normed(uint base, uint i, float scale) {
    bool add = (pc.flags & FLAG_ADD) != 0u;
    float v = add ? sum[base + i] : x[base + i]; // this thread wrote sum[i]: sum may alias x
    float w = (pc.flags & FLAG_W) != 0u ? vec_w(pc.w_type, pc.w_base, i) + pc.w_offset : 1.0;
    float r = v * scale * w;
    if ((pc.flags & FLAG_GATE) != 0u) {
        float z = a[base + i];
        r = z / (1.0 + exp(-z)) * r;
    }
    return r;
}

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
    if ((pc.flags & FLAG_ROPE) == 0u) {
        for (uint i = tid; i < pc.n; i += WG) o[base + i] = normed(base, i, scale);
        return;
    }
    // pairs (i, i + half) rotated, then the dims past n_rot: a pair's thread
    // reads sum[] other threads wrote (and writes o[] in place of x[] only
    // where it alone reads)
    uint half_ = pc.n_rot / 2u, t = g / pc.n_head;
    memoryBarrierBuffer();
    barrier();
    for (uint e = tid; e < pc.n - half_; e += WG) {
        if (e < half_) {
            float x0 = normed(base, e, scale), x1 = normed(base, e + half_, scale);
            vec2 cs = rope_cos_sin(t, e);
            o[base + e] = x0 * cs.x - x1 * cs.y;
            o[base + e + half_] = x0 * cs.y + x1 * cs.x;
        } else {
            o[base + e + half_] = normed(base, e + half_, scale);
        }
    }
}

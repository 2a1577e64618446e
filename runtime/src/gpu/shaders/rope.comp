// rope.comp: partial M-RoPE in place (runtime/src/forward/rope.c): for
// each head of each token the first n_rot dims, NEOX pairs (i, i + n_rot/2),
// pair i rotated by its angle (rope.glsl: the interleaved sections, the
// CPU's angle; sin/cos with a Cody-Waite reduction and minimax polynomials,
// ~1e-7 absolute whatever the driver's own sin/cos precision). One pair a
// thread.
// Bindings: 0 x, 1 pos (int), 2 step.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#define FLAG_POS 1u
#define FLAG_STEP 2u
#define STEP_BIND 2
#define POS_BIND 1
#include "common.glsl"
#include "step.glsl"
#include "ffloat.glsl"
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform P {
    uint n_tok, n_head, ts, hs, n_rot, flags, n_past;
    int s0, s1, s2, s3;
    float scale_hi, scale_lo; // theta_scale = base^(-2/n_rot) as a float-float
} pc;
#include "rope.glsl"

void main() {
    uint half_ = pc.n_rot / 2u, e = group_id() * WG + gl_LocalInvocationID.x;
    uint i = e % half_, th = e / half_, h = th % pc.n_head, t = th / pc.n_head;
    if (t >= pc.n_tok) return;
    vec2 cs = rope_cos_sin(t, i);
    uint b = t * pc.ts + h * pc.hs;
    float x0 = x[b + i], x1 = x[b + i + half_];
    x[b + i] = x0 * cs.x - x1 * cs.y;
    x[b + i + half_] = x0 * cs.y + x1 * cs.x;
}

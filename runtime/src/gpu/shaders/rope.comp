// rope.comp: partial M-RoPE in place (runtime/src/forward/rope.c): for
// each head of each token the first n_rot dims, NEOX pairs (i, i + n_rot/2),
// pair i rotated by p * base^(-2i/n_rot), p the position component the
// interleaved sections pick (sector i % (s0+s1+s2+s3): %3 == 1 and < 3*s1:
// pos[1]; %3 == 2 and < 3*s2: pos[2]; %3 == 0 and < 3*s0: pos[0]; else
// pos[3]). Positions: 4 per token from `pos` (FLAG_POS), else n_past + t.
// The angle is computed as the CPU does (double there, float-float here:
// the same float), sin/cos with a Cody-Waite reduction and minimax
// polynomials (~1e-7 absolute, whatever the driver's sin/cos precision).
// Bindings: 0 x, 1 pos (int), 2 step.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#define FLAG_POS 1u
#define FLAG_STEP 2u
#define STEP_BIND 2
#include "common.glsl"
#include "step.glsl"
#include "ffloat.glsl"
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Pos { int pos[]; };
layout(push_constant) uniform P {
    uint n_tok, n_head, ts, hs, n_rot, flags, n_past;
    int s0, s1, s2, s3;
    float scale_hi, scale_lo; // theta_scale = base^(-2/n_rot) as a float-float
} pc;

int position(uint t, uint i) {
    int c = 0;
    int sect = pc.s0 + pc.s1 + pc.s2 + pc.s3;
    if (sect > 0) {
        int s = int(i) % sect;
        if (s % 3 == 1 && s < 3 * pc.s1) c = 1;
        else if (s % 3 == 2 && s < 3 * pc.s2) c = 2;
        else if (s % 3 == 0 && s < 3 * pc.s0) c = 0;
        else c = 3;
    }
    if ((pc.flags & FLAG_POS) != 0u) return pos[4u * t + uint(c)];
    return int(n_past_of(pc.flags, pc.n_past) + t);
}

void main() {
    uint half_ = pc.n_rot / 2u, e = group_id() * WG + gl_LocalInvocationID.x;
    uint i = e % half_, th = e / half_, h = th % pc.n_head, t = th / pc.n_head;
    if (t >= pc.n_tok) return;
    vec2 sc = vec2(1.0, 0.0); // scale_i = theta_scale^i, as the CPU's running product
    for (uint k = 0u; k < i; k++) sc = ff_mul(sc, vec2(pc.scale_hi, pc.scale_lo));
    float theta = ff_to_float(ff_mul(vec2(float(position(t, i)), 0.0), sc));
    vec2 cs = ff_cos_sin(theta);
    uint b = t * pc.ts + h * pc.hs;
    float x0 = x[b + i], x1 = x[b + i + half_];
    x[b + i] = x0 * cs.x - x1 * cs.y;
    x[b + i + half_] = x0 * cs.y + x1 * cs.x;
}

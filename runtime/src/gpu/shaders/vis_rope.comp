// vis_rope.comp: the vision encoder's 2D rotary positions in place on q and
// k of every token's qkv row [q | k | v] (vision/attention.c tmrt__vis_rope,
// HF's Qwen3_5VisionRotaryEmbedding): head_dim/4 frequencies for the
// patch's row, head_dim/4 for its column, rotate_half pairing i with
// i + head_dim/2; one pair a thread. The inverse frequencies come from the
// host (the CPU's powf); the angle is the CPU's float product; cos/sin by
// ffloat.glsl (accurate whatever the driver's sin/cos precision).
// Bindings: 0 qkv [n_tok][ld].
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64u;
#include "common.glsl"
#include "ffloat.glsl"
#include "vis_pos.glsl"
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
#define MAX_FREQ 24u
layout(push_constant) uniform P {
    uint n_tok, heads, hd, ld, grid_w, merge, H, pad;
    float inv_freq[MAX_FREQ];
} pc;

void main() {
    uint half_ = pc.hd / 2u, quarter = pc.hd / 4u;
    uint e = group_id() * WG + gl_LocalInvocationID.x, i = e % half_, rest = e / half_;
    uint h = rest % (2u * pc.heads), t = rest / (2u * pc.heads); // h: q heads, then k heads
    if (t >= pc.n_tok) return;
    uvec2 rc = vis_token_pos(t, pc.grid_w, pc.merge);
    uint row = rc.x, col = rc.y;
    precise float a = i < quarter ? float(row) * pc.inv_freq[i] : float(col) * pc.inv_freq[i - quarter];
    vec2 cs = ff_cos_sin(a);
    uint o = t * pc.ld + (h / pc.heads) * pc.H + (h % pc.heads) * pc.hd + i;
    float u = x[o], v = x[o + half_];
    precise float r0 = u * cs.x - v * cs.y, r1 = v * cs.x + u * cs.y;
    x[o] = r0, x[o + half_] = r1;
}

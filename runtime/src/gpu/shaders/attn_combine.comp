// attn_combine.comp: merges the splits of attention.comp: for each token t
// and head h, out = sum_s exp(m_s - M) acc_s / sum_s exp(m_s - M) l_s
// (M the largest m_s; empty splits have m = -inf and weigh 0), times
// sigmoid(gate) with FLAG_GATE. One workgroup a (t, h), a thread a dim.
// Bindings: 0 scratch [split][n_tok][n_head][hd + 2], 1 out, 2 gate.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#define FLAG_GATE 4u
#include "common.glsl"
layout(std430, set = 0, binding = 0) readonly buffer SC { float scratch[]; };
layout(std430, set = 0, binding = 1) writeonly buffer O { float o[]; };
layout(std430, set = 0, binding = 2) readonly buffer G { float gate[]; };
layout(push_constant) uniform P { uint n_tok, n_head, hd, n_split, ots, ohs, gts, ghs, flags; } pc;

void main() {
    uint g = group_id(), t = g / pc.n_head, h = g % pc.n_head;
    if (t >= pc.n_tok) return;
    uint stride = pc.n_tok * pc.n_head * (pc.hd + 2u), base = (t * pc.n_head + h) * (pc.hd + 2u);
    float M = -1.0 / 0.0;
    for (uint s = 0u; s < pc.n_split; s++) M = max(M, scratch[s * stride + base]);
    for (uint d = gl_LocalInvocationID.x; d < pc.hd; d += WG) {
        float num = 0.0, den = 0.0;
        for (uint s = 0u; s < pc.n_split; s++) {
            float m = scratch[s * stride + base];
            float wt = m == -1.0 / 0.0 ? 0.0 : exp(m - M);
            num += wt * scratch[s * stride + base + 2u + d];
            den += wt * scratch[s * stride + base + 1u];
        }
        float v = den > 0.0 ? num / den : 0.0;
        if ((pc.flags & FLAG_GATE) != 0u) v *= 1.0 / (1.0 + exp(-gate[t * pc.gts + h * pc.ghs + d]));
        o[t * pc.ots + h * pc.ohs + d] = v;
    }
}

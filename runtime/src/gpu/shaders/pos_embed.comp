// pos_embed.comp: x[t][i] += the learned position embedding interpolated to
// the image's grid, as vision/ops.c's tmrt__vis_add_pos_embed (HF's
// fast_pos_embed_interpolate: bilinear over a side x side table at
// align-corners linspace positions), one element a thread. The linspace
// steps (side - 1) / (grid - 1) come from the host (a division the device
// may round differently); the rest is the CPU's products and sums in its
// order, `precise` (no contraction into FMA): bit for bit the CPU's.
// Token t's grid position is its merge-order one (tmrt__vis_token_pos).
// Bindings: 0 table (rows of H, F32/F16/BF16: vec_w), 1 x [n_tok][H].
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#include "common.glsl"
#include "vecw.glsl"
#include "vis_pos.glsl"
layout(std430, set = 0, binding = 0) readonly buffer T { uint t32[]; };
VEC_W(tab, t32)
layout(std430, set = 0, binding = 1) buffer X { float x[]; };
layout(push_constant) uniform P {
    uint H, n_tok, grid_w, grid_h, merge, side, type, base, row_bytes;
    float step_h, step_w;
} pc;

float linspace_at(uint i, uint steps, float step, float end) {
    if (steps == 1u) return 0.0;
    precise float v = i < steps / 2u ? step * float(i) : end - step * float(steps - 1u - i);
    return v;
}

void main() {
    uint e = group_id() * WG + gl_LocalInvocationID.x, i = e % pc.H, t = e / pc.H;
    if (t >= pc.n_tok) return;
    uvec2 rc = vis_token_pos(t, pc.grid_w, pc.merge);
    uint r = rc.x, c = rc.y;
    float end = float(pc.side - 1u);
    float hi = linspace_at(r, pc.grid_h, pc.step_h, end), wi = linspace_at(c, pc.grid_w, pc.step_w, end);
    uint h0 = uint(hi), w0 = uint(wi);
    uint h1 = min(h0 + 1u, pc.side - 1u), w1 = min(w0 + 1u, pc.side - 1u);
    precise float dh = hi - float(h0), dw = wi - float(w0);
    precise float w00 = (1.0 - dh) * (1.0 - dw), w01 = (1.0 - dh) * dw, w10 = dh * (1.0 - dw), w11 = dh * dw;
    float r00 = tab(pc.type, pc.base + (h0 * pc.side + w0) * pc.row_bytes, i);
    float r01 = tab(pc.type, pc.base + (h0 * pc.side + w1) * pc.row_bytes, i);
    float r10 = tab(pc.type, pc.base + (h1 * pc.side + w0) * pc.row_bytes, i);
    float r11 = tab(pc.type, pc.base + (h1 * pc.side + w1) * pc.row_bytes, i);
    precise float s = r00 * w00 + r01 * w01;
    s = s + r10 * w10;
    s = s + r11 * w11;
    precise float o = x[t * pc.H + i] + s;
    x[t * pc.H + i] = o;
}

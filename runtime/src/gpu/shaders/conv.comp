// conv.comp: the Gated DeltaNet's causal depthwise conv with SiLU and its
// rolling state, one channel a thread (runtime/src/forward/deltanet.c):
//   out[t][c] = silu(sum_j w[c][j] * in(t + j - (K-1)))
// in(s) = x[s][c] for s >= 0, state[s + K-1][c] for s < 0 (the last K-1
// inputs of earlier steps, oldest first); then state = the last K-1 rows of
// [state; x], in place.
// Bindings: 0 w (C rows of K taps, vec_w), 1 x [n][ld_x], 2 out [n][ld_out],
// 3 state [(K-1)][C].
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#define MAX_K 16u
#include "common.glsl"
#include "vecw.glsl"
layout(std430, set = 0, binding = 0) readonly buffer W { uint w32[]; };
VEC_W(tap, w32)
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { float o[]; };
layout(std430, set = 0, binding = 3) buffer S { float state[]; };
layout(push_constant) uniform P { uint n_tok, C, K, ld_x, ld_out, w_type, w_base, w_row_bytes; } pc;

void main() {
    uint c = group_id() * WG + gl_LocalInvocationID.x;
    if (c >= pc.C) return;
    uint K = pc.K, rb = pc.w_base + c * pc.w_row_bytes;
    float w[MAX_K], hist[MAX_K];
    for (uint j = 0u; j < K; j++) w[j] = tap(pc.w_type, rb, j);
    for (uint j = 0u; j + 1u < K; j++) hist[j] = state[j * pc.C + c];
    for (uint t = 0u; t < pc.n_tok; t++) {
        float acc = 0.0;
        for (uint j = 0u; j < K; j++) {
            int s = int(t + j) - int(K - 1u);
            acc += (s < 0 ? hist[uint(s + int(K) - 1)] : x[uint(s) * pc.ld_x + c]) * w[j];
        }
        o[t * pc.ld_out + c] = acc / (1.0 + exp(-acc));
    }
    for (uint j = 0u; j + 1u < K; j++) {
        int s = int(pc.n_tok + j) - int(K - 1u);
        state[j * pc.C + c] = s < 0 ? hist[uint(s + int(K) - 1)] : x[uint(s) * pc.ld_x + c];
    }
}

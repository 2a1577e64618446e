// dn_recurrent.comp: the Gated DeltaNet's recurrent form (decode), tokens
// one after another, the state updated in place (deltanet.c):
//   S = S * exp(g);  S += k (x) beta (v - S^T k);  o = S^T q
// with S [dv][dk] per value head. A workgroup takes RB rows of one head's
// state, TPR threads a row (each dk / TPR columns in registers for the
// whole span of tokens); the row dots go through shared memory.
// Bindings: dn_common.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128u;
#define TPR 4u
#define RB (WG / TPR)
#define MAX_C 32u // columns of a thread: dk <= TPR * MAX_C = 128
#include "common.glsl"
#include "dn_common.glsl"
layout(push_constant) uniform P { uint n_tok, dk, dv, G, Hv, qk_ts, v_ts, o_ts; } pc;

shared float ks[TPR * MAX_C], qs[TPR * MAX_C], red[WG];

// the sum of x over the TPR threads of this thread's row
float row_sum(float x) {
    uint tid = gl_LocalInvocationID.x, r0 = tid - tid % TPR;
    red[tid] = x;
    barrier();
    float s = 0.0;
    for (uint i = 0u; i < TPR; i++) s += red[r0 + i];
    barrier();
    return s;
}

void main() {
    uint blocks = (pc.dv + RB - 1u) / RB, g = group_id(), h = g / blocks;
    if (h >= pc.Hv) return;
    uint tid = gl_LocalInvocationID.x, j = (g % blocks) * RB + tid / TPR, part = tid % TPR;
    uint per = (pc.dk + TPR - 1u) / TPR, c0 = part * per, kh = h % pc.G;
    bool live = j < pc.dv;
    uint sb = (h * pc.dv + min(j, pc.dv - 1u)) * pc.dk;
    float s[MAX_C];
    for (uint c = 0u; c < MAX_C; c++) s[c] = live && c < per && c0 + c < pc.dk ? state[sb + c0 + c] : 0.0;
    for (uint t = 0u; t < pc.n_tok; t++) {
        for (uint i = tid; i < pc.dk; i += WG) {
            ks[i] = k[t * pc.qk_ts + kh * pc.dk + i];
            qs[i] = q[t * pc.qk_ts + kh * pc.dk + i];
        }
        barrier();
        float decay = exp(gate[t * pc.Hv + h]), b = beta[t * pc.Hv + h], dot = 0.0;
        for (uint c = 0u; c < MAX_C; c++) {
            if (c >= per || c0 + c >= pc.dk) break;
            s[c] *= decay;
            dot += s[c] * ks[c0 + c];
        }
        float vj = live ? v[t * pc.v_ts + h * pc.dv + j] : 0.0;
        float d = (vj - row_sum(dot)) * b, oq = 0.0;
        for (uint c = 0u; c < MAX_C; c++) {
            if (c >= per || c0 + c >= pc.dk) break;
            s[c] += d * ks[c0 + c];
            oq += s[c] * qs[c0 + c];
        }
        float oj = row_sum(oq);
        if (live && part == 0u) o[t * pc.o_ts + h * pc.dv + j] = oj;
    }
    for (uint c = 0u; c < MAX_C; c++)
        if (live && c < per && c0 + c < pc.dk) state[sb + c0 + c] = s[c];
}

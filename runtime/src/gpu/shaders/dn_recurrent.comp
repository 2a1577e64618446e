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
#define FLAG_L2 1u
#define FLAG_GATES 2u
#include "common.glsl"
#include "dn_common.glsl"
#include "vecw.glsl"
layout(std430, set = 0, binding = 7) readonly buffer DB { uint db32[]; };
layout(std430, set = 0, binding = 8) readonly buffer SA { uint sa32[]; };
VEC_W(dt_bias, db32)
VEC_W(ssm_a, sa32)
layout(push_constant) uniform P {
    uint n_tok, dk, dv, G, Hv, qk_ts, v_ts, o_ts;
    uint flags, bias_type, bias_base, a_type, a_base;
    float l2_eps, q_scale;
} pc;

shared float ks[TPR * MAX_C], qs[TPR * MAX_C], red[WG], red2[WG], nrm[2];

// as dn_gates.comp
float softplus(float v) {
    if (v > 20.0) return v;
    float e = exp(v), u = 1.0 + e;
    return u == 1.0 ? e : log(u) * (e / (u - 1.0));
}

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
        if ((pc.flags & FLAG_L2) != 0u) { // x * s / max(||x||, eps), as l2norm.comp
            float sq = 0.0, sk = 0.0;
            for (uint i = tid; i < pc.dk; i += WG) sq += qs[i] * qs[i], sk += ks[i] * ks[i];
            red[tid] = sq, red2[tid] = sk;
            barrier();
            for (uint s2 = WG / 2u; s2 > 0u; s2 >>= 1) {
                if (tid < s2) red[tid] += red[tid + s2], red2[tid] += red2[tid + s2];
                barrier();
            }
            if (tid == 0u)
                nrm[0] = pc.q_scale / max(sqrt(red[0]), pc.l2_eps), nrm[1] = 1.0 / max(sqrt(red2[0]), pc.l2_eps);
            barrier();
            for (uint i = tid; i < pc.dk; i += WG) qs[i] *= nrm[0], ks[i] *= nrm[1];
            barrier();
        }
        float ga = gate[t * pc.Hv + h], b = beta[t * pc.Hv + h];
        if ((pc.flags & FLAG_GATES) != 0u) {
            ga = softplus(ga + dt_bias(pc.bias_type, pc.bias_base, h)) * ssm_a(pc.a_type, pc.a_base, h);
            b = 1.0 / (1.0 + exp(-b));
        }
        float decay = exp(ga), dot = 0.0;
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

// dn_chunk_scan.comp: the chunked DeltaNet (prefill), the part that carries
// the state from chunk to chunk (deltanet.c's chunked_head from v_new on),
// for RB rows j of one head's state [dv][dk] (kept in shared memory across
// the chunks; rows are independent here):
//   v_new[i][j] = u[i][j] - S_j . w_i
//   o[i][j] = exp(gc[i]) S_j . q_i + sum_{m<=i} QK[i][m] v_new[m][j]
//   S_j = S_j exp(gc[L-1]) + sum_m v_new[m][j] exp(gc[L-1] - gc[m]) k_m
// Bindings: dn_common.glsl, 7 scratch (dn_chunk_prep's).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128u;
#define RB 16u
#define MAX_DK 128u
#include "common.glsl"
#include "dn_common.glsl"
#include "dn_chunk.glsl"
layout(push_constant) uniform P { uint n_tok, dk, dv, G, Hv, qk_ts, v_ts, o_ts; } pc;

shared float S[RB][MAX_DK + 1u];
shared float vn[CHUNK][RB + 1u];
shared float gcs[CHUNK], em[CHUNK];

void main() {
    uint blocks = (pc.dv + RB - 1u) / RB, g = group_id(), h = g / blocks;
    if (h >= pc.Hv) return;
    uint tid = gl_LocalInvocationID.x, j0 = (g % blocks) * RB, nj = min(RB, pc.dv - j0), kh = h % pc.G;
    uint sb = (h * pc.dv + j0) * pc.dk;
    for (uint e = tid; e < nj * pc.dk; e += WG) S[e / pc.dk][e % pc.dk] = state[sb + e];
    uint n_ch = (pc.n_tok + CHUNK - 1u) / CHUNK;
    uint jj = tid % RB, i0 = tid / RB, ni = WG / RB; // (row j0 + jj, tokens i0, i0 + ni, ...)
    for (uint c = 0u; c < n_ch; c++) {
        uint t0 = c * CHUNK, L = min(CHUNK, pc.n_tok - t0), base = ch_base(c, h, pc.Hv, pc.dk, pc.dv);
        uint ub = base + ch_u(pc.dk, pc.dv), wb = base + ch_w(pc.dk, pc.dv), qb = base + ch_qk(pc.dk, pc.dv);
        barrier(); // S from the previous chunk (or the load) is complete
        if (tid < L) gcs[tid] = scr[base + tid];
        barrier();
        if (tid < L) em[tid] = exp(gcs[L - 1u] - gcs[tid]);
        for (uint i = i0; i < L; i += ni) {
            float sw = 0.0;
            if (jj < nj)
                for (uint x = 0u; x < pc.dk; x++) sw += S[jj][x] * scr[wb + i * pc.dk + x];
            vn[i][jj] = jj < nj ? scr[ub + i * pc.dv + j0 + jj] - sw : 0.0;
        }
        barrier();
        for (uint i = i0; i < L; i += ni) {
            if (jj >= nj) continue;
            uint qi = (t0 + i) * pc.qk_ts + kh * pc.dk;
            float sq = 0.0, acc = 0.0;
            for (uint x = 0u; x < pc.dk; x++) sq += S[jj][x] * q[qi + x];
            for (uint m = 0u; m <= i; m++) acc += scr[qb + i * CHUNK + m] * vn[m][jj];
            o[(t0 + i) * pc.o_ts + h * pc.dv + j0 + jj] = exp(gcs[i]) * sq + acc;
        }
        barrier(); // every read of S for this chunk is done
        float el = exp(gcs[L - 1u]);
        for (uint e = tid; e < nj * pc.dk; e += WG) {
            uint r = e / pc.dk, x = e % pc.dk;
            float s = S[r][x] * el;
            for (uint m = 0u; m < L; m++) s += vn[m][r] * em[m] * k[(t0 + m) * pc.qk_ts + kh * pc.dk + x];
            S[r][x] = s;
        }
    }
    barrier();
    for (uint e = tid; e < nj * pc.dk; e += WG) state[sb + e] = S[e / pc.dk][e % pc.dk];
}

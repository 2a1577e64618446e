// dn_chunk_prep.comp: the chunked DeltaNet (prefill), the part of each
// chunk that does not need the state (deltanet.c's chunked_head up to u and
// w), every chunk and head at once, a workgroup each:
//   gc = cumsum(g), D[i][j] = exp(gc[i] - gc[j]) (j <= i)
//   A = -(k_beta k^T) * D (strictly lower), QK = (q k^T) * D (lower)
//   T = (I + A)^-1 by forward substitution (A in shared memory)
//   u = T v_beta, w = T (k_beta * exp(gc))
// into the scratch of dn_chunk.glsl. Bindings: dn_common.glsl, 7 scratch.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256u;
#include "common.glsl"
#include "dn_common.glsl"
#include "dn_chunk.glsl"
layout(push_constant) uniform P { uint n_tok, dk, dv, G, Hv, qk_ts, v_ts, o_ts; } pc;

shared float A[CHUNK][CHUNK + 1u];
shared float gc[CHUNK], bt[CHUNK], rowi[CHUNK];

void main() {
    uint n_ch = (pc.n_tok + CHUNK - 1u) / CHUNK, g = group_id(), c = g / pc.Hv, h = g % pc.Hv;
    if (c >= n_ch) return;
    uint tid = gl_LocalInvocationID.x, t0 = c * CHUNK, L = min(CHUNK, pc.n_tok - t0), kh = h % pc.G;
    uint base = ch_base(c, h, pc.Hv, pc.dk, pc.dv);
    if (tid == 0u) {
        float sum = 0.0;
        for (uint i = 0u; i < L; i++) gc[i] = sum += gate[(t0 + i) * pc.Hv + h];
    }
    if (tid < L) bt[tid] = beta[(t0 + tid) * pc.Hv + h];
    barrier();
    for (uint i = tid; i < L; i += WG) scr[base + i] = gc[i];
    // A and QK: one (i, j) a thread at a time
    for (uint e = tid; e < L * L; e += WG) {
        uint i = e / L, j = e % L;
        uint qi = (t0 + i) * pc.qk_ts + kh * pc.dk, kj = (t0 + j) * pc.qk_ts + kh * pc.dk;
        float a = 0.0, b = 0.0;
        if (j <= i)
            for (uint x = 0u; x < pc.dk; x++) {
                float kx = k[kj + x];
                a += k[qi + x] * kx, b += q[qi + x] * kx;
            }
        float dm = j <= i ? exp(gc[i] - gc[j]) : 0.0;
        A[i][j] = j < i ? -(a * bt[i]) * dm : 0.0;
        scr[base + ch_qk(pc.dk, pc.dv) + i * CHUNK + j] = j <= i ? b * dm : 0.0;
    }
    barrier();
    // forward substitution, row after row: T[i][j] = A[i][j] + sum_{j<m<i} A[i][m] T[m][j]
    for (uint i = 1u; i < L; i++) {
        if (tid < i) {
            float acc = A[i][tid];
            for (uint m = tid + 1u; m < i; m++) acc += A[i][m] * A[m][tid];
            rowi[tid] = acc;
        }
        barrier();
        if (tid < i) A[i][tid] = rowi[tid];
        barrier();
    }
    // u = T v_beta, w = T (k_beta exp(gc)) (T unit lower triangular)
    uint ub = base + ch_u(pc.dk, pc.dv), wb = base + ch_w(pc.dk, pc.dv);
    for (uint e = tid; e < L * pc.dv; e += WG) {
        uint i = e / pc.dv, x = e % pc.dv;
        float acc = 0.0;
        for (uint j = 0u; j <= i; j++)
            acc += (j == i ? 1.0 : A[i][j]) * (v[(t0 + j) * pc.v_ts + h * pc.dv + x] * bt[j]);
        scr[ub + i * pc.dv + x] = acc;
    }
    for (uint e = tid; e < L * pc.dk; e += WG) {
        uint i = e / pc.dk, x = e % pc.dk;
        float acc = 0.0;
        for (uint j = 0u; j <= i; j++)
            acc += ((j == i ? 1.0 : A[i][j]) * exp(gc[j])) * (k[(t0 + j) * pc.qk_ts + kh * pc.dk + x] * bt[j]);
        scr[wb + i * pc.dk + x] = acc;
    }
}

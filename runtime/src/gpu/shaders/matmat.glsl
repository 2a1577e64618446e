// matmat.glsl: the tiled mat-mat (prefill): y[t][y_col0 + o] = W[o] . x[t]
// for o < n_out (rows of this dispatch), t < n_tok. A workgroup of 256
// threads (16 x 16) computes a BM x BN tile (weight rows x tokens; spec
// constants 1 and 2: 64 or 128 each, default 64 x 64): per step of BK = 32
// (one Q8_0 block, one K-quant sub-block) it dequantises the weights' BM x 32
// piece into shared memory (load8 of the type's file: no dequantised copy of
// a weight outside this tile), stages x's 32 x BN piece, and each thread
// accumulates a (BM/16) x (BN/16) block of y from shared vec4 reads; the
// next step's weights and x are read into registers meanwhile.
// Bindings: 0 W, 1 x f32 [n_tok][ldx], 2 y f32 [n_tok][ldy].
// With X_CHW (patch_<type>.comp: the vision encoder's patch embedding, the
// Conv3d's half of one frame as a matmul) x is an image, 3 planes of ow x oh
// floats (CHW), and token t's row is its p x p patch, channel-major (c, py,
// px: n_in = 3 p p), the patch at grid position (row, col) of token t in
// merge order (vision/ops.c tmrt__vis_token_pos): the patch rows are read
// from the image in place, never gathered into memory.
layout(local_size_x = 256) in;
const uint WG = 256u;
layout(constant_id = 1) const uint BM = 64u;
layout(constant_id = 2) const uint BN = 64u;
#define BK 32u
const uint TM = BM / 16u, TN = BN / 16u; // a thread's block of y
const uint LA = BM / 64u, LB = BN / 64u; // its loads of 8 a step: weights, x
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
    uint n_in, n_out, row_bytes, w_base;
    uint n_tok, ldx, ldy, y_col0;
    uint row_tiles;
#ifdef X_CHW
    uint grid_w, merge, psize, ow, plane;
#endif
} pc;

shared vec4 As[BK][BM / 4u]; // As[k][r/4][r%4]: weights, k-major
shared vec4 Bs[BK][BN / 4u]; // Bs[k][t/4][t%4]: x, k-major

// 8 weights of the row at byte rb from k on (zeros past n_in, and when !ok)
void load_w(uint rb, uint k, bool ok, out float w[8]) {
#ifdef HAS_LOAD1
    if (k + 8u > pc.n_in) { // the float types' tail (quantised rows are whole blocks)
        for (uint i = 0u; i < 8u; i++) w[i] = k + i < pc.n_in ? load1(rb, k + i) : 0.0;
    } else
#endif
    load8(rb, k, w);
    for (uint i = 0u; i < 8u; i++) w[i] = ok ? w[i] : 0.0;
}

#ifdef X_CHW
// the first pixel of token t's patch in a plane
#include "vis_pos.glsl"
uint patch_base(uint t) {
    uvec2 rc = vis_token_pos(t, pc.grid_w, pc.merge);
    return rc.x * pc.psize * pc.ow + rc.y * pc.psize;
}
// 8 values of the patch at xb from k on: (c, py, px) of k in the image
void load_x(uint xb, uint k, bool ok, out float v[8]) {
    uint pp = pc.psize * pc.psize;
    for (uint i = 0u; i < 8u; i++) {
        uint e = k + i, c = e / pp, r = e - c * pp, py = r / pc.psize, px = r - py * pc.psize;
        v[i] = ok && e < pc.n_in ? x[c * pc.plane + xb + py * pc.ow + px] : 0.0;
    }
}
#else
// 8 x values of the token row at xb from k on (zeros past n_in, and when !ok)
void load_x(uint xb, uint k, bool ok, out float v[8]) {
    for (uint i = 0u; i < 8u; i++) v[i] = ok && k + i < pc.n_in ? x[xb + k + i] : 0.0;
}
#endif

void main() {
    uint g = group_id(), rt = g % pc.row_tiles, tt = g / pc.row_tiles;
    uint row0 = rt * BM, tok0 = tt * BN;
    if (tok0 >= pc.n_tok) return;
    uint tid = gl_LocalInvocationID.x, tx = tid % 16u, ty = tid / 16u, lk = (tid % 4u) * 8u;
    // load group i: row / token tid/4 + 64 i, k lk..lk+7
    uint rb[LA], xb[LB];
    bool wok[LA], xok[LB];
    for (uint i = 0u; i < LA; i++) {
        uint r = row0 + tid / 4u + 64u * i;
        wok[i] = r < pc.n_out, rb[i] = pc.w_base + min(r, pc.n_out - 1u) * pc.row_bytes;
    }
    for (uint i = 0u; i < LB; i++) {
        uint t = tok0 + tid / 4u + 64u * i;
#ifdef X_CHW
        xok[i] = t < pc.n_tok, xb[i] = patch_base(xok[i] ? t : 0u);
#else
        xok[i] = t < pc.n_tok, xb[i] = (xok[i] ? t : 0u) * pc.ldx;
#endif
    }
    vec4 acc[TM][TN / 4u];
    for (uint i = 0u; i < TM; i++)
        for (uint j = 0u; j < TN / 4u; j++) acc[i][j] = vec4(0.0);
    float w[LA][8], xv[LB][8];
    for (uint i = 0u; i < LA; i++) load_w(rb[i], lk, wok[i], w[i]);
    for (uint i = 0u; i < LB; i++) load_x(xb[i], lk, xok[i], xv[i]);
    for (uint k0 = 0u; k0 < pc.n_in; k0 += BK) {
        for (uint i = 0u; i < LA; i++) {
            uint r = tid / 4u + 64u * i;
            for (uint e = 0u; e < 8u; e++) As[lk + e][r >> 2][r & 3u] = w[i][e];
        }
        for (uint i = 0u; i < LB; i++) {
            uint t = tid / 4u + 64u * i;
            for (uint e = 0u; e < 8u; e++) Bs[lk + e][t >> 2][t & 3u] = xv[i][e];
        }
        barrier();
        if (k0 + BK < pc.n_in) {
            for (uint i = 0u; i < LA; i++) load_w(rb[i], k0 + BK + lk, wok[i], w[i]);
            for (uint i = 0u; i < LB; i++) load_x(xb[i], k0 + BK + lk, xok[i], xv[i]);
        }
        for (uint kk = 0u; kk < BK; kk++) {
            vec4 b[TN / 4u];
            for (uint j = 0u; j < TN / 4u; j++) b[j] = Bs[kk][tx * (TN / 4u) + j];
            for (uint i4 = 0u; i4 < TM / 4u; i4++) {
                vec4 a = As[kk][ty * (TM / 4u) + i4];
                for (uint j = 0u; j < TN / 4u; j++) {
                    acc[4u * i4][j] += a.x * b[j], acc[4u * i4 + 1u][j] += a.y * b[j];
                    acc[4u * i4 + 2u][j] += a.z * b[j], acc[4u * i4 + 3u][j] += a.w * b[j];
                }
            }
        }
        barrier();
    }
    for (uint i = 0u; i < TM; i++) {
        uint o = row0 + TM * ty + i;
        if (o >= pc.n_out) break;
        for (uint j = 0u; j < TN; j++) {
            uint t = tok0 + TN * tx + j;
            if (t < pc.n_tok) y[t * pc.ldy + pc.y_col0 + o] = acc[i][j >> 2][j & 3u];
        }
    }
}

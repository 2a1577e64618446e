// matmat.glsl: the tiled mat-mat (prefill): y[t][y_col0 + o] = W[o] . x[t]
// for o < n_out (rows of this dispatch), t < n_tok. A workgroup of WG (256)
// threads computes a BM x BN tile (weight rows x tokens, 64 x 64): per step
// of BK = 32 (one Q8_0 block, one K-quant sub-block) it dequantises the
// weights' 64 x 32 piece into shared memory (load8 of the type's file: no
// dequantised copy of a weight outside this tile), stages x's 32 x 64 piece,
// and each thread accumulates a 4 x 4 block of y from shared vec4 reads.
// Bindings: 0 W, 1 x f32 [n_tok][ldx], 2 y f32 [n_tok][ldy].
layout(local_size_x = 256) in; // the 16 x 16 threads of the 4 x 4 blocks
const uint WG = 256u;
#define BM 64u
#define BN 64u
#define BK 32u
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
    uint n_in, n_out, row_bytes, w_base;
    uint n_tok, ldx, ldy, y_col0;
    uint row_tiles;
} pc;

shared vec4 As[BK][BM / 4u]; // As[k][r/4][r%4]: weights, k-major
shared vec4 Bs[BK][BN / 4u]; // Bs[k][t/4][t%4]: x, k-major


// this thread's 8 weights (row lr, zeros past n_out) and 8 x values (token
// lr, zeros past n_tok) from k on (zeros past n_in)
void load_step(uint rb, uint xb, uint k, bool wok, bool xok, out float w[8], out float xv[8]) {
#ifdef HAS_LOAD1
    if (k + 8u > pc.n_in) { // the float types' tail (quantised rows are whole blocks)
        for (uint i = 0u; i < 8u; i++) w[i] = k + i < pc.n_in ? load1(rb, k + i) : 0.0;
    } else
#endif
    load8(rb, k, w);
    for (uint i = 0u; i < 8u; i++) {
        w[i] = wok ? w[i] : 0.0;
        xv[i] = xok && k + i < pc.n_in ? x[xb + k + i] : 0.0;
    }
}

void main() {
    uint g = group_id(), rt = g % pc.row_tiles, tt = g / pc.row_tiles;
    uint row0 = rt * BM, tok0 = tt * BN;
    if (tok0 >= pc.n_tok) return;
    uint tid = gl_LocalInvocationID.x, tx = tid % 16u, ty = tid / 16u;
    uint lr = tid / 4u, lk = (tid % 4u) * 8u; // this thread's loads: row / token lr, k lk..lk+7
    uint wrow = min(row0 + lr, pc.n_out - 1u), rb = pc.w_base + wrow * pc.row_bytes;
    bool wok = row0 + lr < pc.n_out, xok = tok0 + lr < pc.n_tok;
    uint xb = (xok ? tok0 + lr : 0u) * pc.ldx;
    vec4 acc[4];
    for (uint i = 0u; i < 4u; i++) acc[i] = vec4(0.0);
    // the next step's weights and x are read into registers while this
    // step's are multiplied out of shared memory
    float w[8], xv[8];
    load_step(rb, xb, lk, wok, xok, w, xv);
    for (uint k0 = 0u; k0 < pc.n_in; k0 += BK) {
        for (uint i = 0u; i < 8u; i++) As[lk + i][lr >> 2][lr & 3u] = w[i], Bs[lk + i][lr >> 2][lr & 3u] = xv[i];
        barrier();
        if (k0 + BK < pc.n_in) load_step(rb, xb, k0 + BK + lk, wok, xok, w, xv);
        for (uint kk = 0u; kk < BK; kk++) {
            vec4 a = As[kk][ty], b = Bs[kk][tx];
            acc[0] += a.x * b, acc[1] += a.y * b, acc[2] += a.z * b, acc[3] += a.w * b;
        }
        barrier();
    }
    for (uint i = 0u; i < 4u; i++) {
        uint o = row0 + 4u * ty + i;
        if (o >= pc.n_out) break;
        for (uint j = 0u; j < 4u; j++) {
            uint t = tok0 + 4u * tx + j;
            if (t < pc.n_tok) y[t * pc.ldy + pc.y_col0 + o] = acc[i][j];
        }
    }
}

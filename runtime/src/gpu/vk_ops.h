/* vk_ops.h: the compute ops of the Qwen3.5 forward pass on Vulkan, each
 * recorded into a tmrt_vk_rec (vk_compute.h) as one or a few dispatches.
 * An op records no barrier: the caller puts tmrt__vk_barrier between an op
 * and the next one that reads what it wrote (or reuses its bytes).
 *
 * Conventions (docs/runtime-gpu.md): activations are f32, row-major, with
 * a row stride in floats (ld*); every binding's offset is a multiple of
 * tmrt_vk_limits::storage_align, except weights, whose offset may be any
 * multiple of 4 (32 in GGUF files): the op binds from the aligned offset
 * below and passes the difference to the shader. Each op checks its
 * arguments and on a bad one records nothing and sets the recorder's
 * error (TMEM_E_INVALID_ARG, the message naming the op and argument); it
 * returns the recorder's status. */
#ifndef TMRT_VK_OPS_H
#define TMRT_VK_OPS_H

#include "gpu/vk_compute.h"

/* A weight matrix on the device in ggml's layout: n_out rows of n_in
 * elements of `type` (tmem_ggml_type: F32, F16, BF16, Q8_0, Q4_K, Q6_K),
 * rows row_bytes apart from buf.offset (a multiple of 4); buf.range covers
 * n_out * row_bytes rounded up to a multiple of 4 (16-bit data is read as
 * words; GGUF pads tensors to 32 bytes, so file-backed weights have it).
 * Weights larger than maxStorageBufferRange are bound in pieces. */
typedef struct tmrt_vk_wmat {
    tmrt_vk_buf buf;
    uint32_t type;
    uint32_t n_in, n_out;
    uint64_t row_bytes;
} tmrt_vk_wmat;

/* true if the ops read `type` with this n_in (as tmrt__kern_type_supported). */
bool tmrt__vk_type_supported(uint32_t type, uint32_t n_in);
/* Elements a block of `type` holds (1, 32, 256), 0 for a type not read. */
uint32_t tmrt__vk_type_block(uint32_t type);

/* ---- matmul ---------------------------------------------------------------
 * y[t*ldy + o] = sum_i W[o][i] * x[r(t)*ldx + i] for t < n_tok, o < n_out,
 * r(t) = x_rows[t] when x_rows.buffer is set (the LM head on the asked
 * positions only), else t. Weights are read in their stored type and
 * dequantised in registers (never into memory); x stays f32 (no activation
 * quantisation: y differs from the CPU's tmrt__kern_matmul, which quantises x
 * for Q8_0/Q4_K/Q6_K, by that rounding). Up to `mv_max_tok` tokens
 * (0 = 8), and gathered rows, go through the mat-vec kernels (decode, the LM
 * head), more through the tiled mat-mat kernels (prefill). */
typedef struct tmrt_vk_patches tmrt_vk_patches;
typedef struct tmrt_vk_matmul {
    tmrt_vk_wmat w;
    tmrt_vk_buf x, y, x_rows;
    uint32_t ldx, ldy;               /* floats; 0 = n_in, n_out */
    uint32_t n_tok;
    uint32_t mv_max_tok;
    /* optional: x is an image and token t's row its patch (the vision
     * patch embedding; tmrt_vk_patches below); then ldx, x_rows and
     * mv_max_tok are unused and the mat-mat kernels always run. */
    const tmrt_vk_patches *chw;
} tmrt_vk_matmul;
/* The vision encoder's patch rows read in place from a CHW image (3 planes
 * of width x height floats, the conversion's output): token t < n_tok is
 * the patch x patch square at the merge-order grid position of t
 * (vision/ops.c tmrt__vis_token_pos), its row (c, py, px) channel-major,
 * n_in = 3 patch^2: one frame's half of the Conv3d as a matmul (the
 * temporal pair repeats the frame: the second half is a second matmul over
 * the same image). width, height multiples of patch * merge. */
struct tmrt_vk_patches {
    uint32_t width, height, patch, merge;
};
tmem_status tmrt__vk_matmul(tmrt_vk_rec *rec, const tmrt_vk_matmul *m);

/* ---- embedding lookup ------------------------------------------------------
 * out[t*ld + i] = W[ids[t]][i] dequantised (i < n_in, t < n_tok; ld 0 =
 * n_in); an id >= n_out gives a row of zeros. All six types. */
typedef struct tmrt_vk_get_rows {
    tmrt_vk_wmat w;
    tmrt_vk_buf ids, out;            /* ids: uint32 per token */
    uint32_t n_tok, ld;
} tmrt_vk_get_rows;
tmem_status tmrt__vk_get_rows(tmrt_vk_rec *rec, const tmrt_vk_get_rows *g);

/* ---- norms -----------------------------------------------------------------
 * Groups of n floats: group (t, h) for t < n_tok, h < n_head starts at
 * t*tok_stride + h*head_stride in x, out and the optional a / sum (tok_stride
 * 0 = n_head*head_stride, head_stride 0 = n). One workgroup a group.
 * RMS: v = x (+ a, written to sum, when add is set: the residual add fused
 * with the next norm), out = v / sqrt(mean(v^2) + eps) * (w + w_offset)
 * (w.buf.buffer NULL: no weight), times silu(a) when gate is set (the
 * DeltaNet's gated norm: a = z). out may alias x (in place) and sum may
 * alias x; w is a vector (n_out 1, n_in >= n) of F32, F16 or BF16. */
typedef struct tmrt_vk_rope tmrt_vk_rope;
typedef struct tmrt_vk_rmsnorm {
    tmrt_vk_buf x, out, a, sum;
    tmrt_vk_wmat w;
    float w_offset, eps;
    uint32_t n, n_tok, n_head, tok_stride, head_stride;
    bool add, gate;
    /* optional: RoPE of the normed groups in the same dispatch (attention's
     * q and k heads); its pos, step, n_rot, n_past, sections and freq_base
     * are used (x, shape and strides are the norm's); not with gate. */
    const tmrt_vk_rope *rope;
} tmrt_vk_rmsnorm;
tmem_status tmrt__vk_rmsnorm(tmrt_vk_rec *rec, const tmrt_vk_rmsnorm *r);

/* L2 in place: x = x * s / max(||x||, eps), s = scale for heads h < n_scaled,
 * 1 for the others (the DeltaNet's q heads get 1/sqrt(d_k), its k heads 1). */
typedef struct tmrt_vk_l2norm {
    tmrt_vk_buf x;
    float eps, scale;
    uint32_t n, n_tok, n_head, tok_stride, head_stride, n_scaled;
} tmrt_vk_l2norm;
tmem_status tmrt__vk_l2norm(tmrt_vk_rec *rec, const tmrt_vk_l2norm *l);

/* ---- element-wise ----------------------------------------------------------
 * out[i] = a[i] + b[i] (add) or silu(a[i]) * b[i] (swiglu: a the gate
 * projection), i < n; out may alias a or b. */
tmem_status tmrt__vk_add(tmrt_vk_rec *rec, tmrt_vk_buf a, tmrt_vk_buf b, tmrt_vk_buf out, uint32_t n);
tmem_status tmrt__vk_swiglu(tmrt_vk_rec *rec, tmrt_vk_buf a, tmrt_vk_buf b, tmrt_vk_buf out, uint32_t n);

/* The attention's output gate: x[t*xts + h*xhs + i] *= sigmoid(gate[t*gts +
 * h*ghs + i]) for i < n, h < n_head, t < n_tok (in place). */
typedef struct tmrt_vk_sigmoid_gate {
    tmrt_vk_buf x, gate;
    uint32_t n, n_head, n_tok, xts, xhs, gts, ghs;
} tmrt_vk_sigmoid_gate;
tmem_status tmrt__vk_sigmoid_gate(tmrt_vk_rec *rec, const tmrt_vk_sigmoid_gate *g);

/* The DeltaNet's gates over [n_tok][n_head]: gate = softplus(alpha + dt_bias)
 * * ssm_a, beta = sigmoid(beta) in place (dt_bias, ssm_a: vectors of n_head). */
typedef struct tmrt_vk_dn_gates {
    tmrt_vk_buf alpha, beta, gate;
    tmrt_vk_wmat dt_bias, ssm_a;
    uint32_t n_tok, n_head;
} tmrt_vk_dn_gates;
tmem_status tmrt__vk_dn_gates(tmrt_vk_rec *rec, const tmrt_vk_dn_gates *g);

/* ---- the step's dynamic values ---------------------------------------------
 * Ops that depend on the sequence position take it as `n_past`, or, when
 * `step.buffer` is set, from word 0 of that binding (a uint the host writes
 * before each submission), so that one recording serves every decode step. */

/* ---- partial M-RoPE ---------------------------------------------------------
 * In place on the first n_rot dims of each head (t*tok_stride +
 * h*head_stride), NEOX pairs, the interleaved sections of rope.c; positions
 * 4 per token from `pos` (int32) when set, else n_past + t for every
 * component. Same angles as the CPU's tmrt__rope (computed as it does). */
struct tmrt_vk_rope {
    tmrt_vk_buf x, pos, step;
    uint32_t n_tok, n_head, tok_stride, head_stride, n_rot, n_past;
    int32_t sections[4];
    float freq_base;
};
tmem_status tmrt__vk_rope(tmrt_vk_rec *rec, const tmrt_vk_rope *r);

/* ---- the paged KV cache (typedmem/kv.h, runtime/src/forward/kv_rows.c) -----
 * Block id b holds block_tokens tokens of every attention layer: for layer l
 * its K rows then its V rows, row_bytes each (n_head_kv * head_dim f16 or
 * f32), block_bytes apart. The pool is pool[0] alone, or, when a device limit
 * (maxStorageBufferRange, one allocation) splits it, n_pool buffers of
 * blocks_per_buf blocks each: block b in pool[b / blocks_per_buf] at (b %
 * blocks_per_buf) * block_bytes. `table` holds the sequence's block ids
 * (uint32, one per block_tokens slots). */
#define TMRT_VK_KV_MAX_POOL 4u
typedef struct tmrt_vk_kv {
    tmrt_vk_buf pool[TMRT_VK_KV_MAX_POOL];
    uint32_t n_pool, blocks_per_buf;
    tmrt_vk_buf table;
    uint32_t block_tokens, row_bytes, block_bytes;
    bool f32;
} tmrt_vk_kv;

/* K and V rows of n_tok tokens (k[t*ld_k ..], v[t*ld_v ..], n_head_kv *
 * head_dim floats, ld 0 = that) into layer `layer` at slots n_past + t. */
typedef struct tmrt_vk_kv_store {
    tmrt_vk_kv kv;
    tmrt_vk_buf k, v, step;
    uint32_t layer, n_tok, dim, ld_k, ld_v, n_past;
} tmrt_vk_kv_store;
tmem_status tmrt__vk_kv_store(tmrt_vk_rec *rec, const tmrt_vk_kv_store *s);

/* ---- gated attention over the paged KV cache ------------------------------
 * For token t < n_tok (sequence slot n_past + t, its K/V rows already stored)
 * and query head h: out = softmax(q K^T * scale) V over slots 0..n_past + t
 * of layer `layer`, K/V head h / (n_head / n_head_kv) (GQA), with an online
 * softmax (no ctx x ctx matrix), then times sigmoid(gate) when gate.buffer
 * is set (the Qwen3.5 output gate; with the joint q + gate projection, gate
 * is q's buffer hd floats on). q, out, gate at t*ts + h*hs (+ d). head_dim
 * even, <= 256. The keys are cut into n_split ranges (0/1 = one) run by
 * separate workgroups (decode: parallelism over a long context) and merged
 * by a second dispatch through `scratch`
 * (tmrt__vk_attention_scratch_bytes); no barrier is needed between the two:
 * the op records its own. */
typedef struct tmrt_vk_attention {
    tmrt_vk_kv kv;
    tmrt_vk_buf q, out, gate, scratch, step;
    uint32_t layer, n_tok, n_head, n_head_kv, head_dim, n_past, n_split;
    uint32_t q_ts, q_hs, out_ts, out_hs, gate_ts, gate_hs; /* floats; 0 = packed [t][h][d] */
    float scale;                                         /* 0 = 1/sqrt(head_dim) */
} tmrt_vk_attention;
tmem_status tmrt__vk_attention(tmrt_vk_rec *rec, const tmrt_vk_attention *a);
/* Scratch bytes of an attention with n_split > 1 (0 otherwise). */
uint64_t tmrt__vk_attention_scratch_bytes(uint32_t n_tok, uint32_t n_head, uint32_t head_dim, uint32_t n_split);
/* A split count for up to max_keys keys: one per 128 keys (a workgroup's
 * tile), 1..32 (decode over a long context; more than 8 tokens have
 * workgroups enough: 1). */
uint32_t tmrt__vk_attention_splits(uint32_t max_keys, uint32_t n_tok);

/* ---- Gated DeltaNet ---------------------------------------------------------
 * Per value head h (key head h % n_k_heads) over n_tok tokens, the state S
 * [dv][dk] f32 of head h at state + h*dv*dk updated in place
 * (forward/deltanet.c):
 *   S = S * exp(g);  S += k (x) beta (v - S^T k);  o = S^T q
 * q, k (L2-normalised, q scaled) at t*qk_ts + kh*dk; v at t*v_ts + h*dv;
 * gate (g) and beta (already sigmoid) [t][n_v_heads]; out at t*o_ts + h*dv.
 * chunked = false: the recurrent form, token by token (decode); true: the
 * chunked form of 64-token chunks (prefill; the same function), through
 * `scratch` (tmrt__vk_deltanet_scratch_bytes) in two dispatches with the
 * barrier between them recorded by the op. dk <= 128. */
typedef struct tmrt_vk_deltanet {
    tmrt_vk_buf q, k, v, gate, beta, state, out, scratch;
    uint32_t n_tok, dk, dv, n_k_heads, n_v_heads, qk_ts, v_ts, o_ts;
    bool chunked;
    /* Fusions of the recurrent form (decode: two dispatches fewer a layer;
     * not with chunked): l2 = q and k are raw, L2-normalised here (eps
     * l2_eps, q times q_scale, as tmrt__vk_l2norm); dt_bias.buf.buffer set =
     * gate holds the raw alpha and beta the raw b projections, the gates
     * computed here as tmrt__vk_dn_gates does (neither input is written). */
    bool l2;
    float l2_eps, q_scale;
    tmrt_vk_wmat dt_bias, ssm_a;
} tmrt_vk_deltanet;
tmem_status tmrt__vk_deltanet(tmrt_vk_rec *rec, const tmrt_vk_deltanet *d);
/* Scratch bytes of the chunked form for n_tok tokens. */
uint64_t tmrt__vk_deltanet_scratch_bytes(uint32_t n_tok, uint32_t dk, uint32_t dv, uint32_t n_v_heads);

/* ---- the DeltaNet's short conv ----------------------------------------------
 * out[t][c] = silu(sum_j w[c][j] in(t + j - (K-1))) over [state; x], then the
 * state (K-1 rows of C, oldest first) keeps the last K-1 inputs, in place.
 * w: C rows of K taps (F32/F16/BF16), K <= 16. */
typedef struct tmrt_vk_conv {
    tmrt_vk_buf x, out, state;
    tmrt_vk_wmat w;
    uint32_t n_tok, ld_x, ld_out;    /* ld 0 = C */
} tmrt_vk_conv;
tmem_status tmrt__vk_conv(tmrt_vk_rec *rec, const tmrt_vk_conv *c);

/* ---- the vision encoder's ops (issue 20) ------------------------------------
 * LayerNorm of n_rows rows of n (x[r*ld_x], out[r*ld_out]; ld 0 = n; out
 * may alias x): (x - mean) / sqrt(var + eps) * w + b, w and b vectors of n
 * (F32/F16/BF16), as vision/ops.c's tmrt__vis_layernorm. */
typedef struct tmrt_vk_layernorm {
    tmrt_vk_buf x, out;
    tmrt_vk_wmat w, b;
    uint32_t n, n_rows, ld_x, ld_out;
    float eps;
} tmrt_vk_layernorm;
tmem_status tmrt__vk_layernorm(tmrt_vk_rec *rec, const tmrt_vk_layernorm *l);
/* GELU of n floats in place: the tanh form (erf = false: the blocks' MLP) or
 * the erf form (the merger). */
tmem_status tmrt__vk_gelu(tmrt_vk_rec *rec, tmrt_vk_buf x, uint32_t n, bool erf);
/* y[t*ld + i] += b[i] for i < n, t < n_tok (ld 0 = n); b a vector of n. */
tmem_status tmrt__vk_bias_add(tmrt_vk_rec *rec, tmrt_vk_buf y, const tmrt_vk_wmat *b, uint32_t n, uint32_t n_tok,
                              uint32_t ld);
/* Non-causal attention over plain f32 rows: query t < n_tok, head h sees all
 * n_keys keys of KV head h / (n_head / n_head_kv); q, k, v, out (and the
 * optional sigmoid gate) at row*ts + head*hs (0 = packed); scale 0 =
 * 1/sqrt(head_dim); head_dim <= 256; n_split, scratch as tmrt__vk_attention.
 * The vision encoder's qkv [t][3 H] is q at 0, k at H, v at 2H floats
 * (bindings at those offsets), ts 3H, hs head_dim. */
typedef struct tmrt_vk_attention_dense {
    tmrt_vk_buf q, k, v, out, gate, scratch;
    uint32_t n_tok, n_keys, n_head, n_head_kv, head_dim, n_split;
    uint32_t q_ts, q_hs, k_ts, k_hs, v_ts, v_hs, out_ts, out_hs, gate_ts, gate_hs;
    float scale;
} tmrt_vk_attention_dense;
tmem_status tmrt__vk_attention_dense(tmrt_vk_rec *rec, const tmrt_vk_attention_dense *a);


/* x[t][i] += the learned position embedding (table: side x side rows of H,
 * F32/F16/BF16; n_out = side^2, n_in >= H) bilinearly interpolated to a
 * grid_w x grid_h patch grid at token t's merge-order position, as
 * vision/ops.c tmrt__vis_add_pos_embed computes it (bit for bit: the same
 * float operations in the same order), t < grid_w * grid_h, rows of H. */
typedef struct tmrt_vk_pos_embed {
    tmrt_vk_buf x;
    tmrt_vk_wmat table;
    uint32_t H, grid_w, grid_h, merge;
} tmrt_vk_pos_embed;
tmem_status tmrt__vk_pos_embed(tmrt_vk_rec *rec, const tmrt_vk_pos_embed *p);

/* The vision encoder's 2D rotary positions in place on q (floats 0..H) and
 * k (H..2H) of each token's row of ld floats (the qkv rows [q | k | v]):
 * per head of head_dim (a multiple of 4, at most 96), pair (i, i + hd/2)
 * rotated by row * f_i (i < hd/4) or col * f_(i - hd/4), f_j =
 * 1 / 10000^(4j / hd), (row, col) token t's merge-order grid position
 * (vision/attention.c tmrt__vis_rope). */
typedef struct tmrt_vk_vis_rope {
    tmrt_vk_buf qkv;
    uint32_t n_tok, H, heads, ld, grid_w, merge;
} tmrt_vk_vis_rope;
tmem_status tmrt__vk_vis_rope(tmrt_vk_rec *rec, const tmrt_vk_vis_rope *r);

#endif /* TMRT_VK_OPS_H */

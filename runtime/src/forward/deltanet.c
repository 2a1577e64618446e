/* deltanet.c: a Qwen3.5 Gated DeltaNet layer (llama.cpp's
 * build_layer_attn_linear, HF's Qwen3_5GatedDeltaNet).
 *
 *   qkv = W_qkv x, z = W_gate x, b = W_beta x, a = W_alpha x
 *   causal depthwise conv over the last conv_kernel inputs (+ conv state), SiLU
 *   q, k: L2-normalised per key head, q scaled by 1/sqrt(d_k)
 *   beta = sigmoid(b), g = softplus(a + dt_bias) * ssm_a   (ssm_a = -exp(A_log))
 *   per value head (key head = value head mod key heads, the tiled order):
 *       S = S * exp(g);  S += k (x) beta (v - S^T k);  o = S^T q
 *   o = rmsnorm(o) * ssm_norm * silu(z);  out = W_out o
 *
 * The state S of a head is stored [value dim][key dim] (llama.cpp's
 * layout). Decode runs the recurrence token by token; prefill runs the
 * chunked form (chunks of TMEM_MODEL_DELTA_CHUNK = 64 tokens: within a chunk the delta rule is a
 * triangular solve, between chunks the state carries), which computes the
 * same function: tests/runtime/test_forward.c checks they agree. */
#include <math.h>
#include <string.h>
#include "rt_internal.h"

#define CHUNK TMEM_MODEL_DELTA_CHUNK

typedef struct dn_shape {
    uint32_t n, dk, dv, G, Hv, C, I;
    size_t qk_stride;   /* floats between tokens of q_rep / k_rep (or conv_out) */
    const float *q, *k; /* head h of token t: q + t*qk_stride + h*dk */
    const float *v;     /* v + t*C + h*dv */
} dn_shape;

/* The DELTA_RULE op's buffers, taken on the dispatching thread. The chunk
 * buffers hold one chunk of every head; the recurrent form (decode) uses
 * none of them. */
typedef struct dn_bufs {
    const float *gate, *beta;
    float *core_out;
    float *k_beta, *v_beta, *decay_mask, *chunk_attn, *u, *w, *chunk_qk, *v_new;
} dn_bufs;

typedef struct dn_task {
    tmrt_run *r;
    const tmrt_lane *lanes; /* a multi-sequence decode step: token t's state is lanes[t]'s */
    uint32_t layer;
    dn_bufs a;
    dn_shape sh;
    float *state;       /* the layer's S for all heads */
    float *cum;         /* chunked form: per head, CHUNK cumulative gates; NULL: recurrent */
    uint32_t rows;      /* rows of the chunk buffers: min(n, CHUNK) */
    uint32_t t0, len;   /* the chunk being run */
} dn_task;

static const float *head_q(const dn_shape *s, uint32_t t, uint32_t h) {
    return s->q + t * s->qk_stride + (size_t)h * s->dk;
}
static const float *head_k(const dn_shape *s, uint32_t t, uint32_t h) {
    return s->k + t * s->qk_stride + (size_t)h * s->dk;
}
static const float *head_v(const dn_shape *s, uint32_t t, uint32_t h) {
    return s->v + (size_t)t * s->C + (size_t)h * s->dv;
}

/* The recurrent form for token t of head h over the state S of that head. */
static void recurrent_token(const dn_task *dt, float *S, uint32_t t, uint32_t h) {
    const dn_shape *s = &dt->sh;
    const float *q = head_q(s, t, h), *k = head_k(s, t, h), *v = head_v(s, t, h);
    float decay = expf(dt->a.gate[(size_t)t * s->Hv + h]);
    float beta = dt->a.beta[(size_t)t * s->Hv + h];
    float *o = dt->a.core_out + (size_t)t * s->I + (size_t)h * s->dv;
    for (uint32_t j = 0; j < s->dv; j++) {
        float *row = S + (size_t)j * s->dk;
        tmrt__kern_scale(row, decay, s->dk);
        float d = (v[j] - tmrt__kern_dot(row, k, s->dk)) * beta;
        tmrt__kern_axpy(row, d, k, s->dk);
        o[j] = tmrt__kern_dot(row, q, s->dk);
    }
}

/* The recurrent form, tokens one after another. */
static void recurrent_head(const dn_task *dt, uint32_t h) {
    const dn_shape *s = &dt->sh;
    float *S = dt->state + (size_t)h * s->dv * s->dk;
    for (uint32_t t = 0; t < s->n; t++) recurrent_token(dt, S, t, h);
}

/* The chunked form for one head and one chunk of L <= CHUNK tokens starting at
 * t0: the intra-chunk delta rule as a unit-lower-triangular solve (WY form),
 * the inter-chunk part through S. The chunk buffers hold one chunk for all
 * heads (matrices [head][i][j], rows [i][head x dim]); the planner's graph
 * (TMEM_MODEL_GRAPH_CHUNKED_DELTA) keeps them alive through the chunk loop. */
static void chunked_head(const dn_task *dt, uint32_t h, uint32_t t0, uint32_t L) {
    const dn_shape *s = &dt->sh;
    const dn_bufs *a = &dt->a;
    uint32_t dk = s->dk, dv = s->dv, Hv = s->Hv, CH = dt->rows;
    float *S = dt->state + (size_t)h * dv * dk;
    float *gc = dt->cum + (size_t)h * CHUNK;
    size_t mat = (size_t)h * CH * CH;
    float *D = a->decay_mask + mat, *A = a->chunk_attn + mat, *QK = a->chunk_qk + mat;
#define ROW_K(buf, i) ((buf) + (size_t)(i) * Hv * dk + (size_t)h * dk)
#define ROW_V(buf, i) ((buf) + (size_t)(i) * Hv * dv + (size_t)h * dv)
    float sum = 0;
    for (uint32_t i = 0; i < L; i++) gc[i] = sum += a->gate[(size_t)(t0 + i) * Hv + h];
    float eg[CHUNK]; /* exp(gc) */
    for (uint32_t i = 0; i < L; i++) eg[i] = expf(gc[i]);
    for (uint32_t i = 0; i < L; i++) { /* k_beta, v_beta */
        float b = a->beta[(size_t)(t0 + i) * Hv + h];
        const float *k = head_k(s, t0 + i, h), *v = head_v(s, t0 + i, h);
        float *kb = ROW_K(a->k_beta, i), *vb = ROW_V(a->v_beta, i);
        for (uint32_t x = 0; x < dk; x++) kb[x] = k[x] * b;
        for (uint32_t x = 0; x < dv; x++) vb[x] = v[x] * b;
    }
    /* kb k^T and q k^T for the chunk through the f32 matmul tiles (on this
     * thread: the pool runs the heads), then the decay mask */
    const kern_wmat kw = {head_k(s, t0, h), TMEM_GGML_F32, dk, L, s->qk_stride * sizeof(float)};
    tmrt__kern_matmul(&kw, ROW_K(a->k_beta, 0), (size_t)Hv * dk, L, A, CH, NULL, NULL);
    tmrt__kern_matmul(&kw, head_q(s, t0, h), s->qk_stride, L, QK, CH, NULL, NULL);
    for (uint32_t i = 0; i < L; i++) {
        for (uint32_t j = 0; j < L; j++) {
            float dm = j <= i ? expf(gc[i] - gc[j]) : 0.0f;
            D[i * CH + j] = dm;
            A[i * CH + j] = j < i ? -A[i * CH + j] * dm : 0.0f;
            QK[i * CH + j] = j <= i ? QK[i * CH + j] * dm : 0.0f;
        }
    }
    /* forward substitution: T = (I + strictly-lower(kb k^T * D))^-1, kept in
     * A without its unit diagonal */
    for (uint32_t i = 1; i < L; i++)
        for (uint32_t j = 0; j < i; j++) {
            float acc = A[i * CH + j];
            for (uint32_t m = j + 1; m < i; m++) acc += A[i * CH + m] * A[m * CH + j];
            A[i * CH + j] = acc;
        }
    /* u = T v_beta, w = T (k_beta * exp(gc)) */
    for (uint32_t i = 0; i < L; i++) {
        float *u = ROW_V(a->u, i), *w = ROW_K(a->w, i);
        memset(u, 0, dv * sizeof *u);
        memset(w, 0, dk * sizeof *w);
        for (uint32_t j = 0; j <= i; j++) {
            float tij = j == i ? 1.0f : A[i * CH + j];
            tmrt__kern_axpy(u, tij, ROW_V(a->v_beta, j), dv);
            tmrt__kern_axpy(w, tij * eg[j], ROW_K(a->k_beta, j), dk);
        }
    }
    /* v_new = u - S w;  out = exp(gc) S q + QK v_new (S w and S q through
     * the f32 matmul tiles: S is dv rows of dk) */
    const kern_wmat sw = {S, TMEM_GGML_F32, dk, dv, dk * sizeof(float)};
    float *o0 = a->core_out + (size_t)t0 * s->I + (size_t)h * dv;
    tmrt__kern_matmul(&sw, ROW_K(a->w, 0), (size_t)Hv * dk, L, ROW_V(a->v_new, 0), (size_t)Hv * dv,
                NULL, NULL);
    tmrt__kern_matmul(&sw, head_q(s, t0, h), s->qk_stride, L, o0, s->I, NULL, NULL);
    for (uint32_t i = 0; i < L; i++) {
        const float *u = ROW_V(a->u, i);
        float *vn = ROW_V(a->v_new, i);
        for (uint32_t j = 0; j < dv; j++) vn[j] = u[j] - vn[j];
    }
    for (uint32_t i = 0; i < L; i++) {
        float *o = o0 + (size_t)i * s->I;
        tmrt__kern_scale(o, eg[i], dv);
        for (uint32_t m = 0; m <= i; m++) tmrt__kern_axpy(o, QK[i * CH + m], ROW_V(a->v_new, m), dv);
    }
    /* S = S exp(gc_last) + sum_m v_new[m] (x) k[m] exp(gc_last - gc[m]) */
    float gl = gc[L - 1], el = expf(gl);
    for (uint32_t m = 0; m < L; m++) gc[m] = expf(gl - gc[m]); /* gc is done with: reuse it */
    for (uint32_t j = 0; j < dv; j++) {
        float *row = S + (size_t)j * dk;
        tmrt__kern_scale(row, el, dk);
        for (uint32_t m = 0; m < L; m++)
            tmrt__kern_axpy(row, ROW_V(a->v_new, m)[j] * gc[m], head_k(s, t0 + m, h), dk);
    }
#undef ROW_K
#undef ROW_V
}

static void run_heads(void *arg, int64_t begin, int64_t end, int thread) {
    (void)thread;
    dn_task *dt = arg;
    for (int64_t h = begin; h < end; h++) {
        if (dt->cum) chunked_head(dt, (uint32_t)h, dt->t0, dt->len);
        else recurrent_head(dt, (uint32_t)h);
    }
}

/* A multi-sequence decode step: one (token, head) item each, token t over
 * the state of its own sequence. */
static void run_lane_heads(void *arg, int64_t begin, int64_t end, int thread) {
    (void)thread;
    dn_task *dt = arg;
    const dn_shape *s = &dt->sh;
    for (int64_t item = begin; item < end; item++) {
        uint32_t t = (uint32_t)(item / s->Hv), h = (uint32_t)(item % s->Hv);
        float *S = dt->lanes[t].ssm_state[dt->layer] + (size_t)h * s->dv * s->dk;
        recurrent_token(dt, S, t, h);
    }
}

static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* The causal depthwise conv over a block of channels for every token. */
typedef struct conv_task {
    const kern_wmat *w;       /* channels rows of K taps */
    const float *hist, *in;   /* (K-1) x C history (oldest first), n x C inputs */
    float *out;               /* n x C */
    uint32_t n, C, K;
} conv_task;

/* Channels per block: the taps of a block are read once, transposed to
 * [tap][channel], so a token row of the block is K contiguous runs of
 * multiply-adds over 1 KiB of channels (the conv walked channel by channel
 * strided over tokens, C floats apart: 8% of the 0.8B prefill,
 * single-threaded). */
#define CONV_BLOCK 256u
#define CONV_MAX_TAPS 16u

/* o[c] += x[c] * w[c] over one block: a constant trip count and restrict
 * so that -O2 vectorises it. */
static void conv_madd_block(float *restrict o, const float *restrict x, const float *restrict w) {
    for (uint32_t c = 0; c < CONV_BLOCK; c++) o[c] += x[c] * w[c];
}

static void conv_channels(void *arg, int64_t c_begin, int64_t c_end, int thread) {
    (void)thread;
    const conv_task *ct = arg;
    const uint32_t C = ct->C, K = ct->K;
    float taps[CONV_MAX_TAPS][CONV_BLOCK], row[CONV_MAX_TAPS];
    for (uint32_t c0 = (uint32_t)c_begin; c0 < (uint32_t)c_end; c0 += CONV_BLOCK) {
        const uint32_t nc = (uint32_t)c_end - c0 < CONV_BLOCK ? (uint32_t)c_end - c0 : CONV_BLOCK;
        for (uint32_t c = 0; c < nc; c++) {
            const float *w = ct->w->type == TMEM_GGML_F32
                                 ? (const float *)ct->w->data + (size_t)(c0 + c) * K
                                 : (tmrt__kern_get_row(ct->w, c0 + c, row), row);
            for (uint32_t j = 0; j < K; j++) taps[j][c] = w[j];
        }
        for (uint32_t t = 0; t < ct->n; t++) {
            float *o = ct->out + (size_t)t * C + c0;
            memset(o, 0, nc * sizeof *o);
            for (uint32_t j = 0; j < K; j++) {
                const int64_t src = (int64_t)t + j - (K - 1); /* < 0: from the history */
                const float *x = src < 0 ? ct->hist + (size_t)(src + K - 1) * C + c0
                                         : ct->in + (size_t)src * C + c0;
                if (nc == CONV_BLOCK) conv_madd_block(o, x, taps[j]);
                else for (uint32_t c = 0; c < nc; c++) o[c] += x[c] * taps[j][c];
            }
            tmrt__kern_silu(o, o, nc);
        }
    }
}

/* conv_out = silu(causal depthwise conv of [conv state; qkv]) over the
 * pool by blocks of channels; the conv state then keeps the last kernel-1
 * inputs. */
static void conv_seq(tmrt_run *r, const tmrt_layer_weights *lw, float *hist, const float *qkv, float *out,
                     uint32_t n) {
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t K = hp->conv_kernel, C = (uint32_t)lw->conv1d.n_out;
    conv_task ct = {&lw->conv1d, hist, qkv, out, n, C, K};
    tmrt__kern_pool_for(r->pool, C, CONV_BLOCK, conv_channels, &ct);
    /* new history: the last K-1 inputs of [hist; qkv] */
    for (uint32_t j = 0; j + 1 < K; j++) {
        int64_t src = (int64_t)n + j - (K - 1);
        float *dst = hist + (size_t)j * C;
        if (src < 0) memmove(dst, hist + (size_t)(src + K - 1) * C, C * sizeof *dst);
        else memcpy(dst, qkv + (size_t)src * C, C * sizeof *dst);
    }
}

/* The run's sequence, or (lanes) each token over its own sequence's history. */
static void conv(tmrt_run *r, const tmrt_layer_weights *lw, uint32_t layer, const float *qkv, float *out,
                 const tmrt_step *st) {
    if (!st->lanes) {
        conv_seq(r, lw, r->conv_state[layer], qkv, out, st->n); /* (K-1) rows of C, oldest first */
        return;
    }
    size_t C = (size_t)lw->conv1d.n_out;
    for (uint32_t t = 0; t < st->n; t++)
        conv_seq(r, lw, st->lanes[t].conv_state[layer], qkv + t * C, out + t * C, 1);
}

static void l2norm(float *x, uint32_t n, float eps, float scale) {
    float ss = tmrt__kern_dot(x, x, n), norm = sqrtf(ss);
    tmrt__kern_scale(x, scale / (norm > eps ? norm : eps), n);
}

/* The projections, the conv and the gates: QKV_PROJ .. L2NORM. */
static void inputs(tmrt_run *r, const tmrt_layer_weights *lw, uint32_t layer, tmrt_acts *a, const tmrt_step *st) {
    uint32_t n = st->n;
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t dk = hp->ssm_head_dim, G = hp->ssm_k_heads, Hv = hp->ssm_v_heads, C = 2 * G * dk + hp->ssm_inner;
    TMRT_OP(a, QKV_PROJ);
    tmrt__matmul(r, &lw->wqkv, TMRT_ACT(a, ATTN_NORM), n, TMRT_ACT(a, QKV_MIXED));
    TMRT_OP(a, Z_PROJ);
    tmrt__matmul(r, &lw->wgate, TMRT_ACT(a, ATTN_NORM), n, TMRT_ACT(a, Z));
    TMRT_OP(a, BETA_PROJ);
    tmrt__matmul(r, &lw->wbeta, TMRT_ACT(a, ATTN_NORM), n, TMRT_ACT(a, BETA));
    TMRT_OP(a, ALPHA_PROJ);
    tmrt__matmul(r, &lw->walpha, TMRT_ACT(a, ATTN_NORM), n, TMRT_ACT(a, ALPHA));
    TMRT_OP(a, CONV);
    conv(r, lw, layer, TMRT_ACT(a, QKV_MIXED), TMRT_ACT(a, CONV_OUT), st);

    /* the decay gate, and beta = sigmoid(b) in place */
    TMRT_OP(a, DECAY_GATE);
    const float *dt_bias = tmrt__vec(&lw->dt_bias, tmrt__scratch(r, Hv * 4));
    const float *ssm_a = tmrt__vec(&lw->ssm_a, tmrt__scratch(r, Hv * 4));
    float *gate = TMRT_ACT(a, GATE), *beta = TMRT_ACT(a, BETA);
    const float *alpha = TMRT_ACT(a, ALPHA);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < Hv; h++) {
            size_t i = (size_t)t * Hv + h;
            gate[i] = softplus(alpha[i] + dt_bias[h]) * ssm_a[h];
            beta[i] = 1.0f / (1.0f + expf(-beta[i]));
        }
    TMRT_OP(a, L2NORM);
    float *cv = TMRT_ACT(a, CONV_OUT), qscale = 1.0f / sqrtf((float)dk);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < 2 * G; h++)
            l2norm(cv + (size_t)t * C + (size_t)h * dk, dk, hp->rms_eps, h < G ? qscale : 1.0f);
}

/* Q_REPEAT, K_REPEAT (Hv != G): the key heads of q and k repeated to the
 * value heads, tiled (value head h uses key head h % G). */
static void repeat_heads(tmrt_run *r, tmrt_acts *a, uint32_t n) {
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t dk = hp->ssm_head_dim, G = hp->ssm_k_heads, Hv = hp->ssm_v_heads, C = 2 * G * dk + hp->ssm_inner;
    TMRT_OP(a, Q_REPEAT);
    float *qr = TMRT_ACT(a, Q_REP);
    const float *cv = TMRT_ACT(a, CONV_OUT);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < Hv; h++)
            memcpy(qr + ((size_t)t * Hv + h) * dk, cv + (size_t)t * C + (size_t)(h % G) * dk, dk * 4);
    TMRT_OP(a, K_REPEAT);
    float *kr = TMRT_ACT(a, K_REP);
    cv = TMRT_ACT(a, CONV_OUT) + (size_t)G * dk;
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < Hv; h++)
            memcpy(kr + ((size_t)t * Hv + h) * dk, cv + (size_t)t * C + (size_t)(h % G) * dk, dk * 4);
}

void tmrt__deltanet(tmrt_run *r, const tmrt_layer_weights *lw, uint32_t layer, tmrt_acts *a,
                    const tmrt_step *st) {
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t n = st->n, dk = hp->ssm_head_dim, G = hp->ssm_k_heads, Hv = hp->ssm_v_heads, I = hp->ssm_inner;
    uint32_t dv = I / Hv, C = 2 * G * dk + I;
    inputs(r, lw, layer, a, st);
    if (Hv != G) repeat_heads(r, a, n);

    /* DELTA_RULE: the recurrence token by token (decode), or the chunk loop */
    TMRT_OP(a, DELTA_RULE);
    const float *cv = TMRT_ACT(a, CONV_OUT); /* q, k, v per token */
    dn_shape sh = {n, dk, dv, G, Hv, C, I, C, cv, cv + (size_t)G * dk, cv + (size_t)2 * G * dk};
    if (Hv != G) {
        sh.q = TMRT_ACT(a, Q_REP);
        sh.k = TMRT_ACT(a, K_REP);
        sh.qk_stride = (size_t)Hv * dk;
    }
    dn_task dt = {r, st->lanes, layer,
                  {TMRT_ACT(a, GATE), TMRT_ACT(a, BETA), TMRT_ACT(a, CORE_OUT), NULL, NULL, NULL, NULL, NULL, NULL,
                   NULL, NULL},
                  sh, st->lanes ? NULL : r->ssm_state[layer], NULL, n < CHUNK ? n : CHUNK, 0, n};
    if (st->lanes) {
        tmrt__kern_pool_for(r->pool, (int64_t)n * Hv, 1, run_lane_heads, &dt);
    } else if (st->decode) {
        tmrt__kern_pool_for(r->pool, Hv, 1, run_heads, &dt);
    } else {
        dn_bufs *b = &dt.a;
        b->k_beta = TMRT_ACT(a, K_BETA), b->v_beta = TMRT_ACT(a, V_BETA), b->decay_mask = TMRT_ACT(a, DECAY_MASK);
        b->chunk_attn = TMRT_ACT(a, CHUNK_ATTN), b->u = TMRT_ACT(a, U), b->w = TMRT_ACT(a, W);
        b->chunk_qk = TMRT_ACT(a, CHUNK_QK), b->v_new = TMRT_ACT(a, V_NEW);
        dt.cum = tmrt__scratch(r, (size_t)Hv * CHUNK * sizeof(float));
        for (dt.t0 = 0; dt.t0 < n; dt.t0 += CHUNK) {
            dt.len = n - dt.t0 < CHUNK ? n - dt.t0 : CHUNK;
            tmrt__kern_pool_for(r->pool, Hv, 1, run_heads, &dt);
        }
    }

    /* gated RMS norm: rmsnorm(o) * ssm_norm * silu(z), per value head */
    TMRT_OP(a, GATED_NORM);
    const float *nw = tmrt__vec(&lw->ssm_norm, tmrt__scratch(r, dv * 4));
    float *core = TMRT_ACT(a, CORE_OUT);
    const float *zz = TMRT_ACT(a, Z);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < Hv; h++) {
            float *o = core + (size_t)t * I + (size_t)h * dv;
            const float *z = zz + (size_t)t * I + (size_t)h * dv;
            tmrt__kern_rmsnorm(o, o, nw, dv, hp->rms_eps);
            tmrt__kern_silu_mul(o, z, o, dv);
        }
    tmrt__scratch_reset(r);
    TMRT_OP(a, OUT_PROJ);
    tmrt__matmul(r, &lw->ssm_out, TMRT_ACT(a, CORE_OUT), n, TMRT_ACT(a, ATTN_PROJ));
}

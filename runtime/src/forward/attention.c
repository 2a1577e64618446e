/* attention.c: a Qwen3.5 full-attention layer (llama.cpp's
 * build_layer_attn): the joint Q + gate projection (per head: head_dim
 * query values, then head_dim gate values), K and V projections, RMS norm of
 * each q and k head, partial M-RoPE, the new K/V rows stored in the cache
 * (f16, or f32), then causal GQA attention over the cache with an online softmax
 * (one pass over the rows, never a ctx x ctx matrix), the sigmoid output
 * gate and the output projection. */
#include <math.h>
#include <string.h>
#include "rt_internal.h"

typedef struct attn_task {
    tmrt_run *r;
    const tmrt_step *st;
    const float *q_gate;        /* the ATTN op's buffers (taken on the dispatching thread) */
    float *attn_out;
    uint32_t kv_layer;
    bool simd;          /* SIMD loops for f16 rows (F16C + FMA, NEON) */
} attn_task;

/* SIMD_F16: the f16 row loops of this build's ISA (AVX2+F16C when the CPU
 * has it, NEON on every aarch64 CPU), or none */
#if TMRT_HAVE_AVX2
#define SIMD_F16 1
#define DOT_F16 tmrt__dot_f16_avx2
#define AXPY_F16 tmrt__axpy_f16_avx2
#define SIMD_F16_CPU() tmrt__kern_have_avx2()
#elif TMRT_HAVE_NEON
#define SIMD_F16 1
#define DOT_F16 tmrt__dot_f16_neon
#define AXPY_F16 tmrt__axpy_f16_neon
#define SIMD_F16_CPU() true
#else
#define SIMD_F16 0
#define SIMD_F16_CPU() false
#endif

static float dot_row(const float *q, const void *k, uint32_t n, bool f32, bool simd) {
    if (f32) return tmrt__kern_dot(q, k, n);
#if SIMD_F16
    if (simd) return DOT_F16(q, k, n);
#else
    (void)simd;
#endif
    const uint16_t *h = k;
    float s = 0;
    for (uint32_t i = 0; i < n; i++) s += q[i] * kern_f16_to_f32(h[i]);
    return s;
}

static void axpy_row(float *acc, float p, const void *v, uint32_t n, bool f32, bool simd) {
    if (f32) {
        tmrt__kern_axpy(acc, p, v, n);
        return;
    }
#if SIMD_F16
    if (simd) {
        AXPY_F16(acc, p, v, n);
        return;
    }
#else
    (void)simd;
#endif
    const uint16_t *h = v;
    for (uint32_t i = 0; i < n; i++) acc[i] += p * kern_f16_to_f32(h[i]);
}

/* Keys scored per block: the scores of a block go through one vector exp. */
#define KEY_BLOCK 32
/* Query heads of one KV head handled together (more are taken in turns). */
#define MAX_GROUP 8

/* The online softmax of one query head: acc (in the attn_out row), max, sum. */
typedef struct head_acc {
    const float *q;
    float *acc;
    float m, l;
    float score[KEY_BLOCK];
} head_acc;

/* One (token, KV head) pair per item: for each query head of the group,
 * out = softmax(q K^T / sqrt(d)) V over slots 0..n_past + t, accumulated in
 * place in the attn_out row. Keys go in blocks of KEY_BLOCK: the group's
 * scores of a block, one rescale per block when the max grows, one vector
 * exp, then the V rows; each K and V row is read once for the whole group
 * (GQA: 4 query heads per KV head in the 0.8B). An element's value depends
 * only on its token's q and the cache rows, not on the batch or thread. */
static void attend(void *arg, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const attn_task *at = arg;
    const tmrt_hparams *hp = &at->r->model->hp;
    uint32_t H = hp->n_head, Hkv = hp->n_head_kv, hd = hp->head_dim, group = H / Hkv;
    float scale = 1.0f / sqrtf((float)hd);
    bool f32 = at->r->kv.f32, simd = at->simd;
    head_acc ha[MAX_GROUP];
    for (int64_t item = begin; item < end; item++) {
        uint32_t t = (uint32_t)(item / Hkv), kvh = (uint32_t)(item % Hkv);
        uint32_t last = tmrt__step_pos(at->st, t);
        const tmrt_kv_view *kv = tmrt__step_kv(at->r, at->st, t);
        size_t head_off = (size_t)kvh * hd * (f32 ? 4 : 2);
        for (uint32_t g0 = 0; g0 < group; g0 += MAX_GROUP) {
            uint32_t ng = group - g0 < MAX_GROUP ? group - g0 : MAX_GROUP;
            for (uint32_t g = 0; g < ng; g++) {
                uint32_t h = kvh * group + g0 + g;
                ha[g].q = at->q_gate + (size_t)t * 2 * H * hd + (size_t)h * 2 * hd;
                ha[g].acc = at->attn_out + (size_t)t * H * hd + (size_t)h * hd;
                ha[g].m = -INFINITY;
                ha[g].l = 0.0f;
                memset(ha[g].acc, 0, hd * sizeof(float));
            }
            for (uint32_t s0 = 0; s0 <= last; s0 += KEY_BLOCK) {
                uint32_t nb = last + 1 - s0 < KEY_BLOCK ? last + 1 - s0 : KEY_BLOCK;
                void *k, *v;
                for (uint32_t j = 0; j < nb; j++) {
                    tmrt__kv_rows(kv, at->kv_layer, s0 + j, &k, &v);
                    const void *kh = (const char *)k + head_off;
                    for (uint32_t g = 0; g < ng; g++)
                        ha[g].score[j] = dot_row(ha[g].q, kh, hd, f32, simd) * scale;
                }
                for (uint32_t g = 0; g < ng; g++) {
                    float bm = ha[g].score[0];
                    for (uint32_t j = 1; j < nb; j++)
                        bm = ha[g].score[j] > bm ? ha[g].score[j] : bm;
                    if (bm > ha[g].m) { /* rescale what was summed under the old max */
                        float c = expf(ha[g].m - bm);
                        ha[g].l *= c;
                        tmrt__kern_scale(ha[g].acc, c, hd);
                        ha[g].m = bm;
                    }
                    ha[g].l += tmrt__kern_exp_sub_sum(ha[g].score, ha[g].m, nb);
                }
                for (uint32_t j = 0; j < nb; j++) {
                    tmrt__kv_rows(kv, at->kv_layer, s0 + j, &k, &v);
                    const void *vh = (const char *)v + head_off;
                    for (uint32_t g = 0; g < ng; g++)
                        axpy_row(ha[g].acc, ha[g].score[j], vh, hd, f32, simd);
                }
            }
            for (uint32_t g = 0; g < ng; g++) tmrt__kern_scale(ha[g].acc, 1.0f / ha[g].l, hd);
        }
    }
}

static void default_pos(const tmrt_step *st, uint32_t t, int32_t pos[4]) {
    if (st->positions) {
        memcpy(pos, st->positions + 4 * (size_t)t, 4 * sizeof *pos);
    } else {
        int32_t p = (int32_t)tmrt__step_pos(st, t);
        pos[0] = pos[1] = pos[2] = pos[3] = p;
    }
}

void tmrt__attention(tmrt_run *r, const tmrt_layer_weights *lw, uint32_t layer, tmrt_acts *a,
                     const tmrt_step *st) {
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t n = st->n, H = hp->n_head, Hkv = hp->n_head_kv, hd = hp->head_dim;
    TMRT_OP(a, Q_PROJ);
    tmrt__matmul(r, &lw->wq, TMRT_ACT(a, ATTN_NORM), n, TMRT_ACT(a, Q_GATE));
    TMRT_OP(a, K_PROJ);
    tmrt__matmul(r, &lw->wk, TMRT_ACT(a, ATTN_NORM), n, TMRT_ACT(a, K));
    TMRT_OP(a, V_PROJ);
    tmrt__matmul(r, &lw->wv, TMRT_ACT(a, ATTN_NORM), n, TMRT_ACT(a, V));

    /* per token: q, k norm + rope (QK_NORM_ROPE), then its K, V rows into
     * the cache (KV_STORE) */
    const float *qn = tmrt__vec(&lw->q_norm, tmrt__scratch(r, hd * 4));
    const float *kn = tmrt__vec(&lw->k_norm, tmrt__scratch(r, hd * 4));
    uint32_t kv_layer = r->attn_index[layer];
    TMRT_OP(a, QK_NORM_ROPE);
    float *qg = TMRT_ACT(a, Q_GATE), *kb = TMRT_ACT(a, K);
    TMRT_OP(a, KV_STORE);
    const float *kbs = TMRT_ACT(a, K), *vb = TMRT_ACT(a, V);
    for (uint32_t t = 0; t < n; t++) {
        int32_t pos[4];
        default_pos(st, t, pos);
        for (uint32_t h = 0; h < H; h++) {
            float *q = qg + (size_t)t * 2 * H * hd + (size_t)h * 2 * hd;
            tmrt__kern_rmsnorm(q, q, qn, hd, hp->rms_eps);
            tmrt__rope(q, hp, pos);
        }
        void *kr, *vr;
        tmrt__kv_rows(tmrt__step_kv(r, st, t), kv_layer, tmrt__step_pos(st, t), &kr, &vr);
        for (uint32_t h = 0; h < Hkv; h++) {
            float *k = kb + (size_t)t * Hkv * hd + (size_t)h * hd;
            tmrt__kern_rmsnorm(k, k, kn, hd, hp->rms_eps);
            tmrt__rope(k, hp, pos);
        }
        const float *v = vb + (size_t)t * Hkv * hd;
        const float *k = kbs + (size_t)t * Hkv * hd;
        if (r->kv.f32) {
            memcpy(kr, k, (size_t)Hkv * hd * 4);
            memcpy(vr, v, (size_t)Hkv * hd * 4);
        } else {
            for (uint32_t i = 0; i < Hkv * hd; i++) {
                ((uint16_t *)kr)[i] = kern_f32_to_f16(k[i]);
                ((uint16_t *)vr)[i] = kern_f32_to_f16(v[i]);
            }
        }
    }
    tmrt__scratch_reset(r);

    TMRT_OP(a, ATTN);
    attn_task at = {r, st, TMRT_ACT(a, Q_GATE), TMRT_ACT(a, ATTN_OUT), kv_layer,
                    SIMD_F16 && SIMD_F16_CPU()};
    tmrt__kern_pool_for(r->pool, (int64_t)n * Hkv, 1, attend, &at);

    /* the output gate: attn *= sigmoid(gate), the gate being each head's
     * second half of the joint projection */
    TMRT_OP(a, OUT_GATE);
    const float *gates = TMRT_ACT(a, Q_GATE);
    float *ao = TMRT_ACT(a, ATTN_OUT);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < H; h++) {
            const float *g = gates + (size_t)t * 2 * H * hd + (size_t)h * 2 * hd + hd;
            float *o = ao + (size_t)t * H * hd + (size_t)h * hd;
            for (uint32_t i = 0; i < hd; i++) o[i] *= 1.0f / (1.0f + expf(-g[i]));
        }
    TMRT_OP(a, OUT_PROJ);
    tmrt__matmul(r, &lw->wo, TMRT_ACT(a, ATTN_OUT), n, TMRT_ACT(a, ATTN_PROJ));
}

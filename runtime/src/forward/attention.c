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
    tmrt_acts *a;
    uint32_t kv_layer;
    bool simd;          /* F16C + FMA loops for f16 rows */
} attn_task;

#if TMRT_HAVE_AVX2
#define SIMD_F16 1
#else
#define SIMD_F16 0
#endif

static float dot_row(const float *q, const void *k, uint32_t n, bool f32, bool simd) {
    if (f32) return kern_dot(q, k, n);
#if SIMD_F16
    if (simd) return tmrt__dot_f16_avx2(q, k, n);
#else
    (void)simd;
#endif
    const uint16_t *h = k;
    float s = 0;
    for (uint32_t i = 0; i < n; i++) s += q[i] * tmrt__f16_to_f32(h[i]);
    return s;
}

static void axpy_row(float *acc, float p, const void *v, uint32_t n, bool f32, bool simd) {
    if (f32) {
        kern_axpy(acc, p, v, n);
        return;
    }
#if SIMD_F16
    if (simd) {
        tmrt__axpy_f16_avx2(acc, p, v, n);
        return;
    }
#else
    (void)simd;
#endif
    const uint16_t *h = v;
    for (uint32_t i = 0; i < n; i++) acc[i] += p * tmrt__f16_to_f32(h[i]);
}

/* One (token, head) pair per item: out = softmax(q K^T / sqrt(d)) V over
 * slots 0..n_past + t, accumulated in place in the attn_out row. */
static void attend(void *arg, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const attn_task *at = arg;
    const tmrt_hparams *hp = &at->r->model->hp;
    uint32_t H = hp->n_head, hd = hp->head_dim, group = hp->n_head / hp->n_head_kv;
    float scale = 1.0f / sqrtf((float)hd);
    for (int64_t item = begin; item < end; item++) {
        uint32_t t = (uint32_t)(item / H), h = (uint32_t)(item % H), kvh = h / group;
        const float *q = at->a->q_gate + (size_t)t * 2 * H * hd + (size_t)h * 2 * hd;
        float *acc = at->a->attn_out + (size_t)t * H * hd + (size_t)h * hd;
        memset(acc, 0, hd * sizeof *acc);
        float m = -INFINITY, l = 0;
        uint32_t last = at->st->n_past + t;
        bool f32 = at->r->kv.f32, simd = at->simd;
        size_t head_off = (size_t)kvh * hd * (f32 ? 4 : 2);
        for (uint32_t s = 0; s <= last; s++) {
            void *k, *v;
            tmrt__kv_rows(&at->r->kv, at->kv_layer, s, &k, &v);
            float x = dot_row(q, (const char *)k + head_off, hd, f32, simd) * scale;
            if (x > m) { /* rescale what was summed under the old max */
                float c = expf(m - x);
                l *= c;
                for (uint32_t i = 0; i < hd; i++) acc[i] *= c;
                m = x;
            }
            float p = expf(x - m);
            l += p;
            axpy_row(acc, p, (const char *)v + head_off, hd, f32, simd);
        }
        float inv = 1.0f / l;
        for (uint32_t i = 0; i < hd; i++) acc[i] *= inv;
    }
}

static void default_pos(const tmrt_step *st, uint32_t t, int32_t pos[4]) {
    if (st->positions) {
        memcpy(pos, st->positions + 4 * (size_t)t, 4 * sizeof *pos);
    } else {
        int32_t p = (int32_t)(st->n_past + t);
        pos[0] = pos[1] = pos[2] = pos[3] = p;
    }
}

void tmrt__attention(tmrt_run *r, const tmrt_layer_weights *lw, uint32_t layer, tmrt_acts *a,
                     const tmrt_step *st, const float *x_norm) {
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t n = st->n, H = hp->n_head, Hkv = hp->n_head_kv, hd = hp->head_dim;
    tmrt__matmul(r, &lw->wq, x_norm, n, a->q_gate);
    tmrt__matmul(r, &lw->wk, x_norm, n, a->k);
    tmrt__matmul(r, &lw->wv, x_norm, n, a->v);

    const float *qn = tmrt__vec(&lw->q_norm, tmrt__scratch(r, hd * 4));
    const float *kn = tmrt__vec(&lw->k_norm, tmrt__scratch(r, hd * 4));
    uint32_t kv_layer = r->attn_index[layer];
    for (uint32_t t = 0; t < n; t++) {
        int32_t pos[4];
        default_pos(st, t, pos);
        for (uint32_t h = 0; h < H; h++) {
            float *q = a->q_gate + (size_t)t * 2 * H * hd + (size_t)h * 2 * hd;
            kern_rmsnorm(q, q, qn, hd, hp->rms_eps);
            tmrt__rope(q, hp, pos);
        }
        void *kr, *vr;
        tmrt__kv_rows(&r->kv, kv_layer, st->n_past + t, &kr, &vr);
        for (uint32_t h = 0; h < Hkv; h++) {
            float *k = a->k + (size_t)t * Hkv * hd + (size_t)h * hd;
            kern_rmsnorm(k, k, kn, hd, hp->rms_eps);
            tmrt__rope(k, hp, pos);
        }
        const float *v = a->v + (size_t)t * Hkv * hd;
        const float *k = a->k + (size_t)t * Hkv * hd;
        if (r->kv.f32) {
            memcpy(kr, k, (size_t)Hkv * hd * 4);
            memcpy(vr, v, (size_t)Hkv * hd * 4);
        } else {
            for (uint32_t i = 0; i < Hkv * hd; i++) {
                ((uint16_t *)kr)[i] = tmrt__f32_to_f16(k[i]);
                ((uint16_t *)vr)[i] = tmrt__f32_to_f16(v[i]);
            }
        }
    }
    tmrt__scratch_reset(r);

    attn_task at = {r, st, a, kv_layer, SIMD_F16 && kern_have_avx2()};
    kern_pool_for(r->pool, (int64_t)n * H, 1, attend, &at);

    /* the output gate: attn *= sigmoid(gate), the gate being each head's
     * second half of the joint projection */
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < H; h++) {
            const float *g = a->q_gate + (size_t)t * 2 * H * hd + (size_t)h * 2 * hd + hd;
            float *o = a->attn_out + (size_t)t * H * hd + (size_t)h * hd;
            for (uint32_t i = 0; i < hd; i++) o[i] *= 1.0f / (1.0f + expf(-g[i]));
        }
    tmrt__matmul(r, &lw->wo, a->attn_out, n, a->attn_proj);
}

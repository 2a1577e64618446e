/*
 * Vision attention: 2D rotary positions (HF's Qwen3_5VisionRotaryEmbedding:
 * head_dim/4 frequencies for the patch's row, head_dim/4 for its column,
 * rotate_half pairing i with i + head_dim/2), then non-causal softmax
 * attention over all patches of the image, tiled flash-style: a block of
 * VIS_ATTN_BLOCK queries walks the keys VIS_ATTN_BLOCK at a time with a
 * running max and sum, so the n x n score matrix never exists (per thread:
 * one 64 x 64 tile and a 64 x head_dim accumulator).
 */
#include <math.h>
#include <string.h>
#include "vision/vision_internal.h"

typedef struct rope_job {
    const tmrt_vision *v;
    const tmrt_vision_grid *g;
    float *qkv;
    float inv_freq[256];
} rope_job;

static void rope_rows(void *arg, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const rope_job *j = arg;
    uint32_t H = j->v->cfg.hidden, nh = j->v->cfg.heads, hd = H / nh, half = hd / 2, quarter = hd / 4;
    for (int64_t t = begin; t < end; t++) {
        uint32_t row, col;
        tmrt__vis_token_pos((uint32_t)t, j->g->grid_w, j->v->cfg.merge, &row, &col);
        float cs[128], sn[128];
        for (uint32_t i = 0; i < half; i++) {
            float a = i < quarter ? (float)row * j->inv_freq[i] : (float)col * j->inv_freq[i - quarter];
            cs[i] = cosf(a), sn[i] = sinf(a);
        }
        float *base = j->qkv + (size_t)t * 3 * H;
        for (uint32_t which = 0; which < 2; which++) /* q, then k */
            for (uint32_t h = 0; h < nh; h++) {
                float *x = base + (size_t)which * H + (size_t)h * hd;
                for (uint32_t i = 0; i < half; i++) {
                    float a = x[i], b = x[i + half];
                    x[i] = a * cs[i] - b * sn[i];
                    x[i + half] = b * cs[i] + a * sn[i];
                }
            }
    }
}

void tmrt__vis_rope(const tmrt_vision *v, const tmrt_vision_grid *g, float *qkv, kern_pool *pool) {
    rope_job j = {v, g, qkv, {0}};
    uint32_t hd = v->cfg.hidden / v->cfg.heads, dim = hd / 2;
    for (uint32_t i = 0; i < dim / 2; i++) j.inv_freq[i] = 1.0f / powf(10000.0f, (float)(2 * i) / (float)dim);
    tmrt__kern_pool_for(pool, g->n_patches, 16, rope_rows, &j);
}

size_t tmrt__vis_attention_scratch_floats(uint32_t head_dim) {
    return (size_t)VIS_ATTN_BLOCK * VIS_ATTN_BLOCK + (size_t)VIS_ATTN_BLOCK * head_dim + 2 * VIS_ATTN_BLOCK;
}

typedef struct attn_job {
    const float *qkv;
    float *out, *scratch;
    uint32_t n, H, hd, heads, q_blocks;
    size_t per_thread;
    float scale;
} attn_job;

/* One (head, query block): the online softmax over every key block. */
static void attend(const attn_job *j, uint32_t head, uint32_t qb, float *tile, float *acc, float *mx, float *sum) {
    uint32_t q0 = qb * VIS_ATTN_BLOCK, nq = j->n - q0 < VIS_ATTN_BLOCK ? j->n - q0 : VIS_ATTN_BLOCK;
    size_t row = 3 * (size_t)j->H, qoff = (size_t)head * j->hd, koff = j->H + qoff, voff = 2 * (size_t)j->H + qoff;
    for (uint32_t i = 0; i < nq; i++) mx[i] = -INFINITY, sum[i] = 0.0f;
    memset(acc, 0, sizeof(float) * nq * j->hd);
    for (uint32_t k0 = 0; k0 < j->n; k0 += VIS_ATTN_BLOCK) {
        uint32_t nk = j->n - k0 < VIS_ATTN_BLOCK ? j->n - k0 : VIS_ATTN_BLOCK;
        for (uint32_t i = 0; i < nq; i++) {
            const float *q = j->qkv + (size_t)(q0 + i) * row + qoff;
            float *s = tile + (size_t)i * VIS_ATTN_BLOCK, m = mx[i];
            for (uint32_t k = 0; k < nk; k++) {
                s[k] = tmrt__kern_dot(q, j->qkv + (size_t)(k0 + k) * row + koff, j->hd) * j->scale;
                if (s[k] > m) m = s[k];
            }
            /* Rescale what was accumulated under the old max. */
            float corr = expf(mx[i] - m), l = sum[i] * corr;
            float *a = acc + (size_t)i * j->hd;
            if (corr != 1.0f) tmrt__kern_scale(a, corr, j->hd);
            for (uint32_t k = 0; k < nk; k++) {
                float p = expf(s[k] - m);
                l += p;
                tmrt__kern_axpy(a, p, j->qkv + (size_t)(k0 + k) * row + voff, j->hd);
            }
            mx[i] = m, sum[i] = l;
        }
    }
    for (uint32_t i = 0; i < nq; i++) {
        float *o = j->out + (size_t)(q0 + i) * j->H + qoff;
        const float *a = acc + (size_t)i * j->hd;
        float inv = 1.0f / sum[i];
        for (uint32_t d = 0; d < j->hd; d++) o[d] = a[d] * inv;
    }
}

static void attend_items(void *arg, int64_t begin, int64_t end, int thread) {
    const attn_job *j = arg;
    float *tile = j->scratch + (size_t)thread * j->per_thread;
    float *acc = tile + VIS_ATTN_BLOCK * VIS_ATTN_BLOCK, *mx = acc + (size_t)VIS_ATTN_BLOCK * j->hd;
    float *sum = mx + VIS_ATTN_BLOCK;
    for (int64_t it = begin; it < end; it++)
        attend(j, (uint32_t)(it / j->q_blocks), (uint32_t)(it % j->q_blocks), tile, acc, mx, sum);
}

void tmrt__vis_attention(const tmrt_vision *v, uint32_t n_tok, const float *qkv, float *out, float *scratch,
                   kern_pool *pool) {
    attn_job j;
    j.qkv = qkv, j.out = out, j.scratch = scratch, j.n = n_tok, j.H = v->cfg.hidden, j.heads = v->cfg.heads;
    j.hd = j.H / j.heads;
    j.q_blocks = (n_tok + VIS_ATTN_BLOCK - 1) / VIS_ATTN_BLOCK;
    j.per_thread = tmrt__vis_attention_scratch_floats(j.hd);
    j.scale = 1.0f / sqrtf((float)j.hd);
    tmrt__kern_pool_for(pool, (int64_t)j.heads * j.q_blocks, 1, attend_items, &j);
}

/*
 * The vision encoder's forward pass (HF's Qwen3_5VisionModel), over buffers
 * someone else provides (planned heaps in typed mode, mallocs in naive mode:
 * the same code, so the two give the same bits):
 *
 *   patch embedding  the Conv3d as two matmuls, one per frame (llama.cpp's
 *                    v.patch_embd.weight / .weight.1 over the frame-major
 *                    patch rows), + bias + the interpolated position embedding
 *   depth x block    x + proj(attn(rope(qkv(LN1 x)))), then + fc2(gelu_tanh(fc1(LN2 .)))
 *   merger           LN per patch, 2x2 patches -> one row of 4*hidden,
 *                    fc1, GELU (erf), fc2 -> out_hidden
 */
#include "vision/vision_internal.h"

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

size_t tmrt__vis_matmul_scratch_bytes(const tmrt_vision *v, uint32_t n_tok, int n_threads) {
    size_t s = tmrt__kern_matmul_scratch_bytes(&v->patch0, n_tok, n_threads);
    s = max_size(s, tmrt__kern_matmul_scratch_bytes(&v->patch1, n_tok, n_threads));
    s = max_size(s, tmrt__kern_matmul_scratch_bytes(&v->mm0, n_tok, n_threads));
    s = max_size(s, tmrt__kern_matmul_scratch_bytes(&v->mm2, n_tok, n_threads));
    for (uint32_t l = 0; l < v->cfg.depth; l++) {
        const vis_block *b = &v->blocks[l];
        s = max_size(s, tmrt__kern_matmul_scratch_bytes(&b->qkv, n_tok, n_threads));
        s = max_size(s, tmrt__kern_matmul_scratch_bytes(&b->out, n_tok, n_threads));
        s = max_size(s, tmrt__kern_matmul_scratch_bytes(&b->up, n_tok, n_threads));
        s = max_size(s, tmrt__kern_matmul_scratch_bytes(&b->down, n_tok, n_threads));
    }
    return s;
}

/* Row-parallel element-wise work. */
typedef enum row_op { OP_LN, OP_ADD, OP_GELU_TANH, OP_GELU_ERF } row_op;
typedef struct row_job {
    row_op op;
    float *out;
    const float *a, *b;       /* inputs: LN x; ADD a + b */
    const float *w, *bias;    /* LN weight and bias */
    int64_t n;                /* values per row */
    float eps;
} row_job;

static void rows_task(void *arg, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const row_job *j = arg;
    for (int64_t t = begin; t < end; t++) {
        size_t o = (size_t)t * (size_t)j->n;
        switch (j->op) {
        case OP_LN: tmrt__vis_layernorm(j->out + o, j->a + o, j->w, j->bias, j->n, j->eps); break;
        case OP_ADD:
            for (int64_t i = 0; i < j->n; i++) j->out[o + i] = j->a[o + i] + j->b[o + i];
            break;
        case OP_GELU_TANH: tmrt__vis_gelu_tanh(j->out + o, j->n); break;
        case OP_GELU_ERF: tmrt__vis_gelu_erf(j->out + o, j->n); break;
        }
    }
}

static void rows(kern_pool *pool, int64_t n_rows, row_job j) { tmrt__kern_pool_for(pool, n_rows, 8, rows_task, &j); }

static void linear(const kern_wmat *w, const float *bias, const float *x, int64_t n_tok, float *y, size_t ldy,
                   void *scratch, kern_pool *pool) {
    tmrt__kern_matmul(w, x, (size_t)w->n_in, n_tok, y, ldy, scratch, pool);
    tmrt__vis_add_bias(y, ldy, n_tok, bias, w->n_out);
}

static void block(const tmrt_vision *v, const vis_block *w, const tmrt_vision_grid *g, vis_buffers *b,
                  kern_pool *pool) {
    int64_t P = g->n_patches, H = v->cfg.hidden;
    rows(pool, P, (row_job){OP_LN, b->norm1, b->layer_in, NULL, w->ln1_w, w->ln1_b, H, v->cfg.eps});
    linear(&w->qkv, w->qkv_b, b->norm1, P, b->qkv, 3 * (size_t)H, b->matmul_scratch, pool);
    tmrt__vis_rope(v, g, b->qkv, pool);
    tmrt__vis_attention(v, g->n_patches, b->qkv, b->attn_out, b->attn_scratch, pool);
    linear(&w->out, w->out_b, b->attn_out, P, b->attn_proj, (size_t)H, b->matmul_scratch, pool);
    rows(pool, P, (row_job){OP_ADD, b->residual, b->layer_in, b->attn_proj, NULL, NULL, H, 0});
    rows(pool, P, (row_job){OP_LN, b->norm2, b->residual, NULL, w->ln2_w, w->ln2_b, H, v->cfg.eps});
    linear(&w->up, w->up_b, b->norm2, P, b->fc1, v->cfg.ff, b->matmul_scratch, pool);
    rows(pool, P, (row_job){OP_GELU_TANH, b->fc1, NULL, NULL, NULL, NULL, v->cfg.ff, 0});
    linear(&w->down, w->down_b, b->fc1, P, b->fc2, (size_t)H, b->matmul_scratch, pool);
    rows(pool, P, (row_job){OP_ADD, b->layer_out, b->residual, b->fc2, NULL, NULL, H, 0});
}

tmem_status tmrt__vis_forward(const tmrt_vision *v, const tmrt_vision_grid *g, vis_buffers *b, float *embeddings,
                              size_t ld, kern_pool *pool, tmrt__vis_hook between, void *arg) {
    tmem_status st;
    const tmrt_vision_config *c = &v->cfg;
    int64_t P = g->n_patches, H = c->hidden, pp = 3 * (int64_t)c->patch * c->patch;
    /* Patch embedding: frame 0 into layer_in, frame 1 into norm1 (free until
     * the first block), summed. */
    tmrt__kern_matmul(&v->patch0, b->patches, (size_t)(2 * pp), P, b->layer_in, (size_t)H, b->matmul_scratch, pool);
    tmrt__kern_matmul(&v->patch1, b->patches + pp, (size_t)(2 * pp), P, b->norm1, (size_t)H, b->matmul_scratch, pool);
    rows(pool, P, (row_job){OP_ADD, b->layer_in, b->layer_in, b->norm1, NULL, NULL, H, 0});
    tmrt__vis_add_bias(b->layer_in, (size_t)H, P, v->patch_b, H);
    tmrt__vis_add_pos_embed(v, g, b->layer_in, 0, g->n_patches, b->pos_rows);
    if (between && (st = between(arg, 0))) return st; /* the patch tensor is dead */
    for (uint32_t l = 0; l < c->depth; l++) {
        block(v, &v->blocks[l], g, b, pool);
        /* typed: layer_out is layer_in (same planned bytes); naive: the hook
         * moves the output into layer_in */
        if (between && (st = between(arg, (int)l + 1))) return st;
    }
    /* Merger: LN per patch; consecutive merge^2 patches are one merge block. */
    int64_t m2 = (int64_t)c->merge * c->merge, T = P / m2;
    rows(pool, P, (row_job){OP_LN, b->norm1, b->layer_in, NULL, v->post_w, v->post_b, H, c->eps});
    linear(&v->mm0, v->mm0_b, b->norm1, T, b->qkv, (size_t)(m2 * H), b->matmul_scratch, pool);
    rows(pool, T, (row_job){OP_GELU_ERF, b->qkv, NULL, NULL, NULL, NULL, m2 * H, 0});
    linear(&v->mm2, v->mm2_b, b->qkv, T, embeddings, ld, b->matmul_scratch, pool);
    return TMEM_OK;
}

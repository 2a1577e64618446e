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

/* One block: the ops NORM1 .. LAYER_OUT of the library's vision table, each
 * on the buffers TMRT_ACT hands out after TMRT_OP names the op (the testing
 * copy checks them against the table's lifetimes: util/graph_acts.h). */
static void block(const tmrt_vision *v, const vis_block *w, const tmrt_vision_grid *g, vis_buffers *b,
                  kern_pool *pool) {
    int64_t P = g->n_patches, H = v->cfg.hidden;
    tmrt_acts *a = &b->act;
    TMRT_OP(a, NORM1);
    rows(pool, P, (row_job){OP_LN, TMRT_ACT(a, NORM1), TMRT_ACT(a, LAYER_IN), NULL, w->ln1_w, w->ln1_b, H,
                            v->cfg.eps});
    TMRT_OP(a, QKV_PROJ);
    linear(&w->qkv, w->qkv_b, TMRT_ACT(a, NORM1), P, TMRT_ACT(a, QKV), 3 * (size_t)H, b->matmul_scratch, pool);
    TMRT_OP(a, ROPE);
    tmrt__vis_rope(v, g, TMRT_ACT(a, QKV), pool);
    TMRT_OP(a, ATTN);
    tmrt__vis_attention(v, g->n_patches, TMRT_ACT(a, QKV), TMRT_ACT(a, ATTN_OUT), b->attn_scratch, pool);
#if !TMRT_PLANT_REORDER
    TMRT_OP(a, OUT_PROJ);
    linear(&w->out, w->out_b, TMRT_ACT(a, ATTN_OUT), P, TMRT_ACT(a, ATTN_PROJ), (size_t)H, b->matmul_scratch, pool);
#endif
    TMRT_OP(a, RESIDUAL);
    rows(pool, P, (row_job){OP_ADD, TMRT_ACT(a, RESIDUAL), TMRT_ACT(a, LAYER_IN), TMRT_ACT(a, ATTN_PROJ), NULL, NULL,
                            H, 0});
#if TMRT_PLANT_REORDER
    /* tests/runtime/test_graph_lifetimes_planted: the output projection
     * moved past the residual, where attn_out is past its lifetime */
    TMRT_OP(a, OUT_PROJ);
    linear(&w->out, w->out_b, TMRT_ACT(a, ATTN_OUT), P, TMRT_ACT(a, ATTN_PROJ), (size_t)H, b->matmul_scratch, pool);
#endif
    TMRT_OP(a, NORM2);
    rows(pool, P, (row_job){OP_LN, TMRT_ACT(a, NORM2), TMRT_ACT(a, RESIDUAL), NULL, w->ln2_w, w->ln2_b, H,
                            v->cfg.eps});
    TMRT_OP(a, FC1);
    linear(&w->up, w->up_b, TMRT_ACT(a, NORM2), P, TMRT_ACT(a, FC1), v->cfg.ff, b->matmul_scratch, pool);
    TMRT_OP(a, GELU);
    rows(pool, P, (row_job){OP_GELU_TANH, TMRT_ACT(a, FC1), NULL, NULL, NULL, NULL, v->cfg.ff, 0});
    TMRT_OP(a, FC2);
    linear(&w->down, w->down_b, TMRT_ACT(a, FC1), P, TMRT_ACT(a, FC2), (size_t)H, b->matmul_scratch, pool);
    TMRT_OP(a, LAYER_OUT);
    rows(pool, P, (row_job){OP_ADD, TMRT_ACT(a, LAYER_OUT), TMRT_ACT(a, RESIDUAL), TMRT_ACT(a, FC2), NULL, NULL, H,
                            0});
}

/* The patch embedding, the first block's LAYER_IN op: frame 0 into
 * layer_in, frame 1 into norm1 (the table keeps norm1 alive from this step:
 * model.h's vision table), summed. */
static void patch_embed(const tmrt_vision *v, const tmrt_vision_grid *g, vis_buffers *b, kern_pool *pool) {
    const tmrt_vision_config *c = &v->cfg;
    int64_t P = g->n_patches, H = c->hidden, pp = 3 * (int64_t)c->patch * c->patch;
    tmrt_acts *a = &b->act;
    float *x = TMRT_ACT(a, LAYER_IN), *f1 = TMRT_ACT(a, NORM1);
    tmrt__kern_matmul(&v->patch0, b->patches, (size_t)(2 * pp), P, x, (size_t)H, b->matmul_scratch, pool);
    tmrt__kern_matmul(&v->patch1, b->patches + pp, (size_t)(2 * pp), P, f1, (size_t)H, b->matmul_scratch, pool);
    rows(pool, P, (row_job){OP_ADD, x, x, f1, NULL, NULL, H, 0});
    tmrt__vis_add_bias(x, (size_t)H, P, v->patch_b, H);
    tmrt__vis_add_pos_embed(v, g, x, 0, g->n_patches, b->pos_rows);
}

/* The merger, in the block arena as the first ops of one more block: its
 * LayerNorm at NORM1 (layer_in -> norm1), the first linear at QKV_PROJ
 * (norm1 -> qkv, T rows of merge^2 x hidden: within qkv's P x 3 hidden), the
 * GELU in place and the last linear (qkv -> the caller's embeddings) at ROPE,
 * where qkv is alive. Consecutive merge^2 patches are one merge block. */
static void merger(const tmrt_vision *v, const tmrt_vision_grid *g, vis_buffers *b, float *embeddings, size_t ld,
                   kern_pool *pool) {
    const tmrt_vision_config *c = &v->cfg;
    int64_t P = g->n_patches, H = c->hidden, m2 = (int64_t)c->merge * c->merge, T = P / m2;
    tmrt_acts *a = &b->act;
    TMRT_GRAPH_BEGIN(a);
    TMRT_OP(a, LAYER_IN);
    TMRT_OP(a, NORM1);
    rows(pool, P, (row_job){OP_LN, TMRT_ACT(a, NORM1), TMRT_ACT(a, LAYER_IN), NULL, v->post_w, v->post_b, H, c->eps});
    TMRT_OP(a, QKV_PROJ);
    linear(&v->mm0, v->mm0_b, TMRT_ACT(a, NORM1), T, TMRT_ACT(a, QKV), (size_t)(m2 * H), b->matmul_scratch, pool);
    TMRT_OP(a, ROPE);
    rows(pool, T, (row_job){OP_GELU_ERF, TMRT_ACT(a, QKV), NULL, NULL, NULL, NULL, m2 * H, 0});
    linear(&v->mm2, v->mm2_b, TMRT_ACT(a, QKV), T, embeddings, ld, b->matmul_scratch, pool);
}

tmem_status tmrt__vis_forward(const tmrt_vision *v, const tmrt_vision_grid *g, vis_buffers *b, float *embeddings,
                              size_t ld, kern_pool *pool, tmrt__vis_hook between, void *arg) {
    tmem_status st;
    tmrt_acts *a = &b->act;
    TMRT_GRAPH_BEGIN(a);
    TMRT_OP(a, LAYER_IN);
    patch_embed(v, g, b, pool);
    if (between && (st = between(arg, 0))) return st; /* the patch tensor is dead */
    for (uint32_t l = 0; l < v->cfg.depth; l++) {
        if (l) { /* typed: layer_out is layer_in (same planned bytes); naive: the hook moved it */
            TMRT_GRAPH_BEGIN(a);
            TMRT_OP(a, LAYER_IN);
        }
        block(v, &v->blocks[l], g, b, pool);
        if (between && (st = between(arg, (int)l + 1))) return st;
    }
    merger(v, g, b, embeddings, ld, pool);
    return TMEM_OK;
}

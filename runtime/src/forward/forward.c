/* forward.c: the forward pass over a span of tokens, in the order of
 * llama.cpp's qwen35 graph:
 *
 *   x = embed(tokens)                           (or the caller's rows: vision)
 *   for each layer:
 *       h = x + mixer(rmsnorm(x) * attn_norm)   (full attention or DeltaNet)
 *       x = h + ffn(rmsnorm(h) * post_norm)     (SwiGLU)
 *   logits = W_out (rmsnorm(x) * output_norm)   (only the rows asked for)
 *
 * Every activation is one of the tmrt_acts buffers of the layer's plan, read
 * by id through TMRT_ACT after TMRT_OP names the op of the library's table
 * that runs (util/graph_acts.h: the testing copy checks every use against the
 * table's lifetimes); the planned arena is reused layer after layer, so a
 * layer's output is moved to where the next layer's plan wants its input. */
#include <string.h>
#include "rt_internal.h"

/* residual + SwiGLU FFN: the table's ops RESIDUAL .. LAYER_OUT */
static void ffn(tmrt_run *r, const tmrt_layer_weights *lw, tmrt_acts *a, uint32_t n) {
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t E = hp->n_embd, F = hp->n_ff;
    TMRT_OP(a, RESIDUAL);
    float *h = TMRT_ACT(a, ATTN_RESIDUAL);
    const float *x = TMRT_ACT(a, LAYER_IN), *o = TMRT_ACT(a, ATTN_PROJ);
    for (size_t i = 0; i < (size_t)n * E; i++) h[i] = x[i] + o[i];
    TMRT_OP(a, FFN_NORM);
    const float *pn = tmrt__vec(&lw->post_norm, tmrt__scratch(r, (size_t)E * 4));
    float *hn = TMRT_ACT(a, FFN_NORM);
    h = TMRT_ACT(a, ATTN_RESIDUAL);
    for (uint32_t t = 0; t < n; t++) tmrt__kern_rmsnorm(hn + (size_t)t * E, h + (size_t)t * E, pn, E, hp->rms_eps);
    tmrt__scratch_reset(r);
    TMRT_OP(a, FFN_GATE);
    tmrt__matmul(r, &lw->ffn_gate, TMRT_ACT(a, FFN_NORM), n, TMRT_ACT(a, FFN_GATE));
#if !TMRT_PLANT_REORDER
    TMRT_OP(a, FFN_UP);
    tmrt__matmul(r, &lw->ffn_up, TMRT_ACT(a, FFN_NORM), n, TMRT_ACT(a, FFN_UP));
#endif
    TMRT_OP(a, FFN_ACT);
    /* row by row: a row's bits do not depend on the rows beside it (the
     * vector loop's tail is scalar), so a batch of sequences gives each the
     * bits it gets alone */
    float *fg = TMRT_ACT(a, FFN_GATE);
    const float *fu = TMRT_ACT(a, FFN_UP);
    for (uint32_t t = 0; t < n; t++) tmrt__kern_silu_mul(fg + (size_t)t * F, fg + (size_t)t * F, fu + (size_t)t * F, F);
    TMRT_OP(a, FFN_DOWN);
    tmrt__matmul(r, &lw->ffn_down, TMRT_ACT(a, FFN_GATE), n, TMRT_ACT(a, FFN_DOWN));
#if TMRT_PLANT_REORDER
    /* tests/runtime/test_graph_lifetimes_planted: the up projection moved
     * past the down projection, where ffn_norm (and ffn_up) are past their
     * lifetimes; the planned arena may already have given them away */
    TMRT_OP(a, FFN_UP);
    tmrt__matmul(r, &lw->ffn_up, TMRT_ACT(a, FFN_NORM), n, TMRT_ACT(a, FFN_UP));
#endif
    TMRT_OP(a, LAYER_OUT);
    float *y = TMRT_ACT(a, LAYER_OUT);
    const float *h2 = TMRT_ACT(a, ATTN_RESIDUAL), *d = TMRT_ACT(a, FFN_DOWN);
    for (size_t i = 0; i < (size_t)n * E; i++) y[i] = h2[i] + d[i];
}

static tmrt_acts *acts_for(tmrt_run *r, uint32_t layer, bool decode) {
    bool rec = r->model->hp.recurrent[layer];
    if (decode) return rec ? &r->decode_delta : &r->decode_attn;
    return rec ? &r->prefill_delta : &r->prefill_attn;
}

static void embed(tmrt_run *r, const tmrt_step *st, float *x) {
    uint32_t E = r->model->hp.n_embd;
    for (uint32_t t = 0; t < st->n; t++) {
        float *row = x + (size_t)t * E;
        uint32_t bt = st->batch_offset + t; /* index in the caller's batch */
        if (st->embd_rows && bt >= st->embd_first && bt - st->embd_first < st->embd_count)
            memcpy(row, st->embd_rows + (size_t)(bt - st->embd_first) * E, (size_t)E * 4);
        else
            tmrt__kern_get_row(&r->model->w.token_embd, st->tokens[t], row);
    }
}

static tmem_status head(tmrt_run *r, const tmrt_step *st, const float *x) {
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t E = hp->n_embd;
    if (st->logits == TMRT_LOGITS_NONE) return TMEM_OK;
    if (st->lanes) { /* every sequence's row through one read of the LM head */
        float *rows = tmrt__scratch(r, (size_t)st->n * E * 4);
        const float *on = tmrt__vec(&r->model->w.output_norm, tmrt__scratch(r, (size_t)E * 4));
        for (uint32_t t = 0; t < st->n; t++)
            tmrt__kern_rmsnorm(rows + (size_t)t * E, x + (size_t)t * E, on, E, hp->rms_eps);
        tmrt__matmul(r, &r->model->w.output, rows, st->n, r->logits);
        tmrt__scratch_reset(r);
        return TMEM_OK;
    }
    uint32_t first = st->logits == TMRT_LOGITS_ALL ? 0 : st->n - 1;
    for (uint32_t t = first; t < st->n; t++) {
        float *row = tmrt__scratch(r, (size_t)E * 4);
        const float *on = tmrt__vec(&r->model->w.output_norm, tmrt__scratch(r, (size_t)E * 4));
        tmrt__kern_rmsnorm(row, x + (size_t)t * E, on, E, hp->rms_eps);
        tmrt__matmul(r, &r->model->w.output, row, 1, r->logits);
        tmrt__scratch_reset(r);
        if (st->fn) {
            tmem_status s = st->fn(st->user, st->batch_offset + t, r->logits, hp->n_vocab);
            if (s) return s;
        }
    }
    return TMEM_OK;
}

tmem_status tmrt__forward(tmrt_run *r, const tmrt_step *st) {
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t E = hp->n_embd;
    size_t row_bytes = (size_t)st->n * E * sizeof(float);
    tmrt__scratch_reset(r);
    const float *x = NULL; /* the previous layer's layer_out (the embedding for layer 0) */
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        const tmrt_layer_weights *lw = &r->model->w.layers[il];
        tmrt_acts *a = acts_for(r, il, st->decode);
        /* LAYER_IN: the input arrives. The previous layer's output is read
         * here, before this layer's first write anywhere else: its graph has
         * ended, and the arena's bytes under layer_out are only reused from
         * this layer's second op on */
        TMRT_GRAPH_BEGIN(a);
        TMRT_OP(a, LAYER_IN);
        float *in = TMRT_ACT(a, LAYER_IN);
        if (!x) embed(r, st, in);
        else if (in != x) memmove(in, x, row_bytes);
        TMRT_OP(a, ATTN_NORM);
        const float *an = tmrt__vec(&lw->attn_norm, tmrt__scratch(r, (size_t)E * 4));
        float *xn = TMRT_ACT(a, ATTN_NORM);
        in = TMRT_ACT(a, LAYER_IN);
        for (uint32_t t = 0; t < st->n; t++)
            tmrt__kern_rmsnorm(xn + (size_t)t * E, in + (size_t)t * E, an, E, hp->rms_eps);
        tmrt__scratch_reset(r);
        if (hp->recurrent[il]) tmrt__deltanet(r, lw, il, a, st);
        else tmrt__attention(r, lw, il, a, st);
        ffn(r, lw, a, st->n);
        x = TMRT_ACT(a, LAYER_OUT);
    }
    return head(r, st, x);
}

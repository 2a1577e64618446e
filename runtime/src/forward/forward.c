/* forward.c: the forward pass over a span of tokens, in the order of
 * llama.cpp's qwen35 graph:
 *
 *   x = embed(tokens)                           (or the caller's rows: vision)
 *   for each layer:
 *       h = x + mixer(rmsnorm(x) * attn_norm)   (full attention or DeltaNet)
 *       x = h + ffn(rmsnorm(h) * post_norm)     (SwiGLU)
 *   logits = W_out (rmsnorm(x) * output_norm)   (only the rows asked for)
 *
 * Every activation is one of the tmrt_acts buffers of the layer's plan; the
 * planned arena is reused layer after layer, so a layer's output is moved to
 * where the next layer's plan wants its input. */
#include <string.h>
#include "rt_internal.h"

static void ffn(tmrt_run *r, const tmrt_layer_weights *lw, tmrt_acts *a, uint32_t n) {
    const tmrt_hparams *hp = &r->model->hp;
    uint32_t E = hp->n_embd, F = hp->n_ff;
    for (size_t i = 0; i < (size_t)n * E; i++) a->attn_residual[i] = a->layer_in[i] + a->attn_proj[i];
    const float *pn = tmrt__vec(&lw->post_norm, tmrt__scratch(r, (size_t)E * 4));
    for (uint32_t t = 0; t < n; t++)
        tmrt__kern_rmsnorm(a->ffn_norm + (size_t)t * E, a->attn_residual + (size_t)t * E, pn, E, hp->rms_eps);
    tmrt__scratch_reset(r);
    tmrt__matmul(r, &lw->ffn_gate, a->ffn_norm, n, a->ffn_gate);
    tmrt__matmul(r, &lw->ffn_up, a->ffn_norm, n, a->ffn_up);
    tmrt__kern_silu_mul(a->ffn_gate, a->ffn_gate, a->ffn_up, (int64_t)n * F);
    tmrt__matmul(r, &lw->ffn_down, a->ffn_gate, n, a->ffn_down);
    for (size_t i = 0; i < (size_t)n * E; i++) a->layer_out[i] = a->attn_residual[i] + a->ffn_down[i];
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
    size_t row_bytes = (size_t)st->n * hp->n_embd * sizeof(float);
    tmrt__scratch_reset(r);
    tmrt_acts *a = acts_for(r, 0, st->decode);
    embed(r, st, a->layer_in);
    const float *x = a->layer_in;
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        const tmrt_layer_weights *lw = &r->model->w.layers[il];
        a = acts_for(r, il, st->decode);
        if (a->layer_in != x) memmove(a->layer_in, x, row_bytes);
        const float *an = tmrt__vec(&lw->attn_norm, tmrt__scratch(r, (size_t)hp->n_embd * 4));
        for (uint32_t t = 0; t < st->n; t++)
            tmrt__kern_rmsnorm(a->attn_norm + (size_t)t * hp->n_embd, a->layer_in + (size_t)t * hp->n_embd, an,
                         hp->n_embd, hp->rms_eps);
        tmrt__scratch_reset(r);
        if (hp->recurrent[il]) tmrt__deltanet(r, lw, il, a, st, a->attn_norm);
        else tmrt__attention(r, lw, il, a, st, a->attn_norm);
        ffn(r, lw, a, st->n);
        x = a->layer_out;
    }
    return head(r, st, x);
}

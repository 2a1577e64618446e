/* weights.c: the weight views, one kern_wmat per tensor, pointing into the
 * GGUF's mapping (never a copy). Every tensor is found by llama.cpp's qwen35
 * name and checked against the hyper-parameters before use: its shape, a
 * type the kernels handle, and, for the norm vectors, finite values. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "rt_internal.h"

typedef struct binder {
    const tmem_gguf *g;
    tmrt_error *err;
} binder;

static bool is_vector_type(uint32_t t) {
    return t == TMEM_GGML_F32 || t == TMEM_GGML_F16 || t == TMEM_GGML_BF16;
}

/* Find `name` with ne = {n_in, n_out} (n_out 1 = a vector of rank 1). */
static tmem_status bind(binder *b, const char *name, int64_t n_in, int64_t n_out, bool required, kern_wmat *out) {
    tmem_gguf_tensor t;
    memset(out, 0, sizeof *out);
    if (tmem_gguf_tensor_find(b->g, name, &t) != TMEM_OK)
        return required ? tmrt__fail(b->err, TMEM_E_NOT_FOUND, "missing tensor '%s'", name) : TMEM_OK;
    bool vector = n_out == 1;
    uint64_t want_rank_ok = vector ? (t.n_dims == 1 || (t.n_dims == 2 && t.dims[1] == 1)) : t.n_dims == 2;
    if (!want_rank_ok || (int64_t)t.dims[0] != n_in || (!vector && (int64_t)t.dims[1] != n_out))
        return tmrt__fail(b->err, TMEM_E_CORRUPT,
                          "tensor '%s': shape [%llu, %llu] (rank %u), expected [%lld, %lld] from the config", name,
                          (unsigned long long)t.dims[0], (unsigned long long)t.dims[1], t.n_dims,
                          (long long)n_in, (long long)n_out);
    if (vector ? !is_vector_type(t.type) : !tmrt__kern_type_supported(t.type, n_in)) {
        tmem_ggml_type_info ti;
        const char *tn = tmem_ggml_type_get_info(t.type, &ti) == TMEM_OK ? ti.name : "?";
        return tmrt__fail(b->err, TMEM_E_UNSUPPORTED, "tensor '%s': type %s not supported here", name, tn);
    }
    uint64_t row;
    if (tmem_ggml_row_size(t.type, (uint64_t)n_in, &row) || row * (uint64_t)n_out != t.size)
        return tmrt__fail(b->err, TMEM_E_CORRUPT, "tensor '%s': %llu bytes do not match its shape", name,
                          (unsigned long long)t.size);
    *out = (kern_wmat){t.data, t.type, n_in, n_out, (size_t)row};
    return TMEM_OK;
}

/* A norm or bias vector must hold finite numbers: a NaN there poisons every
 * logit, so it is refused at load with the tensor's name. */
static tmem_status check_finite(binder *b, const char *name, const kern_wmat *v) {
    if (!v->data) return TMEM_OK;
    for (int64_t i = 0; i < v->n_in; i++) {
        float x;
        if (v->type == TMEM_GGML_F32) {
            memcpy(&x, (const char *)v->data + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, (const char *)v->data + 2 * i, 2);
            if (v->type == TMEM_GGML_F16) {
                x = kern_f16_to_f32(h);
            } else {
                uint32_t u = (uint32_t)h << 16;
                memcpy(&x, &u, 4);
            }
        }
        if (!isfinite(x)) return tmrt__fail(b->err, TMEM_E_CORRUPT, "tensor '%s': element %lld is not finite", name,
                                            (long long)i);
    }
    return TMEM_OK;
}

#define NAME(buf, fmt, il) (snprintf(buf, sizeof buf, fmt, il), buf)

static tmem_status bind_layer(binder *b, const tmrt_hparams *hp, uint32_t il, tmrt_layer_weights *lw) {
    char n[96];
    tmem_status st;
    int64_t E = hp->n_embd, F = hp->n_ff, hd = hp->head_dim;
    if ((st = bind(b, NAME(n, "blk.%u.attn_norm.weight", il), E, 1, true, &lw->attn_norm)) ||
        (st = check_finite(b, n, &lw->attn_norm)) ||
        (st = bind(b, NAME(n, "blk.%u.post_attention_norm.weight", il), E, 1, true, &lw->post_norm)) ||
        (st = check_finite(b, n, &lw->post_norm)) ||
        (st = bind(b, NAME(n, "blk.%u.ffn_gate.weight", il), E, F, true, &lw->ffn_gate)) ||
        (st = bind(b, NAME(n, "blk.%u.ffn_up.weight", il), E, F, true, &lw->ffn_up)) ||
        (st = bind(b, NAME(n, "blk.%u.ffn_down.weight", il), F, E, true, &lw->ffn_down)))
        return st;
    if (!hp->recurrent[il]) {
        int64_t H = hp->n_head, Hkv = hp->n_head_kv;
        tmem_gguf_tensor fused;
        if (tmem_gguf_tensor_find(b->g, NAME(n, "blk.%u.attn_qkv.weight", il), &fused) == TMEM_OK)
            return tmrt__fail(b->err, TMEM_E_UNSUPPORTED,
                              "tensor '%s': a fused QKV in an attention layer is not supported", n);
        if ((st = bind(b, NAME(n, "blk.%u.attn_q.weight", il), E, 2 * H * hd, true, &lw->wq)) ||
            (st = bind(b, NAME(n, "blk.%u.attn_k.weight", il), E, Hkv * hd, true, &lw->wk)) ||
            (st = bind(b, NAME(n, "blk.%u.attn_v.weight", il), E, Hkv * hd, true, &lw->wv)) ||
            (st = bind(b, NAME(n, "blk.%u.attn_output.weight", il), H * hd, E, true, &lw->wo)) ||
            (st = bind(b, NAME(n, "blk.%u.attn_q_norm.weight", il), hd, 1, true, &lw->q_norm)) ||
            (st = check_finite(b, n, &lw->q_norm)) ||
            (st = bind(b, NAME(n, "blk.%u.attn_k_norm.weight", il), hd, 1, true, &lw->k_norm)) ||
            (st = check_finite(b, n, &lw->k_norm)))
            return st;
        return TMEM_OK;
    }
    int64_t dk = hp->ssm_head_dim, G = hp->ssm_k_heads, Hv = hp->ssm_v_heads, I = hp->ssm_inner;
    int64_t C = 2 * G * dk + I;
    if ((st = bind(b, NAME(n, "blk.%u.attn_qkv.weight", il), E, C, true, &lw->wqkv)) ||
        (st = bind(b, NAME(n, "blk.%u.attn_gate.weight", il), E, I, true, &lw->wgate)) ||
        (st = bind(b, NAME(n, "blk.%u.ssm_beta.weight", il), E, Hv, true, &lw->wbeta)) ||
        (st = bind(b, NAME(n, "blk.%u.ssm_alpha.weight", il), E, Hv, true, &lw->walpha)) ||
        (st = bind(b, NAME(n, "blk.%u.ssm_out.weight", il), I, E, true, &lw->ssm_out)) ||
        (st = bind(b, NAME(n, "blk.%u.ssm_dt.bias", il), Hv, 1, true, &lw->dt_bias)) ||
        (st = check_finite(b, n, &lw->dt_bias)) ||
        (st = bind(b, NAME(n, "blk.%u.ssm_a", il), Hv, 1, true, &lw->ssm_a)) ||
        (st = check_finite(b, n, &lw->ssm_a)) ||
        (st = bind(b, NAME(n, "blk.%u.ssm_norm.weight", il), I / Hv, 1, true, &lw->ssm_norm)) ||
        (st = check_finite(b, n, &lw->ssm_norm)))
        return st;
    /* the conv taps: ne = {kernel, channels}, one row of taps per channel */
    tmem_gguf_tensor t;
    if (tmem_gguf_tensor_find(b->g, NAME(n, "blk.%u.ssm_conv1d.weight", il), &t))
        return tmrt__fail(b->err, TMEM_E_NOT_FOUND, "missing tensor '%s'", n);
    if (t.n_dims != 2 || t.dims[0] != hp->conv_kernel || (int64_t)t.dims[1] != C || !is_vector_type(t.type))
        return tmrt__fail(b->err, TMEM_E_CORRUPT,
                          "tensor '%s': shape [%llu, %llu], expected [%u, %lld] in f32/f16/bf16", n,
                          (unsigned long long)t.dims[0], (unsigned long long)t.dims[1],
                          hp->conv_kernel, (long long)C);
    size_t es = t.type == TMEM_GGML_F32 ? 4 : 2;
    lw->conv1d = (kern_wmat){t.data, t.type, hp->conv_kernel, C, es * hp->conv_kernel};
    return TMEM_OK;
}

tmem_status tmrt__weights_bind(const tmem_gguf *g, tmrt_hparams *hp, tmrt_weights *w, tmrt_error *err) {
    binder b = {g, err};
    memset(w, 0, sizeof *w);
    tmem_gguf_tensor t;
    if (tmem_gguf_tensor_find(g, "token_embd.weight", &t))
        return tmrt__fail(err, TMEM_E_NOT_FOUND, "missing tensor 'token_embd.weight'");
    if (t.n_dims != 2 || t.dims[0] != hp->n_embd || t.dims[1] > INT32_MAX)
        return tmrt__fail(err, TMEM_E_CORRUPT, "tensor 'token_embd.weight': shape [%llu, %llu], expected [%u, n_vocab]",
                          (unsigned long long)t.dims[0], (unsigned long long)t.dims[1], hp->n_embd);
    hp->n_vocab = (uint32_t)t.dims[1];
    tmem_status st;
    if ((st = bind(&b, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &w->token_embd)) ||
        (st = bind(&b, "output_norm.weight", hp->n_embd, 1, true, &w->output_norm)) ||
        (st = check_finite(&b, "output_norm.weight", &w->output_norm)) ||
        (st = bind(&b, "output.weight", hp->n_embd, hp->n_vocab, false, &w->output)))
        return st;
    hp->tied_embeddings = w->output.data == NULL;
    if (hp->tied_embeddings) w->output = w->token_embd;
    for (uint32_t il = 0; il < hp->n_layers; il++)
        if ((st = bind_layer(&b, hp, il, &w->layers[il]))) return st;
    return TMEM_OK;
}

const float *tmrt__vec(const kern_wmat *v, float *tmp) {
    if (v->type == TMEM_GGML_F32) return v->data;
    tmrt__kern_get_row(v, 0, tmp);
    return tmp;
}

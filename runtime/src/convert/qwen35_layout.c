/*
 * llama.cpp's qwen35 GGUF layout, as its converter (convert_hf_to_gguf.py,
 * conversion/qwen.py: Qwen3_5TextModel) writes it and its loader
 * (src/models/qwen35.cpp) reads it: tensor names and shapes, the type of
 * each tensor for a requested dtype, the transforms from the Hugging Face
 * tensors, and the metadata keys. One list serves tmrt_convert and tmrt_gen,
 * so the two cannot drift apart.
 */
#include "convert_internal.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void tmrt__cv_hparams_set_interval(cv_hparams *h, uint32_t interval) {
    h->full_attn_interval = interval;
    if (!interval) return;
    for (uint32_t i = 0; i < h->n_layers && i < CV_MAX_LAYERS; i++) h->recurrent[i] = (i + 1) % interval != 0;
}

tmem_status tmrt__cv_hparams_check(const cv_hparams *h, tmrt_error *err) {
    if (!h->n_layers || h->n_layers > CV_MAX_LAYERS)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "num_hidden_layers %u outside 1..%u", h->n_layers, CV_MAX_LAYERS);
    if (!h->n_embd || !h->n_ff || !h->n_vocab || !h->n_head || !h->n_head_kv || !h->head_dim)
        return tmrt__fail(err, TMEM_E_INVALID_ARG,
                             "hidden_size, intermediate_size, vocab_size, num_attention_heads, "
                             "num_key_value_heads and head_dim must be > 0");
    if (h->n_head % h->n_head_kv)
        return tmrt__fail(err, TMEM_E_INVALID_ARG,
                             "num_attention_heads %u is not a multiple of num_key_value_heads %u", h->n_head,
                             h->n_head_kv);
    if (h->rope_dim > h->head_dim || h->rope_dim % 2)
        return tmrt__fail(err, TMEM_E_INVALID_ARG,
                             "rotary dimension %u (partial_rotary_factor x head_dim) must be even "
                             "and at most head_dim %u",
                             h->rope_dim, h->head_dim);
    uint32_t n_rec = 0;
    for (uint32_t i = 0; i < h->n_layers; i++) n_rec += h->recurrent[i];
    if (n_rec) {
        if (!h->ssm_conv_kernel || !h->ssm_k_heads || !h->ssm_k_dim || !h->ssm_v_heads || !h->ssm_v_dim)
            return tmrt__fail(err, TMEM_E_INVALID_ARG,
                           "linear attention layers need linear_conv_kernel_dim, "
                           "linear_num_key_heads, linear_key_head_dim, linear_num_value_heads, "
                           "linear_value_head_dim > 0");
        if (h->ssm_v_heads % h->ssm_k_heads)
            return tmrt__fail(err, TMEM_E_INVALID_ARG, "linear_num_value_heads %u is not a multiple of "
                           "linear_num_key_heads %u", h->ssm_v_heads, h->ssm_k_heads);
    }
    if (!(h->rms_eps > 0) || !(h->rope_theta > 0))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "rms_norm_eps and rope_theta must be > 0");
    return TMEM_OK;
}

/* ---- the tensor list ---- */

typedef struct builder {
    cv_tensor *t;
    size_t n, cap;
    tmem_weight_dtype dtype;
    bool oom;
} builder;

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* llama.cpp's choice (prepare_tensors): 1-D tensors, *_norm.weight, conv1d
 * and anything not named *.weight stay F32; the rest take the file type;
 * Q8_0 rows that are not whole blocks fall back to F16. */
static uint32_t pick_type(const cv_tensor *t, tmem_weight_dtype dtype) {
    if (t->n_dims <= 1 || ends_with(t->name, "_norm.weight") || strstr(t->name, ".ssm_conv1d.") ||
        !ends_with(t->name, ".weight"))
        return TMEM_GGML_F32;
    switch (dtype) {
    case TMEM_WEIGHT_F32: return TMEM_GGML_F32;
    case TMEM_WEIGHT_BF16: return TMEM_GGML_BF16;
    case TMEM_WEIGHT_Q8_0: return t->ne[0] % 32 ? TMEM_GGML_F16 : TMEM_GGML_Q8_0;
    default: return TMEM_GGML_F16;
    }
}

/* Add a tensor: GGUF name, HF name, HF shape (PyTorch order; GGUF's is the
 * reverse, rank-1 conv1d squeezed by the caller), op, init. */
static cv_tensor *add(builder *b, uint32_t layer, const char *name, const char *hf, uint32_t hf_dims,
                      const uint64_t *hf_shape, cv_op op, cv_init init) {
    if (b->oom) return NULL;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        cv_tensor *t = realloc(b->t, nc * sizeof *t);
        if (!t) {
            b->oom = true;
            return NULL;
        }
        b->t = t;
        b->cap = nc;
    }
    cv_tensor *t = &b->t[b->n++];
    memset(t, 0, sizeof *t);
    if (layer == UINT32_MAX) snprintf(t->name, sizeof t->name, "%s", name);
    else snprintf(t->name, sizeof t->name, "blk.%u.%s", layer, name);
    if (hf) {
        if (layer == UINT32_MAX) snprintf(t->hf, sizeof t->hf, "%s", hf);
        else snprintf(t->hf, sizeof t->hf, "model.layers.%u.%s", layer, hf);
    }
    t->layer = layer;
    t->hf_dims = hf_dims;
    for (uint32_t d = 0; d < hf_dims; d++) t->hf_shape[d] = hf_shape[d];
    /* GGUF: dimensions reversed, size-1 dims of conv1d dropped (squeeze) */
    uint32_t nd = 0;
    for (uint32_t d = hf_dims; d-- > 0;)
        if (hf_dims != 3 || hf_shape[d] != 1) t->ne[nd++] = hf_shape[d];
    t->n_dims = nd;
    for (uint32_t d = nd; d < 4; d++) t->ne[d] = 1;
    t->op = op;
    t->init = init;
    t->type = pick_type(t, b->dtype);
    return t;
}

static void add2(builder *b, uint32_t layer, const char *name, const char *hf, uint64_t rows, uint64_t cols,
                 cv_init init) {
    uint64_t s[2] = {rows, cols};
    (void)add(b, layer, name, hf, 2, s, CV_OP_NONE, init);
}

static void add1(builder *b, uint32_t layer, const char *name, const char *hf, uint64_t n, cv_op op, cv_init init) {
    uint64_t s[1] = {n};
    (void)add(b, layer, name, hf, 1, s, op, init);
}

static void set_reorder(builder *b, const cv_hparams *h, uint8_t axis, uint32_t start, uint32_t hd) {
    if (b->oom || h->ssm_k_heads == h->ssm_v_heads) return; /* nothing to reorder */
    cv_reorder *r = &b->t[b->n - 1].reorder;
    r->axis = axis;
    r->start = start;
    r->hd = hd;
}

static void add_attention(builder *b, const cv_hparams *h, uint32_t l) {
    uint64_t q = (uint64_t)h->n_head * h->head_dim, kv = (uint64_t)h->n_head_kv * h->head_dim;
    /* q_proj yields query and sigmoid gate interleaved per head; kept as is */
    add2(b, l, "attn_q.weight", "self_attn.q_proj.weight", 2 * q, h->n_embd, CV_INIT_PROJ);
    add2(b, l, "attn_k.weight", "self_attn.k_proj.weight", kv, h->n_embd, CV_INIT_PROJ);
    add2(b, l, "attn_v.weight", "self_attn.v_proj.weight", kv, h->n_embd, CV_INIT_PROJ);
    add2(b, l, "attn_output.weight", "self_attn.o_proj.weight", h->n_embd, q, CV_INIT_PROJ_OUT);
    add1(b, l, "attn_q_norm.weight", "self_attn.q_norm.weight", h->head_dim, CV_OP_PLUS1, CV_INIT_NORM);
    add1(b, l, "attn_k_norm.weight", "self_attn.k_norm.weight", h->head_dim, CV_OP_PLUS1, CV_INIT_NORM);
}

static void add_deltanet(builder *b, const cv_hparams *h, uint32_t l) {
    uint32_t kd = h->ssm_k_heads * h->ssm_k_dim, vd = h->ssm_v_heads * h->ssm_v_dim, conv = 2 * kd + vd;
    add2(b, l, "attn_qkv.weight", "linear_attn.in_proj_qkv.weight", conv, h->n_embd, CV_INIT_PROJ);
    set_reorder(b, h, 1, 2 * kd, h->ssm_v_dim);
    add2(b, l, "attn_gate.weight", "linear_attn.in_proj_z.weight", vd, h->n_embd, CV_INIT_PROJ);
    set_reorder(b, h, 1, 0, h->ssm_v_dim);
    add2(b, l, "ssm_beta.weight", "linear_attn.in_proj_b.weight", h->ssm_v_heads, h->n_embd, CV_INIT_PROJ);
    set_reorder(b, h, 1, 0, 1);
    add2(b, l, "ssm_alpha.weight", "linear_attn.in_proj_a.weight", h->ssm_v_heads, h->n_embd, CV_INIT_PROJ);
    set_reorder(b, h, 1, 0, 1);
    uint64_t cs[3] = {conv, 1, h->ssm_conv_kernel};
    (void)add(b, l, "ssm_conv1d.weight", "linear_attn.conv1d.weight", 3, cs, CV_OP_NONE, CV_INIT_PROJ);
    set_reorder(b, h, 1, 2 * kd, h->ssm_v_dim);
    add1(b, l, "ssm_dt.bias", "linear_attn.dt_bias", h->ssm_v_heads, CV_OP_NONE, CV_INIT_DT_BIAS);
    set_reorder(b, h, 2, 0, 1);
    add1(b, l, "ssm_a", "linear_attn.A_log", h->ssm_v_heads, CV_OP_NEG_EXP, CV_INIT_SSM_A);
    set_reorder(b, h, 2, 0, 1);
    /* the gated norm is plain x * w (Qwen3_5RMSNormGated): no +1 */
    add1(b, l, "ssm_norm.weight", "linear_attn.norm.weight", h->ssm_v_dim, CV_OP_NONE, CV_INIT_NORM);
    add2(b, l, "ssm_out.weight", "linear_attn.out_proj.weight", h->n_embd, vd, CV_INIT_PROJ_OUT);
    set_reorder(b, h, 2, 0, h->ssm_v_dim);
}

tmem_status tmrt__cv_layout_tensors(const cv_hparams *h, tmem_weight_dtype dtype, cv_tensor **out, size_t *n,
                              tmrt_error *err) {
    *out = NULL;
    *n = 0;
    tmem_status st = tmrt__cv_hparams_check(h, err);
    if (st) return st;
    builder b = {.dtype = dtype};
    const uint32_t G = UINT32_MAX;
    add2(&b, G, "token_embd.weight", "model.embed_tokens.weight", h->n_vocab, h->n_embd, CV_INIT_EMBD);
    for (uint32_t l = 0; l < h->n_layers; l++) {
        add1(&b, l, "attn_norm.weight", "input_layernorm.weight", h->n_embd, CV_OP_PLUS1, CV_INIT_NORM);
        if (h->recurrent[l]) add_deltanet(&b, h, l);
        else add_attention(&b, h, l);
        /* qwen35 has no ffn_norm: post_attention_layernorm maps to ATTN_POST_NORM */
        add1(&b, l, "post_attention_norm.weight", "post_attention_layernorm.weight", h->n_embd, CV_OP_PLUS1,
             CV_INIT_NORM);
        add2(&b, l, "ffn_gate.weight", "mlp.gate_proj.weight", h->n_ff, h->n_embd, CV_INIT_PROJ);
        add2(&b, l, "ffn_up.weight", "mlp.up_proj.weight", h->n_ff, h->n_embd, CV_INIT_PROJ);
        add2(&b, l, "ffn_down.weight", "mlp.down_proj.weight", h->n_embd, h->n_ff, CV_INIT_PROJ_OUT);
    }
    add1(&b, G, "output_norm.weight", "model.norm.weight", h->n_embd, CV_OP_PLUS1, CV_INIT_NORM);
    if (!h->tied) add2(&b, G, "output.weight", "lm_head.weight", h->n_vocab, h->n_embd, CV_INIT_PROJ);
    if (b.oom) {
        free(b.t);
        return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory for the tensor list");
    }
    *out = b.t;
    *n = b.n;
    return TMEM_OK;
}

uint64_t tmrt__cv_tensor_bytes(const cv_tensor *t) {
    uint64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3], bytes = 0;
    return tmem_ggml_row_size(t->type, n, &bytes) == TMEM_OK ? bytes : 0;
}

/* ---- metadata ---- */

static tmem_status set_u32(tmem_gguf_writer *w, const char *key, uint64_t v) {
    tmem_gguf_value x = {.type = TMEM_GGUF_UINT32};
    x.v.u = v;
    return tmem_gguf_writer_set(w, key, &x);
}
static tmem_status set_f32(tmem_gguf_writer *w, const char *key, double v) {
    tmem_gguf_value x = {.type = TMEM_GGUF_FLOAT32};
    x.v.f = v;
    return tmem_gguf_writer_set(w, key, &x);
}
static tmem_status set_str(tmem_gguf_writer *w, const char *key, const char *s) {
    tmem_gguf_value x = {.type = TMEM_GGUF_STRING};
    x.v.s.data = s;
    x.v.s.len = strlen(s);
    return tmem_gguf_writer_set(w, key, &x);
}

/* llama_ftype of the file (general.file_type). */
static uint32_t file_type(tmem_weight_dtype d) {
    switch (d) {
    case TMEM_WEIGHT_F32: return 0;   /* ALL_F32 */
    case TMEM_WEIGHT_BF16: return 32; /* MOSTLY_BF16 */
    case TMEM_WEIGHT_Q8_0: return 7;  /* MOSTLY_Q8_0 */
    default: return 1;                /* MOSTLY_F16 */
    }
}

tmem_status tmrt__cv_layout_metadata(tmem_gguf_writer *w, const cv_hparams *h, tmem_weight_dtype dtype) {
    tmem_status st = TMEM_OK;
#define TRY(x) do { if (!st) st = (x); } while (0)
    TRY(set_str(w, "general.architecture", "qwen35"));
    TRY(set_str(w, "general.type", "model"));
    TRY(set_str(w, "general.name", h->name[0] ? h->name : "qwen35"));
    TRY(set_u32(w, "qwen35.block_count", h->n_layers));
    TRY(set_u32(w, "qwen35.context_length", h->n_ctx_train));
    TRY(set_u32(w, "qwen35.embedding_length", h->n_embd));
    TRY(set_u32(w, "qwen35.feed_forward_length", h->n_ff));
    TRY(set_u32(w, "qwen35.attention.head_count", h->n_head));
    TRY(set_u32(w, "qwen35.attention.head_count_kv", h->n_head_kv));
    TRY(tmem_gguf_writer_set_array(w, "qwen35.rope.dimension_sections", TMEM_GGUF_INT32, h->rope_sections, 4));
    TRY(set_f32(w, "qwen35.rope.freq_base", h->rope_theta));
    TRY(set_f32(w, "qwen35.attention.layer_norm_rms_epsilon", h->rms_eps));
    TRY(set_u32(w, "qwen35.attention.key_length", h->head_dim));
    TRY(set_u32(w, "qwen35.attention.value_length", h->head_dim));
    TRY(set_u32(w, "general.file_type", file_type(dtype)));
    TRY(set_u32(w, "qwen35.ssm.conv_kernel", h->ssm_conv_kernel));
    TRY(set_u32(w, "qwen35.ssm.state_size", h->ssm_k_dim));
    TRY(set_u32(w, "qwen35.ssm.group_count", h->ssm_k_heads));
    TRY(set_u32(w, "qwen35.ssm.time_step_rank", h->ssm_v_heads));
    TRY(set_u32(w, "qwen35.ssm.inner_size", (uint64_t)h->ssm_v_dim * h->ssm_v_heads));
    if (h->full_attn_interval) {
        TRY(set_u32(w, "qwen35.full_attention_interval", h->full_attn_interval));
    } else {
        /* a pattern no interval describes: llama.cpp's per-layer key */
        uint8_t rec[CV_MAX_LAYERS];
        for (uint32_t i = 0; i < h->n_layers; i++) rec[i] = h->recurrent[i];
        TRY(tmem_gguf_writer_set_array(w, "qwen35.attention.recurrent_layers", TMEM_GGUF_BOOL, rec, h->n_layers));
    }
    TRY(set_u32(w, "qwen35.rope.dimension_count", h->rope_dim));
    TRY(set_u32(w, "general.quantization_version", 2));
#undef TRY
    return st;
}

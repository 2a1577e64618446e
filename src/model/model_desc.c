/*
 * Model memory descriptors: presets, reading llama.cpp's GGUF metadata, and
 * the per-role sizes every other part of typedmem asks about (KV bytes per
 * token, recurrent state per sequence, vision tokens per image, parameters).
 *
 * These formulas are the single source of truth for model sizes in
 * typedmem; the KV cache and admission code should call them rather than
 * re-derive them.
 */
#include "model_internal.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- presets ----
 * Shapes from the models' published config.json (Hugging Face), see
 * docs/model.md for the sources and what is not verified. */
typedef struct preset {
    const char *name, *arch;
    uint32_t layers, interval, embd, ff, vocab, ctx, head, head_kv, head_dim;
    bool gate, tied;
    uint32_t conv, dk, key_heads, value_heads, dv;
    uint32_t vdepth, vhidden, vff, vheads, vout;
} preset;

static const preset presets[] = {
    /* Qwen3.5 dense hybrids: 3 Gated DeltaNet layers per full-attention layer */
    {"qwen3.5-0.8b", "qwen35", 24, 4, 1024, 3584, 248320, 262144, 8, 2, 256, true, true,
     4, 128, 16, 16, 128, 12, 768, 3072, 12, 1024},
    {"qwen3.5-2b", "qwen35", 24, 4, 2048, 6144, 248320, 262144, 8, 2, 256, true, true,
     4, 128, 16, 16, 128, 24, 1024, 4096, 16, 2048},
    {"qwen3.5-4b", "qwen35", 32, 4, 2560, 9216, 248320, 262144, 16, 4, 256, true, true,
     4, 128, 16, 32, 128, 24, 1024, 4096, 16, 2560},
    {"qwen3.5-9b", "qwen35", 32, 4, 4096, 12288, 248320, 262144, 16, 4, 256, true, false,
     4, 128, 16, 32, 128, 27, 1152, 4304, 16, 4096},
    /* dense references (every layer full attention, no vision) */
    {"llama-3.2-1b", "llama", 16, 0, 2048, 8192, 128256, 131072, 32, 8, 64, false, true,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"qwen3-0.6b", "qwen3", 28, 0, 1024, 3072, 151936, 40960, 16, 8, 128, false, true,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

const char *tmem_model_preset_name(uint32_t i) { return i < N_PRESETS ? presets[i].name : NULL; }

tmem_status tmem_model_preset(const char *name, tmem_model_desc *out) {
    if (!name || !out) return tmem__err(TMEM_E_INVALID_ARG);
    for (size_t i = 0; i < N_PRESETS; i++) {
        const preset *p = &presets[i];
        if (strcasecmp(p->name, name)) continue;
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", p->name);
        snprintf(out->arch, sizeof out->arch, "%s", p->arch);
        out->n_layers = p->layers;
        out->full_attn_interval = p->interval;
        out->n_embd = p->embd;
        out->n_ff = p->ff;
        out->n_vocab = p->vocab;
        out->n_ctx_train = p->ctx;
        out->n_head = p->head;
        out->n_head_kv = p->head_kv;
        out->head_dim_k = out->head_dim_v = p->head_dim;
        out->attn_output_gate = p->gate;
        out->tied_embeddings = p->tied;
        out->ssm_conv_kernel = p->conv;
        out->ssm_state_size = p->dk;
        out->ssm_group_count = p->key_heads;
        out->ssm_time_step_rank = p->value_heads;
        out->ssm_inner_size = p->value_heads * p->dv;
        if (p->vdepth) {
            out->vis_depth = p->vdepth;
            out->vis_hidden = p->vhidden;
            out->vis_ff = p->vff;
            out->vis_heads = p->vheads;
            out->vis_patch = 16;
            out->vis_merge = 2;
            out->vis_temporal_patch = 2;
            out->vis_out_hidden = p->vout;
            out->vis_pos_embd = 2304;
        }
        return TMEM_OK;
    }
    return tmem__err(TMEM_E_NOT_FOUND);
}

/* ---- shape checks and layer counts ---- */

void tmem_model_layer_counts(const tmem_model_desc *m, uint32_t *full, uint32_t *linear) {
    uint32_t f = 0, l = 0;
    if (m) {
        f = m->full_attn_interval ? m->n_layers / m->full_attn_interval : m->n_layers;
        l = m->n_layers - f;
    }
    if (full) *full = f;
    if (linear) *linear = l;
}

tmem_status tmem_model_validate(const tmem_model_desc *m) {
    if (!m) return tmem__err(TMEM_E_INVALID_ARG);
    if (!m->n_layers || !m->n_embd || !m->n_ff || !m->n_vocab) return tmem__err(TMEM_E_INVALID_ARG);
    uint32_t full, linear;
    tmem_model_layer_counts(m, &full, &linear);
    if (full && (!m->n_head || !m->n_head_kv || m->n_head % m->n_head_kv || !m->head_dim_k || !m->head_dim_v))
        return tmem__err(TMEM_E_INVALID_ARG);
    if (linear && (!m->ssm_conv_kernel || !m->ssm_state_size || !m->ssm_group_count || !m->ssm_time_step_rank ||
                   !m->ssm_inner_size || m->ssm_inner_size % m->ssm_time_step_rank))
        return tmem__err(TMEM_E_INVALID_ARG);
    if (m->vis_depth && (!m->vis_hidden || !m->vis_ff || !m->vis_heads || m->vis_hidden % m->vis_heads ||
                         !m->vis_patch || !m->vis_merge || !m->vis_temporal_patch || !m->vis_out_hidden))
        return tmem__err(TMEM_E_INVALID_ARG);
    return TMEM_OK;
}

/* ---- per-role sizes ---- */

/* The cache's layouts (kv.h) built from the model: the KV cache, the fit
 * calculator and the admission code all size memory through them. */
tmem_status tmem_model_kv_layout(const tmem_model_desc *m, tmem_kv_dtype dtype, uint32_t block_tokens,
                                 tmem_kv_layout *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    tmem_status st = tmem_model_validate(m);
    if (st) return st;
    uint32_t full;
    tmem_model_layer_counts(m, &full, NULL);
    if (!full || (unsigned)dtype >= TMEM_KV_DTYPE_COUNT) return tmem__err(TMEM_E_INVALID_ARG);
    if (m->head_dim_k != m->head_dim_v) return tmem__err(TMEM_E_UNSUPPORTED);
    out->layers = full;
    out->kv_heads = m->n_head_kv;
    out->head_dim = m->head_dim_k;
    out->dtype = dtype;
    out->block_tokens = block_tokens;
    return TMEM_OK;
}

tmem_status tmem_model_recurrent_layout(const tmem_model_desc *m, tmem_kv_dtype dtype, tmem_recurrent_layout *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    tmem_status st = tmem_model_validate(m);
    if (st) return st;
    uint32_t linear;
    tmem_model_layer_counts(m, NULL, &linear);
    if (!linear || (unsigned)dtype >= TMEM_KV_DTYPE_COUNT) return tmem__err(TMEM_E_INVALID_ARG);
    out->layers = linear;
    out->key_heads = m->ssm_group_count;
    out->value_heads = m->ssm_time_step_rank;
    out->key_dim = m->ssm_state_size;
    out->value_dim = m->ssm_inner_size / m->ssm_time_step_rank;
    out->conv_kernel = m->ssm_conv_kernel;
    /* conv over q, k (key heads) and v (value heads): inner + 2 * key heads * key dim */
    out->conv_channels = m->ssm_inner_size + 2 * m->ssm_group_count * m->ssm_state_size;
    out->dtype = dtype;
    return TMEM_OK;
}

tmem_status tmem_model_kv_bytes_per_token(const tmem_model_desc *m, tmem_kv_dtype dtype, uint64_t *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = 0;
    tmem_status st = tmem_model_validate(m);
    if (st) return st;
    uint32_t full;
    tmem_model_layer_counts(m, &full, NULL);
    if (!full) return (unsigned)dtype < TMEM_KV_DTYPE_COUNT ? TMEM_OK : tmem__err(TMEM_E_INVALID_ARG);
    tmem_kv_layout l;
    if ((st = tmem_model_kv_layout(m, dtype, 0, &l))) return st;
    return tmem_kv_layout_token_bytes(&l, out);
}

tmem_status tmem_model_recurrent_bytes(const tmem_model_desc *m, tmem_kv_dtype dtype, uint64_t *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = 0;
    tmem_status st = tmem_model_validate(m);
    if (st) return st;
    uint32_t linear;
    tmem_model_layer_counts(m, NULL, &linear);
    if (!linear) return (unsigned)dtype < TMEM_KV_DTYPE_COUNT ? TMEM_OK : tmem__err(TMEM_E_INVALID_ARG);
    tmem_recurrent_layout l;
    if ((st = tmem_model_recurrent_layout(m, dtype, &l))) return st;
    return tmem_recurrent_layout_bytes(&l, out);
}

tmem_status tmem_model_vision_tokens(const tmem_model_desc *m, uint32_t width, uint32_t height, uint64_t *tokens,
                                     uint64_t *patches) {
    if (tokens) *tokens = 0;
    if (patches) *patches = 0;
    if (!m || !tokens || !m->vis_depth || !m->vis_patch || !m->vis_merge || !width || !height)
        return tmem__err(TMEM_E_INVALID_ARG);
    /* Qwen's processor resizes each side to a multiple of patch*merge
     * (rounding to nearest, at least one unit) so patches merge evenly. */
    uint64_t unit = (uint64_t)m->vis_patch * m->vis_merge;
    uint64_t w = ((uint64_t)width + unit / 2) / unit * unit, h = ((uint64_t)height + unit / 2) / unit * unit;
    if (w < unit) w = unit;
    if (h < unit) h = unit;
    uint64_t p = (w / m->vis_patch) * (h / m->vis_patch); /* < 2^64: each factor < 2^32 */
    *tokens = p / ((uint64_t)m->vis_merge * m->vis_merge);
    if (patches) *patches = p;
    return TMEM_OK;
}

/* ---- parameter counts ---- */

typedef struct acc {
    uint64_t v;
    bool overflow;
} acc;
static void add_mul(acc *a, uint64_t x, uint64_t y) {
    uint64_t p;
    if (tmem__mul_overflow(x, y, &p) || tmem__add_overflow(a->v, p, &a->v)) a->overflow = true;
}

tmem_status tmem_model_param_count(const tmem_model_desc *m, tmem_model_params *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    tmem_status st = tmem_model_validate(m);
    if (st) return st;
    uint32_t full, linear;
    tmem_model_layer_counts(m, &full, &linear);
    uint64_t E = m->n_embd, V = m->n_vocab;
    bool qk_norm = strncmp(m->arch, "qwen", 4) == 0;
    acc emb = {0}, outp = {0}, att = {0}, lin = {0}, ffn = {0}, vis = {0};
    add_mul(&emb, V, E);
    add_mul(&outp, 1, E); /* output norm */
    if (!m->tied_embeddings) add_mul(&outp, V, E);
    if (full) {
        uint64_t q = (uint64_t)m->n_head * m->head_dim_k * (m->attn_output_gate ? 2 : 1);
        uint64_t kv = (uint64_t)m->n_head_kv * (m->head_dim_k + m->head_dim_v);
        acc one = {0};
        add_mul(&one, E, q + kv);                                  /* q(+gate), k, v */
        add_mul(&one, (uint64_t)m->n_head * m->head_dim_v, E);     /* o */
        add_mul(&one, 1, E + (qk_norm ? 2ull * m->head_dim_k : 0)); /* norms */
        add_mul(&att, one.v, full);
        att.overflow |= one.overflow;
    }
    if (linear) {
        uint64_t G = m->ssm_group_count, dk = m->ssm_state_size, Hv = m->ssm_time_step_rank, I = m->ssm_inner_size;
        uint64_t conv_ch = I + 2 * G * dk;
        acc one = {0};
        add_mul(&one, E, conv_ch);                 /* in_proj_qkv */
        add_mul(&one, E, I);                       /* in_proj_z */
        add_mul(&one, E, 2 * Hv);                  /* in_proj_a, in_proj_b */
        add_mul(&one, conv_ch, m->ssm_conv_kernel); /* conv1d */
        add_mul(&one, 1, 2 * Hv + I / Hv + E);     /* A_log, dt_bias, gated norm, layer norm */
        add_mul(&one, I, E);                       /* out_proj */
        add_mul(&lin, one.v, linear);
        lin.overflow |= one.overflow;
    }
    acc ffn1 = {0};
    add_mul(&ffn1, 3 * E, m->n_ff);
    add_mul(&ffn1, 1, E);
    add_mul(&ffn, ffn1.v, m->n_layers);
    ffn.overflow |= ffn1.overflow;
    if (m->vis_depth) {
        uint64_t h = m->vis_hidden, f = m->vis_ff, mg = (uint64_t)m->vis_merge * m->vis_merge;
        acc blk = {0};
        add_mul(&blk, h, 3 * h + 3);  /* qkv + bias */
        add_mul(&blk, h, h + 1);      /* proj + bias */
        add_mul(&blk, h, f);          /* fc1 */
        add_mul(&blk, 1, f);
        add_mul(&blk, f, h);          /* fc2 */
        add_mul(&blk, 1, h);
        add_mul(&blk, 4, h);          /* two layer norms, weight + bias */
        add_mul(&vis, blk.v, m->vis_depth);
        vis.overflow |= blk.overflow;
        add_mul(&vis, 3ull * m->vis_temporal_patch * m->vis_patch * m->vis_patch + 1, h); /* patch embed */
        add_mul(&vis, m->vis_pos_embd, h);                                                /* position embed */
        add_mul(&vis, 2, h);                                                              /* merger norm */
        add_mul(&vis, mg * h, mg * h + 1);                                                /* merger fc1 */
        add_mul(&vis, mg * h + 1, m->vis_out_hidden);                                     /* merger fc2 */
    }
    if (emb.overflow || outp.overflow || att.overflow || lin.overflow || ffn.overflow || vis.overflow)
        return tmem__err(TMEM_E_OVERFLOW);
    out->embedding = emb.v;
    out->output = outp.v;
    out->attention = att.v;
    out->linear_attention = lin.v;
    out->ffn = ffn.v;
    out->vision = vis.v;
    uint64_t t = 0;
    if (tmem__add_overflow(t, emb.v, &t) || tmem__add_overflow(t, outp.v, &t) || tmem__add_overflow(t, att.v, &t) ||
        tmem__add_overflow(t, lin.v, &t) || tmem__add_overflow(t, ffn.v, &t) || tmem__add_overflow(t, vis.v, &t))
        return tmem__err(TMEM_E_OVERFLOW);
    out->total = t;
    return TMEM_OK;
}

static tmem_status blocks_bytes(uint32_t type, uint64_t n, uint64_t *out) {
    tmem_ggml_type_info ti;
    tmem_status st = tmem_ggml_type_get_info(type, &ti);
    if (st) return st;
    if (tmem__mul_overflow(n / ti.block_size + (n % ti.block_size != 0), ti.type_size, out))
        return tmem__err(TMEM_E_OVERFLOW);
    return TMEM_OK;
}

tmem_status tmem_model_weight_bytes(const tmem_model_desc *m, tmem_weight_dtype dtype, uint64_t *text,
                                    uint64_t *vision) {
    if (text) *text = 0;
    if (vision) *vision = 0;
    if (!text || dtype == TMEM_WEIGHT_DEFAULT || (unsigned)dtype >= TMEM_WEIGHT_COUNT)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem_model_params p;
    tmem_status st = tmem_model_param_count(m, &p);
    if (st) return st;
    uint32_t t = tmem_weight_dtype_ggml(dtype);
    uint64_t a, b;
    if ((st = blocks_bytes(t, p.total - p.vision, &a)) || (st = blocks_bytes(t, p.vision, &b))) return st;
    *text = a;
    if (vision) *vision = b;
    return TMEM_OK;
}

/* ---- from GGUF metadata ---- */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
static tmem_status gerr(tmem_gguf_error *err, tmem_status st, uint64_t off, const char *fmt, ...) {
    if (err) {
        err->offset = off;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return tmem__err(st);
}

/* "<arch>.<suffix>" as a u32; required or defaulted. */
static tmem_status arch_u32(const tmem_gguf *g, const char *arch, const char *suffix, bool required, uint32_t def,
                            uint32_t *out, tmem_gguf_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint64_t v;
    tmem_status st = tmem_gguf_get_u64(g, key, &v);
    if (st == TMEM_E_NOT_FOUND && !required) {
        *out = def;
        return TMEM_OK;
    }
    if (st == TMEM_E_NOT_FOUND) return gerr(err, st, 0, "missing metadata key %s", key);
    if (st) return gerr(err, TMEM_E_CORRUPT, 0, "metadata key %s is not a non-negative integer", key);
    if (v > UINT32_MAX) return gerr(err, TMEM_E_CORRUPT, 0, "metadata key %s = %llu is too large", key,
                                    (unsigned long long)v);
    *out = (uint32_t)v;
    return TMEM_OK;
}

tmem_status tmem_model_from_gguf(const tmem_gguf *g, tmem_model_desc *out, tmem_gguf_error *err) {
    if (!g || !out) return tmem__err(TMEM_E_INVALID_ARG);
    memset(out, 0, sizeof *out);
    if (err) {
        err->offset = 0;
        err->message[0] = 0;
    }
    tmem_gguf_str s;
    tmem_status st = tmem_gguf_get_str(g, "general.architecture", &s);
    if (st) return gerr(err, st == TMEM_E_PARSE ? TMEM_E_CORRUPT : st, 0, "missing string general.architecture");
    if (s.len == 0 || s.len >= sizeof out->arch) return gerr(err, TMEM_E_CORRUPT, 0, "bad general.architecture");
    memcpy(out->arch, s.data, (size_t)s.len);
    out->arch[s.len] = 0;
    if (tmem_gguf_get_str(g, "general.name", &s) == TMEM_OK)
        snprintf(out->name, sizeof out->name, "%.*s", (int)(s.len > 63 ? 63 : s.len), s.data);
    else snprintf(out->name, sizeof out->name, "%s", out->arch);
    const char *a = out->arch;
    uint32_t nextn = 0, interval_def = 0, vocab = 0;
    bool hybrid = !strcmp(a, "qwen35") || !strcmp(a, "qwen3next");
    if (hybrid) interval_def = 4; /* llama.cpp's default for these archs */
    if ((st = arch_u32(g, a, "block_count", true, 0, &out->n_layers, err)) ||
        (st = arch_u32(g, a, "embedding_length", true, 0, &out->n_embd, err)) ||
        (st = arch_u32(g, a, "feed_forward_length", true, 0, &out->n_ff, err)) ||
        (st = arch_u32(g, a, "context_length", false, 0, &out->n_ctx_train, err)) ||
        (st = arch_u32(g, a, "attention.head_count", true, 0, &out->n_head, err)) ||
        (st = arch_u32(g, a, "attention.head_count_kv", false, out->n_head, &out->n_head_kv, err)) ||
        (st = arch_u32(g, a, "nextn_predict_layers", false, 0, &nextn, err)) ||
        (st = arch_u32(g, a, "full_attention_interval", false, interval_def, &out->full_attn_interval, err)) ||
        (st = arch_u32(g, a, "vocab_size", false, 0, &vocab, err)))
        return st;
    if (!out->n_head) return gerr(err, TMEM_E_CORRUPT, 0, "%s.attention.head_count is 0", a);
    uint32_t hd = out->n_embd / out->n_head;
    if ((st = arch_u32(g, a, "attention.key_length", false, hd, &out->head_dim_k, err)) ||
        (st = arch_u32(g, a, "attention.value_length", false, out->head_dim_k, &out->head_dim_v, err)))
        return st;
    if (nextn >= out->n_layers) return gerr(err, TMEM_E_CORRUPT, 0, "%s.nextn_predict_layers >= block_count", a);
    out->n_layers -= nextn;
    if (!vocab) {
        uint64_t idx;
        tmem_gguf_value v;
        if (tmem_gguf_find(g, "tokenizer.ggml.tokens", &idx, &v) == TMEM_OK && v.type == TMEM_GGUF_ARRAY &&
            v.v.array.count <= UINT32_MAX)
            vocab = (uint32_t)v.v.array.count;
    }
    if (!vocab) {
        tmem_gguf_tensor t;
        if (tmem_gguf_tensor_find(g, "token_embd.weight", &t) == TMEM_OK && t.n_dims == 2 && t.dims[1] <= UINT32_MAX)
            vocab = (uint32_t)t.dims[1];
    }
    if (!vocab) return gerr(err, TMEM_E_NOT_FOUND, 0, "no vocabulary size (%s.vocab_size, tokenizer.ggml.tokens "
                            "or token_embd.weight)", a);
    out->n_vocab = vocab;
    uint32_t linear;
    tmem_model_layer_counts(out, NULL, &linear);
    if (linear) {
        if ((st = arch_u32(g, a, "ssm.conv_kernel", true, 0, &out->ssm_conv_kernel, err)) ||
            (st = arch_u32(g, a, "ssm.state_size", true, 0, &out->ssm_state_size, err)) ||
            (st = arch_u32(g, a, "ssm.group_count", true, 0, &out->ssm_group_count, err)) ||
            (st = arch_u32(g, a, "ssm.time_step_rank", true, 0, &out->ssm_time_step_rank, err)) ||
            (st = arch_u32(g, a, "ssm.inner_size", true, 0, &out->ssm_inner_size, err)))
            return st;
    }
    out->attn_output_gate = hybrid;
    tmem_gguf_tensor t;
    out->tied_embeddings = tmem_gguf_tensor_find(g, "output.weight", &t) != TMEM_OK;
    /* exact weight bytes, and the dominant tensor type for reports */
    tmem_gguf_info info;
    if ((st = tmem_gguf_get_info(g, &info))) return st;
    out->file_weight_bytes = info.tensor_bytes;
    uint64_t by_type[TMEM_GGML_TYPE_LIMIT] = {0};
    for (uint64_t i = 0; i < info.tensor_count; i++)
        if (tmem_gguf_tensor_at(g, i, &t) == TMEM_OK && t.type < TMEM_GGML_TYPE_LIMIT) by_type[t.type] += t.size;
    for (uint32_t i = 1; i < TMEM_GGML_TYPE_LIMIT; i++)
        if (by_type[i] > by_type[out->file_weight_type]) out->file_weight_type = i;
    if (tmem_model_validate(out) != TMEM_OK)
        return gerr(err, TMEM_E_CORRUPT, 0, "inconsistent model shape in %s metadata", a);
    return TMEM_OK;
}

/* ---- vision encoder from an mmproj GGUF ---- */

static tmem_status clip_u32(const tmem_gguf *g, const char *key, bool required, uint32_t def, uint32_t *out,
                            tmem_gguf_error *err) {
    uint64_t v;
    tmem_status st = tmem_gguf_get_u64(g, key, &v);
    if (st == TMEM_E_NOT_FOUND && !required) {
        *out = def;
        return TMEM_OK;
    }
    if (st == TMEM_E_NOT_FOUND) return gerr(err, st, 0, "missing metadata key %s", key);
    if (st || v > UINT32_MAX) return gerr(err, TMEM_E_CORRUPT, 0, "metadata key %s is not a 32-bit count", key);
    *out = (uint32_t)v;
    return TMEM_OK;
}

tmem_status tmem_model_add_mmproj(const tmem_gguf *g, tmem_model_desc *m, tmem_gguf_error *err) {
    if (!g || !m) return tmem__err(TMEM_E_INVALID_ARG);
    if (err) {
        err->offset = 0;
        err->message[0] = 0;
    }
    tmem_model_desc v = *m;
    tmem_status st;
    if ((st = clip_u32(g, "clip.vision.block_count", true, 0, &v.vis_depth, err)) ||
        (st = clip_u32(g, "clip.vision.embedding_length", true, 0, &v.vis_hidden, err)) ||
        (st = clip_u32(g, "clip.vision.feed_forward_length", true, 0, &v.vis_ff, err)) ||
        (st = clip_u32(g, "clip.vision.attention.head_count", true, 0, &v.vis_heads, err)) ||
        (st = clip_u32(g, "clip.vision.patch_size", true, 0, &v.vis_patch, err)) ||
        (st = clip_u32(g, "clip.vision.projection_dim", false, m->n_embd, &v.vis_out_hidden, err)))
        return st;
    /* Qwen VL towers embed patches of 2 frames (an image is repeated) and
     * merge 2x2 patches into a token even when the file does not say so */
    tmem_gguf_str pt;
    bool qwen = (tmem_gguf_get_str(g, "clip.vision.projector_type", &pt) == TMEM_OK ||
                 tmem_gguf_get_str(g, "clip.projector_type", &pt) == TMEM_OK) &&
                pt.len >= 4 && !strncmp(pt.data, "qwen", 4);
    v.vis_temporal_patch = qwen ? 2 : 1;
    if ((st = clip_u32(g, "clip.vision.spatial_merge_size", false, qwen ? 2 : 1, &v.vis_merge, err))) return st;
    tmem_gguf_tensor t;
    v.vis_pos_embd = 0;
    if (tmem_gguf_tensor_find(g, "v.position_embd.weight", &t) == TMEM_OK && t.n_dims >= 2 && t.dims[1] <= UINT32_MAX)
        v.vis_pos_embd = (uint32_t)t.dims[1];
    tmem_gguf_info info;
    if ((st = tmem_gguf_get_info(g, &info))) return st;
    v.vis_file_weight_bytes = info.tensor_bytes;
    if (tmem_model_validate(&v) != TMEM_OK)
        return gerr(err, TMEM_E_CORRUPT, 0, "inconsistent vision encoder shape in clip.vision metadata");
    *m = v;
    return TMEM_OK;
}

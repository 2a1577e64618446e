/* hparams.c: the qwen35.* keys of a GGUF, read as llama.cpp reads them
 * (src/models/qwen35.cpp load_arch_hparams, llama-model.cpp's common keys):
 * required keys fail with the key's name, optional ones keep llama.cpp's
 * defaults, and the shape is checked for consistency before any tensor is
 * looked at. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "rt_internal.h"

#define ARCH "qwen35"

static tmem_status get_u32(const tmem_gguf *g, const char *key, bool required, uint32_t *out,
                           tmrt_error *err) {
    char full[96];
    snprintf(full, sizeof full, ARCH ".%s", key);
    uint64_t v;
    tmem_status st = tmem_gguf_get_u64(g, full, &v);
    if (st == TMEM_E_NOT_FOUND && !required) return TMEM_OK;
    if (st == TMEM_E_NOT_FOUND) return tmrt__fail(err, st, "missing key '%s'", full);
    if (st || v > UINT32_MAX) return tmrt__fail(err, TMEM_E_CORRUPT, "key '%s': not a 32-bit count", full);
    *out = (uint32_t)v;
    return TMEM_OK;
}

static tmem_status get_f32(const tmem_gguf *g, const char *key, bool required, float *out, tmrt_error *err) {
    char full[96];
    snprintf(full, sizeof full, ARCH ".%s", key);
    double v;
    tmem_status st = tmem_gguf_get_f64(g, full, &v);
    if (st == TMEM_E_NOT_FOUND && !required) return TMEM_OK;
    if (st == TMEM_E_NOT_FOUND) return tmrt__fail(err, st, "missing key '%s'", full);
    if (st || !isfinite(v) || v <= 0) return tmrt__fail(err, TMEM_E_CORRUPT, "key '%s': not a positive number", full);
    *out = (float)v;
    return TMEM_OK;
}

/* An integer array key (rope sections, recurrent layer flags). */
static tmem_status get_array(const tmem_gguf *g, const char *key, int64_t *vals, uint32_t cap, uint32_t *count,
                             tmrt_error *err) {
    char full[96];
    snprintf(full, sizeof full, ARCH ".%s", key);
    uint64_t kv;
    tmem_gguf_value v;
    *count = 0;
    tmem_status st = tmem_gguf_find(g, full, &kv, &v);
    if (st) return st;
    if (v.type != TMEM_GGUF_ARRAY || v.v.array.count > cap)
        return tmrt__fail(err, TMEM_E_CORRUPT, "key '%s': not an array of at most %u integers", full, cap);
    for (uint64_t i = 0; i < v.v.array.count; i++) {
        tmem_gguf_value e;
        if ((st = tmem_gguf_array_get(g, kv, i, &e))) return tmrt__fail(err, TMEM_E_CORRUPT, "key '%s'", full);
        switch (e.type) {
        case TMEM_GGUF_UINT8: case TMEM_GGUF_UINT16: case TMEM_GGUF_UINT32: case TMEM_GGUF_UINT64:
            vals[i] = (int64_t)e.v.u; break;
        case TMEM_GGUF_INT8: case TMEM_GGUF_INT16: case TMEM_GGUF_INT32: case TMEM_GGUF_INT64:
            vals[i] = e.v.i; break;
        case TMEM_GGUF_BOOL: vals[i] = e.v.b; break;
        default: return tmrt__fail(err, TMEM_E_CORRUPT, "key '%s': element %llu is not an integer", full,
                                   (unsigned long long)i);
        }
    }
    *count = (uint32_t)v.v.array.count;
    return TMEM_OK;
}

tmem_status tmrt__hparams_read(const tmem_gguf *g, tmrt_hparams *hp, tmrt_error *err) {
    memset(hp, 0, sizeof *hp);
    tmem_gguf_str arch;
    if (tmem_gguf_get_str(g, "general.architecture", &arch))
        return tmrt__fail(err, TMEM_E_NOT_FOUND, "missing key 'general.architecture'");
    if (arch.len != strlen(ARCH) || memcmp(arch.data, ARCH, arch.len))
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "architecture '%.*s' is not '" ARCH "'",
                          (int)(arch.len > 64 ? 64 : arch.len), arch.data);
    hp->rope_freq_base = 10000.0f;
    hp->full_attn_interval = 4;
    hp->n_ctx_train = TMRT_DEFAULT_CTX_TRAIN;
    hp->eos_token = -1;
    tmem_status st;
    if ((st = get_u32(g, "block_count", true, &hp->n_layers, err)) ||
        (st = get_u32(g, "embedding_length", true, &hp->n_embd, err)) ||
        (st = get_u32(g, "feed_forward_length", true, &hp->n_ff, err)) ||
        (st = get_u32(g, "context_length", false, &hp->n_ctx_train, err)) ||
        (st = get_u32(g, "attention.head_count", true, &hp->n_head, err)))
        return st;
    hp->n_head_kv = hp->n_head;
    hp->head_dim = hp->n_head ? hp->n_embd / hp->n_head : 0;
    uint32_t head_dim_v = 0;
    if ((st = get_u32(g, "attention.head_count_kv", false, &hp->n_head_kv, err)) ||
        (st = get_u32(g, "attention.key_length", false, &hp->head_dim, err)) ||
        (st = get_u32(g, "attention.value_length", false, &head_dim_v, err)) ||
        (st = get_f32(g, "attention.layer_norm_rms_epsilon", true, &hp->rms_eps, err)) ||
        (st = get_f32(g, "rope.freq_base", false, &hp->rope_freq_base, err)) ||
        (st = get_u32(g, "full_attention_interval", false, &hp->full_attn_interval, err)) ||
        (st = get_u32(g, "ssm.conv_kernel", true, &hp->conv_kernel, err)) ||
        (st = get_u32(g, "ssm.inner_size", true, &hp->ssm_inner, err)) ||
        (st = get_u32(g, "ssm.state_size", true, &hp->ssm_head_dim, err)) ||
        (st = get_u32(g, "ssm.time_step_rank", true, &hp->ssm_v_heads, err)) ||
        (st = get_u32(g, "ssm.group_count", true, &hp->ssm_k_heads, err)))
        return st;
    hp->n_rot = hp->head_dim;
    if ((st = get_u32(g, "rope.dimension_count", false, &hp->n_rot, err))) return st;
    if (head_dim_v && head_dim_v != hp->head_dim)
        return tmrt__fail(err, TMEM_E_CORRUPT, "attention.key_length %u != value_length %u", hp->head_dim,
                          head_dim_v);

    int64_t vals[TMRT_MAX_LAYERS];
    uint32_t n;
    st = get_array(g, "rope.dimension_sections", vals, 4, &n, err);
    if (st && st != TMEM_E_NOT_FOUND) return st;
    for (uint32_t i = 0; i < n; i++) {
        if (vals[i] < 0 || vals[i] > 65536) return tmrt__fail(err, TMEM_E_CORRUPT, "rope.dimension_sections[%u]", i);
        hp->rope_sections[i] = (int32_t)vals[i];
    }

    if (hp->n_layers == 0 || hp->n_layers > TMRT_MAX_LAYERS)
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, ARCH ".block_count %u: 1..%u supported", hp->n_layers,
                          TMRT_MAX_LAYERS);
    st = get_array(g, "attention.recurrent_layers", vals, TMRT_MAX_LAYERS, &n, err);
    if (st == TMEM_OK) {
        if (n < hp->n_layers)
            return tmrt__fail(err, TMEM_E_CORRUPT, ARCH ".attention.recurrent_layers has %u entries for %u layers",
                              n, hp->n_layers);
        for (uint32_t i = 0; i < hp->n_layers; i++) hp->recurrent[i] = vals[i] != 0;
    } else if (st == TMEM_E_NOT_FOUND) {
        if (hp->full_attn_interval == 0)
            return tmrt__fail(err, TMEM_E_CORRUPT, ARCH ".full_attention_interval is 0");
        for (uint32_t i = 0; i < hp->n_layers; i++) hp->recurrent[i] = (i + 1) % hp->full_attn_interval != 0;
    } else {
        return st;
    }

    uint64_t eos;
    if (tmem_gguf_get_u64(g, "tokenizer.ggml.eos_token_id", &eos) == TMEM_OK && eos < INT32_MAX)
        hp->eos_token = (int32_t)eos;

    /* consistency: every divisor non-zero, the splits exact */
    if (!hp->n_embd || !hp->n_ff || !hp->n_head || !hp->n_head_kv || hp->n_head % hp->n_head_kv)
        return tmrt__fail(err, TMEM_E_CORRUPT, "attention heads %u / kv heads %u", hp->n_head, hp->n_head_kv);
    if (!hp->head_dim || hp->n_rot > hp->head_dim || hp->n_rot % 2)
        return tmrt__fail(err, TMEM_E_CORRUPT, "rope.dimension_count %u with head dim %u", hp->n_rot,
                          hp->head_dim);
    if (!hp->conv_kernel || hp->conv_kernel > 16)
        return tmrt__fail(err, TMEM_E_CORRUPT, ARCH ".ssm.conv_kernel %u: 1..16 supported", hp->conv_kernel);
    /* value heads may be wider than key heads (HF's linear_value_head_dim);
     * llama.cpp's graph assumes equal dims, the runtime does not need to */
    if (!hp->ssm_head_dim || !hp->ssm_k_heads || !hp->ssm_v_heads || hp->ssm_v_heads % hp->ssm_k_heads ||
        !hp->ssm_inner || hp->ssm_inner % hp->ssm_v_heads)
        return tmrt__fail(err, TMEM_E_CORRUPT,
                          "ssm: inner_size %u must be a multiple of time_step_rank %u, itself a multiple of "
                          "group_count %u (state_size %u)",
                          hp->ssm_inner, hp->ssm_v_heads, hp->ssm_k_heads, hp->ssm_head_dim);
    return TMEM_OK;
}

/*
 * config.json -> cv_hparams. A "qwen3_5_text" config is read as is; a full
 * "qwen3_5" config (text + vision) contributes its text_config, whose keys
 * win over the top level ones as in llama.cpp's converter (which merges
 * {**config, **text_config}). Rope settings come from rope_parameters (or
 * the older rope_scaling), falling back to top-level keys; partial rotary
 * factor defaults to 0.25 and mrope sections to [11, 11, 10, 0], the
 * defaults of transformers and llama.cpp for Qwen3.5.
 */
#include "convert_internal.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

tmem_status tmrt__cv_read_file(const char *path, char **data, size_t *len, tmrt_error *err) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return TMEM_E_NOT_FOUND;
        return tmrt__fail(err, TMEM_E_IO, "%s: cannot open", path);
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *b = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf) return tmrt__fail(err, TMEM_E_NO_MEMORY, "%s: out of memory reading it", path);
    if (bad) {
        free(buf);
        return tmrt__fail(err, TMEM_E_IO, "%s: read error", path);
    }
    *data = buf;
    *len = n;
    return TMEM_OK;
}

typedef struct cfg {
    const tmem_json *j;
    tmem_json_ref text, root, rope; /* text == root for a text config; rope: 0 = none */
    bool has_rope;
    const char *path;
    tmrt_error *err;
} cfg;

static bool find(const cfg *c, const char *key, tmem_json_ref *v) {
    if (c->text != c->root && tmem_json_get(c->j, c->text, key, v) == TMEM_OK) return true;
    return tmem_json_get(c->j, c->root, key, v) == TMEM_OK;
}

static tmem_status get_u32(const cfg *c, const char *key, bool required, uint32_t dflt, uint32_t *out) {
    tmem_json_ref v;
    if (!find(c, key, &v) || tmem_json_type_of(c->j, v) == TMEM_JSON_NULL) {
        if (required) return tmrt__fail(c->err, TMEM_E_NOT_FOUND, "%s: missing field '%s'", c->path, key);
        *out = dflt;
        return TMEM_OK;
    }
    int64_t x;
    if (tmem_json_int(c->j, v, &x) || x < 0 || x > UINT32_MAX)
        return tmrt__fail(c->err, TMEM_E_PARSE, "%s: field '%s' is not an integer in 0..2^32-1", c->path, key);
    *out = (uint32_t)x;
    return TMEM_OK;
}

static tmem_status num_of(const cfg *c, tmem_json_ref v, const char *key, double *out) {
    if (tmem_json_number(c->j, v, out))
        return tmrt__fail(c->err, TMEM_E_PARSE, "%s: field '%s' is not a number", c->path, key);
    return TMEM_OK;
}

/* A rope setting: rope_parameters first, then the config itself. */
static bool find_rope(const cfg *c, const char *key, tmem_json_ref *v) {
    if (c->has_rope && tmem_json_get(c->j, c->rope, key, v) == TMEM_OK) return true;
    return find(c, key, v);
}

static tmem_status read_rope(cfg *c, cv_hparams *h) {
    tmem_json_ref v;
    if ((find(c, "rope_parameters", &v) || find(c, "rope_scaling", &v)) &&
        tmem_json_type_of(c->j, v) == TMEM_JSON_OBJECT) {
        c->rope = v;
        c->has_rope = true;
    }
    if (find_rope(c, "rope_type", &v) && !tmem_json_string_eq(c->j, v, "default"))
        return tmrt__fail(c->err, TMEM_E_UNSUPPORTED, "%s: rope_type other than \"default\" (rope scaling) is not "
                       "supported", c->path);
    tmem_status st;
    if (!find_rope(c, "rope_theta", &v))
        return tmrt__fail(c->err, TMEM_E_NOT_FOUND, "%s: missing field 'rope_theta'", c->path);
    if ((st = num_of(c, v, "rope_theta", &h->rope_theta))) return st;
    double partial = 0.25;
    if (find_rope(c, "partial_rotary_factor", &v) && (st = num_of(c, v, "partial_rotary_factor", &partial))) return st;
    if (!(partial > 0 && partial <= 1))
        return tmrt__fail(c->err, TMEM_E_PARSE, "%s: partial_rotary_factor %g outside (0, 1]", c->path, partial);
    h->rope_dim = (uint32_t)(h->head_dim * partial); /* int() truncation, as llama.cpp */
    static const int32_t dflt[4] = {11, 11, 10, 0};
    memcpy(h->rope_sections, dflt, sizeof dflt);
    if (find_rope(c, "mrope_section", &v)) {
        uint32_t n = tmem_json_count(c->j, v);
        if (tmem_json_type_of(c->j, v) != TMEM_JSON_ARRAY || n > 4)
            return tmrt__fail(c->err, TMEM_E_PARSE,
                                 "%s: mrope_section is not an array of at most 4 integers", c->path);
        memset(h->rope_sections, 0, sizeof h->rope_sections);
        tmem_json_ref e;
        uint32_t i = 0;
        for (tmem_status r = tmem_json_first(c->j, v, &e); r == TMEM_OK; r = tmem_json_next(c->j, e, &e), i++) {
            int64_t x;
            if (tmem_json_int(c->j, e, &x) || x < 0 || x > INT32_MAX)
                return tmrt__fail(c->err, TMEM_E_PARSE, "%s: mrope_section element %u is not an integer",
                                     c->path, i);
            h->rope_sections[i] = (int32_t)x;
        }
    }
    return TMEM_OK;
}

static tmem_status read_layer_types(cfg *c, cv_hparams *h) {
    tmem_json_ref v;
    if (!find(c, "layer_types", &v) || tmem_json_type_of(c->j, v) == TMEM_JSON_NULL) {
        uint32_t interval;
        tmem_status st = get_u32(c, "full_attention_interval", false, 4, &interval);
        if (st) return st;
        if (!interval) return tmrt__fail(c->err, TMEM_E_PARSE, "%s: full_attention_interval is 0", c->path);
        tmrt__cv_hparams_set_interval(h, interval);
        return TMEM_OK;
    }
    if (tmem_json_type_of(c->j, v) != TMEM_JSON_ARRAY || tmem_json_count(c->j, v) != h->n_layers)
        return tmrt__fail(c->err, TMEM_E_PARSE, "%s: layer_types is not an array of num_hidden_layers (%u) strings",
                       c->path, h->n_layers);
    tmem_json_ref e;
    uint32_t i = 0;
    for (tmem_status r = tmem_json_first(c->j, v, &e); r == TMEM_OK; r = tmem_json_next(c->j, e, &e), i++) {
        if (tmem_json_string_eq(c->j, e, "linear_attention")) h->recurrent[i] = true;
        else if (tmem_json_string_eq(c->j, e, "full_attention")) h->recurrent[i] = false;
        else return tmrt__fail(c->err, TMEM_E_PARSE, "%s: layer_types[%u] is neither \"linear_attention\" nor "
                            "\"full_attention\"", c->path, i);
    }
    /* the interval that describes the pattern, else 0 (per-layer key) */
    h->full_attn_interval = 0;
    for (uint32_t k = 1; k <= h->n_layers; k++) {
        bool ok = true;
        for (i = 0; i < h->n_layers && ok; i++) ok = h->recurrent[i] == ((i + 1) % k != 0);
        if (ok) {
            h->full_attn_interval = k;
            break;
        }
    }
    return TMEM_OK;
}

static void read_token_id(const cfg *c, const char *key, int64_t *out) {
    tmem_json_ref v, e;
    *out = -1;
    if (!find(c, key, &v)) return;
    if (tmem_json_type_of(c->j, v) == TMEM_JSON_ARRAY && tmem_json_first(c->j, v, &e) == TMEM_OK) v = e;
    int64_t x;
    if (tmem_json_int(c->j, v, &x) == TMEM_OK && x >= 0) *out = x;
}

static tmem_status read_all(cfg *c, cv_hparams *h) {
    tmem_json_ref v;
    const tmem_json *j = c->j;
    char mt[48] = "";
    size_t n;
    if (tmem_json_get(j, c->root, "model_type", &v) || tmem_json_type_of(j, v) != TMEM_JSON_STRING)
        return tmrt__fail(c->err, TMEM_E_NOT_FOUND, "%s: missing field 'model_type'", c->path);
    if (tmem_json_string(j, v, mt, sizeof mt, &n)) mt[0] = 0;
    if (!strcmp(mt, "qwen3_5")) {
        if (tmem_json_get(j, c->root, "text_config", &v) || tmem_json_type_of(j, v) != TMEM_JSON_OBJECT)
            return tmrt__fail(c->err, TMEM_E_NOT_FOUND,
                                 "%s: a qwen3_5 config without a text_config object", c->path);
        c->text = v;
        if (tmem_json_get(j, c->text, "model_type", &v) == TMEM_OK && !tmem_json_string_eq(j, v, "qwen3_5_text")) {
            if (tmem_json_string(j, v, mt, sizeof mt, &n)) mt[0] = 0;
            return tmrt__fail(c->err, TMEM_E_UNSUPPORTED, "%s: text_config.model_type '%s' is not qwen3_5_text",
                           c->path, mt);
        }
    } else if (strcmp(mt, "qwen3_5_text")) {
        return tmrt__fail(c->err, TMEM_E_UNSUPPORTED, "%s: model_type '%s' is not a Qwen3.5 text model "
                       "(qwen3_5 or qwen3_5_text)", c->path, mt);
    }
    tmem_status st = TMEM_OK;
    if (!st) st = get_u32(c, "num_hidden_layers", true, 0, &h->n_layers);
    if (!st) st = get_u32(c, "hidden_size", true, 0, &h->n_embd);
    if (!st) st = get_u32(c, "intermediate_size", true, 0, &h->n_ff);
    if (!st) st = get_u32(c, "vocab_size", true, 0, &h->n_vocab);
    if (!st) st = get_u32(c, "max_position_embeddings", true, 0, &h->n_ctx_train);
    if (!st) st = get_u32(c, "num_attention_heads", true, 0, &h->n_head);
    if (!st) st = get_u32(c, "num_key_value_heads", false, h->n_head, &h->n_head_kv);
    if (!st) st = get_u32(c, "head_dim", false, h->n_head ? h->n_embd / h->n_head : 0, &h->head_dim);
    if (!st) st = get_u32(c, "linear_conv_kernel_dim", true, 0, &h->ssm_conv_kernel);
    if (!st) st = get_u32(c, "linear_num_key_heads", true, 0, &h->ssm_k_heads);
    if (!st) st = get_u32(c, "linear_key_head_dim", true, 0, &h->ssm_k_dim);
    if (!st) st = get_u32(c, "linear_num_value_heads", true, 0, &h->ssm_v_heads);
    if (!st) st = get_u32(c, "linear_value_head_dim", true, 0, &h->ssm_v_dim);
    if (st) return st;
    if (!h->n_layers || h->n_layers > CV_MAX_LAYERS)
        return tmrt__fail(c->err, TMEM_E_UNSUPPORTED, "%s: num_hidden_layers %u outside 1..%u", c->path, h->n_layers,
                       CV_MAX_LAYERS);
    h->rms_eps = 1e-6;
    if (find(c, "rms_norm_eps", &v) && (st = num_of(c, v, "rms_norm_eps", &h->rms_eps))) return st;
    h->tied = false;
    if (find(c, "tie_word_embeddings", &v) && tmem_json_bool(j, v, &h->tied))
        return tmrt__fail(c->err, TMEM_E_PARSE, "%s: tie_word_embeddings is not a bool", c->path);
    if (find(c, "attention_bias", &v)) {
        bool bias = false;
        if (tmem_json_bool(j, v, &bias) == TMEM_OK && bias)
            return tmrt__fail(c->err, TMEM_E_UNSUPPORTED, "%s: attention_bias true (qwen35 has no attention biases)",
                           c->path);
    }
    if ((st = read_rope(c, h))) return st;
    if ((st = read_layer_types(c, h))) return st;
    read_token_id(c, "bos_token_id", &h->bos_id);
    read_token_id(c, "eos_token_id", &h->eos_id);
    read_token_id(c, "pad_token_id", &h->pad_id);
    if ((st = tmrt__cv_hparams_check(h, c->err))) {
        char m[sizeof c->err->message];
        snprintf(m, sizeof m, "%s", c->err ? c->err->message : "");
        return tmrt__fail(c->err, st, "%s: %s", c->path, m);
    }
    return TMEM_OK;
}

tmem_status tmrt__cv_config_read(tmem_context *ctx, const char *hf_dir, cv_hparams *h, tmrt_error *err) {
    memset(h, 0, sizeof *h);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", hf_dir);
    char *text;
    size_t len;
    tmem_status st = tmrt__cv_read_file(path, &text, &len, err);
    if (st == TMEM_E_NOT_FOUND)
        return tmrt__fail(err, st, "%s: no such file (not a Hugging Face checkpoint?)", path);
    if (st) return st;
    tmem_json *j;
    tmem_json_error je;
    st = tmem_json_parse(ctx, text, len, &j, &je);
    if (st) {
        free(text);
        return tmrt__fail(err, st, "%s:%u:%u: %s", path, je.line, je.column, je.message);
    }
    cfg c = {j, TMEM_JSON_ROOT, TMEM_JSON_ROOT, 0, false, path, err};
    if (tmem_json_type_of(j, TMEM_JSON_ROOT) != TMEM_JSON_OBJECT)
        st = tmrt__fail(err, TMEM_E_PARSE, "%s: not an object", path);
    else st = read_all(&c, h);
    tmem_json_free(j);
    free(text);
    if (!st) {
        const char *base = strrchr(hf_dir, '/');
        base = base && base[1] ? base + 1 : hf_dir;
        snprintf(h->name, sizeof h->name, "%s", base);
    }
    return st;
}

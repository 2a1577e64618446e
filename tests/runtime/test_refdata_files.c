/*
 * The reference data under tests/data/ (tests/data/README.md) is what the
 * runtime's parity tests compare against, so this test checks that the
 * committed files are whole, agree with each other and say what the README
 * says they say:
 *  - every llama.cpp GGUF opens with tmem_gguf_open and holds exactly the
 *    keys (with their values) and tensors (names, types, dims, offsets) that
 *    gguf-py listed in llamacpp/manifest.json;
 *  - every raw reference file has the size its ref.json shape gives, holds
 *    finite values, and the maxima and diffs ref.json records are reproduced;
 *  - llama.cpp's f32 GGUF of checkpoint A holds the safetensors' numbers
 *    under the transforms the README documents (1 + w norms, -exp(A_log),
 *    dt_bias renamed, value heads reordered from grouped to tiled);
 *  - tokenizer_ref.json's ids decode, through the GGUF's vocabulary, to the
 *    text Hugging Face decoded;
 *  - the VLM's M-RoPE position ids follow the rule the README states.
 * Skips (77) only when TMEM_SOURCE_DIR is unset (run by hand outside CTest).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "unit/json_mini.h"

static char g_data[1024];

static void data_path(char *buf, size_t cap, const char *rel) {
    snprintf(buf, cap, "%s/%s", g_data, rel);
}

/* A whole data file (caller frees); NULL (and a failed check) if absent. */
static char *load(const char *rel, size_t *len) {
    char path[1200];
    data_path(path, sizeof path, rel);
    char *b = read_file_all(path, len);
    CHECK_MSG(b != NULL, "cannot read %s", path);
    return b;
}

static jv *load_json(const char *rel) {
    size_t len = 0;
    char *text = load(rel, &len);
    if (!text) return NULL;
    jv *v = json_parse(text, len);
    free(text);
    CHECK_MSG(v != NULL, "%s is not valid JSON", rel);
    return v;
}

static bool str_eq(tmem_gguf_str s, const char *c) {
    return s.len == strlen(c) && memcmp(s.data, c, s.len) == 0;
}

static tmem_gguf *open_gguf(tmem_context *ctx, const char *rel) {
    char path[1200];
    data_path(path, sizeof path, rel);
    tmem_gguf_desc gd = {0};
    gd.path = path;
    tmem_gguf *g = NULL;
    tmem_gguf_error e;
    tmem_status st = tmem_gguf_open(ctx, &gd, &g, &e);
    CHECK_MSG(st == TMEM_OK, "%s: %s %s", rel, tmem_status_name(st), e.message);
    return st == TMEM_OK ? g : NULL;
}

/* ---- GGUF vs gguf-py's manifest ---------------------------------------- */

static uint32_t ggml_type_of(const char *name) {
    static const struct { const char *name; uint32_t id; } types[] = {
        {"F32", TMEM_GGML_F32}, {"F16", TMEM_GGML_F16}, {"Q8_0", TMEM_GGML_Q8_0},
        {"BF16", TMEM_GGML_BF16}, {"Q4_K", TMEM_GGML_Q4_K}, {"Q6_K", TMEM_GGML_Q6_K},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(types[i].name, name)) return types[i].id;
    return TMEM_GGML_TYPE_LIMIT;
}

/* One scalar (or array element) against the manifest's JSON value. */
static bool value_matches(const tmem_gguf_value *v, const jv *want) {
    switch (v->type) {
    case TMEM_GGUF_STRING:
        return want->kind == JV_STR && str_eq(v->v.s, want->str);
    case TMEM_GGUF_BOOL:
        return want->kind == JV_BOOL && v->v.b == (want->num != 0);
    case TMEM_GGUF_FLOAT32:
        return want->kind == JV_NUM && (float)v->v.f == (float)want->num;
    case TMEM_GGUF_FLOAT64:
        return want->kind == JV_NUM && v->v.f == want->num;
    case TMEM_GGUF_INT8: case TMEM_GGUF_INT16: case TMEM_GGUF_INT32: case TMEM_GGUF_INT64:
        return want->kind == JV_NUM && (double)v->v.i == want->num;
    default:
        return want->kind == JV_NUM && (double)v->v.u == want->num;
    }
}

static void check_kv(const tmem_gguf *g, const char *file, const char *key, const jv *want) {
    uint64_t index = 0;
    tmem_gguf_value v;
    tmem_status st = tmem_gguf_find(g, key, &index, &v);
    CHECK_MSG(st == TMEM_OK, "%s: key %s missing", file, key);
    if (st != TMEM_OK || !want) return;
    if (v.type != TMEM_GGUF_ARRAY) {
        CHECK_MSG(value_matches(&v, want), "%s: key %s differs from the manifest", file, key);
        return;
    }
    /* arrays: the whole list, or {array_len, first} for long ones */
    const jv *items = want->kind == JV_ARR ? want : jv_get(want, "first");
    uint64_t count = want->kind == JV_ARR ? want->n : (uint64_t)jv_num(jv_get(want, "array_len"));
    CHECK_MSG(items && v.v.array.count == count, "%s: array %s has %llu items, manifest %llu",
              file, key, (unsigned long long)v.v.array.count, (unsigned long long)count);
    if (!items) return;
    for (uint64_t i = 0; i < items->n && i < v.v.array.count; i++) {
        tmem_gguf_value e;
        CHECK_OK(tmem_gguf_array_get(g, index, i, &e));
        CHECK_MSG(value_matches(&e, items->items[i]), "%s: %s[%llu] differs", file, key,
                  (unsigned long long)i);
    }
}

/* gguf-py's offsets are absolute; ours are relative to the data section. */
static void check_tensor(const tmem_gguf *g, uint64_t data_offset, const char *file,
                         const jv *want) {
    const char *name = jv_get(want, "name")->str;
    tmem_gguf_tensor t;
    tmem_status st = tmem_gguf_tensor_find(g, name, &t);
    CHECK_MSG(st == TMEM_OK, "%s: tensor %s missing", file, name);
    if (st != TMEM_OK) return;
    CHECK_MSG(t.type == ggml_type_of(jv_get(want, "type")->str), "%s: %s type %u", file, name,
              t.type);
    const jv *ne = jv_get(want, "ne");
    CHECK_MSG(t.n_dims == ne->n, "%s: %s has %u dims", file, name, t.n_dims);
    for (size_t d = 0; d < ne->n && d < 4; d++)
        CHECK_MSG(t.dims[d] == (uint64_t)ne->items[d]->num, "%s: %s ne[%zu] = %llu", file, name,
                  d, (unsigned long long)t.dims[d]);
    CHECK_MSG(data_offset + t.offset == (uint64_t)jv_num(jv_get(want, "offset")),
              "%s: %s offset", file, name);
}

static void test_gguf_files_match_manifest(void) {
    jv *manifest = load_json("llamacpp/manifest.json");
    REQUIRE(manifest && manifest->kind == JV_OBJ);
    CHECK(manifest->n == 6);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    for (size_t f = 0; f < manifest->n; f++) {
        const char *file = manifest->keys[f];
        const jv *entry = manifest->items[f];
        char rel[256];
        snprintf(rel, sizeof rel, "llamacpp/%s", file);
        tmem_gguf *g = open_gguf(ctx, rel);
        if (!g) continue;
        tmem_gguf_info info;
        CHECK_OK(tmem_gguf_get_info(g, &info));
        const jv *kv = jv_get(entry, "kv"), *tensors = jv_get(entry, "tensors");
        CHECK_MSG(info.file_size == (uint64_t)jv_num(jv_get(entry, "size")), "%s size", file);
        CHECK_MSG(info.kv_count == kv->n, "%s: %llu keys, manifest %zu", file,
                  (unsigned long long)info.kv_count, kv->n);
        CHECK_MSG(info.tensor_count == tensors->n, "%s: %llu tensors, manifest %zu", file,
                  (unsigned long long)info.tensor_count, tensors->n);
        for (size_t i = 0; i < kv->n; i++)
            check_kv(g, file, kv->keys[i], jv_get(kv->items[i], "value"));
        for (size_t i = 0; i < tensors->n; i++)
            check_tensor(g, info.data_offset, file, tensors->items[i]);
        tmem_gguf_close(g);
    }
    tmem_context_destroy(ctx);
    jv_free(manifest);
}

/* ---- raw reference files vs ref.json ------------------------------------ */

typedef struct raw_f32 {
    float *v;
    size_t n;
} raw_f32;

/* Loads files.<key> of a ref.json; checks size == prod(shape) * 4 and finiteness. */
static raw_f32 load_raw(const char *model, const jv *ref, const char *key) {
    raw_f32 r = {NULL, 0};
    const jv *entry = jv_get(jv_get(ref, "files"), key);
    CHECK_MSG(entry != NULL, "%s: ref.json has no files.%s", model, key);
    if (!entry) return r;
    const jv *shape = jv_get(entry, "shape");
    size_t want = 1;
    for (size_t i = 0; i < shape->n; i++) want *= (size_t)shape->items[i]->num;
    char rel[256];
    snprintf(rel, sizeof rel, "%s/%s", model, jv_get(entry, "file")->str);
    size_t len = 0;
    char *bytes = load(rel, &len);
    if (!bytes) return r;
    CHECK_MSG(len == want * 4, "%s: %zu bytes, shape says %zu", rel, len, want * 4);
    r.n = len / 4;
    r.v = malloc(r.n * sizeof *r.v + 1);
    memcpy(r.v, bytes, r.n * 4);      /* little-endian host assumed, as elsewhere */
    free(bytes);
    bool finite = true;
    if (strstr(rel, ".f32"))
        for (size_t i = 0; i < r.n; i++) finite = finite && isfinite(r.v[i]);
    CHECK_MSG(finite, "%s holds a non-finite value", rel);
    return r;
}

static double max_abs_of(raw_f32 a) {
    double m = 0;
    for (size_t i = 0; i < a.n; i++) m = fmax(m, fabs(a.v[i]));
    return m;
}

static double max_abs_diff_of(raw_f32 a, raw_f32 b) {
    double m = 0;
    for (size_t i = 0; i < a.n && i < b.n; i++) m = fmax(m, fabs((double)a.v[i] - b.v[i]));
    return m;
}

/* A recorded figure is reproduced (f32 maxima printed through double). */
static void check_figure(const char *model, const jv *ref, const char *key, double got) {
    double want = jv_num(jv_get(ref, key));
    CHECK_MSG((float)want == (float)got, "%s: %s = %.9g, recomputed %.9g", model, key, want, got);
}

static void check_text_model(const char *model, size_t n_layers) {
    char rel[256];
    snprintf(rel, sizeof rel, "%s/ref.json", model);
    jv *ref = load_json(rel);
    REQUIRE(ref);
    raw_f32 prefill = load_raw(model, ref, "prefill_logits");
    raw_f32 decode = load_raw(model, ref, "decode_logits");
    raw_f32 chunked = load_raw(model, ref, "chunked_logits");
    raw_f32 hidden = load_raw(model, ref, "hidden_states");
    size_t T = (size_t)jv_num(jv_get(ref, "n_tokens"));
    size_t V = (size_t)jv_num(jv_get(ref, "n_vocab"));
    size_t H = (size_t)jv_num(jv_get(ref, "hidden_size"));
    CHECK(jv_get(ref, "tokens")->n == T);
    CHECK(prefill.n == T * V && decode.n == T * V && chunked.n == T * V);
    CHECK(hidden.n == (n_layers + 2) * T * H);
    double top = max_abs_of(prefill);
    check_figure(model, ref, "max_abs_logit", top);
    double d_dec = max_abs_diff_of(decode, prefill), d_chk = max_abs_diff_of(chunked, prefill);
    check_figure(model, ref, "max_abs_diff_decode_vs_prefill", d_dec);
    check_figure(model, ref, "max_abs_diff_chunked_vs_prefill", d_chk);
    /* the reference agrees with itself far inside the parity tolerance */
    CHECK(d_dec <= 1e-4 * top && d_chk <= 1e-4 * top);
    CHECK(top > 1.0);              /* not a degenerate, all-tiny model */
    /* the last hidden row set (final norm output) is not the layer output */
    CHECK(memcmp(hidden.v + (n_layers + 1) * T * H, hidden.v + n_layers * T * H,
                 T * H * 4) != 0);
    free(prefill.v); free(decode.v); free(chunked.v); free(hidden.v);
    jv_free(ref);
}

static void test_text_references(void) {
    check_text_model("qwen35-tiny-a", 4);
    check_text_model("qwen35-tiny-b", 5);
}

/* M-RoPE rule: text tokens get (p, p, p) and advance p by one; an image run
 * of gh x gw merged tokens gets (p, p + row, p + col) and advances p by
 * max(gh, gw). */
static void check_mrope_positions(const jv *ref, const int32_t *pos, size_t T) {
    const jv *ids = jv_get(ref, "input_ids");
    const jv *grid = jv_get(ref, "image_grid_thw");
    int64_t image_id = (int64_t)jv_num(jv_get(ref, "image_token_id"));
    int64_t gh = (int64_t)grid->items[1]->num / 2, gw = (int64_t)grid->items[2]->num / 2;
    int64_t p = 0;
    bool ok = true;
    for (size_t i = 0; i < T && ok;) {
        if ((int64_t)ids->items[i]->num != image_id) {
            ok = pos[i] == p && pos[T + i] == p && pos[2 * T + i] == p;
            p++, i++;
            continue;
        }
        for (int64_t k = 0; k < gh * gw; k++, i++)
            ok = ok && i < T && pos[i] == p && pos[T + i] == p + k / gw
                 && pos[2 * T + i] == p + k % gw;
        p += gh > gw ? gh : gw;
    }
    CHECK_MSG(ok, "position ids do not follow the documented M-RoPE rule");
}

static void test_vlm_references(void) {
    const char *model = "qwen35-tiny-vlm";
    jv *ref = load_json("qwen35-tiny-vlm/ref.json");
    REQUIRE(ref);
    size_t T = (size_t)jv_num(jv_get(ref, "n_tokens"));
    size_t n_patches = (size_t)jv_num(jv_get(ref, "n_patches"));
    size_t n_merged = (size_t)jv_num(jv_get(ref, "n_merged_tokens"));
    CHECK(n_patches == 48 && n_merged == 12 && T == jv_get(ref, "input_ids")->n);
    raw_f32 pixels = load_raw(model, ref, "pixel_values");
    raw_f32 stages = load_raw(model, ref, "vision_stages");
    raw_f32 embeds = load_raw(model, ref, "image_embeds");
    raw_f32 logits = load_raw(model, ref, "logits");
    raw_f32 decode = load_raw(model, ref, "decode_logits");
    raw_f32 pos = load_raw(model, ref, "position_ids");     /* int32 bytes, copied below */
    CHECK(pixels.n == n_patches * 3 * 2 * 16 * 16);
    CHECK(stages.n == 4 * n_patches * 32 && embeds.n == n_merged * 64);
    CHECK(logits.n == T * 512 && decode.n == T * 512 && pos.n == 3 * T);
    /* pixel values are (v / 255 - 0.5) / 0.5 of 8-bit samples: in [-1, 1] */
    CHECK(max_abs_of(pixels) <= 1.0);
    check_figure(model, ref, "max_abs_image_embed", max_abs_of(embeds));
    check_figure(model, ref, "max_abs_logit", max_abs_of(logits));
    check_figure(model, ref, "max_abs_diff_decode_vs_prefill", max_abs_diff_of(decode, logits));
    int32_t *pos_ids = malloc(pos.n * sizeof *pos_ids + 1);
    if (pos.v && pos_ids) {
        memcpy(pos_ids, pos.v, pos.n * 4);
        check_mrope_positions(ref, pos_ids, T);
    }
    free(pos_ids);
    free(pixels.v); free(stages.v); free(embeds.v); free(logits.v); free(decode.v);
    free(pos.v);
    jv_free(ref);
}

/* ---- safetensors vs llama.cpp's f32 GGUF of checkpoint A --------------- */

typedef struct safetensors {
    char *bytes;
    size_t len;
    jv *header;
    size_t data_start;
} safetensors;

static bool st_load(safetensors *st, const char *rel) {
    memset(st, 0, sizeof *st);
    st->bytes = load(rel, &st->len);
    if (!st->bytes || st->len < 8) return false;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | (unsigned char)st->bytes[i];
    CHECK_MSG(n <= st->len - 8, "%s: header length %llu", rel, (unsigned long long)n);
    if (n > st->len - 8) return false;
    st->header = json_parse(st->bytes + 8, (size_t)n);
    st->data_start = 8 + (size_t)n;
    CHECK_MSG(st->header != NULL, "%s: header is not JSON", rel);
    return st->header != NULL;
}

/* An F32 tensor's data and element count; NULL (check failed) if absent. */
static const float *st_f32(const safetensors *st, const char *name, size_t *n) {
    const jv *t = jv_get(st->header, name);
    CHECK_MSG(t != NULL, "safetensors: no %s", name);
    if (!t) return NULL;
    CHECK(!strcmp(jv_get(t, "dtype")->str, "F32"));
    const jv *off = jv_get(t, "data_offsets");
    size_t a = (size_t)off->items[0]->num, b = (size_t)off->items[1]->num;
    CHECK(a <= b && st->data_start + b <= st->len);
    *n = (b - a) / 4;
    return (const float *)(const void *)(st->bytes + st->data_start + a);
}

static const float *gguf_f32(const tmem_gguf *g, const char *name, size_t *n) {
    tmem_gguf_tensor t;
    tmem_status st = tmem_gguf_tensor_find(g, name, &t);
    CHECK_MSG(st == TMEM_OK && t.type == TMEM_GGML_F32, "gguf: no F32 %s", name);
    if (st != TMEM_OK) return NULL;
    *n = (size_t)t.n_elements;
    return t.data;
}

/* Checkpoint A: 2 key heads, 4 value heads (r = 2 per key head), dims 16. */
enum { A_NK = 2, A_NV = 4, A_R = A_NV / A_NK, A_DK = 16, A_DV = 16 };

/* Value head `tiled` of llama.cpp's order is HF's head (tiled % nk) * r + tiled / nk. */
static size_t hf_head_of_tiled(size_t tiled) {
    return (tiled % A_NK) * A_R + tiled / A_NK;
}

static void test_llamacpp_transforms(void) {
    safetensors st;
    if (!st_load(&st, "qwen35-tiny-a/model.safetensors")) { free(st.bytes); return; }
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_gguf *g = open_gguf(ctx, "llamacpp/qwen35-tiny-a-f32.gguf");
    if (!g) { tmem_context_destroy(ctx); jv_free(st.header); free(st.bytes); return; }
    size_t n1 = 0, n2 = 0;
    const float *a, *b;
    /* copied unchanged: embeddings, MLP, attention q (with its gate) */
    static const char *same[][2] = {
        {"token_embd.weight", "model.embed_tokens.weight"},
        {"blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight"},
        {"blk.3.attn_q.weight", "model.layers.3.self_attn.q_proj.weight"},
        {"blk.0.ssm_norm.weight", "model.layers.0.linear_attn.norm.weight"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        a = gguf_f32(g, same[i][0], &n1);
        b = st_f32(&st, same[i][1], &n2);
        CHECK_MSG(a && b && n1 == n2 && !memcmp(a, b, n1 * 4), "%s != %s", same[i][0], same[i][1]);
    }
    /* (1 + w) norms are stored with the 1 added */
    a = gguf_f32(g, "blk.0.attn_norm.weight", &n1);
    b = st_f32(&st, "model.layers.0.input_layernorm.weight", &n2);
    bool ok = a && b && n1 == n2;
    for (size_t i = 0; ok && i < n1; i++) ok = a[i] == 1.0f + b[i];
    CHECK_MSG(ok, "attn_norm is not 1 + input_layernorm");
    /* ssm_a = -exp(A_log), ssm_dt.bias = dt_bias, both in tiled head order */
    a = gguf_f32(g, "blk.0.ssm_a", &n1);
    b = st_f32(&st, "model.layers.0.linear_attn.A_log", &n2);
    ok = a && b && n1 == A_NV && n2 == A_NV;
    for (size_t h = 0; ok && h < A_NV; h++) {
        float want = -expf(b[hf_head_of_tiled(h)]);
        ok = fabsf(a[h] - want) <= 1e-6f * fabsf(want);
    }
    CHECK_MSG(ok, "ssm_a is not -exp(A_log) in tiled order");
    a = gguf_f32(g, "blk.0.ssm_dt.bias", &n1);
    b = st_f32(&st, "model.layers.0.linear_attn.dt_bias", &n2);
    ok = a && b && n1 == A_NV && n2 == A_NV;
    for (size_t h = 0; ok && h < A_NV; h++) ok = a[h] == b[hf_head_of_tiled(h)];
    CHECK_MSG(ok, "ssm_dt.bias is not dt_bias in tiled order");
    /* attn_qkv: q and k rows as HF has them, the value rows by tiled head */
    a = gguf_f32(g, "blk.0.attn_qkv.weight", &n1);
    b = st_f32(&st, "model.layers.0.linear_attn.in_proj_qkv.weight", &n2);
    const size_t hidden = 64, qk_rows = 2 * A_NK * A_DK;
    ok = a && b && n1 == n2 && n1 == hidden * (qk_rows + A_NV * A_DV);
    if (ok) ok = !memcmp(a, b, qk_rows * hidden * 4);
    for (size_t h = 0; ok && h < A_NV; h++) {
        const float *got = a + (qk_rows + h * A_DV) * hidden;
        const float *want = b + (qk_rows + hf_head_of_tiled(h) * A_DV) * hidden;
        ok = !memcmp(got, want, A_DV * hidden * 4);
    }
    CHECK_MSG(ok, "attn_qkv value rows are not in tiled head order");
    /* tied embeddings: no output.weight */
    tmem_gguf_tensor t;
    CHECK_ST(tmem_gguf_tensor_find(g, "output.weight", &t), TMEM_E_NOT_FOUND);
    tmem_gguf_close(g);
    tmem_context_destroy(ctx);
    jv_free(st.header);
    free(st.bytes);
}

/* ---- tokenizer_ref.json through the GGUF vocabulary --------------------- */

/* GPT-2 byte-level alphabet: byte b is printed as code point byte_cp[b]. */
static void byte_alphabet(uint32_t byte_cp[256]) {
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; b++) {
        bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
        byte_cp[b] = printable ? b : next++;
    }
}

/* Appends the bytes a byte-level token string stands for; false if a code
 * point is outside the alphabet. */
static bool append_token_bytes(tmem_gguf_str tok, const uint32_t byte_cp[256], char *out,
                               size_t *n, size_t cap) {
    for (uint64_t i = 0; i < tok.len;) {
        unsigned char c = (unsigned char)tok.data[i];
        int extra = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
        uint32_t cp = extra == 0 ? c : c & (0x3Fu >> extra);
        for (int k = 1; k <= extra && i + (uint64_t)k < tok.len; k++)
            cp = cp << 6 | ((unsigned char)tok.data[i + (uint64_t)k] & 63u);
        i += (uint64_t)extra + 1;
        int b = -1;
        for (int x = 0; x < 256 && b < 0; x++) if (byte_cp[x] == cp) b = x;
        if (b < 0 || *n + 1 >= cap) return false;
        out[(*n)++] = (char)b;
    }
    return true;
}

static void test_tokenizer_reference_decodes(void) {
    jv *ref = load_json("tokenizer_ref.json");
    REQUIRE(ref);
    const jv *cases = jv_get(ref, "cases");
    CHECK(cases && cases->n >= 50);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_gguf *g = open_gguf(ctx, "llamacpp/qwen35-tiny-a-f32.gguf");
    if (!g) { tmem_context_destroy(ctx); jv_free(ref); return; }
    uint64_t kv_tokens = 0, kv_types = 0;
    tmem_gguf_value v;
    REQUIRE_OK(tmem_gguf_find(g, "tokenizer.ggml.tokens", &kv_tokens, &v));
    REQUIRE(v.v.array.count == 512);
    REQUIRE_OK(tmem_gguf_find(g, "tokenizer.ggml.token_type", &kv_types, &v));
    static tmem_gguf_str tokens[512];
    static int64_t types[512];
    tmem_gguf_array_iter it = {0};
    for (size_t i = 0; i < 512 && tmem_gguf_array_next(g, kv_tokens, &it, &v) == TMEM_OK; i++)
        tokens[i] = v.v.s;
    for (size_t i = 0; i < 512; i++) {
        CHECK_OK(tmem_gguf_array_get(g, kv_types, i, &v));
        types[i] = v.v.i;
    }
    /* the specials sit at the ids the README lists, as CONTROL (3) tokens */
    const jv *specials = jv_get(ref, "specials");
    CHECK(specials && specials->n == 7);
    for (size_t i = 0; specials && i < specials->n; i++) {
        size_t id = (size_t)specials->items[i]->num;
        CHECK_MSG(id == 505 + i && str_eq(tokens[id], specials->keys[i]) && types[id] == 3,
                  "special %s at %zu", specials->keys[i], id);
    }
    uint32_t byte_cp[256];
    byte_alphabet(byte_cp);
    static char text[16384];
    for (size_t c = 0; cases && c < cases->n; c++) {
        const jv *ids = jv_get(cases->items[c], "ids");
        const char *want = jv_get(cases->items[c], "decoded")->str;
        size_t n = 0;
        bool ok = true;
        for (size_t i = 0; ok && i < ids->n; i++) {
            size_t id = (size_t)ids->items[i]->num;
            ok = id < 505 + 7;
            if (ok && types[id] == 3) {
                ok = n + tokens[id].len < sizeof text;
                if (ok) memcpy(text + n, tokens[id].data, tokens[id].len), n += tokens[id].len;
            } else if (ok) {
                ok = append_token_bytes(tokens[id], byte_cp, text, &n, sizeof text);
            }
        }
        CHECK_MSG(ok && n == strlen(want) && !memcmp(text, want, n),
                  "case %zu: GGUF vocabulary decodes to something else", c);
    }
    tmem_gguf_close(g);
    tmem_context_destroy(ctx);
    jv_free(ref);
}

int main(void) {
    const char *src = getenv("TMEM_SOURCE_DIR");
    if (!src || !*src) {
        printf("SKIP: TMEM_SOURCE_DIR is not set (run through ctest)\n");
        return 77;
    }
    snprintf(g_data, sizeof g_data, "%s/tests/data", src);
    RUN(test_gguf_files_match_manifest);
    RUN(test_text_references);
    RUN(test_vlm_references);
    RUN(test_llamacpp_transforms);
    RUN(test_tokenizer_reference_decodes);
    return tmem_test_finish();
}

/* tmrt_convert on small Qwen3.5 checkpoints written by this test (config.json
 * + safetensors bytes from C): names, shapes, types and every layout
 * transform checked numerically against an independent formulation (V heads
 * grouped -> tiled, A_log -> -exp, +1 folded into the RMSNorm weights but not
 * the gated norm, conv1d squeezed, q_proj kept interleaved), the metadata,
 * sharded = single-file, the qwen3_5 full config = the text config, f16 and
 * bf16 outputs, the tokenizer, hostile checkpoints (clear errors naming the
 * tensor or field, no output left), and tmrt_gen (deterministic, the same
 * layout, plausible values). */
#include "harness.h"
#include "st_write.h"
#include "tmemrt/convert.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The test shape: 2 key heads, 6 value heads (the reorder matters and is not an involution). */
enum { L = 4, E = 32, FF = 48, V = 40, NH = 2, NKV = 1, HD = 16, KH = 2, KD = 8, VH = 6, VD = 8, CK = 4 };
enum { R = VH / KH, QK = 2 * KH * KD, VDIM = VH * VD, CONV = QK + VDIM };
static const bool rec[L] = {true, false, true, true}; /* not periodic */
static bool layer_rec[L];                              /* the checkpoint being written */

static char dir[400];

typedef struct src_t {
    char name[112];
    int nd;
    uint64_t shape[3];
    float *v;
    uint64_t n;
} src_t;

static src_t srcs[128];
static int n_src;

static float val(int tid, uint64_t i) { return (float)((int)((i * 7 + (uint64_t)tid * 13) % 97) - 48) / 32.0f; }

static void add_src(const char *name, int nd, uint64_t a, uint64_t b, uint64_t c) {
    src_t *s = &srcs[n_src];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->nd = nd;
    s->shape[0] = a;
    s->shape[1] = b;
    s->shape[2] = c;
    s->n = a * (nd > 1 ? b : 1) * (nd > 2 ? c : 1);
    s->v = malloc(s->n * sizeof(float));
    for (uint64_t i = 0; i < s->n; i++) s->v[i] = val(n_src, i);
    n_src++;
}

static void build_sources(bool tied) {
    for (int i = 0; i < n_src; i++) free(srcs[i].v);
    n_src = 0;
    char nm[112];
    add_src("model.embed_tokens.weight", 2, V, E, 0);
    for (int l = 0; l < L; l++) {
#define P(suffix) (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix), nm)
        add_src(P("input_layernorm.weight"), 1, E, 0, 0);
        add_src(P("post_attention_layernorm.weight"), 1, E, 0, 0);
        add_src(P("mlp.gate_proj.weight"), 2, FF, E, 0);
        add_src(P("mlp.up_proj.weight"), 2, FF, E, 0);
        add_src(P("mlp.down_proj.weight"), 2, E, FF, 0);
        if (layer_rec[l]) {
            add_src(P("linear_attn.in_proj_qkv.weight"), 2, CONV, E, 0);
            add_src(P("linear_attn.in_proj_z.weight"), 2, VDIM, E, 0);
            add_src(P("linear_attn.in_proj_b.weight"), 2, VH, E, 0);
            add_src(P("linear_attn.in_proj_a.weight"), 2, VH, E, 0);
            add_src(P("linear_attn.conv1d.weight"), 3, CONV, 1, CK);
            add_src(P("linear_attn.dt_bias"), 1, VH, 0, 0);
            add_src(P("linear_attn.A_log"), 1, VH, 0, 0);
            add_src(P("linear_attn.norm.weight"), 1, VD, 0, 0);
            add_src(P("linear_attn.out_proj.weight"), 2, E, VDIM, 0);
        } else {
            add_src(P("self_attn.q_proj.weight"), 2, 2 * NH * HD, E, 0);
            add_src(P("self_attn.k_proj.weight"), 2, NKV * HD, E, 0);
            add_src(P("self_attn.v_proj.weight"), 2, NKV * HD, E, 0);
            add_src(P("self_attn.o_proj.weight"), 2, E, NH * HD, 0);
            add_src(P("self_attn.q_norm.weight"), 1, HD, 0, 0);
            add_src(P("self_attn.k_norm.weight"), 1, HD, 0, 0);
        }
#undef P
    }
    add_src("model.norm.weight", 1, E, 0, 0);
    if (!tied) add_src("lm_head.weight", 2, V, E, 0);
}

static const src_t *src(const char *name) {
    for (int i = 0; i < n_src; i++)
        if (!strcmp(srcs[i].name, name)) return &srcs[i];
    return NULL;
}

/* ---- writing a checkpoint directory ---- */

typedef struct ckpt_opts {
    const char *dtype;        /* "F32", "BF16" */
    bool full_config;         /* qwen3_5 with text_config, model.language_model. prefix */
    bool sharded;
    bool tied;
    const char *skip;         /* leave this tensor out */
    const char *extra;        /* add this (unknown) tensor */
    const char *reshape;      /* give this tensor a wrong shape */
    const char *nan;          /* put a NaN into this tensor */
    const char *big;          /* put 1e6 (beyond f16) into this tensor */
    const char *bad_dtype;    /* store this one as I32 */
    const char *config_override; /* replace config.json entirely */
    bool periodic;            /* layer_types every 2nd full attention */
} ckpt_opts;

static void bf16_bytes(const float *v, uint64_t n, uint16_t *out) {
    for (uint64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        out[i] = (uint16_t)(u >> 16); /* the test values are exact in bf16 */
    }
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void write_config(const ckpt_opts *o) {
    char path[512], text[4096], types[256] = "";
    for (int l = 0; l < L; l++) {
        bool r = o->periodic ? (l + 1) % 2 != 0 : rec[l];
        strcat(types, l ? "," : "");
        strcat(types, r ? "\"linear_attention\"" : "\"full_attention\"");
    }
    char inner[3072];
    snprintf(inner, sizeof inner,
             "\"model_type\":\"qwen3_5_text\",\"hidden_size\":%d,\"intermediate_size\":%d,\"num_hidden_layers\":%d,"
             "\"num_attention_heads\":%d,\"num_key_value_heads\":%d,\"head_dim\":%d,\"vocab_size\":%d,"
             "\"max_position_embeddings\":4096,\"rms_norm_eps\":1e-06,\"tie_word_embeddings\":%s,"
             "\"linear_conv_kernel_dim\":%d,\"linear_key_head_dim\":%d,\"linear_value_head_dim\":%d,"
             "\"linear_num_key_heads\":%d,\"linear_num_value_heads\":%d,\"layer_types\":[%s],"
             "\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":10000000,\"partial_rotary_factor\":0.25,"
             "\"mrope_section\":[1,1,0],\"mrope_interleaved\":true},\"eos_token_id\":7,\"attention_bias\":false",
             E, FF, L, NH, NKV, HD, V, o->tied ? "true" : "false", CK, KD, VD, KH, VH, types);
    if (o->full_config)
        snprintf(text, sizeof text, "{\"architectures\":[\"Qwen3_5ForConditionalGeneration\"],\"model_type\":\"qwen3_5\","
                 "\"text_config\":{%s},\"vision_config\":{\"depth\":2},\"tie_word_embeddings\":%s}", inner,
                 o->tied ? "true" : "false");
    else snprintf(text, sizeof text, "{%s}", inner);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, o->config_override ? o->config_override : text);
}

static void clear_dir(void) {
    const char *files[] = {"config.json", "model.safetensors", "model-00001-of-00002.safetensors",
                           "model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json",
                           "tokenizer_config.json", "out.gguf", "out2.gguf"};
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
}

static void write_ckpt(const ckpt_opts *o) {
    clear_dir();
    for (int l = 0; l < L; l++) layer_rec[l] = o->periodic ? (l + 1) % 2 != 0 : rec[l];
    build_sources(o->tied);
    write_config(o);
    st_build b[2];
    st_init(&b[0]);
    st_init(&b[1]);
    char index[16384];
    size_t il = (size_t)snprintf(index, sizeof index, "{\"metadata\":{\"total_size\":0},\"weight_map\":{");
    int first = 1;
    for (int i = 0; i < n_src; i++) {
        const src_t *s = &srcs[i];
        if (o->skip && !strcmp(s->name, o->skip)) continue;
        char name[140];
        if (o->full_config && !strncmp(s->name, "model.", 6))
            snprintf(name, sizeof name, "model.language_model.%.100s", s->name + 6);
        else snprintf(name, sizeof name, "%.110s", s->name);
        int shard = o->sharded ? i % 2 : 0;
        uint64_t shape[3] = {s->shape[0], s->shape[1], s->shape[2]};
        if (o->reshape && !strcmp(s->name, o->reshape)) shape[0] += 1;
        float *v = malloc((shape[0] * (s->nd > 1 ? shape[1] : 1) * (s->nd > 2 ? shape[2] : 1)) * sizeof *v);
        uint64_t n = shape[0] * (s->nd > 1 ? shape[1] : 1) * (s->nd > 2 ? shape[2] : 1);
        for (uint64_t k = 0; k < n; k++) v[k] = k < s->n ? s->v[k] : 0.5f;
        if (o->nan && !strcmp(s->name, o->nan)) v[n / 2] = NAN;
        if (o->big && !strcmp(s->name, o->big)) v[n / 2] = 1e6f;
        if (o->bad_dtype && !strcmp(s->name, o->bad_dtype)) {
            st_add(&b[shard], name, "I32", s->nd, shape, v, (size_t)n * 4);
        } else if (!strcmp(o->dtype, "BF16")) {
            uint16_t *h = malloc(n * 2);
            bf16_bytes(v, n, h);
            st_add(&b[shard], name, "BF16", s->nd, shape, h, (size_t)n * 2);
            free(h);
        } else {
            st_add(&b[shard], name, "F32", s->nd, shape, v, (size_t)n * 4);
        }
        free(v);
        il += (size_t)snprintf(index + il, sizeof index - il, "%s\"%s\":\"model-0000%d-of-00002.safetensors\"",
                               first ? "" : ",", name, shard + 1);
        first = 0;
    }
    if (o->extra) {
        float z[4] = {0};
        st_add_f32(&b[0], o->extra, 1, (uint64_t[]){4}, z);
        il += (size_t)snprintf(index + il, sizeof index - il, ",\"%s\":\"model-00001-of-00002.safetensors\"", o->extra);
    }
    if (o->full_config) { /* a vision tensor and an MTP one: skipped by the text conversion */
        float z[4] = {0};
        st_add_f32(&b[0], "model.visual.patch_embed.proj.weight", 1, (uint64_t[]){4}, z);
        st_add_f32(&b[0], "mtp.fc.weight", 1, (uint64_t[]){4}, z);
        il += (size_t)snprintf(index + il, sizeof index - il, ",\"model.visual.patch_embed.proj.weight\":"
                               "\"model-00001-of-00002.safetensors\",\"mtp.fc.weight\":\"model-00001-of-00002.safetensors\"");
    }
    snprintf(index + il, sizeof index - il, "}}");
    char path[512];
    for (int s = 0; s < (o->sharded ? 2 : 1); s++) {
        uint8_t *img;
        size_t n;
        st_finish(&b[s], &img, &n);
        if (o->sharded) snprintf(path, sizeof path, "%s/model-0000%d-of-00002.safetensors", dir, s + 1);
        else snprintf(path, sizeof path, "%s/model.safetensors", dir);
        CHECK(st_write_file(path, img, n) == 0);
        free(img);
        st_free(&b[s]);
    }
    if (o->sharded) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        write_text(path, index);
    }
}

/* ---- running the converter and reading its output ---- */

static tmem_status convert(tmem_weight_dtype dtype, const char *out_name, tmrt_convert_result *r,
                           tmrt_error *e) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx)) return TMEM_E_NO_MEMORY;
    char out[512];
    snprintf(out, sizeof out, "%s/%s", dir, out_name);
    tmrt_convert_desc d = {0};
    d.hf_dir = dir;
    d.out_path = out;
    d.dtype = dtype;
    tmem_status st = tmrt_convert(ctx, &d, r, e);
    tmem_context_destroy(ctx);
    return st;
}

typedef struct out_file {
    uint8_t *bytes;
    size_t n;
    tmem_gguf *g;
} out_file;

static bool load(const char *name, out_file *o) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    memset(o, 0, sizeof *o);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    o->n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    o->bytes = malloc(o->n);
    bool ok = fread(o->bytes, 1, o->n, f) == o->n;
    fclose(f);
    tmem_gguf_error e;
    return ok && tmem_gguf_open_memory(NULL, o->bytes, o->n, &o->g, &e) == TMEM_OK;
}

static void unload(out_file *o) {
    tmem_gguf_close(o->g);
    free(o->bytes);
}

static bool out_exists(const char *name) {
    char path[512];
    struct stat s;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &s) == 0;
}

/* Element i of a tensor as f32 (F32, F16, BF16). */
static float elem(const tmem_gguf_tensor *t, uint64_t i) {
    float x = NAN;
    const uint8_t *p = t->data;
    if (t->type == TMEM_GGML_F32) memcpy(&x, p + 4 * i, 4);
    else if (tmem_ggml_row_to_f32(t->type, p + 2 * i, &x, 1)) x = NAN;
    return x;
}

static bool get(const out_file *o, const char *name, tmem_gguf_tensor *t) {
    return tmem_gguf_tensor_find(o->g, name, t) == TMEM_OK;
}

/* Tiled position of grouped head g = k * R + r is r * KH + k. */
static uint64_t tiled(uint64_t g) { return (g % R) * KH + g / R; }

/* Check a rows- (cols = false) or columns-reordered matrix: rows/cols below
 * `start` in place, the rest in heads of hd moved grouped -> tiled. */
static void check_reordered(const out_file *o, const char *gname, const char *hname, uint64_t start, uint64_t hd,
                            bool cols, float add, bool neg_exp) {
    tmem_gguf_tensor t;
    const src_t *s = src(hname);
    REQUIRE(get(o, gname, &t) && s);
    uint64_t ne0 = t.dims[0], rows = t.n_elements / ne0, bad = 0;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < ne0; c++) {
            uint64_t sr = r, sc = c, idx = cols ? c : r;
            if (idx >= start) {
                uint64_t j = idx - start, g = j / hd, i = j % hd;
                /* find the grouped head that lands at tiled position g */
                uint64_t gs = 0;
                while (tiled(gs) != g) gs++;
                uint64_t from = start + gs * hd + i;
                if (cols) sc = from;
                else sr = from;
            }
            float want = s->v[sr * ne0 + sc];
            want = neg_exp ? -expf(want) : want + add;
            if (elem(&t, r * ne0 + c) != want) bad++;
        }
    CHECK_MSG(bad == 0, "%s: %llu elements not where the reorder puts them", gname, (unsigned long long)bad);
}

static void check_plain(const out_file *o, const char *gname, const char *hname, float add) {
    tmem_gguf_tensor t;
    const src_t *s = src(hname);
    REQUIRE(get(o, gname, &t) && s);
    CHECK(t.n_elements == s->n);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < s->n; i++) bad += elem(&t, i) != s->v[i] + add;
    CHECK_MSG(bad == 0, "%s: %llu elements differ", gname, (unsigned long long)bad);
}

static uint64_t meta_u(const out_file *o, const char *key) {
    uint64_t v = UINT64_MAX;
    CHECK_MSG(tmem_gguf_get_u64(o->g, key, &v) == TMEM_OK, "key %s", key);
    return v;
}

static void check_dims(const out_file *o, const char *name, uint32_t type, uint32_t nd, uint64_t d0, uint64_t d1) {
    tmem_gguf_tensor t;
    CHECK_MSG(get(o, name, &t), "missing %s", name);
    if (!get(o, name, &t)) return;
    CHECK_MSG(t.type == type && t.n_dims == nd && t.dims[0] == d0 && (nd < 2 || t.dims[1] == d1),
              "%s: type %u dims %u {%llu, %llu}", name, t.type, t.n_dims, (unsigned long long)t.dims[0],
              (unsigned long long)t.dims[1]);
}

static void test_layout_f32(void) {
    ckpt_opts o = {.dtype = "F32"};
    write_ckpt(&o);
    tmrt_convert_result r;
    tmrt_error e = {{0}};
    tmem_status st = convert(TMEM_WEIGHT_F32, "out.gguf", &r, &e);
    REQUIRE_OK(st);
    CHECK(r.n_layers == L && r.n_full_attention == 1 && r.n_linear_attention == 3 && !r.tokenizer);
    CHECK(r.tensors == (uint64_t)n_src); /* one GGUF tensor per HF tensor */
    out_file f;
    REQUIRE(load("out.gguf", &f));
    tmem_gguf_info info;
    REQUIRE_OK(tmem_gguf_get_info(f.g, &info));
    CHECK(info.tensor_count == r.tensors && info.file_size == r.file_bytes);
    /* names, shapes, types */
    check_dims(&f, "token_embd.weight", TMEM_GGML_F32, 2, E, V);
    check_dims(&f, "output.weight", TMEM_GGML_F32, 2, E, V);
    check_dims(&f, "output_norm.weight", TMEM_GGML_F32, 1, E, 0);
    check_dims(&f, "blk.0.attn_qkv.weight", TMEM_GGML_F32, 2, E, CONV);
    check_dims(&f, "blk.0.attn_gate.weight", TMEM_GGML_F32, 2, E, VDIM);
    check_dims(&f, "blk.0.ssm_beta.weight", TMEM_GGML_F32, 2, E, VH);
    check_dims(&f, "blk.0.ssm_alpha.weight", TMEM_GGML_F32, 2, E, VH);
    check_dims(&f, "blk.0.ssm_conv1d.weight", TMEM_GGML_F32, 2, CK, CONV);
    check_dims(&f, "blk.0.ssm_dt.bias", TMEM_GGML_F32, 1, VH, 0);
    check_dims(&f, "blk.0.ssm_a", TMEM_GGML_F32, 1, VH, 0);
    check_dims(&f, "blk.0.ssm_norm.weight", TMEM_GGML_F32, 1, VD, 0);
    check_dims(&f, "blk.0.ssm_out.weight", TMEM_GGML_F32, 2, VDIM, E);
    check_dims(&f, "blk.0.post_attention_norm.weight", TMEM_GGML_F32, 1, E, 0);
    check_dims(&f, "blk.1.attn_q.weight", TMEM_GGML_F32, 2, E, 2 * NH * HD);
    check_dims(&f, "blk.1.attn_k.weight", TMEM_GGML_F32, 2, E, NKV * HD);
    check_dims(&f, "blk.1.attn_output.weight", TMEM_GGML_F32, 2, NH * HD, E);
    check_dims(&f, "blk.1.attn_q_norm.weight", TMEM_GGML_F32, 1, HD, 0);
    check_dims(&f, "blk.3.ffn_down.weight", TMEM_GGML_F32, 2, FF, E);
    tmem_gguf_tensor t;
    CHECK(!get(&f, "blk.1.attn_qkv.weight", &t) && !get(&f, "blk.0.attn_q.weight", &t));
    /* transforms */
    check_plain(&f, "token_embd.weight", "model.embed_tokens.weight", 0);
    check_plain(&f, "output.weight", "lm_head.weight", 0);
    check_plain(&f, "blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight", 1);
    check_plain(&f, "blk.0.post_attention_norm.weight", "model.layers.0.post_attention_layernorm.weight", 1);
    check_plain(&f, "output_norm.weight", "model.norm.weight", 1);
    check_plain(&f, "blk.1.attn_q_norm.weight", "model.layers.1.self_attn.q_norm.weight", 1);
    check_plain(&f, "blk.1.attn_k_norm.weight", "model.layers.1.self_attn.k_norm.weight", 1);
    check_plain(&f, "blk.0.ssm_norm.weight", "model.layers.0.linear_attn.norm.weight", 0); /* gated: no +1 */
    check_plain(&f, "blk.1.attn_q.weight", "model.layers.1.self_attn.q_proj.weight", 0);
    check_plain(&f, "blk.2.ffn_gate.weight", "model.layers.2.mlp.gate_proj.weight", 0);
    check_reordered(&f, "blk.0.attn_qkv.weight", "model.layers.0.linear_attn.in_proj_qkv.weight", QK, VD, false, 0, false);
    check_reordered(&f, "blk.0.attn_gate.weight", "model.layers.0.linear_attn.in_proj_z.weight", 0, VD, false, 0, false);
    check_reordered(&f, "blk.0.ssm_beta.weight", "model.layers.0.linear_attn.in_proj_b.weight", 0, 1, false, 0, false);
    check_reordered(&f, "blk.2.ssm_alpha.weight", "model.layers.2.linear_attn.in_proj_a.weight", 0, 1, false, 0, false);
    check_reordered(&f, "blk.0.ssm_conv1d.weight", "model.layers.0.linear_attn.conv1d.weight", QK, VD, false, 0, false);
    check_reordered(&f, "blk.0.ssm_dt.bias", "model.layers.0.linear_attn.dt_bias", 0, 1, true, 0, false);
    check_reordered(&f, "blk.3.ssm_a", "model.layers.3.linear_attn.A_log", 0, 1, true, 0, true);
    check_reordered(&f, "blk.0.ssm_out.weight", "model.layers.0.linear_attn.out_proj.weight", 0, VD, true, 0, false);
    /* not the identity, and not its own inverse (KH = 2, R = 3) */
    CHECK(tiled(1) == 2 && tiled(2) == 4 && tiled(3) == 1);
    /* metadata */
    tmem_gguf_str s;
    REQUIRE_OK(tmem_gguf_get_str(f.g, "general.architecture", &s));
    CHECK(s.len == 6 && !memcmp(s.data, "qwen35", 6));
    CHECK(meta_u(&f, "qwen35.block_count") == L && meta_u(&f, "qwen35.embedding_length") == E);
    CHECK(meta_u(&f, "qwen35.feed_forward_length") == FF && meta_u(&f, "qwen35.context_length") == 4096);
    CHECK(meta_u(&f, "qwen35.attention.head_count") == NH && meta_u(&f, "qwen35.attention.head_count_kv") == NKV);
    CHECK(meta_u(&f, "qwen35.attention.key_length") == HD && meta_u(&f, "qwen35.attention.value_length") == HD);
    CHECK(meta_u(&f, "qwen35.rope.dimension_count") == HD / 4);
    CHECK(meta_u(&f, "qwen35.ssm.conv_kernel") == CK && meta_u(&f, "qwen35.ssm.state_size") == KD);
    CHECK(meta_u(&f, "qwen35.ssm.group_count") == KH && meta_u(&f, "qwen35.ssm.time_step_rank") == VH);
    CHECK(meta_u(&f, "qwen35.ssm.inner_size") == VDIM && meta_u(&f, "general.file_type") == 0);
    double d;
    REQUIRE_OK(tmem_gguf_get_f64(f.g, "qwen35.rope.freq_base", &d));
    CHECK(d == 1e7);
    REQUIRE_OK(tmem_gguf_get_f64(f.g, "qwen35.attention.layer_norm_rms_epsilon", &d));
    CHECK(fabs(d - 1e-6) < 1e-12);
    uint64_t kv;
    tmem_gguf_value v, el;
    REQUIRE_OK(tmem_gguf_find(f.g, "qwen35.rope.dimension_sections", &kv, &v));
    CHECK(v.type == TMEM_GGUF_ARRAY && v.v.array.type == TMEM_GGUF_INT32 && v.v.array.count == 4);
    int32_t want_sec[4] = {1, 1, 0, 0};
    for (int i = 0; i < 4; i++) CHECK(tmem_gguf_array_get(f.g, kv, (uint64_t)i, &el) == TMEM_OK && el.v.i == want_sec[i]);
    /* a pattern no interval describes: the per-layer key */
    REQUIRE_OK(tmem_gguf_find(f.g, "qwen35.attention.recurrent_layers", &kv, &v));
    CHECK(v.v.array.type == TMEM_GGUF_BOOL && v.v.array.count == L);
    for (int i = 0; i < L; i++) CHECK(tmem_gguf_array_get(f.g, kv, (uint64_t)i, &el) == TMEM_OK && el.v.b == rec[i]);
    CHECK(tmem_gguf_find(f.g, "qwen35.full_attention_interval", NULL, &v) == TMEM_E_NOT_FOUND);
    unload(&f);
}

/* Sharded + index and the full qwen3_5 config (text_config, the
 * language_model prefix, vision and MTP tensors skipped) give the same
 * bytes as one file with a text config. */
static void test_sharded_and_full_config(void) {
    ckpt_opts o = {.dtype = "BF16", .periodic = true};
    write_ckpt(&o);
    tmrt_error e = {{0}};
    tmrt_convert_result r;
    REQUIRE_OK(convert(TMEM_WEIGHT_F16, "out.gguf", &r, &e));
    out_file a;
    REQUIRE(load("out.gguf", &a));
    uint8_t *keep = malloc(a.n);
    size_t keep_n = a.n;
    memcpy(keep, a.bytes, a.n);
    /* periodic pattern: the interval key, and the library reads the shape */
    CHECK(meta_u(&a, "qwen35.full_attention_interval") == 2 && meta_u(&a, "general.file_type") == 1);
    tmem_model_desc m;
    tmem_gguf_error ge;
    REQUIRE_OK(tmem_model_from_gguf(a.g, &m, &ge));
    CHECK(m.n_layers == L && m.full_attn_interval == 2 && m.ssm_time_step_rank == VH && m.n_vocab == V);
    check_dims(&a, "blk.0.attn_qkv.weight", TMEM_GGML_F16, 2, E, CONV);  /* 2-D: f16 */
    check_dims(&a, "blk.0.ssm_conv1d.weight", TMEM_GGML_F32, 2, CK, CONV); /* conv1d stays f32 */
    check_dims(&a, "blk.0.attn_norm.weight", TMEM_GGML_F32, 1, E, 0);
    check_plain(&a, "blk.1.attn_q.weight", "model.layers.1.self_attn.q_proj.weight", 0); /* exact in f16 */
    unload(&a);

    ckpt_opts o2 = {.dtype = "BF16", .periodic = true, .sharded = true, .full_config = true};
    write_ckpt(&o2);
    REQUIRE_OK(convert(TMEM_WEIGHT_F16, "out.gguf", &r, &e));
    out_file b;
    REQUIRE(load("out.gguf", &b));
    CHECK_MSG(b.n == keep_n && !memcmp(b.bytes, keep, keep_n), "sharded full-config output differs (%zu vs %zu)",
              b.n, keep_n);
    unload(&b);
    free(keep);

    /* bf16 output keeps bf16 values exactly */
    REQUIRE_OK(convert(TMEM_WEIGHT_BF16, "out2.gguf", &r, &e));
    out_file c;
    REQUIRE(load("out2.gguf", &c));
    check_dims(&c, "blk.3.ffn_up.weight", TMEM_GGML_BF16, 2, E, FF);
    check_plain(&c, "blk.3.ffn_up.weight", "model.layers.3.mlp.up_proj.weight", 0);
    CHECK(meta_u(&c, "general.file_type") == 32);
    unload(&c);
}

static void test_tied(void) {
    ckpt_opts o = {.dtype = "F32", .tied = true, .periodic = true};
    write_ckpt(&o);
    tmrt_error e = {{0}};
    tmrt_convert_result r;
    REQUIRE_OK(convert(TMEM_WEIGHT_F32, "out.gguf", &r, &e));
    out_file f;
    REQUIRE(load("out.gguf", &f));
    tmem_gguf_tensor t;
    CHECK(!get(&f, "output.weight", &t) && get(&f, "token_embd.weight", &t));
    unload(&f);
}

#define EXPECT_FAIL(opts, want, frag)                                                                   \
    do {                                                                                                \
        write_ckpt(opts);                                                                               \
        tmrt_error e_ = {{0}};                                                                  \
        tmrt_convert_result r_;                                                                         \
        tmem_status s_ = convert(TMEM_WEIGHT_F16, "out.gguf", &r_, &e_);                                \
        CHECK_MSG(s_ == (want) && strstr(e_.message, frag), "got %s: '%.150s' (want '%.50s')",            \
                  tmem_status_name(s_), e_.message, frag);                                                                    \
        CHECK(!out_exists("out.gguf"));                                                                 \
    } while (0)

static void test_hostile(void) {
    ckpt_opts o = {.dtype = "F32", .skip = "model.layers.2.linear_attn.A_log"};
    EXPECT_FAIL(&o, TMEM_E_NOT_FOUND, "model.layers.2.linear_attn.A_log");
    o = (ckpt_opts){.dtype = "F32", .reshape = "model.layers.1.self_attn.k_proj.weight"};
    EXPECT_FAIL(&o, TMEM_E_CORRUPT, "model.layers.1.self_attn.k_proj.weight': shape [17, 32], but config.json implies [16, 32]");
    o = (ckpt_opts){.dtype = "F32", .nan = "model.layers.3.mlp.down_proj.weight"};
    EXPECT_FAIL(&o, TMEM_E_CORRUPT, "model.layers.3.mlp.down_proj.weight': non-finite");
    o = (ckpt_opts){.dtype = "F32", .big = "model.layers.0.mlp.up_proj.weight"}; /* converted to f16 */
    EXPECT_FAIL(&o, TMEM_E_CORRUPT, "model.layers.0.mlp.up_proj.weight': value 1e+06 at row");
    o = (ckpt_opts){.dtype = "BF16", .extra = "model.layers.1.self_attn.q_proj.bias"};
    EXPECT_FAIL(&o, TMEM_E_CORRUPT, "model.layers.1.self_attn.q_proj.bias' has no place");
    o = (ckpt_opts){.dtype = "F32", .bad_dtype = "model.norm.weight"};
    EXPECT_FAIL(&o, TMEM_E_UNSUPPORTED, "model.norm.weight': dtype I32");
    o = (ckpt_opts){.dtype = "F32", .config_override = "{\"model_type\":\"llama\",\"hidden_size\":32}"};
    EXPECT_FAIL(&o, TMEM_E_UNSUPPORTED, "model_type 'llama'");
    o = (ckpt_opts){.dtype = "F32", .config_override = "{\"model_type\":\"qwen3_5_text\",\"num_hidden_layers\":4}"};
    EXPECT_FAIL(&o, TMEM_E_NOT_FOUND, "missing field 'hidden_size'");
    o = (ckpt_opts){.dtype = "F32", .config_override = "{\"model_type\":\"qwen3_5_text\",}"};
    EXPECT_FAIL(&o, TMEM_E_PARSE, "config.json:1:");
    o = (ckpt_opts){.dtype = "F32", .full_config = true, .sharded = true};
    write_ckpt(&o);
    char path[512];
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
    FILE *f = fopen(path, "r+b"); /* break the second shard's header length */
    if (f) {
        fseek(f, 4, SEEK_SET);
        fputc(0x7F, f);
        fclose(f);
    }
    tmrt_error e = {{0}};
    tmrt_convert_result r;
    CHECK_ST(convert(TMEM_WEIGHT_F16, "out.gguf", &r, &e), TMEM_E_CORRUPT);
    CHECK_MSG(strstr(e.message, "model-00002-of-00002.safetensors") && strstr(e.message, "header length"), "%.200s",
              e.message);
    /* q8_0 without the kernels' quantizer: refused, nothing left */
    o = (ckpt_opts){.dtype = "F32"};
    write_ckpt(&o);
    tmem_status st = convert(TMEM_WEIGHT_Q8_0, "out.gguf", &r, &e);
    CHECK(st == TMEM_OK || st == TMEM_E_UNSUPPORTED);
    if (st) CHECK(!out_exists("out.gguf"));
}

static void test_tokenizer(void) {
    ckpt_opts o = {.dtype = "F32", .periodic = true};
    write_ckpt(&o);
    char path[512];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_text(path, "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":38,\"content\":\"<|im_end|>\",\"special\":true},"
                     "{\"id\":39,\"content\":\"<think>\",\"special\":false}],\"model\":{\"type\":\"BPE\",\"vocab\":"
                     "{\"a\":0,\"b\":1,\"ab\":2,\"\\u0120\":3,\"\\u0120a\":4},\"merges\":[\"a b\",[\"\\u0120\",\"a\"],"
                     "[\"x y\",\"z\"]]}}");
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    write_text(path, "{\"eos_token\":\"<|im_end|>\",\"add_bos_token\":false,\"chat_template\":\"{{ messages }}\"}");
    tmrt_error e = {{0}};
    tmrt_convert_result r;
    REQUIRE_OK(convert(TMEM_WEIGHT_F32, "out.gguf", &r, &e));
    CHECK(r.tokenizer);
    out_file f;
    REQUIRE(load("out.gguf", &f));
    tmem_gguf_str s;
    REQUIRE_OK(tmem_gguf_get_str(f.g, "tokenizer.ggml.model", &s));
    CHECK(s.len == 4 && !memcmp(s.data, "gpt2", 4));
    REQUIRE_OK(tmem_gguf_get_str(f.g, "tokenizer.ggml.pre", &s));
    CHECK(s.len == 6 && !memcmp(s.data, "qwen35", 6));
    uint64_t kv;
    tmem_gguf_value v, el;
    REQUIRE_OK(tmem_gguf_find(f.g, "tokenizer.ggml.tokens", &kv, &v));
    CHECK(v.v.array.count == V);
    REQUIRE_OK(tmem_gguf_array_get(f.g, kv, 4, &el));
    CHECK(el.v.s.len == 3 && !memcmp(el.v.s.data, "\xc4\xa0" "a", 3));
    REQUIRE_OK(tmem_gguf_array_get(f.g, kv, 5, &el));
    CHECK(el.v.s.len == 6 && !memcmp(el.v.s.data, "[PAD5]", 6));
    REQUIRE_OK(tmem_gguf_array_get(f.g, kv, 38, &el));
    CHECK(el.v.s.len == 10 && !memcmp(el.v.s.data, "<|im_end|>", 10));
    REQUIRE_OK(tmem_gguf_find(f.g, "tokenizer.ggml.token_type", &kv, &v));
    int32_t want_types[] = {1, 1, 1, 1, 1, 5};
    for (int i = 0; i < 6; i++) CHECK(tmem_gguf_array_get(f.g, kv, (uint64_t)i, &el) == TMEM_OK && el.v.i == want_types[i]);
    CHECK(tmem_gguf_array_get(f.g, kv, 38, &el) == TMEM_OK && el.v.i == 3); /* special: control */
    CHECK(tmem_gguf_array_get(f.g, kv, 39, &el) == TMEM_OK && el.v.i == 4); /* added, not special: user-defined */
    REQUIRE_OK(tmem_gguf_find(f.g, "tokenizer.ggml.merges", &kv, &v));
    CHECK(v.v.array.count == 3);
    REQUIRE_OK(tmem_gguf_array_get(f.g, kv, 1, &el));
    CHECK(el.v.s.len == 4 && !memcmp(el.v.s.data, "\xc4\xa0 a", 4));
    REQUIRE_OK(tmem_gguf_array_get(f.g, kv, 2, &el));
    CHECK(el.v.s.len == 6 && !memcmp(el.v.s.data, "x\xc4\xa0y z", 6)); /* space inside a part: U+0120 */
    CHECK(meta_u(&f, "tokenizer.ggml.eos_token_id") == 38); /* tokenizer_config wins over config.json's 7 */
    bool b = true;
    CHECK(tmem_gguf_get_bool(f.g, "tokenizer.ggml.add_bos_token", &b) == TMEM_OK && !b);
    REQUIRE_OK(tmem_gguf_get_str(f.g, "tokenizer.chat_template", &s));
    CHECK(s.len == 14 && !memcmp(s.data, "{{ messages }}", 14));
    unload(&f);
    /* a vocabulary id beyond vocab_size is refused, naming it */
    write_text(path, "{}");
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_text(path, "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":40},\"merges\":[]}}");
    CHECK_ST(convert(TMEM_WEIGHT_F32, "out.gguf", &r, &e), TMEM_E_CORRUPT);
    CHECK(strstr(e.message, "token id 40") != NULL);
}

/* tmrt_gen: same seed, same bytes; the layout of a converted checkpoint of
 * the same shape; values in the ranges documented. */
static void test_gen(void) {
    tmem_model_desc m = {0};
    snprintf(m.arch, sizeof m.arch, "qwen35");
    snprintf(m.name, sizeof m.name, "t");
    m.n_layers = L;
    m.full_attn_interval = 2;
    m.n_embd = E;
    m.n_ff = FF;
    m.n_vocab = V;
    m.n_ctx_train = 4096;
    m.n_head = NH;
    m.n_head_kv = NKV;
    m.head_dim_k = m.head_dim_v = HD;
    m.ssm_conv_kernel = CK;
    m.ssm_state_size = KD;
    m.ssm_group_count = KH;
    m.ssm_time_step_rank = VH;
    m.ssm_inner_size = VDIM;
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/out.gguf", dir);
    snprintf(p2, sizeof p2, "%s/out2.gguf", dir);
    tmrt_gen_desc d = {0};
    d.model = &m;
    d.seed = 5;
    d.dtype = TMEM_WEIGHT_F32;
    tmrt_convert_result r;
    tmrt_error e = {{0}};
    d.out_path = p1;
    REQUIRE_OK(tmrt_gen(ctx, &d, &r, &e));
    d.out_path = p2;
    REQUIRE_OK(tmrt_gen(ctx, &d, &r, &e));
    out_file a, b;
    REQUIRE(load("out.gguf", &a) && load("out2.gguf", &b));
    CHECK(a.n == b.n && !memcmp(a.bytes, b.bytes, a.n));
    unload(&b);
    d.seed = 6;
    REQUIRE_OK(tmrt_gen(ctx, &d, &r, &e));
    REQUIRE(load("out2.gguf", &b));
    tmem_gguf_tensor ta, tb;
    REQUIRE(get(&a, "blk.0.attn_qkv.weight", &ta) && get(&b, "blk.0.attn_qkv.weight", &tb));
    CHECK(memcmp(ta.data, tb.data, (size_t)ta.size) != 0);
    unload(&b);
    /* values */
    tmem_gguf_tensor t;
    REQUIRE(get(&a, "blk.0.ssm_a", &t));
    for (uint64_t i = 0; i < t.n_elements; i++) CHECK(elem(&t, i) <= -1.0f && elem(&t, i) >= -16.0f);
    REQUIRE(get(&a, "blk.1.attn_q_norm.weight", &t));
    for (uint64_t i = 0; i < t.n_elements; i++) CHECK(fabsf(elem(&t, i) - 1.0f) < 0.05f);
    REQUIRE(get(&a, "blk.2.ssm_dt.bias", &t));
    for (uint64_t i = 0; i < t.n_elements; i++) {
        float x = elem(&t, i), dt = log1pf(expf(x));
        CHECK(dt >= 0.999e-3f && dt <= 0.1001f);
    }
    REQUIRE(get(&a, "blk.0.ffn_up.weight", &t));
    double ss = 0;
    for (uint64_t i = 0; i < t.n_elements; i++) ss += (double)elem(&t, i) * elem(&t, i);
    double std = sqrt(ss / (double)t.n_elements);
    CHECK_MSG(fabs(std - 1.0 / sqrt(E)) < 0.02, "ffn_up std %g, want %g", std, 1.0 / sqrt(E));
    /* the same layout as a converted checkpoint of that shape */
    ckpt_opts o = {.dtype = "F32", .periodic = true};
    write_ckpt(&o);
    REQUIRE_OK(convert(TMEM_WEIGHT_F32, "out2.gguf", &r, &e));
    REQUIRE(load("out2.gguf", &b));
    tmem_gguf_info ia, ib;
    REQUIRE_OK(tmem_gguf_get_info(a.g, &ia));
    REQUIRE_OK(tmem_gguf_get_info(b.g, &ib));
    CHECK(ia.tensor_count == ib.tensor_count && ia.tensor_bytes == ib.tensor_bytes);
    for (uint64_t i = 0; i < ia.tensor_count; i++) {
        REQUIRE_OK(tmem_gguf_tensor_at(a.g, i, &ta));
        REQUIRE_OK(tmem_gguf_tensor_at(b.g, i, &tb));
        CHECK(ta.name.len == tb.name.len && !memcmp(ta.name.data, tb.name.data, ta.name.len));
        CHECK(ta.type == tb.type && ta.n_dims == tb.n_dims && !memcmp(ta.dims, tb.dims, sizeof ta.dims));
    }
    unload(&a);
    unload(&b);
    tmem_context_destroy(ctx);
}

/* Every OS call of a conversion (shards opened and mapped, the output
 * created and written) failed in turn: a clean error, no output file left,
 * nothing mapped or open afterwards (the sweep checks the live counts). */
typedef struct sweep_state {
    tmem_context *ctx;
} sweep_state;

static tmem_status sweep_scenario(void *u) {
    sweep_state *s = u;
    char out[512];
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    tmrt_convert_desc d = {0};
    d.hf_dir = dir;
    d.out_path = out;
    d.dtype = TMEM_WEIGHT_F16;
    tmrt_error e;
    return tmrt_convert(s->ctx, &d, NULL, &e);
}
static bool sweep_check(void *u, tmem_status st) {
    sweep_state *s = u;
    if (st != TMEM_OK && out_exists("out.gguf")) return false;
    return tmem_context_check(s->ctx) == TMEM_OK;
}
static void sweep_cleanup(void *u) {
    (void)u;
    char out[512];
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    unlink(out);
}

static void test_fault_sweep(void) {
    ckpt_opts o = {.dtype = "BF16", .sharded = true, .full_config = true};
    write_ckpt(&o);
    sweep_state s = {0};
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &s.ctx));
    tmem_test_sweep_desc d = {0};
    d.label = "tmrt_convert";
    d.scenario = sweep_scenario;
    d.cleanup = sweep_cleanup;
    d.check = sweep_check;
    d.user = &s;
    uint64_t n = tmem_test_fault_sweep_ex(&d);
    CHECK(n >= 6); /* 2 shards x (open, map) + create + write */
    tmem_context_destroy(s.ctx);
}

int main(void) {
    if (!tmem_test_tmpdir(dir, sizeof dir)) {
        printf("SKIP: no temporary directory\n");
        return 77;
    }
    RUN(test_layout_f32);
    RUN(test_sharded_and_full_config);
    RUN(test_tied);
    RUN(test_hostile);
    RUN(test_tokenizer);
    RUN(test_gen);
    RUN(test_fault_sweep);
    clear_dir();
    rmdir(dir);
    for (int i = 0; i < n_src; i++) free(srcs[i].v);
    return tmem_test_finish();
}

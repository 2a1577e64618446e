/*
 * mmproj files with llama.cpp's names and keys (what convert_hf_to_gguf.py
 * writes for Qwen3-VL / Qwen3.5 vision, projector "qwen3vl_merger"): random
 * ones for the presets (tmem gen --mmproj), streamed tensor by tensor so a
 * 0.8B-shaped encoder never sits in memory; and the vision presets.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "vision/vision_internal.h"

tmem_status tmrt_vision_preset(const char *name, tmrt_vision_config *out) {
    if (!name || !out) return TMEM_E_INVALID_ARG;
    static const struct {
        const char *name;
        tmrt_vision_config c;
    } presets[] = {
        /* Qwen3.5-0.8B's vision_config: 12 x 768, 12 heads, MLP 3072, out = text hidden 1024 */
        {"qwen3.5-0.8b",
         {12, 768, 12, 3072, 16, 2, 2, 1024, 2304, 1e-6f, {.5f, .5f, .5f}, {.5f, .5f, .5f},
          65536, 16777216}},
        /* Qwen3.5-2B (Qwen3-VL-2B's tower): 24 x 1024, 16 heads, MLP 4096, out 2048 */
        {"qwen3.5-2b",
         {24, 1024, 16, 4096, 16, 2, 2, 2048, 2304, 1e-6f, {.5f, .5f, .5f}, {.5f, .5f, .5f},
          65536, 16777216}},
        /* tests: 2 blocks of 64, head dim 16, a 4 x 4 position grid */
        {"tiny", {2, 64, 4, 128, 16, 2, 2, 96, 16, 1e-6f, {.5f, .5f, .5f}, {.5f, .5f, .5f}, 1024, 1048576}},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcasecmp(name, presets[i].name)) {
            *out = presets[i].c;
            return TMEM_OK;
        }
    return TMEM_E_NOT_FOUND;
}

/* splitmix64 -> uniform in [-1, 1) */
static float uniform(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

typedef enum fill { FILL_MATRIX, FILL_ONE, FILL_SMALL, FILL_POS } fill;

typedef struct spec {
    char name[64];
    uint32_t type, n_dims;
    uint64_t dims[4];
    fill how;
} spec;

typedef struct specs {
    spec *s;
    size_t n, cap;
} specs;

static bool push(specs *l, const char *name, uint32_t type, fill how, uint32_t n_dims, uint64_t d0, uint64_t d1,
                 uint64_t d2, uint64_t d3) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        spec *s = realloc(l->s, cap * sizeof *s);
        if (!s) return false;
        l->s = s, l->cap = cap;
    }
    spec *s = &l->s[l->n++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->type = type, s->n_dims = n_dims, s->how = how;
    s->dims[0] = d0, s->dims[1] = d1, s->dims[2] = d2, s->dims[3] = d3;
    return true;
}

static bool list_tensors(const tmrt_vision_config *c, uint32_t wt, specs *l) {
    uint64_t h = c->hidden, p = c->patch, m2 = (uint64_t)c->merge * c->merge, f = c->ff;
    uint32_t pt = wt == TMEM_GGML_Q8_0 ? TMEM_GGML_F16 : wt; /* conv and positions stay float */
    bool ok = push(l, "v.patch_embd.weight", pt, FILL_MATRIX, 4, p, p, 3, h) &&
              push(l, "v.patch_embd.weight.1", pt, FILL_MATRIX, 4, p, p, 3, h) &&
              push(l, "v.patch_embd.bias", TMEM_GGML_F32, FILL_SMALL, 1, h, 1, 1, 1) &&
              push(l, "v.position_embd.weight", pt, FILL_POS, 2, h, c->n_pos, 1, 1);
    char n[64];
    for (uint32_t i = 0; i < c->depth && ok; i++) {
#define N(fmt) (snprintf(n, sizeof n, "v.blk.%u." fmt, i), n)
        ok = push(l, N("ln1.weight"), TMEM_GGML_F32, FILL_ONE, 1, h, 1, 1, 1) &&
             push(l, N("ln1.bias"), TMEM_GGML_F32, FILL_SMALL, 1, h, 1, 1, 1) &&
             push(l, N("attn_qkv.weight"), wt, FILL_MATRIX, 2, h, 3 * h, 1, 1) &&
             push(l, N("attn_qkv.bias"), TMEM_GGML_F32, FILL_SMALL, 1, 3 * h, 1, 1, 1) &&
             push(l, N("attn_out.weight"), wt, FILL_MATRIX, 2, h, h, 1, 1) &&
             push(l, N("attn_out.bias"), TMEM_GGML_F32, FILL_SMALL, 1, h, 1, 1, 1) &&
             push(l, N("ln2.weight"), TMEM_GGML_F32, FILL_ONE, 1, h, 1, 1, 1) &&
             push(l, N("ln2.bias"), TMEM_GGML_F32, FILL_SMALL, 1, h, 1, 1, 1) &&
             push(l, N("ffn_up.weight"), wt, FILL_MATRIX, 2, h, f, 1, 1) &&
             push(l, N("ffn_up.bias"), TMEM_GGML_F32, FILL_SMALL, 1, f, 1, 1, 1) &&
             push(l, N("ffn_down.weight"), wt, FILL_MATRIX, 2, f, h, 1, 1) &&
             push(l, N("ffn_down.bias"), TMEM_GGML_F32, FILL_SMALL, 1, h, 1, 1, 1);
#undef N
    }
    return ok && push(l, "v.post_ln.weight", TMEM_GGML_F32, FILL_ONE, 1, h, 1, 1, 1) &&
           push(l, "v.post_ln.bias", TMEM_GGML_F32, FILL_SMALL, 1, h, 1, 1, 1) &&
           push(l, "mm.0.weight", wt, FILL_MATRIX, 2, h * m2, h * m2, 1, 1) &&
           push(l, "mm.0.bias", TMEM_GGML_F32, FILL_SMALL, 1, h * m2, 1, 1, 1) &&
           push(l, "mm.2.weight", wt, FILL_MATRIX, 2, h * m2, c->out_hidden, 1, 1) &&
           push(l, "mm.2.bias", TMEM_GGML_F32, FILL_SMALL, 1, c->out_hidden, 1, 1, 1);
}

static tmem_status set_u32(tmem_gguf_writer *w, const char *key, uint64_t v) {
    tmem_gguf_value val = {.type = TMEM_GGUF_UINT32};
    val.v.u = v;
    return tmem_gguf_writer_set(w, key, &val);
}

static tmem_status set_str(tmem_gguf_writer *w, const char *key, const char *s) {
    tmem_gguf_value val = {.type = TMEM_GGUF_STRING};
    val.v.s.data = s, val.v.s.len = strlen(s);
    return tmem_gguf_writer_set(w, key, &val);
}

static tmem_status set_f32(tmem_gguf_writer *w, const char *key, double f) {
    tmem_gguf_value val = {.type = TMEM_GGUF_FLOAT32};
    val.v.f = f;
    return tmem_gguf_writer_set(w, key, &val);
}

static tmem_status set_bool(tmem_gguf_writer *w, const char *key, bool b) {
    tmem_gguf_value val = {.type = TMEM_GGUF_BOOL};
    val.v.b = b;
    return tmem_gguf_writer_set(w, key, &val);
}

/* The keys llama.cpp's mmproj conversion writes for this tower. */
static tmem_status write_keys(tmem_gguf_writer *w, const tmrt_vision_config *c, uint32_t file_type) {
    uint32_t side = (uint32_t)lrint(sqrt((double)c->n_pos));
    uint8_t *deep = calloc(c->depth, 1);
    if (!deep) return TMEM_E_NO_MEMORY;
    tmem_status st;
    if ((st = set_str(w, "general.architecture", "clip")) || (st = set_str(w, "general.type", "mmproj")) ||
        (st = set_u32(w, "general.file_type", file_type)) ||
        (st = set_str(w, "clip.projector_type", "qwen3vl_merger")) ||
        (st = set_bool(w, "clip.has_vision_encoder", true)) || (st = set_bool(w, "clip.use_gelu", true)) ||
        (st = set_u32(w, "clip.vision.projection_dim", c->out_hidden)) ||
        (st = set_u32(w, "clip.vision.image_size", (uint64_t)side * c->patch)) ||
        (st = set_u32(w, "clip.vision.patch_size", c->patch)) ||
        (st = set_u32(w, "clip.vision.embedding_length", c->hidden)) ||
        (st = set_u32(w, "clip.vision.feed_forward_length", c->ff)) ||
        (st = set_u32(w, "clip.vision.block_count", c->depth)) ||
        (st = set_u32(w, "clip.vision.attention.head_count", c->heads)) ||
        (st = set_f32(w, "clip.vision.attention.layer_norm_epsilon", c->eps)) ||
        (st = set_u32(w, "clip.vision.spatial_merge_size", c->merge)) ||
        (st = set_u32(w, "clip.vision.image_min_pixels", c->min_pixels)) ||
        (st = set_u32(w, "clip.vision.image_max_pixels", c->max_pixels)) ||
        (st = tmem_gguf_writer_set_array(w, "clip.vision.image_mean", TMEM_GGUF_FLOAT32, c->mean, 3)) ||
        (st = tmem_gguf_writer_set_array(w, "clip.vision.image_std", TMEM_GGUF_FLOAT32, c->std, 3)) ||
        (st = tmem_gguf_writer_set_array(w, "clip.vision.is_deepstack_layers", TMEM_GGUF_BOOL, deep, c->depth))) {
    }
    free(deep);
    return st;
}

static uint32_t file_type_of(uint32_t t) {
    switch (t) {
    case TMEM_GGML_F32: return 0;
    case TMEM_GGML_F16: return 1;
    case TMEM_GGML_Q8_0: return 7;
    default: return 32; /* BF16 */
    }
}

tmem_status tmrt__vis_write_mmproj(const tmrt_vision_config *c, uint32_t wt, const char *path, tmrt__vis_row_fn rows,
                                   void *user, uint64_t *file_bytes, tmrt_error *err) {
    if (file_bytes) *file_bytes = 0;
    if (!c || !path || !rows) return tmrt__fail(err, TMEM_E_INVALID_ARG, "mmproj: NULL config, path or rows");
    if (wt != TMEM_GGML_F32 && wt != TMEM_GGML_F16 && wt != TMEM_GGML_BF16 && wt != TMEM_GGML_Q8_0)
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "mmproj weights: f32, f16, bf16 or q8_0");
    if (wt == TMEM_GGML_Q8_0 && (c->hidden % 32 || c->ff % 32))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "q8_0 needs hidden and MLP sizes that are multiples of 32");
    specs l = {0};
    tmem_gguf_writer *w = NULL;
    tmem_gguf_stream *s = NULL;
    float *row = NULL;
    void *q = NULL;
    tmem_status st = TMEM_OK;
    if (!list_tensors(c, wt, &l) || tmem_gguf_writer_create(NULL, 0, &w) != TMEM_OK) {
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
        goto out;
    }
    if ((st = write_keys(w, c, file_type_of(wt))) != TMEM_OK) goto fail;
    uint64_t widest = 0;
    for (size_t i = 0; i < l.n && st == TMEM_OK; i++) {
        uint64_t n_in = l.s[i].dims[0] * (l.s[i].n_dims == 4 ? l.s[i].dims[1] * l.s[i].dims[2] : 1);
        if (n_in > widest) widest = n_in;
        st = tmem_gguf_writer_add_tensor_info(w, l.s[i].name, l.s[i].type, l.s[i].n_dims, l.s[i].dims);
    }
    if (st != TMEM_OK) goto fail;
    row = malloc(widest * sizeof(float)), q = malloc(widest * sizeof(float));
    if (!row || !q) {
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
        goto out;
    }
    if ((st = tmem_gguf_stream_begin(w, path, &s)) != TMEM_OK) goto fail;
    for (size_t i = 0; i < l.n && st == TMEM_OK; i++) {
        const spec *t = &l.s[i];
        uint64_t n_in = t->dims[0] * (t->n_dims == 4 ? t->dims[1] * t->dims[2] : 1);
        uint64_t n_rows = t->n_dims == 1 ? 1 : t->dims[t->n_dims - 1];
        for (uint64_t r = 0; r < n_rows && st == TMEM_OK; r++) {
            if ((st = rows(user, t->name, (int)t->how, i, r, row, n_in, err))) goto out;
            if (!tmrt__kern_quantize_row(t->type, row, q, (int64_t)n_in)) {
                st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "cannot store %s as ggml type %u", t->name, t->type);
                goto out;
            }
            st = tmem_gguf_stream_write(s, q, tmrt__kern_row_bytes(t->type, (int64_t)n_in));
        }
    }
    if (st == TMEM_OK) {
        st = tmem_gguf_stream_finish(s, file_bytes);
        s = NULL;
    }
fail:
    if (st != TMEM_OK) (void)tmrt__fail(err, st, "%s: writing the mmproj failed: %s", path, tmem_status_name(st));
out:
    tmem_gguf_stream_abort(s);
    tmem_gguf_writer_destroy(w);
    free(l.s), free(row), free(q);
    return st;
}

/* Random rows: a fresh stream per tensor, so a file is reproducible from the seed. */
typedef struct random_rows {
    uint64_t seed, rng;
    size_t tensor;
    bool started;
} random_rows;

static tmem_status random_row(void *user, const char *name, int how, size_t tensor, uint64_t row, float *out,
                              uint64_t n, tmrt_error *err) {
    (void)name, (void)row, (void)err;
    random_rows *r = user;
    if (!r->started || tensor != r->tensor) {
        r->rng = r->seed * 0x100000001B3ull + tensor * 0x9E3779B97F4A7C15ull;
        r->tensor = tensor, r->started = true;
    }
    float scale = how == FILL_MATRIX ? sqrtf(3.0f / (float)n) : how == FILL_POS ? 0.5f : 0.05f;
    for (uint64_t k = 0; k < n; k++) out[k] = (how == FILL_ONE ? 1.0f : 0.0f) + scale * uniform(&r->rng);
    return TMEM_OK;
}

tmem_status tmrt_vision_write_random(const tmrt_vision_config *c, uint32_t ggml_type, uint64_t seed,
                                     const char *path, tmrt_error *err) {
    random_rows r = {seed, 0, 0, false};
    return tmrt__vis_write_mmproj(c, ggml_type, path, random_row, &r, NULL, err);
}

/*
 * Open an mmproj GGUF (llama.cpp's layout for Qwen3-VL / Qwen3.5 vision,
 * projector "qwen3vl_merger"): read the clip.vision.* keys, find every
 * tensor, check its type and shape against the config, and keep views into
 * the mapping (clean FILE pages; nothing is copied or dequantised).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/gguf_file.h"
#include "vision/vision_internal.h"

/* The first failure wins: st stays at it and later checks stop early. */
typedef struct loader {
    tmrt_vision *v;
    tmrt_error *err;
    tmem_status st;
} loader;

static uint32_t key_u32(loader *l, const char *key, bool required, uint32_t fallback) {
    uint64_t u;
    tmem_status st = tmem_gguf_get_u64(l->v->gguf, key, &u);
    if (st == TMEM_E_NOT_FOUND && !required) return fallback;
    if (st != TMEM_OK || u == 0 || u > (1u << 24)) {
        if (!l->st)
            l->st = tmrt__fail(l->err, st == TMEM_OK ? TMEM_E_CORRUPT : TMEM_E_NOT_FOUND, "mmproj: key %s %s", key,
                               st == TMEM_OK ? "out of range" : "missing");
        return 0;
    }
    return (uint32_t)u;
}

static void key_f32_array(loader *l, const char *key, float *out, uint32_t n, float fallback) {
    uint64_t index;
    tmem_gguf_value val;
    for (uint32_t i = 0; i < n; i++) out[i] = fallback;
    if (tmem_gguf_find(l->v->gguf, key, &index, &val) != TMEM_OK) return;
    if (val.type != TMEM_GGUF_ARRAY || val.v.array.count != n) {
        if (!l->st) l->st = tmrt__fail(l->err, TMEM_E_CORRUPT, "mmproj: key %s must be an array of %u numbers", key, n);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        tmem_gguf_value e;
        if (tmem_gguf_array_get(l->v->gguf, index, i, &e) != TMEM_OK ||
            (e.type != TMEM_GGUF_FLOAT32 && e.type != TMEM_GGUF_FLOAT64) || !isfinite(e.v.f)) {
            if (!l->st) l->st = tmrt__fail(l->err, TMEM_E_CORRUPT, "mmproj: key %s element %u is not a number", key, i);
            return;
        }
        out[i] = (float)e.v.f;
    }
}

/* A tensor of exactly these dims (d1 = 1 for vectors). */
static const tmem_gguf_tensor *tensor(loader *l, tmem_gguf_tensor *t, const char *name, uint64_t d0, uint64_t d1) {
    if (l->st) return NULL;
    if (tmem_gguf_tensor_find(l->v->gguf, name, t) != TMEM_OK) {
        l->st = tmrt__fail(l->err, TMEM_E_NOT_FOUND, "mmproj: tensor %s missing", name);
        return NULL;
    }
    /* ggml order: the last dimension counts rows (output channels), the
     * others make one row (v.patch_embd.weight is [p, p, 3, hidden]). */
    uint64_t rows = t->n_dims > 1 ? t->dims[t->n_dims - 1] : 1, per_row = rows ? t->n_elements / rows : 0;
    if (per_row != d0 || rows != d1) {
        l->st = tmrt__fail(l->err, TMEM_E_CORRUPT,
                           "mmproj: tensor %s has rows of %llu x %llu, the config needs %llu x %llu",
                           name, (unsigned long long)per_row, (unsigned long long)rows, (unsigned long long)d0,
                           (unsigned long long)d1);
        return NULL;
    }
    l->v->weight_bytes += t->size;
    return t;
}

static const float *vec(loader *l, const char *name, uint64_t n) {
    tmem_gguf_tensor t;
    if (!tensor(l, &t, name, n, 1)) return NULL;
    if (t.type != TMEM_GGML_F32) {
        l->st = tmrt__fail(l->err, TMEM_E_UNSUPPORTED, "mmproj: tensor %s must be F32 (norms and biases)", name);
        return NULL;
    }
    const float *p = t.data;
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(p[i])) {
            l->st = tmrt__fail(l->err, TMEM_E_CORRUPT, "mmproj: tensor %s holds a NaN or infinity at %llu", name,
                               (unsigned long long)i);
            return NULL;
        }
    return p;
}

static kern_wmat mat(loader *l, const char *name, uint64_t n_in, uint64_t n_out) {
    kern_wmat w = {0};
    tmem_gguf_tensor t;
    if (!tensor(l, &t, name, n_in, n_out)) return w;
    if (!tmrt__kern_type_supported(t.type, (int64_t)n_in)) {
        l->st = tmrt__fail(l->err, TMEM_E_UNSUPPORTED,
                           "mmproj: tensor %s: ggml type %u with rows of %llu is not supported",
                           name, t.type, (unsigned long long)n_in);
        return w;
    }
    w.data = t.data, w.type = t.type, w.n_in = (int64_t)n_in, w.n_out = (int64_t)n_out;
    w.row_bytes = tmrt__kern_row_bytes(t.type, (int64_t)n_in);
    return w;
}

static void load_block(loader *l, uint32_t i, vis_block *b) {
    const tmrt_vision_config *c = &l->v->cfg;
    char n[64];
#define NAME(fmt) (snprintf(n, sizeof n, "v.blk.%u." fmt, i), n)
    b->ln1_w = vec(l, NAME("ln1.weight"), c->hidden);
    b->ln1_b = vec(l, NAME("ln1.bias"), c->hidden);
    b->qkv = mat(l, NAME("attn_qkv.weight"), c->hidden, 3ull * c->hidden);
    b->qkv_b = vec(l, NAME("attn_qkv.bias"), 3ull * c->hidden);
    b->out = mat(l, NAME("attn_out.weight"), c->hidden, c->hidden);
    b->out_b = vec(l, NAME("attn_out.bias"), c->hidden);
    b->ln2_w = vec(l, NAME("ln2.weight"), c->hidden);
    b->ln2_b = vec(l, NAME("ln2.bias"), c->hidden);
    b->up = mat(l, NAME("ffn_up.weight"), c->hidden, c->ff);
    b->up_b = vec(l, NAME("ffn_up.bias"), c->ff);
    b->down = mat(l, NAME("ffn_down.weight"), c->ff, c->hidden);
    b->down_b = vec(l, NAME("ffn_down.bias"), c->hidden);
#undef NAME
}

tmem_status tmrt_vision_pixel_bounds(const tmem_gguf *g, uint32_t patch, uint32_t merge, uint64_t *min_pixels,
                                     uint64_t *max_pixels) {
    if (!g || !patch || !merge || !min_pixels || !max_pixels) return TMEM_E_INVALID_ARG;
    /* Absent from llama.cpp's own conversion: then llama.cpp's limits for
     * Qwen-VL projectors, 8 .. 4096 merged tokens. */
    uint64_t unit = (uint64_t)patch * patch * merge * merge, v[2] = {8 * unit, 4096 * unit};
    static const char *const keys[2] = {"clip.vision.image_min_pixels",
                                        "clip.vision.image_max_pixels"};
    for (int i = 0; i < 2; i++) {
        uint64_t u;
        tmem_status st = tmem_gguf_get_u64(g, keys[i], &u);
        if (st == TMEM_E_NOT_FOUND) continue;
        if (st != TMEM_OK || u == 0 || u > (1u << 24)) return TMEM_E_CORRUPT;
        v[i] = u;
    }
    if (v[0] > v[1]) return TMEM_E_CORRUPT;
    *min_pixels = v[0], *max_pixels = v[1];
    return TMEM_OK;
}

static void read_config(loader *l) {
    tmrt_vision_config *c = &l->v->cfg;
    tmem_gguf_str s;
    const char *want = "qwen3vl_merger";
    if ((tmem_gguf_get_str(l->v->gguf, "clip.projector_type", &s) != TMEM_OK &&
         tmem_gguf_get_str(l->v->gguf, "clip.vision.projector_type", &s) != TMEM_OK) ||
        s.len != strlen(want) || memcmp(s.data, want, s.len)) {
        l->st = tmrt__fail(l->err, TMEM_E_UNSUPPORTED,
                           "mmproj: clip.projector_type must be \"%s\" (Qwen3-VL / Qwen3.5 vision)", want);
        return;
    }
    bool has = false;
    if (tmem_gguf_get_bool(l->v->gguf, "clip.has_vision_encoder", &has) != TMEM_OK || !has) {
        l->st = tmrt__fail(l->err, TMEM_E_UNSUPPORTED, "mmproj: clip.has_vision_encoder is not true");
        return;
    }
    c->depth = key_u32(l, "clip.vision.block_count", true, 0);
    c->hidden = key_u32(l, "clip.vision.embedding_length", true, 0);
    c->ff = key_u32(l, "clip.vision.feed_forward_length", true, 0);
    c->heads = key_u32(l, "clip.vision.attention.head_count", true, 0);
    c->patch = key_u32(l, "clip.vision.patch_size", true, 0);
    c->merge = key_u32(l, "clip.vision.spatial_merge_size", false, 2);
    c->out_hidden = key_u32(l, "clip.vision.projection_dim", true, 0);
    c->temporal = 2; /* the Conv3d split in two: v.patch_embd.weight and .weight.1 */
    double eps = 1e-6;
    tmem_status st = tmem_gguf_get_f64(l->v->gguf, "clip.vision.attention.layer_norm_epsilon", &eps);
    if (((st != TMEM_OK && st != TMEM_E_NOT_FOUND) || !(eps > 0 && eps < 1)) && !l->st)
        l->st = tmrt__fail(l->err, TMEM_E_CORRUPT, "mmproj: clip.vision.attention.layer_norm_epsilon out of range");
    c->eps = (float)eps;
    key_f32_array(l, "clip.vision.image_mean", c->mean, 3, 0.5f);
    key_f32_array(l, "clip.vision.image_std", c->std, 3, 0.5f);
    for (int i = 0; i < 3 && !l->st; i++)
        if (!(c->std[i] > 0)) l->st = tmrt__fail(l->err, TMEM_E_CORRUPT,
                                                 "mmproj: clip.vision.image_std must be positive");
    if (!l->st && tmrt_vision_pixel_bounds(l->v->gguf, c->patch, c->merge, &c->min_pixels, &c->max_pixels))
        l->st = tmrt__fail(l->err, TMEM_E_CORRUPT,
                           "mmproj: clip.vision.image_min_pixels / image_max_pixels out of range");
    if (l->st) return;
    uint32_t hd = c->heads ? c->hidden / c->heads : 0;
    if (c->hidden % c->heads || hd % 4 || hd > 256 || c->merge > 8 || c->patch > 64)
        l->st = tmrt__fail(l->err, TMEM_E_CORRUPT,
                           "mmproj: inconsistent shape (hidden %u, heads %u: head dim must be a multiple of 4)",
                           c->hidden, c->heads);
}

static tmem_status load(tmrt_vision *v, tmrt_error *err) {
    loader l = {v, err, TMEM_OK};
    read_config(&l);
    const tmrt_vision_config *c = &v->cfg;
    if (!l.st) {
        uint64_t pp = 3ull * c->patch * c->patch, h = c->hidden, m2 = (uint64_t)c->merge * c->merge;
        v->patch0 = mat(&l, "v.patch_embd.weight", pp, h);
        v->patch1 = mat(&l, "v.patch_embd.weight.1", pp, h);
        v->patch_b = vec(&l, "v.patch_embd.bias", h);
        tmem_gguf_tensor t;
        if (!l.st && tmem_gguf_tensor_find(v->gguf, "v.position_embd.weight", &t) == TMEM_OK) {
            v->cfg.n_pos = (uint32_t)(t.n_dims == 2 ? t.dims[1] : 0);
            uint32_t side = (uint32_t)sqrt((double)v->cfg.n_pos);
            if (side * side != v->cfg.n_pos || side < 1)
                l.st = tmrt__fail(err, TMEM_E_CORRUPT, "mmproj: v.position_embd.weight has %u rows, not a square grid",
                                  v->cfg.n_pos);
        }
        v->pos = mat(&l, "v.position_embd.weight", h, v->cfg.n_pos);
        if (!l.st && v->pos.type != TMEM_GGML_F32 && v->pos.type != TMEM_GGML_F16 && v->pos.type != TMEM_GGML_BF16)
            l.st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "mmproj: v.position_embd.weight must be F32, F16 or BF16");
        v->post_w = vec(&l, "v.post_ln.weight", h);
        v->post_b = vec(&l, "v.post_ln.bias", h);
        v->mm0 = mat(&l, "mm.0.weight", h * m2, h * m2);
        v->mm0_b = vec(&l, "mm.0.bias", h * m2);
        v->mm2 = mat(&l, "mm.2.weight", h * m2, c->out_hidden);
        v->mm2_b = vec(&l, "mm.2.bias", c->out_hidden);
        v->blocks = l.st ? NULL : calloc(c->depth, sizeof *v->blocks);
        if (!l.st && !v->blocks) l.st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
        for (uint32_t i = 0; i < c->depth && !l.st; i++) load_block(&l, i, &v->blocks[i]);
    }
    return l.st;
}

tmem_status tmrt_vision_open(tmem_context *ctx, const tmrt_vision_desc *desc, tmrt_vision **out, tmrt_error *err) {
    if (out) *out = NULL;
    if (!desc || !desc->path || !out || (desc->memory == TMRT_MEMORY_TYPED && !ctx) ||
        (unsigned)desc->memory > TMRT_MEMORY_NAIVE || (desc->gpu && desc->memory != TMRT_MEMORY_TYPED))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "vision open: NULL path or output, a typed open without a "
                          "context, an unknown memory mode, or a gpu with naive memory");
    tmrt_vision *v = calloc(1, sizeof *v);
    if (!v) return tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory");
    v->memory = desc->memory;
    v->ctx = desc->memory == TMRT_MEMORY_TYPED ? ctx : NULL;
    tmem_status st = tmrt__gguf_open_in(ctx, desc->path, desc->memory, &v->gguf, &v->naive_bytes, err);
    if (st == TMEM_OK) st = load(v, err);
    if (st == TMEM_OK && desc->gpu) st = tmrt__vis_vk_open(v, desc->gpu, &v->gpu_enc, err);
    if (st != TMEM_OK) {
        tmrt_vision_close(v);
        return st;
    }
    *out = v;
    return TMEM_OK;
}

void tmrt_vision_close(tmrt_vision *v) {
    if (!v) return;
    tmrt__vis_vk_close(v->gpu_enc);
    tmem_gguf_close(v->gguf);
    free(v->naive_bytes);
    free(v->blocks);
    free(v);
}

const tmrt_vision_config *tmrt_vision_get_config(const tmrt_vision *v) { return v ? &v->cfg : NULL; }

uint64_t tmrt_vision_weight_bytes(const tmrt_vision *v) { return v ? v->weight_bytes : 0; }

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
#include "vision/vision_internal.h"

typedef struct loader {
    tmrt_vision *v;
    char *err;
    size_t cap;
    bool failed;
} loader;

static uint32_t key_u32(loader *l, const char *key, bool required, uint32_t fallback) {
    uint64_t u;
    tmem_status st = tmem_gguf_get_u64(l->v->gguf, key, &u);
    if (st == TMEM_E_NOT_FOUND && !required) return fallback;
    if (st != TMEM_OK || u == 0 || u > (1u << 24)) {
        if (!l->failed) vis_error(l->err, l->cap, "mmproj: key %s %s", key, st == TMEM_OK ? "out of range" : "missing");
        l->failed = true;
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
        if (!l->failed) vis_error(l->err, l->cap, "mmproj: key %s must be an array of %u numbers", key, n);
        l->failed = true;
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        tmem_gguf_value e;
        if (tmem_gguf_array_get(l->v->gguf, index, i, &e) != TMEM_OK ||
            (e.type != TMEM_GGUF_FLOAT32 && e.type != TMEM_GGUF_FLOAT64) || !isfinite(e.v.f)) {
            if (!l->failed) vis_error(l->err, l->cap, "mmproj: key %s element %u is not a number", key, i);
            l->failed = true;
            return;
        }
        out[i] = (float)e.v.f;
    }
}

/* A tensor of exactly these dims (d1 = 1 for vectors). */
static const tmem_gguf_tensor *tensor(loader *l, tmem_gguf_tensor *t, const char *name, uint64_t d0, uint64_t d1) {
    if (l->failed) return NULL;
    if (tmem_gguf_tensor_find(l->v->gguf, name, t) != TMEM_OK) {
        vis_error(l->err, l->cap, "mmproj: tensor %s missing", name);
        l->failed = true;
        return NULL;
    }
    /* ggml order: the last dimension counts rows (output channels), the
     * others make one row (v.patch_embd.weight is [p, p, 3, hidden]). */
    uint64_t rows = t->n_dims > 1 ? t->dims[t->n_dims - 1] : 1, per_row = rows ? t->n_elements / rows : 0;
    if (per_row != d0 || rows != d1) {
        vis_error(l->err, l->cap, "mmproj: tensor %s has rows of %llu x %llu, the config needs %llu x %llu", name,
                  (unsigned long long)per_row, (unsigned long long)rows, (unsigned long long)d0,
                  (unsigned long long)d1);
        l->failed = true;
        return NULL;
    }
    l->v->weight_bytes += t->size;
    return t;
}

static const float *vec(loader *l, const char *name, uint64_t n) {
    tmem_gguf_tensor t;
    if (!tensor(l, &t, name, n, 1)) return NULL;
    if (t.type != TMEM_GGML_F32) {
        vis_error(l->err, l->cap, "mmproj: tensor %s must be F32 (norms and biases)", name);
        l->failed = true;
        return NULL;
    }
    const float *p = t.data;
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(p[i])) {
            vis_error(l->err, l->cap, "mmproj: tensor %s holds a NaN or infinity at %llu", name, (unsigned long long)i);
            l->failed = true;
            return NULL;
        }
    return p;
}

static kern_wmat mat(loader *l, const char *name, uint64_t n_in, uint64_t n_out) {
    kern_wmat w = {0};
    tmem_gguf_tensor t;
    if (!tensor(l, &t, name, n_in, n_out)) return w;
    if (!tmrt__kern_type_supported(t.type, (int64_t)n_in)) {
        vis_error(l->err, l->cap, "mmproj: tensor %s: ggml type %u with rows of %llu is not supported", name, t.type,
                  (unsigned long long)n_in);
        l->failed = true;
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

int tmrt_vision_pixel_bounds(const tmem_gguf *g, uint32_t patch, uint32_t merge,
                             uint64_t *min_pixels, uint64_t *max_pixels) {
    if (!g || !patch || !merge || !min_pixels || !max_pixels) return -1;
    /* Absent from llama.cpp's own conversion: then llama.cpp's limits for
     * Qwen-VL projectors, 8 .. 4096 merged tokens. */
    uint64_t unit = (uint64_t)patch * patch * merge * merge, v[2] = {8 * unit, 4096 * unit};
    static const char *const keys[2] = {"clip.vision.image_min_pixels",
                                        "clip.vision.image_max_pixels"};
    for (int i = 0; i < 2; i++) {
        uint64_t u;
        tmem_status st = tmem_gguf_get_u64(g, keys[i], &u);
        if (st == TMEM_E_NOT_FOUND) continue;
        if (st != TMEM_OK || u == 0 || u > (1u << 24)) return -1;
        v[i] = u;
    }
    if (v[0] > v[1]) return -1;
    *min_pixels = v[0], *max_pixels = v[1];
    return 0;
}

static void read_config(loader *l) {
    tmrt_vision_config *c = &l->v->cfg;
    tmem_gguf_str s;
    const char *want = "qwen3vl_merger";
    if ((tmem_gguf_get_str(l->v->gguf, "clip.projector_type", &s) != TMEM_OK &&
         tmem_gguf_get_str(l->v->gguf, "clip.vision.projector_type", &s) != TMEM_OK) ||
        s.len != strlen(want) || memcmp(s.data, want, s.len)) {
        vis_error(l->err, l->cap, "mmproj: clip.projector_type must be \"%s\" (Qwen3-VL / Qwen3.5 vision)", want);
        l->failed = true;
        return;
    }
    bool has = false;
    if (tmem_gguf_get_bool(l->v->gguf, "clip.has_vision_encoder", &has) != TMEM_OK || !has) {
        vis_error(l->err, l->cap, "mmproj: clip.has_vision_encoder is not true");
        l->failed = true;
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
    if ((st != TMEM_OK && st != TMEM_E_NOT_FOUND) || !(eps > 0 && eps < 1)) {
        if (!l->failed) vis_error(l->err, l->cap, "mmproj: clip.vision.attention.layer_norm_epsilon out of range");
        l->failed = true;
    }
    c->eps = (float)eps;
    key_f32_array(l, "clip.vision.image_mean", c->mean, 3, 0.5f);
    key_f32_array(l, "clip.vision.image_std", c->std, 3, 0.5f);
    for (int i = 0; i < 3 && !l->failed; i++)
        if (!(c->std[i] > 0)) {
            vis_error(l->err, l->cap, "mmproj: clip.vision.image_std must be positive");
            l->failed = true;
        }
    if (!l->failed &&
        tmrt_vision_pixel_bounds(l->v->gguf, c->patch, c->merge, &c->min_pixels, &c->max_pixels)) {
        vis_error(l->err, l->cap,
                  "mmproj: clip.vision.image_min_pixels / image_max_pixels out of range");
        l->failed = true;
    }
    if (l->failed) return;
    uint32_t hd = c->heads ? c->hidden / c->heads : 0;
    if (c->hidden % c->heads || hd % 4 || hd > 256 || c->merge > 8 || c->patch > 64) {
        vis_error(l->err, l->cap, "mmproj: inconsistent shape (hidden %u, heads %u: head dim must be a multiple of 4)",
                  c->hidden, c->heads);
        l->failed = true;
    }
}

static int load(tmrt_vision *v, tmrt_vision **out, char *err, size_t cap);

int tmrt_vision_open(tmem_context *ctx, const char *path, tmrt_vision **out, char *err, size_t cap) {
    if (out) *out = NULL;
    if (!ctx || !path || !out) return vis_error(err, cap, "invalid arguments");
    tmrt_vision *v = calloc(1, sizeof *v);
    if (!v) return vis_error(err, cap, "out of memory");
    v->ctx = ctx;
    tmem_gguf_desc gd = {0};
    gd.path = path;
    tmem_gguf_error ge = {0};
    tmem_status st = tmem_gguf_open(ctx, &gd, &v->gguf, &ge);
    if (st != TMEM_OK) {
        free(v);
        return vis_error(err, cap, "%s: %s (%s)", path, ge.message[0] ? ge.message : "cannot open",
                         tmem_status_name(st));
    }
    return load(v, out, err, cap);
}

int tmrt_vision_open_naive(const char *path, tmrt_vision **out, char *err, size_t cap) {
    if (out) *out = NULL;
    if (!path || !out) return vis_error(err, cap, "invalid arguments");
    FILE *f = fopen(path, "rb");
    if (!f) return vis_error(err, cap, "%s: cannot open", path);
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    tmrt_vision *v = size > 0 ? calloc(1, sizeof *v) : NULL;
    void *bytes = v ? malloc((size_t)size) : NULL;
    bool ok = bytes && fseek(f, 0, SEEK_SET) == 0 && fread(bytes, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    tmem_gguf_error ge = {0};
    tmem_status st = ok ? tmem_gguf_open_memory(NULL, bytes, (size_t)size, &v->gguf, &ge) : TMEM_E_IO;
    if (st != TMEM_OK) {
        free(bytes), free(v);
        return vis_error(err, cap, "%s: %s (%s)", path, ge.message[0] ? ge.message : "cannot read",
                         tmem_status_name(st));
    }
    v->naive_bytes = bytes;
    return load(v, out, err, cap);
}

static int load(tmrt_vision *v, tmrt_vision **out, char *err, size_t cap) {
    loader l = {v, err, cap, false};
    read_config(&l);
    const tmrt_vision_config *c = &v->cfg;
    if (!l.failed) {
        uint64_t pp = 3ull * c->patch * c->patch, h = c->hidden, m2 = (uint64_t)c->merge * c->merge;
        v->patch0 = mat(&l, "v.patch_embd.weight", pp, h);
        v->patch1 = mat(&l, "v.patch_embd.weight.1", pp, h);
        v->patch_b = vec(&l, "v.patch_embd.bias", h);
        tmem_gguf_tensor t;
        if (!l.failed && tmem_gguf_tensor_find(v->gguf, "v.position_embd.weight", &t) == TMEM_OK) {
            v->cfg.n_pos = (uint32_t)(t.n_dims == 2 ? t.dims[1] : 0);
            uint32_t side = (uint32_t)sqrt((double)v->cfg.n_pos);
            if (side * side != v->cfg.n_pos || side < 1) {
                vis_error(err, cap, "mmproj: v.position_embd.weight has %u rows, not a square grid", v->cfg.n_pos);
                l.failed = true;
            }
        }
        v->pos = mat(&l, "v.position_embd.weight", h, v->cfg.n_pos);
        if (!l.failed && v->pos.type != TMEM_GGML_F32 && v->pos.type != TMEM_GGML_F16 &&
            v->pos.type != TMEM_GGML_BF16) {
            vis_error(err, cap, "mmproj: v.position_embd.weight must be F32, F16 or BF16");
            l.failed = true;
        }
        v->post_w = vec(&l, "v.post_ln.weight", h);
        v->post_b = vec(&l, "v.post_ln.bias", h);
        v->mm0 = mat(&l, "mm.0.weight", h * m2, h * m2);
        v->mm0_b = vec(&l, "mm.0.bias", h * m2);
        v->mm2 = mat(&l, "mm.2.weight", h * m2, c->out_hidden);
        v->mm2_b = vec(&l, "mm.2.bias", c->out_hidden);
        v->blocks = l.failed ? NULL : calloc(c->depth, sizeof *v->blocks);
        if (!l.failed && !v->blocks) l.failed = vis_error(err, cap, "out of memory") != 0;
        for (uint32_t i = 0; i < c->depth && !l.failed; i++) load_block(&l, i, &v->blocks[i]);
    }
    if (l.failed) {
        tmrt_vision_close(v);
        return -1;
    }
    *out = v;
    return 0;
}

void tmrt_vision_close(tmrt_vision *v) {
    if (!v) return;
    tmem_gguf_close(v->gguf);
    free(v->naive_bytes);
    free(v->blocks);
    free(v);
}

const tmrt_vision_config *tmrt_vision_get_config(const tmrt_vision *v) { return v ? &v->cfg : NULL; }

uint64_t tmrt_vision_weight_bytes(const tmrt_vision *v) { return v ? v->weight_bytes : 0; }

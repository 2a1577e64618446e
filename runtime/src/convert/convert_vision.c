/*
 * The vision tower of tmrt_convert / tmrt_gen: an mmproj GGUF in llama.cpp's
 * layout (what its convert_hf_to_gguf.py --mmproj writes for Qwen3-VL and
 * Qwen3.5: clip.vision.* keys, projector "qwen3vl_merger"), through the
 * vision writer (runtime/src/vision/writer.c) with rows taken from the
 * checkpoint:
 *
 *   model.visual.patch_embed.proj.weight [h, 3, 2, p, p]
 *                        -> v.patch_embd.weight (frame 0), .weight.1 (frame 1)
 *   patch_embed.proj.bias -> v.patch_embd.bias; pos_embed -> v.position_embd
 *   blocks.N.norm1/norm2 -> v.blk.N.ln1/ln2; attn.qkv -> attn_qkv;
 *   attn.proj -> attn_out; mlp.linear_fc1/fc2 -> ffn_up/ffn_down
 *   merger.norm -> v.post_ln; merger.linear_fc1/fc2 -> mm.0 / mm.2
 *
 * Config from config.json's vision_config (depth, hidden_size, num_heads,
 * intermediate_size, patch_size, temporal_patch_size 2, spatial_merge_size,
 * num_position_embeddings, out_hidden_size, hidden_act gelu_pytorch_tanh, no
 * deepstack layers) and preprocessor_config.json (image_mean / image_std,
 * size.shortest_edge / longest_edge as clip.vision.image_min/max_pixels).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "convert_internal.h"
#include "kern/kern.h"
#include "vision/writer.h"

static uint32_t ggml_type_of(tmem_weight_dtype d) {
    switch (d) {
    case TMEM_WEIGHT_F32: return TMEM_GGML_F32;
    case TMEM_WEIGHT_BF16: return TMEM_GGML_BF16;
    case TMEM_WEIGHT_Q8_0: return TMEM_GGML_Q8_0;
    default: return TMEM_GGML_F16;
    }
}

/* ---- config ---- */

typedef struct jcfg {
    tmem_json *j;
    tmem_json_ref obj;
    const char *path;
    tmrt_error *err;
    tmem_status st;
} jcfg;

static uint32_t j_u32(jcfg *c, const char *key, bool required, uint32_t fallback) {
    tmem_json_ref v;
    int64_t x;
    if (c->st) return 0;
    if (tmem_json_get(c->j, c->obj, key, &v) != TMEM_OK) {
        if (!required) return fallback;
        c->st = tmrt__fail(c->err, TMEM_E_NOT_FOUND, "%s: vision_config.%s missing", c->path, key);
        return 0;
    }
    if (tmem_json_int(c->j, v, &x) != TMEM_OK || x <= 0 || x > (1 << 26)) {
        c->st = tmrt__fail(c->err, TMEM_E_CORRUPT, "%s: %s must be a positive integer", c->path, key);
        return 0;
    }
    return (uint32_t)x;
}

static tmem_status parse_json(tmem_context *ctx, const char *path, char **text, tmem_json **j,
                              tmrt_error *err) {
    size_t len;
    tmem_status st = tmrt__cv_read_file(path, text, &len, err);
    if (st) return st;
    tmem_json_error je;
    st = tmem_json_parse(ctx, *text, len, j, &je);
    if (st) {
        free(*text);
        *text = NULL;
        return tmrt__fail(err, st, "%s:%u:%u: %s", path, je.line, je.column, je.message);
    }
    return TMEM_OK;
}

static tmem_status read_vision_config(tmem_context *ctx, const char *hf_dir, tmrt_vision_config *c,
                                      tmrt_error *err) {
    char path[4096], *text = NULL;
    tmem_json *j = NULL;
    memset(c, 0, sizeof *c);
    snprintf(path, sizeof path, "%s/config.json", hf_dir);
    tmem_status st = parse_json(ctx, path, &text, &j, err);
    if (st) return st;
    tmem_json_ref vc, v;
    if (tmem_json_get(j, TMEM_JSON_ROOT, "vision_config", &vc) != TMEM_OK ||
        tmem_json_type_of(j, vc) != TMEM_JSON_OBJECT) {
        st = tmrt__fail(err, TMEM_E_NOT_FOUND, "%s: no vision_config: this checkpoint has no vision tower", path);
        goto out;
    }
    jcfg g = {j, vc, path, err, TMEM_OK};
    c->depth = j_u32(&g, "depth", true, 0);
    c->hidden = j_u32(&g, "hidden_size", true, 0);
    c->heads = j_u32(&g, "num_heads", true, 0);
    c->ff = j_u32(&g, "intermediate_size", true, 0);
    c->patch = j_u32(&g, "patch_size", true, 0);
    c->merge = j_u32(&g, "spatial_merge_size", false, 2);
    c->temporal = j_u32(&g, "temporal_patch_size", false, 2);
    c->n_pos = j_u32(&g, "num_position_embeddings", true, 0);
    c->out_hidden = j_u32(&g, "out_hidden_size", true, 0);
    if ((st = g.st)) goto out;
    if (c->temporal != 2) {
        st = tmrt__fail(err, TMEM_E_UNSUPPORTED,
                        "%s: temporal_patch_size %u (llama.cpp's layout splits the Conv3d in 2)", path,
                        c->temporal);
        goto out;
    }
    if (tmem_json_get(j, vc, "hidden_act", &v) == TMEM_OK && !tmem_json_string_eq(j, v, "gelu_pytorch_tanh")) {
        st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "%s: vision hidden_act must be gelu_pytorch_tanh", path);
        goto out;
    }
    if (tmem_json_get(j, vc, "deepstack_visual_indexes", &v) == TMEM_OK && tmem_json_count(j, v) > 0) {
        st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "%s: deepstack layers (Qwen3-VL) are not supported", path);
        goto out;
    }
    /* llama.cpp writes the text model's rms_norm_eps as the vision LayerNorm
     * epsilon (1e-6 in Qwen3.5, as HF's LayerNorms use) */
    double eps = 1e-6;
    tmem_json_ref tc;
    if (tmem_json_get(j, TMEM_JSON_ROOT, "text_config", &tc) == TMEM_OK &&
        tmem_json_get(j, tc, "rms_norm_eps", &v) == TMEM_OK && tmem_json_number(j, v, &eps) != TMEM_OK)
        eps = 1e-6;
    c->eps = (float)eps;
    uint32_t side = (uint32_t)lrint(sqrt((double)c->n_pos));
    if (side * side != c->n_pos || c->hidden % c->heads || (c->hidden / c->heads) % 4) {
        st = tmrt__fail(err, TMEM_E_CORRUPT,
                        "%s: inconsistent vision_config (positions %u, hidden %u, heads %u)", path,
                        c->n_pos, c->hidden, c->heads);
        goto out;
    }
out:
    tmem_json_free(j);
    free(text);
    return st;
}

/* preprocessor_config.json: mean, std, pixel bounds (defaults when absent). */
static tmem_status read_preprocessor(tmem_context *ctx, const char *hf_dir, tmrt_vision_config *c,
                                     tmrt_error *err) {
    for (int i = 0; i < 3; i++) c->mean[i] = c->std[i] = 0.5f;
    c->min_pixels = 65536, c->max_pixels = 16777216;
    char path[4096], *text = NULL;
    tmem_json *j = NULL;
    snprintf(path, sizeof path, "%s/preprocessor_config.json", hf_dir);
    tmem_status st = parse_json(ctx, path, &text, &j, err);
    if (st == TMEM_E_NOT_FOUND) return TMEM_OK;
    if (st) return st;
    const char *keys[2] = {"image_mean", "image_std"};
    float *dst[2] = {c->mean, c->std};
    for (int k = 0; k < 2 && !st; k++) {
        tmem_json_ref a, e;
        if (tmem_json_get(j, TMEM_JSON_ROOT, keys[k], &a) != TMEM_OK) continue;
        for (uint32_t i = 0; i < 3 && !st; i++) {
            double x;
            if (tmem_json_count(j, a) != 3 || tmem_json_at(j, a, i, &e) != TMEM_OK || tmem_json_number(j, e, &x) ||
                !isfinite(x) || (k == 1 && x <= 0))
                st = tmrt__fail(err, TMEM_E_CORRUPT, "%s: %s must be 3 numbers", path, keys[k]);
            else
                dst[k][i] = (float)x;
        }
    }
    tmem_json_ref size, v;
    int64_t x;
    if (!st && tmem_json_get(j, TMEM_JSON_ROOT, "size", &size) == TMEM_OK) {
        if (tmem_json_get(j, size, "shortest_edge", &v) == TMEM_OK && tmem_json_int(j, v, &x) == TMEM_OK && x > 0)
            c->min_pixels = (uint64_t)x;
        if (tmem_json_get(j, size, "longest_edge", &v) == TMEM_OK && tmem_json_int(j, v, &x) == TMEM_OK && x > 0)
            c->max_pixels = (uint64_t)x;
    }
    if (!st && (c->min_pixels > c->max_pixels || c->max_pixels > UINT32_MAX))
        st = tmrt__fail(err, TMEM_E_CORRUPT, "%s: size bounds out of range", path);
    tmem_json_free(j);
    free(text);
    return st;
}

/* ---- rows from the checkpoint ---- */

typedef struct hf_rows {
    cv_source *src;
    const tmrt_vision_config *c;
    tmrt_error *err;
    size_t tensor;               /* the tensor cached below */
    bool have;
    tmem_safetensors_tensor t;
    int frame;                   /* patch embedding: which temporal slice, else -1 */
} hf_rows;

/* The checkpoint name of a GGUF name, and the temporal slice it takes. */
static bool hf_name(const char *g, char *out, size_t cap, int *frame) {
    static const struct { const char *gguf, *hf; } fixed[] = {
        {"v.patch_embd.weight", "model.visual.patch_embed.proj.weight"},
        {"v.patch_embd.weight.1", "model.visual.patch_embed.proj.weight"},
        {"v.patch_embd.bias", "model.visual.patch_embed.proj.bias"},
        {"v.position_embd.weight", "model.visual.pos_embed.weight"},
        {"v.post_ln.weight", "model.visual.merger.norm.weight"},
        {"v.post_ln.bias", "model.visual.merger.norm.bias"},
        {"mm.0.weight", "model.visual.merger.linear_fc1.weight"},
        {"mm.0.bias", "model.visual.merger.linear_fc1.bias"},
        {"mm.2.weight", "model.visual.merger.linear_fc2.weight"},
        {"mm.2.bias", "model.visual.merger.linear_fc2.bias"},
    };
    *frame = -1;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(g, fixed[i].gguf)) {
            if (i < 2) *frame = (int)i;
            snprintf(out, cap, "%s", fixed[i].hf);
            return true;
        }
    static const struct { const char *gguf, *hf; } blk[] = {
        {"ln1", "norm1"}, {"ln2", "norm2"}, {"attn_qkv", "attn.qkv"}, {"attn_out", "attn.proj"},
        {"ffn_up", "mlp.linear_fc1"}, {"ffn_down", "mlp.linear_fc2"},
    };
    unsigned n;
    char part[32], kind[16];
    if (sscanf(g, "v.blk.%u.%31[^.].%15s", &n, part, kind) != 3) return false;
    for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++)
        if (!strcmp(part, blk[i].gguf)) {
            snprintf(out, cap, "model.visual.blocks.%u.%s.%s", n, blk[i].hf, kind);
            return true;
        }
    return false;
}

static uint32_t ggml_of_st(tmem_st_dtype d) {
    return d == TMEM_ST_F32    ? TMEM_GGML_F32
           : d == TMEM_ST_F16  ? TMEM_GGML_F16
           : d == TMEM_ST_BF16 ? TMEM_GGML_BF16
                               : 0xFFFF;
}

static tmem_status hf_row(void *user, const char *name, int how, size_t tensor, uint64_t row, float *out,
                          uint64_t n, tmrt_error *err) {
    (void)how;
    hf_rows *r = user;
    if (!r->have || r->tensor != tensor) {
        char hf[128];
        if (!hf_name(name, hf, sizeof hf, &r->frame))
            return tmrt__fail(err, TMEM_E_NOT_FOUND, "no checkpoint tensor for %s", name);
        if (tmrt__cv_source_find(r->src, hf, &r->t) != TMEM_OK)
            return tmrt__fail(err, TMEM_E_NOT_FOUND, "%s missing from the checkpoint", hf);
        uint32_t gt = ggml_of_st(r->t.dtype);
        if (gt == 0xFFFF)
            return tmrt__fail(err, TMEM_E_UNSUPPORTED, "%s: dtype %s (F32, F16 or BF16 expected)", hf,
                              tmem_st_dtype_name(r->t.dtype));
        r->tensor = tensor, r->have = true;
    }
    const tmrt_vision_config *c = r->c;
    uint32_t gt = ggml_of_st(r->t.dtype), es = tmem_st_dtype_size(r->t.dtype);
    const uint8_t *base = r->t.data;
    if (r->frame >= 0) { /* [h, 3, 2, p, p]: frame f of row o is 3 runs of p*p */
        uint64_t pp = (uint64_t)c->patch * c->patch;
        if (r->t.n_dims != 5 || r->t.shape[0] != c->hidden || r->t.shape[1] != 3 || r->t.shape[2] != 2 ||
            r->t.shape[3] != c->patch || r->t.shape[4] != c->patch || n != 3 * pp)
            return tmrt__fail(err, TMEM_E_CORRUPT, "%s: shape is not [%u, 3, 2, %u, %u]", r->t.name, c->hidden,
                              c->patch, c->patch);
        for (uint64_t ch = 0; ch < 3; ch++)
            if (!tmrt__kern_dequantize_row(gt, base + (((row * 3 + ch) * 2 + (uint64_t)r->frame) * pp) * es,
                                           out + ch * pp, (int64_t)pp))
                return tmrt__fail(err, TMEM_E_CORRUPT, "%s: cannot read", r->t.name);
    } else {
        if (r->t.n_elements % n || (row + 1) * n > r->t.n_elements)
            return tmrt__fail(err, TMEM_E_CORRUPT, "%s: %llu elements, not rows of %llu", r->t.name,
                              (unsigned long long)r->t.n_elements, (unsigned long long)n);
        if (!tmrt__kern_dequantize_row(gt, base + row * n * es, out, (int64_t)n))
            return tmrt__fail(err, TMEM_E_CORRUPT, "%s: cannot read", r->t.name);
    }
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(out[i]))
            return tmrt__fail(err, TMEM_E_CORRUPT, "%s: NaN or infinity in row %llu", r->t.name,
                              (unsigned long long)row);
    return TMEM_OK;
}

tmem_status tmrt__cv_vision_convert(tmem_context *ctx, const char *hf_dir, const char *mmproj_path,
                                    tmem_weight_dtype dtype, uint64_t *file_bytes, tmrt_error *err) {
    *file_bytes = 0;
    tmrt_vision_config c;
    tmem_status st = read_vision_config(ctx, hf_dir, &c, err);
    if (!st) st = read_preprocessor(ctx, hf_dir, &c, err);
    if (st) return st;
    cv_source *src;
    if ((st = tmrt__cv_source_open(ctx, hf_dir, &src, err))) return st;
    hf_rows r = {src, &c, err, 0, false, {0}, -1};
    tmrt_error inner = {{0}};
    st = tmrt__vis_write_mmproj(&c, ggml_type_of(dtype), mmproj_path, hf_row, &r, file_bytes, &inner);
    tmrt__cv_source_close(src);
    if (st != TMEM_OK) return tmrt__fail(err, st, "mmproj: %s", inner.message);
    return TMEM_OK;
}

tmem_status tmrt__cv_vision_gen(tmem_context *ctx, const tmem_model_desc *m, const char *mmproj_path,
                          tmem_weight_dtype dtype, uint64_t seed, uint64_t *file_bytes, tmrt_error *err) {
    (void)ctx;
    *file_bytes = 0;
    tmrt_vision_config c;
    if (tmrt_vision_preset("tiny", &c) != TMEM_OK) return tmrt__fail(err, TMEM_E_NOT_FOUND, "no tiny vision preset");
    if (m->vis_depth) { /* the preset's tower */
        c.depth = m->vis_depth, c.hidden = m->vis_hidden, c.ff = m->vis_ff, c.heads = m->vis_heads;
        c.patch = m->vis_patch, c.merge = m->vis_merge, c.temporal = m->vis_temporal_patch;
        c.n_pos = m->vis_pos_embd ? m->vis_pos_embd : 2304;
        c.min_pixels = 65536, c.max_pixels = 16777216;
    }
    c.out_hidden = m->n_embd; /* the merger feeds this text model */
    tmrt_error inner = {{0}};
    tmem_status st = tmrt_vision_write_random(&c, ggml_type_of(dtype), seed ^ 0x5649534Full, mmproj_path, &inner);
    if (st != TMEM_OK) return tmrt__fail(err, st, "mmproj: %s", inner.message);
    FILE *f = fopen(mmproj_path, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0) *file_bytes = (uint64_t)ftell(f);
    if (f) fclose(f);
    return TMEM_OK;
}

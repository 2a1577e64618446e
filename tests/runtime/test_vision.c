/* The vision encoder on a tiny random mmproj (tmrt_vision_write_random, F32):
 *  - typed (planned heaps, 2 threads) and naive (mallocs, copies, 1 thread)
 *    embeddings bit-identical, for an identity resize, a non-identity resize
 *    and a grid of 128 patches (several attention tiles, a partial one, the
 *    position table interpolated 4x4 -> 16x8);
 *  - against an independent double-precision reference written from Hugging
 *    Face's Qwen3_5VisionModel (pixel_values in HF's patch order, the Conv3d
 *    as one sum, the full softmax score matrix, rotate_half rotary, linspace
 *    position interpolation, merger): max |d| <= 1e-4 * max |embedding|;
 *  - the typed encode leaves no heap behind, releases the surface;
 *  - smart_resize against HF's values; hostile mmproj files refused naming
 *    the tensor or key. */
#include "harness.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tmemrt/vision.h"
#include "vision/vision_internal.h"

static char dir[256], path[512];

/* ---- the reference (double precision, straight from the HF module) ---- */
typedef struct ref_w {
    const float *d;
    uint64_t n_in, n_out;
} ref_w;

static ref_w W(tmem_gguf *g, const char *name) {
    tmem_gguf_tensor t;
    ref_w w = {0};
    if (tmem_gguf_tensor_find(g, name, &t) != TMEM_OK || t.type != TMEM_GGML_F32) return w;
    w.d = t.data;
    w.n_out = t.n_dims > 1 ? t.dims[t.n_dims - 1] : 1;
    w.n_in = t.n_elements / w.n_out;
    return w;
}

static void lin(ref_w w, ref_w b, const double *x, double *y) {
    for (uint64_t o = 0; o < w.n_out; o++) {
        double s = b.d ? b.d[o] : 0;
        for (uint64_t i = 0; i < w.n_in; i++) s += (double)w.d[o * w.n_in + i] * x[i];
        y[o] = s;
    }
}

static void ln(const double *x, ref_w w, ref_w b, uint64_t n, double *y) {
    double m = 0, v = 0;
    for (uint64_t i = 0; i < n; i++) m += x[i];
    m /= (double)n;
    for (uint64_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    v /= (double)n;
    for (uint64_t i = 0; i < n; i++) y[i] = (x[i] - m) / sqrt(v + 1e-6) * w.d[i] + b.d[i];
}

/* rgb: the resized image (gw*p x gh*p, RGB bytes). out: tokens x out_hidden. */
static void reference(tmem_gguf *g, const tmrt_vision_config *c, const uint8_t *rgb, uint32_t gw, uint32_t gh,
                      double *out) {
    uint32_t p = c->patch, m = c->merge, H = c->hidden, F = c->ff, nh = c->heads, hd = H / nh, P = gw * gh;
    uint32_t Wpx = gw * p, side = (uint32_t)lrint(sqrt((double)c->n_pos));
    double *x = calloc((size_t)P * H, 8), *tmp = calloc((size_t)P * 4 * H, 8), *qkv = calloc((size_t)P * 3 * H, 8);
    double *att = calloc((size_t)P * H, 8), *f1 = calloc((size_t)F, 8), *sc = calloc(P, 8);
    double *pv = calloc(6ull * p * p, 8);
    ref_w w0 = W(g, "v.patch_embd.weight"), w1 = W(g, "v.patch_embd.weight.1"), pb = W(g, "v.patch_embd.bias");
    ref_w pos = W(g, "v.position_embd.weight");
    /* merge-order tokens: (bh, bw, mh, mw) */
    for (uint32_t t = 0; t < P; t++) {
        uint32_t blk = t / (m * m), in = t % (m * m), bw_n = gw / m;
        uint32_t r = (blk / bw_n) * m + in / m, col = (blk % bw_n) * m + in % m;
        /* pixel_values row in HF's order (c, t, py, px) */
        for (uint32_t ch = 0; ch < 3; ch++)
            for (uint32_t fr = 0; fr < 2; fr++)
                for (uint32_t py = 0; py < p; py++)
                    for (uint32_t px = 0; px < p; px++) {
                        uint8_t v = rgb[(((size_t)r * p + py) * Wpx + (size_t)col * p + px) * 3 + ch];
                        pv[((ch * 2 + fr) * p + py) * p + px] = ((double)v / 255.0 - c->mean[ch]) / c->std[ch];
                    }
        /* Conv3d = sum over (c, t, py, px); frame f's kernel is weight(.1) */
        for (uint32_t o = 0; o < H; o++) {
            double s = pb.d[o];
            for (uint32_t ch = 0; ch < 3; ch++)
                for (uint32_t fr = 0; fr < 2; fr++)
                    for (uint32_t k = 0; k < p * p; k++)
                        s += (double)(fr ? w1 : w0).d[(size_t)o * 3 * p * p + ch * p * p + k] *
                             pv[(ch * 2 + fr) * p * p + k];
            x[(size_t)t * H + o] = s;
        }
        /* position: torch.linspace(0, side-1, n), floor/ceil, bilinear */
        double hi = gh > 1 ? (double)r * (side - 1) / (gh - 1) : 0, wi = gw > 1 ? (double)col * (side - 1) / (gw - 1) : 0;
        uint32_t h0 = (uint32_t)hi, wl = (uint32_t)wi, h1 = h0 + 1 < side ? h0 + 1 : side - 1;
        uint32_t w_1 = wl + 1 < side ? wl + 1 : side - 1;
        double dh = hi - h0, dw = wi - wl;
        for (uint32_t o = 0; o < H; o++)
            x[(size_t)t * H + o] += pos.d[(size_t)(h0 * side + wl) * H + o] * (1 - dh) * (1 - dw) +
                                    pos.d[(size_t)(h0 * side + w_1) * H + o] * (1 - dh) * dw +
                                    pos.d[(size_t)(h1 * side + wl) * H + o] * dh * (1 - dw) +
                                    pos.d[(size_t)(h1 * side + w_1) * H + o] * dh * dw;
    }
    char n[64];
    for (uint32_t l = 0; l < c->depth; l++) {
#define T(s) (snprintf(n, sizeof n, "v.blk.%u." s, l), W(g, n))
        for (uint32_t t = 0; t < P; t++) {
            ln(x + (size_t)t * H, T("ln1.weight"), T("ln1.bias"), H, tmp);
            lin(T("attn_qkv.weight"), T("attn_qkv.bias"), tmp, qkv + (size_t)t * 3 * H);
            uint32_t blk = t / (m * m), in = t % (m * m), bw_n = gw / m;
            double rc[2] = {(double)((blk / bw_n) * m + in / m), (double)((blk % bw_n) * m + in % m)};
            for (uint32_t which = 0; which < 2; which++)
                for (uint32_t h = 0; h < nh; h++) {
                    double *q = qkv + (size_t)t * 3 * H + which * H + h * hd;
                    for (uint32_t i = 0; i < hd / 2; i++) {
                        uint32_t j = i % (hd / 4);
                        double inv = 1.0 / pow(10000.0, 2.0 * j / (hd / 2));
                        double a = rc[i < hd / 4 ? 0 : 1] * inv, x0 = q[i], x1 = q[i + hd / 2];
                        q[i] = x0 * cos(a) - x1 * sin(a);
                        q[i + hd / 2] = x1 * cos(a) + x0 * sin(a);
                    }
                }
        }
        for (uint32_t h = 0; h < nh; h++)
            for (uint32_t i = 0; i < P; i++) {
                double mx = -1e300, sum = 0;
                for (uint32_t k = 0; k < P; k++) {
                    double s = 0;
                    for (uint32_t d = 0; d < hd; d++)
                        s += qkv[(size_t)i * 3 * H + h * hd + d] * qkv[(size_t)k * 3 * H + H + h * hd + d];
                    sc[k] = s / sqrt((double)hd);
                    if (sc[k] > mx) mx = sc[k];
                }
                for (uint32_t k = 0; k < P; k++) sum += (sc[k] = exp(sc[k] - mx));
                for (uint32_t d = 0; d < hd; d++) {
                    double s = 0;
                    for (uint32_t k = 0; k < P; k++) s += sc[k] * qkv[(size_t)k * 3 * H + 2 * H + h * hd + d];
                    att[(size_t)i * H + h * hd + d] = s / sum;
                }
            }
        for (uint32_t t = 0; t < P; t++) {
            double *xt = x + (size_t)t * H;
            lin(T("attn_out.weight"), T("attn_out.bias"), att + (size_t)t * H, tmp);
            for (uint32_t i = 0; i < H; i++) xt[i] += tmp[i];
            ln(xt, T("ln2.weight"), T("ln2.bias"), H, tmp);
            lin(T("ffn_up.weight"), T("ffn_up.bias"), tmp, f1);
            for (uint32_t i = 0; i < F; i++)
                f1[i] = 0.5 * f1[i] * (1 + tanh(sqrt(2 / M_PI) * (f1[i] + 0.044715 * f1[i] * f1[i] * f1[i])));
            lin(T("ffn_down.weight"), T("ffn_down.bias"), f1, tmp);
            for (uint32_t i = 0; i < H; i++) xt[i] += tmp[i];
        }
#undef T
    }
    for (uint32_t t = 0; t < P; t++) ln(x + (size_t)t * H, W(g, "v.post_ln.weight"), W(g, "v.post_ln.bias"), H, att + (size_t)t * H);
    for (uint32_t t = 0; t < P / (m * m); t++) {
        lin(W(g, "mm.0.weight"), W(g, "mm.0.bias"), att + (size_t)t * m * m * H, tmp);
        for (uint32_t i = 0; i < m * m * H; i++) tmp[i] = 0.5 * tmp[i] * (1 + erf(tmp[i] / sqrt(2.0)));
        lin(W(g, "mm.2.weight"), W(g, "mm.2.bias"), tmp, out + (size_t)t * c->out_hidden);
    }
    free(x), free(tmp), free(qkv), free(att), free(f1), free(sc), free(pv);
}

static tmem_surface *rgb_surface(tmem_context *ctx, uint32_t w, uint32_t h, uint8_t **pixels, uint64_t seed) {
    tmem_surface_desc d = {0};
    d.width = w, d.height = h, d.format = TMEM_FORMAT_RGB8;
    tmem_surface *s;
    if (tmem_surface_create(ctx, &d, &s) != TMEM_OK) return NULL;
    tmem_tensor_view v;
    if (tmem_surface_plane_view(s, 0, NULL, &v) != TMEM_OK || tmem_surface_lock(s, 0, NULL) != TMEM_OK) return NULL;
    tmem_rng r;
    tmem_rng_init(&r, seed);
    *pixels = malloc((size_t)w * h * 3);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < 3 * w; x++)
            (*pixels)[(size_t)y * w * 3 + x] = ((uint8_t *)v.data)[(size_t)y * (size_t)v.strides[0] + x] =
                (uint8_t)(tmem_rng_next(&r) >> 56);
    if (tmem_surface_unlock(s, 0, NULL) != TMEM_OK) return NULL;
    return s;
}

/* An encode in the handle's memory mode (the mode of its open). */
static float *encode(tmem_context *ctx, tmrt_vision *v, uint32_t w, uint32_t h, int threads, uint8_t **pixels,
                     tmrt_vision_stats *st) {
    tmem_surface *s = rgb_surface(ctx, w, h, pixels, 1234 + w * 7 + h);
    if (!s) return NULL;
    tmrt_vision_grid g;
    tmrt_error err = {""};
    if (tmrt_vision_image_grid(v, s, &g, &err) != TMEM_OK) return NULL;
    size_t out_h = tmrt_vision_get_config(v)->out_hidden;
    float *emb = calloc((size_t)g.n_tokens * out_h, sizeof(float));
    tmrt_vision_encode_desc d = {threads, false};
    if (tmrt_vision_encode(v, &s, &d, emb, out_h, st, &err) != TMEM_OK) {
        printf("   encode: %s\n", err.message);
        free(emb);
        return NULL;
    }
    if (s != NULL) printf("   surface not released\n");
    return s == NULL ? emb : NULL;
}

static void test_encode(tmem_context *ctx) {
    tmrt_vision_config c;
    tmrt_error err = {""};
    REQUIRE(tmrt_vision_preset("tiny", &c) == TMEM_OK);
    snprintf(path, sizeof path, "%s/tiny-mmproj.gguf", dir);
    REQUIRE(tmrt_vision_write_random(&c, TMEM_GGML_F32, 7, path, &err) == TMEM_OK);
    /* the same file in both modes: typed (mapped, planned heaps) and its
     * naive twin (read into malloc, a malloc per tensor) */
    tmrt_vision *v, *vn;
    tmrt_vision_desc vd = {path, TMRT_MEMORY_TYPED, NULL}, vnd = {path, TMRT_MEMORY_NAIVE, NULL};
    REQUIRE(tmrt_vision_open(ctx, &vd, &v, &err) == TMEM_OK);
    REQUIRE(tmrt_vision_open(NULL, &vnd, &vn, &err) == TMEM_OK);
    CHECK(tmrt_vision_weight_bytes(v) == tmrt_vision_weight_bytes(vn));
    const tmrt_vision_config *lc = tmrt_vision_get_config(v);
    CHECK(lc->depth == 2 && lc->hidden == 64 && lc->heads == 4 && lc->n_pos == 16 && lc->out_hidden == 96);
    tmem_gguf *g;
    tmem_gguf_desc gd = {0};
    gd.path = path;
    REQUIRE_OK(tmem_gguf_open(ctx, &gd, &g, NULL));
    struct { uint32_t w, h; bool ref; } cases[] = {{64, 64, true}, {80, 48, false}, {256, 128, true}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint8_t *px_t = NULL, *px_n = NULL;
        tmrt_vision_stats st_t, st_n;
        tmem_role roles[3] = {TMEM_ROLE_IMAGE, TMEM_ROLE_VISION_INTERMEDIATE, TMEM_ROLE_SCRATCH};
        tmem_role_stats before[3], after[3];
        for (int r = 0; r < 3; r++) REQUIRE_OK(tmem_role_get_stats(ctx, roles[r], &before[r]));
        float *typed = encode(ctx, v, cases[k].w, cases[k].h, 2, &px_t, &st_t);
        for (int r = 0; r < 3; r++) REQUIRE_OK(tmem_role_get_stats(ctx, roles[r], &after[r]));
        float *naive = encode(ctx, vn, cases[k].w, cases[k].h, 1, &px_n, &st_n);
        REQUIRE(typed && naive);
        tmrt_vision_grid gr = st_t.grid;
        size_t n = (size_t)gr.n_tokens * lc->out_hidden;
        CHECK_MSG(memcmp(typed, naive, n * sizeof(float)) == 0, "%ux%u: typed and naive embeddings differ",
                  cases[k].w, cases[k].h);
        CHECK(st_t.image_copies == 1 && st_n.image_copies == 5);
        for (int r = 0; r < 3; r++) {
            CHECK_MSG(after[r].live_count == before[r].live_count && after[r].in_use.current == before[r].in_use.current,
                      "role %d: allocations left behind", (int)roles[r]);
            CHECK_MSG(after[r].alloc_count > before[r].alloc_count, "role %d: never used", (int)roles[r]);
        }
        printf("   %ux%u -> %ux%u, %u patches, %u tokens, arena %llu B (naive %llu B)\n", cases[k].w, cases[k].h,
               gr.width, gr.height, gr.n_patches, gr.n_tokens, (unsigned long long)st_t.arena_bytes,
               (unsigned long long)st_n.arena_bytes);
        if (cases[k].ref) {
            double *want = calloc(n, sizeof(double));
            reference(g, lc, px_t, gr.grid_w, gr.grid_h, want);
            double worst = 0, top = 0;
            for (size_t i = 0; i < n; i++) {
                if (fabs(want[i]) > top) top = fabs(want[i]);
                if (fabs(want[i] - typed[i]) > worst) worst = fabs(want[i] - typed[i]);
            }
            printf("   vs the double reference: max |d| %.3g, max |embedding| %.3g\n", worst, top);
            CHECK_MSG(top > 0.01 && worst <= 1e-4 * top, "max |d| %g vs max |e| %g", worst, top);
            free(want);
        }
        free(typed), free(naive), free(px_t), free(px_n);
    }
    tmem_gguf_close(g);
    tmrt_vision_close(v);
    tmrt_vision_close(vn);
}

static void test_smart_resize(void) {
    tmrt_vision_config c;
    REQUIRE(tmrt_vision_preset("qwen3.5-0.8b", &c) == TMEM_OK);
    CHECK_ST(tmrt_vision_preset("no-such-tower", &c), TMEM_E_NOT_FOUND);
    CHECK(c.hidden == 768); /* unchanged */
    CHECK_ST(tmrt_vision_preset(NULL, &c), TMEM_E_INVALID_ARG);
    /* HF Qwen2VLImageProcessor.smart_resize(h, w, factor=32, min 65536, max 16777216) */
    struct { uint32_t w, h, rw, rh; } cases[] = {
        {1024, 1024, 1024, 1024}, {1920, 1080, 1920, 1088}, {640, 480, 640, 480}, {100, 100, 256, 256},
        {48, 48, 256, 256}, {4000, 3000, 4000, 3008}, {8192, 8192, 4096, 4096}, {80, 48, 352, 224},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tmrt_vision_grid g;
        CHECK(tmrt_vision_smart_resize(&c, cases[i].w, cases[i].h, &g) == TMEM_OK);
        CHECK_MSG(g.width == cases[i].rw && g.height == cases[i].rh, "%ux%u -> %ux%u, want %ux%u", cases[i].w,
                  cases[i].h, g.width, g.height, cases[i].rw, cases[i].rh);
    }
    tmrt_vision_grid g;
    CHECK_ST(tmrt_vision_smart_resize(&c, 16, 900, &g), TMEM_E_INVALID_ARG); /* a side below the factor */
    CHECK(g.n_tokens == 0 && g.width == 0);                                      /* zeroed */
    CHECK_ST(tmrt_vision_smart_resize(&c, 32, 32 * 201, &g), TMEM_E_INVALID_ARG);
    CHECK_ST(tmrt_vision_smart_resize(NULL, 32, 32, &g), TMEM_E_INVALID_ARG);
}

/* tmrt_vision_set_pixel_bounds moves the grid of the same image; bad
 * bounds are refused and change nothing. */
static void test_pixel_bounds(tmem_context *ctx) {
    tmrt_vision *v;
    tmrt_error err = {""};
    tmrt_vision_desc vd = {path, TMRT_MEMORY_TYPED, NULL};
    REQUIRE(tmrt_vision_open(ctx, &vd, &v, &err) == TMEM_OK); /* test_encode's tiny tower */
    tmem_surface *s = NULL;
    uint8_t *px = NULL;
    s = rgb_surface(ctx, 40, 40, &px, 3);
    REQUIRE(s != NULL);
    tmrt_vision_grid g;
    /* the tiny tower's bounds, 1024 .. 1048576 pixels: 40x40 -> 32x32 */
    CHECK(tmrt_vision_image_grid(v, s, &g, &err) == TMEM_OK);
    CHECK(g.width == 32 && g.n_tokens == 1);
    CHECK(tmrt_vision_set_pixel_bounds(v, 65536, 0) == TMEM_OK);
    CHECK(tmrt_vision_get_config(v)->min_pixels == 65536);
    CHECK(tmrt_vision_image_grid(v, s, &g, &err) == TMEM_OK);
    CHECK(g.width == 256 && g.height == 256);
    CHECK(tmrt_vision_set_pixel_bounds(v, 1024, 1024) == TMEM_OK);
    CHECK(tmrt_vision_image_grid(v, s, &g, &err) == TMEM_OK);
    CHECK(g.width == 32 && g.n_tokens == 1);
    CHECK_ST(tmrt_vision_set_pixel_bounds(v, 4096, 2048), TMEM_E_INVALID_ARG);   /* min above max */
    CHECK_ST(tmrt_vision_set_pixel_bounds(v, 512, 0), TMEM_E_INVALID_ARG);       /* below one merged token */
    CHECK_ST(tmrt_vision_set_pixel_bounds(v, 0, 1ull << 33), TMEM_E_INVALID_ARG); /* above 2^32 */
    CHECK_ST(tmrt_vision_set_pixel_bounds(NULL, 1024, 2048), TMEM_E_INVALID_ARG);
    const tmrt_vision_config *c = tmrt_vision_get_config(v);
    CHECK(c->min_pixels == 1024 && c->max_pixels == 1024);
    tmem_surface_release(s);
    free(px);
    tmrt_vision_close(v);
}

/* Rows for tmrt__vis_write_mmproj: ones, except a NaN in one named tensor. */
static tmem_status poisoned_row(void *user, const char *name, int how, size_t tensor, uint64_t row, float *out,
                                uint64_t n, tmrt_error *err) {
    (void)how, (void)tensor, (void)row, (void)err;
    for (uint64_t i = 0; i < n; i++) out[i] = 0.01f * (float)(i % 7);
    if (!strcmp(name, (const char *)user)) out[n / 2] = NAN;
    return TMEM_OK;
}

static void test_hostile(tmem_context *ctx) {
    tmrt_vision_config c;
    tmrt_error err = {""};
    REQUIRE(tmrt_vision_preset("tiny", &c) == TMEM_OK);
    tmrt_vision *v = NULL;
    tmrt_vision_desc vd = {"/nonexistent.gguf", TMRT_MEMORY_TYPED, NULL}, vnd = {NULL, TMRT_MEMORY_NAIVE, NULL};
    CHECK_ST(tmrt_vision_open(ctx, &vd, &v, &err), TMEM_E_NOT_FOUND);
    CHECK(v == NULL && strstr(err.message, "nonexistent"));
    vnd.path = vd.path;
    CHECK_ST(tmrt_vision_open(NULL, &vnd, &v, &err), TMEM_E_NOT_FOUND);
    CHECK_ST(tmrt_vision_open(NULL, &vd, &v, &err), TMEM_E_INVALID_ARG); /* typed without a context */
    vd.memory = (tmrt_memory_mode)7;
    CHECK_ST(tmrt_vision_open(ctx, &vd, &v, &err), TMEM_E_INVALID_ARG);
    vd.memory = TMRT_MEMORY_TYPED;
    CHECK_ST(tmrt_vision_open(ctx, NULL, &v, NULL), TMEM_E_INVALID_ARG);
    vd.path = path;
    /* A text GGUF is not an mmproj. */
    tmem_gguf_writer *w;
    REQUIRE_OK(tmem_gguf_writer_create(NULL, 0, &w));
    tmem_gguf_value val = {.type = TMEM_GGUF_STRING};
    val.v.s.data = "qwen35", val.v.s.len = 6;
    REQUIRE_OK(tmem_gguf_writer_set(w, "general.architecture", &val));
    size_t need;
    CHECK_ST(tmem_gguf_writer_write(w, NULL, 0, &need), TMEM_E_FULL); /* sizes it */
    void *buf = malloc(need);
    REQUIRE_OK(tmem_gguf_writer_write(w, buf, need, &need));
    snprintf(path, sizeof path, "%s/text.gguf", dir);
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL);
    fwrite(buf, 1, need, f), fclose(f), free(buf);
    tmem_gguf_writer_destroy(w);
    CHECK_ST(tmrt_vision_open(ctx, &vd, &v, &err), TMEM_E_UNSUPPORTED);
    CHECK(strstr(err.message, "projector_type"));
    /* A NaN in a norm's bias is refused, naming the tensor. */
    snprintf(path, sizeof path, "%s/nan.gguf", dir);
    REQUIRE(tmrt__vis_write_mmproj(&c, TMEM_GGML_F32, path, poisoned_row, (void *)"v.blk.1.ln2.bias", NULL, &err) ==
            TMEM_OK);
    CHECK_ST(tmrt_vision_open(ctx, &vd, &v, &err), TMEM_E_CORRUPT);
    CHECK(v == NULL && strstr(err.message, "v.blk.1.ln2.bias"));
    /* A truncated file is refused by the GGUF reader, nothing mapped. */
    FILE *tf = fopen(path, "r+b");
    REQUIRE(tf != NULL);
    REQUIRE(ftruncate(fileno(tf), 4096) == 0);
    fclose(tf);
    CHECK(tmrt_vision_open(ctx, &vd, &v, &err) != TMEM_OK && v == NULL);
    vnd.path = path;
    CHECK(tmrt_vision_open(NULL, &vnd, &v, &err) != TMEM_OK && v == NULL);
    /* Mismatched config: more heads than the head dim allows. */
    c.heads = 5;
    snprintf(path, sizeof path, "%s/bad.gguf", dir);
    REQUIRE(tmrt_vision_write_random(&c, TMEM_GGML_F32, 1, path, &err) == TMEM_OK);
    CHECK_ST(tmrt_vision_open(ctx, &vd, &v, &err), TMEM_E_CORRUPT);
    CHECK(strstr(err.message, "inconsistent"));
}

int main(void) {
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    printf("-- test_smart_resize\n");
    test_smart_resize();
    printf("-- test_encode\n");
    test_encode(ctx);
    printf("-- test_pixel_bounds\n");
    test_pixel_bounds(ctx);
    printf("-- test_hostile\n");
    test_hostile(ctx);
    tmem_context_destroy(ctx);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return tmem_test_finish();
}

/*
 * Qwen2-VL-style preprocessing, as Hugging Face's Qwen2VLImageProcessor does
 * it: smart resize (sides to multiples of patch*merge within [min_pixels,
 * max_pixels]), rescale by 1/255, normalise with the model's mean/std,
 * repeat the image as `temporal` frames, cut into patches in merge-block
 * order.
 *
 * Typed: all of it is one tmem_surface_convert_patches() pass from the
 * surface into the patch tensor (frame-major rows, so each frame's values are
 * the contiguous input of its half of the Conv3d). Naive: the textbook chain
 * with a buffer and a copy per stage (decode -> RGB -> RGBA "texture" -> f32
 * HWC -> CHW -> patches); it computes the same float expressions (half-pixel
 * bilinear taps, (v - 255 mean) / (255 std)), so the patches are
 * bit-identical. YUV frames (NV12, I420) go through the same chain with float
 * RGB and texture buffers (the YUV -> RGB values are not 8-bit numbers).
 *
 * Resize filter: bilinear with half-pixel centres and no antialiasing. HF
 * resizes with PIL's bicubic (antialiased when shrinking); the two agree
 * exactly only when the resize is the identity (an image whose sides are
 * already multiples of patch*merge inside the pixel bounds). docs/vision.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "vision/vision_internal.h"

tmem_status tmrt_vision_smart_resize(const tmrt_vision_config *c, uint32_t width, uint32_t height,
                                     tmrt_vision_grid *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!c || !out || !c->patch || !c->merge) return TMEM_E_INVALID_ARG;
    double f = (double)c->patch * c->merge, h = height, w = width;
    if (!width || !height || h < f || w < f) return TMEM_E_INVALID_ARG;
    if ((h > w ? h / w : w / h) > 200.0) return TMEM_E_INVALID_ARG;
    /* Python's round(): half to even, which nearbyint does by default. */
    double hb = nearbyint(h / f) * f, wb = nearbyint(w / f) * f;
    if (hb * wb > (double)c->max_pixels) {
        double beta = sqrt(h * w / (double)c->max_pixels);
        hb = fmax(f, floor(h / beta / f) * f), wb = fmax(f, floor(w / beta / f) * f);
    } else if (hb * wb < (double)c->min_pixels) {
        double beta = sqrt((double)c->min_pixels / (h * w));
        hb = ceil(h * beta / f) * f, wb = ceil(w * beta / f) * f;
    }
    if (hb > TMEM_SURFACE_MAX_DIM || wb > TMEM_SURFACE_MAX_DIM) return TMEM_E_INVALID_ARG;
    out->width = (uint32_t)wb, out->height = (uint32_t)hb;
    out->grid_w = out->width / c->patch, out->grid_h = out->height / c->patch;
    out->n_patches = out->grid_w * out->grid_h;
    out->n_tokens = out->n_patches / (c->merge * c->merge);
    return TMEM_OK;
}

tmem_status tmrt_vision_set_pixel_bounds(tmrt_vision *v, uint64_t min_pixels, uint64_t max_pixels) {
    if (!v) return TMEM_E_INVALID_ARG;
    uint64_t lo = min_pixels ? min_pixels : v->cfg.min_pixels;
    uint64_t hi = max_pixels ? max_pixels : v->cfg.max_pixels;
    uint64_t token = (uint64_t)v->cfg.patch * v->cfg.merge * v->cfg.patch * v->cfg.merge;
    if (lo > hi || hi > UINT32_MAX || lo < token) return TMEM_E_INVALID_ARG;
    v->cfg.min_pixels = lo, v->cfg.max_pixels = hi;
    return TMEM_OK;
}

void tmrt__vis_convert_desc(const tmrt_vision_config *c, tmem_convert_desc *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 3; i++) out->mean[i] = c->mean[i], out->std[i] = c->std[i];
    out->filter = TMEM_RESIZE_BILINEAR;
}

tmem_status tmrt__vis_patches_fused(const tmrt_vision *v, tmem_surface *image, const tmrt_vision_grid *g,
                                    float *patches, tmrt_error *err) {
    const tmrt_vision_config *c = &v->cfg;
    tmem_convert_desc cd;
    tmrt__vis_convert_desc(c, &cd);
    tmem_patch_desc pd = {g->width, g->height, c->patch, c->merge, c->temporal,
                          TMEM_PATCH_FRAME_MAJOR};
    uint64_t cols = 3ull * c->temporal * c->patch * c->patch;
    tmem_tensor_view dst = {
        patches, TMEM_DTYPE_F32, 2, {g->n_patches, cols, 0, 0}, {(int64_t)(cols * 4), 4, 0, 0}};
    tmem_status st = tmem_surface_convert_patches(image, &cd, &pd, &dst);
    if (st != TMEM_OK) return tmrt__fail(err, st, "image conversion into patches failed: %s", tmem_status_name(st));
    return TMEM_OK;
}

/* ---- naive: a buffer per stage ---- */

typedef struct tap {
    uint32_t i0, i1;
    float w;
} tap;

/* The fused conversion's bilinear taps (half-pixel centres, clamped). */
static tap bilinear_tap(uint32_t i, uint32_t out_n, uint32_t in_n) {
    double s = ((double)i + 0.5) * ((double)in_n / (double)out_n) - 0.5;
    if (s < 0.0) s = 0.0;
    if (s > (double)(in_n - 1)) s = (double)(in_n - 1);
    tap t;
    t.i0 = (uint32_t)s;
    t.i1 = t.i0 + 1 < in_n ? t.i0 + 1 : t.i0;
    t.w = (float)(s - (double)t.i0);
    return t;
}

/* Stage 1, a YUV camera frame: decoded to float RGB by the library's
 * conversion at the identity (scale 1, mean 0, std 1: out = v exactly; the
 * taps land on whole pixels, weight 0), so the values are the unrounded
 * Y'CbCr -> RGB the fused conversion interpolates. An 8-bit RGB buffer here
 * would round them and the twin would no longer be bit-identical. */
static tmem_status yuv_to_rgb_f32(tmem_surface *image, uint32_t W, uint32_t H, float *rgb, tmrt_error *err) {
    tmem_convert_desc cd = {0};
    cd.filter = TMEM_RESIZE_BILINEAR;
    cd.scale = 1.0f;
    for (int k = 0; k < 3; k++) cd.mean[k] = 0.0f, cd.std[k] = 1.0f;
    tmem_tensor_view hwc = {rgb, TMEM_DTYPE_F32, 3, {3, H, W, 0}, {4, (int64_t)W * 12, 12, 0}};
    tmem_status st = tmem_surface_convert(image, &cd, &hwc);
    if (st != TMEM_OK) return tmrt__fail(err, st, "YUV -> RGB failed: %s", tmem_status_name(st));
    return TMEM_OK;
}

/* Stage 1, a decoded image: its pixels into a packed RGB8 buffer. */
static tmem_status decoded_to_rgb8(tmem_surface *image, tmem_pixel_format f, uint32_t W, uint32_t H, uint8_t *rgb,
                                   tmrt_error *err) {
    tmem_tensor_view pv;
    tmem_status st = tmem_surface_plane_view(image, 0, NULL, &pv);
    if (st == TMEM_OK) st = tmem_surface_lock(image, TMEM_LOCK_READ_ONLY, NULL);
    if (st != TMEM_OK) return tmrt__fail(err, st, "cannot read the image surface: %s", tmem_status_name(st));
    for (uint32_t y = 0; y < H; y++) {
        const uint8_t *s = (const uint8_t *)pv.data + (size_t)y * (size_t)pv.strides[0];
        uint8_t *d = rgb + (size_t)y * W * 3;
        for (uint32_t x = 0; x < W; x++) {
            const uint8_t *q = s + (size_t)x * (size_t)pv.strides[1];
            if (f == TMEM_FORMAT_GRAY8)
                d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = q[0];
            else if (f == TMEM_FORMAT_BGRA8)
                d[3 * x] = q[2], d[3 * x + 1] = q[1], d[3 * x + 2] = q[0];
            else
                d[3 * x] = q[0], d[3 * x + 1] = q[1], d[3 * x + 2] = q[2];
        }
    }
    if ((st = tmem_surface_unlock(image, TMEM_LOCK_READ_ONLY, NULL)) != TMEM_OK)
        return tmrt__fail(err, st, "cannot unlock the image surface: %s", tmem_status_name(st));
    return TMEM_OK;
}

/* A texel channel of the RGBA "texture": float (YUV sources) or 8-bit. */
static inline float texel(const void *tex, bool f32, size_t i) {
    return f32 ? ((const float *)tex)[i] : (float)((const uint8_t *)tex)[i];
}

/* Stage 3: resize + rescale + normalise into f32 HWC, the fused conversion's
 * float expressions: (v/255 - mean) / std as (v - 255 mean) / (255 std). */
static void resize_normalise(const tmrt_vision_config *c, const void *tex, bool f32, uint32_t W,
                             uint32_t H, uint32_t OW, uint32_t OH, float *hwc) {
    float sub[3], div[3];
    for (int k = 0; k < 3; k++) {
        sub[k] = (float)((double)c->mean[k] * 255.0);
        div[k] = (float)((double)c->std[k] * 255.0);
    }
    for (uint32_t y = 0; y < OH; y++) {
        tap ty = bilinear_tap(y, OH, H);
        for (uint32_t x = 0; x < OW; x++) {
            tap tx = bilinear_tap(x, OW, W);
            size_t i00 = ((size_t)ty.i0 * W + tx.i0) * 4, i01 = ((size_t)ty.i0 * W + tx.i1) * 4;
            size_t i10 = ((size_t)ty.i1 * W + tx.i0) * 4, i11 = ((size_t)ty.i1 * W + tx.i1) * 4;
            for (size_t k = 0; k < 3; k++) {
                float v00 = texel(tex, f32, i00 + k), v01 = texel(tex, f32, i01 + k);
                float v10 = texel(tex, f32, i10 + k), v11 = texel(tex, f32, i11 + k);
                float top = v00 + (v01 - v00) * tx.w, bot = v10 + (v11 - v10) * tx.w;
                float vv = top + (bot - top) * ty.w;
                hwc[((size_t)y * OW + x) * 3 + k] = (vv - sub[k]) / div[k];
            }
        }
    }
}

tmem_status tmrt__vis_patches_naive(const tmrt_vision *v, tmem_surface *image, const tmrt_vision_grid *g,
                                    float *patches, uint32_t *copies, tmrt_error *err) {
    const tmrt_vision_config *c = &v->cfg;
    tmem_surface_info info;
    if (tmem_surface_get_info(image, &info) != TMEM_OK)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "bad image surface");
    tmem_pixel_format f = info.layout.format;
    bool yuv = f == TMEM_FORMAT_NV12 || f == TMEM_FORMAT_I420;
    if (!yuv && f != TMEM_FORMAT_RGB8 && f != TMEM_FORMAT_RGBA8 && f != TMEM_FORMAT_BGRA8 &&
        f != TMEM_FORMAT_GRAY8)
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "--memory naive cannot read %s images",
                          tmem_pixel_format_name(f));
    uint32_t W = info.layout.width, H = info.layout.height, OW = g->width, OH = g->height;
    size_t n = (size_t)W * H, on = (size_t)OW * OH, texel_bytes = yuv ? sizeof(float) : 1;
    void *rgb = malloc(n * 3 * texel_bytes), *tex = malloc(n * 4 * texel_bytes);
    float *hwc = malloc(on * 3 * sizeof(float)), *chw = malloc(on * 3 * sizeof(float));
    tmem_status st;
    if (!rgb || !tex || !hwc || !chw) {
        st = tmrt__fail(err, TMEM_E_NO_MEMORY, "out of memory (naive image stages)");
        goto out;
    }
    /* 1. decoded pixels (or the camera's YUV) -> packed RGB buffer */
    if ((st = yuv ? yuv_to_rgb_f32(image, W, H, rgb, err) : decoded_to_rgb8(image, f, W, H, rgb, err)))
        goto out;
    /* 2. RGB -> RGBA "texture upload" */
    for (size_t i = 0; i < n; i++) {
        if (yuv) {
            const float *s = (const float *)rgb + 3 * i;
            float *d = (float *)tex + 4 * i;
            d[0] = s[0], d[1] = s[1], d[2] = s[2], d[3] = 255.0f;
        } else {
            const uint8_t *s = (const uint8_t *)rgb + 3 * i;
            uint8_t *d = (uint8_t *)tex + 4 * i;
            d[0] = s[0], d[1] = s[1], d[2] = s[2], d[3] = 255;
        }
    }
    /* 3. resize + rescale + normalise into f32 HWC */
    resize_normalise(c, tex, yuv, W, H, OW, OH, hwc);
    /* 4. HWC -> CHW */
    for (size_t i = 0; i < on; i++)
        for (int k = 0; k < 3; k++) chw[(size_t)k * on + i] = hwc[i * 3 + (size_t)k];
    /* 5. CHW -> patches (frame-major rows, the frames repeated) */
    uint32_t p = c->patch, m = c->merge, T = c->temporal;
    size_t pp = 3ull * p * p;
    for (uint32_t t = 0; t < g->n_patches; t++) {
        uint32_t row, col;
        tmrt__vis_token_pos(t, g->grid_w, m, &row, &col);
        float *dst = patches + (size_t)t * pp * T;
        for (uint32_t k = 0; k < 3; k++)
            for (uint32_t py = 0; py < p; py++)
                for (uint32_t px = 0; px < p; px++) {
                    float val =
                        chw[(size_t)k * on + ((size_t)row * p + py) * OW + (size_t)col * p + px];
                    for (uint32_t fr = 0; fr < T; fr++)
                        dst[fr * pp + ((size_t)k * p + py) * p + px] = val;
                }
    }
    *copies = 5; /* pixel buffer, texture, HWC, CHW, patches */
out:
    free(rgb), free(tex), free(hwc), free(chw);
    return st;
}

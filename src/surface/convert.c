/*
 * The fused conversion: crop + resize + YUV/BGR -> RGB + scale, mean/std +
 * HWC -> CHW + f32/f16 store, in one pass from the surface's pixels straight
 * into the destination tensor. It replaces the naive chain (pixel buffer ->
 * RGB buffer -> resized buffer -> normalized buffer -> transposed tensor) and
 * its four intermediate copies.
 *
 * Each output pixel reads its 2x2 source taps, converts each tap to RGB and
 * then interpolates, which is exactly what "convert to an RGB buffer, then
 * resize" computes (minus the 8-bit rounding of the intermediate buffer), so
 * the multi-pass reference in the tests matches to float rounding.
 *
 * Sampling: half-pixel centres, src = (dst + 0.5) * in/out - 0.5, clamped at
 * the edges; no antialiasing (PyTorch interpolate(align_corners=False),
 * OpenCV INTER_LINEAR). NEAREST picks floor((dst + 0.5) * in/out)
 * (PyTorch's "nearest-exact").
 */
#include "surface/surface_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* YUV -> RGB: v = ky * (Y - y0) + {rv, gu, gv, bu} * (U|V - 128). */
typedef struct yuv_coef {
    float ky, y0, rv, gu, gv, bu;
} yuv_coef;

static const yuv_coef yuv_coefs[TMEM_YUV_COUNT] = {
    [TMEM_YUV_BT601_LIMITED] = {255.0f / 219.0f, 16.0f, 1.596027f, -0.391762f, -0.812968f, 2.017232f},
    [TMEM_YUV_BT601_FULL] = {1.0f, 0.0f, 1.402f, -0.344136f, -0.714136f, 1.772f},
    [TMEM_YUV_BT709_LIMITED] = {255.0f / 219.0f, 16.0f, 1.792741f, -0.213249f, -0.532909f, 2.112402f},
    [TMEM_YUV_BT709_FULL] = {1.0f, 0.0f, 1.5748f, -0.187324f, -0.468124f, 1.8556f},
};

/* Where the source pixels are. */
typedef struct src_image {
    tmem_pixel_format format;
    const uint8_t *plane[3];
    uint64_t bpr[3];
    yuv_coef yuv;
} src_image;

static bool finite_nonzero(float v) { return isfinite(v) && v != 0.0f; }

static float clamp255(float v) { return v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v; }

/* One source pixel as R, G, B, A in 0..255 (A = 255 when the format has none). */
/* Always inlined with a constant `format` (see convert_row), so each format
 * gets its own loop with this switch folded away. */
__attribute__((always_inline)) static inline void fetch(const src_image *s, tmem_pixel_format format, uint32_t x,
                                                        uint32_t y, float px[4]) {
    const uint8_t *p;
    float yv, u, v;
    switch (format) {
    case TMEM_FORMAT_RGBA8:
        p = s->plane[0] + y * s->bpr[0] + (uint64_t)x * 4;
        px[0] = p[0], px[1] = p[1], px[2] = p[2], px[3] = p[3];
        return;
    case TMEM_FORMAT_BGRA8:
        p = s->plane[0] + y * s->bpr[0] + (uint64_t)x * 4;
        px[0] = p[2], px[1] = p[1], px[2] = p[0], px[3] = p[3];
        return;
    case TMEM_FORMAT_RGB8:
        p = s->plane[0] + y * s->bpr[0] + (uint64_t)x * 3;
        px[0] = p[0], px[1] = p[1], px[2] = p[2], px[3] = 255.0f;
        return;
    case TMEM_FORMAT_GRAY8:
        px[0] = px[1] = px[2] = s->plane[0][y * s->bpr[0] + x], px[3] = 255.0f;
        return;
    case TMEM_FORMAT_NV12:
        yv = s->plane[0][y * s->bpr[0] + x];
        p = s->plane[1] + (y >> 1) * s->bpr[1] + (uint64_t)(x >> 1) * 2;
        u = p[0], v = p[1];
        break;
    default: /* I420 */
        yv = s->plane[0][y * s->bpr[0] + x];
        u = s->plane[1][(y >> 1) * s->bpr[1] + (x >> 1)];
        v = s->plane[2][(y >> 1) * s->bpr[2] + (x >> 1)];
        break;
    }
    float l = s->yuv.ky * (yv - s->yuv.y0);
    u -= 128.0f, v -= 128.0f;
    px[0] = clamp255(l + s->yuv.rv * v);
    px[1] = clamp255(l + s->yuv.gu * u + s->yuv.gv * v);
    px[2] = clamp255(l + s->yuv.bu * u);
    px[3] = 255.0f;
}

tmem_status tmem__convert_affine(const tmem_convert_desc *d, float a[4], float b[4]) {
    /* out = v * a[c] + b[c] with a = scale / std, b = -mean / std. */
    float scale = d->scale == 0.0f ? 1.0f / 255.0f : d->scale;
    if (!finite_nonzero(scale)) return tmem__err(TMEM_E_INVALID_ARG);
    for (uint32_t c = 0; c < 4; c++) {
        float sd = d->std[c] == 0.0f ? 1.0f : d->std[c];
        if (!finite_nonzero(sd) || !isfinite(d->mean[c])) return tmem__err(TMEM_E_INVALID_ARG);
        a[c] = scale / sd;
        b[c] = -d->mean[c] / sd;
    }
    return TMEM_OK;
}

void tmem__convert_yuv(tmem_yuv_matrix m, float out[6]) {
    const yuv_coef *c = &yuv_coefs[(unsigned)m < TMEM_YUV_COUNT ? m : TMEM_YUV_BT601_LIMITED];
    out[0] = c->ky, out[1] = c->y0, out[2] = c->rv, out[3] = c->gu, out[4] = c->gv, out[5] = c->bu;
}

/* Source taps and weight of one output coordinate. */
typedef struct tap {
    uint32_t i0, i1;
    float w; /* weight of i1 */
} tap;

/* The taps of output coordinate i of out_n, over source [in_first, in_first+in_n). */
static tap make_tap(uint32_t i, uint32_t out_n, uint32_t in_first, uint32_t in_n, tmem_resize_filter filter) {
    double scale = (double)in_n / (double)out_n;
    tap t;
    if (filter == TMEM_RESIZE_NEAREST) {
        double s = floor(((double)i + 0.5) * scale);
        uint32_t k = s >= in_n ? in_n - 1 : (uint32_t)s;
        t.i0 = t.i1 = in_first + k;
        t.w = 0.0f;
        return t;
    }
    double s = ((double)i + 0.5) * scale - 0.5;
    if (s < 0.0) s = 0.0;
    if (s > (double)(in_n - 1)) s = (double)(in_n - 1);
    uint32_t k = (uint32_t)s;
    t.i0 = in_first + k;
    t.i1 = in_first + (k + 1 < in_n ? k + 1 : k);
    t.w = (float)(s - (double)k);
    return t;
}

void tmem__convert_tap(uint32_t i, uint32_t out_n, uint32_t in_first, uint32_t in_n, tmem_resize_filter filter,
                       uint32_t *i0, uint32_t *i1, float *w) {
    tap t = make_tap(i, out_n, in_first, in_n, filter);
    *i0 = t.i0, *i1 = t.i1, *w = t.w;
}

/* What every output row needs besides its own tap. */
typedef struct row_job {
    const src_image *src;
    const tap *tx;
    uint32_t width, channels;
    const uint32_t *map;      /* source channel of each output channel */
    const float *a, *b;       /* out = v * a[c] + b[c] */
    int64_t cstride, xstride; /* destination strides in bytes */
} row_job;

/* One output row: four taps per pixel, interpolate, normalise, store. */
__attribute__((always_inline)) static inline void convert_row(const row_job *j, const tap *ty, uint8_t *row,
                                                              tmem_pixel_format format, bool f32) {
    for (uint32_t x = 0; x < j->width; x++) {
        const tap *t = &j->tx[x];
        float p00[4], p01[4], p10[4], p11[4], v[4];
        fetch(j->src, format, t->i0, ty->i0, p00);
        fetch(j->src, format, t->i1, ty->i0, p01);
        fetch(j->src, format, t->i0, ty->i1, p10);
        fetch(j->src, format, t->i1, ty->i1, p11);
        for (uint32_t k = 0; k < 4; k++) {
            float top = p00[k] + (p01[k] - p00[k]) * t->w;
            float bot = p10[k] + (p11[k] - p10[k]) * t->w;
            v[k] = top + (bot - top) * ty->w;
        }
        uint8_t *px = row + (int64_t)x * j->xstride;
        for (uint32_t c = 0; c < j->channels; c++) {
            float o = v[j->map[c]] * j->a[c] + j->b[c];
            uint8_t *q = px + (int64_t)c * j->cstride;
            if (f32)
                *(float *)(void *)q = o;
            else
                *(uint16_t *)(void *)q = tmem__f32_to_f16(o);
        }
    }
}

/* Output channel count a source format supports. */
static bool channels_ok(tmem_pixel_format f, uint64_t c) {
    switch (f) {
    case TMEM_FORMAT_NV12:
    case TMEM_FORMAT_I420:
    case TMEM_FORMAT_RGB8: return c == 3;
    case TMEM_FORMAT_RGBA8:
    case TMEM_FORMAT_BGRA8: return c == 3 || c == 4;
    case TMEM_FORMAT_GRAY8: return c == 1 || c == 3;
    default: return false;
    }
}

tmem_status tmem__surface_convert_raw(const tmem_surface_layout *l, const uint8_t *base, const tmem_convert_desc *desc,
                                      const tmem_tensor_view *dst, tmem_context *scratch_ctx) {
    tmem_convert_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (!l || !base || !dst || !dst->data) return tmem__err(TMEM_E_INVALID_ARG);
    if ((unsigned)d.filter >= TMEM_RESIZE_COUNT || (unsigned)d.matrix >= TMEM_YUV_COUNT ||
        (d.flags & ~(uint32_t)TMEM_CONVERT_BGR))
        return tmem__err(TMEM_E_INVALID_ARG);
    if (dst->rank != 3 || (dst->dtype != TMEM_DTYPE_F32 && dst->dtype != TMEM_DTYPE_F16))
        return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t C = dst->shape[0], H = dst->shape[1], W = dst->shape[2];
    if (!channels_ok(l->format, C) || H == 0 || W == 0 || H > TMEM_SURFACE_MAX_DIM || W > TMEM_SURFACE_MAX_DIM)
        return tmem__err(TMEM_E_INVALID_ARG);
    uint32_t vsize = tmem_dtype_size(dst->dtype);
    if ((uintptr_t)dst->data % vsize || dst->strides[0] % vsize || dst->strides[1] % vsize || dst->strides[2] % vsize)
        return tmem__err(TMEM_E_INVALID_ARG);

    /* The source rectangle. */
    tmem_rect r = d.src_rect;
    if (!r.x && !r.y && !r.width && !r.height) r = (tmem_rect){0, 0, l->width, l->height};
    if (!r.width || !r.height || r.x >= l->width || r.y >= l->height || r.width > l->width - r.x ||
        r.height > l->height - r.y)
        return tmem__err(TMEM_E_INVALID_ARG);

    float a[4], b[4];
    tmem_status st = tmem__convert_affine(&d, a, b);
    if (st != TMEM_OK) return st;

    src_image s;
    memset(&s, 0, sizeof s);
    s.format = l->format;
    s.yuv = yuv_coefs[d.matrix];
    for (uint32_t p = 0; p < l->plane_count && p < 3; p++) {
        s.plane[p] = base + l->planes[p].offset;
        s.bpr[p] = l->planes[p].bytes_per_row;
    }
    /* Which source channel feeds output channel c. */
    uint32_t map[4] = {0, 1, 2, 3};
    if (d.flags & TMEM_CONVERT_BGR) map[0] = 2, map[2] = 0;

    /* Tap tables: on the stack for ordinary sizes, else from the context. */
    enum { STACK_TAPS = 2048 };
    tap stack_x[STACK_TAPS];
    tap *tx = stack_x;
    size_t tx_bytes = 0;
    if (W > STACK_TAPS) {
        tx_bytes = (size_t)W * sizeof(tap);
        tx = scratch_ctx ? tmem__malloc(scratch_ctx, tx_bytes) : malloc(tx_bytes);
        if (!tx) return tmem__err(TMEM_E_NO_MEMORY);
    }
    for (uint32_t x = 0; x < W; x++) tx[x] = make_tap(x, (uint32_t)W, r.x, r.width, d.filter);

    row_job job = {&s, tx, (uint32_t)W, (uint32_t)C, map, a, b, dst->strides[0], dst->strides[2]};
    for (uint32_t y = 0; y < H; y++) {
        tap ty = make_tap(y, (uint32_t)H, r.y, r.height, d.filter);
        uint8_t *row = (uint8_t *)dst->data + (int64_t)y * dst->strides[1];
        /* One specialised loop per (format, dtype): the switches stay out of
         * the per-pixel path. */
        bool f32 = dst->dtype == TMEM_DTYPE_F32;
#define CONVERT_ROW(fmt)                                                                                               \
    do {                                                                                                               \
        if (f32)                                                                                                       \
            convert_row(&job, &ty, row, fmt, true);                                                                    \
        else                                                                                                           \
            convert_row(&job, &ty, row, fmt, false);                                                                   \
    } while (0)
        switch (l->format) {
        case TMEM_FORMAT_NV12: CONVERT_ROW(TMEM_FORMAT_NV12); break;
        case TMEM_FORMAT_I420: CONVERT_ROW(TMEM_FORMAT_I420); break;
        case TMEM_FORMAT_RGBA8: CONVERT_ROW(TMEM_FORMAT_RGBA8); break;
        case TMEM_FORMAT_BGRA8: CONVERT_ROW(TMEM_FORMAT_BGRA8); break;
        case TMEM_FORMAT_RGB8: CONVERT_ROW(TMEM_FORMAT_RGB8); break;
        default: CONVERT_ROW(TMEM_FORMAT_GRAY8); break;
        }
#undef CONVERT_ROW
    }
    if (tx != stack_x) {
        if (scratch_ctx)
            tmem__free(scratch_ctx, tx, tx_bytes);
        else
            free(tx);
    }
    return TMEM_OK;
}

tmem_status tmem_surface_convert(tmem_surface *src, const tmem_convert_desc *desc, const tmem_tensor_view *dst) {
    if (!tmem__surface_valid(src)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = tmem_surface_lock(src, TMEM_LOCK_READ_ONLY, NULL);
    if (st != TMEM_OK) return st;
    st = tmem__surface_convert_raw(&src->layout, src->base, desc, dst, src->ctx);
    tmem_status su = tmem_surface_unlock(src, TMEM_LOCK_READ_ONLY, NULL);
    return st != TMEM_OK ? st : su;
}

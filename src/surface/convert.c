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
 *
 * Two destinations share the pass: a strided (C, H, W) tensor and the vision
 * patch order (tmem_surface_convert_patches); the plan (convert_internal.h)
 * turns both into separable byte offsets. Rows run on the AVX2 kernel
 * (convert_avx2.c) when the CPU has it, the scalar row here otherwise, and
 * for the last width % 8 columns; TMEM_CONVERT_REFERENCE forces scalar.
 */
#include "surface/convert_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* {ky, y0, rv, gu, gv, bu} per matrix. */
static const float yuv_coefs[TMEM_YUV_COUNT][6] = {
    [TMEM_YUV_BT601_LIMITED] = {255.0f / 219.0f, 16.0f, 1.596027f, -0.391762f, -0.812968f, 2.017232f},
    [TMEM_YUV_BT601_FULL] = {1.0f, 0.0f, 1.402f, -0.344136f, -0.714136f, 1.772f},
    [TMEM_YUV_BT709_LIMITED] = {255.0f / 219.0f, 16.0f, 1.792741f, -0.213249f, -0.532909f, 2.112402f},
    [TMEM_YUV_BT709_FULL] = {1.0f, 0.0f, 1.5748f, -0.187324f, -0.468124f, 1.8556f},
};

static float clamp255(float v) { return v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v; }

/* One source pixel as R, G, B, A in 0..255 (A = 255 when the format has none).
 * Always inlined with a constant `format` (see tmem__convert_row_scalar), so
 * each format gets its own loop with this switch folded away. */
__attribute__((always_inline)) static inline void fetch(const tmem__convert_plan *s, tmem_pixel_format format,
                                                        uint32_t x, uint32_t y, float px[4]) {
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
    float l = s->ky * (yv - s->y0);
    u -= 128.0f, v -= 128.0f;
    px[0] = clamp255(l + s->rv * v);
    px[1] = clamp255(l + s->gu * u + s->gv * v);
    px[2] = clamp255(l + s->bu * u);
    px[3] = 255.0f;
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

static void store(const tmem__convert_plan *p, uint8_t *px, uint32_t c, float o) {
    uint8_t *q = px + (int64_t)c * p->cstride;
    for (uint32_t t = 0; t < p->copies; t++, q += p->tstride) {
        if (p->f32)
            memcpy(q, &o, sizeof o);
        else {
            uint16_t h = tmem__f32_to_f16(o);
            memcpy(q, &h, sizeof h);
        }
    }
}

/* Four taps per pixel, interpolate, normalise, store. */
__attribute__((always_inline)) static inline void row_format(const tmem__convert_plan *p, const tmem__convert_row *r,
                                                             uint32_t x_begin, uint32_t x_end,
                                                             tmem_pixel_format format) {
    for (uint32_t x = x_begin; x < x_end; x++) {
        float p00[4], p01[4], p10[4], p11[4], v[4], wx = p->xw[x];
        uint32_t x0 = (uint32_t)p->xi0[x], x1 = (uint32_t)p->xi1[x];
        fetch(p, format, x0, r->y0, p00);
        fetch(p, format, x1, r->y0, p01);
        fetch(p, format, x0, r->y1, p10);
        fetch(p, format, x1, r->y1, p11);
        for (uint32_t k = 0; k < 4; k++) {
            float top = p00[k] + (p01[k] - p00[k]) * wx;
            float bot = p10[k] + (p11[k] - p10[k]) * wx;
            v[k] = top + (bot - top) * r->w;
        }
        uint8_t *px = r->out + p->xoff[x];
        for (uint32_t c = 0; c < p->channels; c++) store(p, px, c, (v[p->map[c]] - p->sub[c]) / p->div[c]);
    }
}

void tmem__convert_row_scalar(const tmem__convert_plan *p, const tmem__convert_row *r, uint32_t x_begin,
                              uint32_t x_end) {
    /* One specialised loop per format: the switch stays out of the pixel loop. */
    switch (p->format) {
    case TMEM_FORMAT_NV12: row_format(p, r, x_begin, x_end, TMEM_FORMAT_NV12); break;
    case TMEM_FORMAT_I420: row_format(p, r, x_begin, x_end, TMEM_FORMAT_I420); break;
    case TMEM_FORMAT_RGBA8: row_format(p, r, x_begin, x_end, TMEM_FORMAT_RGBA8); break;
    case TMEM_FORMAT_BGRA8: row_format(p, r, x_begin, x_end, TMEM_FORMAT_BGRA8); break;
    case TMEM_FORMAT_RGB8: row_format(p, r, x_begin, x_end, TMEM_FORMAT_RGB8); break;
    default: row_format(p, r, x_begin, x_end, TMEM_FORMAT_GRAY8); break;
    }
}

static bool finite_nonzero(float v) { return isfinite(v) && v != 0.0f; }

tmem_status tmem__convert_normalise(const tmem_convert_desc *d, float sub[4], float div[4]) {
    /* out = (v * scale - mean) / std, evaluated as (v - mean/scale) /
     * (std/scale) with the two constants computed in double (the default
     * scale as exactly 1/255): for mean = std = 0.5 that is (v - 127.5) /
     * 127.5, one rounding, the correctly rounded value Hugging Face's image
     * processors produce. */
    if (d->scale != 0.0f && !finite_nonzero(d->scale)) return tmem__err(TMEM_E_INVALID_ARG);
    double inv_scale = d->scale == 0.0f ? 255.0 : 1.0 / (double)d->scale;
    for (uint32_t c = 0; c < 4; c++) {
        float sd = d->std[c] == 0.0f ? 1.0f : d->std[c];
        if (!finite_nonzero(sd) || !isfinite(d->mean[c])) return tmem__err(TMEM_E_INVALID_ARG);
        sub[c] = (float)((double)d->mean[c] * inv_scale);
        div[c] = (float)((double)sd * inv_scale);
        if (!finite_nonzero(div[c]) || !isfinite(sub[c])) return tmem__err(TMEM_E_INVALID_ARG);
    }
    return TMEM_OK;
}

void tmem__convert_yuv(tmem_yuv_matrix m, float out[6]) {
    memcpy(out, yuv_coefs[(unsigned)m < TMEM_YUV_COUNT ? m : TMEM_YUV_BT601_LIMITED], 6 * sizeof(float));
}

void tmem__convert_tap(uint32_t i, uint32_t out_n, uint32_t in_first, uint32_t in_n, tmem_resize_filter filter,
                       uint32_t *i0, uint32_t *i1, float *w) {
    tap t = make_tap(i, out_n, in_first, in_n, filter);
    *i0 = t.i0, *i1 = t.i1, *w = t.w;
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

/* Where values go: a strided (C, H, W) tensor (patch == 0) or patch rows. */
typedef struct dst_geometry {
    uint8_t *base;
    uint32_t width, height, channels;
    int64_t sx, sy, cstride, tstride; /* CHW strides; patch: row stride in sy */
    uint32_t patch, merge, copies;
    uint32_t value_size;
    bool f32;
} dst_geometry;

/* Byte offset of column x (is_row false) or row y (true). */
static int64_t axis_offset(const dst_geometry *g, uint32_t i, bool is_row) {
    if (!g->patch) return (int64_t)i * (is_row ? g->sy : g->sx);
    uint32_t p = g->patch, m = g->merge;
    int64_t in_patch = i % p, grid = i / p, in_block = grid % m, block = grid / m;
    if (!is_row) return (block * m * m + in_block) * g->sy + in_patch * g->value_size;
    int64_t blocks_across = g->width / (p * m);
    return (block * blocks_across * m * m + in_block * m) * g->sy + in_patch * p * g->value_size;
}

/* Validate what both entry points share and fill the plan's source, colour
 * and normalisation parts; *rect gets the resolved source rectangle. */
static tmem_status plan_source(const tmem_surface_layout *l, const uint8_t *base, const tmem_convert_desc *desc,
                               uint64_t channels, tmem__convert_plan *p, tmem_rect *rect, tmem_convert_desc *d) {
    memset(d, 0, sizeof *d);
    if (desc) *d = *desc;
    if (!l || !base) return tmem__err(TMEM_E_INVALID_ARG);
    if ((unsigned)d->filter >= TMEM_RESIZE_COUNT || (unsigned)d->matrix >= TMEM_YUV_COUNT ||
        (d->flags & ~(uint32_t)(TMEM_CONVERT_BGR | TMEM_CONVERT_REFERENCE)))
        return tmem__err(TMEM_E_INVALID_ARG);
    if (!channels_ok(l->format, channels)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_rect r = d->src_rect;
    if (!r.x && !r.y && !r.width && !r.height) r = (tmem_rect){0, 0, l->width, l->height};
    if (!r.width || !r.height || r.x >= l->width || r.y >= l->height || r.width > l->width - r.x ||
        r.height > l->height - r.y)
        return tmem__err(TMEM_E_INVALID_ARG);
    memset(p, 0, sizeof *p);
    tmem_status st = tmem__convert_normalise(d, p->sub, p->div);
    if (st != TMEM_OK) return st;
    for (uint32_t c = 0; c < 4; c++) p->map[c] = c;
    if (d->flags & TMEM_CONVERT_BGR) p->map[0] = 2, p->map[2] = 0;
    p->format = l->format;
    const float *k = yuv_coefs[d->matrix];
    p->ky = k[0], p->y0 = k[1], p->rv = k[2], p->gu = k[3], p->gv = k[4], p->bu = k[5];
    for (uint32_t i = 0; i < l->plane_count && i < 3; i++) {
        p->plane[i] = base + l->planes[i].offset;
        p->bpr[i] = l->planes[i].bytes_per_row;
    }
    p->channels = (uint32_t)channels;
    *rect = r;
    return TMEM_OK;
}

/* Column tables on the stack for ordinary widths, else from the context. */
enum { STACK_COLUMNS = 1024, COLUMN_BYTES = 2 * sizeof(int32_t) + sizeof(float) + sizeof(int64_t) };

static tmem_status run_plan(tmem__convert_plan *p, const dst_geometry *g, tmem_rect r, tmem_resize_filter filter,
                            bool reference, tmem_context *scratch_ctx) {
    _Alignas(8) uint8_t stack[STACK_COLUMNS * COLUMN_BYTES];
    uint8_t *mem = stack;
    size_t bytes = (size_t)g->width * COLUMN_BYTES;
    if (g->width > STACK_COLUMNS) {
        mem = scratch_ctx ? tmem__malloc(scratch_ctx, bytes) : malloc(bytes);
        if (!mem) return tmem__err(TMEM_E_NO_MEMORY);
    }
    int64_t *xoff = (int64_t *)(void *)mem;
    int32_t *xi0 = (int32_t *)(void *)(xoff + g->width), *xi1 = xi0 + g->width;
    float *xw = (float *)(void *)(xi1 + g->width);
    for (uint32_t x = 0; x < g->width; x++) {
        tap t = make_tap(x, g->width, r.x, r.width, filter);
        xi0[x] = (int32_t)t.i0, xi1[x] = (int32_t)t.i1, xw[x] = t.w;
        xoff[x] = axis_offset(g, x, false);
    }
    p->width = g->width, p->copies = g->copies, p->f32 = g->f32;
    p->xi0 = xi0, p->xi1 = xi1, p->xw = xw, p->xoff = xoff;
    p->cstride = g->cstride, p->tstride = g->tstride;
    bool simd = !reference && tmem__convert_have_avx2() && tmem__convert_avx2_fits(p);
    /* the AVX2 row's shuffle tables; without the memory it gathers instead */
    size_t table_bytes = simd ? tmem__convert_avx2_table_bytes(p) : 0;
    uint8_t *tables = NULL;
    if (table_bytes) {
        size_t n = table_bytes + 31;
        tables = scratch_ctx ? tmem__malloc(scratch_ctx, n) : malloc(n);
        if (tables) tmem__convert_avx2_prepare(p, tables + (32 - (uintptr_t)tables % 32) % 32);
    }
    for (uint32_t y = 0; y < g->height; y++) {
        tap ty = make_tap(y, g->height, r.y, r.height, filter);
        tmem__convert_row row = {ty.i0, ty.i1, ty.w, g->base + axis_offset(g, y, true)};
        uint32_t done = simd ? tmem__convert_row_avx2(p, &row) : 0;
        if (done < g->width) tmem__convert_row_scalar(p, &row, done, g->width);
    }
    if (tables) {
        if (scratch_ctx)
            tmem__free(scratch_ctx, tables, table_bytes + 31);
        else
            free(tables);
    }
    p->simd = NULL;
    if (mem != stack) {
        if (scratch_ctx)
            tmem__free(scratch_ctx, mem, bytes);
        else
            free(mem);
    }
    return TMEM_OK;
}

static bool dtype_ok(const tmem_tensor_view *dst) {
    return dst && dst->data && (dst->dtype == TMEM_DTYPE_F32 || dst->dtype == TMEM_DTYPE_F16);
}

tmem_status tmem__surface_convert_raw(const tmem_surface_layout *l, const uint8_t *base, const tmem_convert_desc *desc,
                                      const tmem_tensor_view *dst, tmem_context *scratch_ctx) {
    if (!dtype_ok(dst) || dst->rank != 3) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t C = dst->shape[0], H = dst->shape[1], W = dst->shape[2];
    if (H == 0 || W == 0 || H > TMEM_SURFACE_MAX_DIM || W > TMEM_SURFACE_MAX_DIM) return tmem__err(TMEM_E_INVALID_ARG);
    uint32_t vs = tmem_dtype_size(dst->dtype);
    if ((uintptr_t)dst->data % vs || dst->strides[0] % vs || dst->strides[1] % vs || dst->strides[2] % vs)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem__convert_plan p;
    tmem_convert_desc d;
    tmem_rect r;
    tmem_status st = plan_source(l, base, desc, C, &p, &r, &d);
    if (st != TMEM_OK) return st;
    dst_geometry g = {(uint8_t *)dst->data, (uint32_t)W, (uint32_t)H, (uint32_t)C, dst->strides[2], dst->strides[1],
                      dst->strides[0], 0, 0, 0, 1, vs, dst->dtype == TMEM_DTYPE_F32};
    return run_plan(&p, &g, r, d.filter, (d.flags & TMEM_CONVERT_REFERENCE) != 0, scratch_ctx);
}

tmem_status tmem__surface_convert_patches_raw(const tmem_surface_layout *l, const uint8_t *base,
                                              const tmem_convert_desc *desc, const tmem_patch_desc *patch,
                                              const tmem_tensor_view *dst, tmem_context *scratch_ctx) {
    if (!dtype_ok(dst) || dst->rank != 2 || !patch) return tmem__err(TMEM_E_INVALID_ARG);
    uint32_t ps = patch->patch ? patch->patch : 16, m = patch->merge ? patch->merge : 2;
    uint32_t T = patch->temporal ? patch->temporal : 2, W = patch->width, H = patch->height;
    if (ps > 1024 || m > 64 || T > 64 || !W || !H || W > TMEM_SURFACE_MAX_DIM || H > TMEM_SURFACE_MAX_DIM ||
        W % (ps * m) || H % (ps * m) || (patch->flags & ~(uint32_t)TMEM_PATCH_FRAME_MAJOR))
        return tmem__err(TMEM_E_INVALID_ARG);
    uint32_t C = 3; /* grey sources are replicated, as a vision model's RGB input */
    uint32_t vs = tmem_dtype_size(dst->dtype);
    uint64_t cols = (uint64_t)C * T * ps * ps, rows = (uint64_t)(W / ps) * (H / ps);
    if (dst->shape[0] != rows || dst->shape[1] != cols || dst->strides[1] != (int64_t)vs || dst->strides[0] < 0 ||
        (uint64_t)dst->strides[0] < cols * vs || dst->strides[0] % vs || (uintptr_t)dst->data % vs)
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem__convert_plan p;
    tmem_convert_desc d;
    tmem_rect r;
    tmem_status st = plan_source(l, base, desc, C, &p, &r, &d);
    if (st != TMEM_OK) return st;
    int64_t plane_bytes = (int64_t)ps * ps * vs;
    bool frame_major = (patch->flags & TMEM_PATCH_FRAME_MAJOR) != 0;
    int64_t cstride = frame_major ? plane_bytes : plane_bytes * T;
    int64_t tstride = frame_major ? plane_bytes * C : plane_bytes;
    dst_geometry g = {(uint8_t *)dst->data, W, H, C, 0, dst->strides[0], cstride, tstride,
                      ps, m, T, vs, dst->dtype == TMEM_DTYPE_F32};
    return run_plan(&p, &g, r, d.filter, (d.flags & TMEM_CONVERT_REFERENCE) != 0, scratch_ctx);
}

/* Either conversion under a read-only lock of the source (patch NULL: CHW). */
static tmem_status convert_locked(tmem_surface *src, const tmem_convert_desc *desc, const tmem_patch_desc *patch,
                                  const tmem_tensor_view *dst) {
    if (!tmem__surface_valid(src)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = tmem_surface_lock(src, TMEM_LOCK_READ_ONLY, NULL);
    if (st != TMEM_OK) return st;
    st = patch ? tmem__surface_convert_patches_raw(&src->layout, src->base, desc, patch, dst, src->ctx)
               : tmem__surface_convert_raw(&src->layout, src->base, desc, dst, src->ctx);
    tmem_status su = tmem_surface_unlock(src, TMEM_LOCK_READ_ONLY, NULL);
    return st != TMEM_OK ? st : su;
}

tmem_status tmem_surface_convert(tmem_surface *src, const tmem_convert_desc *desc, const tmem_tensor_view *dst) {
    return convert_locked(src, desc, NULL, dst);
}

tmem_status tmem_surface_convert_patches(tmem_surface *src, const tmem_convert_desc *desc,
                                         const tmem_patch_desc *patch, const tmem_tensor_view *dst) {
    if (!patch) return tmem__err(TMEM_E_INVALID_ARG);
    return convert_locked(src, desc, patch, dst);
}

const char *tmem_surface_convert_isa(void) { return tmem__convert_have_avx2() ? "avx2" : "scalar"; }

/* Fused conversion against a naive multi-pass reference:
 *   pass 1  source -> full-resolution float RGBA (textbook YUV formulas)
 *   pass 2  crop + bilinear / nearest resize (half-pixel centres)
 *   pass 3  scale, mean/std, HWC -> CHW (and channel order)
 * for every source format, random sizes, crops, pitches, F32 and F16
 * destinations with odd strides. Bound: 1e-4 absolute for F32, the F16
 * rounding of the reference for F16. Plus hand-computed cases and errors. */
#include "harness.h"
#include "surface/convert_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Textbook BT.601 / BT.709 coefficients (Kr, Kb) and ranges, derived here
 * independently of the library's table. */
static void yuv_to_rgb(tmem_yuv_matrix m, double y, double u, double v, double rgb[3]) {
    double kr = (m == TMEM_YUV_BT709_LIMITED || m == TMEM_YUV_BT709_FULL) ? 0.2126 : 0.299;
    double kb = (m == TMEM_YUV_BT709_LIMITED || m == TMEM_YUV_BT709_FULL) ? 0.0722 : 0.114;
    double kg = 1.0 - kr - kb;
    bool limited = m == TMEM_YUV_BT601_LIMITED || m == TMEM_YUV_BT709_LIMITED;
    double yy = limited ? (y - 16.0) * 255.0 / 219.0 : y;
    double pb = (u - 128.0) * (limited ? 255.0 / 224.0 : 1.0);
    double pr = (v - 128.0) * (limited ? 255.0 / 224.0 : 1.0);
    double r = yy + 2.0 * (1.0 - kr) * pr;
    double b = yy + 2.0 * (1.0 - kb) * pb;
    double g = (yy - kr * r - kb * b) / kg;
    double c[3] = {r, g, b};
    for (int i = 0; i < 3; i++) rgb[i] = c[i] < 0 ? 0 : c[i] > 255 ? 255 : c[i];
}

/* Pass 1: whole image to float RGBA. */
static double *pass_decode(const tmem_surface_layout *l, const uint8_t *base, tmem_yuv_matrix m) {
    double *img = malloc(sizeof(double) * 4 * l->width * l->height);
    for (uint32_t y = 0; y < l->height; y++) {
        for (uint32_t x = 0; x < l->width; x++) {
            double *px = img + 4 * ((size_t)y * l->width + x);
            const uint8_t *p0 = base + l->planes[0].offset + y * l->planes[0].bytes_per_row;
            px[3] = 255;
            switch (l->format) {
            case TMEM_FORMAT_RGBA8: for (int c = 0; c < 4; c++) px[c] = p0[4 * x + c]; break;
            case TMEM_FORMAT_BGRA8: px[0] = p0[4 * x + 2], px[1] = p0[4 * x + 1], px[2] = p0[4 * x], px[3] = p0[4 * x + 3]; break;
            case TMEM_FORMAT_RGB8: for (int c = 0; c < 3; c++) px[c] = p0[3 * x + c]; break;
            case TMEM_FORMAT_GRAY8: px[0] = px[1] = px[2] = p0[x]; break;
            case TMEM_FORMAT_NV12: {
                const uint8_t *uv = base + l->planes[1].offset + (y / 2) * l->planes[1].bytes_per_row + (x / 2) * 2;
                yuv_to_rgb(m, p0[x], uv[0], uv[1], px);
                break;
            }
            default: {
                uint8_t u = base[l->planes[1].offset + (y / 2) * l->planes[1].bytes_per_row + x / 2];
                uint8_t v = base[l->planes[2].offset + (y / 2) * l->planes[2].bytes_per_row + x / 2];
                yuv_to_rgb(m, p0[x], u, v, px);
            }
            }
        }
    }
    return img;
}

/* Pass 2: crop + resize to W x H float RGBA. */
static double *pass_resize(const double *img, uint32_t iw, tmem_rect r, uint32_t W, uint32_t H, tmem_resize_filter f) {
    double *out = malloc(sizeof(double) * 4 * W * H);
    for (uint32_t y = 0; y < H; y++) {
        for (uint32_t x = 0; x < W; x++) {
            double sx = ((double)x + 0.5) * r.width / W - 0.5, sy = ((double)y + 0.5) * r.height / H - 0.5;
            uint32_t x0, y0, x1, y1;
            double fx, fy;
            if (f == TMEM_RESIZE_NEAREST) {
                x0 = x1 = (uint32_t)fmin(floor(((double)x + 0.5) * r.width / W), r.width - 1);
                y0 = y1 = (uint32_t)fmin(floor(((double)y + 0.5) * r.height / H), r.height - 1);
                fx = fy = 0;
            } else {
                sx = fmin(fmax(sx, 0), r.width - 1);
                sy = fmin(fmax(sy, 0), r.height - 1);
                x0 = (uint32_t)sx, y0 = (uint32_t)sy;
                x1 = x0 + 1 < r.width ? x0 + 1 : x0;
                y1 = y0 + 1 < r.height ? y0 + 1 : y0;
                fx = sx - x0, fy = sy - y0;
            }
            for (int c = 0; c < 4; c++) {
#define AT(xx, yy) img[4 * ((size_t)(r.y + (yy)) * iw + r.x + (xx)) + c]
                double top = AT(x0, y0) * (1 - fx) + AT(x1, y0) * fx;
                double bot = AT(x0, y1) * (1 - fx) + AT(x1, y1) * fx;
#undef AT
                out[4 * ((size_t)y * W + x) + c] = top * (1 - fy) + bot * fy;
            }
        }
    }
    return out;
}

static float read_dst(const tmem_tensor_view *v, uint64_t c, uint64_t y, uint64_t x) {
    const uint8_t *p = (const uint8_t *)v->data + c * v->strides[0] + y * v->strides[1] + x * v->strides[2];
    if (v->dtype == TMEM_DTYPE_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return tmem__f16_to_f32(h);
}

static const tmem_pixel_format sources[] = {TMEM_FORMAT_NV12, TMEM_FORMAT_I420, TMEM_FORMAT_BGRA8,
                                            TMEM_FORMAT_RGBA8, TMEM_FORMAT_RGB8, TMEM_FORMAT_GRAY8};

static void test_against_reference(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(20241));
    double worst32 = 0, worst16 = 0;
    int cases = 0;
    for (int it = 0; it < 120; it++) {
        tmem_surface_desc d;
        memset(&d, 0, sizeof d);
        d.format = sources[tmem_rng_range(&r, 0, 5)];
        d.width = (uint32_t)tmem_rng_range(&r, 1, 97);
        d.height = (uint32_t)tmem_rng_range(&r, 1, 61);
        if (tmem_rng_range(&r, 0, 1)) d.row_alignment = 1u << tmem_rng_range(&r, 0, 8);
        tmem_surface_layout l;
        REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
        uint8_t *base = malloc(l.alloc_size);
        for (uint64_t i = 0; i < l.alloc_size; i++) base[i] = (uint8_t)tmem_rng_next(&r);

        tmem_convert_desc cd;
        memset(&cd, 0, sizeof cd);
        cd.filter = tmem_rng_range(&r, 0, 3) ? TMEM_RESIZE_BILINEAR : TMEM_RESIZE_NEAREST;
        cd.matrix = (tmem_yuv_matrix)tmem_rng_range(&r, 0, TMEM_YUV_COUNT - 1);
        if (tmem_rng_range(&r, 0, 1)) {
            cd.src_rect.x = (uint32_t)tmem_rng_range(&r, 0, d.width - 1);
            cd.src_rect.y = (uint32_t)tmem_rng_range(&r, 0, d.height - 1);
            cd.src_rect.width = (uint32_t)tmem_rng_range(&r, 1, d.width - cd.src_rect.x);
            cd.src_rect.height = (uint32_t)tmem_rng_range(&r, 1, d.height - cd.src_rect.y);
        }
        float means[3] = {0.485f, 0.456f, 0.406f}, stds[3] = {0.229f, 0.224f, 0.225f};
        if (tmem_rng_range(&r, 0, 1)) {
            memcpy(cd.mean, means, sizeof means);
            memcpy(cd.std, stds, sizeof stds);
        }
        uint64_t C = d.format == TMEM_FORMAT_GRAY8 && tmem_rng_range(&r, 0, 1) ? 1 : 3;
        if ((d.format == TMEM_FORMAT_RGBA8 || d.format == TMEM_FORMAT_BGRA8) && tmem_rng_range(&r, 0, 1)) C = 4;
        if (C == 3 && tmem_rng_range(&r, 0, 3) == 0) cd.flags = TMEM_CONVERT_BGR;
        uint32_t W = (uint32_t)tmem_rng_range(&r, 1, 70), H = (uint32_t)tmem_rng_range(&r, 1, 50);
        tmem_dtype dt = tmem_rng_range(&r, 0, 1) ? TMEM_DTYPE_F32 : TMEM_DTYPE_F16;
        /* Padded, non-packed destination strides. */
        uint32_t vs = tmem_dtype_size(dt);
        uint64_t px_stride = vs * (1 + tmem_rng_range(&r, 0, 1));
        uint64_t row_stride = px_stride * W + vs * tmem_rng_range(&r, 0, 3);
        uint64_t ch_stride = row_stride * H + vs * tmem_rng_range(&r, 0, 5);
        uint8_t *dst_mem = calloc(1, ch_stride * C);
        tmem_tensor_view dst = {dst_mem, dt, 3, {C, H, W, 0}, {(int64_t)ch_stride, (int64_t)row_stride, (int64_t)px_stride, 0}};
        REQUIRE_OK(tmem__surface_convert_raw(&l, base, &cd, &dst, NULL));

        tmem_rect rr = cd.src_rect;
        if (!rr.width) rr = (tmem_rect){0, 0, d.width, d.height};
        double *full = pass_decode(&l, base, cd.matrix);
        double *small = pass_resize(full, d.width, rr, W, H, cd.filter);
        for (uint64_t c = 0; c < C; c++) {
            uint64_t src_c = (cd.flags & TMEM_CONVERT_BGR) ? 2 - c : c;
            double sd = cd.std[c] ? cd.std[c] : 1.0;
            for (uint32_t y = 0; y < H; y++) {
                for (uint32_t x = 0; x < W; x++) {
                    double want = (small[4 * ((size_t)y * W + x) + src_c] / 255.0 - cd.mean[c]) / sd;
                    double got = read_dst(&dst, c, y, x);
                    double err = fabs(got - want);
                    if (dt == TMEM_DTYPE_F32) {
                        if (err > worst32) worst32 = err;
                    } else {
                        /* F16 has 11 significant bits: relative 2^-11, plus
                         * the reference's own error. */
                        double rel = err / fmax(fabs(want), 1e-3);
                        if (rel > worst16) worst16 = rel;
                    }
                }
            }
        }
        cases++;
        free(full);
        free(small);
        free(dst_mem);
        free(base);
    }
    printf("   %d cases: max abs error f32 %.3g, max rel error f16 %.3g\n", cases, worst32, worst16);
    CHECK_MSG(worst32 < 2e-4, "f32 error %g", worst32);
    CHECK_MSG(worst16 < 1.2e-3, "f16 error %g", worst16);
}

/* Values that can be worked out by hand. */
static void test_hand_cases(void) {
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_RGBA8;
    d.width = 2;
    d.height = 2;
    tmem_surface_layout l;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    uint8_t base[256] = {0};
    const uint8_t px[4][4] = {{0, 10, 20, 255}, {100, 110, 120, 255}, {200, 210, 220, 255}, {40, 50, 60, 255}};
    memcpy(base, px[0], 4);
    memcpy(base + 4, px[1], 4);
    memcpy(base + l.planes[0].bytes_per_row, px[2], 4);
    memcpy(base + l.planes[0].bytes_per_row + 4, px[3], 4);
    float out[3];
    tmem_tensor_view v;
    REQUIRE_OK(tmem_tensor_view_chw(out, TMEM_DTYPE_F32, 3, 1, 1, &v));
    tmem_convert_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.scale = 1.0f;
    REQUIRE_OK(tmem__surface_convert_raw(&l, base, &cd, &v, NULL));
    /* 2x2 -> 1x1 bilinear samples the exact centre: the average. */
    CHECK(fabsf(out[0] - 85.0f) < 1e-4f && fabsf(out[1] - 95.0f) < 1e-4f && fabsf(out[2] - 105.0f) < 1e-4f);
    /* Same size: identity, then mean/std. */
    float big[3 * 4];
    REQUIRE_OK(tmem_tensor_view_chw(big, TMEM_DTYPE_F32, 3, 2, 2, &v));
    cd.mean[0] = 100.0f, cd.std[0] = 2.0f;
    REQUIRE_OK(tmem__surface_convert_raw(&l, base, &cd, &v, NULL));
    CHECK(big[0] == -50.0f && big[1] == 0.0f && big[2] == 50.0f && big[3] == -30.0f);
    CHECK(big[4] == 10.0f && big[8 + 3] == 60.0f);
    /* NV12 grey: Y=126, U=V=128 in full range is (126,126,126). */
    d.format = TMEM_FORMAT_NV12;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    memset(base, 0, sizeof base);
    memset(base, 126, l.planes[0].size);
    memset(base + l.planes[1].offset, 128, 2);
    REQUIRE_OK(tmem_tensor_view_chw(out, TMEM_DTYPE_F32, 3, 1, 1, &v));
    memset(&cd, 0, sizeof cd);
    cd.matrix = TMEM_YUV_BT601_FULL;
    REQUIRE_OK(tmem__surface_convert_raw(&l, base, &cd, &v, NULL));
    CHECK(fabsf(out[0] - 126.0f / 255.0f) < 1e-6f && fabsf(out[2] - 126.0f / 255.0f) < 1e-6f);
    /* Limited range: Y=16 is black, Y=235 white. */
    memset(base, 235, l.planes[0].size);
    cd.matrix = TMEM_YUV_BT601_LIMITED;
    REQUIRE_OK(tmem__surface_convert_raw(&l, base, &cd, &v, NULL));
    CHECK(fabsf(out[1] - 1.0f) < 1e-5f);
}

static void test_errors(void) {
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_RGB8;
    d.width = 8;
    d.height = 8;
    tmem_surface_layout l;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    static uint8_t base[4096];
    static float out[3 * 16];
    tmem_tensor_view v;
    REQUIRE_OK(tmem_tensor_view_chw(out, TMEM_DTYPE_F32, 3, 4, 4, &v));
    tmem_convert_desc cd;
    memset(&cd, 0, sizeof cd);
    CHECK_OK(tmem__surface_convert_raw(&l, base, NULL, &v, NULL));
    CHECK_ST(tmem__surface_convert_raw(&l, NULL, &cd, &v, NULL), TMEM_E_INVALID_ARG);
    tmem_tensor_view bad = v;
    bad.shape[0] = 4; /* RGB8 has no alpha */
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &bad, NULL), TMEM_E_INVALID_ARG);
    bad = v;
    bad.dtype = TMEM_DTYPE_U8;
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &bad, NULL), TMEM_E_INVALID_ARG);
    bad = v;
    bad.rank = 4;
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &bad, NULL), TMEM_E_INVALID_ARG);
    bad = v;
    bad.strides[2] = 2; /* misaligned floats */
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &bad, NULL), TMEM_E_INVALID_ARG);
    cd.src_rect = (tmem_rect){4, 4, 5, 1};
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &v, NULL), TMEM_E_INVALID_ARG);
    cd.src_rect = (tmem_rect){0, 0, 0, 3};
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &v, NULL), TMEM_E_INVALID_ARG);
    memset(&cd, 0, sizeof cd);
    cd.std[1] = NAN;
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &v, NULL), TMEM_E_INVALID_ARG);
    cd.std[1] = 0;
    cd.scale = INFINITY;
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &v, NULL), TMEM_E_INVALID_ARG);
    cd.scale = 0;
    cd.filter = TMEM_RESIZE_COUNT;
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &v, NULL), TMEM_E_INVALID_ARG);
    cd.filter = 0;
    cd.flags = 0x80;
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &v, NULL), TMEM_E_INVALID_ARG);
    /* A tensor surface is not a conversion source. */
    d.format = TMEM_FORMAT_TENSOR_F32_CHW;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    memset(&cd, 0, sizeof cd);
    CHECK_ST(tmem__surface_convert_raw(&l, base, &cd, &v, NULL), TMEM_E_INVALID_ARG);
}

/* Wider than the on-stack tap table: the heap path. */
static void test_wide_output(void) {
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_GRAY8;
    d.width = 16;
    d.height = 1;
    tmem_surface_layout l;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    uint8_t base[64];
    for (int i = 0; i < 64; i++) base[i] = (uint8_t)(i * 16);
    uint32_t W = 5000;
    float *out = malloc(sizeof(float) * W);
    tmem_tensor_view v;
    REQUIRE_OK(tmem_tensor_view_chw(out, TMEM_DTYPE_F32, 1, 1, W, &v));
    tmem_convert_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.scale = 1.0f;
    REQUIRE_OK(tmem__surface_convert_raw(&l, base, &cd, &v, NULL));
    CHECK(out[0] == 0.0f && out[W - 1] == 240.0f);
    bool monotonic = true;
    for (uint32_t x = 1; x < W; x++) monotonic &= out[x] >= out[x - 1];
    CHECK(monotonic);
    free(out);
}

/* A layout whose planes end exactly at a PROT_NONE page: a kernel that
 * reads one byte past the last plane faults. */
typedef struct guarded {
    uint8_t *map, *base;
    size_t map_bytes;
} guarded;

static bool guarded_alloc(guarded *g, uint64_t bytes, tmem_rng *r) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = ((size_t)bytes + page - 1) / page * page;
    g->map_bytes = body + page;
    g->map = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED) return false;
    if (mprotect(g->map + body, page, PROT_NONE) != 0) return false;
    g->base = g->map + body - bytes;
    for (uint64_t i = 0; i < bytes; i++) g->base[i] = (uint8_t)tmem_rng_next(r);
    return true;
}

/* The SIMD path (where the CPU has one) against TMEM_CONVERT_REFERENCE: the
 * same bits, F32 and F16, every format, sizes around the 8-lane blocks,
 * crops, both filters, upscales and downscales; planes that end at a guard
 * page. Misaligned layouts (row alignment 1 or 2) take the scalar path and
 * must still agree. */
static void test_simd_bit_exact(void) {
    printf("   conversion ISA: %s\n", tmem_surface_convert_isa());
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(77031));
    uint64_t values = 0, differ = 0;
    for (int it = 0; it < 300; it++) {
        tmem_surface_desc d;
        memset(&d, 0, sizeof d);
        d.format = sources[tmem_rng_range(&r, 0, 5)];
        d.width = (uint32_t)tmem_rng_range(&r, 1, 150);
        d.height = (uint32_t)tmem_rng_range(&r, 1, 40);
        d.row_alignment = 1u << tmem_rng_range(&r, 0, 7);
        tmem_surface_layout l;
        REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
        guarded g;
        REQUIRE(guarded_alloc(&g, l.alloc_size, &r));
        tmem_convert_desc cd;
        memset(&cd, 0, sizeof cd);
        cd.filter = tmem_rng_range(&r, 0, 3) ? TMEM_RESIZE_BILINEAR : TMEM_RESIZE_NEAREST;
        cd.matrix = (tmem_yuv_matrix)tmem_rng_range(&r, 0, TMEM_YUV_COUNT - 1);
        if (tmem_rng_range(&r, 0, 1)) {
            cd.src_rect.x = (uint32_t)tmem_rng_range(&r, 0, d.width - 1);
            cd.src_rect.y = (uint32_t)tmem_rng_range(&r, 0, d.height - 1);
            cd.src_rect.width = (uint32_t)tmem_rng_range(&r, 1, d.width - cd.src_rect.x);
            cd.src_rect.height = (uint32_t)tmem_rng_range(&r, 1, d.height - cd.src_rect.y);
        }
        cd.mean[0] = 0.5f, cd.mean[1] = 0.25f, cd.mean[2] = 0.125f;
        cd.std[0] = 0.5f, cd.std[1] = 0.3f, cd.std[2] = 0.7f;
        uint64_t C = d.format == TMEM_FORMAT_GRAY8 && tmem_rng_range(&r, 0, 1) ? 1 : 3;
        if ((d.format == TMEM_FORMAT_RGBA8 || d.format == TMEM_FORMAT_BGRA8) && tmem_rng_range(&r, 0, 1)) C = 4;
        if (C == 3 && tmem_rng_range(&r, 0, 2) == 0) cd.flags = TMEM_CONVERT_BGR;
        uint32_t W = (uint32_t)tmem_rng_range(&r, 1, 90), H = (uint32_t)tmem_rng_range(&r, 1, 12);
        tmem_dtype dt = tmem_rng_range(&r, 0, 1) ? TMEM_DTYPE_F32 : TMEM_DTYPE_F16;
        uint32_t vs = tmem_dtype_size(dt);
        uint64_t px_stride = vs * (tmem_rng_range(&r, 0, 3) ? 1 : 2);
        uint64_t row_stride = px_stride * W + vs * tmem_rng_range(&r, 0, 3);
        uint64_t ch_stride = row_stride * H;
        size_t bytes = ch_stride * C;
        uint8_t *fast = calloc(1, bytes), *ref = calloc(1, bytes);
        tmem_tensor_view v = {fast, dt, 3, {C, H, W, 0}, {(int64_t)ch_stride, (int64_t)row_stride, (int64_t)px_stride, 0}};
        REQUIRE_OK(tmem__surface_convert_raw(&l, g.base, &cd, &v, NULL));
        v.data = ref;
        cd.flags |= TMEM_CONVERT_REFERENCE;
        REQUIRE_OK(tmem__surface_convert_raw(&l, g.base, &cd, &v, NULL));
        values += C * H * W;
        for (size_t i = 0; i < bytes; i++) differ += fast[i] != ref[i];
        free(fast), free(ref);
        munmap(g.map, g.map_bytes);
    }
    printf("   %llu values, %llu bytes differ\n", (unsigned long long)values, (unsigned long long)differ);
    CHECK_MSG(differ == 0, "%llu bytes differ between the SIMD and the reference path", (unsigned long long)differ);
}

/* How many of the AVX2 row's groups take byte shuffles instead of gathers
 * for a W-pixel-wide YUV source resized to `out` columns. */
static uint32_t shuffled_groups(tmem_pixel_format f, uint32_t W, uint32_t H, uint32_t out) {
    tmem_surface_desc d = {0};
    d.format = f, d.width = W, d.height = H;
    tmem_surface_layout l;
    if (tmem_surface_size_and_align(&d, &l) != TMEM_OK) return UINT32_MAX;
    static int32_t xi0[4096], xi1[4096];
    static float xw[4096];
    static int64_t xoff[4096];
    tmem__convert_plan p;
    memset(&p, 0, sizeof p);
    p.format = f, p.width = out, p.f32 = true, p.channels = 3;
    for (uint32_t i = 0; i < l.plane_count; i++) p.bpr[i] = l.planes[i].bytes_per_row;
    for (uint32_t x = 0; x < out; x++) {
        uint32_t a, b;
        tmem__convert_tap(x, out, 0, W, TMEM_RESIZE_BILINEAR, &a, &b, &xw[x]);
        xi0[x] = (int32_t)a, xi1[x] = (int32_t)b, xoff[x] = 4 * (int64_t)x;
    }
    p.xi0 = xi0, p.xi1 = xi1, p.xw = xw, p.xoff = xoff;
    size_t bytes = tmem__convert_avx2_table_bytes(&p);
    void *mem = bytes ? aligned_alloc(32, (bytes + 31) / 32 * 32) : NULL;
    if (!mem) return 0;
    tmem__convert_avx2_prepare(&p, mem);
    uint32_t n = tmem__convert_avx2_shuffled_groups(&p);
    free(mem);
    return n;
}

/* Camera-sized frames, SIMD vs the reference: 1080p and 720p NV12 / I420
 * down to vision-model inputs (every group on the byte shuffles), 4K (past
 * the shuffles' reach: every group gathers), mild and strong downscales,
 * a crop, BGR, F16; planes end at a guard page. */
static void test_simd_camera_frames(void) {
    if (strcmp(tmem_surface_convert_isa(), "avx2") == 0) {
        CHECK(shuffled_groups(TMEM_FORMAT_NV12, 1920, 1080, 448) == 56);
        CHECK(shuffled_groups(TMEM_FORMAT_I420, 1920, 1080, 448) == 56);
        CHECK(shuffled_groups(TMEM_FORMAT_NV12, 1280, 720, 336) == 42);
        CHECK(shuffled_groups(TMEM_FORMAT_NV12, 3840, 2160, 448) == 0);
        CHECK(shuffled_groups(TMEM_FORMAT_RGB8, 1920, 1080, 448) == 0); /* gathers: no tables */
    }
    struct {
        tmem_pixel_format f;
        uint32_t w, h, ow, oh;
        bool f16, bgr, crop;
    } cases[] = {
        {TMEM_FORMAT_NV12, 1920, 1080, 448, 448, false, false, false},
        {TMEM_FORMAT_I420, 1920, 1080, 448, 448, true, true, false},
        {TMEM_FORMAT_NV12, 1280, 720, 336, 336, false, true, false},
        {TMEM_FORMAT_I420, 3840, 2160, 448, 448, false, false, false},
        {TMEM_FORMAT_NV12, 642, 480, 448, 440, true, false, false},
        {TMEM_FORMAT_NV12, 1920, 1080, 200, 120, false, false, true},
        {TMEM_FORMAT_I420, 1918, 1078, 1000, 500, false, false, false},
        {TMEM_FORMAT_NV12, 1920, 1080, 1920, 1080, false, false, false},
    };
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(5150));
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tmem_surface_desc d = {0};
        d.format = cases[k].f, d.width = cases[k].w, d.height = cases[k].h;
        tmem_surface_layout l;
        REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
        guarded g;
        REQUIRE(guarded_alloc(&g, l.alloc_size, &r));
        tmem_convert_desc cd;
        memset(&cd, 0, sizeof cd);
        cd.mean[0] = 0.485f, cd.mean[1] = 0.456f, cd.mean[2] = 0.406f;
        cd.std[0] = 0.229f, cd.std[1] = 0.224f, cd.std[2] = 0.225f;
        cd.matrix = (tmem_yuv_matrix)(k % TMEM_YUV_COUNT);
        if (cases[k].bgr) cd.flags = TMEM_CONVERT_BGR;
        if (cases[k].crop) cd.src_rect = (tmem_rect){333, 101, 1001, 777};
        tmem_dtype dt = cases[k].f16 ? TMEM_DTYPE_F16 : TMEM_DTYPE_F32;
        uint32_t vs = tmem_dtype_size(dt), W = cases[k].ow, H = cases[k].oh;
        size_t bytes = (size_t)3 * W * H * vs;
        uint8_t *fast = calloc(1, bytes), *ref = calloc(1, bytes);
        REQUIRE(fast && ref);
        tmem_tensor_view v;
        REQUIRE_OK(tmem_tensor_view_chw(fast, dt, 3, H, W, &v));
        REQUIRE_OK(tmem__surface_convert_raw(&l, g.base, &cd, &v, NULL));
        v.data = ref;
        cd.flags |= TMEM_CONVERT_REFERENCE;
        REQUIRE_OK(tmem__surface_convert_raw(&l, g.base, &cd, &v, NULL));
        CHECK_MSG(memcmp(fast, ref, bytes) == 0, "%s %ux%u -> %ux%u: SIMD and reference differ",
                  tmem_pixel_format_name(cases[k].f), cases[k].w, cases[k].h, W, H);
        free(fast), free(ref);
        munmap(g.map, g.map_bytes);
    }
}

/* Patch order against the (C, H, W) conversion rearranged by hand with
 * HF's reshape/transpose: (t, c, H/pm, m, p, W/pm, m, p) ->
 * (H/pm, W/pm, m, m, c, t, p, p). Both paths, F32 and F16. */
static void test_patch_order(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(4242));
    for (int it = 0; it < 40; it++) {
        tmem_surface_desc d;
        memset(&d, 0, sizeof d);
        d.format = sources[tmem_rng_range(&r, 0, 5)];
        d.width = (uint32_t)tmem_rng_range(&r, 8, 120);
        d.height = (uint32_t)tmem_rng_range(&r, 8, 90);
        tmem_surface_layout l;
        REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
        uint8_t *base = malloc(l.alloc_size);
        for (uint64_t i = 0; i < l.alloc_size; i++) base[i] = (uint8_t)tmem_rng_next(&r);
        uint32_t ps = (uint32_t)tmem_rng_range(&r, 2, 16), m = (uint32_t)tmem_rng_range(&r, 1, 2);
        uint32_t T = (uint32_t)tmem_rng_range(&r, 1, 2);
        uint32_t W = ps * m * (uint32_t)tmem_rng_range(&r, 1, 4), H = ps * m * (uint32_t)tmem_rng_range(&r, 1, 4);
        if (it == 0) d.width = W, d.height = H; /* identity resize */
        uint32_t C = 3;
        tmem_dtype dt = it % 2 ? TMEM_DTYPE_F16 : TMEM_DTYPE_F32;
        uint32_t vs = tmem_dtype_size(dt);
        tmem_convert_desc cd;
        memset(&cd, 0, sizeof cd);
        cd.mean[0] = cd.mean[1] = cd.mean[2] = 0.5f;
        cd.std[0] = cd.std[1] = cd.std[2] = 0.5f;
        if (it % 3 == 0) cd.flags = TMEM_CONVERT_REFERENCE;
        uint8_t *chw = malloc((size_t)C * H * W * vs);
        tmem_tensor_view cv;
        REQUIRE_OK(tmem_tensor_view_chw(chw, dt, C, H, W, &cv));
        REQUIRE_OK(tmem__surface_convert_raw(&l, base, &cd, &cv, NULL));
        uint64_t cols = (uint64_t)C * T * ps * ps, rows = (uint64_t)(W / ps) * (H / ps);
        uint64_t row_stride = cols * vs + vs * (uint64_t)(it % 4);
        uint8_t *pat = calloc(1, rows * row_stride);
        tmem_tensor_view pv = {pat, dt, 2, {rows, cols, 0, 0}, {(int64_t)row_stride, (int64_t)vs, 0, 0}};
        bool frame_major = it % 5 == 4;
        tmem_patch_desc pd = {W, H, ps, m, T, frame_major ? TMEM_PATCH_FRAME_MAJOR : 0};
        REQUIRE_OK(tmem__surface_convert_patches_raw(&l, base, &cd, &pd, &pv, NULL));
        uint32_t bw_n = W / (ps * m), bh_n = H / (ps * m);
        uint64_t bad = 0;
        for (uint32_t bh = 0; bh < bh_n; bh++)
            for (uint32_t bw = 0; bw < bw_n; bw++)
                for (uint32_t mh = 0; mh < m; mh++)
                    for (uint32_t mw = 0; mw < m; mw++)
                        for (uint32_t c = 0; c < C; c++)
                            for (uint32_t t = 0; t < T; t++)
                                for (uint32_t py = 0; py < ps; py++)
                                    for (uint32_t px = 0; px < ps; px++) {
                                        uint64_t row = (((uint64_t)bh * bw_n + bw) * m + mh) * m + mw;
                                        uint64_t col = frame_major ? (((uint64_t)t * C + c) * ps + py) * ps + px
                                                                   : (((uint64_t)c * T + t) * ps + py) * ps + px;
                                        uint64_t y = ((uint64_t)bh * m + mh) * ps + py;
                                        uint64_t x = ((uint64_t)bw * m + mw) * ps + px;
                                        bad += memcmp(pat + row * row_stride + col * vs,
                                                      chw + ((c * H + y) * W + x) * vs, vs) != 0;
                                    }
        CHECK_MSG(bad == 0, "case %d: %llu values out of place", it, (unsigned long long)bad);
        free(pat), free(chw), free(base);
    }
    /* Errors: sizes off the patch*merge grid, wrong shapes. */
    tmem_surface_desc d = {0};
    d.format = TMEM_FORMAT_RGB8, d.width = 64, d.height = 64;
    tmem_surface_layout l;
    REQUIRE_OK(tmem_surface_size_and_align(&d, &l));
    static uint8_t base[64 * 64 * 3 + 4096];
    static float out[16 * 1536];
    tmem_tensor_view pv = {out, TMEM_DTYPE_F32, 2, {16, 1536, 0, 0}, {1536 * 4, 4, 0, 0}};
    tmem_patch_desc pd = {64, 64, 0, 0, 0, 0};
    CHECK_OK(tmem__surface_convert_patches_raw(&l, base, NULL, &pd, &pv, NULL));
    pd.width = 48;
    CHECK_ST(tmem__surface_convert_patches_raw(&l, base, NULL, &pd, &pv, NULL), TMEM_E_INVALID_ARG);
    pd.width = 64;
    pv.shape[0] = 15;
    CHECK_ST(tmem__surface_convert_patches_raw(&l, base, NULL, &pd, &pv, NULL), TMEM_E_INVALID_ARG);
    pv.shape[0] = 16;
    pv.strides[1] = 8;
    CHECK_ST(tmem__surface_convert_patches_raw(&l, base, NULL, &pd, &pv, NULL), TMEM_E_INVALID_ARG);
    pv.strides[1] = 4;
    CHECK_ST(tmem__surface_convert_patches_raw(&l, base, NULL, NULL, &pv, NULL), TMEM_E_INVALID_ARG);
    pd.flags = 0x10;
    CHECK_ST(tmem__surface_convert_patches_raw(&l, base, NULL, &pd, &pv, NULL), TMEM_E_INVALID_ARG);
}

int main(void) {
    RUN(test_against_reference);
    RUN(test_simd_bit_exact);
    RUN(test_simd_camera_frames);
    RUN(test_patch_order);
    RUN(test_hand_cases);
    RUN(test_errors);
    RUN(test_wide_output);
    return tmem_test_finish();
}

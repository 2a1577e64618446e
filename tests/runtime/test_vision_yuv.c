/* Camera frames (NV12, I420) through the vision encoder in both memory modes:
 * typed (one fused conversion from the YUV surface into the patch tensor) and
 * the naive twin (YUV -> float RGB -> RGBA "texture" -> f32 HWC -> CHW ->
 * patches, a buffer per stage) give bit-identical embeddings, 1 vs 5 image
 * copies, for an identity resize and non-identity ones. A frame that differs
 * only in its chroma gives different embeddings (the colour reaches the
 * encoder). */
#include "harness.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tmemrt/vision.h"

static char dir[256], path[512];

/* A random frame of format f; `chroma_seed` seeds the U/V planes alone. */
static tmem_surface *yuv_surface(tmem_context *ctx, tmem_pixel_format f, uint32_t w, uint32_t h,
                                 uint64_t chroma_seed) {
    tmem_surface_desc d = {0};
    d.width = w, d.height = h, d.format = f;
    tmem_surface *s;
    if (tmem_surface_create(ctx, &d, &s) != TMEM_OK) return NULL;
    if (tmem_surface_lock(s, 0, NULL) != TMEM_OK) return NULL;
    tmem_rng r;
    uint32_t planes = f == TMEM_FORMAT_NV12 ? 2 : 3;
    for (uint32_t k = 0; k < planes; k++) {
        tmem_tensor_view v;
        if (tmem_surface_plane_view(s, k, NULL, &v) != TMEM_OK) return NULL;
        tmem_rng_init(&r, k ? chroma_seed + k : 99);
        uint64_t row_bytes = (uint64_t)v.shape[1] * (v.rank > 2 ? (uint64_t)v.shape[2] : 1);
        for (uint64_t y = 0; y < (uint64_t)v.shape[0]; y++)
            for (uint64_t x = 0; x < row_bytes; x++)
                ((uint8_t *)v.data)[y * (uint64_t)v.strides[0] + x] =
                    (uint8_t)(tmem_rng_next(&r) >> 56);
    }
    if (tmem_surface_unlock(s, 0, NULL) != TMEM_OK) return NULL;
    return s;
}

/* An encode in the handle's memory mode; `threads` 2 typed, 1 naive. */
static float *encode(tmem_context *ctx, tmrt_vision *v, tmem_pixel_format f, uint32_t w, uint32_t h,
                     uint64_t chroma_seed, int threads, tmrt_vision_stats *st) {
    tmem_surface *s = yuv_surface(ctx, f, w, h, chroma_seed);
    if (!s) return NULL;
    tmrt_vision_grid g;
    tmrt_error err = {""};
    if (tmrt_vision_image_grid(v, s, &g, &err) != TMEM_OK) return NULL;
    size_t out_h = tmrt_vision_get_config(v)->out_hidden;
    float *emb = calloc((size_t)g.n_tokens * out_h, sizeof(float));
    tmrt_vision_encode_desc d = {threads, false};
    if (!emb || tmrt_vision_encode(v, &s, &d, emb, out_h, st, &err) != TMEM_OK) {
        printf("   encode: %s\n", err.message);
        free(emb);
        tmem_surface_release(s);
        return NULL;
    }
    return emb;
}

static void test_yuv(tmem_context *ctx) {
    tmrt_vision_config c;
    tmrt_error err = {""};
    REQUIRE(tmrt_vision_preset("tiny", &c) == TMEM_OK);
    snprintf(path, sizeof path, "%s/tiny-mmproj.gguf", dir);
    REQUIRE(tmrt_vision_write_random(&c, TMEM_GGML_F32, 11, path, &err) == TMEM_OK);
    tmrt_vision *v, *vn; /* the same file typed and naive */
    tmrt_vision_desc vd = {path, TMRT_MEMORY_TYPED, NULL}, vnd = {path, TMRT_MEMORY_NAIVE, NULL};
    REQUIRE(tmrt_vision_open(ctx, &vd, &v, &err) == TMEM_OK);
    REQUIRE(tmrt_vision_open(NULL, &vnd, &vn, &err) == TMEM_OK);
    uint32_t out_h = tmrt_vision_get_config(v)->out_hidden;
    struct {
        uint32_t w, h;
    } sizes[] = {{64, 64}, {80, 48}, {96, 34}};
    tmem_pixel_format formats[] = {TMEM_FORMAT_NV12, TMEM_FORMAT_I420};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (size_t fi = 0; fi < 2; fi++) {
            tmem_pixel_format f = formats[fi];
            uint32_t w = sizes[k].w, h = sizes[k].h;
            tmrt_vision_stats st_t, st_n, st_c;
            float *typed = encode(ctx, v, f, w, h, 5, 2, &st_t);
            float *naive = encode(ctx, vn, f, w, h, 5, 1, &st_n);
            float *other = encode(ctx, vn, f, w, h, 6, 1, &st_c);
            REQUIRE(typed && naive && other);
            size_t n = (size_t)st_t.grid.n_tokens * out_h;
            CHECK_MSG(memcmp(typed, naive, n * sizeof(float)) == 0,
                      "%s %ux%u: typed and naive differ", tmem_pixel_format_name(f), w, h);
            CHECK(st_t.image_copies == 1 && st_n.image_copies == 5);
            CHECK(st_t.grid.n_tokens == st_n.grid.n_tokens && st_n.grid.n_tokens > 0);
            bool finite = true;
            for (size_t i = 0; i < n; i++) finite = finite && isfinite(naive[i]);
            CHECK(finite);
            CHECK_MSG(memcmp(naive, other, n * sizeof(float)) != 0,
                      "%s %ux%u: chroma has no effect", tmem_pixel_format_name(f), w, h);
            printf("   %s %ux%u -> %ux%u: %u tokens, typed == naive (%u vs %u copies)\n",
                   tmem_pixel_format_name(f), w, h, st_t.grid.width, st_t.grid.height,
                   st_t.grid.n_tokens, st_t.image_copies, st_n.image_copies);
            free(typed), free(naive), free(other);
        }
    tmrt_vision_close(v);
    tmrt_vision_close(vn);
}

int main(void) {
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    printf("-- test_yuv\n");
    test_yuv(ctx);
    tmem_context_destroy(ctx);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return tmem_test_finish();
}

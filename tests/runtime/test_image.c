/* Built-in image input: PPM / PGM and raw NV12 / I420 frames decoded into
 * surfaces of /memory/images, pixel for pixel; hostile headers and sizes
 * refused with a message. (PNG / JPEG: test_image_codecs.c.) */
#include "harness.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tmemrt/image.h"

static char dir[256];

static void write_file(const char *name, const void *data, size_t n, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) fwrite(data, 1, n, f), fclose(f);
}

static bool same_plane(tmem_surface *s, uint32_t plane, const uint8_t *want, uint32_t rows, uint32_t row_bytes) {
    tmem_tensor_view v;
    if (tmem_surface_plane_view(s, plane, NULL, &v) != TMEM_OK) return false;
    for (uint32_t y = 0; y < rows; y++)
        if (memcmp((uint8_t *)v.data + (uint64_t)y * v.strides[0], want + (size_t)y * row_bytes, row_bytes)) return false;
    return true;
}

static void test_pnm(tmem_context *ctx) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(99));
    uint32_t w = 37, h = 11;
    uint8_t px[37 * 11 * 3];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)tmem_rng_next(&r);
    char hdr[64], path[512];
    tmrt_error err = {""};
    int n = snprintf(hdr, sizeof hdr, "P6\n# made by a test\n%u %u\n255\n", w, h);
    uint8_t file[sizeof px + 64];
    memcpy(file, hdr, (size_t)n);
    memcpy(file + n, px, sizeof px);
    write_file("a.ppm", file, (size_t)n + sizeof px, path, sizeof path);
    tmem_surface *s;
    REQUIRE(tmrt_image_load(ctx, path, NULL, 0, &s, &err) == TMEM_OK);
    tmem_surface_info info;
    REQUIRE_OK(tmem_surface_get_info(s, &info));
    CHECK(info.layout.format == TMEM_FORMAT_RGB8 && info.layout.width == w && info.layout.height == h);
    CHECK(info.backing == TMEM_SURFACE_BACKING_MEMFD);
    CHECK(same_plane(s, 0, px, h, w * 3));
    tmem_surface_release(s);
    /* PGM */
    n = snprintf(hdr, sizeof hdr, "P5 %u %u 255\n", w, h);
    memcpy(file, hdr, (size_t)n);
    memcpy(file + n, px, (size_t)w * h);
    write_file("a.pgm", file, (size_t)n + w * h, path, sizeof path);
    REQUIRE(tmrt_image_load(ctx, path, NULL, 0, &s, &err) == TMEM_OK);
    REQUIRE_OK(tmem_surface_get_info(s, &info));
    CHECK(info.layout.format == TMEM_FORMAT_GRAY8 && same_plane(s, 0, px, h, w));
    tmem_surface_release(s);
    /* Hostile: truncated data, maxval 65535, huge sizes, junk. */
    const char *bad[] = {"P6\n37 11\n255\n", "P6\n37 11\n65535\n", "P6\n99999 99999\n255\n", "P6\n-3 4\n255\n",
                         "P6", "GIF89a"};
    /* each with its status: truncated and malformed data are corrupt, a
     * 16-bit maxval and GIF unsupported, sizes past the surface limit invalid */
    const tmem_status want[] = {TMEM_E_CORRUPT, TMEM_E_UNSUPPORTED, TMEM_E_INVALID_ARG, TMEM_E_CORRUPT,
                                TMEM_E_CORRUPT, TMEM_E_UNSUPPORTED};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file("bad.ppm", bad[i], strlen(bad[i]), path, sizeof path);
        err.message[0] = 0;
        tmem_status st = tmrt_image_load(ctx, path, NULL, 0, &s, &err);
        CHECK_MSG(st == want[i] && s == NULL && err.message[0], "bad header %zu: %s (%s)", i, tmem_status_name(st),
                  err.message);
    }
    CHECK_ST(tmrt_image_load(ctx, "/nonexistent/x.ppm", NULL, 0, &s, &err), TMEM_E_NOT_FOUND);
    CHECK(s == NULL);
    CHECK_ST(tmrt_image_load(NULL, path, NULL, 0, &s, NULL), TMEM_E_INVALID_ARG);
}

static void test_raw(tmem_context *ctx) {
    uint32_t w, h;
    tmem_pixel_format f;
    CHECK(tmrt_image_parse_raw_spec("640x480:nv12", &w, &h, &f) == TMEM_OK && w == 640 && h == 480 &&
          f == TMEM_FORMAT_NV12);
    CHECK(tmrt_image_parse_raw_spec("3x5:i420", &w, &h, &f) == TMEM_OK && f == TMEM_FORMAT_I420);
    CHECK_ST(tmrt_image_parse_raw_spec("640x480", &w, &h, &f), TMEM_E_PARSE);
    CHECK_ST(tmrt_image_parse_raw_spec("0x480:nv12", &w, &h, &f), TMEM_E_PARSE);
    CHECK_ST(tmrt_image_parse_raw_spec("640x480:rgb", &w, &h, &f), TMEM_E_PARSE);
    CHECK_ST(tmrt_image_parse_raw_spec("99999x2:nv12", &w, &h, &f), TMEM_E_PARSE);
    CHECK(w == 3 && h == 5 && f == TMEM_FORMAT_I420); /* unchanged by the refusals */
    CHECK_ST(tmrt_image_parse_raw_spec(NULL, &w, &h, &f), TMEM_E_INVALID_ARG);
    /* Odd sizes: chroma rounds up. */
    w = 9, h = 5;
    uint32_t cw = 5, ch = 3;
    size_t n = (size_t)w * h + 2 * (size_t)cw * ch;
    uint8_t *frame = malloc(n);
    for (size_t i = 0; i < n; i++) frame[i] = (uint8_t)(i * 7);
    char path[512];
    tmrt_error err = {""};
    write_file("f.yuv", frame, n, path, sizeof path);
    for (int k = 0; k < 2; k++) {
        tmem_pixel_format fmt = k ? TMEM_FORMAT_I420 : TMEM_FORMAT_NV12;
        tmem_surface *s;
        REQUIRE(tmrt_image_load_raw(ctx, path, w, h, fmt, &s, &err) == TMEM_OK);
        CHECK(same_plane(s, 0, frame, h, w));
        if (k == 0) {
            CHECK(same_plane(s, 1, frame + w * h, ch, 2 * cw));
        } else {
            CHECK(same_plane(s, 1, frame + w * h, ch, cw));
            CHECK(same_plane(s, 2, frame + w * h + cw * ch, ch, cw));
        }
        tmem_surface_release(s);
        /* The wrong size is refused, naming both sizes. */
        CHECK_ST(tmrt_image_load_raw(ctx, path, w + 1, h, fmt, &s, &err), TMEM_E_CORRUPT);
        CHECK(s == NULL && strstr(err.message, "bytes") != NULL);
    }
    free(frame);
}

int main(void) {
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    printf("-- test_pnm\n");
    test_pnm(ctx);
    printf("-- test_raw\n");
    test_raw(ctx);
    tmem_context_destroy(ctx);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return tmem_test_finish();
}

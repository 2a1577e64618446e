/* PNG and JPEG input (the optional codec module): files written here with
 * libpng / libjpeg, decoded by tmrt_image_load into surfaces.
 *  - PNG, every colour type the decoder reduces: RGB and grey exact; RGBA
 *    and palette+tRNS composited on white, within 1 of (a*c + (255-a)*255)/255;
 *    16-bit stripped to the high byte; Adam7 interlaced equal to plain.
 *  - JPEG (RGB and grey): bit-identical to libjpeg's own decode into memory
 *    with the same defaults, and within JPEG error of the source.
 * Skips (77) when the module was not built (libpng/libjpeg missing). */
#include "harness.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tmemrt/image.h"

#ifndef TMRT_HAVE_IMAGE_CODECS
int main(void) {
    printf("SKIP: built without the optional image codecs (libpng-dev / libjpeg-dev not found)\n");
    return 77;
}
#else
#ifdef TMRT_HAVE_PNG
#include <png.h>
#endif
#ifdef TMRT_HAVE_JPEG
#include <jpeglib.h>
#endif

static char dir[256];
static const tmrt_image_codec *codecs;
static size_t n_codecs;

static uint8_t pixel(uint32_t x, uint32_t y, uint32_t c) { return (uint8_t)((x * 37 + y * 11 + c * 71) ^ (x * y)); }

static tmem_surface *load(tmem_context *ctx, const char *path, tmem_pixel_format want_format, uint32_t w, uint32_t h) {
    tmem_surface *s;
    tmrt_error err = {""};
    if (tmrt_image_load(ctx, path, codecs, n_codecs, &s, &err) != TMEM_OK) {
        printf("   load %s: %s\n", path, err.message);
        return NULL;
    }
    tmem_surface_info info;
    if (tmem_surface_get_info(s, &info) != TMEM_OK || info.layout.format != want_format || info.layout.width != w ||
        info.layout.height != h) {
        printf("   %s: wrong format or size\n", path);
        tmem_surface_release(s);
        return NULL;
    }
    return s;
}

static const uint8_t *row_of(tmem_surface *s, uint32_t y) {
    tmem_tensor_view v;
    if (tmem_surface_plane_view(s, 0, NULL, &v) != TMEM_OK) return NULL;
    return (const uint8_t *)v.data + (uint64_t)y * v.strides[0];
}

#ifdef TMRT_HAVE_PNG
/* Write a PNG of w x h with `channels` 8- or 16-bit samples per pixel. */
static bool write_png(const char *path, uint32_t w, uint32_t h, int color_type, int depth, bool interlace) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        fclose(f);
        return false;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, depth, color_type, interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (color_type == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[16];
        png_byte trans[16];
        for (int i = 0; i < 16; i++) pal[i].red = (png_byte)(i * 16), pal[i].green = (png_byte)(255 - i * 16),
                                     pal[i].blue = (png_byte)(i * 5), trans[i] = (png_byte)(i * 17);
        png_set_PLTE(png, info, pal, 16);
        png_set_tRNS(png, info, trans, 16, NULL);
    }
    png_write_info(png, info);
    int channels = color_type == PNG_COLOR_TYPE_RGB ? 3 : color_type == PNG_COLOR_TYPE_RGBA ? 4 : 1;
    size_t bytes = (size_t)w * channels * (depth / 8);
    png_bytep *rows = malloc(sizeof(png_bytep) * h);
    for (uint32_t y = 0; y < h; y++) {
        rows[y] = malloc(bytes);
        for (uint32_t x = 0; x < w; x++)
            for (int c = 0; c < channels; c++) {
                uint8_t v = color_type == PNG_COLOR_TYPE_PALETTE ? (uint8_t)((x + y) % 16) : pixel(x, y, (uint32_t)c);
                if (depth == 16)
                    rows[y][(x * channels + c) * 2] = v, rows[y][(x * channels + c) * 2 + 1] = (uint8_t)~v;
                else
                    rows[y][x * channels + c] = v;
            }
    }
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    for (uint32_t y = 0; y < h; y++) free(rows[y]);
    free(rows);
    fclose(f);
    return true;
}

static int composite(int c, int a) { return (a * c + (255 - a) * 255 + 127) / 255; }

static void test_png(tmem_context *ctx) {
    uint32_t w = 45, h = 19;
    char path[512];
    struct {
        const char *name;
        int type, depth;
        bool interlace;
        tmem_pixel_format fmt;
    } cases[] = {
        {"rgb.png", PNG_COLOR_TYPE_RGB, 8, false, TMEM_FORMAT_RGB8},
        {"rgb_adam7.png", PNG_COLOR_TYPE_RGB, 8, true, TMEM_FORMAT_RGB8},
        {"rgb16.png", PNG_COLOR_TYPE_RGB, 16, false, TMEM_FORMAT_RGB8},
        {"grey.png", PNG_COLOR_TYPE_GRAY, 8, false, TMEM_FORMAT_GRAY8},
        {"rgba.png", PNG_COLOR_TYPE_RGBA, 8, false, TMEM_FORMAT_RGB8},
        {"palette.png", PNG_COLOR_TYPE_PALETTE, 8, false, TMEM_FORMAT_RGB8},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, cases[k].name);
        REQUIRE(write_png(path, w, h, cases[k].type, cases[k].depth, cases[k].interlace));
        tmem_surface *s = load(ctx, path, cases[k].fmt, w, h);
        CHECK_MSG(s != NULL, "%s", cases[k].name);
        if (!s) continue;
        int worst = 0;
        for (uint32_t y = 0; y < h; y++) {
            const uint8_t *row = row_of(s, y);
            for (uint32_t x = 0; x < w; x++) {
                uint32_t C = cases[k].fmt == TMEM_FORMAT_RGB8 ? 3 : 1;
                for (uint32_t c = 0; c < C; c++) {
                    int want = pixel(x, y, c);
                    if (cases[k].type == PNG_COLOR_TYPE_RGBA) want = composite(want, pixel(x, y, 3));
                    if (cases[k].type == PNG_COLOR_TYPE_PALETTE) {
                        int i = (int)((x + y) % 16);
                        int pc = c == 0 ? i * 16 : c == 1 ? 255 - i * 16 : i * 5;
                        want = composite(pc, i * 17);
                    }
                    int d = abs((int)row[x * C + c] - want);
                    if (d > worst) worst = d;
                }
            }
        }
        bool exact = cases[k].type != PNG_COLOR_TYPE_RGBA && cases[k].type != PNG_COLOR_TYPE_PALETTE;
        CHECK_MSG(worst <= (exact ? 0 : 1), "%s: max difference %d", cases[k].name, worst);
        tmem_surface_release(s);
    }
    /* A truncated PNG fails cleanly. */
    snprintf(path, sizeof path, "%s/rgb.png", dir);
    FILE *f = fopen(path, "r+b");
    REQUIRE(f != NULL);
    REQUIRE(ftruncate(fileno(f), 80) == 0);
    fclose(f);
    tmem_surface *s;
    tmrt_error err = {""};
    CHECK_ST(tmrt_image_load(ctx, path, codecs, n_codecs, &s, &err), TMEM_E_CORRUPT);
    CHECK(s == NULL && strstr(err.message, "PNG"));
}
#endif

#ifdef TMRT_HAVE_JPEG
static bool write_jpeg(const char *path, uint32_t w, uint32_t h, int comps, int quality) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = w, c.image_height = h, c.input_components = comps;
    c.in_color_space = comps == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    uint8_t *row = malloc((size_t)w * comps);
    while (c.next_scanline < h) {
        for (uint32_t x = 0; x < w; x++)
            for (int k = 0; k < comps; k++) row[x * comps + k] = (uint8_t)(x + c.next_scanline * 2 + k * 40);
        JSAMPROW rp = row;
        jpeg_write_scanlines(&c, &rp, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    fclose(f);
    return true;
}

/* libjpeg's own decode into one malloc'ed buffer, the same defaults. */
static uint8_t *plain_decode(const char *path, int comps) {
    FILE *f = fopen(path, "rb");
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr e;
    d.err = jpeg_std_error(&e);
    jpeg_create_decompress(&d);
    jpeg_stdio_src(&d, f);
    jpeg_read_header(&d, TRUE);
    d.out_color_space = comps == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_start_decompress(&d);
    size_t stride = (size_t)d.output_width * comps;
    uint8_t *buf = malloc(stride * d.output_height);
    while (d.output_scanline < d.output_height) {
        JSAMPROW rp = buf + stride * d.output_scanline;
        jpeg_read_scanlines(&d, &rp, 1);
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    fclose(f);
    return buf;
}

static void test_jpeg(tmem_context *ctx) {
    uint32_t w = 67, h = 29;
    for (int comps = 1; comps <= 3; comps += 2) {
        char path[512];
        snprintf(path, sizeof path, "%s/img%d.jpg", dir, comps);
        REQUIRE(write_jpeg(path, w, h, comps, 95));
        tmem_surface *s = load(ctx, path, comps == 3 ? TMEM_FORMAT_RGB8 : TMEM_FORMAT_GRAY8, w, h);
        REQUIRE(s != NULL);
        uint8_t *ref = plain_decode(path, comps);
        size_t stride = (size_t)w * comps;
        bool same = true;
        int worst = 0;
        for (uint32_t y = 0; y < h; y++) {
            const uint8_t *row = row_of(s, y);
            same &= memcmp(row, ref + stride * y, stride) == 0;
            for (uint32_t x = 0; x < w; x++)
                for (int k = 0; k < comps; k++) {
                    int d = abs((int)row[x * comps + k] - (int)(x + y * 2 + (uint32_t)k * 40));
                    if (d > worst) worst = d;
                }
        }
        CHECK_MSG(same, "%d-component JPEG differs from libjpeg's own decode", comps);
        printf("   %d-component q95 JPEG: max error vs source %d\n", comps, worst);
        CHECK(worst <= 8); /* q95 on a smooth ramp: the right image, not noise */
        free(ref);
        tmem_surface_release(s);
    }
}
#endif

int main(void) {
    codecs = tmrt_image_codecs(&n_codecs);
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
#ifdef TMRT_HAVE_PNG
    printf("-- test_png\n");
    test_png(ctx);
#else
    printf("-- test_png: SKIPPED (libpng not found at build time)\n");
#endif
#ifdef TMRT_HAVE_JPEG
    printf("-- test_jpeg\n");
    test_jpeg(ctx);
#else
    printf("-- test_jpeg: SKIPPED (libjpeg not found at build time)\n");
#endif
    tmem_context_destroy(ctx);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return tmem_test_finish();
}
#endif

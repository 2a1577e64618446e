/*
 * PNG through Debian's libpng: every colour type and bit depth reduced to
 * 8-bit GRAY8 or RGB8 by libpng's own transforms (palette and low-bit grey
 * expanded, 16 bits stripped, transparency composited on white as Hugging
 * Face's convert_to_rgb does), rows decoded straight into the surface
 * (interlaced images too: libpng combines each pass into the same rows).
 */
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include "image/image_surface.h"
#include "codecs_internal.h"

bool tmrt__png_sniff(const uint8_t *h, size_t n) { return n >= 8 && png_sig_cmp(h, 0, 8) == 0; }

typedef struct png_error_box {
    tmrt_error *err;
    const char *path;
} png_error_box;

static void on_error(png_structp png, png_const_charp msg) {
    png_error_box *box = png_get_error_ptr(png);
    (void)tmrt__fail(box->err, TMEM_E_CORRUPT, "%s: PNG: %s", box->path, msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

tmem_status tmrt__png_decode(tmem_context *ctx, const char *path, tmem_surface **out, tmrt_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return tmrt__fail(err, TMEM_E_NOT_FOUND, "%s: cannot open", path);
    png_error_box box = {err, path};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &box, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    tmem_surface *volatile s = NULL;
    volatile tmem_status rc = TMEM_E_CORRUPT; /* what a longjmp from libpng leaves */
    if (!info) {
        rc = tmrt__fail(err, TMEM_E_NO_MEMORY, "%s: PNG: out of memory", path);
        goto done;
    }
    if (setjmp(png_jmpbuf(png))) {
        if (s) {
            tmem_surface *dead = s;
            (void)tmrt__image_finish(&dead, TMEM_E_CORRUPT);
        }
        goto done;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int type = png_get_color_type(png, info);
    png_set_strip_16(png);
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY) png_set_expand_gray_1_2_4_to_8(png);
    bool alpha = (type & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (alpha) {
        png_color_16 white;
        memset(&white, 0, sizeof white);
        white.red = white.green = white.blue = white.gray = 255;
        png_set_background(png, &white, PNG_BACKGROUND_GAMMA_SCREEN, 0, 1.0);
    }
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int channels = png_get_channels(png, info);
    if ((channels != 1 && channels != 3) || png_get_bit_depth(png, info) != 8) {
        rc = tmrt__fail(err, TMEM_E_UNSUPPORTED, "%s: PNG: unexpected %d channels after transforms", path, channels);
        goto done;
    }
    tmem_surface *made;
    tmem_status bst =
        tmrt__image_begin(ctx, w, h, channels == 3 ? TMEM_FORMAT_RGB8 : TMEM_FORMAT_GRAY8, "image-png", &made, err);
    if (bst) {
        rc = bst;
        goto done;
    }
    s = made;
    for (int pass = 0; pass < passes; pass++)
        for (png_uint_32 y = 0; y < h; y++) png_read_row(png, tmrt__image_row(s, 0, y), NULL);
    png_read_end(png, NULL);
    made = s;
    s = NULL;
    rc = tmrt__image_finish(&made, TMEM_OK);
    *out = made;
done:
    png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
    fclose(f);
    return rc;
}



/*
 * JPEG through Debian's libjpeg-turbo, with its defaults (islow DCT, fancy
 * upsampling: what Pillow uses), grey JPEGs to GRAY8, everything else
 * converted by libjpeg to RGB8; scanlines are decoded straight into the
 * surface's rows.
 */
#include <setjmp.h>
#include <stdio.h>
#include <jpeglib.h>
#include "image/image_surface.h"
#include "codecs_internal.h"

bool tmrt__jpeg_sniff(const uint8_t *h, size_t n) { return n >= 3 && h[0] == 0xFF && h[1] == 0xD8 && h[2] == 0xFF; }

typedef struct jpeg_error_box {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    tmrt_error *err;
    const char *path;
} jpeg_error_box;

static void on_error(j_common_ptr cinfo) {
    jpeg_error_box *box = (jpeg_error_box *)(void *)cinfo->err;
    char msg[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, msg);
    (void)tmrt__fail(box->err, TMEM_E_CORRUPT, "%s: JPEG: %s", box->path, msg);
    longjmp(box->jump, 1);
}

static void on_message(j_common_ptr cinfo) { (void)cinfo; }

tmem_status tmrt__jpeg_decode(tmem_context *ctx, const char *path, tmem_surface **out, tmrt_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return tmrt__fail(err, TMEM_E_NOT_FOUND, "%s: cannot open", path);
    struct jpeg_decompress_struct cinfo;
    jpeg_error_box box;
    cinfo.err = jpeg_std_error(&box.mgr);
    box.mgr.error_exit = on_error;
    box.mgr.output_message = on_message;
    box.err = err, box.path = path;
    tmem_surface *volatile s = NULL;
    volatile tmem_status rc = TMEM_E_CORRUPT; /* what a longjmp from libjpeg leaves */
    if (setjmp(box.jump)) {
        if (s) {
            tmem_surface *dead = s;
            (void)tmrt__image_finish(&dead, TMEM_E_CORRUPT);
        }
        goto done;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, f);
    (void)jpeg_read_header(&cinfo, TRUE);
    bool grey = cinfo.jpeg_color_space == JCS_GRAYSCALE;
    cinfo.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    if (cinfo.output_components != (grey ? 1 : 3)) {
        rc = tmrt__fail(err, TMEM_E_UNSUPPORTED, "%s: JPEG: %d output components", path, cinfo.output_components);
        goto done;
    }
    tmem_surface *made;
    tmem_status bst = tmrt__image_begin(ctx, cinfo.output_width, cinfo.output_height,
                                        grey ? TMEM_FORMAT_GRAY8 : TMEM_FORMAT_RGB8, "image-jpeg", &made, err);
    if (bst) {
        rc = bst;
        goto done;
    }
    s = made;
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = tmrt__image_row(s, 0, cinfo.output_scanline);
        (void)jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    made = s;
    s = NULL;
    rc = tmrt__image_finish(&made, TMEM_OK);
    *out = made;
done:
    jpeg_destroy_decompress(&cinfo);
    fclose(f);
    return rc;
}



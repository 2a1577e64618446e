/*
 * Image files into surfaces: format sniffing, the built-in binary PNM
 * decoder (P6 RGB, P5 grey, maxval 255) and the destination surface helpers
 * every decoder shares. Rows are read from the file straight into the
 * surface's memory.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "image/image_surface.h"

tmem_status tmrt__image_begin(tmem_context *ctx, uint32_t width, uint32_t height, tmem_pixel_format format,
                              const char *name, tmem_surface **out, tmrt_error *err) {
    *out = NULL;
    if (!width || !height || width > TMEM_SURFACE_MAX_DIM || height > TMEM_SURFACE_MAX_DIM)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "image size %ux%u outside 1..%u", width, height,
                          TMEM_SURFACE_MAX_DIM);
    tmem_surface_desc d = {0};
    d.width = width, d.height = height, d.format = format, d.name = name;
    tmem_status st = tmem_surface_create(ctx, &d, out);
    if (st != TMEM_OK)
        return tmrt__fail(err, st, "cannot create a %ux%u %s surface: %s", width, height,
                          tmem_pixel_format_name(format), tmem_status_name(st));
    st = tmem_surface_lock(*out, 0, NULL);
    if (st != TMEM_OK) {
        tmem_surface_release(*out);
        *out = NULL;
        return tmrt__fail(err, st, "cannot lock the image surface: %s", tmem_status_name(st));
    }
    return TMEM_OK;
}

uint8_t *tmrt__image_row(tmem_surface *s, uint32_t plane, uint32_t y) {
    tmem_tensor_view v;
    if (tmem_surface_plane_view(s, plane, NULL, &v) != TMEM_OK) return NULL;
    return (uint8_t *)v.data + (uint64_t)y * (uint64_t)v.strides[0];
}

tmem_status tmrt__image_finish(tmem_surface **s, tmem_status st) {
    tmem_status ust = tmem_surface_unlock(*s, 0, NULL);
    if (st == TMEM_OK) st = ust;
    if (st == TMEM_OK) return TMEM_OK;
    tmem_surface_release(*s);
    *s = NULL;
    return st;
}

/* ---- PNM (P5 / P6, maxval 255) ---- */

/* Next header number, skipping whitespace and # comments. */
static bool pnm_number(FILE *f, uint32_t *out) {
    int c = fgetc(f);
    for (;;) {
        while (c != EOF && isspace(c)) c = fgetc(f);
        if (c != '#') break;
        while (c != EOF && c != '\n') c = fgetc(f);
    }
    if (c == EOF || !isdigit(c)) return false;
    uint64_t v = 0;
    while (c != EOF && isdigit(c)) {
        v = v * 10 + (uint64_t)(c - '0');
        if (v > 1000000) return false;
        c = fgetc(f);
    }
    /* Exactly one whitespace byte ends the header's last number. */
    if (c == EOF || !isspace(c)) return false;
    *out = (uint32_t)v;
    return true;
}

static bool sniff_pnm(const uint8_t *h, size_t n) { return n >= 2 && h[0] == 'P' && (h[1] == '5' || h[1] == '6'); }

static tmem_status decode_pnm(tmem_context *ctx, const char *path, tmem_surface **out, tmrt_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return tmrt__fail(err, TMEM_E_NOT_FOUND, "%s: cannot open", path);
    char magic[2];
    uint32_t w, h, maxval;
    tmem_status st;
    if (fread(magic, 1, 2, f) != 2 || !pnm_number(f, &w) || !pnm_number(f, &h) || !pnm_number(f, &maxval)) {
        st = tmrt__fail(err, TMEM_E_CORRUPT, "%s: malformed PNM header", path);
        goto done;
    }
    if (maxval != 255) {
        st = tmrt__fail(err, TMEM_E_UNSUPPORTED, "%s: PNM maxval %u (only 255 is supported)", path, maxval);
        goto done;
    }
    bool rgb = magic[1] == '6';
    if ((st = tmrt__image_begin(ctx, w, h, rgb ? TMEM_FORMAT_RGB8 : TMEM_FORMAT_GRAY8, "image-pnm", out, err)))
        goto done;
    size_t row_bytes = (size_t)w * (rgb ? 3 : 1);
    bool ok = true;
    for (uint32_t y = 0; y < h && ok; y++) ok = fread(tmrt__image_row(*out, 0, y), 1, row_bytes, f) == row_bytes;
    st = tmrt__image_finish(out, ok ? TMEM_OK : tmrt__fail(err, TMEM_E_CORRUPT, "%s: truncated PNM data", path));
done:
    fclose(f);
    return st;
}

static const tmrt_image_codec pnm_codec = {"pnm", sniff_pnm, decode_pnm};

tmem_status tmrt_image_load(tmem_context *ctx, const char *path, const tmrt_image_codec *codecs, size_t n_codecs,
                            tmem_surface **out, tmrt_error *err) {
    if (out) *out = NULL;
    if (!ctx || !path || !out || (n_codecs && !codecs))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "image load: NULL context, path, output or codecs");
    uint8_t head[TMRT_IMAGE_SNIFF_BYTES];
    FILE *f = fopen(path, "rb");
    if (!f) return tmrt__fail(err, TMEM_E_NOT_FOUND, "%s: cannot open", path);
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (pnm_codec.sniff(head, n)) return pnm_codec.decode(ctx, path, out, err);
    for (size_t i = 0; i < n_codecs; i++)
        if (codecs[i].sniff(head, n)) return codecs[i].decode(ctx, path, out, err);
    bool png = n >= 4 && head[0] == 0x89 && head[1] == 'P', jpeg = n >= 3 && head[0] == 0xFF && head[1] == 0xD8;
    if (png || jpeg)
        return tmrt__fail(err, TMEM_E_UNSUPPORTED,
                          "%s: %s image, but this build has no %s decoder (install libpng-dev / "
                          "libjpeg-dev and reconfigure)",
                          path, png ? "PNG" : "JPEG", png ? "PNG" : "JPEG");
    return tmrt__fail(err, TMEM_E_UNSUPPORTED, "%s: unknown image format (PPM/PGM, PNG, JPEG or --image-raw)", path);
}

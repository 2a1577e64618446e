/*
 * Raw camera frames (what a phone's camera hands over): NV12 or I420 planes
 * packed one after the other, read straight into a surface of that format.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "image/image_surface.h"

tmem_status tmrt_image_parse_raw_spec(const char *spec, uint32_t *width, uint32_t *height,
                                      tmem_pixel_format *format) {
    if (!spec || !width || !height || !format) return TMEM_E_INVALID_ARG;
    char *end;
    unsigned long w = strtoul(spec, &end, 10);
    if (end == spec || *end != 'x') return TMEM_E_PARSE;
    const char *hs = end + 1;
    unsigned long h = strtoul(hs, &end, 10);
    if (end == hs || *end != ':') return TMEM_E_PARSE;
    if (!w || !h || w > TMEM_SURFACE_MAX_DIM || h > TMEM_SURFACE_MAX_DIM) return TMEM_E_PARSE;
    tmem_pixel_format f;
    if (!strcmp(end + 1, "nv12"))
        f = TMEM_FORMAT_NV12;
    else if (!strcmp(end + 1, "i420"))
        f = TMEM_FORMAT_I420;
    else
        return TMEM_E_PARSE;
    *width = (uint32_t)w, *height = (uint32_t)h, *format = f;
    return TMEM_OK;
}

tmem_status tmrt_image_load_raw(tmem_context *ctx, const char *path, uint32_t width, uint32_t height,
                                tmem_pixel_format format, tmem_surface **out, tmrt_error *err) {
    if (out) *out = NULL;
    if (!ctx || !path || !out || (format != TMEM_FORMAT_NV12 && format != TMEM_FORMAT_I420))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "raw frame: NULL context, path or output, or not NV12 / I420");
    uint64_t cw = (width + 1) / 2, ch = (height + 1) / 2;
    /* Row bytes and row count of each plane as packed in the file. */
    uint64_t rows[3] = {height, ch, ch}, bytes[3] = {width, 2 * cw, 0};
    uint32_t planes = 2;
    if (format == TMEM_FORMAT_I420) bytes[1] = bytes[2] = cw, planes = 3;
    uint64_t want = 0;
    for (uint32_t p = 0; p < planes; p++) want += rows[p] * bytes[p];
    struct stat sb;
    if (stat(path, &sb) != 0) return tmrt__fail(err, TMEM_E_NOT_FOUND, "%s: cannot open", path);
    if ((uint64_t)sb.st_size != want)
        return tmrt__fail(err, TMEM_E_CORRUPT, "%s: %llu bytes, a %ux%u %s frame has %llu", path,
                          (unsigned long long)sb.st_size, width, height, tmem_pixel_format_name(format),
                          (unsigned long long)want);
    FILE *f = fopen(path, "rb");
    if (!f) return tmrt__fail(err, TMEM_E_NOT_FOUND, "%s: cannot open", path);
    tmem_status st = tmrt__image_begin(ctx, width, height, format, "image-raw", out, err);
    if (st == TMEM_OK) {
        bool ok = true;
        for (uint32_t p = 0; p < planes && ok; p++)
            for (uint64_t y = 0; y < rows[p] && ok; y++)
                ok = fread(tmrt__image_row(*out, p, (uint32_t)y), 1, bytes[p], f) == bytes[p];
        st = tmrt__image_finish(out, ok ? TMEM_OK : tmrt__fail(err, TMEM_E_IO, "%s: short read", path));
    }
    fclose(f);
    return st;
}

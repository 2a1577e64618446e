/* Shared by the image decoders (built in and optional codecs): create the
 * destination surface and hand out row pointers into it. */
#ifndef TMRT_IMAGE_SURFACE_H
#define TMRT_IMAGE_SURFACE_H

#include "tmemrt/image.h"
#include "util/errorf.h"

/* A new surface of `format` (memfd, the IMAGE role's type), locked
 * read-write; the caller fills it and calls tmrt__image_finish. */
int tmrt__image_begin(tmem_context *ctx, uint32_t width, uint32_t height, tmem_pixel_format format, const char *name,
                      tmem_surface **out, char *err, size_t err_cap);
/* Row `y` of plane `plane` of a surface made by tmrt__image_begin. */
uint8_t *tmrt__image_row(tmem_surface *s, uint32_t plane, uint32_t y);
/* Unlock; on failure (ok false) release it and set *s NULL. */
int tmrt__image_finish(tmem_surface **s, bool ok);
/* Errors: snprintf into err (NULL-safe); returns -1. */
#define tmrt__image_error tmrt__errorf

#endif

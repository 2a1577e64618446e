/* Shared by the image decoders (built in and optional codecs): create the
 * destination surface and hand out row pointers into it. */
#ifndef TMRT_IMAGE_SURFACE_H
#define TMRT_IMAGE_SURFACE_H

#include "tmemrt/image.h"
#include "util/fail.h"

/* A new surface of `format` (memfd, the IMAGE role's type), locked
 * read-write; the caller fills it and calls tmrt__image_finish.
 * TMEM_E_INVALID_ARG (a size outside 1..TMEM_SURFACE_MAX_DIM) | the
 * errors of tmem_surface_create / _lock; *out NULL on failure. */
tmem_status tmrt__image_begin(tmem_context *ctx, uint32_t width, uint32_t height, tmem_pixel_format format,
                              const char *name, tmem_surface **out, tmrt_error *err);
/* Row `y` of plane `plane` of a surface made by tmrt__image_begin. */
uint8_t *tmrt__image_row(tmem_surface *s, uint32_t plane, uint32_t y);
/* Unlock. When `st` is a failure (the decoder's), or unlocking fails,
 * release the surface and set *s NULL; returns st, or the unlock's status. */
tmem_status tmrt__image_finish(tmem_surface **s, tmem_status st);

#endif

/* The optional codec module's decoders (runtime/codecs), each built only when
 * CMake found its library. */
#ifndef TMRT_CODECS_INTERNAL_H
#define TMRT_CODECS_INTERNAL_H
#include "tmemrt/image.h"

bool tmrt__png_sniff(const uint8_t *head, size_t n);
tmem_status tmrt__png_decode(tmem_context *ctx, const char *path, tmem_surface **out, tmrt_error *err);
bool tmrt__jpeg_sniff(const uint8_t *head, size_t n);
tmem_status tmrt__jpeg_decode(tmem_context *ctx, const char *path, tmem_surface **out, tmrt_error *err);

#endif

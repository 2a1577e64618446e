/**
 * @file image.h
 * @brief Images into surfaces: decoded straight into a surface of
 *        `/memory/images` (the IMAGE role's type), no intermediate RGB copy.
 *
 * Built in: binary PPM (P6) and PGM (P5) with maxval 255, and raw camera
 * frames (NV12 or I420, `WxH:nv12` / `WxH:i420`). PNG and JPEG come from an
 * optional module (runtime/codecs, libpng + libjpeg-turbo, built only when
 * CMake finds them) that hands its decoders to tmrt_image_load() as a codec
 * table, so typedmem_runtime itself keeps to pthreads and libm.
 *
 * Every decoder writes rows into the surface's own memory (PNG and JPEG:
 * the libraries' row output points at the surface's rows); the only other
 * memory is the decoder's internal state.
 */
#ifndef TMEMRT_IMAGE_H
#define TMEMRT_IMAGE_H

#include <stddef.h>
#include <typedmem/typedmem.h>
#include <typedmem/surface.h>

TMEM_EXTERN_C_BEGIN

/** Bytes of a file's start a codec's sniff gets (fewer if the file is shorter). */
#define TMRT_IMAGE_SNIFF_BYTES 16u

/** @brief A decoder: recognises a file by its first bytes, decodes it into a
 *  new surface (RGB8 or GRAY8; alpha composited on white, as Hugging Face's
 *  convert_to_rgb does). */
typedef struct tmrt_image_codec {
    const char *name; /**< "png", "jpeg" */
    /** true when the file starts like this format */
    bool (*sniff)(const uint8_t *head, size_t n);
    /** 0, or -1 with a message in err; *out NULL on failure */
    int (*decode)(tmem_context *ctx, const char *path, tmem_surface **out, char *err, size_t err_cap);
} tmrt_image_codec;

/** @brief Decode an image file into a new surface of ctx: PPM/PGM built in,
 *  other formats through `codecs` (may be NULL with n_codecs 0).
 *  @param[out] out  NULL on failure.
 *  @return 0, or -1 with a message in err (unreadable file, unknown format,
 *          a format whose codec was not built, corrupt data, sizes above
 *          TMEM_SURFACE_MAX_DIM, surface creation refused by the budget)
 *  @par Threads safe */
int tmrt_image_load(tmem_context *ctx, const char *path, const tmrt_image_codec *codecs, size_t n_codecs,
                    tmem_surface **out, char *err, size_t err_cap);

/** @brief Parse a raw frame spec "WxH:nv12" or "WxH:i420".
 *  @return 0, or -1 (malformed, zero sizes or sizes above
 *          TMEM_SURFACE_MAX_DIM, unknown layout)
 *  @par Threads safe */
int tmrt_image_parse_raw_spec(const char *spec, uint32_t *width, uint32_t *height, tmem_pixel_format *format);

/** @brief Read a raw NV12 / I420 frame (planes packed one after the other,
 *  rows of `width` bytes, chroma at half resolution rounded up) into a new
 *  surface of that format. The file's size must match exactly.
 *  @return 0, or -1 with a message in err
 *  @par Threads safe */
int tmrt_image_load_raw(tmem_context *ctx, const char *path, uint32_t width, uint32_t height, tmem_pixel_format format,
                        tmem_surface **out, char *err, size_t err_cap);

/** @brief The codecs built into the optional module (runtime/codecs):
 *  defined only when the module is linked (TMRT_HAVE_IMAGE_CODECS).
 *  @param[out] count  entries returned.
 *  @par Threads safe */
const tmrt_image_codec *tmrt_image_codecs(size_t *count);

TMEM_EXTERN_C_END

#endif /* TMEMRT_IMAGE_H */

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
 *
 * Errors follow the runtime's convention (error.h): a tmem_status, and a
 * message naming the file and what is wrong in the tmrt_error when given.
 */
#ifndef TMEMRT_IMAGE_H
#define TMEMRT_IMAGE_H

#include <stddef.h>
#include <typedmem/typedmem.h>
#include <tmemrt/error.h>

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
    /** TMEM_OK, or a status with a message in err (may be NULL) naming the
     *  file; *out NULL on failure */
    tmem_status (*decode)(tmem_context *ctx, const char *path, tmem_surface **out, tmrt_error *err);
} tmrt_image_codec;

/** @brief Decode an image file into a new surface of ctx (the IMAGE role's
 *  type): PPM/PGM built in, other formats through `codecs` (may be NULL with
 *  n_codecs 0).
 *  @param[out] out  NULL on failure.
 *  @param[out] err  may be NULL; names the file and what is wrong.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL ctx, path or out; codecs NULL
 *          with n_codecs > 0; sizes outside 1..TMEM_SURFACE_MAX_DIM)
 *          | TMEM_E_NOT_FOUND (cannot open) | TMEM_E_UNSUPPORTED (unknown
 *          format, a format whose codec was not built, a PNM maxval other
 *          than 255) | TMEM_E_CORRUPT (malformed or truncated data) | the
 *          errors of tmem_surface_create (TMEM_E_BUDGET, ...)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_image_load(tmem_context *ctx, const char *path,
                                                    const tmrt_image_codec *codecs, size_t n_codecs,
                                                    tmem_surface **out, tmrt_error *err);

/** @brief Parse a raw frame spec "WxH:nv12" or "WxH:i420".
 *  @param[out] width, height, format  unchanged on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (a NULL pointer) | TMEM_E_PARSE
 *          (malformed, zero sizes or sizes above TMEM_SURFACE_MAX_DIM,
 *          unknown layout)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_image_parse_raw_spec(const char *spec, uint32_t *width, uint32_t *height,
                                                              tmem_pixel_format *format);

/** @brief Read a raw NV12 / I420 frame (planes packed one after the other,
 *  rows of `width` bytes, chroma at half resolution rounded up) into a new
 *  surface of that format. The file's size must match exactly.
 *  @param[out] out  NULL on failure.
 *  @param[out] err  may be NULL; names the file and what is wrong.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (NULL ctx, path or out, a format
 *          other than NV12 / I420, sizes outside 1..TMEM_SURFACE_MAX_DIM)
 *          | TMEM_E_NOT_FOUND (cannot open) | TMEM_E_CORRUPT (the size is
 *          not the frame's) | TMEM_E_IO (short read) | the errors of
 *          tmem_surface_create
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_image_load_raw(tmem_context *ctx, const char *path, uint32_t width,
                                                        uint32_t height, tmem_pixel_format format,
                                                        tmem_surface **out, tmrt_error *err);

/** @brief The codecs built into the optional module (runtime/codecs):
 *  defined only when the module is linked (TMRT_HAVE_IMAGE_CODECS). Cannot
 *  fail: the table is static.
 *  @param[out] count  entries returned.
 *  @par Threads safe */
TMEM_API const tmrt_image_codec *tmrt_image_codecs(size_t *count);

TMEM_EXTERN_C_END

#endif /* TMEMRT_IMAGE_H */

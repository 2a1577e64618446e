/* The table of codecs this optional module was built with. */
#include "codecs_internal.h"

static const tmrt_image_codec codecs[] = {
#ifdef TMRT_HAVE_PNG
    {"png", tmrt__png_sniff, tmrt__png_decode},
#endif
#ifdef TMRT_HAVE_JPEG
    {"jpeg", tmrt__jpeg_sniff, tmrt__jpeg_decode},
#endif
};

const tmrt_image_codec *tmrt_image_codecs(size_t *count) {
    *count = sizeof codecs / sizeof codecs[0];
    return codecs;
}

/*
 * Pixel formats and the size-and-align query: everything about a surface's
 * memory that follows from (format, width, height, channels, row alignment,
 * bytes-per-row), computed with overflow checks before anything exists.
 *
 * The same function validates an imported descriptor: the importer recomputes
 * the layout from the descriptor's few inputs and compares, so a peer cannot
 * describe planes that fall outside the memory it sent.
 */
#include "surface/surface_internal.h"
#include <string.h>

/* How one plane of a format is built: element bytes, values per element and
 * the pixels one element covers. components 0 = "channels" (tensor planes). */
typedef struct plane_kind {
    uint8_t bytes_per_value;
    uint8_t components;
    uint8_t element_width, element_height;
} plane_kind;

typedef struct format_def {
    const char *name;
    uint8_t plane_count;   /* 0 = channels (tensor formats) */
    uint8_t channels;      /* values per pixel after conversion */
    plane_kind planes[3];  /* tensor formats: planes[0] repeated */
} format_def;

static const format_def formats[TMEM_FORMAT_COUNT] = {
    [TMEM_FORMAT_INVALID] = {"invalid", 0, 0, {{0}}},
    [TMEM_FORMAT_RGBA8] = {"rgba8", 1, 4, {{1, 4, 1, 1}}},
    [TMEM_FORMAT_BGRA8] = {"bgra8", 1, 4, {{1, 4, 1, 1}}},
    [TMEM_FORMAT_RGB8] = {"rgb8", 1, 3, {{1, 3, 1, 1}}},
    [TMEM_FORMAT_GRAY8] = {"gray8", 1, 1, {{1, 1, 1, 1}}},
    [TMEM_FORMAT_NV12] = {"nv12", 2, 3, {{1, 1, 1, 1}, {1, 2, 2, 2}}},
    [TMEM_FORMAT_I420] = {"i420", 3, 3, {{1, 1, 1, 1}, {1, 1, 2, 2}, {1, 1, 2, 2}}},
    [TMEM_FORMAT_RGBA16F] = {"rgba16f", 1, 4, {{2, 4, 1, 1}}},
    [TMEM_FORMAT_TENSOR_F16_CHW] = {"tensor_f16_chw", 0, 0, {{2, 1, 1, 1}}},
    [TMEM_FORMAT_TENSOR_F32_CHW] = {"tensor_f32_chw", 0, 0, {{4, 1, 1, 1}}},
};

const char *tmem_pixel_format_name(tmem_pixel_format format) {
    if ((unsigned)format >= TMEM_FORMAT_COUNT) return "invalid";
    return formats[format].name;
}

bool tmem__surface_format_is_tensor(tmem_pixel_format format) {
    return format == TMEM_FORMAT_TENSOR_F16_CHW || format == TMEM_FORMAT_TENSOR_F32_CHW;
}

/* ceil(a / b) for small b without overflow. */
static uint32_t div_up(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }

tmem_status tmem_surface_size_and_align(const tmem_surface_desc *desc, tmem_surface_layout *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!desc || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_surface_layout l;
    memset(&l, 0, sizeof l);
    if (desc->format <= TMEM_FORMAT_INVALID || desc->format >= TMEM_FORMAT_COUNT) return tmem__err(TMEM_E_INVALID_ARG);
    if (desc->flags) return tmem__err(TMEM_E_INVALID_ARG);
    if (desc->width == 0 || desc->height == 0 || desc->width > TMEM_SURFACE_MAX_DIM ||
        desc->height > TMEM_SURFACE_MAX_DIM)
        return tmem__err(TMEM_E_INVALID_ARG);
    const format_def *f = &formats[desc->format];
    uint32_t planes = f->plane_count, channels = f->channels;
    if (tmem__surface_format_is_tensor(desc->format)) {
        channels = desc->channels ? desc->channels : 3;
        if (channels > TMEM_SURFACE_MAX_PLANES) return tmem__err(TMEM_E_INVALID_ARG);
        planes = channels;
    } else if (desc->channels != 0) {
        return tmem__err(TMEM_E_INVALID_ARG);
    }
    uint64_t align = desc->row_alignment ? desc->row_alignment : TMEM_SURFACE_DEFAULT_ROW_ALIGN;
    if (!tmem__is_pow2(align) || align > TMEM_SURFACE_MAX_ROW_ALIGN) return tmem__err(TMEM_E_ALIGNMENT);
    /* Rows of F16/F32 must keep their values aligned. */
    if (align < f->planes[0].bytes_per_value) align = f->planes[0].bytes_per_value;
    for (uint32_t p = planes; p < TMEM_SURFACE_MAX_PLANES; p++)
        if (desc->bytes_per_row[p]) return tmem__err(TMEM_E_INVALID_ARG);

    l.format = desc->format;
    l.width = desc->width;
    l.height = desc->height;
    l.channels = channels;
    l.row_alignment = (uint32_t)align;
    l.plane_count = planes;
    l.alignment = align;
    uint64_t offset = 0;
    for (uint32_t p = 0; p < planes; p++) {
        const plane_kind *k = &f->planes[tmem__surface_format_is_tensor(desc->format) ? 0 : p];
        tmem_surface_plane *pl = &l.planes[p];
        pl->element_width = k->element_width;
        pl->element_height = k->element_height;
        pl->components = k->components;
        pl->bytes_per_element = (uint32_t)k->bytes_per_value * k->components;
        pl->width = div_up(desc->width, k->element_width);
        pl->height = div_up(desc->height, k->element_height);
        uint64_t row, bpr;
        /* Tensor planes share plane 0's row pitch so they stay equally spaced
         * (one channel stride spans them in a view). */
        uint64_t asked = desc->bytes_per_row[p];
        if (tmem__surface_format_is_tensor(desc->format) && p > 0) {
            if (asked && asked != desc->bytes_per_row[0]) return tmem__err(TMEM_E_INVALID_ARG);
            asked = desc->bytes_per_row[0];
        }
        /* Dimensions are <= 32768 and elements <= 8 bytes: no overflow here,
         * but every later step is checked anyway (bytes_per_row is caller input). */
        if (tmem__mul_overflow(pl->width, pl->bytes_per_element, &row)) return tmem__err(TMEM_E_OVERFLOW);
        if (asked) {
            bpr = asked;
            if (bpr < row) return tmem__err(TMEM_E_INVALID_ARG);
            if (bpr % align) return tmem__err(TMEM_E_ALIGNMENT);
        } else if (!tmem__align_up(row, align, &bpr)) {
            return tmem__err(TMEM_E_OVERFLOW);
        }
        pl->bytes_per_row = bpr;
        if (tmem__mul_overflow(bpr, pl->height, &pl->size)) return tmem__err(TMEM_E_OVERFLOW);
        if (!tmem__align_up(offset, align, &offset)) return tmem__err(TMEM_E_OVERFLOW);
        pl->offset = offset;
        if (tmem__add_overflow(offset, pl->size, &offset)) return tmem__err(TMEM_E_OVERFLOW);
    }
    if (!tmem__align_up(offset, align, &l.alloc_size)) return tmem__err(TMEM_E_OVERFLOW);
    /* Sizes must also fit size_t and the mapping arithmetic that follows
     * (page rounding): keep a margin below 2^63. */
    if (l.alloc_size > (UINT64_MAX >> 1) || l.alloc_size > (uint64_t)SIZE_MAX / 2) return tmem__err(TMEM_E_OVERFLOW);
    *out = l;
    return TMEM_OK;
}

bool tmem__surface_layout_equal(const tmem_surface_layout *a, const tmem_surface_layout *b) {
    if (a->format != b->format || a->width != b->width || a->height != b->height || a->channels != b->channels ||
        a->row_alignment != b->row_alignment || a->plane_count != b->plane_count || a->alloc_size != b->alloc_size ||
        a->alignment != b->alignment)
        return false;
    for (uint32_t p = 0; p < a->plane_count; p++) {
        const tmem_surface_plane *x = &a->planes[p], *y = &b->planes[p];
        if (x->width != y->width || x->height != y->height || x->element_width != y->element_width ||
            x->element_height != y->element_height || x->bytes_per_element != y->bytes_per_element ||
            x->components != y->components || x->bytes_per_row != y->bytes_per_row || x->offset != y->offset ||
            x->size != y->size)
            return false;
    }
    return true;
}

uint32_t tmem_dtype_size(tmem_dtype dtype) {
    switch (dtype) {
    case TMEM_DTYPE_U8: return 1;
    case TMEM_DTYPE_F16: return 2;
    case TMEM_DTYPE_F32: return 4;
    default: return 0;
    }
}

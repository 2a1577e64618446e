/*
 * Tensor views: a plane or a sub-rectangle of it, or a whole TENSOR_* surface,
 * described as a strided tensor over the surface's own memory. No copy, no
 * allocation; the view is valid while the caller holds a reference (and, for
 * access, a lock).
 */
#include "surface/surface_internal.h"
#include <string.h>

/* dtype of a plane's values from its element size. */
static tmem_dtype plane_dtype(const tmem_surface_layout *l, const tmem_surface_plane *p) {
    uint32_t value_size = p->bytes_per_element / p->components;
    if (value_size == 1) return TMEM_DTYPE_U8;
    if (value_size == 4) return TMEM_DTYPE_F32;
    (void)l;
    return TMEM_DTYPE_F16; /* RGBA16F and F16 tensors */
}

/* Resolve a pixel rect (NULL / zeroed = whole) against the surface. */
static bool resolve_rect(const tmem_surface_layout *l, const tmem_rect *rect, tmem_rect *out) {
    tmem_rect r = {0, 0, l->width, l->height};
    if (rect && (rect->x || rect->y || rect->width || rect->height)) {
        r = *rect;
        if (r.width == 0 || r.height == 0) return false;
        if (r.x >= l->width || r.y >= l->height) return false;
        if (r.width > l->width - r.x || r.height > l->height - r.y) return false;
    }
    *out = r;
    return true;
}

/* A pixel interval [a, a+n) in elements of size e: must start on the grid and
 * end on it or at the edge (where the last element is partial). */
static bool to_elements(uint32_t a, uint32_t n, uint32_t e, uint32_t edge, uint32_t *first, uint32_t *count) {
    if (a % e) return false;
    uint32_t end = a + n; /* a + n <= edge <= 32768: no overflow */
    if (end % e && end != edge) return false;
    *first = a / e;
    *count = end / e + (end % e != 0) - a / e;
    return true;
}

tmem_status tmem_surface_plane_view(tmem_surface *s, uint32_t plane, const tmem_rect *rect, tmem_tensor_view *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!tmem__surface_valid(s) || !out || plane >= s->layout.plane_count) return tmem__err(TMEM_E_INVALID_ARG);
    const tmem_surface_layout *l = &s->layout;
    const tmem_surface_plane *p = &l->planes[plane];
    tmem_rect r;
    uint32_t ex, ey, nx, ny;
    if (!resolve_rect(l, rect, &r) || !to_elements(r.x, r.width, p->element_width, l->width, &ex, &nx) ||
        !to_elements(r.y, r.height, p->element_height, l->height, &ey, &ny))
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem_dtype dt = plane_dtype(l, p);
    out->data = s->base + p->offset + (uint64_t)ey * p->bytes_per_row + (uint64_t)ex * p->bytes_per_element;
    out->dtype = dt;
    out->rank = 3;
    out->shape[0] = ny;
    out->shape[1] = nx;
    out->shape[2] = p->components;
    out->strides[0] = (int64_t)p->bytes_per_row;
    out->strides[1] = (int64_t)p->bytes_per_element;
    out->strides[2] = (int64_t)tmem_dtype_size(dt);
    return TMEM_OK;
}

tmem_status tmem_surface_tensor_view(tmem_surface *s, const tmem_rect *rect, tmem_tensor_view *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!tmem__surface_valid(s) || !out || !tmem__surface_format_is_tensor(s->layout.format))
        return tmem__err(TMEM_E_INVALID_ARG);
    const tmem_surface_layout *l = &s->layout;
    tmem_rect r;
    if (!resolve_rect(l, rect, &r)) return tmem__err(TMEM_E_INVALID_ARG);
    const tmem_surface_plane *p = &l->planes[0];
    /* Planes of a tensor surface have the same size and alignment, so they are
     * equally spaced and one stride spans the channels. */
    int64_t cstride = l->plane_count > 1 ? (int64_t)(l->planes[1].offset - l->planes[0].offset) : (int64_t)p->size;
    out->data = s->base + p->offset + (uint64_t)r.y * p->bytes_per_row + (uint64_t)r.x * p->bytes_per_element;
    out->dtype = plane_dtype(l, p);
    out->rank = 3;
    out->shape[0] = l->plane_count;
    out->shape[1] = r.height;
    out->shape[2] = r.width;
    out->strides[0] = cstride;
    out->strides[1] = (int64_t)p->bytes_per_row;
    out->strides[2] = (int64_t)p->bytes_per_element;
    return TMEM_OK;
}

tmem_status tmem_tensor_view_chw(void *data, tmem_dtype dtype, uint64_t c, uint64_t h, uint64_t w,
                                 tmem_tensor_view *out) {
    if (out) memset(out, 0, sizeof *out);
    uint32_t size = tmem_dtype_size(dtype);
    if (!data || !out || !size || !c || !h || !w) return tmem__err(TMEM_E_INVALID_ARG);
    uint64_t row, plane, total;
    if (tmem__mul_overflow(w, size, &row) || tmem__mul_overflow(row, h, &plane) ||
        tmem__mul_overflow(plane, c, &total) || total > (uint64_t)INT64_MAX)
        return tmem__err(TMEM_E_OVERFLOW);
    out->data = data;
    out->dtype = dtype;
    out->rank = 3;
    out->shape[0] = c;
    out->shape[1] = h;
    out->shape[2] = w;
    out->strides[0] = (int64_t)plane;
    out->strides[1] = (int64_t)row;
    out->strides[2] = (int64_t)size;
    return TMEM_OK;
}

/*
 * The surface layer's contract with the layers above it (the GPU backends),
 * beyond the public typedmem/surface.h. surface_internal.h is private to
 * src/surface/; this is what other layers may use.
 */
#ifndef TMEM_SURFACE_CONTRACT_H
#define TMEM_SURFACE_CONTRACT_H

#include "heap/internal.h"
#include "typedmem/surface.h"

/* ---- surface.c ---- */
/* Bytes of the mapping that holds a surface's pixels (a page multiple; what
 * a device imports starting at tmem_surface_base); 0 for an invalid one. */
uint64_t tmem__surface_map_size(const tmem_surface *s);

/* ---- convert.c ---- */
/* Pieces of the fused conversion for its GPU twin (gpu/vulkan/vulkan_convert.c),
 * so both compute the same numbers: the normalisation out = (v - sub[c]) /
 * div[c] (TMEM_E_INVALID_ARG on a bad scale/mean/std), the YUV coefficients
 * {ky, y0, rv, gu, gv, bu}, and the resampling tap of output index i. */
tmem_status tmem__convert_normalise(const tmem_convert_desc *d, float sub[4], float div[4]);
void tmem__convert_yuv(tmem_yuv_matrix m, float out[6]);
void tmem__convert_tap(uint32_t i, uint32_t out_n, uint32_t in_first, uint32_t in_n, tmem_resize_filter filter,
                       uint32_t *i0, uint32_t *i1, float *w);

#endif /* TMEM_SURFACE_CONTRACT_H */

/*
 * Private to the fused conversion (convert.c, convert_avx2.c): the plan one
 * call builds (where the source pixels are, the tap tables, the affine
 * normalisation, where each output value goes) and the row kernels that
 * execute it.
 *
 * Destination addressing is separable: value (c, t, y, x) lives at
 *   out_base + yoff(y) + xoff[x] + c * cstride + t * tstride
 * which covers both a strided (C, H, W) tensor (xoff = x * sx, yoff = y * sy)
 * and the vision patch order (offsets split into block, patch and pixel
 * parts; see tmem_surface_convert_patches).
 *
 * The scalar row is the reference; the AVX2 row evaluates the same float
 * expressions in the same order (no fused multiply-add, the build is ISO C
 * so nothing is contracted), so both give the same bits.
 */
#ifndef TMEM_SURFACE_CONVERT_INTERNAL_H
#define TMEM_SURFACE_CONVERT_INTERNAL_H

#include "surface/surface_internal.h"

typedef struct tmem__convert_plan {
    tmem_pixel_format format;
    const uint8_t *plane[3];
    uint64_t bpr[3];
    /* YUV -> RGB: v = ky * (Y - y0) + {rv, gu, gv, bu} * (U|V - 128). */
    float ky, y0, rv, gu, gv, bu;
    uint32_t width, channels, copies; /* output columns, channels, frames */
    uint32_t map[4];                  /* source channel of output channel c */
    float sub[4], div[4];             /* out = (v - sub[c]) / div[c] */
    const int32_t *xi0, *xi1;         /* source columns of each output column */
    const float *xw;                  /* weight of xi1 */
    const int64_t *xoff;              /* destination byte offset of column x */
    int64_t cstride, tstride;         /* bytes between channels, frames */
    bool f32;                         /* else f16 */
    const void *simd;                 /* the AVX2 row's per-group tables, or NULL */
} tmem__convert_plan;

/* One output row: its two source rows, the weight of y1, where it goes. */
typedef struct tmem__convert_row {
    uint32_t y0, y1;
    float w;
    uint8_t *out; /* out_base + yoff(y) */
} tmem__convert_row;

/* Columns [x_begin, x_end) of a row, scalar. */
void tmem__convert_row_scalar(const tmem__convert_plan *p, const tmem__convert_row *r, uint32_t x_begin,
                              uint32_t x_end);

/* true when this CPU runs the AVX2 row (x86-64 with AVX2, FMA, F16C). */
bool tmem__convert_have_avx2(void);
/* true when the AVX2 row may run on this plan: planes 4-byte aligned with
 * row pitches multiples of 4 (the gathers read whole aligned words, never
 * outside a plane). */
bool tmem__convert_avx2_fits(const tmem__convert_plan *p);
/* Bytes of the AVX2 row's per-group tables for this plan (byte shuffles that
 * replace the gathers of YUV sources); 0 when it uses none. Needs the
 * plan's columns (xi0, xi1, width). */
size_t tmem__convert_avx2_table_bytes(const tmem__convert_plan *p);
/* Build those tables into mem (table_bytes long, 32-byte aligned) and point
 * p->simd at them. */
void tmem__convert_avx2_prepare(tmem__convert_plan *p, void *mem);
/* How many of p->simd's groups take the shuffles (the rest gather); tests. */
uint32_t tmem__convert_avx2_shuffled_groups(const tmem__convert_plan *p);
/* The first (width & ~7) columns of a row with AVX2; returns how many were
 * done (the caller finishes the tail with the scalar row). */
uint32_t tmem__convert_row_avx2(const tmem__convert_plan *p, const tmem__convert_row *r);

#endif /* TMEM_SURFACE_CONVERT_INTERNAL_H */

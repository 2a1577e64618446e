/*
 * The fused conversion's AVX2 row: eight output pixels at a time.
 *
 * The library is built for the baseline ISA, so the kernel carries
 * __attribute__((target)) and runs only after __builtin_cpu_supports says
 * the CPU has AVX2, FMA and F16C (no global state: the answer is the CPU's).
 *
 * Source taps are fetched with 32-bit gathers of the aligned word that holds
 * the wanted byte(s), then shifted: a gather never reads outside its plane
 * (planes are 4-aligned with 4-multiple pitches, tmem__convert_avx2_fits),
 * whatever the column. RGB8's three bytes may straddle two words: a second,
 * masked gather fetches the next word only for the lanes that need it.
 *
 * YUV sources (NV12, I420) avoid the gathers where they can: the plan's
 * columns are fixed for the whole conversion, so for each group of eight
 * output columns tmem__convert_avx2_prepare finds a 16-byte window of the
 * Y row (and of the chroma row) per half of the group that holds every tap
 * of its four columns, and a byte shuffle that spreads those taps into
 * 32-bit lanes. A row then costs two 16-byte loads and a few in-lane
 * shuffles per plane and group instead of eight gathers; groups whose taps
 * spread wider (downscales beyond about 4.6x) keep the gathers. The chroma of
 * a source row pair is fetched once when both rows share it.
 *
 * Arithmetic mirrors the scalar row operation for operation (separate
 * multiply and add, same association, min/max clamps that agree with the
 * scalar comparisons on every value that occurs), so the results are the
 * same bits; F16 stores use F16C's round-to-nearest-even, as the scalar
 * converter does.
 */
#include "surface/convert_internal.h"
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TMEM_CONVERT_HAVE_AVX2_CODE 1
#endif

bool tmem__convert_avx2_fits(const tmem__convert_plan *p) {
    uint32_t planes = p->format == TMEM_FORMAT_NV12 ? 2 : p->format == TMEM_FORMAT_I420 ? 3 : 1;
    for (uint32_t i = 0; i < planes; i++)
        if ((uintptr_t)p->plane[i] % 4 || p->bpr[i] % 4) return false;
    return true;
}

#ifndef TMEM_CONVERT_HAVE_AVX2_CODE

bool tmem__convert_have_avx2(void) { return false; }

uint32_t tmem__convert_row_avx2(const tmem__convert_plan *p, const tmem__convert_row *r) {
    (void)p, (void)r;
    return 0;
}

size_t tmem__convert_avx2_table_bytes(const tmem__convert_plan *p) {
    (void)p;
    return 0;
}

void tmem__convert_avx2_prepare(tmem__convert_plan *p, void *mem) { (void)p, (void)mem; }

uint32_t tmem__convert_avx2_shuffled_groups(const tmem__convert_plan *p) {
    (void)p;
    return 0;
}

#else

bool tmem__convert_have_avx2(void) {
    /* clang 14's __builtin_cpu_supports knows no "f16c"; every CPU with
     * AVX2 has F16C (Haswell, Excavator and later), so clang builds rely on
     * that rather than run cpuid (a VM exit) on every call. */
#if defined(__clang__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
#endif
}

#define AVX2 __attribute__((target("avx2,fma,f16c")))
/* the small helpers of the rows, inlined so their arrays stay in registers */
#define AVX2_INLINE AVX2 __attribute__((always_inline)) static inline

/* Byte `byte_index` of each lane's row, as an int32 (0..255). */
AVX2 static inline __m256i gather_byte(const uint8_t *row, __m256i byte_index) {
    __m256i word = _mm256_and_si256(byte_index, _mm256_set1_epi32(~3));
    __m256i shift = _mm256_slli_epi32(_mm256_and_si256(byte_index, _mm256_set1_epi32(3)), 3);
    __m256i g = _mm256_i32gather_epi32((const int *)(const void *)row, word, 1);
    return _mm256_and_si256(_mm256_srlv_epi32(g, shift), _mm256_set1_epi32(0xFF));
}

/* The four bytes from `byte_index` on (only those inside the pixel are used). */
AVX2 static inline __m256i gather_bytes(const uint8_t *row, __m256i byte_index, bool straddle) {
    __m256i low3 = _mm256_and_si256(byte_index, _mm256_set1_epi32(3));
    __m256i word = _mm256_sub_epi32(byte_index, low3);
    __m256i shift = _mm256_slli_epi32(low3, 3);
    const int *base = (const int *)(const void *)row;
    __m256i v = _mm256_srlv_epi32(_mm256_i32gather_epi32(base, word, 1), shift);
    if (!straddle) return v;
    /* Lanes whose pixel starts at byte 2 or 3 of its word also need the next
     * word; the others must not read it (it may lie past the plane). */
    __m256i need = _mm256_cmpgt_epi32(low3, _mm256_set1_epi32(1));
    __m256i next = _mm256_mask_i32gather_epi32(
        _mm256_setzero_si256(), base, _mm256_add_epi32(word, _mm256_set1_epi32(4)), need, 1);
    /* srlv/sllv give 0 for counts >= 32: lanes at byte 0 take nothing from next. */
    return _mm256_or_si256(v,
                           _mm256_sllv_epi32(next, _mm256_sub_epi32(_mm256_set1_epi32(32), shift)));
}

AVX2 static inline __m256 byte_f(__m256i v, int shift) {
    return _mm256_cvtepi32_ps(
        _mm256_and_si256(_mm256_srli_epi32(v, shift), _mm256_set1_epi32(0xFF)));
}

AVX2_INLINE __m256 clamp255(__m256 v) {
    return _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
}

/* YUV -> RGB, the scalar fetch's expressions. */
AVX2_INLINE void yuv_rgb(const tmem__convert_plan *p, __m256 y, __m256 u, __m256 v, __m256 px[4]) {
    __m256 l = _mm256_mul_ps(_mm256_set1_ps(p->ky), _mm256_sub_ps(y, _mm256_set1_ps(p->y0)));
    u = _mm256_sub_ps(u, _mm256_set1_ps(128.0f));
    v = _mm256_sub_ps(v, _mm256_set1_ps(128.0f));
    px[0] = clamp255(_mm256_add_ps(l, _mm256_mul_ps(_mm256_set1_ps(p->rv), v)));
    __m256 g = _mm256_add_ps(l, _mm256_mul_ps(_mm256_set1_ps(p->gu), u));
    px[1] = clamp255(_mm256_add_ps(g, _mm256_mul_ps(_mm256_set1_ps(p->gv), v)));
    px[2] = clamp255(_mm256_add_ps(l, _mm256_mul_ps(_mm256_set1_ps(p->bu), u)));
    px[3] = _mm256_set1_ps(255.0f);
}

/* Eight source pixels (columns xi, source row y) as R, G, B, A floats. */
AVX2_INLINE void fetch8(const tmem__convert_plan *p, tmem_pixel_format format, __m256i xi,
                        uint32_t y, __m256 px[4]) {
    const uint8_t *row0 = p->plane[0] + y * p->bpr[0];
    __m256i w;
    switch (format) {
    case TMEM_FORMAT_RGBA8:
    case TMEM_FORMAT_BGRA8:
        w = _mm256_i32gather_epi32((const int *)(const void *)row0, _mm256_slli_epi32(xi, 2), 1);
        px[format == TMEM_FORMAT_RGBA8 ? 0 : 2] = byte_f(w, 0);
        px[1] = byte_f(w, 8);
        px[format == TMEM_FORMAT_RGBA8 ? 2 : 0] = byte_f(w, 16);
        px[3] = _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 24));
        return;
    case TMEM_FORMAT_RGB8:
        w = gather_bytes(row0, _mm256_mullo_epi32(xi, _mm256_set1_epi32(3)), true);
        px[0] = byte_f(w, 0), px[1] = byte_f(w, 8), px[2] = byte_f(w, 16);
        px[3] = _mm256_set1_ps(255.0f);
        return;
    case TMEM_FORMAT_GRAY8:
        px[0] = px[1] = px[2] = _mm256_cvtepi32_ps(gather_byte(row0, xi));
        px[3] = _mm256_set1_ps(255.0f);
        return;
    case TMEM_FORMAT_NV12: {
        __m256 yv = _mm256_cvtepi32_ps(gather_byte(row0, xi));
        const uint8_t *uv = p->plane[1] + (y >> 1) * p->bpr[1];
        /* U, V at byte 2*(x/2): even, so both bytes sit in one aligned word. */
        w = gather_bytes(uv, _mm256_slli_epi32(_mm256_srli_epi32(xi, 1), 1), false);
        yuv_rgb(p, yv, byte_f(w, 0), byte_f(w, 8), px);
        return;
    }
    default: { /* I420 */
        __m256 yv = _mm256_cvtepi32_ps(gather_byte(row0, xi));
        __m256i half = _mm256_srli_epi32(xi, 1);
        __m256 u = _mm256_cvtepi32_ps(gather_byte(p->plane[1] + (y >> 1) * p->bpr[1], half));
        __m256 v = _mm256_cvtepi32_ps(gather_byte(p->plane[2] + (y >> 1) * p->bpr[2], half));
        yuv_rgb(p, yv, u, v, px);
        return;
    }
    }
}

AVX2_INLINE __m256 lerp(__m256 a, __m256 b, __m256 w) {
    return _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(b, a), w));
}

/* ---- YUV taps by byte shuffles ---- */

/* One group of eight output columns: for each 128-bit half (four columns)
 * the byte offset of a 16-byte window in the Y row and in the chroma row,
 * and pshufb controls that move each column's tap bytes into zero-extended
 * 32-bit lanes: Y of tap x0 and of tap x1; chroma: NV12 U0, V0, U1, V1 (of
 * the interleaved row), I420 the U/V index of x0 and of x1 (the same for
 * both planes). */
typedef struct shuffle_group {
    __m256i y[2];
    __m256i chroma[4];
    int32_t y_base[2], chroma_base[2];
    int32_t ok;         /* 0: a window does not hold the taps; gather this group */
    int32_t contiguous; /* the eight columns' destinations are consecutive values */
    int32_t pad[2];
} shuffle_group;

/* The 16-byte window [base, base + 16) of a row of `row_bytes` holding
 * bytes lo..hi, or -1. */
static int32_t window(int64_t lo, int64_t hi, uint64_t row_bytes) {
    if (row_bytes < 16 || hi - lo > 15) return -1;
    int64_t base = lo + 16 > (int64_t)row_bytes ? (int64_t)row_bytes - 16 : lo;
    return base <= lo && hi < base + 16 ? (int32_t)base : -1;
}

/* Control byte j of lane i (0..3) of half h: source byte `at` (relative)
 * into byte 0 of 32-bit lane i, the other three bytes zeroed. */
static void control(uint8_t *ctl, uint32_t h, uint32_t i, int64_t at) {
    uint8_t *c = ctl + 16 * h + 4 * i;
    c[0] = (uint8_t)at, c[1] = c[2] = c[3] = 0x80;
}

static bool yuv_shuffles(const tmem__convert_plan *p) {
    return p->format == TMEM_FORMAT_NV12 || p->format == TMEM_FORMAT_I420;
}

size_t tmem__convert_avx2_table_bytes(const tmem__convert_plan *p) {
    return yuv_shuffles(p) ? (size_t)(p->width / 8) * sizeof(shuffle_group) : 0;
}

void tmem__convert_avx2_prepare(tmem__convert_plan *p, void *mem) {
    shuffle_group *t = mem;
    bool nv12 = p->format == TMEM_FORMAT_NV12;
    uint64_t chroma_bytes = p->bpr[1] < p->bpr[2] || nv12 ? p->bpr[1] : p->bpr[2];
    for (uint32_t g = 0; g < p->width / 8; g++) {
        shuffle_group *s = &t[g];
        memset(s, 0, sizeof *s);
        s->ok = 1;
        s->contiguous = 1;
        for (int i = 1; i < 8; i++)
            s->contiguous &= p->xoff[8 * g + i] - p->xoff[8 * g + i - 1] == (p->f32 ? 4 : 2);
        for (uint32_t h = 0; h < 2; h++) {
            const int32_t *x0 = p->xi0 + 8 * g + 4 * h, *x1 = p->xi1 + 8 * g + 4 * h;
            int64_t lo = x0[0], hi = x0[0];
            for (int i = 0; i < 4; i++) {
                lo = x0[i] < lo ? x0[i] : lo, lo = x1[i] < lo ? x1[i] : lo;
                hi = x0[i] > hi ? x0[i] : hi, hi = x1[i] > hi ? x1[i] : hi;
            }
            /* chroma: NV12 bytes 2*(x/2) and +1, I420 index x/2 */
            int64_t clo = nv12 ? 2 * (lo / 2) : lo / 2, chi = nv12 ? 2 * (hi / 2) + 1 : hi / 2;
            int32_t yb = window(lo, hi, p->bpr[0]), cb = window(clo, chi, chroma_bytes);
            if (yb < 0 || cb < 0) {
                s->ok = 0;
                break;
            }
            s->y_base[h] = yb, s->chroma_base[h] = cb;
            for (uint32_t i = 0; i < 4; i++) {
                control((uint8_t *)&s->y[0], h, i, x0[i] - yb);
                control((uint8_t *)&s->y[1], h, i, x1[i] - yb);
                if (nv12) {
                    control((uint8_t *)&s->chroma[0], h, i, 2 * (x0[i] / 2) - cb);
                    control((uint8_t *)&s->chroma[1], h, i, 2 * (x0[i] / 2) + 1 - cb);
                    control((uint8_t *)&s->chroma[2], h, i, 2 * (x1[i] / 2) - cb);
                    control((uint8_t *)&s->chroma[3], h, i, 2 * (x1[i] / 2) + 1 - cb);
                } else {
                    control((uint8_t *)&s->chroma[0], h, i, x0[i] / 2 - cb);
                    control((uint8_t *)&s->chroma[1], h, i, x1[i] / 2 - cb);
                }
            }
        }
    }
    p->simd = t;
}

uint32_t tmem__convert_avx2_shuffled_groups(const tmem__convert_plan *p) {
    const shuffle_group *t = p->simd;
    uint32_t n = 0;
    for (uint32_t g = 0; t && g < p->width / 8; g++) n += t[g].ok != 0;
    return n;
}

/* Two 16-byte windows of a row, one per 128-bit half. */
AVX2_INLINE __m256i windows(const uint8_t *row, const int32_t base[2]) {
    __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)(row + base[0]));
    __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(row + base[1]));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

AVX2_INLINE __m256 pick(__m256i bytes, __m256i ctl) {
    return _mm256_cvtepi32_ps(_mm256_shuffle_epi8(bytes, ctl));
}

/* U and V of taps x0 (uv[0], uv[1]) and x1 (uv[2], uv[3]) on chroma row cy. */
AVX2_INLINE void chroma_taps(const tmem__convert_plan *p, tmem_pixel_format format,
                             const shuffle_group *s, uint32_t cy, __m256 uv[4]) {
    if (format == TMEM_FORMAT_NV12) {
        __m256i w = windows(p->plane[1] + cy * p->bpr[1], s->chroma_base);
        uv[0] = pick(w, s->chroma[0]), uv[1] = pick(w, s->chroma[1]);
        uv[2] = pick(w, s->chroma[2]), uv[3] = pick(w, s->chroma[3]);
        return;
    }
    __m256i u = windows(p->plane[1] + cy * p->bpr[1], s->chroma_base);
    __m256i v = windows(p->plane[2] + cy * p->bpr[2], s->chroma_base);
    uv[0] = pick(u, s->chroma[0]), uv[1] = pick(v, s->chroma[0]);
    uv[2] = pick(u, s->chroma[1]), uv[3] = pick(v, s->chroma[1]);
}

/* Source row y's taps, interpolated across: the scalar row's `top` (or
 * `bot`) for the group's eight columns. */
AVX2_INLINE void across(const tmem__convert_plan *p, const shuffle_group *s, uint32_t y,
                        const __m256 uv[4], __m256 wx, __m256 out[3]) {
    __m256i w = windows(p->plane[0] + y * p->bpr[0], s->y_base);
    __m256 a[4], b[4];
    yuv_rgb(p, pick(w, s->y[0]), uv[0], uv[1], a);
    yuv_rgb(p, pick(w, s->y[1]), uv[2], uv[3], b);
    out[0] = lerp(a[0], b[0], wx), out[1] = lerp(a[1], b[1], wx), out[2] = lerp(a[2], b[2], wx);
}

/* The group's R, G, B (v[0..2]) from shuffled taps; the chroma of the two
 * source rows fetched once when they share a chroma row. */
AVX2_INLINE void yuv_group(const tmem__convert_plan *p, tmem_pixel_format format,
                           const shuffle_group *s, const tmem__convert_row *r, __m256 wx, __m256 wy,
                           __m256 v[3]) {
    __m256 uv[4], top[3], bot[3];
    chroma_taps(p, format, s, r->y0 >> 1, uv);
    across(p, s, r->y0, uv, wx, top);
    if (r->y0 >> 1 != r->y1 >> 1) chroma_taps(p, format, s, r->y1 >> 1, uv);
    across(p, s, r->y1, uv, wx, bot);
    v[0] = lerp(top[0], bot[0], wy);
    v[1] = lerp(top[1], bot[1], wy);
    v[2] = lerp(top[2], bot[2], wy);
}

/* Write eight values of one channel (and its temporal copies). */
AVX2_INLINE void store8(const tmem__convert_plan *p, uint8_t *first, const int64_t *xoff,
                        bool contiguous, uint32_t c, __m256 o) {
    int64_t ch = (int64_t)c * p->cstride;
    __m128i h = p->f32 ? _mm_setzero_si128()
                       : _mm256_cvtps_ph(o, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    float lanes[8];
    uint16_t halves[8];
    if (!contiguous) {
        if (p->f32)
            _mm256_storeu_ps(lanes, o);
        else
            _mm_storeu_si128((__m128i *)(void *)halves, h);
    }
    for (uint32_t t = 0; t < p->copies; t++) {
        int64_t at = ch + (int64_t)t * p->tstride;
        if (contiguous) {
            if (p->f32)
                _mm256_storeu_ps((float *)(void *)(first + at), o);
            else
                _mm_storeu_si128((__m128i *)(void *)(first + at), h);
            continue;
        }
        for (int i = 0; i < 8; i++) {
            uint8_t *q = first + (xoff[i] - xoff[0]) + at;
            if (p->f32)
                memcpy(q, &lanes[i], sizeof(float));
            else
                memcpy(q, &halves[i], sizeof(uint16_t));
        }
    }
}

AVX2_INLINE uint32_t row_format(const tmem__convert_plan *p, const tmem__convert_row *r,
                                tmem_pixel_format format) {
    uint32_t n = p->width & ~7u;
    int64_t step = p->f32 ? 4 : 2;
    int nk = p->channels == 4 ? 4 : 3;
    __m256 wy = _mm256_set1_ps(r->w);
    for (uint32_t x = 0; x < n; x += 8) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(p->xi0 + x));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(p->xi1 + x));
        __m256 wx = _mm256_loadu_ps(p->xw + x);
        __m256 p00[4], p01[4], p10[4], p11[4], v[4];
        fetch8(p, format, x0, r->y0, p00);
        fetch8(p, format, x1, r->y0, p01);
        fetch8(p, format, x0, r->y1, p10);
        fetch8(p, format, x1, r->y1, p11);
        /* alpha only when an output channel reads it */
        for (int k = 0; k < nk; k++)
            v[k] = lerp(lerp(p00[k], p01[k], wx), lerp(p10[k], p11[k], wx), wy);
        const int64_t *xoff = p->xoff + x;
        bool contiguous = true;
        for (int i = 1; i < 8; i++) contiguous &= xoff[i] - xoff[i - 1] == step;
        uint8_t *first = r->out + xoff[0];
        for (uint32_t c = 0; c < p->channels; c++) {
            __m256 o = _mm256_div_ps(_mm256_sub_ps(v[p->map[c]], _mm256_set1_ps(p->sub[c])),
                                     _mm256_set1_ps(p->div[c]));
            store8(p, first, xoff, contiguous, c, o);
        }
    }
    return n;
}

/* YUV rows with the shuffle tables: three channels, R and B possibly swapped;
 * groups whose taps no window holds are gathered. */
AVX2_INLINE uint32_t row_yuv(const tmem__convert_plan *plan, const tmem__convert_row *r,
                             tmem_pixel_format format) {
    /* A local copy: the stores go through byte pointers, which may alias
     * anything whose address escaped, and would make every group reload the
     * plan's fields; this copy never escapes (the helpers are inlined). */
    const tmem__convert_plan local = *plan, *p = &local;
    const shuffle_group *t = p->simd;
    uint32_t n = p->width & ~7u;
    bool swap = p->map[0] == 2;
    __m256 wy = _mm256_set1_ps(r->w);
    __m256 sub0 = _mm256_set1_ps(p->sub[0]), sub1 = _mm256_set1_ps(p->sub[1]);
    __m256 sub2 = _mm256_set1_ps(p->sub[2]), div0 = _mm256_set1_ps(p->div[0]);
    __m256 div1 = _mm256_set1_ps(p->div[1]), div2 = _mm256_set1_ps(p->div[2]);
    for (uint32_t x = 0; x < n; x += 8) {
        const shuffle_group *s = &t[x / 8];
        __m256 wx = _mm256_loadu_ps(p->xw + x), v[3];
        if (s->ok) {
            yuv_group(p, format, s, r, wx, wy, v);
        } else {
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(p->xi0 + x));
            __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(p->xi1 + x));
            __m256 p00[4], p01[4], p10[4], p11[4];
            fetch8(p, format, x0, r->y0, p00);
            fetch8(p, format, x1, r->y0, p01);
            fetch8(p, format, x0, r->y1, p10);
            fetch8(p, format, x1, r->y1, p11);
#pragma GCC unroll 3
            for (int k = 0; k < 3; k++)
                v[k] = lerp(lerp(p00[k], p01[k], wx), lerp(p10[k], p11[k], wx), wy);
        }
        __m256 c0 = swap ? v[2] : v[0], c2 = swap ? v[0] : v[2];
        uint8_t *first = r->out + p->xoff[x];
        const int64_t *xoff = p->xoff + x;
        store8(p, first, xoff, s->contiguous, 0, _mm256_div_ps(_mm256_sub_ps(c0, sub0), div0));
        store8(p, first, xoff, s->contiguous, 1, _mm256_div_ps(_mm256_sub_ps(v[1], sub1), div1));
        store8(p, first, xoff, s->contiguous, 2, _mm256_div_ps(_mm256_sub_ps(c2, sub2), div2));
    }
    return n;
}

AVX2 uint32_t tmem__convert_row_avx2(const tmem__convert_plan *p, const tmem__convert_row *r) {
    if (p->simd && p->format == TMEM_FORMAT_NV12) return row_yuv(p, r, TMEM_FORMAT_NV12);
    if (p->simd && p->format == TMEM_FORMAT_I420) return row_yuv(p, r, TMEM_FORMAT_I420);
    switch (p->format) {
    case TMEM_FORMAT_NV12:
        return row_format(p, r, TMEM_FORMAT_NV12);
    case TMEM_FORMAT_I420:
        return row_format(p, r, TMEM_FORMAT_I420);
    case TMEM_FORMAT_RGBA8:
        return row_format(p, r, TMEM_FORMAT_RGBA8);
    case TMEM_FORMAT_BGRA8:
        return row_format(p, r, TMEM_FORMAT_BGRA8);
    case TMEM_FORMAT_RGB8:
        return row_format(p, r, TMEM_FORMAT_RGB8);
    default:
        return row_format(p, r, TMEM_FORMAT_GRAY8);
    }
}

#endif

/* kern_matmul_avx512.c: AVX-512 (F, BW, VL, DQ, VNNI) tiles of tmrt__kern_matmul,
 * for the CPUs that have them (Ice Lake, Sapphire Rapids, Zen 4 and later);
 * kern_cpu.c picks them at run time, TMRT_KERN_ISA=avx2 keeps the AVX2 ones.
 *
 * Quantised weights: register tiles of up to QR weight rows x QT token
 * rows; each 64-weight step unpacks the rows' weights once and every token
 * of the tile uses them, and each token's x once for every row. The integer
 * dots are AVX-512 VNNI:
 *   - Q8_0 x Q8_0: two 32-weight blocks per zmm, up to 4 rows x 4 tokens;
 *     x fed unsigned (x + 128) into vpdpbusd (u8 x s8, four products summed
 *     into each int32 lane, no int16 saturation on the way), which starts
 *     from -128 * sum w (one vpdpbusd per row, shared by the tokens), so
 *     each (row, token) pair costs one vpdpbusd per 64 weights; scaled per
 *     block in f32 lanes.
 *   - Q4_K x Q8_K: the 32 bytes of a 64-weight chunk as [low nibbles | high
 *     nibbles], which is x's order, so one 64-byte x load meets them;
 *     vpmaddubsw (u8 x s8 -> s16 pairs, at most 2*15*128: exact) then
 *     vpdpwssd with the sub-blocks' 6-bit scales as int16 lanes; the mins
 *     from Q8_K's bsums as in the AVX2 tile.
 *   - Q6_K x Q8_K: 64 weights per zmm rebuilt from ql / qh with masks and
 *     per-qword shifts, q (0..63) . x by vpmaddubsw, vpdpwssd with the int8
 *     scales as int16 lanes; the -32 offset once per block from the bsums
 *     (32 * sum_j scale_j * bsum_j), not per chunk.
 * All integer sums are exact (int32), as in the scalar oracle, so a result
 * differs from it by f32 reassociation only.
 *
 * Float weights: 16-lane FMA tiles of up to 4 rows x 6 tokens (24
 * accumulators + 4 weight registers + 1 x register of the 32 zmm); one
 * token: 8 rows, prefetched ahead like the AVX2 decode tile.
 *
 * Determinism: every output element has exactly one accumulator, filled in
 * increasing i by the same operations whatever the tile shape, reduced the
 * same way; so an element's bits depend on neither the tile nor the thread
 * (they do differ from the AVX2 tiles' bits: another reassociation). */
#include <string.h>
#include "kern_avx2.h"
#include "kern_half.h"
#include "kern_impl.h"
#include "typedmem/model.h"

#define ALWAYS_INLINE KERN_ALWAYS_INLINE
#define UNROLL _Pragma("GCC unroll 8")
/* software prefetch of the weight stream, as in the AVX2 tiles */
#define PREFETCH_BYTES 2048
static ALWAYS_INLINE void prefetch_ahead(const void *p, int lines) {
    UNROLL for (int l = 0; l < lines; l++)
        _mm_prefetch((const char *)p + PREFETCH_BYTES + 64 * l, _MM_HINT_T0);
}

static ALWAYS_INLINE float f16(uint16_t h) { return _cvtsh_ss(h); }

/* Quantised tiles: at most QR rows x QT tokens. */
#define QR 2
#define QT 4

/* ---- float weights ---- */

/* Float tiles: at most FR rows x FT tokens (prefill), DECODE_ROWS rows x 1
 * token (decode); rows in blocks of ~ROW_BLOCK_BYTES (half of L2) that
 * every token group walks, as in the AVX2 tiles. */
#define FR 4
#define FT 6
#define DECODE_ROWS 8
#define DECODE_STEP 32                  /* elements per decode step: 64 bytes of f16 */
#define DECODE_PREFETCH_BYTES (64 * 1024)
#define ROW_BLOCK_BYTES (256 * 1024)

static ALWAYS_INLINE __m512 load_w16(uint32_t type, const void *row, int64_t i) {
    if (type == TMEM_GGML_F32) return _mm512_loadu_ps((const float *)row + i);
    const __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)row + i));
    if (type == TMEM_GGML_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static ALWAYS_INLINE float load_w1(uint32_t type, const void *row, int64_t i) {
    if (type == TMEM_GGML_F32) return ((const float *)row)[i];
    const uint16_t h = ((const uint16_t *)row)[i];
    return type == TMEM_GGML_F16 ? kern_f16_to_f32(h) : kern_bf16_to_f32(h);
}

static ALWAYS_INLINE void micro_float(uint32_t type, int R, int T, const char *w0, size_t wstride, int64_t n,
                                      const float *x0, size_t ldx, float *y0, size_t ldy) {
    __m512 acc[DECODE_ROWS][FT];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    const int64_t n16 = n & ~(int64_t)15;
    if (T == 1) {
        const size_t esz = type == TMEM_GGML_F32 ? 4 : 2;
        const size_t group = (size_t)R * wstride;
        const size_t ahead = group < DECODE_PREFETCH_BYTES ? DECODE_PREFETCH_BYTES / group : 1;
        const char *next = w0 + ahead * group;
        int64_t i = 0;
        for (; i + DECODE_STEP <= n16; i += DECODE_STEP) {
            UNROLL for (int r = 0; r < R; r++)
                UNROLL for (size_t l = 0; l < DECODE_STEP * esz; l += 64)
                    _mm_prefetch(next + (size_t)r * wstride + (size_t)i * esz + l, _MM_HINT_T0);
            UNROLL for (int64_t j = i; j < i + DECODE_STEP; j += 16) {
                const __m512 xv = _mm512_loadu_ps(x0 + j);
                UNROLL for (int r = 0; r < R; r++)
                    acc[r][0] = _mm512_fmadd_ps(load_w16(type, w0 + (size_t)r * wstride, j), xv, acc[r][0]);
            }
        }
        for (; i < n16; i += 16) {
            const __m512 xv = _mm512_loadu_ps(x0 + i);
            UNROLL for (int r = 0; r < R; r++)
                acc[r][0] = _mm512_fmadd_ps(load_w16(type, w0 + (size_t)r * wstride, i), xv, acc[r][0]);
        }
    } else for (int64_t i = 0; i < n16; i += 16) {
        __m512 wv[FR];
        UNROLL for (int r = 0; r < R; r++) wv[r] = load_w16(type, w0 + (size_t)r * wstride, i);
        UNROLL for (int t = 0; t < T; t++) {
            const __m512 xv = _mm512_loadu_ps(x0 + (size_t)t * ldx + i);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) {
        float sum = _mm512_reduce_add_ps(acc[r][t]);
        const float *x = x0 + (size_t)t * ldx;
        for (int64_t i = n16; i < n; i++) sum += load_w1(type, w0 + (size_t)r * wstride, i) * x[i];
        y0[(size_t)t * ldy + (size_t)r] = sum;
    }
}

/* One row group against T tokens, R and T picked at run time (the edges of
 * a tile take the smaller shapes: the same operations per element). */
static ALWAYS_INLINE void dispatch_float(uint32_t type, int R, int T, const char *w0, size_t wstride, int64_t n,
                                         const float *x0, size_t ldx, float *y0, size_t ldy) {
#define MF(r, t) micro_float(type, r, t, w0, wstride, n, x0, ldx, y0, ldy)
    if (T == 1) {
        switch (R) {
        case 8: MF(8, 1); break;
        case 7: MF(7, 1); break;
        case 6: MF(6, 1); break;
        case 5: MF(5, 1); break;
        case 4: MF(4, 1); break;
        case 3: MF(3, 1); break;
        case 2: MF(2, 1); break;
        default: MF(1, 1); break;
        }
    } else if (R == FR && T == FT) MF(FR, FT);
    else if (R == FR) {
        switch (T) {
        case 5: MF(FR, 5); break;
        case 4: MF(FR, 4); break;
        case 3: MF(FR, 3); break;
        default: MF(FR, 2); break;
        }
    } else {
        for (int r = 0; r < R; r++) {
            switch (T) {
            case 6: MF(1, 6); break;
            case 5: MF(1, 5); break;
            case 4: MF(1, 4); break;
            case 3: MF(1, 3); break;
            default: MF(1, 2); break;
            }
            w0 += wstride, y0 += 1;
        }
    }
#undef MF
}

static ALWAYS_INLINE void tile_float(uint32_t type, const kern_wmat *w, const void *xv, size_t xstride,
                                     int64_t n_tok, int64_t o0, int64_t o1, float *y, size_t ldy) {
    const float *x = xv;
    const size_t ldx = xstride / sizeof(float);
    int64_t block = (int64_t)(ROW_BLOCK_BYTES / (w->row_bytes ? w->row_bytes : 1));
    block = block / (FR * DECODE_ROWS) * (FR * DECODE_ROWS);
    if (block < FR * DECODE_ROWS) block = FR * DECODE_ROWS;
    for (int64_t b0 = o0; b0 < o1; b0 += block) {
        const int64_t b1 = b0 + block < o1 ? b0 + block : o1;
        for (int64_t t0 = 0; t0 < n_tok; t0 += FT) {
            const int T = (int)(n_tok - t0 < FT ? n_tok - t0 : FT);
            const int rows = T == 1 ? DECODE_ROWS : FR;
            for (int64_t r0 = b0; r0 < b1; r0 += rows) {
                const int R = (int)(b1 - r0 < rows ? b1 - r0 : rows);
                dispatch_float(type, R, T, (const char *)w->data + (size_t)r0 * w->row_bytes, w->row_bytes,
                               w->n_in, x + (size_t)t0 * ldx, ldx, y + (size_t)t0 * ldy + (size_t)r0, ldy);
            }
        }
    }
}

static void tile_f32(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0, int64_t o1,
                     float *y, size_t ldy) {
    tile_float(TMEM_GGML_F32, w, x, xs, nt, o0, o1, y, ldy);
}

static void tile_f16(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0, int64_t o1,
                     float *y, size_t ldy) {
    tile_float(TMEM_GGML_F16, w, x, xs, nt, o0, o1, y, ldy);
}

static void tile_bf16(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0, int64_t o1,
                      float *y, size_t ldy) {
    tile_float(TMEM_GGML_BF16, w, x, xs, nt, o0, o1, y, ldy);
}

/* ---- Q8_0 ---- */

/* qs of blocks b and b + 1 (b + 1 only if two): 64 bytes, or 32 + zeros */
static ALWAYS_INLINE __m512i q8_0_pair(const kern_block_q8_0 *b, bool two) {
    const __m256i lo = _mm256_loadu_si256((const __m256i *)b[0].qs);
    if (!two) return _mm512_zextsi256_si512(lo);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256((const __m256i *)b[1].qs), 1);
}

/* [d_b x 8 | d_b+1 x 8] (the upper half 0 if one block) */
static ALWAYS_INLINE __m512 q8_0_scales(const kern_block_q8_0 *b, bool two) {
    const __m256 lo = _mm256_set1_ps(f16(b[0].d));
    const __m256 hi = two ? _mm256_set1_ps(f16(b[1].d)) : _mm256_setzero_ps();
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

/* Q8_0 tiles take more rows (the per-row work is small): QR8 x QT. */
#define QR8 4

static ALWAYS_INLINE void micro_q8_0(int R, int T, const kern_block_q8_0 *const *w,
                                     const kern_block_q8_0 *const *x, int64_t nb, float *out,
                                     size_t ldo) {
    __m512 acc[QR8][QT];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b += 2) {
        const bool two = b + 1 < nb;
        __m512i wq[QR8], wcorr[QR8];
        __m512 dw[QR8];
        UNROLL for (int r = 0; r < R; r++) {
            prefetch_ahead(w[r] + b, 2);
            wq[r] = q8_0_pair(w[r] + b, two);
            /* x is fed unsigned, x + 128: sum (x + 128) w - 128 sum w; the
             * second term per 4 weights, from vpdpbusd(128, w), starts the sum */
            wcorr[r] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                        _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, wq[r]));
            dw[r] = q8_0_scales(w[r] + b, two);
        }
        UNROLL for (int t = 0; t < T; t++) {
            /* x ^ 0x80 = x + 128 as an unsigned byte, for every int8 x; the
             * zero upper half of a lone block meets zero weights */
            const __m512i xu = _mm512_xor_si512(q8_0_pair(x[t] + b, two), bias);
            const __m512 dx = q8_0_scales(x[t] + b, two);
            UNROLL for (int r = 0; r < R; r++) {
                const __m512i isum = _mm512_dpbusd_epi32(wcorr[r], xu, wq[r]);
                acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(dw[r], dx), _mm512_cvtepi32_ps(isum), acc[r][t]);
            }
        }
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) out[(size_t)t * ldo + (size_t)r] = _mm512_reduce_add_ps(acc[r][t]);
}

/* ---- Q4_K ---- */

/* The eight 6-bit scales and mins of a Q4_K block (kern_q4k_scale_min's
 * packing), a byte each: sc[0..7], m[0..7]. */
static ALWAYS_INLINE void q4k_unpack(const uint8_t *s, uint32_t sc[2], uint32_t m[2]) {
    uint32_t u0, u1, u2;
    memcpy(&u0, s, 4);
    memcpy(&u1, s + 4, 4);
    memcpy(&u2, s + 8, 4);
    sc[0] = u0 & 0x3f3f3f3fu;
    m[0] = u1 & 0x3f3f3f3fu;
    sc[1] = (u2 & 0x0f0f0f0fu) | (((u0 >> 6) & 0x03030303u) << 4);
    m[1] = ((u2 >> 4) & 0x0f0f0f0fu) | (((u1 >> 6) & 0x03030303u) << 4);
}

/* int16 lane k of chunk c's scale vector: sub-block 2c for k < 16, 2c + 1 after */
static ALWAYS_INLINE __m512i q4k_pick(int c) {
    return _mm512_set_epi64(0x0001000100010001ll * (2 * c + 1), 0x0001000100010001ll * (2 * c + 1),
                            0x0001000100010001ll * (2 * c + 1), 0x0001000100010001ll * (2 * c + 1),
                            0x0001000100010001ll * (2 * c), 0x0001000100010001ll * (2 * c),
                            0x0001000100010001ll * (2 * c), 0x0001000100010001ll * (2 * c));
}

static ALWAYS_INLINE void micro_q4_k(int R, int T, const kern_block_q4_k *const *w,
                                     const kern_block_q8_k *const *x, int64_t nb, float *out,
                                     size_t ldo) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i nib_shift = _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0);
    __m512 acc[QR][QT];
    __m128 accm[QR][QT];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) {
        acc[r][t] = _mm512_setzero_ps();
        accm[r][t] = _mm_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        __m512i sc16[QR];
        __m128i m8[QR];
        float dw[QR], dmin[QR];
        __m512i isum[QR][QT];
        UNROLL for (int r = 0; r < R; r++) {
            prefetch_ahead(w[r] + b, 3); /* 144 bytes */
            uint32_t sc[2], m[2];
            q4k_unpack(w[r][b].scales, sc, m);
            sc16[r] = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)sc[1], (int)sc[0])));
            m8[r] = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)m[1], (int)m[0]));
            dw[r] = f16(w[r][b].d), dmin[r] = f16(w[r][b].dmin);
            UNROLL for (int t = 0; t < T; t++) {
                /* mins: sum_j m_j * (bsums[2j] + bsums[2j+1]) in four int32 lanes */
                const __m256i bs = _mm256_loadu_si256((const __m256i *)x[t][b].bsums);
                const __m128i bsj = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
                accm[r][t] = _mm_fmadd_ps(_mm_set1_ps(x[t][b].d * dmin[r]),
                                          _mm_cvtepi32_ps(_mm_madd_epi16(bsj, m8[r])), accm[r][t]);
                isum[r][t] = _mm512_setzero_si512();
            }
        }
        UNROLL for (int c = 0; c < 4; c++) {
            __m512i q[QR], s[QR];
            UNROLL for (int r = 0; r < R; r++) {
                /* [qs low nibbles | qs high nibbles] = weights 64c .. 64c+63 in order */
                const __m512i raw = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w[r][b].qs + 32 * c)));
                q[r] = _mm512_and_si512(_mm512_srlv_epi64(raw, nib_shift), low4);
                s[r] = _mm512_permutexvar_epi16(q4k_pick(c), sc16[r]);
            }
            UNROLL for (int t = 0; t < T; t++) {
                const __m512i xv = _mm512_loadu_si512((const void *)(x[t][b].qs + 64 * c));
                UNROLL for (int r = 0; r < R; r++)
                    isum[r][t] = _mm512_dpwssd_epi32(isum[r][t], _mm512_maddubs_epi16(q[r], xv), s[r]);
            }
        }
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++)
            acc[r][t] = _mm512_fmadd_ps(_mm512_set1_ps(x[t][b].d * dw[r]), _mm512_cvtepi32_ps(isum[r][t]),
                                        acc[r][t]);
    }
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) {
        __m128 s = _mm_add_ps(accm[r][t], _mm_movehl_ps(accm[r][t], accm[r][t]));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        out[(size_t)t * ldo + (size_t)r] = _mm512_reduce_add_ps(acc[r][t]) - _mm_cvtss_f32(s);
    }
}

/* ---- Q6_K ---- */

/* int16 lane k of chunk g's scale vector: scale 4g + k/8 */
static ALWAYS_INLINE __m512i q6k_pick(int g) {
    const long long a = 0x0001000100010001ll;
    return _mm512_set_epi64(a * (4 * g + 3), a * (4 * g + 3), a * (4 * g + 2), a * (4 * g + 2),
                            a * (4 * g + 1), a * (4 * g + 1), a * (4 * g), a * (4 * g));
}

static ALWAYS_INLINE void micro_q6_k(int R, int T, const kern_block_q6_k *const *w,
                                     const kern_block_q8_k *const *x, int64_t nb, float *out,
                                     size_t ldo) {
    const __m512i low4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    /* the high bits of quarters 0 | 1 (bit pairs 0, 2 of qh) move up by 4 | 2,
     * those of quarters 2 | 3 (bit pairs 4, 6) by 0 | down 2 */
    const __m512i up_a = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4);
    const __m512i down_b = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
    __m512 acc[QR][QT];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m512i sc16[QR];
        __m512i isum[QR][QT];
        float dw[QR];
        UNROLL for (int r = 0; r < R; r++) {
            prefetch_ahead(w[r] + b, 4); /* 210 bytes */
            const __m256i s256 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[r][b].scales));
            sc16[r] = _mm512_zextsi256_si512(s256);
            dw[r] = f16(w[r][b].d);
            UNROLL for (int t = 0; t < T; t++) {
                /* the -32 offset: 32 * sum_j scale_j * bsum_j, in 8 int32 lanes */
                const __m256i bs = _mm256_loadu_si256((const __m256i *)x[t][b].bsums);
                const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(bs, s256), 5);
                isum[r][t] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(off));
            }
        }
        UNROLL for (int h = 0; h < 2; h++) {
            __m512i qa[QR], qb[QR];
            UNROLL for (int r = 0; r < R; r++) {
                const __m512i ql = _mm512_loadu_si512((const void *)(w[r][b].ql + 64 * h));
                const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w[r][b].qh + 32 * h)));
                /* weights 128h + 0..63: low nibbles of ql[64h..64h+63] */
                qa[r] = _mm512_or_si512(_mm512_and_si512(ql, low4),
                                        _mm512_and_si512(_mm512_sllv_epi64(qh, up_a), m30));
                /* weights 128h + 64..127: their high nibbles */
                qb[r] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                        _mm512_and_si512(_mm512_srlv_epi64(qh, down_b), m30));
            }
            __m512i s_a[QR], s_b[QR];
            UNROLL for (int r = 0; r < R; r++) {
                s_a[r] = _mm512_permutexvar_epi16(q6k_pick(2 * h), sc16[r]);
                s_b[r] = _mm512_permutexvar_epi16(q6k_pick(2 * h + 1), sc16[r]);
            }
            UNROLL for (int t = 0; t < T; t++) {
                const __m512i xa = _mm512_loadu_si512((const void *)(x[t][b].qs + 128 * h));
                const __m512i xb = _mm512_loadu_si512((const void *)(x[t][b].qs + 128 * h + 64));
                UNROLL for (int r = 0; r < R; r++) {
                    isum[r][t] = _mm512_dpwssd_epi32(isum[r][t], _mm512_maddubs_epi16(qa[r], xa), s_a[r]);
                    isum[r][t] = _mm512_dpwssd_epi32(isum[r][t], _mm512_maddubs_epi16(qb[r], xb), s_b[r]);
                }
            }
        }
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++)
            acc[r][t] = _mm512_fmadd_ps(_mm512_set1_ps(x[t][b].d * dw[r]), _mm512_cvtepi32_ps(isum[r][t]),
                                        acc[r][t]);
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) out[(size_t)t * ldo + (size_t)r] = _mm512_reduce_add_ps(acc[r][t]);
}

/* Rows o0..o1 against every x row in QR x QT register tiles (the edges in
 * smaller ones: the same operations per element). */
#define TILE_QUANT(name, wblock, xblock, micro, qk, ROWS)                                                   \
    static void name(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0, int64_t o1, \
                     float *y, size_t ldy) {                                                          \
        const int64_t nb = w->n_in / (qk);                                                            \
        for (int64_t o = o0; o < o1;) {                                                               \
            const int R = o1 - o >= ROWS ? ROWS : 1;                                                      \
            const wblock *wr[ROWS];                                                                     \
            for (int r = 0; r < R; r++)                                                               \
                wr[r] = (const wblock *)((const char *)w->data + (size_t)(o + r) * w->row_bytes);     \
            for (int64_t t = 0; t < nt;) {                                                            \
                const int T = nt - t >= QT ? QT : 1;                                                  \
                const xblock *xr[QT];                                                                 \
                for (int k = 0; k < T; k++) xr[k] = (const xblock *)((const char *)x + (size_t)(t + k) * xs); \
                float *yo = y + (size_t)t * ldy + (size_t)o;                                          \
                if (R == ROWS && T == QT) micro(ROWS, QT, wr, xr, nb, yo, ldy);                           \
                else if (R == ROWS) micro(ROWS, 1, wr, xr, nb, yo, ldy);                                  \
                else if (T == QT) micro(1, QT, wr, xr, nb, yo, ldy);                                  \
                else micro(1, 1, wr, xr, nb, yo, ldy);                                                \
                t += T;                                                                               \
            }                                                                                         \
            o += R;                                                                                   \
        }                                                                                             \
    }

TILE_QUANT(tile_q8_0, kern_block_q8_0, kern_block_q8_0, micro_q8_0, KERN_QK8_0, QR8)
TILE_QUANT(tile_q4_k, kern_block_q4_k, kern_block_q8_k, micro_q4_k, KERN_QK_K, QR)
TILE_QUANT(tile_q6_k, kern_block_q6_k, kern_block_q8_k, micro_q6_k, KERN_QK_K, QR)

kern_tile_fn tmrt__kern__tile_avx512(uint32_t type) {
    switch (type) {
    case TMEM_GGML_F32: return tile_f32;
    case TMEM_GGML_F16: return tile_f16;
    case TMEM_GGML_BF16: return tile_bf16;
    case TMEM_GGML_Q8_0: return tile_q8_0;
    case TMEM_GGML_Q4_K: return tile_q4_k;
    case TMEM_GGML_Q6_K: return tile_q6_k;
    default: return NULL;
    }
}

/* kern_matmul_avx512.c: AVX-512 (F, BW, VL, DQ, VNNI) tiles of tmrt__kern_matmul,
 * for the CPUs that have them (Ice Lake, Sapphire Rapids, Zen 4 and later);
 * kern_cpu.c picks them at run time, TMRT_KERN_ISA=avx2 keeps the AVX2 ones.
 *
 * Quantised weights: register tiles of up to QR weight rows x QT token
 * rows; each 64-weight step unpacks the rows' weights once and every token
 * of the tile uses them, and each token's x once for every row. The integer
 * dots are AVX-512 VNNI:
 *   - Q8_0 x Q8_0: two 32-weight blocks per zmm; |w| and x with w's sign
 *     into vpdpbusd (u8 x s8, four products summed into each int32 lane,
 *     no int16 saturation on the way), scaled per block in f32 lanes.
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

static ALWAYS_INLINE void micro_q8_0(int R, int T, const kern_block_q8_0 *const *w,
                                     const kern_block_q8_0 *const *x, int64_t nb, float *out,
                                     size_t ldo) {
    __m512 acc[QR][QT];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t b = 0; b < nb; b += 2) {
        const bool two = b + 1 < nb;
        __m512i wabs[QR];
        __mmask64 wneg[QR];
        __m512 dw[QR];
        UNROLL for (int r = 0; r < R; r++) {
            prefetch_ahead(w[r] + b, 2);
            const __m512i wq = q8_0_pair(w[r] + b, two);
            wabs[r] = _mm512_abs_epi8(wq); /* -128 -> 0x80 = 128 unsigned: still exact */
            wneg[r] = _mm512_movepi8_mask(wq);
            dw[r] = q8_0_scales(w[r] + b, two);
        }
        UNROLL for (int t = 0; t < T; t++) {
            const __m512i xq = q8_0_pair(x[t] + b, two);
            const __m512 dx = q8_0_scales(x[t] + b, two);
            UNROLL for (int r = 0; r < R; r++) {
                const __m512i sx = _mm512_mask_sub_epi8(xq, wneg[r], zero, xq);
                const __m512i isum = _mm512_dpbusd_epi32(zero, wabs[r], sx);
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
#define TILE_QUANT(name, wblock, xblock, micro, qk)                                                   \
    static void name(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0, int64_t o1, \
                     float *y, size_t ldy) {                                                          \
        const int64_t nb = w->n_in / (qk);                                                            \
        for (int64_t o = o0; o < o1;) {                                                               \
            const int R = o1 - o >= QR ? QR : 1;                                                      \
            const wblock *wr[QR];                                                                     \
            for (int r = 0; r < R; r++)                                                               \
                wr[r] = (const wblock *)((const char *)w->data + (size_t)(o + r) * w->row_bytes);     \
            for (int64_t t = 0; t < nt;) {                                                            \
                const int T = nt - t >= QT ? QT : 1;                                                  \
                const xblock *xr[QT];                                                                 \
                for (int k = 0; k < T; k++) xr[k] = (const xblock *)((const char *)x + (size_t)(t + k) * xs); \
                float *yo = y + (size_t)t * ldy + (size_t)o;                                          \
                if (R == QR && T == QT) micro(QR, QT, wr, xr, nb, yo, ldy);                           \
                else if (R == QR) micro(QR, 1, wr, xr, nb, yo, ldy);                                  \
                else if (T == QT) micro(1, QT, wr, xr, nb, yo, ldy);                                  \
                else micro(1, 1, wr, xr, nb, yo, ldy);                                                \
                t += T;                                                                               \
            }                                                                                         \
            o += R;                                                                                   \
        }                                                                                             \
    }

TILE_QUANT(tile_q8_0, kern_block_q8_0, kern_block_q8_0, micro_q8_0, KERN_QK8_0)
TILE_QUANT(tile_q4_k, kern_block_q4_k, kern_block_q8_k, micro_q4_k, KERN_QK_K)
TILE_QUANT(tile_q6_k, kern_block_q6_k, kern_block_q8_k, micro_q6_k, KERN_QK_K)

kern_tile_fn tmrt__kern__tile_avx512(uint32_t type) {
    switch (type) {
    case TMEM_GGML_Q8_0: return tile_q8_0;
    case TMEM_GGML_Q4_K: return tile_q4_k;
    case TMEM_GGML_Q6_K: return tile_q6_k;
    default: return NULL;
    }
}

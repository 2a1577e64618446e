/* kern_matmul_avx2.c: AVX2/FMA/F16C tiles of tmrt__kern_matmul.
 *
 * Float weights (F32, F16, BF16): register tiles of up to 3 weight rows x 4
 * token rows. Each step converts 8 weights of each row to f32 once (F16C for
 * F16, a shift for BF16) and FMAs them against 8 x values of each token:
 * 12 accumulators, 3 weight registers, 1 x register. Rows are taken in
 * blocks that fit in L2 and every token group walks the block, so a weight
 * is fetched from memory once per call and from L2 once per 4 tokens.
 *
 * Quantised weights meet x quantised per row (Q8_0 / Q8_K): integer dot
 * products per block (maddubs: u8 x s8 -> s16 pairs, madd -> s32), scaled by
 * the two blocks' scales into eight f32 lanes.
 *
 * Determinism: every output element has exactly one 8-lane accumulator,
 * filled in increasing i and reduced the same way by every tile shape, so
 * an element's bits do not depend on which tile (or thread) computed it. */
#include <string.h>
#include "kern_avx2.h"
#include "kern_half.h"
#include "kern_impl.h"
#include "typedmem/model.h"

#define ALWAYS_INLINE KERN_ALWAYS_INLINE
#define UNROLL _Pragma("GCC unroll 8")
/* Software prefetch of the weight stream PREFETCH_BYTES ahead: the integer
 * dots are slow enough per byte that the hardware prefetcher alone leaves
 * DRAM idle between lines (measured on Zen 3: Q4_K mat-vec from DRAM
 * 12.3 -> 13.8 GB/s, Q8_0 13.9 -> 17 GB/s; 2 KiB ahead beat 0.5 and 1). */
#define PREFETCH_BYTES 2048
static ALWAYS_INLINE void prefetch_ahead(const void *block, int lines) {
    UNROLL for (int l = 0; l < lines; l++)
        _mm_prefetch((const char *)block + PREFETCH_BYTES + 64 * l, _MM_HINT_T0);
}
#define TILE_ROWS 3
#define TILE_TOKS 4
/* Rows of a one-token tile: each row is a sequential stream and a core
 * reads fastest with several in flight (1 stream ~60% of 8 on Zen 3). */
#define DECODE_ROWS 8
/* Elements of each row one decode step covers (64 bytes of f16). */
#define DECODE_STEP 32
/* The decode tile prefetches the row group this many bytes ahead. The
 * model's rows are short (2 KiB at n_in 1024), so the 8 streams of a row
 * group end before the hardware prefetcher has ramped up on them: the
 * LM head (248k rows of 1024 f16) read at 14 GB/s by CPU time on 2 threads
 * against 24 for 4 KiB rows; with the prefetch 64 KiB ahead, 21-24. */
#define DECODE_PREFETCH_BYTES (64 * 1024)
/* Weight bytes per row block: half of a 512 KiB L2. */
#define ROW_BLOCK_BYTES (256 * 1024)


/* ---- float weights ---- */

static ALWAYS_INLINE __m256 load_w8(uint32_t type, const void *row, int64_t i) {
    if (type == TMEM_GGML_F32) return _mm256_loadu_ps((const float *)row + i);
    const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + i));
    if (type == TMEM_GGML_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static ALWAYS_INLINE float load_w1(uint32_t type, const void *row, int64_t i) {
    if (type == TMEM_GGML_F32) return ((const float *)row)[i];
    const uint16_t h = ((const uint16_t *)row)[i];
    return type == TMEM_GGML_F16 ? kern_f16_to_f32(h) : kern_bf16_to_f32(h);
}

/* R rows x T tokens; R, T constants after inlining. */
static ALWAYS_INLINE void micro_float(uint32_t type, int R, int T, const char *w0, size_t wstride,
                                      int64_t n, const float *x0, size_t ldx, float *y0,
                                      size_t ldy) {
    /* the pragmas unroll the r/t loops fully, so acc and wv live in
     * registers (gcc -O2 keeps the arrays in memory otherwise) */
    __m256 acc[DECODE_ROWS][TILE_TOKS];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    const int64_t n8 = n & ~(int64_t)7;
    if (T == 1) {
        /* one token (decode): up to DECODE_ROWS rows, each weight register
         * used once; the same FMA per element as below */
        const size_t esz = type == TMEM_GGML_F32 ? 4 : 2;
        /* software prefetch of the row group DECODE_PREFETCH_BYTES ahead */
        const size_t group = (size_t)R * wstride;
        const size_t ahead = group < DECODE_PREFETCH_BYTES ? DECODE_PREFETCH_BYTES / group : 1;
        const char *next = w0 + ahead * group;
        int64_t i = 0;
        for (; i + DECODE_STEP <= n8; i += DECODE_STEP) {
            UNROLL for (int r = 0; r < R; r++)
                UNROLL for (size_t l = 0; l < DECODE_STEP * esz; l += 64)
                    _mm_prefetch(next + (size_t)r * wstride + (size_t)i * esz + l, _MM_HINT_T0);
            UNROLL for (int64_t j = i; j < i + DECODE_STEP; j += 8) {
                const __m256 xv = _mm256_loadu_ps(x0 + j);
                UNROLL for (int r = 0; r < R; r++)
                    acc[r][0] = _mm256_fmadd_ps(load_w8(type, w0 + (size_t)r * wstride, j), xv,
                                                acc[r][0]);
            }
        }
        for (; i < n8; i += 8) {
            const __m256 xv = _mm256_loadu_ps(x0 + i);
            UNROLL for (int r = 0; r < R; r++)
                acc[r][0] = _mm256_fmadd_ps(load_w8(type, w0 + (size_t)r * wstride, i), xv,
                                            acc[r][0]);
        }
    } else for (int64_t i = 0; i < n8; i += 8) {
        __m256 wv[TILE_ROWS];
        UNROLL for (int r = 0; r < R; r++) wv[r] = load_w8(type, w0 + (size_t)r * wstride, i);
        UNROLL for (int t = 0; t < T; t++) {
            const __m256 xv = _mm256_loadu_ps(x0 + (size_t)t * ldx + i);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        UNROLL for (int t = 0; t < T; t++) {
            float sum = kern_hsum8(acc[r][t]);
            const float *x = x0 + (size_t)t * ldx;
            for (int64_t i = n8; i < n; i++)
                sum += load_w1(type, w0 + (size_t)r * wstride, i) * x[i];
            y0[(size_t)t * ldy + (size_t)r] = sum;
        }
    }
}

/* One row group (R rows) against T tokens, R and T picked at run time. */
static ALWAYS_INLINE void dispatch_float(uint32_t type, int R, int T, const char *w0,
                                         size_t wstride, int64_t n, const float *x0, size_t ldx,
                                         float *y0, size_t ldy) {
#define MF(r, t) micro_float(type, r, t, w0, wstride, n, x0, ldx, y0, ldy)
    switch (R * 8 + T) {
    case 8 * 8 + 1: MF(8, 1); break;
    case 7 * 8 + 1: MF(7, 1); break;
    case 6 * 8 + 1: MF(6, 1); break;
    case 5 * 8 + 1: MF(5, 1); break;
    case 4 * 8 + 1: MF(4, 1); break;
    case 3 * 8 + 4: MF(3, 4); break;
    case 3 * 8 + 3: MF(3, 3); break;
    case 3 * 8 + 2: MF(3, 2); break;
    case 3 * 8 + 1: MF(3, 1); break;
    case 2 * 8 + 4: MF(2, 4); break;
    case 2 * 8 + 3: MF(2, 3); break;
    case 2 * 8 + 2: MF(2, 2); break;
    case 2 * 8 + 1: MF(2, 1); break;
    case 1 * 8 + 4: MF(1, 4); break;
    case 1 * 8 + 3: MF(1, 3); break;
    case 1 * 8 + 2: MF(1, 2); break;
    default: MF(1, 1); break;
    }
#undef MF
}

static int64_t rows_per_block(size_t row_bytes) {
    int64_t rows = (int64_t)(ROW_BLOCK_BYTES / (row_bytes ? row_bytes : 1));
    rows = rows / (TILE_ROWS * DECODE_ROWS) * (TILE_ROWS * DECODE_ROWS);
    return rows < TILE_ROWS * DECODE_ROWS ? TILE_ROWS * DECODE_ROWS : rows;
}

static ALWAYS_INLINE void tile_float(uint32_t type, const kern_wmat *w, const void *xv,
                                     size_t xstride, int64_t n_tok, int64_t o0, int64_t o1,
                                     float *y, size_t ldy) {
    const float *x = xv;
    const size_t ldx = xstride / sizeof(float);
    const int64_t block = rows_per_block(w->row_bytes);
    for (int64_t b0 = o0; b0 < o1; b0 += block) {
        const int64_t b1 = b0 + block < o1 ? b0 + block : o1;
        for (int64_t t0 = 0; t0 < n_tok; t0 += TILE_TOKS) {
            const int T = (int)(n_tok - t0 < TILE_TOKS ? n_tok - t0 : TILE_TOKS);
            const int rows = T == 1 ? DECODE_ROWS : TILE_ROWS;
            for (int64_t r0 = b0; r0 < b1; r0 += rows) {
                const int R = (int)(b1 - r0 < rows ? b1 - r0 : rows);
                dispatch_float(type, R, T, (const char *)w->data + (size_t)r0 * w->row_bytes,
                               w->row_bytes, w->n_in, x + (size_t)t0 * ldx, ldx,
                               y + (size_t)t0 * ldy + (size_t)r0, ldy);
            }
        }
    }
}

static void tile_f32(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0,
                     int64_t o1, float *y, size_t ldy) {
    tile_float(TMEM_GGML_F32, w, x, xs, nt, o0, o1, y, ldy);
}

static void tile_f16(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0,
                     int64_t o1, float *y, size_t ldy) {
    tile_float(TMEM_GGML_F16, w, x, xs, nt, o0, o1, y, ldy);
}

static void tile_bf16(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0,
                      int64_t o1, float *y, size_t ldy) {
    tile_float(TMEM_GGML_BF16, w, x, xs, nt, o0, o1, y, ldy);
}

/* ---- quantised weights: one row against one x row, 8 f32 lanes ---- */

/* u8 x s8 products of 32 pairs summed into 8 int32 lanes */
static ALWAYS_INLINE __m256i dot_u8s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

static ALWAYS_INLINE float f16(uint16_t h) { return _cvtsh_ss(h); }

/* The quantised dots take one weight row against T (1 or QUANT_TOKS) x rows:
 * out[t]. What is done per (row, token) is the same for either T, so grouping
 * tokens changes speed (the weight unpacking is shared), not bits. 4 tokens:
 * Q4_K prefill 51 -> 75 GFLOP/s per core, Q6_K -> 66, Q8_0 41 -> 55. */
#define QUANT_TOKS 4

static ALWAYS_INLINE void dot_q8_0(int T, const kern_block_q8_0 *w,
                                   const kern_block_q8_0 *const *x, int64_t nb, float *out) {
    __m256 acc[QUANT_TOKS];
    UNROLL for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        prefetch_ahead(w + b, 1);
        const __m256i wq = _mm256_loadu_si256((const __m256i *)w[b].qs);
        /* maddubs wants one unsigned operand: |w| and x with w's sign */
        const __m256i wabs = _mm256_sign_epi8(wq, wq);
        const float dw = f16(w[b].d);
        UNROLL for (int t = 0; t < T; t++) {
            const __m256i xq = _mm256_loadu_si256((const __m256i *)x[t][b].qs);
            const __m256i isum = dot_u8s8(wabs, _mm256_sign_epi8(xq, wq));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * f16(x[t][b].d)),
                                     _mm256_cvtepi32_ps(isum), acc[t]);
        }
    }
    UNROLL for (int t = 0; t < T; t++) out[t] = kern_hsum8(acc[t]);
}

/* The Q4_K scales[12] unpacked with four 32-bit operations (the packing of
 * kern_q4k_scale_min, a byte per sub-block): sc[0..7] and m[0..7]. */
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

/* shuffle_epi8 patterns that spread 16-bit element k of each 128-bit lane
 * over the whole lane */
static ALWAYS_INLINE __m256i spread16(int k) {
    return _mm256_set1_epi16((short)((2 * k) | ((2 * k + 1) << 8)));
}

static ALWAYS_INLINE void dot_q4_k(int T, const kern_block_q4_k *w,
                                   const kern_block_q8_k *const *x, int64_t nb, float *out) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256 acc[QUANT_TOKS];
    __m128 accm[QUANT_TOKS];
    UNROLL for (int t = 0; t < T; t++) {
        acc[t] = _mm256_setzero_ps();
        accm[t] = _mm_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        prefetch_ahead(w + b, 3); /* 144 bytes: up to 3 lines */
        uint32_t sc[2], m[2];
        q4k_unpack(w[b].scales, sc, m);
        /* eight int16 scales, the same in both lanes */
        const __m256i scales = _mm256_broadcastsi128_si256(
            _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)sc[1], (int)sc[0])));
        const __m128i m8 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)m[1], (int)m[0]));
        const float dw = f16(w[b].d), dmin = f16(w[b].dmin);
        __m256i isum[QUANT_TOKS];
        UNROLL for (int t = 0; t < T; t++) {
            /* mins: sum_j m_j * (bsums[2j] + bsums[2j+1]) in four int32 lanes */
            const __m256i bs = _mm256_loadu_si256((const __m256i *)x[t][b].bsums);
            const __m128i bsj = _mm_hadd_epi16(_mm256_castsi256_si128(bs),
                                               _mm256_extracti128_si256(bs, 1));
            accm[t] = _mm_fmadd_ps(_mm_set1_ps(x[t][b].d * dmin),
                                   _mm_cvtepi32_ps(_mm_madd_epi16(bsj, m8)), accm[t]);
            isum[t] = _mm256_setzero_si256();
        }
        UNROLL for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256i qlo = _mm256_and_si256(q, low4);
            const __m256i qhi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            const __m256i slo = _mm256_shuffle_epi8(scales, spread16(2 * c));
            const __m256i shi = _mm256_shuffle_epi8(scales, spread16(2 * c + 1));
            UNROLL for (int t = 0; t < T; t++) {
                const int8_t *xq = x[t][b].qs + 64 * c;
                const __m256i plo =
                    _mm256_maddubs_epi16(qlo, _mm256_loadu_si256((const __m256i *)xq));
                const __m256i phi =
                    _mm256_maddubs_epi16(qhi, _mm256_loadu_si256((const __m256i *)(xq + 32)));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(plo, slo));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(phi, shi));
            }
        }
        UNROLL for (int t = 0; t < T; t++)
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(x[t][b].d * dw), _mm256_cvtepi32_ps(isum[t]),
                                     acc[t]);
    }
    UNROLL for (int t = 0; t < T; t++) {
        __m128 s = _mm_add_ps(accm[t], _mm_movehl_ps(accm[t], accm[t]));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        out[t] = kern_hsum8(acc[t]) - _mm_cvtss_f32(s);
    }
}

static ALWAYS_INLINE void dot_q6_k(int T, const kern_block_q6_k *w,
                                   const kern_block_q8_k *const *x, int64_t nb, float *out) {
    const __m256i low4 = _mm256_set1_epi8(0x0f), m32 = _mm256_set1_epi8(32);
    /* quarter k of a half: its first 16 weights take scale 2k, the next 16
     * scale 2k+1; 16-bit lanes 0..7 of a maddubs result are the first 16 */
    const __m256i pick[4] = {
        _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
                         2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3),
        _mm256_setr_epi8(4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5,
                         6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7),
        _mm256_setr_epi8(8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9,
                         10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11),
        _mm256_setr_epi8(12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13,
                         14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15)};
    __m256 acc[QUANT_TOKS];
    UNROLL for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        prefetch_ahead(w + b, 4); /* 210 bytes */
        __m256i isum[QUANT_TOKS];
        UNROLL for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
        UNROLL for (int h = 0; h < 2; h++) {
            const uint8_t *ql = w[b].ql + 64 * h, *qhp = w[b].qh + 32 * h;
            /* the half's eight int16 scales in both lanes */
            const __m256i sc = _mm256_broadcastsi128_si256(
                _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(w[b].scales + 8 * h))));
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)qhp);
            /* bit pairs 0, 2, 4, 6 of qh are the high bits of quarters 0..3 */
            const __m256i hi0 = _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4);
            const __m256i hi1 = _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0c)), 2);
            const __m256i hi2 = _mm256_and_si256(qh, _mm256_set1_epi8(0x30));
            const __m256i hi3 = _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(-64)), 2);
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(l0, low4), hi0),
                _mm256_or_si256(_mm256_and_si256(l1, low4), hi1),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), hi2),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4), hi3)};
            UNROLL for (int k = 0; k < 4; k++) {
                const __m256i sk = _mm256_shuffle_epi8(sc, pick[k]);
                UNROLL for (int t = 0; t < T; t++) {
                    const __m256i xv =
                        _mm256_loadu_si256((const __m256i *)(x[t][b].qs + 128 * h + 32 * k));
                    /* (q - 32) . x as q . x - 32 . x (maddubs needs q unsigned) */
                    const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], xv),
                                                       _mm256_maddubs_epi16(m32, xv));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p, sk));
                }
            }
        }
        const float dw = f16(w[b].d);
        UNROLL for (int t = 0; t < T; t++)
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(x[t][b].d * dw), _mm256_cvtepi32_ps(isum[t]),
                                     acc[t]);
    }
    UNROLL for (int t = 0; t < T; t++) out[t] = kern_hsum8(acc[t]);
}

/* Rows o0..o1 against every x row, QUANT_TOKS tokens at a time (the rest
 * one by one): the weight row stays in L1 while the tokens pass and its
 * unpacking serves several of them. One row at
 * a time: taking 2 or 4 rows (sharing the x loads) measured slower from DRAM
 * on Zen 3 (two interleaved quantised streams defeat the prefetch) and no
 * faster in cache. */
#define TILE_QUANT(name, wblock, xblock, dot, qk)                                             \
    static void name(const kern_wmat *w, const void *x, size_t xs, int64_t nt, int64_t o0,    \
                     int64_t o1, float *y, size_t ldy) {                                      \
        const int64_t nb = w->n_in / (qk);                                                    \
        for (int64_t o = o0; o < o1; o++) {                                                   \
            const wblock *wr =                                                                \
                (const wblock *)((const char *)w->data + (size_t)o * w->row_bytes);           \
            for (int64_t t = 0; t < nt;) {                                                    \
                const int T = nt - t >= QUANT_TOKS ? QUANT_TOKS : 1;                          \
                const xblock *xr[QUANT_TOKS];                                                 \
                float out[QUANT_TOKS];                                                        \
                for (int k = 0; k < T; k++)                                                   \
                    xr[k] = (const xblock *)((const char *)x + (size_t)(t + k) * xs);         \
                if (T == QUANT_TOKS) dot(QUANT_TOKS, wr, xr, nb, out);                        \
                else dot(1, wr, xr, nb, out);                                                 \
                for (int k = 0; k < T; k++) y[(size_t)(t + k) * ldy + (size_t)o] = out[k];    \
                t += T;                                                                       \
            }                                                                                 \
        }                                                                                     \
    }

TILE_QUANT(tile_q8_0, kern_block_q8_0, kern_block_q8_0, dot_q8_0, KERN_QK8_0)
TILE_QUANT(tile_q4_k, kern_block_q4_k, kern_block_q8_k, dot_q4_k, KERN_QK_K)
TILE_QUANT(tile_q6_k, kern_block_q6_k, kern_block_q8_k, dot_q6_k, KERN_QK_K)

kern_tile_fn tmrt__kern__tile_avx2(uint32_t type) {
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

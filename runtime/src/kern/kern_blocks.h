/* kern_blocks.h: ggml's quantised block layouts, byte for byte.
 *
 * These are the on-disk layouts of GGUF tensors (little-endian, no padding:
 * every member is a byte array or a uint16_t at an even offset, and the
 * static asserts pin the sizes). f16 scales are stored as raw uint16_t bits.
 *
 *  Q8_0  32 weights:  d (f16) | qs[32] (int8)          w = d * q
 *  Q4_K  256 weights: d, dmin (f16) | scales[12] | qs[128] (nibbles)
 *        8 sub-blocks of 32, each with a 6-bit scale sc and 6-bit min m
 *        packed in scales[12];  w = d*sc * q - dmin*m,  q in 0..15.
 *        qs: for each 64-weight chunk c, 32 bytes; weight 64c+l is the low
 *        nibble of qs[32c+l], weight 64c+32+l its high nibble.
 *  Q6_K  256 weights: ql[128] (low 4 bits) | qh[64] (high 2 bits) |
 *        scales[16] (int8, one per 16 weights) | d (f16);
 *        w = d * scales[i/16] * (q - 32), q in 0..63. For each 128-weight
 *        half h, l in 0..31: weights 128h + {l, l+32, l+64, l+96} take the
 *        low nibble of ql[64h+l], of ql[64h+32+l], the high nibble of
 *        ql[64h+l], of ql[64h+32+l], and bit pairs 0, 2, 4, 6 of qh[32h+l].
 *  Q8_K  256 values (activations only, never stored in GGUF):
 *        d (f32) | qs[256] (int8) | bsums[16] (int16 sums of 16 qs).
 */
#ifndef TMRT_KERN_BLOCKS_H
#define TMRT_KERN_BLOCKS_H

#include <stdint.h>

#define KERN_QK8_0 32
#define KERN_QK_K 256

typedef struct kern_block_q8_0 {
    uint16_t d;
    int8_t qs[KERN_QK8_0];
} kern_block_q8_0;

typedef struct kern_block_q4_k {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[KERN_QK_K / 2];
} kern_block_q4_k;

typedef struct kern_block_q6_k {
    uint8_t ql[KERN_QK_K / 2];
    uint8_t qh[KERN_QK_K / 4];
    int8_t scales[KERN_QK_K / 16];
    uint16_t d;
} kern_block_q6_k;

typedef struct kern_block_q8_k {
    float d;
    int8_t qs[KERN_QK_K];
    int16_t bsums[KERN_QK_K / 16];
} kern_block_q8_k;

_Static_assert(sizeof(kern_block_q8_0) == 34, "Q8_0 block is 34 bytes");
_Static_assert(sizeof(kern_block_q4_k) == 144, "Q4_K block is 144 bytes");
_Static_assert(sizeof(kern_block_q6_k) == 210, "Q6_K block is 210 bytes");
_Static_assert(sizeof(kern_block_q8_k) == 292, "Q8_K block is 292 bytes");

/* The 6-bit scale and min of Q4_K sub-block j (0..7) from scales[12]:
 * sub-blocks 0..3 keep theirs in the low 6 bits of bytes j and j+4; 4..7
 * keep the low 4 bits in byte j+4 (scale low nibble, min high nibble) and
 * the top 2 bits in the spare top bits of bytes j-4 (scale) and j (min). */
static inline void kern_q4k_scale_min(const uint8_t *scales, int j, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = scales[j] & 63;
        *m = scales[j + 4] & 63;
    } else {
        *sc = (uint8_t)((scales[j + 4] & 0xf) | ((scales[j - 4] >> 6) << 4));
        *m = (uint8_t)((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

/* The four signed 6-bit values (q - 32) of Q6_K weights 128h + {l, l+32,
 * l+64, l+96} (ql and qh already offset to half h, l in 0..31). */
static inline void kern_q6k_quad(const uint8_t *ql, const uint8_t *qh, int l, int q[4]) {
    q[0] = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
    q[1] = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
    q[2] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
    q[3] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
}

#endif /* TMRT_KERN_BLOCKS_H */

/* vk_weights.h: weight matrices as bindings (vk_weights.c): the checks
 * every op that reads weights runs, and the pieces a matrix is bound in
 * when it passes maxStorageBufferRange. */
#ifndef TMRT_VK_WEIGHTS_H
#define TMRT_VK_WEIGHTS_H

#include "gpu/vk_ops.h"

/* Rows [r0, r0 + rows) of a matrix as one binding: `bind` starts at the
 * alignment at or below row r0, the rows at byte w_base of it; vec: every
 * row is 16-byte aligned (the shaders' vector reads). */
typedef struct tmrt_vk_wpiece {
    tmrt_vk_buf bind;
    uint32_t r0, rows, w_base;
    bool vec;
} tmrt_vk_wpiece;

/* Packed bytes of n elements of type (0 if not supported). */
uint64_t tmrt__vk_row_bytes(uint32_t type, uint32_t n);
/* The matrix is one the ops read (type, n_in, row_bytes, buffer, range);
 * else the recorder's error names `op`. */
bool tmrt__vk_wmat_ok(tmrt_vk_rec *rec, const char *op, const tmrt_vk_wmat *w);
/* The largest piece from row r0 (at least one row; false with the error
 * set when one row does not fit the range limit). */
bool tmrt__vk_wpiece(tmrt_vk_rec *rec, const tmrt_vk_wmat *w, uint32_t r0, tmrt_vk_wpiece *out);

/* A float vector (or rows of taps: n_out rows of n_in) of F32, F16 or BF16
 * as one binding from the alignment below it; *base the byte offset of its
 * first element in the binding. False with the error naming op/what. */
bool tmrt__vk_wvec(tmrt_vk_rec *rec, const char *op, const char *what, const tmrt_vk_wmat *w, tmrt_vk_buf *bind,
                   uint32_t *base);
/* b is a valid binding holding at least `bytes` (else the error). */
bool tmrt__vk_need(tmrt_vk_rec *rec, const char *op, const char *what, tmrt_vk_buf b, uint64_t bytes);

/* RoPE (vk_rope.c): the shaders' theta_scale as a float-float and the
 * sections; the checks of its parameters for groups of head_len. */
void tmrt__vk_rope_angles(const tmrt_vk_rope *r, int32_t s[4], float *hi, float *lo);
bool tmrt__vk_rope_ok(tmrt_vk_rec *rec, const char *op, const tmrt_vk_rope *r, uint32_t n_tok, uint32_t head_len);

#endif /* TMRT_VK_WEIGHTS_H */

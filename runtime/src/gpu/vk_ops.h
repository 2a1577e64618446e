/* vk_ops.h: the compute ops of the Qwen3.5 forward pass on Vulkan, each
 * recorded into a tmrt_vk_rec (vk_compute.h) as one or a few dispatches.
 * An op records no barrier: the caller puts tmrt__vk_barrier between an op
 * and the next one that reads what it wrote (or reuses its bytes).
 *
 * Conventions (docs/runtime-gpu.md): activations are f32, row-major, with
 * a row stride in floats (ld*); every binding's offset is a multiple of
 * tmrt_vk_limits::storage_align, except weights, whose offset may be any
 * multiple of 4 (32 in GGUF files): the op binds from the aligned offset
 * below and passes the difference to the shader. Each op checks its
 * arguments and on a bad one records nothing and sets the recorder's
 * error (TMEM_E_INVALID_ARG, the message naming the op and argument); it
 * returns the recorder's status. */
#ifndef TMRT_VK_OPS_H
#define TMRT_VK_OPS_H

#include "gpu/vk_compute.h"

/* A weight matrix on the device in ggml's layout: n_out rows of n_in
 * elements of `type` (tmem_ggml_type: F32, F16, BF16, Q8_0, Q4_K, Q6_K),
 * rows row_bytes apart from buf.offset (a multiple of 4); buf.range covers
 * n_out * row_bytes rounded up to a multiple of 4 (16-bit data is read as
 * words; GGUF pads tensors to 32 bytes, so file-backed weights have it).
 * Weights larger than maxStorageBufferRange are bound in pieces. */
typedef struct tmrt_vk_wmat {
    tmrt_vk_buf buf;
    uint32_t type;
    uint32_t n_in, n_out;
    uint64_t row_bytes;
} tmrt_vk_wmat;

/* true if the ops read `type` with this n_in (as tmrt__kern_type_supported). */
bool tmrt__vk_type_supported(uint32_t type, uint32_t n_in);
/* Elements a block of `type` holds (1, 32, 256), 0 for a type not read. */
uint32_t tmrt__vk_type_block(uint32_t type);

/* ---- matmul ---------------------------------------------------------------
 * y[t*ldy + o] = sum_i W[o][i] * x[r(t)*ldx + i] for t < n_tok, o < n_out,
 * r(t) = x_rows[t] when x_rows.buffer is set (the LM head on the asked
 * positions only), else t. Weights are read in their stored type and
 * dequantised in registers (never into memory); x stays f32 (no activation
 * quantisation: y differs from the CPU's tmrt__kern_matmul, which quantises x
 * for Q8_0/Q4_K/Q6_K, by that rounding). Up to `mv_max_tok` tokens
 * (tmrt_vk_matmul::mv_max_tok, 0 = 8) go through the mat-vec kernels
 * (decode), more through the tiled mat-mat kernels (prefill). */
typedef struct tmrt_vk_matmul {
    tmrt_vk_wmat w;
    tmrt_vk_buf x, y, x_rows;
    uint32_t ldx, ldy;               /* floats; 0 = n_in, n_out */
    uint32_t n_tok;
    uint32_t mv_max_tok;
} tmrt_vk_matmul;
tmem_status tmrt__vk_matmul(tmrt_vk_rec *rec, const tmrt_vk_matmul *m);

#endif /* TMRT_VK_OPS_H */

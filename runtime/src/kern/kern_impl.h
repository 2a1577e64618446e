/* kern_impl.h: what the kernel files share (not part of the contract).
 *
 * Prototypes are grouped under the file that defines them. Names with a
 * double underscore (kern__) are internal to runtime/src/kern/. */
#ifndef TMRT_KERN_IMPL_H
#define TMRT_KERN_IMPL_H

#include "kern.h"
#include "kern_blocks.h"

/* How x is fed to a weight type's dot product: as f32 (F32, F16, BF16
 * weights) or quantised once per row into Q8_0 (Q8_0 weights) or Q8_K
 * (Q4_K, Q6_K weights), the way ggml pairs them. */
typedef enum kern_xform { KERN_X_F32, KERN_X_Q8_0, KERN_X_Q8_K } kern_xform;

/* Storage traits of the six matmul weight types. */
typedef struct kern_type_traits {
    uint32_t type;
    int block;            /* weights per block */
    int block_bytes;      /* bytes per block */
    kern_xform xform;     /* what x becomes for the dot product */
} kern_type_traits;

/* Traits of `type`, NULL if the kernels do not handle it. */
const kern_type_traits *tmrt__kern__traits(uint32_t type);
/* Bytes of one row of n elements of x in the form `xf` (n whole blocks). */
size_t tmrt__kern__xrow_bytes(kern_xform xf, int64_t n);

/* ---- kern_quant.c: scalar (de)quantisers ---- */
void tmrt__kern__quantize_q8_0(const float *x, kern_block_q8_0 *y, int64_t n);
void tmrt__kern__quantize_q8_k(const float *x, kern_block_q8_k *y, int64_t n);
void tmrt__kern__quantize_q4_k(const float *x, kern_block_q4_k *y, int64_t n);
void tmrt__kern__quantize_q6_k(const float *x, kern_block_q6_k *y, int64_t n);

/* ---- tmrt__kern_dot.c: scalar row dot products (the oracle) ----
 * w: one weight row of n elements in its type; x: f32 or the row of x in
 * the type's xform. Integer sums per block are exact; blocks are summed in
 * order in f32. */
float tmrt__kern__dot_f32(const float *w, const float *x, int64_t n);
float tmrt__kern__dot_f16(const uint16_t *w, const float *x, int64_t n);
float tmrt__kern__dot_bf16(const uint16_t *w, const float *x, int64_t n);
float tmrt__kern__dot_q8_0(const kern_block_q8_0 *w, const kern_block_q8_0 *x, int64_t n);
float tmrt__kern__dot_q4_k(const kern_block_q4_k *w, const kern_block_q8_k *x, int64_t n);
float tmrt__kern__dot_q6_k(const kern_block_q6_k *w, const kern_block_q8_k *x, int64_t n);
/* The dot of one weight row with one prepared x row, by type. */
float tmrt__kern__dot_row(uint32_t type, const void *wrow, const void *xrow, int64_t n);

/* ---- tiles: the unit of work of tmrt__kern_matmul ----
 * Computes y[t*ldy + o] for t in [0, n_tok), o in [o0, o1): weight rows
 * o0..o1-1 against every prepared x row (x rows `xstride` bytes apart).
 * Every y element must come out with the same bits whatever the tile
 * bounds, so that results do not depend on the thread count. */
typedef void (*kern_tile_fn)(const kern_wmat *w, const void *x, size_t xstride, int64_t n_tok,
                             int64_t o0, int64_t o1, float *y, size_t ldy);

/* kern_pool.c: the chunk size tmrt__kern_pool_for uses for (threads, n, grain) */
int64_t tmrt__kern_pool_chunk(int n_threads, int64_t n, int64_t grain);

/* tmrt__kern_matmul.c */
void tmrt__kern__tile_scalar(const kern_wmat *w, const void *x, size_t xstride, int64_t n_tok,
                       int64_t o0, int64_t o1, float *y, size_t ldy);

/* ---- kern_cpu.c: the instruction sets the matmul may use ---- */
/* NEON (aarch64 builds) sorts below AVX2: `isa >= KERN_ISA_AVX2` means the x86 paths */
typedef enum kern_isa { KERN_ISA_SCALAR, KERN_ISA_NEON, KERN_ISA_AVX2, KERN_ISA_AVX512 } kern_isa;
bool tmrt__kern__have_avx2(void);   /* AVX2 + FMA + F16C */
bool tmrt__kern__have_avx512(void); /* and AVX-512 F, BW, VL, VNNI (and compiled in) */
/* The widest this CPU has, capped by TMRT_KERN_ISA (kern_cpu.c). */
kern_isa tmrt__kern__isa(void);
/* The tile of `type` for `isa` (falling back to narrower ones, at worst the
 * scalar tile); *name gets the path's name ("avx512-vnni", "avx2", ...). */
kern_tile_fn tmrt__kern__tile_for(uint32_t type, kern_isa isa, const char **name);

/* ---- kern_matmul_avx2.c (x86-64 only, call only if tmrt__kern__have_avx2()) ---- */
kern_tile_fn tmrt__kern__tile_avx2(uint32_t type);   /* NULL: no AVX2 path for it */
void tmrt__kern__quantize_q8_0_avx2(const float *x, kern_block_q8_0 *y, int64_t n);
void tmrt__kern__quantize_q8_k_avx2(const float *x, kern_block_q8_k *y, int64_t n);

/* ---- kern_matmul_avx512.c (x86-64, TMRT_HAVE_AVX512 builds only; call only if
 * tmrt__kern__have_avx512()) ---- */
kern_tile_fn tmrt__kern__tile_avx512(uint32_t type); /* NULL: no AVX-512 path for it */

/* ---- kern_cpu.c: aarch64 features, from getauxval(AT_HWCAP / AT_HWCAP2)
 * (0 elsewhere). Advanced SIMD itself is part of every aarch64 CPU. ---- */
enum {
    KERN_CPU_NEON = 1u << 0,     /* the *_neon.c paths run (aarch64 build) */
    KERN_CPU_FP16 = 1u << 1,     /* FP16 arithmetic (HWCAP_ASIMDHP): detected, not used (docs/arm64.md) */
    KERN_CPU_DOTPROD = 1u << 2,  /* SDOT/UDOT (HWCAP_ASIMDDP) */
    KERN_CPU_I8MM = 1u << 3,     /* SMMLA (HWCAP2_I8MM): detected, not used yet */
};
unsigned tmrt__kern__cpu_features(void);

/* ---- kern_matmul_neon.c (aarch64 only) ----
 * The NEON tile for `type` given `features` (a subset of what the CPU has:
 * the tests pass each level in turn), NULL if none. */
kern_tile_fn tmrt__kern__tile_neon(uint32_t type, unsigned features);

/* ---- kern_vec_neon.c (aarch64 only): the kern_vec_avx2.c set in NEON ---- */
float tmrt__kern__dot_f32_neon(const float *a, const float *b, int64_t n);
void tmrt__kern__axpy_neon(float *y, float a, const float *x, int64_t n);
void tmrt__kern__scale_neon(float *x, float a, int64_t n);
float tmrt__kern__sumsq_neon(const float *x, int64_t n);
void tmrt__kern__rms_apply_neon(float *out, const float *x, const float *w, float w_offset, float s,
                                int64_t n);
void tmrt__kern__silu_mul_neon(float *out, const float *gate, const float *up, int64_t n);
void tmrt__kern__silu_neon(float *out, const float *x, int64_t n);
float tmrt__kern__max_neon(const float *x, int64_t n);
float tmrt__kern__exp_sub_sum_neon(float *x, float m, int64_t n);

/* ---- kern_vec_avx2.c ---- */
float tmrt__kern__dot_f32_avx2(const float *a, const float *b, int64_t n);
void tmrt__kern__axpy_avx2(float *y, float a, const float *x, int64_t n);
void tmrt__kern__scale_avx2(float *x, float a, int64_t n);
float tmrt__kern__sumsq_avx2(const float *x, int64_t n);
/* out[i] = x[i] * s * (w ? w[i] + w_offset : 1); out may equal x */
void tmrt__kern__rms_apply_avx2(float *out, const float *x, const float *w, float w_offset, float s,
                          int64_t n);
void tmrt__kern__silu_mul_avx2(float *out, const float *gate, const float *up, int64_t n);
void tmrt__kern__silu_avx2(float *out, const float *x, int64_t n);
float tmrt__kern__max_avx2(const float *x, int64_t n);
/* x[i] = exp(x[i] - m); returns the sum */
float tmrt__kern__exp_sub_sum_avx2(float *x, float m, int64_t n);

#endif /* TMRT_KERN_IMPL_H */

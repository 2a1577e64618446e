/* kern.h: the runtime's compute kernels (internal to typedmem_runtime).
 *
 * The contract between the kernels (runtime/src/kern/) and their callers
 * (forward pass, vision encoder, tmem convert/gen, tests, benches). Every
 * kernel has a scalar reference (kern_*_ref, always built, the oracle of the
 * tests) and SIMD paths in *_avx2.c / *_neon.c files chosen at run time from
 * the CPU's features (__builtin_cpu_supports, checked per call: there is no
 * global state to initialise). docs/runtime-kernels.md has the block layouts,
 * the dispatch and tiling, and measured figures.
 *
 * Rules: no kernel allocates (scratch comes from the caller, sized by the
 * *_scratch_bytes queries, typically from a per-step linear heap); no global
 * mutable state; f32 accumulation everywhere; weights are read in their
 * stored ggml type and dequantised in registers, never into memory.
 *
 * Preconditions are the caller's to keep (the kernels sit in the hot path and
 * do not re-validate): pointers non-NULL unless said otherwise, counts >= 0,
 * the weight matrix validated once at load (tmrt__kern_type_supported, row_bytes =
 * tmrt__kern_row_bytes). Threads: a kernel called without a pool runs on the calling
 * thread only and is safe to call from several threads on disjoint outputs.
 */
#ifndef TMRT_KERN_H
#define TMRT_KERN_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* ---- thread pool -------------------------------------------------------- */

/* A fixed set of worker threads created once per session; the calling thread
 * is worker 0. tmrt__kern_pool_for splits [0, n) into chunks that start at
 * multiples of `grain` and span a whole number of grains (the last may be
 * shorter), about four chunks per thread, and returns when all are done.
 * Workers spin ~50 us on the next job, then sleep on a condition variable;
 * nothing is allocated per call. The chunk bounds depend only on (n, grain, thread count); which
 * thread runs a chunk varies, so tasks must not depend on `thread` for their
 * results (it is there to pick per-thread scratch). */
typedef struct kern_pool kern_pool;
typedef void (*kern_task_fn)(void *arg, int64_t begin, int64_t end, int thread);

/* Bytes of pool memory for n_threads (1..256; 0 otherwise). */
size_t tmrt__kern_pool_bytes(int n_threads);

/* Starts n_threads - 1 workers in `mem` (tmrt__kern_pool_bytes(n_threads) bytes,
 * 64-aligned, owned by the caller, untouched by anyone else until
 * tmrt__kern_pool_fini) so a session can place it in a typed heap.
 * Returns 0, EINVAL (out NULL, mem NULL or misaligned, n_threads < 1 or
 * > 256), or pthread's errno (EAGAIN...) with every started worker joined.
 * *out is NULL on failure. */
int tmrt__kern_pool_init(void *mem, int n_threads, kern_pool **out);

/* Stops and joins the workers; the memory is the caller's again. NULL ok.
 * Not while a tmrt__kern_pool_for is running. */
void tmrt__kern_pool_fini(kern_pool *pool);

/* Threads of the pool, the caller's included; 1 for NULL. */
int tmrt__kern_pool_threads(const kern_pool *pool);

/* Runs fn(arg, begin, end, thread) over chunks covering [0, n) and returns
 * when every chunk is done (grain < 1 counts as 1). pool NULL (or one chunk)
 * runs them on the calling thread in order. n <= 0 does nothing. fn runs on
 * any of the pool's threads (thread = 0 .. tmrt__kern_pool_threads - 1) and must
 * not call tmrt__kern_pool_for on the same pool. Threads: one tmrt__kern_pool_for at a
 * time per pool (externally synchronized). */
void tmrt__kern_pool_for(kern_pool *pool, int64_t n, int64_t grain, kern_task_fn fn, void *arg);

/* ---- weight matrices ---------------------------------------------------- */

/* A view of a weight matrix in ggml layout: n_out rows of n_in elements,
 * each row `row_bytes` long (a whole number of the type's blocks: F32 4
 * bytes an element, F16/BF16 2, Q8_0 34 per 32, Q4_K 144 per 256, Q6_K 210
 * per 256; row_bytes may exceed tmrt__kern_row_bytes for padded rows). `type` is
 * a tmem_ggml_type: F32, F16, BF16, Q8_0, Q4_K or Q6_K. */
typedef struct kern_wmat {
    const void *data;
    uint32_t type;
    int64_t n_in;       /* ggml ne[0] */
    int64_t n_out;      /* ggml ne[1] */
    size_t row_bytes;
} kern_wmat;

/* true if `type` is one the matmul supports with this n_in (n_in > 0 and a
 * multiple of the type's block: 1, 32 for Q8_0, 256 for Q4_K/Q6_K). */
bool tmrt__kern_type_supported(uint32_t type, int64_t n_in);

/* Bytes of n elements of `type` packed (0 if !tmrt__kern_type_supported). */
size_t tmrt__kern_row_bytes(uint32_t type, int64_t n);

/* Bytes of scratch tmrt__kern_matmul needs for n_tok rows of x: 0 for float
 * weights; for Q8_0 weights x is quantised to Q8_0 once per row (34 bytes
 * per 32), for Q4_K/Q6_K to Q8_K (292 bytes per 256), rounded up to 64.
 * n_threads is accepted for future per-thread scratch and ignored today. */
size_t tmrt__kern_matmul_scratch_bytes(const kern_wmat *w, int64_t n_tok, int n_threads);

/* y[t*ldy + o] = sum_i W[o][i] * x[t*ldx + i] for t < n_tok, o < n_out.
 * ldx >= n_in and ldy >= n_out are in floats. x and y must not overlap.
 * scratch: tmrt__kern_matmul_scratch_bytes() bytes, 64-aligned (NULL when that is
 * 0). pool NULL = the calling thread only. Deterministic: the same inputs
 * give the same bits whatever the thread count (work is split by weight rows
 * and each y element is computed the same way in every split), and a token
 * row gives the same bits alone (n_tok = 1) or in any batch, so chunked
 * prefill and decode agree exactly. For
 * quantised weights x is quantised first (Q8_0 / Q8_K, as ggml does), so y
 * differs from a dequantise-then-f32 product by that rounding. The SIMD
 * paths agree with tmrt__kern_matmul_ref up to f32 reassociation (the tests bound
 * it: |dy| <= 1e-5 * sum_i |W[o][i] x[i]|, W dequantised).
 * Threads: the pool's (see tmrt__kern_pool_for); without a pool, safe from several
 * threads at once on distinct y and scratch. */
void tmrt__kern_matmul(const kern_wmat *w, const float *x, size_t ldx, int64_t n_tok,
                 float *y, size_t ldy, void *scratch, kern_pool *pool);

/* Scalar reference of tmrt__kern_matmul (no threads, no SIMD, no scratch: x is
 * quantised in 4096-element slices on the stack): the tests' oracle. */
void tmrt__kern_matmul_ref(const kern_wmat *w, const float *x, size_t ldx, int64_t n_tok,
                     float *y, size_t ldy);

/* Row `row` (< n_out) of W dequantised to f32 (embedding lookup): n_in
 * floats into out. Scalar; exact for F32/F16/BF16. */
void tmrt__kern_get_row(const kern_wmat *w, int64_t row, float *out);

/* ---- quantisation (reference, scalar) -------------------------------------
 * For tmem convert / tmem gen and the tests. Output is byte-compatible with
 * ggml's block layouts (ggml reads it; we read ggml's). Q8_0 matches ggml's
 * reference quantiser but for ties (rounded to even here). Q4_K and Q6_K take
 * their scales from each sub-block's range in one pass (ggml searches for a
 * lower-error scale): every value is representable, the error is at most half
 * a step of its sub-block; a little higher RMS error than llama-quantize.
 * F16 rounds to nearest even, BF16 to nearest even with NaNs kept quiet.
 * Both return false (and write nothing) if the type is not one of the six,
 * n is not a whole number of blocks, or a pointer is NULL. dst holds
 * tmrt__kern_row_bytes(type, n) bytes. Threads: safe (no shared state). */
bool tmrt__kern_quantize_row(uint32_t type, const float *x, void *dst, int64_t n);
bool tmrt__kern_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n);

/* ---- vector primitives (f32) ----------------------------------------------
 * Hot element-wise ops with SIMD paths; model-specific ops (attention,
 * DeltaNet, rope) live with the model and build on these. Each has a scalar
 * kern_*_ref twin; the SIMD results differ from it by f32 reassociation in
 * the reductions (dot, rmsnorm, softmax) and by the exp approximation
 * (silu_mul, softmax: relative error <= 2e-7 on exp). Any n >= 0 (tails
 * handled); n = 0 does nothing. */
float tmrt__kern_dot(const float *a, const float *b, int64_t n);
void tmrt__kern_axpy(float *y, float a, const float *x, int64_t n);   /* y += a*x */
void tmrt__kern_scale(float *x, float a, int64_t n);                  /* x *= a */
/* out = x / rms(x) * w  (w NULL: no weight), rms(x) = sqrt(mean(x^2) + eps);
 * out may equal x. */
void tmrt__kern_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);
/* out = x / rms(x) * (w + w_offset): checkpoints that store the norm weight
 * as an offset from 1 (w_offset = 1) use the file's bytes unchanged. */
void tmrt__kern_rmsnorm_offset(float *out, const float *x, const float *w, float w_offset,
                         int64_t n, float eps);
/* out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)); out may equal
 * gate or up. */
void tmrt__kern_silu_mul(float *out, const float *gate, const float *up, int64_t n);
/* out[i] = silu(x[i]); out may equal x. */
void tmrt__kern_silu(float *out, const float *x, int64_t n);
/* x = softmax(x) in place; returns the max (for online softmax users);
 * -INFINITY for n = 0. */
float tmrt__kern_softmax(float *x, int64_t n);
/* x[i] = exp(x[i] - m) in place; returns the sum of the new x (0 for n = 0):
 * one block of an online softmax whose running max is m. */
float tmrt__kern_exp_sub_sum(float *x, float m, int64_t n);

float tmrt__kern_dot_ref(const float *a, const float *b, int64_t n);
void tmrt__kern_axpy_ref(float *y, float a, const float *x, int64_t n);
void tmrt__kern_scale_ref(float *x, float a, int64_t n);
void tmrt__kern_rmsnorm_ref(float *out, const float *x, const float *w, int64_t n, float eps);
void tmrt__kern_rmsnorm_offset_ref(float *out, const float *x, const float *w, float w_offset,
                             int64_t n, float eps);
void tmrt__kern_silu_mul_ref(float *out, const float *gate, const float *up, int64_t n);
void tmrt__kern_silu_ref(float *out, const float *x, int64_t n);
float tmrt__kern_softmax_ref(float *x, int64_t n);
float tmrt__kern_exp_sub_sum_ref(float *x, float m, int64_t n);

/* ---- CPU features --------------------------------------------------------- */

/* true when this build has the AVX2 paths and this CPU runs them (AVX2, FMA
 * and F16C): callers with SIMD loops of their own (forward/attention_avx2.c)
 * ask here rather than repeat the check. Cheap (libgcc caches cpuid); no
 * state. Threads: safe. */
bool tmrt__kern_have_avx2(void);

/* Writes which path each matmul weight type takes on this CPU now (after
 * TMRT_KERN_ISA), e.g. "F32 avx512, ..., Q4_K avx512-vnni; x quantisation
 * and vector ops avx2", NUL-terminated into buf (truncated to cap - 1 bytes;
 * cap 0 writes nothing). Returns the length of the whole text. Threads: safe. */
size_t tmrt__kern_paths(char *buf, size_t cap);

#endif /* TMRT_KERN_H */

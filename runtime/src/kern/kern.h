/* kern.h: the runtime's compute kernels (internal to typedmem_runtime).
 *
 * The contract between the kernels (runtime/src/kern/) and their callers
 * (forward pass, vision encoder). Every kernel has a scalar reference
 * (kern_*_ref, always built, the oracle of the tests) and SIMD paths in
 * *_avx2.c / *_neon.c files chosen at run time from the CPU's features.
 *
 * Rules: no kernel allocates (scratch comes from the caller, sized by the
 * *_scratch_bytes queries, typically from a per-step linear heap); no global
 * mutable state; f32 accumulation everywhere; weights are read in their
 * stored ggml type and dequantised in registers, never into memory.
 */
#ifndef TMRT_KERN_H
#define TMRT_KERN_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* ---- thread pool -------------------------------------------------------- */

/* A fixed set of worker threads created once per session; the calling thread
 * is worker 0. kern_pool_for splits [0, n) into chunks of at least `grain`
 * items and returns when all are done (spin-then-sleep barrier, no
 * allocation per call). */
typedef struct kern_pool kern_pool;
typedef void (*kern_task_fn)(void *arg, int64_t begin, int64_t end, int thread);

/* Returns 0, or an errno (EINVAL for n_threads < 1 or > 256). The pool's
 * memory comes from `mem` (kern_pool_bytes(n_threads) bytes, 64-aligned,
 * owned by the caller) so a session can place it in a typed heap. */
size_t kern_pool_bytes(int n_threads);
int kern_pool_init(void *mem, int n_threads, kern_pool **out);
void kern_pool_fini(kern_pool *pool);            /* joins workers; NULL ok */
int kern_pool_threads(const kern_pool *pool);    /* 1 for NULL */
void kern_pool_for(kern_pool *pool, int64_t n, int64_t grain, kern_task_fn fn, void *arg);

/* ---- weight matrices ---------------------------------------------------- */

/* A view of a weight matrix in ggml layout: n_out rows of n_in elements,
 * each row `row_bytes` long (a whole number of the type's blocks). `type` is
 * a tmem_ggml_type: F32, F16, BF16, Q8_0, Q4_K or Q6_K. */
typedef struct kern_wmat {
    const void *data;
    uint32_t type;
    int64_t n_in;       /* ggml ne[0] */
    int64_t n_out;      /* ggml ne[1] */
    size_t row_bytes;
} kern_wmat;

/* true if `type` is one the matmul supports with this n_in. */
bool kern_type_supported(uint32_t type, int64_t n_in);

/* Bytes of scratch kern_matmul needs for n_tok rows of x (e.g. x quantised
 * to Q8 once per row for the quantised dot products). 0 is possible. */
size_t kern_matmul_scratch_bytes(const kern_wmat *w, int64_t n_tok, int n_threads);

/* y[t*ldy + o] = sum_i W[o][i] * x[t*ldx + i] for t < n_tok, o < n_out.
 * x and y must not overlap. scratch: kern_matmul_scratch_bytes() bytes,
 * 64-aligned. pool NULL = the calling thread only. Deterministic: the same
 * inputs give the same bits whatever the thread count. */
void kern_matmul(const kern_wmat *w, const float *x, size_t ldx, int64_t n_tok,
                 float *y, size_t ldy, void *scratch, kern_pool *pool);

/* Scalar reference of kern_matmul (no threads, no SIMD): the tests' oracle. */
void kern_matmul_ref(const kern_wmat *w, const float *x, size_t ldx, int64_t n_tok,
                     float *y, size_t ldy);

/* Row `row` of W dequantised to f32 (embedding lookup): n_in floats. */
void kern_get_row(const kern_wmat *w, int64_t row, float *out);

/* ---- vector primitives (f32) ----------------------------------------------
 * Hot element-wise ops with SIMD paths; model-specific ops (attention,
 * DeltaNet, rope) live with the model and build on these. */
float kern_dot(const float *a, const float *b, int64_t n);
void kern_axpy(float *y, float a, const float *x, int64_t n);   /* y += a*x */
void kern_scale(float *x, float a, int64_t n);                  /* x *= a */
/* out = x / rms(x) * w  (w NULL: no weight); out may equal x. */
void kern_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);
/* out[i] = silu(gate[i]) * up[i]; out may equal gate or up. */
void kern_silu_mul(float *out, const float *gate, const float *up, int64_t n);
/* x = softmax(x) in place; returns the max (for online softmax users). */
float kern_softmax(float *x, int64_t n);

#endif /* TMRT_KERN_H */

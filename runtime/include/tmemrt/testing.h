/**
 * @file testing.h
 * @brief The runtime's testing API: its matmul kernels and thread pool, for
 *        typedmem's own benchmarks (`tmem bench kern`, `tmem bench run`).
 *
 * **Not installed, not stable.** The kernels are the runtime's internals
 * (runtime/src/kern/kern.h); the tools see only public headers, so what the
 * benches time is reached through these few named entry points, each a thin
 * door onto the real kernel (the same code the forward pass runs). The
 * header stays in the source tree: `cmake --install` leaves it out
 * (cmake/install.cmake), and nothing here may appear in runtime.h,
 * tokenizer.h, convert.h, image.h or vision.h.
 *
 * Errors: tmem_status where something can fail; the kernels themselves keep
 * their preconditions (valid matrices, sizes from the queries), as in the
 * forward pass: they do not re-validate.
 */
#ifndef TMEMRT_TESTING_H
#define TMEMRT_TESTING_H

#include <typedmem/typedmem.h>

TMEM_EXTERN_C_BEGIN

/** @brief A worker pool: `threads` - 1 workers plus the calling thread. */
typedef struct tmrt_testing_pool tmrt_testing_pool;

/** @brief A task of tmrt_testing_pool_for: chunk [begin, end) on worker
 *  `thread` (0 = the caller). Results must not depend on `thread`. */
typedef void (*tmrt_testing_task_fn)(void *user, int64_t begin, int64_t end, int thread);

/** @brief Start a pool of `threads` (1..256) threads, the caller included.
 *  @param[out] out  NULL on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (threads out of range, out NULL)
 *          | TMEM_E_NO_MEMORY (no memory or no thread to start)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_testing_pool_create(int threads, tmrt_testing_pool **out);

/** @brief Stop and join the workers, free the pool. NULL is a no-op.
 *  @par Threads not while a tmrt_testing_pool_for runs on it */
TMEM_API void tmrt_testing_pool_destroy(tmrt_testing_pool *pool);

/** @brief Threads of the pool, the caller's included; 1 for NULL.
 *  @par Threads safe */
TMEM_API int tmrt_testing_pool_threads(const tmrt_testing_pool *pool);

/** @brief Run fn over chunks covering [0, n) (chunks start at multiples of
 *  `grain`), on every thread of the pool; returns when all are done. pool
 *  NULL runs them on the calling thread. Nothing is allocated.
 *  @par Threads one call at a time per pool */
TMEM_API void tmrt_testing_pool_for(tmrt_testing_pool *pool, int64_t n, int64_t grain, tmrt_testing_task_fn fn,
                                    void *user);

/** @brief Which SIMD path each matmul weight type takes on this CPU now
 *  (the environment's TMRT_KERN_ISA=avx2|scalar caps it), as one line of
 *  text into buf (NUL-terminated, truncated to cap - 1 bytes; nothing
 *  written if buf is NULL or cap 0), e.g. "F16 avx512, Q8_0 avx512-vnni, ...".
 *  @return the length of the whole line
 *  @par Threads safe */
TMEM_API size_t tmrt_testing_kern_paths(char *buf, size_t cap);

/** @brief A weight matrix in ggml layout: n_out rows of n_in elements, each
 *  row `row_bytes` long, of a tmem_ggml_type (F32, F16, BF16, Q8_0, Q4_K,
 *  Q6_K). */
typedef struct tmrt_testing_matrix {
    const void *data;
    uint32_t type;
    int64_t n_in, n_out;
    size_t row_bytes;
} tmrt_testing_matrix;

/** @brief Bytes of n elements of `type` packed; 0 when the kernels do not
 *  take this type at this n (n not a whole number of its blocks).
 *  @par Threads safe */
TMEM_API size_t tmrt_testing_row_bytes(uint32_t type, int64_t n);

/** @brief Quantise n floats into one row of `type` (row_bytes(type, n)
 *  bytes at dst), with the runtime's one quantizer.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (a NULL pointer, an unknown type, n
 *          not a whole number of blocks); dst is untouched on failure
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmrt_testing_quantize_row(uint32_t type, const float *src, void *dst,
                                                              int64_t n);

/** @brief Bytes of scratch tmrt_testing_matmul needs for n_tok rows.
 *  @par Threads safe */
TMEM_API size_t tmrt_testing_matmul_scratch_bytes(const tmrt_testing_matrix *w, int64_t n_tok, int threads);

/** @brief y[t*ldy + o] = sum_i W[o][i] x[t*ldx + i]: the forward pass's
 *  matmul (SIMD where the CPU has it, split by rows over the pool; pool NULL
 *  = this thread). scratch: matmul_scratch_bytes, 64-aligned (NULL when 0).
 *  @par Threads the pool's (one call at a time per pool) */
TMEM_API void tmrt_testing_matmul(const tmrt_testing_matrix *w, const float *x, size_t ldx, int64_t n_tok, float *y,
                                  size_t ldy, void *scratch, tmrt_testing_pool *pool);

/** @brief The scalar reference of tmrt_testing_matmul (one thread, no SIMD,
 *  no scratch): the kernels' oracle.
 *  @par Threads safe on distinct y */
TMEM_API void tmrt_testing_matmul_ref(const tmrt_testing_matrix *w, const float *x, size_t ldx, int64_t n_tok,
                                      float *y, size_t ldy);

TMEM_EXTERN_C_END

#endif /* TMEMRT_TESTING_H */

/* kern_test_util.h: shared helpers of the kernel tests (random data, pools,
 * tolerances). Header-only: each test is one file and one process. */
#ifndef TMRT_KERN_TEST_UTIL_H
#define TMRT_KERN_TEST_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "kern/kern_impl.h"
#include "typedmem/model.h"

/* The six weight types, in the order the tests walk them. */
static const uint32_t kern_test_types[] = {TMEM_GGML_F32, TMEM_GGML_F16, TMEM_GGML_BF16,
                                           TMEM_GGML_Q8_0, TMEM_GGML_Q4_K, TMEM_GGML_Q6_K};
#define KERN_TEST_NTYPES 6

static inline const char *kern_test_type_name(uint32_t type) {
    tmem_ggml_type_info info;
    return tmem_ggml_type_get_info(type, &info) == TMEM_OK ? info.name : "?";
}

/* Uniform in [-1, 1). */
static inline float kern_test_uniform(tmem_rng *r) {
    return (float)((double)(tmem_rng_next(r) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* Roughly normal (sum of four uniforms), times scale. */
static inline float kern_test_normal(tmem_rng *r, float scale) {
    float s = 0.0f;
    for (int i = 0; i < 4; i++) s += kern_test_uniform(r);
    return s * 0.866f * scale;
}

static inline void kern_test_fill(tmem_rng *r, float *x, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) x[i] = kern_test_normal(r, scale);
}

/* 64-aligned, zeroed; aborts the test process on OOM (tests only). */
static inline void *kern_test_alloc(size_t bytes) {
    size_t rounded = (bytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

/* A pool of n threads in freshly allocated memory (*mem: free it after
 * tmrt__kern_pool_fini). NULL for n == 0. */
static inline kern_pool *kern_test_pool(int n, void **mem) {
    *mem = NULL;
    if (n == 0) return NULL;
    *mem = kern_test_alloc(tmrt__kern_pool_bytes(n));
    kern_pool *pool = NULL;
    if (tmrt__kern_pool_init(*mem, n, &pool) != 0) {
        fprintf(stderr, "tmrt__kern_pool_init(%d) failed\n", n);
        exit(1);
    }
    return pool;
}

/* A weight matrix of `type` quantised from random f32 (returned in *dense,
 * n_out x n_in, to be freed) with row padding `pad` bytes. */
static inline kern_wmat kern_test_wmat(tmem_rng *r, uint32_t type, int64_t n_in, int64_t n_out,
                                       size_t pad, float scale, float **dense) {
    kern_wmat w = {.type = type, .n_in = n_in, .n_out = n_out};
    w.row_bytes = tmrt__kern_row_bytes(type, n_in) + pad;
    char *data = kern_test_alloc(w.row_bytes * (size_t)n_out);
    float *f = kern_test_alloc((size_t)(n_in * n_out) * sizeof(float));
    kern_test_fill(r, f, n_in * n_out, scale);
    for (int64_t o = 0; o < n_out; o++)
        (void)tmrt__kern_quantize_row(type, f + o * n_in, data + (size_t)o * w.row_bytes, n_in);
    w.data = data;
    if (dense) *dense = f;
    else free(f);
    return w;
}

#endif /* TMRT_KERN_TEST_UTIL_H */

/* The runtime's testing API (tmemrt/testing.h), what tmem bench kern and run
 * time: the same kernels as the forward pass (bit for bit with
 * tmrt__kern_matmul), a pool that covers [0, n) once, a quantizer that
 * refuses what the kernels cannot take, leaving dst untouched. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "kern/kern.h"
#include "tmemrt/testing.h"

typedef struct cover {
    int64_t n;
    unsigned char *seen; /* chunks are disjoint: no two threads write one byte */
} cover;

static void mark(void *u, int64_t begin, int64_t end, int thread) {
    cover *c = u;
    (void)thread;
    for (int64_t i = begin; i < end; i++) c->seen[i]++;
}

static void test_pool(void) {
    tmrt_testing_pool *p = (tmrt_testing_pool *)(uintptr_t)1;
    CHECK_ST(tmrt_testing_pool_create(0, &p), TMEM_E_INVALID_ARG);
    CHECK(p == NULL);
    CHECK_ST(tmrt_testing_pool_create(257, &p), TMEM_E_INVALID_ARG);
    CHECK_ST(tmrt_testing_pool_create(2, NULL), TMEM_E_INVALID_ARG);
    REQUIRE_OK(tmrt_testing_pool_create(2, &p));
    CHECK(tmrt_testing_pool_threads(p) == 2 && tmrt_testing_pool_threads(NULL) == 1);
    cover c = {1000, calloc(1000, 1)};
    REQUIRE(c.seen);
    tmrt_testing_pool_for(p, c.n, 16, mark, &c);
    int once = 0;
    for (int64_t i = 0; i < c.n; i++) once += c.seen[i] == 1;
    CHECK(once == 1000);
    tmrt_testing_pool_destroy(p);
    tmrt_testing_pool_destroy(NULL);
    free(c.seen);
}

static void test_matmul_is_the_kernel(void) {
    const int64_t n_in = 256, n_out = 48, n_tok = 3;
    const uint32_t types[] = {TMEM_GGML_F32, TMEM_GGML_F16, TMEM_GGML_Q8_0, TMEM_GGML_Q4_K, TMEM_GGML_Q6_K};
    tmrt_testing_pool *p;
    REQUIRE_OK(tmrt_testing_pool_create(2, &p));
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(7));
    float *w = malloc(sizeof(float) * (size_t)(n_in * n_out)), *x = malloc(sizeof(float) * (size_t)(n_in * n_tok));
    float y1[48 * 3], y2[48 * 3], yr[48 * 3];
    REQUIRE(w && x);
    for (int64_t i = 0; i < n_in * n_out; i++) w[i] = (float)((int)tmem_rng_range(&r, 0, 2000) - 1000) / 1000.0f;
    for (int64_t i = 0; i < n_in * n_tok; i++) x[i] = (float)((int)tmem_rng_range(&r, 0, 2000) - 1000) / 500.0f;
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        size_t rb = tmrt_testing_row_bytes(types[t], n_in);
        REQUIRE(rb == tmrt__kern_row_bytes(types[t], n_in) && rb > 0);
        unsigned char *data = aligned_alloc(64, (rb * (size_t)n_out + 63) & ~(size_t)63);
        REQUIRE(data);
        for (int64_t o = 0; o < n_out; o++)
            REQUIRE_OK(tmrt_testing_quantize_row(types[t], w + o * n_in, data + (size_t)o * rb, n_in));
        tmrt_testing_matrix m = {data, types[t], n_in, n_out, rb};
        kern_wmat km = {data, types[t], n_in, n_out, rb};
        size_t sb = tmrt_testing_matmul_scratch_bytes(&m, n_tok, 2);
        CHECK(sb == tmrt__kern_matmul_scratch_bytes(&km, n_tok, 2));
        void *scratch = sb ? aligned_alloc(64, (sb + 63) & ~(size_t)63) : NULL;
        tmrt_testing_matmul(&m, x, (size_t)n_in, n_tok, y1, (size_t)n_out, scratch, p);
        tmrt__kern_matmul(&km, x, (size_t)n_in, n_tok, y2, (size_t)n_out, scratch, NULL);
        tmrt_testing_matmul_ref(&m, x, (size_t)n_in, n_tok, yr, (size_t)n_out);
        CHECK_MSG(!memcmp(y1, y2, sizeof y1), "type %u: the testing door is not the kernel", types[t]);
        int far = 0;
        for (int i = 0; i < n_out * n_tok; i++) far += !(yr[i] - y1[i] < 1e-3f && y1[i] - yr[i] < 1e-3f);
        CHECK_MSG(far == 0, "type %u: %d results far from the reference", types[t], far);
        free(scratch);
        free(data);
    }
    /* refusals: dst untouched */
    unsigned char dst[64];
    memset(dst, 0x5A, sizeof dst);
    CHECK_ST(tmrt_testing_quantize_row(TMEM_GGML_Q8_0, x, dst, 31), TMEM_E_INVALID_ARG); /* not a block */
    CHECK_ST(tmrt_testing_quantize_row(999, x, dst, 32), TMEM_E_INVALID_ARG);
    CHECK_ST(tmrt_testing_quantize_row(TMEM_GGML_F32, NULL, dst, 4), TMEM_E_INVALID_ARG);
    int changed = 0;
    for (size_t i = 0; i < sizeof dst; i++) changed += dst[i] != 0x5A;
    CHECK(changed == 0);
    CHECK(tmrt_testing_row_bytes(TMEM_GGML_Q4_K, 100) == 0);
    free(w);
    free(x);
    tmrt_testing_pool_destroy(p);
}

int main(void) {
    RUN(test_pool);
    RUN(test_matmul_is_the_kernel);
    return tmem_test_finish();
}

/* kern_testing.c: the testing API (tmemrt/testing.h): the kernels and the
 * pool behind named doors for the project's benches. */
#include <errno.h>
#include <stdlib.h>
#include "kern/kern.h"
#include "tmemrt/testing.h"

struct tmrt_testing_pool {
    kern_pool *pool;
    void *mem;
};

tmem_status tmrt_testing_pool_create(int threads, tmrt_testing_pool **out) {
    if (out) *out = NULL;
    size_t bytes = tmrt__kern_pool_bytes(threads);
    if (!out || !bytes) return TMEM_E_INVALID_ARG;
    tmrt_testing_pool *p = calloc(1, sizeof *p);
    if (p) p->mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    int e = p && p->mem ? tmrt__kern_pool_init(p->mem, threads, &p->pool) : ENOMEM;
    if (e) {
        if (p) free(p->mem);
        free(p);
        return e == EINVAL ? TMEM_E_INVALID_ARG : TMEM_E_NO_MEMORY;
    }
    *out = p;
    return TMEM_OK;
}

void tmrt_testing_pool_destroy(tmrt_testing_pool *p) {
    if (!p) return;
    tmrt__kern_pool_fini(p->pool);
    free(p->mem);
    free(p);
}

int tmrt_testing_pool_threads(const tmrt_testing_pool *p) { return tmrt__kern_pool_threads(p ? p->pool : NULL); }

void tmrt_testing_pool_for(tmrt_testing_pool *p, int64_t n, int64_t grain, tmrt_testing_task_fn fn, void *user) {
    tmrt__kern_pool_for(p ? p->pool : NULL, n, grain, fn, user);
}

static kern_wmat wmat(const tmrt_testing_matrix *w) {
    return (kern_wmat){.data = w->data, .type = w->type, .n_in = w->n_in, .n_out = w->n_out,
                       .row_bytes = w->row_bytes};
}

size_t tmrt_testing_row_bytes(uint32_t type, int64_t n) { return tmrt__kern_row_bytes(type, n); }

tmem_status tmrt_testing_quantize_row(uint32_t type, const float *src, void *dst, int64_t n) {
    return tmrt__kern_quantize_row(type, src, dst, n) ? TMEM_OK : TMEM_E_INVALID_ARG;
}

size_t tmrt_testing_matmul_scratch_bytes(const tmrt_testing_matrix *w, int64_t n_tok, int threads) {
    kern_wmat m = wmat(w);
    return tmrt__kern_matmul_scratch_bytes(&m, n_tok, threads);
}

void tmrt_testing_matmul(const tmrt_testing_matrix *w, const float *x, size_t ldx, int64_t n_tok, float *y,
                         size_t ldy, void *scratch, tmrt_testing_pool *p) {
    kern_wmat m = wmat(w);
    tmrt__kern_matmul(&m, x, ldx, n_tok, y, ldy, scratch, p ? p->pool : NULL);
}

void tmrt_testing_matmul_ref(const tmrt_testing_matrix *w, const float *x, size_t ldx, int64_t n_tok, float *y,
                             size_t ldy) {
    kern_wmat m = wmat(w);
    tmrt__kern_matmul_ref(&m, x, ldx, n_tok, y, ldy);
}

size_t tmrt_testing_kern_paths(char *buf, size_t cap) { return tmrt__kern_paths(buf, buf ? cap : 0); }

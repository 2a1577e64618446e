/* matmul.c: y = W x through the session's thread pool, the kernel's
 * scratch taken from the op's scratch range. */
#include "rt_internal.h"

void tmrt__matmul(tmrt_run *r, const kern_wmat *w, const float *x, uint32_t n, float *y) {
    size_t used = r->scratch_used;
    size_t bytes = tmrt__kern_matmul_scratch_bytes(w, n, r->n_threads);
    void *scratch = bytes ? tmrt__scratch(r, bytes) : NULL;
    tmrt__kern_matmul(w, x, (size_t)w->n_in, n, y, (size_t)w->n_out, scratch, r->pool);
    r->scratch_used = used;
}

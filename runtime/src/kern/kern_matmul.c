/* tmrt__kern_matmul.c: y = W x for every token row, split over the pool by weight
 * rows; the scalar reference and the dispatch to the SIMD tiles.
 *
 * Quantised weights want x quantised once per row (kern_impl.h: xform), so
 * tmrt__kern_matmul first quantises the n_tok rows of x into the caller's scratch
 * (in parallel over tokens), then hands blocks of weight rows to the pool. A
 * tile computes its rows for every token, so each weight row is read from
 * memory once per call whatever n_tok is. */
#include "kern_impl.h"

/* Rows per unit of work handed to the pool: a multiple of the SIMD tiles'
 * row blocks (3 and 4), small enough to balance 1024-row matrices. */
#define MATMUL_ROW_GRAIN 12
/* The reference quantises x in slices of this many elements (a multiple of
 * both block sizes) so its stack buffer stays small. */
#define REF_SLICE 4096
#define REF_XQ_BYTES (REF_SLICE / KERN_QK_K * sizeof(kern_block_q8_k))
_Static_assert(REF_SLICE / KERN_QK8_0 * sizeof(kern_block_q8_0) <= REF_XQ_BYTES,
               "the slice buffer holds a slice in either form");

size_t tmrt__kern_matmul_scratch_bytes(const kern_wmat *w, int64_t n_tok, int n_threads) {
    (void)n_threads;
    const kern_type_traits *t = w ? tmrt__kern__traits(w->type) : NULL;
    if (!t || t->xform == KERN_X_F32 || n_tok <= 0) return 0;
    size_t bytes = (size_t)n_tok * tmrt__kern__xrow_bytes(t->xform, w->n_in);
    return (bytes + 63) & ~(size_t)63;
}

void tmrt__kern__tile_scalar(const kern_wmat *w, const void *x, size_t xstride, int64_t n_tok,
                       int64_t o0, int64_t o1, float *y, size_t ldy) {
    for (int64_t o = o0; o < o1; o++) {
        const char *wrow = (const char *)w->data + (size_t)o * w->row_bytes;
        for (int64_t t = 0; t < n_tok; t++)
            y[(size_t)t * ldy + (size_t)o] =
                tmrt__kern__dot_row(w->type, wrow, (const char *)x + (size_t)t * xstride, w->n_in);
    }
}

static void quantize_xrow(kern_xform xf, bool simd, const float *x, void *dst, int64_t n) {
#if TMRT_HAVE_AVX2
    if (simd) {
        if (xf == KERN_X_Q8_0) tmrt__kern__quantize_q8_0_avx2(x, dst, n);
        else tmrt__kern__quantize_q8_k_avx2(x, dst, n);
        return;
    }
#else
    (void)simd;
#endif
    if (xf == KERN_X_Q8_0) tmrt__kern__quantize_q8_0(x, dst, n);
    else tmrt__kern__quantize_q8_k(x, dst, n);
}

typedef struct matmul_job {
    const kern_wmat *w;
    const float *x;
    size_t ldx;
    int64_t n_tok;
    float *y;
    size_t ldy;
    kern_xform xform;
    bool simd;
    const void *xin;   /* x as the tiles read it: x itself or the scratch */
    size_t xstride;    /* bytes between rows of xin */
    kern_tile_fn tile;
} matmul_job;

static void quantize_task(void *arg, int64_t t0, int64_t t1, int thread) {
    (void)thread;
    const matmul_job *job = arg;
    for (int64_t t = t0; t < t1; t++)
        quantize_xrow(job->xform, job->simd, job->x + (size_t)t * job->ldx,
                      (char *)job->xin + (size_t)t * job->xstride, job->w->n_in);
}

static void tile_task(void *arg, int64_t o0, int64_t o1, int thread) {
    (void)thread;
    const matmul_job *job = arg;
    job->tile(job->w, job->xin, job->xstride, job->n_tok, o0, o1, job->y, job->ldy);
}

void tmrt__kern_matmul(const kern_wmat *w, const float *x, size_t ldx, int64_t n_tok,
                 float *y, size_t ldy, void *scratch, kern_pool *pool) {
    const kern_type_traits *t = tmrt__kern__traits(w->type);
    if (!t || n_tok <= 0 || w->n_out <= 0) return;
    matmul_job job = {.w = w, .x = x, .ldx = ldx, .n_tok = n_tok, .y = y, .ldy = ldy,
                      .xform = t->xform};
    const char *path;
    const kern_isa isa = tmrt__kern__isa();
    job.tile = tmrt__kern__tile_for(w->type, isa, &path);
    job.simd = isa >= KERN_ISA_AVX2; /* the AVX2 x quantisers: bit-identical to the scalar ones */
    if (t->xform == KERN_X_F32) {
        job.xin = x;
        job.xstride = ldx * sizeof(float);
    } else {
        job.xin = scratch;
        job.xstride = tmrt__kern__xrow_bytes(t->xform, w->n_in);
        tmrt__kern_pool_for(pool, n_tok, 1, quantize_task, &job);
    }
    tmrt__kern_pool_for(pool, w->n_out, MATMUL_ROW_GRAIN, tile_task, &job);
}

void tmrt__kern_matmul_ref(const kern_wmat *w, const float *x, size_t ldx, int64_t n_tok,
                     float *y, size_t ldy) {
    const kern_type_traits *t = tmrt__kern__traits(w->type);
    if (!t) return;
    if (t->xform == KERN_X_F32) {
        tmrt__kern__tile_scalar(w, x, ldx * sizeof(float), n_tok, 0, w->n_out, y, ldy);
        return;
    }
    /* quantise x a slice at a time (the same blocks tmrt__kern_matmul makes) and
     * add each slice's dot to y */
    _Alignas(64) unsigned char xq[REF_XQ_BYTES];
    for (int64_t tok = 0; tok < n_tok; tok++) {
        const float *xrow = x + (size_t)tok * ldx;
        float *yrow = y + (size_t)tok * ldy;
        for (int64_t o = 0; o < w->n_out; o++) yrow[o] = 0.0f;
        for (int64_t i0 = 0; i0 < w->n_in; i0 += REF_SLICE) {
            int64_t len = w->n_in - i0 < REF_SLICE ? w->n_in - i0 : REF_SLICE;
            quantize_xrow(t->xform, false, xrow + i0, xq, len);
            size_t wskip = (size_t)(i0 / t->block) * (size_t)t->block_bytes;
            for (int64_t o = 0; o < w->n_out; o++) {
                const char *wrow = (const char *)w->data + (size_t)o * w->row_bytes + wskip;
                yrow[o] += tmrt__kern__dot_row(w->type, wrow, xq, len);
            }
        }
    }
}

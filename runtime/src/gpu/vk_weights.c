/* vk_weights.c: weight matrices as bindings: which types and shapes the
 * shaders read, and the pieces of a matrix past maxStorageBufferRange
 * (each bound from the alignment at or below its first row; the shaders get
 * the rest as w_base). */
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"
#include "typedmem/model.h"

uint32_t tmrt__vk_type_block(uint32_t type) {
    switch (type) {
    case TMEM_GGML_F32:
    case TMEM_GGML_F16:
    case TMEM_GGML_BF16: return 1;
    case TMEM_GGML_Q8_0: return 32;
    case TMEM_GGML_Q4_K:
    case TMEM_GGML_Q6_K: return 256;
    default: return 0;
    }
}

uint64_t tmrt__vk_row_bytes(uint32_t type, uint32_t n) {
    uint32_t b = tmrt__vk_type_block(type);
    if (!b || n % b) return 0;
    switch (type) {
    case TMEM_GGML_F32: return 4ull * n;
    case TMEM_GGML_F16:
    case TMEM_GGML_BF16: return 2ull * n;
    case TMEM_GGML_Q8_0: return 34ull * (n / 32);
    case TMEM_GGML_Q4_K: return 144ull * (n / 256);
    default: return 210ull * (n / 256);
    }
}

bool tmrt__vk_type_supported(uint32_t type, uint32_t n_in) { return n_in && tmrt__vk_row_bytes(type, n_in); }

/* The range covers the rows rounded up to whole words: the shaders read
 * 16-bit data as 32-bit words. */
bool tmrt__vk_wmat_ok(tmrt_vk_rec *rec, const char *op, const tmrt_vk_wmat *w) {
    uint64_t packed = tmrt__vk_row_bytes(w->type, w->n_in);
    if (!packed || !w->n_out || w->row_bytes < packed || w->row_bytes % 2 || w->row_bytes > UINT32_MAX ||
        !w->buf.buffer || w->buf.offset % 4 || w->buf.range < (((uint64_t)w->n_out * w->row_bytes + 3) & ~3ull)) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG,
                          "%s: weights of type %u, %u x %u, row_bytes %llu, offset %llu, range %llu", op, w->type,
                          w->n_out, w->n_in, (unsigned long long)w->row_bytes, (unsigned long long)w->buf.offset,
                          (unsigned long long)w->buf.range);
        return false;
    }
    uint64_t align = rec->vk->lim.storage_align > 16 ? rec->vk->lim.storage_align : 16;
    if (w->row_bytes + align > rec->vk->lim.max_storage_range) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: a weight row of %llu bytes past maxStorageBufferRange %llu",
                          op, (unsigned long long)w->row_bytes, (unsigned long long)rec->vk->lim.max_storage_range);
        return false;
    }
    /* f32 rows and 4-byte reads of the others need 4-byte aligned rows */
    if ((w->type == TMEM_GGML_F32 || w->type == TMEM_GGML_Q4_K) && w->row_bytes % 4) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: row_bytes %llu not a multiple of 4", op,
                          (unsigned long long)w->row_bytes);
        return false;
    }
    return true;
}

bool tmrt__vk_wpiece(tmrt_vk_rec *rec, const tmrt_vk_wmat *w, uint32_t r0, tmrt_vk_wpiece *out) {
    const tmrt_vk_limits *l = &rec->vk->lim;
    uint64_t align = l->storage_align > 16 ? l->storage_align : 16;
    uint64_t start = w->buf.offset + (uint64_t)r0 * w->row_bytes, bind = start & ~(align - 1);
    uint64_t max = l->max_storage_range & ~3ull; /* NVIDIA's is 2^32 - 1 */
    uint64_t base = start - bind, room = max > base ? max - base : 0;
    uint64_t rows = room / w->row_bytes;
    if (rows > w->n_out - r0) rows = w->n_out - r0;
    if (!rows) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "a weight row of %llu bytes past maxStorageBufferRange %llu",
                          (unsigned long long)w->row_bytes, (unsigned long long)l->max_storage_range);
        return false;
    }
    /* whole words (wmat_ok: the caller's range has them; max is a multiple
     * of 4), whole vectors where the caller's range allows */
    uint64_t need = (base + rows * w->row_bytes + 3) & ~3ull, up = (need + 15) & ~15ull;
    uint64_t avail = w->buf.offset + w->buf.range - bind;
    out->bind = (tmrt_vk_buf){w->buf.buffer, bind, up <= avail && up <= max ? up : need};
    out->r0 = r0;
    out->rows = (uint32_t)rows;
    out->w_base = (uint32_t)base;
    out->vec = base % 16 == 0 && w->row_bytes % 16 == 0;
    return true;
}

bool tmrt__vk_wvec(tmrt_vk_rec *rec, const char *op, const char *what, const tmrt_vk_wmat *w, tmrt_vk_buf *bind,
                   uint32_t *base) {
    if (w->type != TMEM_GGML_F32 && w->type != TMEM_GGML_F16 && w->type != TMEM_GGML_BF16) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %s of type %u (F32, F16 or BF16)", op, what, w->type);
        return false;
    }
    if (!tmrt__vk_wmat_ok(rec, op, w)) return false;
    uint64_t align = rec->vk->lim.storage_align, start = w->buf.offset & ~(align - 1);
    uint64_t bytes = (w->buf.offset - start + (uint64_t)w->n_out * w->row_bytes + 3) & ~3ull;
    if (bytes > rec->vk->lim.max_storage_range) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %s of %llu bytes past maxStorageBufferRange", op, what,
                          (unsigned long long)bytes);
        return false;
    }
    *bind = (tmrt_vk_buf){w->buf.buffer, start, bytes};
    *base = (uint32_t)(w->buf.offset - start);
    return true;
}

bool tmrt__vk_need(tmrt_vk_rec *rec, const char *op, const char *what, tmrt_vk_buf b, uint64_t bytes) {
    if (!tmrt__vk_buf_ok(rec, op, what, b)) return false;
    if (b.range >= bytes) return true;
    tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %s holds %llu bytes, needs %llu", op, what,
                      (unsigned long long)b.range, (unsigned long long)bytes);
    return false;
}

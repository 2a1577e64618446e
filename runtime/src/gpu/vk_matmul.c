/* vk_matmul.c: y = W x on the device for the six weight types: the
 * mat-vec kernels (shaders/matvec_*.comp, up to 8 tokens a workgroup) for
 * decode and gathered rows, the tiled mat-mat kernels (matmat_*.comp, 64 x 64
 * tiles by default: the kernels' specialisation constants 1 and 2) for more
 * tokens; weights past maxStorageBufferRange bound and
 * dispatched in row pieces, each piece's binding starting at the aligned
 * offset at or below its first row. */
#include "gpu/vk_internal.h"
#include "gpu/vk_ops.h"
#include "gpu/vk_weights.h"
#include "typedmem/model.h"

typedef struct mv_push {
    uint32_t n_in, n_out, row_bytes, w_base;
    uint32_t n_tok, ldx, ldy, y_col0;
    uint32_t flags, row_groups;
} mv_push;

#define MV_MAX_TOK 8u
#define FLAG_XROWS 1u
#define FLAG_VEC 2u

/* The kernel of `type`: the six of a family are consecutive in vk_kernels.h,
 * F32, F16, BF16, Q8_0, Q4_K, Q6_K. */
static tmrt_vk_kernel of_type(tmrt_vk_kernel f32, uint32_t type) {
    switch (type) {
    case TMEM_GGML_F32: return f32;
    case TMEM_GGML_F16: return (tmrt_vk_kernel)(f32 + 1);
    case TMEM_GGML_BF16: return (tmrt_vk_kernel)(f32 + 2);
    case TMEM_GGML_Q8_0: return (tmrt_vk_kernel)(f32 + 3);
    case TMEM_GGML_Q4_K: return (tmrt_vk_kernel)(f32 + 4);
    default: return (tmrt_vk_kernel)(f32 + 5);
    }
}

static bool args_ok(tmrt_vk_rec *rec, const tmrt_vk_matmul *m, uint32_t ldx, uint32_t ldy) {
    const char *op = "matmul";
    if (!tmrt__vk_wmat_ok(rec, op, &m->w)) return false;
    if (!m->n_tok || ldx < m->w.n_in || ldy < m->w.n_out)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "matmul: n_tok %u, ldx %u, ldy %u", m->n_tok, ldx, ldy),
               false;
    if (!tmrt__vk_buf_ok(rec, op, "x", m->x) || !tmrt__vk_buf_ok(rec, op, "y", m->y)) return false;
    if (m->x_rows.buffer && !tmrt__vk_buf_ok(rec, op, "x_rows", m->x_rows)) return false;
    uint64_t xrows = m->x_rows.buffer ? 1 : m->n_tok; /* gathered rows: the caller keeps them in x */
    if (m->x.range < ((xrows - 1) * ldx + m->w.n_in) * 4 ||
        m->y.range < ((uint64_t)(m->n_tok - 1) * ldy + m->w.n_out) * 4 ||
        (m->x_rows.buffer && m->x_rows.range < (uint64_t)m->n_tok * 4))
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "matmul: x, y or x_rows range too small"), false;
    return true;
}

/* The mat-vec kernels over rows [r0, r0 + rows) of one weight piece. */
static void matvec_piece(tmrt_vk_rec *rec, const tmrt_vk_matmul *m, const tmrt_vk_wpiece *p, uint32_t ldx,
                         uint32_t ldy) {
    tmrt_vk_kernel k = of_type(TMRT_VK_K_MATVEC_F32, m->w.type);
    uint32_t rows = tmrt__vk_spec(rec->vk, k)[1];
    mv_push pc = {m->w.n_in, p->rows, (uint32_t)m->w.row_bytes, p->w_base, m->n_tok, ldx, ldy, p->r0, 0,
                  (uint32_t)tmrt__vk_div_up(p->rows, rows)};
    if (m->x_rows.buffer) pc.flags |= FLAG_XROWS;
    if (p->vec) pc.flags |= FLAG_VEC;
    tmrt_vk_buf b[4] = {p->bind, m->x, m->y, m->x_rows.buffer ? m->x_rows : m->x};
    uint64_t groups = (uint64_t)pc.row_groups * tmrt__vk_div_up(m->n_tok, MV_MAX_TOK);
    tmrt__vk_dispatch(rec, k, b, 4, &pc, sizeof pc, groups);
}

typedef struct mm_push {
    uint32_t n_in, n_out, row_bytes, w_base, n_tok, ldx, ldy, y_col0, row_tiles;
    uint32_t grid_w, merge, patch, ow, plane; /* patch_<type> only (X_CHW) */
} mm_push;

static void matmat_piece(tmrt_vk_rec *rec, const tmrt_vk_matmul *m, const tmrt_vk_wpiece *p, uint32_t ldx,
                         uint32_t ldy) {
    tmrt_vk_kernel k = of_type(m->chw ? TMRT_VK_K_PATCH_F32 : TMRT_VK_K_MATMAT_F32, m->w.type);
    const uint32_t *spec = tmrt__vk_spec(rec->vk, k); /* the tile: spec[1] rows x spec[2] tokens */
    mm_push pc = {m->w.n_in, p->rows, (uint32_t)m->w.row_bytes, p->w_base, m->n_tok, ldx, ldy, p->r0,
                  (uint32_t)tmrt__vk_div_up(p->rows, spec[1]), 0, 0, 0, 0, 0};
    if (m->chw) {
        const tmrt_vk_patches *c = m->chw;
        pc.grid_w = c->width / c->patch, pc.merge = c->merge, pc.patch = c->patch, pc.ow = c->width;
        pc.plane = c->width * c->height;
    }
    tmrt_vk_buf b[3] = {p->bind, m->x, m->y};
    uint64_t groups = (uint64_t)pc.row_tiles * tmrt__vk_div_up(m->n_tok, spec[2]);
    tmrt__vk_dispatch(rec, k, b, 3, &pc, m->chw ? sizeof pc : 9 * sizeof(uint32_t), groups);
}

/* The patch embedding's image: a grid the patches tile, x holding it. */
static bool chw_ok(tmrt_vk_rec *rec, const tmrt_vk_matmul *m, uint32_t ldy) {
    const tmrt_vk_patches *c = m->chw;
    uint32_t f = c->patch * c->merge;
    if (!c->patch || !c->merge || c->patch > 64 || c->merge > 8 || !c->width || !c->height || c->width % f ||
        c->height % f || m->w.n_in != 3 * c->patch * c->patch ||
        (uint64_t)m->n_tok > (uint64_t)(c->width / c->patch) * (c->height / c->patch))
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "matmul: patches of %u (merge %u) over a %ux%u image, "
                                 "n_in %u, %u tokens", c->patch, c->merge, c->width, c->height, m->w.n_in,
                                 m->n_tok), false;
    if (!tmrt__vk_wmat_ok(rec, "matmul", &m->w) || !tmrt__vk_buf_ok(rec, "matmul", "x", m->x) ||
        !tmrt__vk_buf_ok(rec, "matmul", "y", m->y))
        return false;
    if (!m->n_tok || ldy < m->w.n_out || m->x.range < 3ull * c->width * c->height * 4 ||
        m->y.range < ((uint64_t)(m->n_tok - 1) * ldy + m->w.n_out) * 4)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "matmul: image or y range too small, or ldy %u", ldy),
               false;
    return true;
}

tmem_status tmrt__vk_matmul(tmrt_vk_rec *rec, const tmrt_vk_matmul *m) {
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t ldx = m->ldx ? m->ldx : m->w.n_in, ldy = m->ldy ? m->ldy : m->w.n_out;
    if (m->chw ? !chw_ok(rec, m, ldy) : !args_ok(rec, m, ldx, ldy)) return rec->status;
    uint32_t mv_max = m->mv_max_tok ? m->mv_max_tok : MV_MAX_TOK;
    tmrt_vk_wpiece p;
    for (uint32_t r0 = 0; r0 < m->w.n_out && rec->status == TMEM_OK; r0 += p.rows) {
        if (!tmrt__vk_wpiece(rec, &m->w, r0, &p)) break;
        if (!m->chw && (m->n_tok <= mv_max || m->x_rows.buffer)) matvec_piece(rec, m, &p, ldx, ldy);
        else matmat_piece(rec, m, &p, ldx, ldy);
    }
    return rec->status;
}

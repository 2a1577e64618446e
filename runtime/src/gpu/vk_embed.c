/* vk_embed.c: the embedding lookup (shaders/get_rows_*.comp): rows of any
 * of the six types dequantised into f32 rows. */
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"
#include "typedmem/model.h"

static tmrt_vk_kernel kernel(uint32_t type) {
    switch (type) {
    case TMEM_GGML_F32: return TMRT_VK_K_GET_ROWS_F32;
    case TMEM_GGML_F16: return TMRT_VK_K_GET_ROWS_F16;
    case TMEM_GGML_BF16: return TMRT_VK_K_GET_ROWS_BF16;
    case TMEM_GGML_Q8_0: return TMRT_VK_K_GET_ROWS_Q8_0;
    case TMEM_GGML_Q4_K: return TMRT_VK_K_GET_ROWS_Q4_K;
    default: return TMRT_VK_K_GET_ROWS_Q6_K;
    }
}

typedef struct rows_push {
    uint32_t n_in, n_rows, row_bytes, w_base, n_tok, ld, per_tok, row0, n_total, last;
} rows_push;

tmem_status tmrt__vk_get_rows(tmrt_vk_rec *rec, const tmrt_vk_get_rows *g) {
    const char *op = "get_rows";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    if (!tmrt__vk_wmat_ok(rec, op, &g->w)) return rec->status;
    uint32_t ld = g->ld ? g->ld : g->w.n_in;
    if (!g->n_tok || ld < g->w.n_in)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u tokens, ld %u", op, g->n_tok, ld);
    if (!tmrt__vk_need(rec, op, "ids", g->ids, (uint64_t)g->n_tok * 4) ||
        !tmrt__vk_need(rec, op, "out", g->out, ((uint64_t)(g->n_tok - 1) * ld + g->w.n_in) * 4))
        return rec->status;
    tmrt_vk_kernel k = kernel(g->w.type);
    uint32_t per = tmrt__vk_type_block(g->w.type) == 1 ? 1 : 8, wg = tmrt__vk_spec(rec->vk, k)[0];
    uint32_t per_tok = (uint32_t)tmrt__vk_div_up(g->w.n_in, (uint64_t)wg * per);
    tmrt_vk_wpiece p;
    for (uint32_t r0 = 0; r0 < g->w.n_out && rec->status == TMEM_OK; r0 += p.rows) {
        if (!tmrt__vk_wpiece(rec, &g->w, r0, &p)) break;
        rows_push pc = {g->w.n_in, p.rows, (uint32_t)g->w.row_bytes, p.w_base, g->n_tok, ld, per_tok, r0,
                        g->w.n_out, r0 + p.rows == g->w.n_out};
        tmrt_vk_buf b[3] = {p.bind, g->ids, g->out};
        tmrt__vk_dispatch(rec, k, b, 3, &pc, sizeof pc, (uint64_t)per_tok * g->n_tok);
    }
    return rec->status;
}

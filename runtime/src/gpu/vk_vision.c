/* vk_vision.c: the vision encoder's small ops on the device
 * (shaders/layernorm.comp, gelu.comp, bias_add.comp). */
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"

typedef struct ln_push {
    uint32_t n, n_rows, ld_x, ld_out, w_type, w_base, b_type, b_base;
    float eps;
} ln_push;

tmem_status tmrt__vk_layernorm(tmrt_vk_rec *rec, const tmrt_vk_layernorm *l) {
    const char *op = "layernorm";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t ldx = l->ld_x ? l->ld_x : l->n, ldo = l->ld_out ? l->ld_out : l->n;
    if (!l->n || !l->n_rows || ldx < l->n || ldo < l->n || l->w.n_in < l->n || l->b.n_in < l->n)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u rows of %u, weights of %u and %u", op, l->n_rows,
                                 l->n, l->w.n_in, l->b.n_in);
    ln_push pc = {l->n, l->n_rows, ldx, ldo, l->w.type, 0, l->b.type, 0, l->eps};
    tmrt_vk_buf b[4];
    if (!tmrt__vk_wvec(rec, op, "w", &l->w, &b[0], &pc.w_base) ||
        !tmrt__vk_wvec(rec, op, "b", &l->b, &b[1], &pc.b_base))
        return rec->status;
    if (!tmrt__vk_need(rec, op, "x", l->x, ((uint64_t)(l->n_rows - 1) * ldx + l->n) * 4) ||
        !tmrt__vk_need(rec, op, "out", l->out, ((uint64_t)(l->n_rows - 1) * ldo + l->n) * 4))
        return rec->status;
    b[2] = l->x, b[3] = l->out;
    tmrt__vk_dispatch(rec, TMRT_VK_K_LAYERNORM, b, 4, &pc, sizeof pc, l->n_rows);
    return rec->status;
}

tmem_status tmrt__vk_gelu(tmrt_vk_rec *rec, tmrt_vk_buf x, uint32_t n, bool erf) {
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    if (!n) return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "gelu: n 0");
    if (!tmrt__vk_need(rec, "gelu", "x", x, (uint64_t)n * 4)) return rec->status;
    uint32_t pc[2] = {n, erf ? 1u : 0u};
    tmrt__vk_dispatch(rec, TMRT_VK_K_GELU, &x, 1, pc, sizeof pc,
                      tmrt__vk_div_up(n, tmrt__vk_spec(rec->vk, TMRT_VK_K_GELU)[0]));
    return rec->status;
}

tmem_status tmrt__vk_bias_add(tmrt_vk_rec *rec, tmrt_vk_buf y, const tmrt_vk_wmat *b, uint32_t n, uint32_t n_tok,
                              uint32_t ld) {
    const char *op = "bias_add";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    ld = ld ? ld : n;
    uint64_t total = (uint64_t)n * n_tok;
    if (!total || total > UINT32_MAX || ld < n || b->n_in < n)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u rows of %u, bias of %u", op, n_tok, n, b->n_in);
    uint32_t pc[5] = {n, n_tok, ld, b->type, 0};
    tmrt_vk_buf bb[2];
    if (!tmrt__vk_wvec(rec, op, "b", b, &bb[0], &pc[4])) return rec->status;
    if (!tmrt__vk_need(rec, op, "y", y, ((uint64_t)(n_tok - 1) * ld + n) * 4)) return rec->status;
    bb[1] = y;
    tmrt__vk_dispatch(rec, TMRT_VK_K_BIAS_ADD, bb, 2, pc, sizeof pc,
                      tmrt__vk_div_up(total, tmrt__vk_spec(rec->vk, TMRT_VK_K_BIAS_ADD)[0]));
    return rec->status;
}

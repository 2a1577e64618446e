/* vk_eltwise.c: the element-wise ops (shaders/add.comp, swiglu.comp,
 * sigmoid_gate.comp, dn_gates.comp), one element a thread. */
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"

static tmem_status binary(tmrt_vk_rec *rec, tmrt_vk_kernel k, const char *op, tmrt_vk_buf a, tmrt_vk_buf b,
                          tmrt_vk_buf out, uint32_t n) {
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint64_t bytes = (uint64_t)n * 4;
    if (!n) return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: n 0", op);
    if (!tmrt__vk_need(rec, op, "a", a, bytes) || !tmrt__vk_need(rec, op, "b", b, bytes) ||
        !tmrt__vk_need(rec, op, "out", out, bytes))
        return rec->status;
    tmrt_vk_buf bufs[3] = {a, b, out};
    tmrt__vk_dispatch(rec, k, bufs, 3, &n, sizeof n, tmrt__vk_div_up(n, tmrt__vk_spec(rec->vk, k)[0]));
    return rec->status;
}

tmem_status tmrt__vk_add(tmrt_vk_rec *rec, tmrt_vk_buf a, tmrt_vk_buf b, tmrt_vk_buf out, uint32_t n) {
    return binary(rec, TMRT_VK_K_ADD, "add", a, b, out, n);
}

tmem_status tmrt__vk_swiglu(tmrt_vk_rec *rec, tmrt_vk_buf a, tmrt_vk_buf b, tmrt_vk_buf out, uint32_t n) {
    return binary(rec, TMRT_VK_K_SWIGLU, "swiglu", a, b, out, n);
}

tmem_status tmrt__vk_sigmoid_gate(tmrt_vk_rec *rec, const tmrt_vk_sigmoid_gate *g) {
    const char *op = "sigmoid_gate";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint64_t total = (uint64_t)g->n * g->n_head * g->n_tok;
    if (!total || total > UINT32_MAX)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u x %u x %u", op, g->n_tok, g->n_head, g->n);
    uint64_t xb = ((uint64_t)(g->n_tok - 1) * g->xts + (uint64_t)(g->n_head - 1) * g->xhs + g->n) * 4;
    uint64_t gb = ((uint64_t)(g->n_tok - 1) * g->gts + (uint64_t)(g->n_head - 1) * g->ghs + g->n) * 4;
    if (!tmrt__vk_need(rec, op, "x", g->x, xb) || !tmrt__vk_need(rec, op, "gate", g->gate, gb)) return rec->status;
    uint32_t pc[7] = {g->n, g->n_head, g->n_tok, g->xts, g->xhs, g->gts, g->ghs};
    tmrt_vk_buf b[2] = {g->x, g->gate};
    tmrt__vk_dispatch(rec, TMRT_VK_K_SIGMOID_GATE, b, 2, pc, sizeof pc,
                      tmrt__vk_div_up(total, tmrt__vk_spec(rec->vk, TMRT_VK_K_SIGMOID_GATE)[0]));
    return rec->status;
}

tmem_status tmrt__vk_dn_gates(tmrt_vk_rec *rec, const tmrt_vk_dn_gates *g) {
    const char *op = "dn_gates";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint64_t n = (uint64_t)g->n_tok * g->n_head;
    if (!n || n > UINT32_MAX || g->dt_bias.n_in < g->n_head || g->ssm_a.n_in < g->n_head)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u x %u, vectors of %u and %u", op, g->n_tok,
                                 g->n_head, g->dt_bias.n_in, g->ssm_a.n_in);
    uint32_t pc[6] = {g->n_head, (uint32_t)n, g->dt_bias.type, 0, g->ssm_a.type, 0};
    tmrt_vk_buf b[5];
    if (!tmrt__vk_wvec(rec, op, "dt_bias", &g->dt_bias, &b[0], &pc[3]) ||
        !tmrt__vk_wvec(rec, op, "ssm_a", &g->ssm_a, &b[1], &pc[5]))
        return rec->status;
    if (!tmrt__vk_need(rec, op, "alpha", g->alpha, n * 4) || !tmrt__vk_need(rec, op, "beta", g->beta, n * 4) ||
        !tmrt__vk_need(rec, op, "gate", g->gate, n * 4))
        return rec->status;
    b[2] = g->alpha, b[3] = g->beta, b[4] = g->gate;
    tmrt__vk_dispatch(rec, TMRT_VK_K_DN_GATES, b, 5, pc, sizeof pc,
                      tmrt__vk_div_up(n, tmrt__vk_spec(rec->vk, TMRT_VK_K_DN_GATES)[0]));
    return rec->status;
}

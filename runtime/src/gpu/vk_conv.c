/* vk_conv.c: the DeltaNet's causal depthwise conv + SiLU with its rolling
 * state updated in place (shaders/conv.comp, one channel a thread). */
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"

tmem_status tmrt__vk_conv(tmrt_vk_rec *rec, const tmrt_vk_conv *c) {
    const char *op = "conv";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t C = c->w.n_out, K = c->w.n_in, ldx = c->ld_x ? c->ld_x : C, ldo = c->ld_out ? c->ld_out : C;
    if (!c->n_tok || K < 1 || K > 16 || ldx < C || ldo < C)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u tokens, %u channels, %u taps (<= 16)", op,
                                 c->n_tok, C, K);
    uint32_t pc[8] = {c->n_tok, C, K, ldx, ldo, c->w.type, 0, (uint32_t)c->w.row_bytes};
    tmrt_vk_buf b[4];
    if (!tmrt__vk_wvec(rec, op, "taps", &c->w, &b[0], &pc[6])) return rec->status;
    if (!tmrt__vk_need(rec, op, "x", c->x, ((uint64_t)(c->n_tok - 1) * ldx + C) * 4) ||
        !tmrt__vk_need(rec, op, "out", c->out, ((uint64_t)(c->n_tok - 1) * ldo + C) * 4) ||
        (K > 1 && !tmrt__vk_need(rec, op, "state", c->state, (uint64_t)(K - 1) * C * 4)))
        return rec->status;
    b[1] = c->x, b[2] = c->out, b[3] = K > 1 ? c->state : c->x;
    tmrt__vk_dispatch(rec, TMRT_VK_K_CONV, b, 4, pc, sizeof pc,
                      tmrt__vk_div_up(C, tmrt__vk_spec(rec->vk, TMRT_VK_K_CONV)[0]));
    return rec->status;
}

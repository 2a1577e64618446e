/* vk_vision.c: the vision encoder's small ops on the device
 * (shaders/layernorm.comp, gelu.comp, bias_add.comp, pos_embed.comp,
 * vis_rope.comp; the patch embedding is a matmul: vk_matmul.c). */
#include <math.h>
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

typedef struct pos_push {
    uint32_t H, n_tok, grid_w, grid_h, merge, side, type, base, row_bytes;
    float step_h, step_w;
} pos_push;

/* vision/ops.c's linspace step, end / (steps - 1) in float (the host's
 * division: the device's may round differently). */
static float lin_step(uint32_t side, uint32_t steps) {
    return steps > 1 ? (float)(side - 1) / (float)(steps - 1) : 0.0f;
}

tmem_status tmrt__vk_pos_embed(tmrt_vk_rec *rec, const tmrt_vk_pos_embed *p) {
    const char *op = "pos_embed";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t side = (uint32_t)lrint(sqrt((double)p->table.n_out));
    uint64_t n = (uint64_t)p->grid_w * p->grid_h, total = n * p->H;
    if (!p->H || !n || !p->merge || p->grid_w % p->merge || p->grid_h % p->merge || total > UINT32_MAX ||
        side * side != p->table.n_out || p->table.n_in < p->H || p->table.row_bytes > UINT32_MAX / p->table.n_out)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: grid %ux%u (merge %u), H %u, table %u x %u", op,
                                 p->grid_w, p->grid_h, p->merge, p->H, p->table.n_out, p->table.n_in);
    pos_push pc = {p->H, (uint32_t)n, p->grid_w, p->grid_h, p->merge, side, p->table.type, 0,
                   (uint32_t)p->table.row_bytes, lin_step(side, p->grid_h), lin_step(side, p->grid_w)};
    tmrt_vk_buf b[2];
    if (!tmrt__vk_wvec(rec, op, "table", &p->table, &b[0], &pc.base)) return rec->status;
    if (!tmrt__vk_need(rec, op, "x", p->x, total * 4)) return rec->status;
    b[1] = p->x;
    tmrt__vk_dispatch(rec, TMRT_VK_K_POS_EMBED, b, 2, &pc, sizeof pc,
                      tmrt__vk_div_up(total, tmrt__vk_spec(rec->vk, TMRT_VK_K_POS_EMBED)[0]));
    return rec->status;
}

#define VIS_ROPE_MAX_FREQ 24u
typedef struct vis_rope_push {
    uint32_t n_tok, heads, hd, ld, grid_w, merge, H, pad;
    float inv_freq[VIS_ROPE_MAX_FREQ];
} vis_rope_push;

tmem_status tmrt__vk_vis_rope(tmrt_vk_rec *rec, const tmrt_vk_vis_rope *r) {
    const char *op = "vis_rope";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t hd = r->heads ? r->H / r->heads : 0;
    uint64_t pairs = (uint64_t)r->n_tok * 2 * r->heads * (hd / 2);
    if (!r->n_tok || !hd || r->H % r->heads || hd % 4 || hd / 4 > VIS_ROPE_MAX_FREQ || r->ld < 2 * r->H ||
        !r->merge || !r->grid_w || r->grid_w % r->merge || pairs > UINT32_MAX)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u tokens, H %u, %u heads, ld %u, grid_w %u", op,
                                 r->n_tok, r->H, r->heads, r->ld, r->grid_w);
    if (!tmrt__vk_need(rec, op, "qkv", r->qkv, ((uint64_t)(r->n_tok - 1) * r->ld + 2 * r->H) * 4))
        return rec->status;
    vis_rope_push pc = {r->n_tok, r->heads, hd, r->ld, r->grid_w, r->merge, r->H, 0, {0}};
    uint32_t dim = hd / 2; /* vision/attention.c's inverse frequencies, computed as it does */
    for (uint32_t i = 0; i < dim / 2; i++) pc.inv_freq[i] = 1.0f / powf(10000.0f, (float)(2 * i) / (float)dim);
    tmrt__vk_dispatch(rec, TMRT_VK_K_VIS_ROPE, &r->qkv, 1, &pc, sizeof pc,
                      tmrt__vk_div_up(pairs, tmrt__vk_spec(rec->vk, TMRT_VK_K_VIS_ROPE)[0]));
    return rec->status;
}

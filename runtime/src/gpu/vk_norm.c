/* vk_norm.c: RMS norm (rows, heads; fused residual add; the DeltaNet's
 * gated form) and L2 norm: one workgroup a group (shaders/rmsnorm.comp,
 * l2norm.comp). */
#include <string.h>
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"

/* Bytes the groups span: the last group's end. */
static uint64_t span(uint32_t n, uint32_t n_tok, uint32_t n_head, uint32_t ts, uint32_t hs) {
    return ((uint64_t)(n_tok - 1) * ts + (uint64_t)(n_head - 1) * hs + n) * 4;
}

static bool shape_ok(tmrt_vk_rec *rec, const char *op, uint32_t n, uint32_t n_tok, uint32_t n_head, uint32_t *ts,
                     uint32_t *hs) {
    if (!*hs) *hs = n;
    if (!*ts) *ts = n_head * *hs;
    if (n && n_tok && n_head && (uint64_t)n_tok * n_head <= UINT32_MAX) return true;
    tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: n %u, n_tok %u, n_head %u", op, n, n_tok, n_head);
    return false;
}

typedef struct rms_push {
    uint32_t n, n_head, n_groups, ts, hs, w_type, w_base, flags;
    float eps, w_offset;
    uint32_t n_rot, n_past;
    int32_t s[4];
    float scale_hi, scale_lo;
} rms_push;

tmem_status tmrt__vk_rmsnorm(tmrt_vk_rec *rec, const tmrt_vk_rmsnorm *r) {
    const char *op = "rmsnorm";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t ts = r->tok_stride, hs = r->head_stride;
    if (!shape_ok(rec, op, r->n, r->n_tok, r->n_head, &ts, &hs)) return rec->status;
    uint64_t bytes = span(r->n, r->n_tok, r->n_head, ts, hs);
    if (!tmrt__vk_need(rec, op, "x", r->x, bytes) || !tmrt__vk_need(rec, op, "out", r->out, bytes)) return rec->status;
    if ((r->add || r->gate) && !tmrt__vk_need(rec, op, "a", r->a, bytes)) return rec->status;
    if (r->add && !tmrt__vk_need(rec, op, "sum", r->sum, bytes)) return rec->status;
    rms_push pc = {r->n, r->n_head, r->n_tok * r->n_head, ts, hs, 0, 0, 0, r->eps, r->w_offset, 0, 0, {0}, 0, 0};
    pc.flags = (r->add ? 1u : 0u) | (r->w.buf.buffer ? 2u : 0u) | (r->gate ? 4u : 0u);
    tmrt_vk_buf pos = r->x, step = r->x;
    if (r->rope) {
        if (r->gate) return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: rope with the gated form", op);
        if (!tmrt__vk_rope_ok(rec, op, r->rope, r->n_tok, r->n)) return rec->status;
        pc.n_rot = r->rope->n_rot, pc.n_past = r->rope->n_past;
        tmrt__vk_rope_angles(r->rope, pc.s, &pc.scale_hi, &pc.scale_lo);
        pc.flags |= 8u | (r->rope->pos.buffer ? 16u : 0u) | (r->rope->step.buffer ? 32u : 0u);
        if (r->rope->pos.buffer) pos = r->rope->pos;
        if (r->rope->step.buffer) step = r->rope->step;
    }
    tmrt_vk_buf wb = r->x;
    if (r->w.buf.buffer) {
        if (r->w.n_in < r->n) {
            tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "rmsnorm: weight of %u for groups of %u", r->w.n_in, r->n);
            return rec->status;
        }
        if (!tmrt__vk_wvec(rec, op, "w", &r->w, &wb, &pc.w_base)) return rec->status;
        pc.w_type = r->w.type;
    }
    tmrt_vk_buf b[7] = {wb, r->x, r->out, (r->add || r->gate) ? r->a : r->x, r->add ? r->sum : r->x, pos, step};
    tmrt__vk_dispatch(rec, TMRT_VK_K_RMSNORM, b, 7, &pc, sizeof pc, pc.n_groups);
    return rec->status;
}

typedef struct l2_push {
    uint32_t n, n_head, n_groups, ts, hs, n_scaled;
    float eps, scale;
} l2_push;

tmem_status tmrt__vk_l2norm(tmrt_vk_rec *rec, const tmrt_vk_l2norm *l) {
    const char *op = "l2norm";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t ts = l->tok_stride, hs = l->head_stride;
    if (!shape_ok(rec, op, l->n, l->n_tok, l->n_head, &ts, &hs)) return rec->status;
    if (!tmrt__vk_need(rec, op, "x", l->x, span(l->n, l->n_tok, l->n_head, ts, hs))) return rec->status;
    l2_push pc = {l->n, l->n_head, l->n_tok * l->n_head, ts, hs, l->n_scaled, l->eps, l->scale};
    tmrt__vk_dispatch(rec, TMRT_VK_K_L2NORM, &l->x, 1, &pc, sizeof pc, pc.n_groups);
    return rec->status;
}

/* vk_rope.c: partial M-RoPE in place (shaders/rope.comp), one pair a
 * thread; theta_scale handed to the shader as a float-float so the angles
 * are the CPU's (rope.c computes them in double). */
#include <math.h>
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"

typedef struct rope_push {
    uint32_t n_tok, n_head, ts, hs, n_rot, flags, n_past;
    int32_t s[4];
    float scale_hi, scale_lo;
} rope_push;

tmem_status tmrt__vk_rope(tmrt_vk_rec *rec, const tmrt_vk_rope *r) {
    const char *op = "rope";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint64_t pairs = (uint64_t)r->n_tok * r->n_head * (r->n_rot / 2);
    if (!pairs || r->n_rot % 2 || pairs > UINT32_MAX || r->n_rot > r->head_stride || !(r->freq_base > 0))
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u tokens x %u heads, n_rot %u, head stride %u", op,
                                 r->n_tok, r->n_head, r->n_rot, r->head_stride);
    uint32_t ts = r->tok_stride ? r->tok_stride : r->n_head * r->head_stride;
    uint64_t bytes = ((uint64_t)(r->n_tok - 1) * ts + (uint64_t)(r->n_head - 1) * r->head_stride + r->n_rot) * 4;
    if (!tmrt__vk_need(rec, op, "x", r->x, bytes)) return rec->status;
    if (r->pos.buffer && !tmrt__vk_need(rec, op, "pos", r->pos, (uint64_t)r->n_tok * 16)) return rec->status;
    if (r->step.buffer && !tmrt__vk_need(rec, op, "step", r->step, 4)) return rec->status;
    double scale = pow((double)r->freq_base, -2.0 / (double)r->n_rot);
    float hi = (float)scale;
    rope_push pc = {r->n_tok, r->n_head, ts, r->head_stride, r->n_rot, 0, r->n_past,
                    {r->sections[0], r->sections[1], r->sections[2], r->sections[3]}, hi, (float)(scale - hi)};
    pc.flags = (r->pos.buffer ? 1u : 0u) | (r->step.buffer ? 2u : 0u);
    tmrt_vk_buf b[3] = {r->x, r->pos.buffer ? r->pos : r->x, r->step.buffer ? r->step : r->x};
    tmrt__vk_dispatch(rec, TMRT_VK_K_ROPE, b, 3, &pc, sizeof pc,
                      tmrt__vk_div_up(pairs, tmrt__vk_spec(rec->vk, TMRT_VK_K_ROPE)[0]));
    return rec->status;
}

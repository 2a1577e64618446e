/* vk_rope.c: partial M-RoPE in place (shaders/rope.comp), one pair a
 * thread; theta_scale handed to the shader as a float-float so the angles
 * are the CPU's (rope.c computes them in double). */
#include <math.h>
#include <string.h>
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"

typedef struct rope_push {
    uint32_t n_tok, n_head, ts, hs, n_rot, flags, n_past;
    int32_t s[4];
    float scale_hi, scale_lo;
} rope_push;

void tmrt__vk_rope_angles(const tmrt_vk_rope *r, int32_t s[4], float *hi, float *lo) {
    double scale = pow((double)r->freq_base, -2.0 / (double)r->n_rot);
    *hi = (float)scale;
    *lo = (float)(scale - *hi);
    memcpy(s, r->sections, 4 * sizeof *s);
}

bool tmrt__vk_rope_ok(tmrt_vk_rec *rec, const char *op, const tmrt_vk_rope *r, uint32_t n_tok, uint32_t head_len) {
    if (!r->n_rot || r->n_rot % 2 || r->n_rot > head_len || !(r->freq_base > 0)) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: n_rot %u (even, <= %u), freq_base %g", op, r->n_rot,
                          head_len, (double)r->freq_base);
        return false;
    }
    if (r->pos.buffer && !tmrt__vk_need(rec, op, "pos", r->pos, (uint64_t)n_tok * 16)) return false;
    return !r->step.buffer || tmrt__vk_need(rec, op, "step", r->step, 4);
}

tmem_status tmrt__vk_rope(tmrt_vk_rec *rec, const tmrt_vk_rope *r) {
    const char *op = "rope";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint64_t pairs = (uint64_t)r->n_tok * r->n_head * (r->n_rot / 2);
    if (!pairs || pairs > UINT32_MAX)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u tokens x %u heads, n_rot %u", op, r->n_tok,
                                 r->n_head, r->n_rot);
    if (!tmrt__vk_rope_ok(rec, op, r, r->n_tok, r->head_stride)) return rec->status;
    uint32_t ts = r->tok_stride ? r->tok_stride : r->n_head * r->head_stride;
    uint64_t bytes = ((uint64_t)(r->n_tok - 1) * ts + (uint64_t)(r->n_head - 1) * r->head_stride + r->n_rot) * 4;
    if (!tmrt__vk_need(rec, op, "x", r->x, bytes)) return rec->status;
    rope_push pc = {r->n_tok, r->n_head, ts, r->head_stride, r->n_rot, 0, r->n_past, {0}, 0, 0};
    tmrt__vk_rope_angles(r, pc.s, &pc.scale_hi, &pc.scale_lo);
    pc.flags = (r->pos.buffer ? 1u : 0u) | (r->step.buffer ? 2u : 0u);
    tmrt_vk_buf b[3] = {r->x, r->pos.buffer ? r->pos : r->x, r->step.buffer ? r->step : r->x};
    tmrt__vk_dispatch(rec, TMRT_VK_K_ROPE, b, 3, &pc, sizeof pc,
                      tmrt__vk_div_up(pairs, tmrt__vk_spec(rec->vk, TMRT_VK_K_ROPE)[0]));
    return rec->status;
}

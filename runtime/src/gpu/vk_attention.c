/* vk_attention.c: causal GQA attention over the paged KV cache
 * (shaders/attention.comp: an online softmax per tile of keys, the key
 * range optionally split over workgroups; attn_combine.comp merges the
 * splits). */
#include <math.h>
#include "gpu/vk_internal.h"
#include "gpu/vk_attention.h"
#include "gpu/vk_kv.h"
#include "gpu/vk_weights.h"

#define MAX_R 8u
#define MAX_HD 256u

typedef struct attn_push {
    uint32_t n_tok, n_head, n_kv, hd, qts, qhs, ots, ohs, gts, ghs;
    uint32_t layer, block_tokens, row_bytes, block_bytes, per_buf;
    uint32_t n_split, qt, flags, n_past;
    float scale;
} attn_push;

uint64_t tmrt__vk_attention_scratch_bytes(uint32_t n_tok, uint32_t n_head, uint32_t head_dim, uint32_t n_split) {
    return n_split > 1 ? (uint64_t)n_split * n_tok * n_head * (head_dim + 2) * 4 : 0;
}

uint32_t tmrt__vk_attention_splits(uint32_t max_keys, uint32_t n_tok) {
    if (n_tok > 8) return 1;
    uint32_t s = (max_keys + 127) / 128; /* a tile of keys a workgroup */
    return s < 1 ? 1 : (s > 32 ? 32 : s);
}

uint64_t tmrt__vk_attention_grid(uint32_t n_tok, uint32_t n_head, uint32_t n_kv, uint32_t n_split, uint32_t *qt) {
    uint32_t G = n_head / n_kv, GS = G < MAX_R ? G : MAX_R, n_gc = (G + GS - 1) / GS;
    *qt = MAX_R / GS;
    return tmrt__vk_div_up(n_tok, *qt) * n_kv * n_gc * n_split;
}

void tmrt__vk_attention_combine(tmrt_vk_rec *rec, tmrt_vk_buf scratch, tmrt_vk_buf out, tmrt_vk_buf gate,
                                const uint32_t push[9]) {
    tmrt__vk_barrier(rec);
    tmrt_vk_buf cb[3] = {scratch, out, gate};
    tmrt__vk_dispatch(rec, TMRT_VK_K_ATTN_COMBINE, cb, 3, push, 9 * sizeof *push, (uint64_t)push[0] * push[1]);
}

uint64_t tmrt__vk_attention_span(uint32_t n_tok, uint32_t n_head, uint32_t ts, uint32_t hs, uint32_t hd) {
    return ((uint64_t)(n_tok - 1) * ts + (uint64_t)(n_head - 1) * hs + hd) * 4;
}

static bool args_ok(tmrt_vk_rec *rec, const tmrt_vk_attention *a, attn_push *pc) {
    const char *op = "attention";
    uint32_t H = a->n_head, hd = a->head_dim;
    if (!a->n_tok || !H || !a->n_head_kv || H % a->n_head_kv || hd % 2 || !hd || hd > MAX_HD || a->n_split > 64) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u tokens, %u heads / %u KV heads, head_dim %u (even, <= %u), "
                          "%u splits", op, a->n_tok, H, a->n_head_kv, hd, MAX_HD, a->n_split);
        return false;
    }
    if (!tmrt__vk_kv_ok(rec, op, &a->kv, a->n_head_kv * hd)) return false;
    if (!tmrt__vk_need(rec, op, "q", a->q, tmrt__vk_attention_span(a->n_tok, H, pc->qts, pc->qhs, hd)) ||
        !tmrt__vk_need(rec, op, "out", a->out, tmrt__vk_attention_span(a->n_tok, H, pc->ots, pc->ohs, hd)))
        return false;
    if (a->gate.buffer &&
        !tmrt__vk_need(rec, op, "gate", a->gate, tmrt__vk_attention_span(a->n_tok, H, pc->gts, pc->ghs, hd)))
        return false;
    if (a->step.buffer && !tmrt__vk_need(rec, op, "step", a->step, 4)) return false;
    uint64_t sb = tmrt__vk_attention_scratch_bytes(a->n_tok, H, hd, pc->n_split);
    return !sb || tmrt__vk_need(rec, op, "scratch", a->scratch, sb);
}

tmem_status tmrt__vk_attention(tmrt_vk_rec *rec, const tmrt_vk_attention *a) {
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t H = a->n_head, hd = a->head_dim;
    const tmrt_vk_kv *kv = &a->kv;
    attn_push pc = {a->n_tok, H, a->n_head_kv, hd, a->q_ts ? a->q_ts : H * hd, a->q_hs ? a->q_hs : hd,
                    a->out_ts ? a->out_ts : H * hd, a->out_hs ? a->out_hs : hd, a->gate_ts ? a->gate_ts : H * hd,
                    a->gate_hs ? a->gate_hs : hd, a->layer, kv->block_tokens, kv->row_bytes, kv->block_bytes,
                    kv->blocks_per_buf, a->n_split ? a->n_split : 1, 1,
                    (a->step.buffer ? 1u : 0u) | (kv->f32 ? 2u : 0u) | (a->gate.buffer ? 4u : 0u), a->n_past,
                    a->scale > 0 ? a->scale : 1.0f / sqrtf((float)hd)};
    if (!args_ok(rec, a, &pc)) return rec->status;
    uint32_t head_bytes = hd * (kv->f32 ? 4 : 2);
    bool vec = kv->row_bytes % 16 == 0 && kv->block_bytes % 16 == 0 && head_bytes % 16 == 0;
    for (uint32_t i = 0; i < kv->n_pool; i++) vec = vec && kv->pool[i].offset % 16 == 0;
    if (vec) pc.flags |= 8u; /* K rows read 16 bytes at a time */
    uint64_t groups = tmrt__vk_attention_grid(a->n_tok, H, a->n_head_kv, pc.n_split, &pc.qt);
    tmrt_vk_buf none = a->q;
    tmrt_vk_buf b[10] = {a->q, a->out, a->gate.buffer ? a->gate : none, pc.n_split > 1 ? a->scratch : none,
                         a->step.buffer ? a->step : none};
    tmrt__vk_kv_bind(kv, b + 5);
    tmrt__vk_dispatch(rec, TMRT_VK_K_ATTENTION, b, 10, &pc, sizeof pc, groups);
    if (pc.n_split > 1) {
        uint32_t cp[9] = {a->n_tok, H, hd, pc.n_split, pc.ots, pc.ohs, pc.gts, pc.ghs, pc.flags & 4u};
        tmrt__vk_attention_combine(rec, a->scratch, a->out, a->gate.buffer ? a->gate : none, cp);
    }
    return rec->status;
}

/* vk_attention_dense.c: non-causal attention over plain f32 K/V rows (the
 * vision encoder's: every query sees every key; shaders/attention_dense.comp,
 * the body of the paged attention, the same key splits and merge). */
#include <math.h>
#include "gpu/vk_attention.h"
#include "gpu/vk_internal.h"
#include "gpu/vk_weights.h"

#define MAX_HD 256u

typedef struct dense_push {
    uint32_t n_tok, n_head, n_kv, hd, qts, qhs, ots, ohs, gts, ghs;
    uint32_t kts, khs, vts, vhs, n_keys;
    uint32_t n_split, qt, flags, n_past;
    float scale;
} dense_push;

static uint32_t or_(uint32_t v, uint32_t d) { return v ? v : d; }

tmem_status tmrt__vk_attention_dense(tmrt_vk_rec *rec, const tmrt_vk_attention_dense *a) {
    const char *op = "attention_dense";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t H = a->n_head, Hkv = a->n_head_kv, hd = a->head_dim;
    if (!a->n_tok || !a->n_keys || !H || !Hkv || H % Hkv || !hd || hd > MAX_HD || a->n_split > 64)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u queries, %u keys, %u / %u heads, head_dim %u", op,
                                 a->n_tok, a->n_keys, H, Hkv, hd);
    dense_push pc = {a->n_tok, H, Hkv, hd, or_(a->q_ts, H * hd), or_(a->q_hs, hd), or_(a->out_ts, H * hd),
                     or_(a->out_hs, hd), or_(a->gate_ts, H * hd), or_(a->gate_hs, hd), or_(a->k_ts, Hkv * hd),
                     or_(a->k_hs, hd), or_(a->v_ts, Hkv * hd), or_(a->v_hs, hd), a->n_keys, or_(a->n_split, 1), 1,
                     2u | (a->gate.buffer ? 4u : 0u), 0, a->scale > 0 ? a->scale : 1.0f / sqrtf((float)hd)};
    if (!tmrt__vk_need(rec, op, "q", a->q, tmrt__vk_attention_span(a->n_tok, H, pc.qts, pc.qhs, hd)) ||
        !tmrt__vk_need(rec, op, "out", a->out, tmrt__vk_attention_span(a->n_tok, H, pc.ots, pc.ohs, hd)) ||
        !tmrt__vk_need(rec, op, "k", a->k, tmrt__vk_attention_span(a->n_keys, Hkv, pc.kts, pc.khs, hd)) ||
        !tmrt__vk_need(rec, op, "v", a->v, tmrt__vk_attention_span(a->n_keys, Hkv, pc.vts, pc.vhs, hd)) ||
        (a->gate.buffer &&
         !tmrt__vk_need(rec, op, "gate", a->gate, tmrt__vk_attention_span(a->n_tok, H, pc.gts, pc.ghs, hd))))
        return rec->status;
    uint64_t sb = tmrt__vk_attention_scratch_bytes(a->n_tok, H, hd, pc.n_split);
    if (sb && !tmrt__vk_need(rec, op, "scratch", a->scratch, sb)) return rec->status;
    if (hd % 4 == 0 && pc.kts % 4 == 0 && pc.khs % 4 == 0 && a->k.offset % 16 == 0) pc.flags |= 8u;
    uint64_t groups = tmrt__vk_attention_grid(a->n_tok, H, Hkv, pc.n_split, &pc.qt);
    tmrt_vk_buf none = a->q;
    tmrt_vk_buf b[6] = {a->q, a->out, a->gate.buffer ? a->gate : none, sb ? a->scratch : none, a->k, a->v};
    tmrt__vk_dispatch(rec, TMRT_VK_K_ATTENTION_DENSE, b, 6, &pc, sizeof pc, groups);
    if (pc.n_split > 1) {
        uint32_t cp[9] = {a->n_tok, H, hd, pc.n_split, pc.ots, pc.ohs, pc.gts, pc.ghs, pc.flags & 4u};
        tmrt__vk_attention_combine(rec, a->scratch, a->out, none, cp);
    }
    return rec->status;
}

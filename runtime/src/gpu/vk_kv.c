/* vk_kv.c: the paged KV cache as bindings (the pool split over up to four
 * buffers, the block table) and the store of new K/V rows
 * (shaders/kv_store.comp, one 32-bit word a thread). */
#include "gpu/vk_internal.h"
#include "gpu/vk_kv.h"
#include "gpu/vk_weights.h"

bool tmrt__vk_kv_ok(tmrt_vk_rec *rec, const char *op, const tmrt_vk_kv *kv, uint32_t dim) {
    uint32_t esz = kv->f32 ? 4 : 2;
    if (!kv->n_pool || kv->n_pool > TMRT_VK_KV_MAX_POOL || !kv->blocks_per_buf || !kv->block_tokens ||
        kv->row_bytes < dim * esz || kv->row_bytes % 4 || kv->block_bytes % 4 ||
        kv->block_bytes < 2ull * kv->block_tokens * kv->row_bytes) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG,
                          "%s: KV pool of %u buffers x %u blocks, block %u tokens of %u bytes a row (%u a block), "
                          "rows of %u elements",
                          op, kv->n_pool, kv->blocks_per_buf, kv->block_tokens, kv->row_bytes, kv->block_bytes, dim);
        return false;
    }
    for (uint32_t i = 0; i < kv->n_pool; i++)
        if (!tmrt__vk_buf_ok(rec, op, "KV pool", kv->pool[i])) return false;
    return tmrt__vk_buf_ok(rec, op, "block table", kv->table);
}

void tmrt__vk_kv_bind(const tmrt_vk_kv *kv, tmrt_vk_buf *b) {
    b[0] = kv->table;
    for (uint32_t i = 0; i < TMRT_VK_KV_MAX_POOL; i++) b[1 + i] = kv->pool[i < kv->n_pool ? i : 0];
}

typedef struct store_push {
    uint32_t n_tok, dim, ld_k, ld_v, layer, block_tokens, row_bytes, block_bytes, per_buf, flags, n_past;
} store_push;

tmem_status tmrt__vk_kv_store(tmrt_vk_rec *rec, const tmrt_vk_kv_store *s) {
    const char *op = "kv_store";
    if (!tmrt__vk_rec_ok(rec)) return rec->status;
    uint32_t ld_k = s->ld_k ? s->ld_k : s->dim, ld_v = s->ld_v ? s->ld_v : s->dim;
    if (!s->n_tok || !s->dim || (!s->kv.f32 && s->dim % 2) || ld_k < s->dim || ld_v < s->dim)
        return tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u tokens of %u (even for f16)", op, s->n_tok, s->dim);
    if (!tmrt__vk_kv_ok(rec, op, &s->kv, s->dim)) return rec->status;
    uint64_t kb = ((uint64_t)(s->n_tok - 1) * ld_k + s->dim) * 4, vb = ((uint64_t)(s->n_tok - 1) * ld_v + s->dim) * 4;
    if (!tmrt__vk_need(rec, op, "k", s->k, kb) || !tmrt__vk_need(rec, op, "v", s->v, vb)) return rec->status;
    if (s->step.buffer && !tmrt__vk_need(rec, op, "step", s->step, 4)) return rec->status;
    const tmrt_vk_kv *kv = &s->kv;
    store_push pc = {s->n_tok, s->dim, ld_k, ld_v, s->layer, kv->block_tokens, kv->row_bytes, kv->block_bytes,
                     kv->blocks_per_buf, (s->step.buffer ? 1u : 0u) | (kv->f32 ? 2u : 0u), s->n_past};
    tmrt_vk_buf b[8] = {s->k, s->v, s->step.buffer ? s->step : s->k};
    tmrt__vk_kv_bind(kv, b + 3);
    uint64_t words = (uint64_t)s->n_tok * 2 * (kv->f32 ? s->dim : s->dim / 2);
    tmrt__vk_dispatch(rec, TMRT_VK_K_KV_STORE, b, 8, &pc, sizeof pc,
                      tmrt__vk_div_up(words, tmrt__vk_spec(rec->vk, TMRT_VK_K_KV_STORE)[0]));
    return rec->status;
}

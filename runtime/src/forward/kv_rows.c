/* kv_rows.c: the address of a token's K and V rows. Typed and naive modes
 * share the paged cache's block layout (kv.h): block b holds block_tokens
 * tokens of every attention layer, for layer l its K rows then its V rows.
 * Typed blocks come from the sequence's block table, naive ones are the
 * consecutive blocks of one max-length buffer. */
#include "rt_internal.h"

void tmrt__kv_rows(const tmrt_kv_view *kv, uint32_t l, uint32_t t, void **k, void **v) {
    uint32_t b = t / kv->block_tokens, in = t % kv->block_tokens;
    uint8_t *block = kv->flat ? (uint8_t *)kv->flat + (size_t)b * kv->block_bytes
                              : tmem_kv_block_ptr(kv->cache, kv->block_ids[b]);
    uint8_t *kr = block + ((size_t)l * 2 * kv->block_tokens + in) * kv->row_bytes;
    *k = kr;
    *v = kr + (size_t)kv->block_tokens * kv->row_bytes;
}

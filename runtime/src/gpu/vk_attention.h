/* vk_attention.h: what the two attention ops share (vk_attention.c,
 * vk_attention_dense.c): the grid of attn_core.glsl and the merge of the
 * key splits. */
#ifndef TMRT_VK_ATTENTION_H
#define TMRT_VK_ATTENTION_H

#include "gpu/vk_ops.h"

/* Workgroups of an attention kernel (token tiles x KV heads x query-head
 * groups of 8 x splits); *qt the tokens a tile holds. */
uint64_t tmrt__vk_attention_grid(uint32_t n_tok, uint32_t n_head, uint32_t n_kv, uint32_t n_split, uint32_t *qt);
/* The barrier and attn_combine.comp over the splits; push = {n_tok, n_head,
 * head_dim, n_split, out_ts, out_hs, gate_ts, gate_hs, gate flag (4)}. */
void tmrt__vk_attention_combine(tmrt_vk_rec *rec, tmrt_vk_buf scratch, tmrt_vk_buf out, tmrt_vk_buf gate,
                                const uint32_t push[9]);
/* Bytes of rows (t, h) at t*ts + h*hs of hd floats. */
uint64_t tmrt__vk_attention_span(uint32_t n_tok, uint32_t n_head, uint32_t ts, uint32_t hs, uint32_t hd);

#endif /* TMRT_VK_ATTENTION_H */

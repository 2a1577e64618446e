/* vk_kv.h: the paged KV cache as bindings, for the ops that read or write
 * it (vk_kv.c, vk_attention.c). */
#ifndef TMRT_VK_KV_H
#define TMRT_VK_KV_H

#include "gpu/vk_ops.h"

/* The pool and table are valid bindings and the layout holds rows of dim
 * elements; else the recorder's error names op. */
bool tmrt__vk_kv_ok(tmrt_vk_rec *rec, const char *op, const tmrt_vk_kv *kv, uint32_t dim);
/* b[0] = table, b[1..4] = the pool buffers (the first repeated past n_pool). */
void tmrt__vk_kv_bind(const tmrt_vk_kv *kv, tmrt_vk_buf *b);

#endif /* TMRT_VK_KV_H */

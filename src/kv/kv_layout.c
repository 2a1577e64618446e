/* KV and recurrent-state layouts: bytes per token, block and sequence.
 * Pure arithmetic, overflow-checked; the fit calculator calls the same
 * functions, so predicted and allocated sizes cannot drift apart. */
#include "typedmem/kv.h"
#include "core/internal.h"
#include "kv/kv_internal.h"

const char *tmem_kv_dtype_name(tmem_kv_dtype dtype) {
    switch (dtype) {
    case TMEM_KV_DTYPE_DEFAULT: return "default";
    case TMEM_KV_DTYPE_F16: return "f16";
    case TMEM_KV_DTYPE_BF16: return "bf16";
    case TMEM_KV_DTYPE_F32: return "f32";
    case TMEM_KV_DTYPE_Q8_0: return "q8_0";
    default: return "?";
    }
}

/* q8_0 (ggml): blocks of 32 int8 values sharing one f16 scale = 34 bytes. */
#define Q8_0_BLOCK 32u
#define Q8_0_BYTES 34u

/* *out is 0 on failure, so no caller reads an unset value. */
static tmem_status dtype_bytes(tmem_kv_dtype dtype, uint64_t elements, uint64_t *out) {
    uint64_t per;
    *out = 0;
    switch (dtype) {
    case TMEM_KV_DTYPE_DEFAULT:
    case TMEM_KV_DTYPE_F16:
    case TMEM_KV_DTYPE_BF16: per = 2; break;
    case TMEM_KV_DTYPE_F32: per = 4; break;
    case TMEM_KV_DTYPE_Q8_0:
        if (elements % Q8_0_BLOCK) return tmem__err(TMEM_E_INVALID_ARG);
        if (elements / Q8_0_BLOCK > UINT64_MAX / Q8_0_BYTES) return tmem__err(TMEM_E_OVERFLOW);
        *out = elements / Q8_0_BLOCK * Q8_0_BYTES;
        return TMEM_OK;
    default: return tmem__err(TMEM_E_INVALID_ARG);
    }
    if (tmem__mul_overflow(elements, per, out)) return tmem__err(TMEM_E_OVERFLOW);
    return TMEM_OK;
}

tmem_status tmem_kv_dtype_bytes(tmem_kv_dtype dtype, uint64_t elements, uint64_t *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = 0;
    uint64_t r = 0;
    tmem_status st = dtype_bytes(dtype, elements, &r);
    if (st == TMEM_OK) *out = r;
    return st;
}

tmem_status tmem__kv_row_bytes(const tmem_kv_layout *l, uint64_t *out) {
    *out = 0; /* on every failure: callers never read an unset value */
    if (!l || !l->layers || !l->kv_heads || !l->head_dim) return tmem__err(TMEM_E_INVALID_ARG);
    /* q8_0 quantises each head's row on its own: head_dim must be whole blocks. */
    uint64_t head;
    tmem_status st = dtype_bytes(l->dtype, l->head_dim, &head);
    if (st != TMEM_OK) return st;
    if (tmem__mul_overflow(head, l->kv_heads, out)) return tmem__err(TMEM_E_OVERFLOW);
    return TMEM_OK;
}

uint32_t tmem__kv_block_tokens(const tmem_kv_layout *l) {
    return l->block_tokens ? l->block_tokens : TMEM_KV_DEFAULT_BLOCK_TOKENS;
}

tmem_status tmem_kv_layout_token_bytes(const tmem_kv_layout *layout, uint64_t *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = 0;
    uint64_t row, r;
    tmem_status st = tmem__kv_row_bytes(layout, &row);
    if (st != TMEM_OK) return st;
    /* K and V rows per layer */
    if (tmem__mul_overflow(row, 2, &r) || tmem__mul_overflow(r, layout->layers, &r)) return tmem__err(TMEM_E_OVERFLOW);
    *out = r;
    return TMEM_OK;
}

tmem_status tmem_kv_layout_block_bytes(const tmem_kv_layout *layout, uint64_t *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = 0;
    uint64_t tok, r;
    tmem_status st = tmem_kv_layout_token_bytes(layout, &tok);
    if (st != TMEM_OK) return st;
    if (tmem__mul_overflow(tok, tmem__kv_block_tokens(layout), &r)) return tmem__err(TMEM_E_OVERFLOW);
    *out = r;
    return TMEM_OK;
}

tmem_status tmem_kv_layout_bytes(const tmem_kv_layout *layout, uint64_t tokens, uint64_t *blocks, uint64_t *bytes) {
    if (blocks) *blocks = 0;
    if (bytes) *bytes = 0;
    uint64_t bb, r;
    tmem_status st = tmem_kv_layout_block_bytes(layout, &bb);
    if (st != TMEM_OK) return st;
    uint64_t bt = tmem__kv_block_tokens(layout);
    uint64_t n = tokens / bt + (tokens % bt != 0);
    if (tmem__mul_overflow(n, bb, &r)) return tmem__err(TMEM_E_OVERFLOW);
    if (blocks) *blocks = n;
    if (bytes) *bytes = r;
    return TMEM_OK;
}

tmem_status tmem_recurrent_layout_sizes(const tmem_recurrent_layout *l, tmem_recurrent_sizes *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = (tmem_recurrent_sizes){0};
    if (!l || !l->layers || !l->key_heads || !l->value_heads || !l->key_dim || !l->value_dim)
        return tmem__err(TMEM_E_INVALID_ARG);
    /* f32 by default: llama.cpp keeps recurrent state in f32 (r_s/s_l tensors). */
    tmem_kv_dtype dt = l->dtype == TMEM_KV_DTYPE_DEFAULT ? TMEM_KV_DTYPE_F32 : l->dtype;
    uint64_t a, b, ch, conv_el, ssm_el, conv, ssm, layer, total;
    if (l->conv_channels) {
        ch = l->conv_channels;
    } else {
        /* the conv runs over the q, k and v projections */
        if (tmem__mul_overflow((uint64_t)l->key_heads, l->key_dim, &a) || tmem__mul_overflow(a, 2, &a) ||
            tmem__mul_overflow((uint64_t)l->value_heads, l->value_dim, &b) || tmem__add_overflow(a, b, &ch))
            return tmem__err(TMEM_E_OVERFLOW);
    }
    uint64_t cols = l->conv_kernel > 1 ? l->conv_kernel - 1u : 0;
    if (tmem__mul_overflow(cols, ch, &conv_el)) return tmem__err(TMEM_E_OVERFLOW);
    /* one key_dim x value_dim delta-rule matrix per value head */
    if (tmem__mul_overflow((uint64_t)l->value_heads, l->key_dim, &a) || tmem__mul_overflow(a, l->value_dim, &ssm_el))
        return tmem__err(TMEM_E_OVERFLOW);
    tmem_status st = dtype_bytes(dt, conv_el, &conv);
    if (st == TMEM_OK) st = dtype_bytes(dt, ssm_el, &ssm);
    if (st != TMEM_OK) return st;
    if (tmem__add_overflow(conv, ssm, &layer) || tmem__mul_overflow(layer, l->layers, &total))
        return tmem__err(TMEM_E_OVERFLOW);
    out->conv_bytes = conv;
    out->ssm_bytes = ssm;
    out->layer_bytes = layer;
    out->total_bytes = total;
    return TMEM_OK;
}

tmem_status tmem_recurrent_layout_bytes(const tmem_recurrent_layout *layout, uint64_t *out) {
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_recurrent_sizes s;
    tmem_status st = tmem_recurrent_layout_sizes(layout, &s);
    *out = st == TMEM_OK ? s.total_bytes : 0;
    return st;
}

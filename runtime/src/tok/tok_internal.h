/* tok_internal.h: the tokenizer's tables and the helpers its files share.
 *
 * Layout (see tokenizer.h, Memory): token i's bytes are
 * strings[off(i) .. off(i + 1) - 8), because a GGUF string array stores each
 * element as a u64 length followed by the bytes, back to back; the load
 * checks that this holds for every element. index[i] packs off(i) in its
 * low 28 bits and the token type in the high 4. Merge k packs its left,
 * right and result ids in 21 bits each. The pair table maps (left, right)
 * to k + 1 by open addressing (linear probing, multiply-shift bucket,
 * fingerprinted slots: tok_slot). */
#ifndef TMRT_TOK_INTERNAL_H
#define TMRT_TOK_INTERNAL_H

#include <stdio.h>
#include "tmemrt/tokenizer.h"

#define TOK_ID_BITS 21
#define TOK_ID_MASK ((1u << TOK_ID_BITS) - 1)
#define TOK_MAX_VOCAB TOK_ID_MASK            /* ids 0 .. 2^21 - 2 */
#define TOK_OFF_BITS 28
#define TOK_OFF_MASK ((1u << TOK_OFF_BITS) - 1)
#define TOK_STR_PREFIX 8u                    /* GGUF string length prefix */
#define TOK_NONE UINT32_MAX
#define TOK_MAX_EOG 8
#define TOK_SHORT_PIECE 256                  /* pieces up to this use the stack */

struct tmrt_tokenizer {
    tmem_heap *tables;           /* LINEAR, everything below */
    tmem_heap *scratch;          /* GENERAL, THREAD_SAFE: long pieces, chat text */
    const char *strings;         /* first token's bytes (mapped, or the copy) */
    const uint32_t *index;       /* n_vocab + 1 entries */
    const uint64_t *merges;      /* n_merges */
    const uint32_t *pair_slots;  /* pair_cap entries: tok_slot(rank + 1, hash), 0 = empty */
    uint32_t pair_cap;
    const uint32_t *specials;    /* ids, longest text first */
    uint8_t special_first[32];   /* bitmap of the specials' first bytes */
    int32_t byte_token[256];
    int32_t eog[TOK_MAX_EOG];
    uint32_t n_eog;
    tmrt_tokenizer_info info;
};

static inline uint32_t tok_off(const tmrt_tokenizer *t, uint32_t id) { return t->index[id] & TOK_OFF_MASK; }
static inline tmrt_token_type tok_type(const tmrt_tokenizer *t, uint32_t id) {
    return (tmrt_token_type)(t->index[id] >> TOK_OFF_BITS);
}
static inline const char *tok_str(const tmrt_tokenizer *t, uint32_t id, uint32_t *len) {
    uint32_t a = tok_off(t, id);
    *len = tok_off(t, id + 1) - TOK_STR_PREFIX - a;
    return t->strings + a;
}

static inline uint32_t merge_left(uint64_t m) { return (uint32_t)(m & TOK_ID_MASK); }
static inline uint32_t merge_right(uint64_t m) { return (uint32_t)(m >> TOK_ID_BITS & TOK_ID_MASK); }
static inline uint32_t merge_result(uint64_t m) { return (uint32_t)(m >> (2 * TOK_ID_BITS) & TOK_ID_MASK); }
static inline uint64_t merge_pack(uint32_t l, uint32_t r, uint32_t res) {
    return (uint64_t)l | (uint64_t)r << TOK_ID_BITS | (uint64_t)res << (2 * TOK_ID_BITS);
}

/* A 32-bit mix of a token pair, and the bucket of a hash in a table of cap slots. */
static inline uint32_t tok_pair_hash(uint32_t l, uint32_t r) {
    uint64_t x = ((uint64_t)l << 32 | r) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(x >> 32) ^ (uint32_t)x;
}
static inline uint32_t tok_bucket(uint32_t h, uint32_t cap) { return (uint32_t)(((uint64_t)h * cap) >> 32); }

/* A hash-table slot: a 21-bit value (id or rank, + 1 so 0 means empty) and
 * 11 bits of the key's hash, so a probe that meets another key is rejected
 * without reading that key (a cache miss saved per collision). The bucket
 * uses the hash's high bits, the fingerprint its low ones. */
#define TOK_FP_SHIFT TOK_ID_BITS
static inline uint32_t tok_slot(uint32_t v, uint32_t h) { return v | (h & 0x7FFu) << TOK_FP_SHIFT; }
static inline uint32_t tok_slot_value(uint32_t s) { return s & TOK_ID_MASK; }
static inline bool tok_slot_fp_is(uint32_t s, uint32_t h) { return (s >> TOK_FP_SHIFT) == (h & 0x7FFu); }

/* GPT-2's bytes_to_unicode: bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand
 * for themselves; the other 68 bytes, in order, for U+0100 + k. */
static inline uint32_t tok_byte_to_cp(uint8_t b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    uint32_t k = b <= 0x20 ? b : b <= 0xA0 ? 33u + (b - 0x7Fu) : 67u;
    return 0x100 + k;
}
/* The inverse: the byte for a code point, or -1 if none stands for it. */
static inline int tok_cp_to_byte(uint32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF)) return (int)cp;
    if (cp < 0x100 || cp >= 0x100 + 68) return -1;
    uint32_t k = cp - 0x100;
    return k < 33 ? (int)k : k < 67 ? (int)(0x7F + k - 33) : 0xAD;
}

/* Output cursor of an encode: ids written up to cap, n counts them all. */
typedef struct tok_out {
    int32_t *ids;
    size_t cap;
    size_t n;
} tok_out;
static inline void tok_emit(tok_out *o, int32_t id) {
    if (o->n < o->cap) o->ids[o->n] = id;
    o->n++;
}

/* tok_pretok.c: end of the pre-token that starts at s[pos] (pos < len). */
size_t tmrt__pretok_next(tmrt_pretok kind, const uint8_t *s, size_t len, size_t pos);

/* tok_bpe.c: rank of the merge of (l, r), TOK_NONE if none. */
uint32_t tmrt__bpe_rank(const tmrt_tokenizer *t, uint32_t l, uint32_t r);
/* tok_bpe.c: BPE-merge one pre-token and emit its ids. */
tmem_status tmrt__bpe_piece(const tmrt_tokenizer *t, const uint8_t *s, size_t len, tok_out *o);

/* tok_encode.c: encode text with no template around it. */
tmem_status tmrt__encode(const tmrt_tokenizer *t, const uint8_t *s, size_t len, uint32_t flags, tok_out *o);

#endif /* TMRT_TOK_INTERNAL_H */

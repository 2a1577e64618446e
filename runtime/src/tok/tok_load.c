/* tok_load.c: tokenizer.ggml.* metadata -> the in-place tables.
 *
 * Order: check every key's presence and type, count what the tables need
 * (one LINEAR heap, sized exactly up front), index the token strings where
 * they lie in the mapping, build a temporary string -> id table in a scratch
 * heap, resolve the byte tokens and every merge to ids, then drop the
 * temporary table. Every failure names the key and element. */
#include <stdlib.h>
#include <string.h>
#include "tok/tok_internal.h"
#include "tok/unicode.h"
#include "util/fail.h"

#define K_MODEL "tokenizer.ggml.model"
#define K_PRE "tokenizer.ggml.pre"
#define K_TOKENS "tokenizer.ggml.tokens"
#define K_TYPES "tokenizer.ggml.token_type"
#define K_MERGES "tokenizer.ggml.merges"
#define DEFAULT_SCRATCH (16ull << 20)
#define SCRATCH_CHUNK (64ull << 10)   /* a GENERAL heap's commit chunk (docs/heap.md) */
#define ALLOC_SLACK 64u

typedef struct loader {
    tmem_context *ctx;
    const tmem_gguf *g;
    tmrt_error *err;
    uint32_t flags;
    tmem_type *type, *scratch_type;
    tmem_role role;
    tmrt_pretok pretok;
    uint64_t scratch_bytes;
    uint64_t tokens_kv, types_kv, merges_kv;
    bool have_types;
    uint32_t n_vocab;
    uint64_t n_merges_raw;
    uint32_t n_specials;
    uint64_t region;             /* bytes from the first token's data to the last's end */
    tmem_heap *temp;
    uint32_t *vocab_slots;
    uint32_t vocab_cap;
    uint64_t temp_bytes;
    tmrt_tokenizer *t;
    uint32_t *index, *pair_slots, *specials;
    uint64_t *merges;
} loader;

/* A short printable form of a token string for messages. */
static const char *quote(char *buf, size_t cap, const char *s, uint64_t len) {
    size_t o = 0;
    for (uint64_t i = 0; i < len && o + 8 < cap; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
        if (i + 1 < len && o + 8 >= cap) {
            memcpy(buf + o, "...", 3);
            o += 3;
        }
    }
    buf[o] = 0;
    return buf;
}

static const char *vtype_name(tmem_gguf_vtype t) {
    static const char *const names[] = {"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                        "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* An array pair of the given element type; *found false when absent. */
static tmem_status find_array(loader *L, const char *key, tmem_gguf_vtype elem, bool required, uint64_t *kv,
                              uint64_t *count, bool *found) {
    tmem_gguf_value v;
    *found = false;
    tmem_status st = tmem_gguf_find(L->g, key, kv, &v);
    if (st == TMEM_E_NOT_FOUND) {
        if (required) return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s: missing (a gpt2 tokenizer needs it)", key);
        return TMEM_OK;
    }
    if (st != TMEM_OK) return tmrt__fail(L->err, st, "%s: lookup failed", key);
    if (v.type != TMEM_GGUF_ARRAY)
        return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s: a %s, not an ARRAY of %s", key, vtype_name(v.type),
                          vtype_name(elem));
    if (v.v.array.type != elem)
        return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s: an ARRAY of %s, not of %s", key, vtype_name(v.v.array.type),
                          vtype_name(elem));
    *count = v.v.array.count;
    *found = true;
    return TMEM_OK;
}

static tmem_status get_string(loader *L, const char *key, tmem_gguf_str *out, bool *found) {
    tmem_gguf_value v;
    *found = false;
    tmem_status st = tmem_gguf_find(L->g, key, NULL, &v);
    if (st == TMEM_E_NOT_FOUND) return TMEM_OK;
    if (st != TMEM_OK) return tmrt__fail(L->err, st, "%s: lookup failed", key);
    if (v.type != TMEM_GGUF_STRING) return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s: a %s, not a STRING", key,
                                                      vtype_name(v.type));
    *out = v.v.s;
    *found = true;
    return TMEM_OK;
}

static bool str_is(tmem_gguf_str s, const char *lit) { return s.len == strlen(lit) && !memcmp(s.data, lit, s.len); }

static tmem_status read_kind(loader *L) {
    tmem_gguf_str s;
    bool found;
    tmem_status st = get_string(L, K_MODEL, &s, &found);
    if (st != TMEM_OK) return st;
    char q[48];
    if (!found) return tmrt__fail(L->err, TMEM_E_NOT_FOUND, "%s: absent, the file carries no tokenizer", K_MODEL);
    if (str_is(s, "none") || str_is(s, "no_vocab"))
        return tmrt__fail(L->err, TMEM_E_NOT_FOUND, "%s is '%s': the file carries no tokenizer", K_MODEL,
                          quote(q, sizeof q, s.data, s.len));
    if (!str_is(s, "gpt2"))
        return tmrt__fail(L->err, TMEM_E_UNSUPPORTED, "%s '%s': only byte-level BPE ('gpt2') is supported", K_MODEL,
                          quote(q, sizeof q, s.data, s.len));
    if ((st = get_string(L, K_PRE, &s, &found)) != TMEM_OK) return st;
    if (!found) return tmrt__fail(L->err, TMEM_E_UNSUPPORTED, "%s: absent, the pre-tokenizer is unknown", K_PRE);
    static const struct { const char *name; tmrt_pretok kind; } pres[] = {
        {"qwen2", TMRT_PRETOK_QWEN2},  {"deepseek-r1-qwen", TMRT_PRETOK_QWEN2}, {"megrez", TMRT_PRETOK_QWEN2},
        {"kormo", TMRT_PRETOK_QWEN2},  {"f2llmv2", TMRT_PRETOK_QWEN2},          {"qwen35", TMRT_PRETOK_QWEN35},
        {"llama-bpe", TMRT_PRETOK_LLAMA3}, {"llama3", TMRT_PRETOK_LLAMA3}, {"gpt-2", TMRT_PRETOK_GPT2},
        {"phi-2", TMRT_PRETOK_GPT2},   {"mpt", TMRT_PRETOK_GPT2},   {"olmo", TMRT_PRETOK_GPT2},
    };
    for (size_t i = 0; i < sizeof pres / sizeof pres[0]; i++) {
        if (str_is(s, pres[i].name)) {
            L->pretok = pres[i].kind;
            return TMEM_OK;
        }
    }
    return tmrt__fail(L->err, TMEM_E_UNSUPPORTED,
                      "%s '%s': unsupported pre-tokenizer (qwen2, qwen35, llama-bpe, gpt-2)", K_PRE,
                      quote(q, sizeof q, s.data, s.len));
}

/* ---- string -> id table (load time only) ---- */

static uint32_t str_hash(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < na; i++) h = (h ^ a[i]) * 0x100000001b3ull;
    for (size_t i = 0; i < nb; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

/* Slot of the token whose string is a ++ b, or of the empty slot it would take. */
static uint32_t vocab_slot(const loader *L, uint32_t h, const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    uint32_t s = tok_bucket(h, L->vocab_cap);
    for (;;) {
        uint32_t v = L->vocab_slots[s];
        if (!v) return s;
        if (tok_slot_fp_is(v, h)) {
            uint32_t len;
            const uint8_t *str = (const uint8_t *)tok_str(L->t, tok_slot_value(v) - 1, &len);
            if (len == na + nb && !memcmp(str, a, na) && (!nb || !memcmp(str + na, b, nb))) return s;
        }
        if (++s == L->vocab_cap) s = 0;
    }
}

static uint32_t vocab_find(const loader *L, const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    uint32_t v = L->vocab_slots[vocab_slot(L, str_hash(a, na, b, nb), a, na, b, nb)];
    return v ? tok_slot_value(v) - 1 : TOK_NONE;
}

/* ---- passes ---- */

static tmem_status read_types(loader *L) {
    for (uint32_t i = 0; i < L->n_vocab; i++) {
        tmrt_token_type ty = TMRT_TOKEN_NORMAL;
        if (L->have_types) {
            tmem_gguf_value v;
            tmem_status st = tmem_gguf_array_get(L->g, L->types_kv, i, &v);
            if (st != TMEM_OK) return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%u]: unreadable", K_TYPES, i);
            if (v.v.i < 0 || v.v.i > TMRT_TOKEN_BYTE)
                return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%u] = %lld: not a token type (0..6)", K_TYPES, i,
                                  (long long)v.v.i);
            ty = (tmrt_token_type)v.v.i;
        }
        L->index[i] = (uint32_t)ty << TOK_OFF_BITS;
        if (ty == TMRT_TOKEN_CONTROL || ty == TMRT_TOKEN_USER_DEFINED || ty == TMRT_TOKEN_UNKNOWN) L->n_specials++;
    }
    return TMEM_OK;
}

/* Length of the bytes a byte-level string stands for; -1 if a character
 * stands for no byte. */
static int64_t byte_level_len(const uint8_t *s, uint64_t len) {
    int64_t n = 0;
    for (uint64_t i = 0; i < len; n++) {
        size_t k;
        uint32_t cp = tmrt__utf8_decode(s + i, (size_t)(len - i), &k);
        if (tok_cp_to_byte(cp) < 0) return -1; /* also U+FFFD of an invalid byte */
        i += k;
    }
    return n;
}

static tmem_status index_tokens(loader *L, bool offsets_only) {
    tmem_gguf_array_iter it = {0};
    tmem_gguf_value v;
    const char *base = NULL, *expect = NULL;
    char q[48];
    uint32_t max_len = 0;
    for (uint32_t i = 0; i < L->n_vocab; i++) {
        if (tmem_gguf_array_next(L->g, L->tokens_kv, &it, &v) != TMEM_OK)
            return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%u]: unreadable", K_TOKENS, i);
        if (!base) base = expect = v.v.s.data;
        if (v.v.s.data != expect)
            return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%u]: not stored back to back with [%u]", K_TOKENS, i,
                              i ? i - 1 : 0);
        uint64_t off = (uint64_t)(v.v.s.data - base);
        if (off + v.v.s.len + TOK_STR_PREFIX > TOK_OFF_MASK)
            return tmrt__fail(L->err, TMEM_E_UNSUPPORTED, "%s: more than %u MiB of token strings", K_TOKENS,
                              (TOK_OFF_MASK + 1u) >> 20);
        expect = v.v.s.data + v.v.s.len + TOK_STR_PREFIX;
        L->region = off + v.v.s.len;
        if (offsets_only) continue;
        if (!v.v.s.len) return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%u]: empty token", K_TOKENS, i);
        L->index[i] |= (uint32_t)off;
        uint64_t dlen = v.v.s.len;
        if ((tmrt_token_type)(L->index[i] >> TOK_OFF_BITS) == TMRT_TOKEN_NORMAL) {
            int64_t n = byte_level_len((const uint8_t *)v.v.s.data, v.v.s.len);
            if (n < 0)
                return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%u] '%s': a normal token that is not byte-level text",
                                  K_TOKENS,
                                  i, quote(q, sizeof q, v.v.s.data, v.v.s.len));
            dlen = (uint64_t)n;
        }
        if (dlen > max_len) max_len = (uint32_t)dlen;
    }
    if (!offsets_only) {
        L->index[L->n_vocab] = (uint32_t)(L->region + TOK_STR_PREFIX);
        L->t->strings = base;
        L->t->info.max_token_bytes = max_len;
    }
    return TMEM_OK;
}

static tmem_status build_vocab(loader *L) {
    char q[48];
    for (uint32_t i = 0; i < L->n_vocab; i++) {
        uint32_t len;
        const uint8_t *s = (const uint8_t *)tok_str(L->t, i, &len);
        uint32_t h = str_hash(s, len, NULL, 0), slot = vocab_slot(L, h, s, len, NULL, 0);
        if (L->vocab_slots[slot])
            return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%u] '%s': duplicates token %u", K_TOKENS, i,
                              quote(q, sizeof q, (const char *)s, len), tok_slot_value(L->vocab_slots[slot]) - 1);
        L->vocab_slots[slot] = tok_slot(i + 1, h);
    }
    for (int b = 0; b < 256; b++) {
        uint32_t cp = tok_byte_to_cp((uint8_t)b);
        uint8_t u[2] = {(uint8_t)cp, 0};
        size_t n = 1;
        if (cp >= 0x80) {
            u[0] = (uint8_t)(0xC0 | cp >> 6);
            u[1] = (uint8_t)(0x80 | (cp & 0x3F));
            n = 2;
        }
        uint32_t id = vocab_find(L, u, n, NULL, 0);
        bool never_in_utf8 = b == 0xC0 || b == 0xC1 || b >= 0xF5;
        if (id == TOK_NONE && never_in_utf8) {
            /* GPT-NeoX-style vocabularies omit the bytes valid UTF-8 never
             * holds; encoding such a byte is refused (TMEM_E_UNSUPPORTED) */
            L->t->byte_token[b] = -1;
            continue;
        }
        if (id == TOK_NONE || tok_type(L->t, id) != TMRT_TOKEN_NORMAL)
            return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s: no normal token for byte 0x%02x ('%s')", K_TOKENS, b,
                              quote(q, sizeof q, (const char *)u, n));
        L->t->byte_token[b] = (int32_t)id;
    }
    return TMEM_OK;
}

static tmem_status read_merges(loader *L) {
    tmem_gguf_array_iter it = {0};
    tmem_gguf_value v;
    char q[48], q2[48];
    uint32_t kept = 0;
    for (uint64_t i = 0; i < L->n_merges_raw; i++) {
        if (tmem_gguf_array_next(L->g, L->merges_kv, &it, &v) != TMEM_OK)
            return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%llu]: unreadable", K_MERGES, (unsigned long long)i);
        const uint8_t *s = (const uint8_t *)v.v.s.data;
        uint64_t len = v.v.s.len, sp = 1;
        while (sp < len && s[sp] != ' ') sp++;
        if (len < 3 || sp + 1 >= len)
            return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%llu] '%s': not 'LEFT RIGHT'", K_MERGES,
                              (unsigned long long)i,
                              quote(q, sizeof q, v.v.s.data, len));
        const uint8_t *a = s, *b = s + sp + 1;
        size_t na = (size_t)sp, nb = (size_t)(len - sp - 1);
        uint32_t l = vocab_find(L, a, na, NULL, 0), r = vocab_find(L, b, nb, NULL, 0);
        uint32_t res = vocab_find(L, a, na, b, nb);
        if (l == TOK_NONE || r == TOK_NONE)
            return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%llu] '%s': '%s' is not a token", K_MERGES,
                              (unsigned long long)i,
                              quote(q, sizeof q, v.v.s.data, len),
                              l == TOK_NONE ? quote(q2, sizeof q2, (const char *)a, na)
                              : quote(q2, sizeof q2, (const char *)b, nb));
        if (res == TOK_NONE)
            return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s[%llu] '%s': the merged text is not a token", K_MERGES,
                              (unsigned long long)i, quote(q, sizeof q, v.v.s.data, len));
        /* Decoding maps only normal tokens back from byte-level text: a merge
         * into a control, user-defined or unused token would give other bytes
         * (or none) back for the text it covers. */
        if (tok_type(L->t, res) != TMRT_TOKEN_NORMAL)
            return tmrt__fail(L->err, TMEM_E_CORRUPT,
                              "%s[%llu] '%s': merges into token %u of type %d, not a normal token",
                              K_MERGES, (unsigned long long)i, quote(q, sizeof q, v.v.s.data, len),
                              res, (int)tok_type(L->t, res));
        uint32_t h = tok_pair_hash(l, r), slot = tok_bucket(h, L->t->pair_cap);
        bool dup = false;
        while (L->pair_slots[slot]) {
            uint64_t m = L->merges[tok_slot_value(L->pair_slots[slot]) - 1];
            if (merge_left(m) == l && merge_right(m) == r) {
                dup = true; /* a repeated pair keeps its first (lowest) rank */
                break;
            }
            if (++slot == L->t->pair_cap) slot = 0;
        }
        if (dup) continue;
        if (kept == TOK_MAX_VOCAB)
            return tmrt__fail(L->err, TMEM_E_UNSUPPORTED, "%s: more than %u distinct merges", K_MERGES, TOK_MAX_VOCAB);
        L->merges[kept] = merge_pack(l, r, res);
        L->pair_slots[slot] = tok_slot(++kept, h);
    }
    L->t->info.n_merges = kept;
    return TMEM_OK;
}

static int cmp_desc(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Specials, longest first (ties: lower id first). */
static tmem_status build_specials(loader *L) {
    if (!L->n_specials) return TMEM_OK;
    uint64_t *keys;
    tmem_status st = tmem_heap_alloc(L->temp, (uint64_t)L->n_specials * 8, 16, (void **)&keys);
    if (st != TMEM_OK) return tmrt__fail(L->err, st, "tokenizer: no memory for %u specials", L->n_specials);
    uint32_t k = 0;
    for (uint32_t i = 0; i < L->n_vocab; i++) {
        tmrt_token_type ty = tok_type(L->t, i);
        if (ty != TMRT_TOKEN_CONTROL && ty != TMRT_TOKEN_USER_DEFINED && ty != TMRT_TOKEN_UNKNOWN) continue;
        uint32_t len;
        (void)tok_str(L->t, i, &len);
        keys[k++] = (uint64_t)len << 32 | (uint32_t)(TOK_MAX_VOCAB - i);
    }
    qsort(keys, k, sizeof *keys, cmp_desc);
    for (uint32_t i = 0; i < k; i++) {
        uint32_t id = TOK_MAX_VOCAB - (uint32_t)keys[i], len;
        const uint8_t *s = (const uint8_t *)tok_str(L->t, id, &len);
        L->specials[i] = id;
        L->t->special_first[s[0] >> 3] |= (uint8_t)(1u << (s[0] & 7));
    }
    L->t->info.n_specials = k;
    return TMEM_OK;
}

static tmem_status read_id(loader *L, const char *key, int32_t *out) {
    uint64_t v;
    *out = -1;
    tmem_status st = tmem_gguf_get_u64(L->g, key, &v);
    if (st == TMEM_E_NOT_FOUND) return TMEM_OK;
    if (st != TMEM_OK) return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s: not a non-negative integer", key);
    if (v >= L->n_vocab)
        return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s = %llu: out of range (%u tokens)", key, (unsigned long long)v,
                          L->n_vocab);
    *out = (int32_t)v;
    return TMEM_OK;
}

static tmem_status read_bool(loader *L, const char *key, bool *out) {
    bool v;
    tmem_status st = tmem_gguf_get_bool(L->g, key, &v);
    if (st == TMEM_E_NOT_FOUND) return TMEM_OK;
    if (st != TMEM_OK) return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s: not a BOOL", key);
    *out = v;
    return TMEM_OK;
}

static void add_eog(tmrt_tokenizer *t, int32_t id) {
    if (id < 0 || t->n_eog == TOK_MAX_EOG) return;
    uint32_t i = t->n_eog;
    for (uint32_t j = 0; j < i; j++)
        if (t->eog[j] == id) return;
    while (i && t->eog[i - 1] > id) {
        t->eog[i] = t->eog[i - 1];
        i--;
    }
    t->eog[i] = id;
    t->n_eog++;
}

static tmem_status read_special_ids(loader *L) {
    tmrt_tokenizer_info *in = &L->t->info;
    tmem_status st;
    if ((st = read_id(L, "tokenizer.ggml.bos_token_id", &in->bos)) != TMEM_OK ||
        (st = read_id(L, "tokenizer.ggml.eos_token_id", &in->eos)) != TMEM_OK ||
        (st = read_id(L, "tokenizer.ggml.eot_token_id", &in->eot)) != TMEM_OK ||
        (st = read_id(L, "tokenizer.ggml.eom_token_id", &in->eom)) != TMEM_OK ||
        (st = read_id(L, "tokenizer.ggml.padding_token_id", &in->pad)) != TMEM_OK ||
        (st = read_id(L, "tokenizer.ggml.unknown_token_id", &in->unk)) != TMEM_OK ||
        (st = read_bool(L, "tokenizer.ggml.add_bos_token", &in->add_bos)) != TMEM_OK ||
        (st = read_bool(L, "tokenizer.ggml.add_eos_token", &in->add_eos)) != TMEM_OK)
        return st;
    add_eog(L->t, in->eos);
    add_eog(L->t, in->eot);
    add_eog(L->t, in->eom);
    static const char *const eog_text[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>"};
    for (size_t i = 0; i < sizeof eog_text / sizeof eog_text[0]; i++) {
        int32_t id;
        if (tmrt_tokenizer_special(L->t, eog_text[i], &id) == TMEM_OK &&
            tok_type(L->t, (uint32_t)id) == TMRT_TOKEN_CONTROL)
            add_eog(L->t, id);
    }
    return TMEM_OK;
}

/* ---- memory ---- */

static uint64_t align_up(uint64_t v) { return (v + ALLOC_SLACK - 1) / ALLOC_SLACK * ALLOC_SLACK + ALLOC_SLACK; }

static tmem_status table_alloc(loader *L, uint64_t bytes, void **out) {
    tmem_status st = tmem_heap_alloc(L->t ? L->t->tables : NULL, bytes ? bytes : 1, 16, out);
    if (st != TMEM_OK) return tmrt__fail(L->err, st, "tokenizer: table allocation of %llu bytes failed (%s)",
                                         (unsigned long long)bytes, tmem_strerror(st));
    L->t->info.table_bytes += bytes;
    return TMEM_OK;
}

static tmem_status resolve_types(loader *L, const tmrt_tokenizer_desc *d) {
    L->type = d ? d->type : NULL;
    L->scratch_type = d ? d->scratch_type : NULL;
    L->role = d && d->role ? d->role : TMEM_ROLE_OUTPUT_TOKENS;
    L->flags = d ? d->flags : 0;
    L->scratch_bytes = d && (d->scratch_bytes || (L->flags & TMRT_TOKENIZER_SCRATCH_EXACT)) ? d->scratch_bytes
                                                                                           : DEFAULT_SCRATCH;
    if (L->flags & ~(uint32_t)(TMRT_TOKENIZER_COPY_STRINGS | TMRT_TOKENIZER_SCRATCH_EXACT))
        return tmrt__fail(L->err, TMEM_E_INVALID_ARG, "tokenizer: unknown flags");
    if (!L->type && tmem_role_get_type(L->ctx, TMEM_ROLE_OUTPUT_TOKENS, &L->type) != TMEM_OK)
        return tmrt__fail(L->err, TMEM_E_INVALID_ARG, "tokenizer: no type for the output_tokens role");
    if (!L->scratch_type && tmem_role_get_type(L->ctx, TMEM_ROLE_SCRATCH, &L->scratch_type) != TMEM_OK)
        return tmrt__fail(L->err, TMEM_E_INVALID_ARG, "tokenizer: no type for the scratch role");
    tmem_type *types[2] = {L->type, L->scratch_type};
    for (int i = 0; i < 2; i++) {
        tmem_type_info ti;
        if (tmem_type_get_info(types[i], &ti) != TMEM_OK) return tmrt__fail(L->err, TMEM_E_INVALID_ARG,
                                                                            "tokenizer: bad type");
        if (ti.placement != TMEM_PLACEMENT_HOST && ti.placement != TMEM_PLACEMENT_HOST_SHARED &&
            ti.placement != TMEM_PLACEMENT_PINNED)
            return tmrt__fail(L->err, TMEM_E_INVALID_ARG, "tokenizer: type %s is not host memory", ti.name);
    }
    return TMEM_OK;
}

static uint32_t pair_capacity(uint64_t m) { return (uint32_t)(m + m / 2 + 1); }

uint64_t tmrt_tokenizer_table_bytes(uint32_t n_vocab, uint64_t n_merges, uint32_t n_specials) {
    if (!n_vocab || n_vocab >= TOK_MAX_VOCAB || n_merges > UINT32_MAX / 2) return 0;
    return sizeof(tmrt_tokenizer) + ((uint64_t)n_vocab + 1) * 4 + n_merges * 8 +
           (uint64_t)pair_capacity(n_merges) * 4 + (uint64_t)n_specials * 4;
}

/* The LINEAR table heap's size: every table the load allocates from it,
 * each with its slack (create_heaps and tmrt_tokenizer_memory_bytes). */
static uint64_t tables_heap_size(const loader *L) {
    uint64_t n = L->n_vocab, m = L->n_merges_raw;
    uint64_t copy = (L->flags & TMRT_TOKENIZER_COPY_STRINGS) ? L->region : 0;
    return align_up(sizeof(tmrt_tokenizer)) + align_up((n + 1) * 4) + align_up(m * 8) +
           align_up((uint64_t)pair_capacity(m) * 4) + align_up((uint64_t)L->n_specials * 4) + align_up(copy);
}

/* Round up to 64 KiB, or 0 for 0 (the GENERAL heap's commit chunk). */
static uint64_t chunks(uint64_t v) { return (v + SCRATCH_CHUNK - 1) / SCRATCH_CHUNK * SCRATCH_CHUNK; }

uint64_t tmrt_tokenizer_scratch_bytes(uint64_t text_bytes, bool chat) {
    /* chat: one turn's "role\n" + text copied (the role is at most "system"),
     * then encoded as one fragment; the copy lives while its pieces are merged */
    uint64_t copy = chat ? text_bytes + 7 : 0, piece = chat ? copy : text_bytes;
    if (piece > (UINT64_MAX - 2 * SCRATCH_CHUNK) / 40) return UINT64_MAX;
    /* a piece over TOK_SHORT_PIECE bytes takes 36 bytes per byte (tok_bpe.c);
     * each allocation in whole chunks (a small one takes a size-class page) */
    uint64_t bpe = piece > TOK_SHORT_PIECE ? piece * 36 : 0;
    return chunks(copy) + chunks(bpe);
}

static tmem_status create_heaps(loader *L) {
    uint64_t n = L->n_vocab, m = L->n_merges_raw;
    uint32_t pair_cap = pair_capacity(m);
    uint64_t size = tables_heap_size(L);
    tmem_heap_desc hd = {.kind = TMEM_HEAP_LINEAR, .type = L->type, .role = L->role, .size = size,
                         .name = "tokenizer.tables"};
    tmem_heap *tables;
    tmem_status st = tmem_heap_create(L->ctx, &hd, &tables);
    if (st != TMEM_OK)
        return tmrt__fail(L->err, st, "tokenizer: table heap of %llu bytes: %s", (unsigned long long)size,
                          tmem_strerror(st));
    tmrt_tokenizer *t;
    if ((st = tmem_heap_alloc(tables, sizeof *t, 16, (void **)&t)) != TMEM_OK) {
        tmem_heap_destroy(tables);
        return tmrt__fail(L->err, st, "tokenizer: %s", tmem_strerror(st));
    }
    memset(t, 0, sizeof *t);
    t->tables = tables;
    t->pair_cap = pair_cap;
    t->info.table_bytes = sizeof *t;
    L->t = t;
    void *p;
    if ((st = table_alloc(L, (n + 1) * 4, &p)) != TMEM_OK) return st;
    L->index = p;
    t->index = L->index;
    if ((st = table_alloc(L, m * 8, &p)) != TMEM_OK) return st;
    L->merges = p;
    if ((st = table_alloc(L, (uint64_t)pair_cap * 4, &p)) != TMEM_OK) return st;
    L->pair_slots = memset(p, 0, (size_t)pair_cap * 4);
    if ((st = table_alloc(L, (uint64_t)L->n_specials * 4, &p)) != TMEM_OK) return st;
    L->specials = p;
    tmem_heap_desc sd = {.kind = TMEM_HEAP_GENERAL, .type = L->scratch_type, .role = TMEM_ROLE_SCRATCH,
                         .size = L->scratch_bytes, .flags = TMEM_HEAP_THREAD_SAFE, .name = "tokenizer.scratch"};
    if (L->scratch_bytes && (st = tmem_heap_create(L->ctx, &sd, &t->scratch)) != TMEM_OK)
        return tmrt__fail(L->err, st, "tokenizer: scratch heap of %llu bytes: %s", (unsigned long long)L->scratch_bytes,
                          tmem_strerror(st));
    L->vocab_cap = (uint32_t)(n + n / 2 + 1);
    uint64_t temp = align_up((uint64_t)L->vocab_cap * 4) + align_up((uint64_t)L->n_specials * 8);
    tmem_heap_desc td = {.kind = TMEM_HEAP_LINEAR, .type = L->scratch_type, .role = TMEM_ROLE_SCRATCH,
                         .size = temp, .name = "tokenizer.load"};
    if ((st = tmem_heap_create(L->ctx, &td, &L->temp)) != TMEM_OK)
        return tmrt__fail(L->err, st, "tokenizer: load heap of %llu bytes: %s", (unsigned long long)temp,
                          tmem_strerror(st));
    if ((st = tmem_heap_alloc(L->temp, (uint64_t)L->vocab_cap * 4, 16, &p)) != TMEM_OK)
        return tmrt__fail(L->err, st, "tokenizer: %s", tmem_strerror(st));
    L->vocab_slots = memset(p, 0, (size_t)L->vocab_cap * 4);
    L->temp_bytes = (uint64_t)L->vocab_cap * 4 + (uint64_t)L->n_specials * 8;
    return TMEM_OK;
}

static tmem_status copy_strings(loader *L) {
    if (!(L->flags & TMRT_TOKENIZER_COPY_STRINGS)) {
        L->t->info.string_bytes = L->region;
        return TMEM_OK;
    }
    void *p;
    tmem_status st = table_alloc(L, L->region, &p);
    if (st != TMEM_OK) return st;
    memcpy(p, L->t->strings, (size_t)L->region);
    L->t->strings = p;
    return TMEM_OK;
}

/* ---- entry ---- */

/* Everything the heaps are sized by: the desc's types, the keys' presence
 * and types, the counts (and with COPY_STRINGS the strings' extent). */
static tmem_status count(loader *L, const tmrt_tokenizer_desc *desc) {
    tmem_status st = resolve_types(L, desc);
    if (st != TMEM_OK) return st;
    if ((st = read_kind(L)) != TMEM_OK) return st;
    uint64_t count;
    bool found;
    if ((st = find_array(L, K_TOKENS, TMEM_GGUF_STRING, true, &L->tokens_kv, &count, &found)) != TMEM_OK) return st;
    if (!count) return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s: empty", K_TOKENS);
    if (count >= TOK_MAX_VOCAB)
        return tmrt__fail(L->err, TMEM_E_UNSUPPORTED, "%s: %llu tokens, this build indexes fewer than %u", K_TOKENS,
                          (unsigned long long)count, TOK_MAX_VOCAB);
    L->n_vocab = (uint32_t)count;
    uint64_t n_types = 0;
    if ((st = find_array(L, K_TYPES, TMEM_GGUF_INT32, false, &L->types_kv, &n_types, &L->have_types)) != TMEM_OK)
        return st;
    if (L->have_types && n_types < L->n_vocab)
        return tmrt__fail(L->err, TMEM_E_CORRUPT, "%s: %llu types for %u tokens", K_TYPES,
                          (unsigned long long)n_types, L->n_vocab);
    if ((st = find_array(L, K_MERGES, TMEM_GGUF_STRING, true, &L->merges_kv, &L->n_merges_raw, &found)) != TMEM_OK)
        return st;
    if (L->n_merges_raw > UINT32_MAX / 2)
        return tmrt__fail(L->err, TMEM_E_UNSUPPORTED, "%s: %llu merges, too many", K_MERGES,
                          (unsigned long long)L->n_merges_raw);
    /* count the specials before sizing the heap (types are fixed-size: O(1) each) */
    {
        uint32_t specials = 0;
        for (uint32_t i = 0; L->have_types && i < L->n_vocab; i++) {
            tmem_gguf_value v;
            if (tmem_gguf_array_get(L->g, L->types_kv, i, &v) == TMEM_OK &&
                (v.v.i == TMRT_TOKEN_CONTROL || v.v.i == TMRT_TOKEN_USER_DEFINED || v.v.i == TMRT_TOKEN_UNKNOWN))
                specials++;
        }
        L->n_specials = specials;
    }
    if ((L->flags & TMRT_TOKENIZER_COPY_STRINGS) && (st = index_tokens(L, true)) != TMEM_OK) return st;
    return TMEM_OK;
}

static tmem_status load(loader *L, const tmrt_tokenizer_desc *desc) {
    tmem_status st = count(L, desc);
    if (st != TMEM_OK) return st;
    if ((st = create_heaps(L)) != TMEM_OK) return st;
    L->t->info.pretok = L->pretok;
    L->n_specials = 0;
    if ((st = read_types(L)) != TMEM_OK) return st;
    if ((st = index_tokens(L, false)) != TMEM_OK) return st;
    if ((st = copy_strings(L)) != TMEM_OK) return st;
    if ((st = build_vocab(L)) != TMEM_OK) return st;
    if ((st = read_merges(L)) != TMEM_OK) return st;
    if ((st = build_specials(L)) != TMEM_OK) return st;
    L->t->index = L->index;
    L->t->merges = L->merges;
    L->t->pair_slots = L->pair_slots;
    L->t->specials = L->specials;
    if ((st = read_special_ids(L)) != TMEM_OK) return st;
    L->t->info.n_vocab = L->n_vocab;
    L->t->info.load_peak_bytes = L->t->info.table_bytes + L->temp_bytes;
    return TMEM_OK;
}

tmem_status tmrt_tokenizer_load_ex(tmem_context *ctx, const tmem_gguf *g, const tmrt_tokenizer_desc *desc,
                                   tmrt_tokenizer **out, tmrt_error *err) {
    if (out) *out = NULL;
    if (err) err->message[0] = 0;
    loader L;
    memset(&L, 0, sizeof L);
    L.ctx = ctx;
    L.g = g;
    L.err = err;
    if (!ctx || !g || !out) return tmrt__fail(L.err, TMEM_E_INVALID_ARG, "tokenizer: NULL context, file or output");
    tmem_status st = load(&L, desc);
    tmem_heap_destroy(L.temp);
    if (st != TMEM_OK) {
        tmrt_tokenizer_destroy(L.t);
        return st;
    }
    *out = L.t;
    return TMEM_OK;
}

/* What a heap of `size` bytes of `type` commits at most: whole pages of its
 * pool (the last chunk is clipped at the carved range: heap/commit.c). */
static tmem_status heap_bytes(const tmem_type *type, uint64_t size, uint64_t *out) {
    *out = 0;
    return size ? tmem_type_heap_bytes(type, size, out) : TMEM_OK;
}

tmem_status tmrt_tokenizer_memory_bytes(tmem_context *ctx, const tmem_gguf *g, const tmrt_tokenizer_desc *desc,
                                        uint64_t *out, tmrt_error *err) {
    if (out) *out = 0;
    if (err) err->message[0] = 0;
    loader L;
    memset(&L, 0, sizeof L);
    L.ctx = ctx;
    L.g = g;
    L.err = err;
    if (!ctx || !g || !out) return tmrt__fail(L.err, TMEM_E_INVALID_ARG, "tokenizer: NULL context, file or output");
    tmem_status st = count(&L, desc);
    uint64_t tables = 0, scratch = 0;
    if (st == TMEM_OK && (st = heap_bytes(L.type, tables_heap_size(&L), &tables)) == TMEM_OK)
        st = heap_bytes(L.scratch_type, L.scratch_bytes, &scratch);
    if (st != TMEM_OK) return st == TMEM_E_OVERFLOW ? tmrt__fail(L.err, st, "tokenizer: sizes overflow") : st;
    *out = tables + scratch;
    return TMEM_OK;
}

tmem_status tmrt_tokenizer_load(tmem_context *ctx, const tmem_gguf *g, tmrt_tokenizer **out, tmrt_error *err) {
    return tmrt_tokenizer_load_ex(ctx, g, NULL, out, err);
}

void tmrt_tokenizer_destroy(tmrt_tokenizer *tok) {
    if (!tok) return;
    tmem_heap_destroy(tok->scratch);
    tmem_heap_destroy(tok->tables); /* tok lives in it */
}

/* tok_encode.c: text -> token ids (specials, then pre-tokens, then BPE),
 * and the ChatML template. */
#include <string.h>
#include "tok/tok_internal.h"

/* The special that starts at s[pos], longest first; -1 if none. Control and
 * unknown tokens count only with PARSE_SPECIAL. */
static int32_t special_at(const tmrt_tokenizer *t, const uint8_t *s, size_t len, size_t pos, uint32_t flags) {
    for (uint32_t i = 0; i < t->info.n_specials; i++) {
        uint32_t id = t->specials[i], n;
        const char *str = tok_str(t, id, &n);
        if (n > len - pos || memcmp(str, s + pos, n)) continue;
        tmrt_token_type ty = tok_type(t, id);
        if (ty != TMRT_TOKEN_USER_DEFINED && !(flags & TMRT_TOKENIZE_PARSE_SPECIAL)) continue;
        return (int32_t)id;
    }
    return -1;
}

static tmem_status encode_plain(const tmrt_tokenizer *t, const uint8_t *s, size_t len, tok_out *o) {
    size_t pos = 0;
    while (pos < len) {
        size_t end = tmrt__pretok_next(t->info.pretok, s, len, pos);
        tmem_status st = tmrt__bpe_piece(t, s + pos, end - pos, o);
        if (st != TMEM_OK) return st;
        pos = end;
    }
    return TMEM_OK;
}

tmem_status tmrt__encode(const tmrt_tokenizer *t, const uint8_t *s, size_t len, uint32_t flags, tok_out *o) {
    size_t start = 0;
    for (size_t pos = 0; pos < len; pos++) {
        if (!(t->special_first[s[pos] >> 3] >> (s[pos] & 7) & 1)) continue;
        int32_t id = special_at(t, s, len, pos, flags);
        if (id < 0) continue;
        tmem_status st = encode_plain(t, s + start, pos - start, o);
        if (st != TMEM_OK) return st;
        tok_emit(o, id);
        uint32_t n;
        (void)tok_str(t, (uint32_t)id, &n);
        pos += n - 1;
        start = pos + 1;
    }
    return encode_plain(t, s + start, len - start, o);
}

static tmem_status finish(tok_out *o, size_t *n, tmem_status st) {
    if (st != TMEM_OK) {
        *n = 0;
        return st;
    }
    if (o->n > (size_t)INT32_MAX) {
        *n = 0;
        return TMEM_E_OVERFLOW;
    }
    *n = o->n;
    return o->n > o->cap ? TMEM_E_FULL : TMEM_OK;
}

#define ENCODE_FLAGS (TMRT_TOKENIZE_PARSE_SPECIAL | TMRT_TOKENIZE_ADD_SPECIAL)

tmem_status tmrt_tokenizer_encode(const tmrt_tokenizer *tok, const char *text, size_t len, uint32_t flags,
                                  int32_t *ids, size_t cap, size_t *n) {
    if (n) *n = 0;
    if (!tok || !n || (!text && len) || (!ids && cap) || (flags & ~(uint32_t)ENCODE_FLAGS))
        return TMEM_E_INVALID_ARG;
    tok_out o = {ids, cap, 0};
    bool add = flags & TMRT_TOKENIZE_ADD_SPECIAL;
    if (add && tok->info.add_bos && tok->info.bos >= 0) tok_emit(&o, tok->info.bos);
    tmem_status st = len ? tmrt__encode(tok, (const uint8_t *)text, len, flags, &o) : TMEM_OK;
    if (st == TMEM_OK && add && tok->info.add_eos && tok->info.eos >= 0) tok_emit(&o, tok->info.eos);
    return finish(&o, n, st);
}

/* One turn: <|im_start|>ROLE\nTEXT<|im_end|>\n, the role line and the text
 * encoded as one fragment (they share a pre-token when TEXT starts with
 * whitespace), so the ids equal those of the rendered template. */
static tmem_status turn(const tmrt_tokenizer *t, int32_t start, int32_t end, const char *role,
                        const char *text, size_t len, uint32_t flags, tok_out *o) {
    size_t rl = strlen(role);
    tok_emit(o, start);
    uint8_t *buf;
    if (!t->scratch) return TMEM_E_FULL; /* SCRATCH_EXACT with no scratch */
    tmem_status st = tmem_heap_alloc(t->scratch, rl + 1 + len, 16, (void **)&buf);
    if (st != TMEM_OK) return st;
    memcpy(buf, role, rl);
    buf[rl] = '\n';
    if (len) memcpy(buf + rl + 1, text, len);
    st = tmrt__encode(t, buf, rl + 1 + len, flags, o);
    if (tmem_heap_free(t->scratch, buf) != TMEM_OK && st == TMEM_OK) st = TMEM_E_CORRUPT;
    if (st != TMEM_OK) return st;
    tok_emit(o, end);
    return tmrt__encode(t, (const uint8_t *)"\n", 1, 0, o);
}

tmem_status tmrt_tokenizer_chat(const tmrt_tokenizer *tok, const char *system, const char *user, size_t user_len,
                                uint32_t flags, int32_t *ids, size_t cap, size_t *n) {
    if (n) *n = 0;
    if (!tok || !n || (!user && user_len) || (!ids && cap) || (flags & ~(uint32_t)TMRT_TOKENIZE_PARSE_SPECIAL))
        return TMEM_E_INVALID_ARG;
    int32_t start, end;
    if (tmrt_tokenizer_special(tok, "<|im_start|>", &start) != TMEM_OK ||
        tmrt_tokenizer_special(tok, "<|im_end|>", &end) != TMEM_OK)
        return TMEM_E_NOT_FOUND;
    tok_out o = {ids, cap, 0};
    tmem_status st = TMEM_OK;
    if (system) st = turn(tok, start, end, "system", system, strlen(system), flags, &o);
    if (st == TMEM_OK) st = turn(tok, start, end, "user", user, user_len, flags, &o);
    if (st == TMEM_OK) {
        tok_emit(&o, start);
        st = tmrt__encode(tok, (const uint8_t *)"assistant\n", 10, 0, &o);
    }
    return finish(&o, n, st);
}

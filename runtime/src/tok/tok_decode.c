/* tok_decode.c: token id -> bytes, the UTF-8 stream, and the queries. */
#include <string.h>
#include "tok/tok_internal.h"
#include "tok/unicode.h"

/* Bytes of token id into buf (at most cap); returns the full length. */
static size_t token_bytes(const tmrt_tokenizer *t, uint32_t id, uint8_t *buf, size_t cap) {
    uint32_t len;
    const uint8_t *s = (const uint8_t *)tok_str(t, id, &len);
    tmrt_token_type ty = tok_type(t, id);
    if (ty == TMRT_TOKEN_UNUSED || ty == TMRT_TOKEN_UNDEFINED) return 0;
    if (ty != TMRT_TOKEN_NORMAL) {
        if (cap) memcpy(buf, s, len < cap ? len : cap);
        return len;
    }
    /* byte-level: each character (1 or 2 bytes, checked at load) is a byte */
    size_t out = 0;
    for (uint32_t i = 0; i < len;) {
        uint32_t cp = s[i];
        if (cp < 0x80) {
            i++;
        } else {
            cp = (uint32_t)(s[i] & 0x1F) << 6 | (s[i + 1] & 0x3F);
            i += 2;
        }
        if (out < cap) buf[out] = (uint8_t)tok_cp_to_byte(cp);
        out++;
    }
    return out;
}

tmem_status tmrt_tokenizer_decode(const tmrt_tokenizer *tok, int32_t id, char *buf, size_t cap, size_t *n) {
    if (n) *n = 0;
    if (!tok || !n || (!buf && cap)) return TMEM_E_INVALID_ARG;
    if (id < 0 || (uint32_t)id >= tok->info.n_vocab) return TMEM_E_NOT_FOUND;
    *n = token_bytes(tok, (uint32_t)id, (uint8_t *)buf, cap);
    return *n > cap ? TMEM_E_FULL : TMEM_OK;
}

/* Length of the unfinished UTF-8 sequence that ends buf[0..len), 0 if the
 * tail is complete or can never complete (then it passes through). */
static size_t unfinished_tail(const uint8_t *b, size_t len) {
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        uint8_t c = b[len - back];
        if ((c & 0xC0) == 0x80) continue;   /* continuation: look further back */
        size_t need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (need <= back) return 0;
        /* the continuation bytes present must be able to start a valid sequence */
        if (back >= 2) {
            uint8_t d = b[len - back + 1];
            if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F) || (c == 0xF0 && d < 0x90) ||
                (c == 0xF4 && d > 0x8F))
                return 0;
        }
        return back;
    }
    return 0;
}

tmem_status tmrt_tokenizer_decode_stream(const tmrt_tokenizer *tok, tmrt_utf8_stream *s, int32_t id, char *buf,
                                         size_t cap, size_t *n) {
    if (n) *n = 0;
    if (!tok || !s || !n || (!buf && cap) || s->n_held > 3) return TMEM_E_INVALID_ARG;
    if (id < 0 || (uint32_t)id >= tok->info.n_vocab) return TMEM_E_NOT_FOUND;
    size_t held = s->n_held;
    size_t len = token_bytes(tok, (uint32_t)id, NULL, 0);
    if (held + len > cap) {
        *n = held + len;
        return TMEM_E_FULL;
    }
    if (held) memcpy(buf, s->held, held);
    (void)token_bytes(tok, (uint32_t)id, (uint8_t *)buf + held, len);
    size_t total = held + len, keep = unfinished_tail((const uint8_t *)buf, total);
    if (keep) memcpy(s->held, buf + total - keep, keep);
    s->n_held = (uint8_t)keep;
    *n = total - keep;
    return TMEM_OK;
}

tmem_status tmrt_utf8_stream_flush(tmrt_utf8_stream *s, char *buf, size_t cap, size_t *n) {
    if (n) *n = 0;
    if (!s || !n || (!buf && cap) || s->n_held > 3) return TMEM_E_INVALID_ARG;
    if (s->n_held > cap) {
        *n = s->n_held;
        return TMEM_E_FULL;
    }
    if (s->n_held) memcpy(buf, s->held, s->n_held);
    *n = s->n_held;
    s->n_held = 0;
    return TMEM_OK;
}

tmem_status tmrt_tokenizer_get_info(const tmrt_tokenizer *tok, tmrt_tokenizer_info *out) {
    if (!tok || !out) return TMEM_E_INVALID_ARG;
    *out = tok->info;
    return TMEM_OK;
}

uint32_t tmrt_tokenizer_n_vocab(const tmrt_tokenizer *tok) { return tok ? tok->info.n_vocab : 0; }

tmrt_token_type tmrt_tokenizer_token_type(const tmrt_tokenizer *tok, int32_t id) {
    if (!tok || id < 0 || (uint32_t)id >= tok->info.n_vocab) return TMRT_TOKEN_UNDEFINED;
    return tok_type(tok, (uint32_t)id);
}

tmem_status tmrt_tokenizer_special(const tmrt_tokenizer *tok, const char *text, int32_t *id) {
    if (!tok || !text || !id) return TMEM_E_INVALID_ARG;
    size_t len = strlen(text);
    for (uint32_t i = 0; i < tok->info.n_specials; i++) {
        uint32_t n;
        const char *s = tok_str(tok, tok->specials[i], &n);
        if (n == len && !memcmp(s, text, len)) {
            *id = (int32_t)tok->specials[i];
            return TMEM_OK;
        }
    }
    return TMEM_E_NOT_FOUND;
}

bool tmrt_tokenizer_is_eog(const tmrt_tokenizer *tok, int32_t id) {
    if (!tok) return false;
    for (uint32_t i = 0; i < tok->n_eog; i++)
        if (tok->eog[i] == id) return true;
    return false;
}

tmem_status tmrt_tokenizer_eog_ids(const tmrt_tokenizer *tok, int32_t *ids, size_t cap, size_t *n) {
    if (n) *n = 0;
    if (!tok || !n || (!ids && cap)) return TMEM_E_INVALID_ARG;
    for (uint32_t i = 0; i < tok->n_eog && i < cap; i++) ids[i] = tok->eog[i];
    *n = tok->n_eog;
    return tok->n_eog > cap ? TMEM_E_FULL : TMEM_OK;
}

/* tok_pretok.c: the pre-tokenizer regexes, by hand.
 *
 * Qwen2 (tokenizer.json of Qwen2 / Qwen2.5 / Qwen3):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} |
 *    ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * Qwen3.5 reads [\p{L}\p{M}]+ for \p{L}+ and [^\s\p{L}\p{M}\p{N}] in the
 * punctuation run; Llama 3 reads \p{N}{1,3} for \p{N}. GPT-2's own regex
 * (gpt2_next) is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
 * \s+(?!\S)|\s+ with case-sensitive contractions. A regex engine tries
 * the alternatives in order at each position and takes the first that
 * matches; each rule below is one alternative, in that order, written as the
 * match it produces (the backtracking of \s*[\r\n]+ ends after the run's
 * last \r or \n; that of \s+(?!\S) gives back the run's last character when
 * a non-space follows). The case-insensitive contractions are ASCII-only, as
 * in llama.cpp. Invalid UTF-8 bytes are one OTHER character each (U+FFFD's
 * class, So). */
#include "tok/tok_internal.h"
#include "tok/unicode.h"

typedef struct cursor {
    const uint8_t *s;
    size_t len;
} cursor;

/* Class and length of the character at pos (pos < len). */
static inline unsigned cls_at(const cursor *c, size_t pos, size_t *n, uint32_t *cp_out) {
    uint32_t cp = c->s[pos];
    if (cp < 0x80) {
        *n = 1;
    } else {
        cp = tmrt__utf8_decode(c->s + pos, c->len - pos, n);
    }
    if (cp_out) *cp_out = cp;
    return tmrt__ucat_of(cp);
}

static inline bool is_letter(tmrt_pretok k, unsigned cls) {
    return cls == TMRT_UCAT_LETTER || (k == TMRT_PRETOK_QWEN35 && cls == TMRT_UCAT_MARK);
}
/* [^\s\p{L}\p{N}] (Qwen3.5: also not \p{M}) */
static inline bool is_punct(tmrt_pretok k, unsigned cls) {
    return cls != TMRT_UCAT_SPACE && cls != TMRT_UCAT_NUMBER && !is_letter(k, cls) &&
           !(k == TMRT_PRETOK_QWEN35 && cls == TMRT_UCAT_MARK);
}

static size_t run_letters(tmrt_pretok k, const cursor *c, size_t pos) {
    while (pos < c->len) {
        size_t n;
        if (!is_letter(k, cls_at(c, pos, &n, NULL))) break;
        pos += n;
    }
    return pos;
}

static size_t contraction(const cursor *c, size_t pos) {
    if (pos + 1 >= c->len) return 0;
    uint8_t a = (uint8_t)(c->s[pos + 1] | 0x20), b = pos + 2 < c->len ? (uint8_t)(c->s[pos + 2] | 0x20) : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* End of the run of characters of class cls from pos. */
static size_t run_class(const cursor *c, size_t pos, unsigned cls) {
    while (pos < c->len) {
        size_t n;
        if (cls_at(c, pos, &n, NULL) != cls) break;
        pos += n;
    }
    return pos;
}

/* The whitespace rules of every pattern, at a whitespace character:
 * \s*[\r\n]+ (when with_rn), then \s+(?!\S), then \s+. */
static size_t whitespace(const cursor *c, size_t pos, bool with_rn) {
    size_t end = pos, last_rn = 0, last_start = pos, chars = 0;
    bool has_rn = false;
    while (end < c->len) {
        size_t n2;
        uint32_t cp2;
        if (cls_at(c, end, &n2, &cp2) != TMRT_UCAT_SPACE) break;
        if (cp2 == '\r' || cp2 == '\n') {
            has_rn = true;
            last_rn = end + 1;
        }
        last_start = end;
        end += n2;
        chars++;
    }
    if (with_rn && has_rn) return last_rn;          /* \s*[\r\n]+ */
    if (end == c->len || chars == 1) return end;    /* \s+(?!\S) at the end, or \s+ */
    return last_start;                              /* \s+(?!\S): leave the last one */
}

static size_t gpt2_next(const cursor *c, size_t pos) {
    const uint8_t *s = c->s;
    size_t len = c->len, n;
    uint32_t cp;
    unsigned cls = cls_at(c, pos, &n, &cp);
    if (cp == '\'' && pos + 1 < len) {
        uint8_t a = s[pos + 1], b = pos + 2 < len ? s[pos + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return pos + 3;
    }
    size_t p = pos, n2 = n;
    unsigned cl = cls;
    if (cp == ' ' && pos + 1 < len) {
        p = pos + 1;
        cl = cls_at(c, p, &n2, NULL);
    }
    if (cl == TMRT_UCAT_LETTER || cl == TMRT_UCAT_NUMBER) return run_class(c, p + n2, cl); /*  ?\p{L}+ |  ?\p{N}+ */
    if (cl != TMRT_UCAT_SPACE) {                                                          /*  ?[^\s\p{L}\p{N}]+ */
        p += n2;
        for (;;) {
            if (p >= len) return p;
            unsigned c2 = cls_at(c, p, &n2, NULL);
            if (c2 == TMRT_UCAT_SPACE || c2 == TMRT_UCAT_LETTER || c2 == TMRT_UCAT_NUMBER) return p;
            p += n2;
        }
    }
    return whitespace(c, pos, false);
}

size_t tmrt__pretok_next(tmrt_pretok k, const uint8_t *s, size_t len, size_t pos) {
    cursor c = {s, len};
    if (k == TMRT_PRETOK_GPT2) return gpt2_next(&c, pos);
    size_t n;
    uint32_t cp;
    unsigned cls = cls_at(&c, pos, &n, &cp);

    /* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
    if (cp == '\'') {
        size_t m = contraction(&c, pos);
        if (m) return pos + m;
    }
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (is_letter(k, cls)) return run_letters(k, &c, pos + n);
    if (cp != '\r' && cp != '\n' && cls != TMRT_UCAT_NUMBER && pos + n < len) {
        size_t n2;
        if (is_letter(k, cls_at(&c, pos + n, &n2, NULL))) return run_letters(k, &c, pos + n + n2);
    }
    /* \p{N} (Llama 3: \p{N}{1,3}) */
    if (cls == TMRT_UCAT_NUMBER) {
        size_t end = pos + n;
        for (int i = 1; k == TMRT_PRETOK_LLAMA3 && i < 3 && end < len; i++) {
            size_t n2;
            if (cls_at(&c, end, &n2, NULL) != TMRT_UCAT_NUMBER) break;
            end += n2;
        }
        return end;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    {
        size_t p = pos, n2 = n;
        unsigned cl = cls;
        if (cp == ' ' && pos + 1 < len) {
            p = pos + 1;
            cl = cls_at(&c, p, &n2, NULL);
        }
        if (is_punct(k, cl)) {
            p += n2;
            while (p < len && is_punct(k, cls_at(&c, p, &n2, NULL))) p += n2;
            while (p < len && (s[p] == '\r' || s[p] == '\n')) p++;
            return p;
        }
    }
    /* The whitespace rules: cls is SPACE here (every other class matched above). */
    return whitespace(&c, pos, true);
}

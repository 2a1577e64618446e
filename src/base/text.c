/* The one text builder: fixed, growing or sink-backed (text.h), and the
 * JSON / XML escapers with one rule for bytes that are not valid UTF-8. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/text.h"

enum { SINK_CHUNK = 1 << 20, FIRST_CAP = 4096 };

void tmem__text_init(tmem__text *t) { memset(t, 0, sizeof *t); }

void tmem__text_init_fixed(tmem__text *t, char *buf, size_t cap) {
    tmem__text_init(t);
    t->data = buf;
    t->cap = buf ? cap : 0;
    t->fixed = true;
}

void tmem__text_init_sink(tmem__text *t, tmem__text_sink_fn sink, void *arg) {
    tmem__text_init(t);
    t->sink = sink;
    t->sink_arg = arg;
}

void tmem__text_drain(tmem__text *t) {
    if (!t->sink || t->failed || !t->len) return;
    if (!t->sink(t->sink_arg, t->data, t->len)) t->failed = t->sink_failed = true;
    t->len = 0;
    t->data[0] = '\0';
}

void tmem__text_free(tmem__text *t) {
    if (!t->fixed) free(t->data);
    tmem__text_init(t);
}

/* Growing: room for n more bytes plus the NUL. */
static bool reserve(tmem__text *t, size_t n) {
    if (t->failed) return false;
    size_t need;
    if (__builtin_add_overflow(t->len, n + 1, &need)) {
        t->failed = true;
        return false;
    }
    if (need <= t->cap) return true;
    size_t cap = t->cap ? t->cap : FIRST_CAP;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            t->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(t->data, cap);
    if (!p) {
        t->failed = true;
        return false;
    }
    t->data = p;
    t->cap = cap;
    return true;
}

/* Fixed: copy what fits, count all of it. */
static void put_fixed(tmem__text *t, const char *s, size_t n) {
    if (t->len < t->cap) {
        size_t room = t->cap - t->len;
        memcpy(t->data + t->len, s, n < room ? n : room);
    }
    t->len = n > SIZE_MAX - t->len ? SIZE_MAX : t->len + n;
}

void tmem__text_putn(tmem__text *t, const char *s, size_t n) {
    if (t->fixed) {
        put_fixed(t, s, n);
        return;
    }
    if (t->sink && t->len + n > SINK_CHUNK) tmem__text_drain(t);
    if (!reserve(t, n)) return;
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

void tmem__text_puts(tmem__text *t, const char *s) { tmem__text_putn(t, s, strlen(s)); }

void tmem__text_printf(tmem__text *t, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        tmem__text_putn(t, small, (size_t)n);
        return;
    }
    if (t->fixed) {
        /* Straight into the caller's buffer; vsnprintf's NUL lands inside
         * the room and is overwritten by the next piece or tmem__text_finish. */
        size_t room = t->len < t->cap ? t->cap - t->len : 0;
        va_start(ap, fmt);
        vsnprintf(room ? t->data + t->len : NULL, room, fmt, ap);
        va_end(ap);
        t->len += (size_t)n;
        return;
    }
    if (t->sink && t->len + (size_t)n > SINK_CHUNK) tmem__text_drain(t);
    if (!reserve(t, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* ---- escaping ---- */

size_t tmem__utf8_valid_len(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t n;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07, min = 0x10000;
    else return 0; /* continuation byte, 0xc0/0xc1 (overlong), > 0xf4 */
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

void tmem__text_json_escape(tmem__text *t, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t run = 0; /* bytes that pass through as they are */
        for (;;) {
            unsigned c = p[run];
            if (!c || c == '"' || c == '\\' || c < 0x20 || c == 0x7f) break;
            size_t n = c < 0x80 ? 1 : tmem__utf8_valid_len(p + run);
            if (!n) break;
            run += n;
        }
        if (run) tmem__text_putn(t, (const char *)p, run);
        p += run;
        if (!*p) break;
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            tmem__text_putn(t, e, 2);
        } else {
            tmem__text_printf(t, "\\u%04x", *p); /* control, DEL, invalid UTF-8 */
        }
        p++;
    }
}

void tmem__text_json_string(tmem__text *t, const char *s) {
    tmem__text_putn(t, "\"", 1);
    tmem__text_json_escape(t, s);
    tmem__text_putn(t, "\"", 1);
}

void tmem__text_xml_escape(tmem__text *t, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        switch (*p) {
        case '<': tmem__text_puts(t, "&lt;"); break;
        case '>': tmem__text_puts(t, "&gt;"); break;
        case '&': tmem__text_puts(t, "&amp;"); break;
        case '"': tmem__text_puts(t, "&quot;"); break;
        case '\'': tmem__text_puts(t, "&#39;"); break;
        default:
            if (*p >= 0x80) {
                size_t n = tmem__utf8_valid_len(p);
                if (n) {
                    tmem__text_putn(t, (const char *)p, n);
                    p += n;
                    continue;
                }
                tmem__text_printf(t, "&#%u;", *p); /* Latin-1 view of a stray byte */
            } else if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) {
                tmem__text_puts(t, "?"); /* not allowed in XML 1.0 */
            } else {
                tmem__text_putn(t, (const char *)p, 1);
            }
        }
        p++;
    }
}

/* ---- finishing ---- */

tmem_status tmem__text_finish(tmem__text *t, size_t *needed) {
    if (needed) *needed = t->len + 1;
    if (t->data && t->cap) t->data[t->len < t->cap ? t->len : t->cap - 1] = '\0';
    if (!t->data && !t->cap) return TMEM_OK; /* a sizing call */
    return t->len < t->cap ? TMEM_OK : tmem__err(TMEM_E_FULL);
}

tmem_status tmem__text_take(tmem__text *t, char **out, size_t *out_len) {
    if (!t->failed && !t->data && reserve(t, 0)) t->data[0] = '\0'; /* "", not NULL */
    if (t->failed) {
        tmem__text_free(t);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    *out = t->data;
    if (out_len) *out_len = t->len;
    tmem__text_init(t);
    return TMEM_OK;
}

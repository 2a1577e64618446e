/* serve_text.c: a growable text buffer and JSON string literals. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve.h"

void serve_text_free(serve_text *t) {
    free(t->data);
    memset(t, 0, sizeof *t);
}

static bool reserve(serve_text *t, size_t more) {
    if (t->failed) return false;
    if (t->len + more + 1 <= t->cap) return true;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + more + 1) cap *= 2;
    char *p = realloc(t->data, cap);
    if (!p) {
        t->failed = true;
        return false;
    }
    t->data = p;
    t->cap = cap;
    return true;
}

void serve_text_add(serve_text *t, const char *s, size_t n) {
    if (!reserve(t, n)) return;
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

void serve_text_puts(serve_text *t, const char *s) { serve_text_add(t, s, strlen(s)); }

void serve_text_printf(serve_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(t, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!k || k > n) return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < k; i++) cp = cp << 6 | (s[i] & 0x3F);
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return k;
}

void serve_text_json_str(serve_text *t, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    serve_text_add(t, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            serve_text_add(t, esc, 2);
            i++;
        } else if (c < 0x20) {
            if (c == '\n') serve_text_add(t, "\\n", 2);
            else if (c == '\t') serve_text_add(t, "\\t", 2);
            else if (c == '\r') serve_text_add(t, "\\r", 2);
            else serve_text_printf(t, "\\u%04x", c);
            i++;
        } else {
            size_t k = utf8_len(u + i, n - i);
            if (k) serve_text_add(t, s + i, k);
            else serve_text_add(t, "\xEF\xBF\xBD", 3); /* U+FFFD for a byte that starts no valid sequence */
            i += k ? k : 1;
        }
    }
    serve_text_add(t, "\"", 1);
}

/* A growable text buffer for the exporters. Errors are sticky so an exporter
 * writes straight through and checks `failed` once at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace/trace_internal.h"

void tmem__sb_init(tmem__strbuf *sb) {
    memset(sb, 0, sizeof *sb);
    sb->sink = -1;
}

void tmem__sb_init_sink(tmem__strbuf *sb, int fd) {
    tmem__sb_init(sb);
    sb->sink = fd;
}

void tmem__sb_drain(tmem__strbuf *sb) {
    if (sb->sink < 0 || sb->failed || !sb->len) return;
    if (tmem__os_write_all(sb->sink, sb->data, sb->len) != TMEM_OK) sb->failed = sb->sink_failed = true;
    sb->len = 0;
    sb->data[0] = '\0';
}

void tmem__sb_free(tmem__strbuf *sb) {
    free(sb->data);
    tmem__sb_init(sb);
}

/* Make room for n more bytes plus the NUL. */
static bool reserve(tmem__strbuf *sb, size_t n) {
    if (sb->failed) return false;
    size_t need;
    if (__builtin_add_overflow(sb->len, n + 1, &need)) {
        sb->failed = true;
        return false;
    }
    if (need <= sb->cap) return true;
    size_t cap = sb->cap ? sb->cap : 4096;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            sb->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = true;
        return false;
    }
    sb->data = p;
    sb->cap = cap;
    return true;
}

enum { SINK_CHUNK = 1 << 20 };

void tmem__sb_putn(tmem__strbuf *sb, const char *s, size_t n) {
    if (sb->sink >= 0 && sb->len + n > SINK_CHUNK) tmem__sb_drain(sb);
    if (!reserve(sb, n)) return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void tmem__sb_puts(tmem__strbuf *sb, const char *s) { tmem__sb_putn(sb, s, strlen(s)); }

void tmem__sb_printf(tmem__strbuf *sb, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        tmem__sb_putn(sb, small, (size_t)n);
        return;
    }
    if (sb->sink >= 0 && sb->len + (size_t)n > SINK_CHUNK) tmem__sb_drain(sb);
    if (!reserve(sb, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void tmem__sb_json_str(tmem__strbuf *sb, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            tmem__sb_putn(sb, e, 2);
        } else if (*p < 0x20 || *p == 0x7f) {
            tmem__sb_printf(sb, "\\u%04x", *p);
        } else if (*p >= 0x80) {
            /* Names are bytes, not guaranteed UTF-8: keep JSON valid. */
            tmem__sb_printf(sb, "\\u%04x", *p);
        } else {
            tmem__sb_putn(sb, (const char *)p, 1);
        }
    }
}

void tmem__sb_html(tmem__strbuf *sb, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '<': tmem__sb_puts(sb, "&lt;"); break;
        case '>': tmem__sb_puts(sb, "&gt;"); break;
        case '&': tmem__sb_puts(sb, "&amp;"); break;
        case '"': tmem__sb_puts(sb, "&quot;"); break;
        case '\'': tmem__sb_puts(sb, "&#39;"); break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t') tmem__sb_puts(sb, "?");
            else if (*p >= 0x80) tmem__sb_printf(sb, "&#%u;", *p); /* Latin-1 view of raw bytes */
            else tmem__sb_putn(sb, (const char *)p, 1);
        }
    }
}

const char *tmem__fmt_bytes(uint64_t bytes, char *buf, size_t cap) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else snprintf(buf, cap, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, unit[u]);
    return buf;
}

tmem_status tmem__sb_take(tmem__strbuf *sb, char **out, size_t *out_len) {
    if (!sb->failed && !sb->data && reserve(sb, 0)) sb->data[0] = '\0'; /* empty text, not NULL */
    if (sb->failed) {
        tmem__sb_free(sb);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    *out = sb->data;
    if (out_len) *out_len = sb->len;
    tmem__sb_init(sb);
    return TMEM_OK;
}

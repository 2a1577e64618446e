/* A bounded text builder: writes what fits, counts everything, so one pass
 * both fills a caller's buffer and tells how big it must be. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core/core.h"

void tmem__tb_printf(tmem__tb *sb, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1; /* callers keep pieces short */
    if (sb->buf && sb->len < sb->cap) {
        size_t room = sb->cap - sb->len;
        memcpy(sb->buf + sb->len, tmp, len < room ? len : room);
    }
    sb->len += len;
}

void tmem__tb_json_string(tmem__tb *sb, const char *s) {
    tmem__tb_printf(sb, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') tmem__tb_printf(sb, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f) tmem__tb_printf(sb, "\\u%04x", *p); /* bytes, not UTF-8: stay valid JSON */
        else tmem__tb_printf(sb, "%c", *p);
    }
    tmem__tb_printf(sb, "\"");
}

tmem_status tmem__tb_finish(tmem__tb *sb, size_t *needed) {
    if (needed) *needed = sb->len + 1;
    if (sb->buf && sb->cap) {
        sb->buf[sb->len < sb->cap ? sb->len : sb->cap - 1] = '\0';
    }
    if (!sb->buf && !sb->cap) return TMEM_OK; /* a sizing call */
    return sb->len < sb->cap ? TMEM_OK : tmem__err(TMEM_E_FULL);
}

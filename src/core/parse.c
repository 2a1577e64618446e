/* Strict size and count parsing (include/typedmem/parse.h): integer
 * arithmetic, every overflow checked, nothing accepted that strtoull or
 * strtod would quietly bend (signs, spaces, hex, NaN, fractions). */
#include "typedmem/parse.h"

#include <string.h>

#include "core/internal.h"

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

static bool same_nocase(const char *p, size_t n, const char *w) {
    if (strlen(w) != n) return false;
    for (size_t i = 0; i < n; i++)
        if (lower(p[i]) != w[i]) return false;
    return true;
}

static tmem_status fail(tmem_status st, const char **why, const char *msg) {
    if (why) *why = msg;
    return st;
}

/* The leading digits of [p, p + len) into *out; *used = how many. */
static tmem_status digits(const char *p, size_t len, uint64_t *out, size_t *used, const char **why) {
    uint64_t n = 0;
    size_t i = 0;
    for (; i < len && is_digit(p[i]); i++)
        if (tmem__mul_overflow(n, 10, &n) || tmem__add_overflow(n, (uint64_t)(p[i] - '0'), &n))
            return fail(TMEM_E_OVERFLOW, why, "number overflows 64 bits");
    if (!i) {
        if (len && (p[0] == '-' || p[0] == '+'))
            return fail(TMEM_E_PARSE, why, "no sign allowed (a whole number >= 0)");
        return fail(TMEM_E_PARSE, why, "not a whole number (digits only)");
    }
    *out = n;
    *used = i;
    return TMEM_OK;
}

tmem_status tmem_parse_u64(const char *text, size_t len, uint64_t min, uint64_t max, uint64_t *out,
                           const char **why) {
    if (out) *out = 0;
    if (!text || !out || min > max) return fail(TMEM_E_INVALID_ARG, why, "invalid argument");
    uint64_t n;
    size_t used;
    tmem_status st = digits(text, len, &n, &used, why);
    if (st != TMEM_OK) return st;
    if (used != len) return fail(TMEM_E_PARSE, why, "not a whole number (digits only)");
    if (n < min || n > max) return fail(TMEM_E_LIMIT, why, "out of range");
    *out = n;
    return TMEM_OK;
}

tmem_status tmem_parse_size(const char *text, size_t len, uint64_t *out, const char **why) {
    if (out) *out = 0;
    if (!text || !out) return fail(TMEM_E_INVALID_ARG, why, "invalid argument");
    uint64_t n;
    size_t used;
    tmem_status st = digits(text, len, &n, &used, why);
    if (st == TMEM_E_PARSE) {
        bool sign = len && (text[0] == '-' || text[0] == '+');
        return fail(st, why, sign ? "a size must start with a digit, no sign (e.g. 512MiB)"
                                  : "a size must start with a digit (e.g. 512MiB)");
    }
    if (st != TMEM_OK) return st;
    const char *u = text + used;
    size_t ulen = len - used;
    if (ulen && (*u == '.' || *u == ','))
        return fail(TMEM_E_PARSE, why, "sizes are whole numbers (write 1536MiB, not 1.5GiB)");
    if (ulen && (*u == 'x' || *u == 'X') && n == 0) return fail(TMEM_E_PARSE, why, "no hex: write the size in decimal");
    while (ulen && *u == ' ') u++, ulen--;
    if (!ulen && used != len) return fail(TMEM_E_PARSE, why, "trailing space after the size");
    static const struct { const char *name; uint64_t mul; } units[] = {
        {"", 1},
        {"b", 1},
        {"k", 1ull << 10},
        {"kib", 1ull << 10},
        {"m", 1ull << 20},
        {"mib", 1ull << 20},
        {"g", 1ull << 30},
        {"gib", 1ull << 30},
        {"t", 1ull << 40},
        {"tib", 1ull << 40},
        {"kb", 1000ull},
        {"mb", 1000000ull},
        {"gb", 1000000000ull},
        {"tb", 1000000000000ull},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!same_nocase(u, ulen, units[i].name)) continue;
        uint64_t b;
        if (tmem__mul_overflow(n, units[i].mul, &b)) return fail(TMEM_E_OVERFLOW, why, "size overflows 64 bits");
        *out = b;
        return TMEM_OK;
    }
    return fail(TMEM_E_PARSE, why, "unknown size unit (use B, KiB, MiB, GiB, TiB (or K, M, G, T) or KB, MB, GB, TB)");
}

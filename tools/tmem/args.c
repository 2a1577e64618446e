/* args.c: see args.h. Values must start with a digit: strtoull and strtod
 * skip spaces and take signs, and strtod reads "nan" and "inf". */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "args.h"

static bool starts_digit(const char *s) { return s && *s >= '0' && *s <= '9'; }

bool tmem_arg_u64(const char *s, uint64_t *out) {
    if (!starts_digit(s)) return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

bool tmem_arg_size(const char *s, uint64_t *out) {
    if (!starts_digit(s)) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v >= 0)) return false;
    static const struct { const char *suffix; double mul; } units[] = {
        {"", 1}, {"b", 1}, {"k", 1024.0}, {"kib", 1024.0}, {"m", 1048576.0}, {"mib", 1048576.0},
        {"g", 1073741824.0}, {"gib", 1073741824.0}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
        {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcasecmp(end, units[i].suffix)) {
            double b = v * units[i].mul;
            if (b >= 18446744073709551615.0) return false;
            *out = (uint64_t)b;
            return true;
        }
    return false;
}

bool tmem_arg_float(const char *s, float *out) {
    if (!starts_digit(s)) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < 0 || v > 1e30) return false;
    *out = (float)v;
    return true;
}

bool tmem_arg_ids(const char *s, int32_t *ids, uint32_t cap, uint32_t *n) {
    *n = 0;
    if (!s || !*s) return false;
    while (*s) {
        if (!starts_digit(s) || *n == cap) return false;
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || v > INT32_MAX) return false;
        ids[(*n)++] = (int32_t)v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return false;
    }
    return *n > 0;
}

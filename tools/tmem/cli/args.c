/* args.c: see args.h. Values must start with a digit: strtoull and strtod
 * skip spaces and take signs, and strtod reads "nan" and "inf". */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli/args.h"
#include "typedmem/parse.h"

static bool starts_digit(const char *s) { return s && *s >= '0' && *s <= '9'; }

/* Counts and sizes: the library's one strict parser (typedmem/parse.h),
 * the same as the config file and every other tmem command. */
bool tmem_arg_u64(const char *s, uint64_t *out) {
    return s && tmem_parse_u64(s, strlen(s), 0, UINT64_MAX, out, NULL) == TMEM_OK;
}

bool tmem_arg_size(const char *s, uint64_t *out) { return s && tmem_parse_size(s, strlen(s), out, NULL) == TMEM_OK; }

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

/* Decode the base64 payload of a data: URL in an HTML page (the report's
 * plan picture). Header-only, for the report tests. */
#ifndef TMEM_TEST_DATA_URL_H
#define TMEM_TEST_DATA_URL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The data: URL's payload of the first <img ... src="data:MIME;base64,..."
 * after `from`, decoded; NULL when there is none. */
static inline char *img_data(const char *from) {
    const char *p = from ? strstr(from, ";base64,") : NULL;
    if (!p) return NULL;
    p += 8;
    const char *end = strchr(p, '"');
    if (!end) return NULL;
    char *out = malloc((size_t)(end - p) + 1);
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (; p < end; p++) {
        const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *c = *p ? strchr(abc, *p) : NULL;
        if (!c) continue; /* '=' padding */
        acc = acc << 6 | (uint32_t)(c - abc);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[n] = '\0';
    return out;
}

#endif

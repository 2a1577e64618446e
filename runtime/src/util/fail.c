/* fail.c: the one fail formatter (util/fail.h). */
#include <stdarg.h>
#include <stdio.h>
#include "util/fail.h"

tmem_status tmrt__fail(tmrt_error *err, tmem_status st, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return st;
}

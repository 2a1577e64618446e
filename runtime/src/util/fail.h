/* The runtime's one fail formatter: every error of every module starts
 * here, so a breakpoint on tmrt__fail stops at the first sign of any of
 * them. The message goes into the caller's tmrt_error (NULL: none). */
#ifndef TMRT_FAIL_H
#define TMRT_FAIL_H

#include "tmemrt/error.h"

/* printf into err->message (clipped; NULL err ok); returns st, so
 * `return tmrt__fail(err, TMEM_E_CORRUPT, "...", ...)` reads naturally. */
tmem_status tmrt__fail(tmrt_error *err, tmem_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

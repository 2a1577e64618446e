/* A message into a caller's char buffer (NULL or cap 0: none), for the
 * modules that report errors as text (image decoders, vision). */
#ifndef TMRT_ERRORF_H
#define TMRT_ERRORF_H

#include <stddef.h>

/* snprintf into err; returns -1 so `return tmrt__errorf(...)` reads naturally. */
int tmrt__errorf(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

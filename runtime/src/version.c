/* version.c: the runtime's version (the library's, they ship together). */
#include "tmemrt/runtime.h"

const char *tmrt_version(void) { return "0.1.0"; }

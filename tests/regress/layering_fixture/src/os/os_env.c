/* fixture: the OS layer may call the OS */
#include <stdlib.h>
const char *os_env(void) { return getenv("HOME"); }

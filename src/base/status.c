/* Status names and messages (generated from TMEM_STATUS_LIST), the one
 * place internal errors start (tmem__err) and the assert failure path. */
#include "typedmem/status.h"

const char *tmem_strerror(tmem_status status) {
    switch (status) {
#define TMEM_STATUS_MSG_(name, value, msg) case name: return msg;
        TMEM_STATUS_LIST(TMEM_STATUS_MSG_)
#undef TMEM_STATUS_MSG_
    }
    return "unknown status";
}

const char *tmem_status_name(tmem_status status) {
    switch (status) {
#define TMEM_STATUS_NAME_(name, value, msg) case name: return #name;
        TMEM_STATUS_LIST(TMEM_STATUS_NAME_)
#undef TMEM_STATUS_NAME_
    }
    return "TMEM_E_UNKNOWN";
}

#include "base/base.h"
#include <stdio.h>
#include <stdlib.h>

/* One place every internal error passes: set a breakpoint here. */
tmem_status tmem__err(tmem_status code) {
    return code;
}

void tmem__assert_fail(const char *expr, const char *file, int line) {
    /* Internal invariant broken: a typedmem bug, never bad caller input. */
    fprintf(stderr, "typedmem: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

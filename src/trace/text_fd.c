/* The trace layer's use of the one text builder (base/text.h): a sink that
 * streams into a file descriptor, and byte counts in human units. */
#include <stdio.h>
#include "trace/trace_internal.h"

static bool fd_sink(void *arg, const char *data, size_t len) {
    int fd = (int)(intptr_t)arg;
    return tmem__os_write_all(fd, data, len) == TMEM_OK;
}

void tmem__trace_text_fd(tmem__text *t, int fd) {
    tmem__text_init_sink(t, fd_sink, (void *)(intptr_t)fd);
}

const char *tmem__fmt_bytes(uint64_t bytes, char *buf, size_t cap) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else snprintf(buf, cap, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, unit[u]);
    return buf;
}

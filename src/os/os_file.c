/*
 * Plain files written and read by byte stream (trace files, exported reports),
 * writes to a caller's FILE stream (plans written as CSV, JSON, SVG) and the
 * monotonic clock. Model files are mapped instead (os_fd.c).
 *
 * write(2) and read(2) may be short or interrupted by a signal: write_all
 * loops until every byte is out, read loops over EINTR, so callers never see
 * either.
 */
#include "os/os_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

uint64_t tmem__os_now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0; /* CLOCK_MONOTONIC is mandatory in POSIX 2008 */
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

tmem_status tmem__os_file_create(const char *path, int *out_fd) {
    if (out_fd) *out_fd = -1;
    if (!path || !*path || !out_fd) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_FILE_CREATE);
    if (st != TMEM_OK) return st;
    int fd;
    do fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666); /* the umask decides */
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) return TMEM_E_NOT_FOUND;
        if (e == EISDIR) return TMEM_E_INVALID_ARG;
        return tmem__os_status_from_errno(e);
    }
    tmem__os_count_fd(+1);
    *out_fd = fd;
    return TMEM_OK;
}

tmem_status tmem__os_write_all(int fd, const void *buf, size_t len) {
    if (fd < 0 || (!buf && len)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_WRITE);
    if (st != TMEM_OK) return st;
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            /* A full disk or file size limit is an I/O failure, not a memory one. */
            return e == ENOSPC || e == EFBIG || e == EDQUOT ? TMEM_E_IO : tmem__os_status_from_errno(e);
        }
        if (n == 0) return TMEM_E_IO; /* no progress: never spin */
        p += n;
        len -= (size_t)n;
    }
    return TMEM_OK;
}

tmem_status tmem__os_read(int fd, void *buf, size_t cap, size_t *out_got) {
    if (out_got) *out_got = 0;
    if (fd < 0 || !out_got || (!buf && cap)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_READ);
    if (st != TMEM_OK) return st;
    ssize_t n;
    do n = read(fd, buf, cap);
    while (n < 0 && errno == EINTR);
    if (n < 0) return tmem__os_status_from_errno(errno);
    *out_got = (size_t)n;
    return TMEM_OK;
}

tmem_status tmem__os_unlink(const char *path) {
    if (!path || !*path) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_UNLINK);
    if (st != TMEM_OK) return st;
    if (unlink(path) == 0) return TMEM_OK;
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) return TMEM_E_NOT_FOUND;
    return tmem__os_status_from_errno(e);
}

tmem_status tmem__os_stream_write(FILE *f, const void *buf, size_t len) {
    if (!f || (!buf && len)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_STREAM_WRITE);
    if (st != TMEM_OK) return st;
    if (len && fwrite(buf, 1, len, f) != len) return TMEM_E_IO;
    return TMEM_OK;
}

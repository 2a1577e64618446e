/*
 * File conveniences above the pure layers: the planner parses CSV from
 * memory (src/plan has no OS calls); reading the file is done here, through
 * the OS layer's byte-stream calls (so fault injection reaches it).
 */
#include "core/internal.h"
#include "os/os.h"
#include "typedmem/plan_io.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_CSV_MAX ((size_t)1 << 30)

tmem_status tmem_plan_problem_load_csv(const char *path, tmem_plan_problem **out, tmem_plan_error *err) {
    if (out) *out = NULL;
    if (err) memset(err, 0, sizeof *err);
    if (!path || !out) return tmem__err(TMEM_E_INVALID_ARG);
    int fd;
    uint64_t fsize;
    tmem_status ost = tmem__os_file_open(path, &fd, &fsize);
    if (ost != TMEM_OK) {
        /* the status, not errno: a rejected directory or fifo sets none */
        if (err)
            snprintf(err->message, sizeof err->message, "cannot open: %s",
                     ost == TMEM_E_NOT_FOUND     ? "no such file"
                     : ost == TMEM_E_INVALID_ARG ? "not a regular file (a directory, device or fifo?)"
                                                 : tmem_strerror(ost));
        return tmem__err(TMEM_E_IO);
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    tmem_status st = buf ? TMEM_OK : tmem__err(TMEM_E_NO_MEMORY);
    while (st == TMEM_OK) {
        if (len == cap) {
            if (cap >= PLAN_CSV_MAX) {
                if (err) snprintf(err->message, sizeof err->message, "file larger than 1 GiB");
                st = tmem__err(TMEM_E_IO);
                break;
            }
            char *q = realloc(buf, cap * 2);
            if (!q) {
                st = tmem__err(TMEM_E_NO_MEMORY);
                break;
            }
            buf = q;
            cap *= 2;
        }
        size_t r;
        if (tmem__os_read(fd, buf + len, cap - len, &r) != TMEM_OK) {
            if (err) snprintf(err->message, sizeof err->message, "read error");
            st = tmem__err(TMEM_E_IO);
            break;
        }
        if (r == 0) break;
        len += r;
    }
    (void)tmem__os_close(fd); /* read-only: a failed close loses nothing */
    if (st == TMEM_OK) st = tmem_plan_problem_parse_csv(buf, len, out, err);
    free(buf);
    return st;
}

/* save_file.c: complete-or-absent files (save_file.h). */
#include "save_file.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fail.h"
#include "tmemrt/testing.h"

int tmrt__save_fault_countdown = -1;

void tmrt_testing_save_fault(int nth) { tmrt__save_fault_countdown = nth; }

/* One fallible step: the planted fault, else ok. */
static bool fault(void) {
    if (tmrt__save_fault_countdown < 0) return false;
    if (tmrt__save_fault_countdown-- == 0) {
        errno = EIO;
        return true;
    }
    return false;
}

uint64_t tmrt__fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* a word at a time: the payload is tens of MiB */
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static tmem_status io_fail(tmrt_save *sv, const char *what, tmrt_error *err) {
    int e = errno;
    tmrt__save_abort(sv);
    return tmrt__fail(err, TMEM_E_OS, "%s %s: %s", what, sv->path, strerror(e));
}

tmem_status tmrt__save_begin(tmrt_save *sv, const char *path, size_t header_bytes, tmrt_error *err) {
    memset(sv, 0, sizeof *sv);
    size_t len = path ? strlen(path) : 0;
    if (!len || len >= sizeof sv->path) return tmrt__fail(err, TMEM_E_INVALID_ARG, "save: bad path");
    memcpy(sv->path, path, len + 1);
    memcpy(sv->tmp, path, len);
    memcpy(sv->tmp + len, ".tmp", 5);
    sv->hash = TMRT_FNV_INIT;
    if (fault() || !(sv->f = fopen(sv->tmp, "wb"))) {
        int e = errno;
        return tmrt__fail(err, TMEM_E_OS, "create %s: %s", sv->tmp, strerror(e));
    }
    static const unsigned char zeros[256];
    for (size_t done = 0; done < header_bytes;) {
        size_t n = header_bytes - done < sizeof zeros ? header_bytes - done : sizeof zeros;
        if (fault() || fwrite(zeros, 1, n, sv->f) != n) return io_fail(sv, "write", err);
        done += n;
    }
    sv->bytes = header_bytes;
    return TMEM_OK;
}

tmem_status tmrt__save_write(tmrt_save *sv, const void *p, size_t n, tmrt_error *err) {
    if (!n) return TMEM_OK;
    if (fault() || fwrite(p, 1, n, sv->f) != n) return io_fail(sv, "write", err);
    sv->hash = tmrt__fnv1a(sv->hash, p, n);
    sv->bytes += n;
    return TMEM_OK;
}

/* fsync the directory holding path, so the rename itself is durable. */
static int sync_dir(const char *path) {
    char dir[TMRT_SAVE_PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) memcpy(dir, ".", 2);
    else if (slash == path) memcpy(dir, "/", 2);
    else {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}

tmem_status tmrt__save_commit(tmrt_save *sv, const void *header, size_t header_bytes, tmrt_error *err) {
    if (fault() || fseek(sv->f, 0, SEEK_SET)) return io_fail(sv, "seek", err);
    if (fault() || fwrite(header, 1, header_bytes, sv->f) != header_bytes) return io_fail(sv, "write", err);
    if (fault() || fflush(sv->f)) return io_fail(sv, "flush", err);
    if (fault() || fsync(fileno(sv->f))) return io_fail(sv, "fsync", err);
    FILE *f = sv->f;
    sv->f = NULL;
    if (fault() | (fclose(f) != 0)) {
        int e = errno;
        unlink(sv->tmp);
        return tmrt__fail(err, TMEM_E_OS, "close %s: %s", sv->tmp, strerror(e));
    }
    if (fault() || rename(sv->tmp, sv->path)) {
        int e = errno;
        unlink(sv->tmp);
        return tmrt__fail(err, TMEM_E_OS, "rename %s: %s", sv->path, strerror(e));
    }
    /* the file is complete under its name; a directory that cannot be
     * synced (some file systems) leaves only the rename's durability to
     * the next sync, so this is not an error */
    (void)sync_dir(sv->path);
    return TMEM_OK;
}

void tmrt__save_abort(tmrt_save *sv) {
    if (sv->f) fclose(sv->f);
    sv->f = NULL;
    if (sv->tmp[0]) unlink(sv->tmp);
}

/*
 * Output files replaced atomically (docs/reliability.md, "Files written"):
 * the bytes go to a temporary file in the target's directory, and commit
 * fsyncs it and renames it over the target, so a reader of the old file
 * (a mapped model, say) keeps its inode, a failed or interrupted write leaves
 * the previous file as it was, and nothing but our own temporary name is
 * ever unlinked.
 *
 * The temporary is anonymous where the kernel offers O_TMPFILE (a kill, even
 * SIGKILL, then leaves nothing behind) and gets a name only at commit
 * (linkat through /proc/self/fd); elsewhere it is ".NAME.tmem-PID-N" beside
 * the target, created O_EXCL. A symlink output is written through: the
 * link's target is replaced, the link stays. A target that exists and is not
 * a regular file (directory, device, fifo, socket), or a dangling symlink, is
 * refused before anything is created. An existing target's permission bits
 * carry over to the new file.
 */
#include "os/os_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

static atomic_uint tmp_counter;

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "is a directory";
    if (S_ISCHR(m) || S_ISBLK(m)) return "is a device";
    if (S_ISFIFO(m)) return "is a fifo";
    if (S_ISSOCK(m)) return "is a socket";
    return "is not a regular file";
}

/* "<dir>/.<base>.tmem-<pid>-<n>" for the final path into af->tmp. */
static bool tmp_name(tmem__os_afile *af) {
    const char *slash = strrchr(af->final, '/');
    int dl = slash ? (int)(slash - af->final) : 1;
    const char *dir = slash ? af->final : ".", *base = slash ? slash + 1 : af->final;
    if (slash && dl == 0) dl = 1; /* "/x": the root */
    unsigned n = atomic_fetch_add(&tmp_counter, 1);
    int w = snprintf(af->tmp, sizeof af->tmp, "%.*s/.%s.tmem-%ld-%u", dl, dir, base, (long)getpid(), n);
    return w > 0 && (size_t)w < sizeof af->tmp;
}

/* The file path names in the end (a symlink's target) into target, and
 * whether it exists; refuse a special file or a dangling link. */
static tmem_status resolve(const char *path, char target[PATH_MAX], struct stat *s, bool *exists,
                           const char **why) {
    *exists = false;
    if (strlen(path) >= PATH_MAX) {
        *why = "path is too long";
        return TMEM_E_INVALID_ARG;
    }
    strcpy(target, path);
    if (lstat(path, s) == 0) {
        if (S_ISLNK(s->st_mode) && (!realpath(path, target) || stat(target, s) != 0)) {
            *why = "is a symbolic link whose target cannot be resolved";
            return TMEM_E_NOT_FOUND;
        }
        if (!S_ISREG(s->st_mode)) {
            *why = kind_of(s->st_mode);
            return TMEM_E_INVALID_ARG;
        }
        *exists = true;
    } else if (errno != ENOENT) {
        int e = errno;
        *why = strerror(e);
        return e == ENOTDIR ? TMEM_E_NOT_FOUND : tmem__os_status_from_errno(e);
    }
    return TMEM_OK;
}

tmem_status tmem__os_afile_check(const char *path, const char **why) {
    static const char *none = "";
    const char *dummy;
    if (!why) why = &dummy;
    *why = none;
    if (!path || !*path) return TMEM_E_INVALID_ARG;
    char target[PATH_MAX];
    struct stat s;
    bool exists;
    return resolve(path, target, &s, &exists, why);
}

tmem_status tmem__os_afile_create(const char *path, tmem__os_afile *af, const char **why) {
    static const char *none = "";
    const char *dummy;
    if (!why) why = &dummy;
    *why = none;
    if (!af) return TMEM_E_INVALID_ARG;
    memset(af, 0, sizeof *af);
    af->fd = -1;
    if (!path || !*path) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_FILE_CREATE);
    if (st != TMEM_OK) return st;
    struct stat s;
    char target[PATH_MAX];
    bool exists = false;
    if ((st = resolve(path, target, &s, &exists, why))) return st;
    size_t len = strlen(target);
    if (len >= sizeof af->final) {
        *why = "path is too long";
        return TMEM_E_INVALID_ARG;
    }
    memcpy(af->final, target, len + 1);
    char dir[sizeof af->final];
    const char *slash = strrchr(af->final, '/');
    if (!slash) {
        dir[0] = '.', dir[1] = 0;
    } else {
        size_t dl = slash == af->final ? 1 : (size_t)(slash - af->final);
        memcpy(dir, af->final, dl);
        dir[dl] = 0;
    }
    int fd = -1, e = 0;
#ifdef O_TMPFILE
    do fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666); /* the umask decides */
    while (fd < 0 && errno == EINTR);
    if (fd >= 0) af->anon = true;
    else e = errno;
#else
    e = EOPNOTSUPP;
#endif
    if (fd < 0 && (e == EOPNOTSUPP || e == EISDIR || e == EINVAL)) { /* no O_TMPFILE here: a name */
        for (int tries = 0; tries < 100 && fd < 0; tries++) {
            if (!tmp_name(af)) {
                *why = "path is too long";
                return TMEM_E_INVALID_ARG;
            }
            do fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            while (fd < 0 && errno == EINTR);
            e = fd < 0 ? errno : 0;
            if (fd < 0 && e != EEXIST) break;
        }
    }
    if (fd < 0) {
        af->tmp[0] = 0;
        *why = strerror(e);
        if (e == ENOENT || e == ENOTDIR) return TMEM_E_NOT_FOUND;
        return tmem__os_status_from_errno(e);
    }
    if (exists) (void)fchmod(fd, s.st_mode & 07777); /* best effort: the old file's permissions */
    tmem__os_count_fd(+1);
    af->fd = fd;
    return TMEM_OK;
}

FILE *tmem__os_afile_stream(tmem__os_afile *af) {
    if (!af || af->fd < 0) return NULL;
    if (!af->stream) af->stream = fdopen(af->fd, "wb");
    return af->stream;
}

static void close_fd(tmem__os_afile *af) {
    if (af->stream) {
        (void)fclose(af->stream); /* closes af->fd */
        tmem__os_count_fd(-1);
    } else if (af->fd >= 0) {
        (void)tmem__os_close(af->fd);
    }
    af->stream = NULL;
    af->fd = -1;
}

tmem_status tmem__os_afile_commit(tmem__os_afile *af) {
    if (!af || af->fd < 0) return TMEM_E_INVALID_ARG;
    tmem_status st = TMEM_OK;
    if (af->stream && (fflush(af->stream) != 0 || ferror(af->stream))) st = TMEM_E_IO;
    if (!st && fsync(af->fd) != 0 && errno != EINVAL) st = TMEM_E_IO; /* EINVAL: a file system without fsync */
    if (!st && af->anon) {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", af->fd);
        st = TMEM_E_EXISTS;
        for (int tries = 0; tries < 100 && st == TMEM_E_EXISTS; tries++) {
            if (!tmp_name(af)) {
                st = TMEM_E_INVALID_ARG;
                break;
            }
            if (linkat(AT_FDCWD, proc, AT_FDCWD, af->tmp, AT_SYMLINK_FOLLOW) == 0) st = TMEM_OK;
            else st = errno == EEXIST ? TMEM_E_EXISTS : tmem__os_status_from_errno(errno);
        }
        if (st) af->tmp[0] = 0; /* no name was made: nothing to remove */
    }
    if (!st && rename(af->tmp, af->final) != 0) st = tmem__os_status_from_errno(errno);
    close_fd(af);
    if (st) {
        tmem__os_afile_abort(af);
        return st;
    }
    af->tmp[0] = 0;
    /* the rename itself survives a crash once the directory is synced */
    char dir[sizeof af->final];
    const char *slash = strrchr(af->final, '/');
    size_t dl = !slash ? 0 : slash == af->final ? 1 : (size_t)(slash - af->final);
    if (dl) memcpy(dir, af->final, dl);
    else dir[dl++] = '.';
    dir[dl] = 0;
    int dfd = open(dir, O_RDONLY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        (void)close(dfd);
    }
    return TMEM_OK;
}

void tmem__os_afile_abort(tmem__os_afile *af) {
    if (!af) return;
    close_fd(af);
    if (af->tmp[0]) (void)unlink(af->tmp); /* only ever our own temporary */
    af->tmp[0] = 0;
}

bool tmem__os_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) != 0 || stat(b, &sb) != 0) return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

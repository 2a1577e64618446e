/*
 * File descriptors: memfd with seals (Linux), read-only files, fd mappings.
 *
 * memfd_create(MFD_CLOEXEC | MFD_ALLOW_SEALING) gives anonymous shareable
 * memory that another process can map after receiving the fd; seals make the
 * sharing safe (the receiver knows the size and contents cannot change under
 * it). F_SEAL_FUTURE_WRITE (Linux 5.1) forbids new writable mappings while
 * keeping the creator's existing one, so a producer can keep writing.
 */
#include "os/os_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__linux__)
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#define F_SEAL_WRITE 0x0008
#endif
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#define MFD_ALLOW_SEALING 0x0002U
#endif
#define TMEM_HAVE_MEMFD 1
#else
#define TMEM_HAVE_MEMFD 0
#endif

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

static const uint64_t k_off_max = (uint64_t)INT64_MAX; /* off_t is 64-bit under _GNU_SOURCE on our targets */

static tmem_status errno_status(void) { return tmem__os_status_from_errno(errno); }

tmem_status tmem__os_memfd_create(const char *name, uint64_t size, int *out_fd) {
    if (!out_fd) return TMEM_E_INVALID_ARG;
    *out_fd = -1;
    if (size > k_off_max || (uint64_t)(off_t)size != size) return TMEM_E_OVERFLOW;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_MEMFD_CREATE);
    if (st != TMEM_OK) return st;
#if TMEM_HAVE_MEMFD
    /* The kernel limits names to 249 bytes; the name is only a debugging aid
     * (/proc/<pid>/fd shows "memfd:<name>"), so truncate instead of failing. */
    char nm[64];
    snprintf(nm, sizeof nm, "%s", name && *name ? name : "typedmem");
    int fd = memfd_create(nm, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return errno_status();
    if (size && ftruncate(fd, (off_t)size) != 0) {
        int e = errno;
        (void)close(fd);
        return tmem__os_status_from_errno(e == EFBIG ? ENOMEM : e);
    }
    tmem__os_count_fd(+1);
    *out_fd = fd;
    return TMEM_OK;
#else
    (void)name;
    return TMEM_E_UNSUPPORTED;
#endif
}

#if TMEM_HAVE_MEMFD
static const struct { unsigned ours; int linux_seal; } k_seals[] = {
    {TMEM__OS_SEAL_SEAL, F_SEAL_SEAL},   {TMEM__OS_SEAL_SHRINK, F_SEAL_SHRINK},
    {TMEM__OS_SEAL_GROW, F_SEAL_GROW},   {TMEM__OS_SEAL_WRITE, F_SEAL_WRITE},
    {TMEM__OS_SEAL_FUTURE_WRITE, F_SEAL_FUTURE_WRITE},
};
#endif
#define SEAL_MASK                                                                           \
    (TMEM__OS_SEAL_SEAL | TMEM__OS_SEAL_SHRINK | TMEM__OS_SEAL_GROW | TMEM__OS_SEAL_WRITE | \
     TMEM__OS_SEAL_FUTURE_WRITE)

tmem_status tmem__os_memfd_seal(int fd, unsigned seals) {
    if (fd < 0 || (seals & ~(unsigned)SEAL_MASK) != 0) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_MEMFD_SEAL);
    if (st != TMEM_OK) return st;
#if TMEM_HAVE_MEMFD
    int linux_seals = 0;
    for (size_t i = 0; i < sizeof k_seals / sizeof k_seals[0]; i++)
        if (seals & k_seals[i].ours) linux_seals |= k_seals[i].linux_seal;
    if (fcntl(fd, F_ADD_SEALS, linux_seals) == 0) return TMEM_OK;
    int e = errno;
    switch (e) {
    case EPERM: return TMEM_E_PERMISSION; /* already F_SEAL_SEAL'ed */
    case EBUSY: return TMEM_E_BUSY;       /* F_SEAL_WRITE with a writable shared mapping alive */
    case EINVAL:
        /* Not a sealable fd, or a kernel older than F_SEAL_FUTURE_WRITE: ask
         * the kernel which by checking the fd supports sealing at all. */
        if ((seals & TMEM__OS_SEAL_FUTURE_WRITE) && fcntl(fd, F_GET_SEALS) >= 0) return TMEM_E_UNSUPPORTED;
        return TMEM_E_INVALID_ARG;
    default: return tmem__os_status_from_errno(e);
    }
#else
    return TMEM_E_UNSUPPORTED;
#endif
}

tmem_status tmem__os_fd_seals(int fd, unsigned *out_seals) {
    if (!out_seals) return TMEM_E_INVALID_ARG;
    *out_seals = 0;
    if (fd < 0) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_FD_SEALS);
    if (st != TMEM_OK) return st;
#if TMEM_HAVE_MEMFD
    int s = fcntl(fd, F_GET_SEALS);
    if (s < 0) return errno == EINVAL ? TMEM_E_UNSUPPORTED : errno_status();
    unsigned ours = 0;
    for (size_t i = 0; i < sizeof k_seals / sizeof k_seals[0]; i++)
        if (s & k_seals[i].linux_seal) ours |= k_seals[i].ours;
    *out_seals = ours;
    return TMEM_OK;
#else
    return TMEM_E_UNSUPPORTED;
#endif
}

tmem_status tmem__os_fd_resize(int fd, uint64_t size) {
    if (fd < 0) return TMEM_E_INVALID_ARG;
    if (size > k_off_max) return TMEM_E_OVERFLOW;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_FD_RESIZE);
    if (st != TMEM_OK) return st;
    if (ftruncate(fd, (off_t)size) != 0) {
        int e = errno;
        return tmem__os_status_from_errno(e == EFBIG ? ENOMEM : e); /* EPERM: sealed */
    }
    return TMEM_OK;
}

tmem_status tmem__os_map_fd(int fd, uint64_t offset, size_t size, bool writable, bool shared, void **out) {
    if (!out) return TMEM_E_INVALID_ARG;
    *out = NULL;
    if (fd < 0 || size == 0 || offset % tmem__os_page_size() != 0) return TMEM_E_INVALID_ARG;
    if (offset > k_off_max) return TMEM_E_OVERFLOW;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_MAP_FD);
    if (st != TMEM_OK) return st;
    int prot = PROT_READ | (writable ? PROT_WRITE : 0);
    void *p = mmap(NULL, size, prot, shared ? MAP_SHARED : MAP_PRIVATE, fd, (off_t)offset);
    if (p == MAP_FAILED) return errno_status(); /* EPERM/EACCES: sealed or read-only fd */
    tmem__os_count_mapping(+1);
    *out = p;
    return TMEM_OK;
}

tmem_status tmem__os_file_open(const char *path, int *out_fd, uint64_t *out_size) {
    if (out_fd) *out_fd = -1;
    if (out_size) *out_size = 0;
    if (!path || !*path || !out_fd) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_FILE_OPEN);
    if (st != TMEM_OK) return st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) return TMEM_E_NOT_FOUND;
        if (e == EISDIR) return TMEM_E_INVALID_ARG;
        return tmem__os_status_from_errno(e);
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        (void)close(fd);
        return tmem__os_status_from_errno(e);
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size < 0) { /* a device, fifo or socket cannot be mapped as a model file */
        (void)close(fd);
        return TMEM_E_INVALID_ARG;
    }
    tmem__os_count_fd(+1);
    *out_fd = fd;
    if (out_size) *out_size = (uint64_t)sb.st_size;
    return TMEM_OK;
}

tmem_status tmem__os_fd_size(int fd, uint64_t *out_size) {
    if (!out_size) return TMEM_E_INVALID_ARG;
    *out_size = 0;
    if (fd < 0) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_FD_SIZE);
    if (st != TMEM_OK) return st;
    struct stat sb;
    if (fstat(fd, &sb) != 0) return errno == EBADF ? TMEM_E_INVALID_ARG : errno_status();
    *out_size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    return TMEM_OK;
}

tmem_status tmem__os_close(int fd) {
    if (fd < 0) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_CLOSE);
    if (st != TMEM_OK) return st;
    if (close(fd) != 0) {
        int e = errno;
        if (e == EBADF) return TMEM_E_INVALID_ARG;
        /* On Linux the descriptor is gone even when close reports EINTR/EIO. */
        tmem__os_count_fd(-1);
        return tmem__os_status_from_errno(e);
    }
    tmem__os_count_fd(-1);
    return TMEM_OK;
}

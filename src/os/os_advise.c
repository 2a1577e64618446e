/*
 * Advice, locking and residency: madvise, mlock/munlock, mincore.
 *
 * Advice the kernel may lack (MADV_FREE 4.5, MADV_COLD/PAGEOUT 5.4,
 * MADV_HUGEPAGE without THP) fails with EINVAL; since we validate the range
 * ourselves first, EINVAL there means "not supported here" and reads as
 * TMEM_E_UNSUPPORTED. A constant missing from the headers reads the same.
 */
#include "os/os_internal.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

static bool range_ok(const void *addr, size_t size) {
    size_t p = tmem__os_page_size();
    return addr != NULL && size > 0 && ((uintptr_t)addr % p) == 0 && (size % p) == 0;
}

/* The MADV_ constant for an advice, or -1 when this build has none. */
static int advice_flag(tmem__os_advice advice, bool *optional) {
    *optional = true;
    switch (advice) {
    case TMEM__OS_ADVISE_DONTNEED: *optional = false;
#ifdef MADV_DONTNEED
        return MADV_DONTNEED;
#else
        return POSIX_MADV_DONTNEED;
#endif
    case TMEM__OS_ADVISE_WILLNEED: *optional = false;
#ifdef MADV_WILLNEED
        return MADV_WILLNEED;
#else
        return POSIX_MADV_WILLNEED;
#endif
    case TMEM__OS_ADVISE_FREE:
#ifdef MADV_FREE
        return MADV_FREE;
#else
        return -1;
#endif
    case TMEM__OS_ADVISE_COLD:
#ifdef MADV_COLD
        return MADV_COLD;
#else
        return -1;
#endif
    case TMEM__OS_ADVISE_PAGEOUT:
#ifdef MADV_PAGEOUT
        return MADV_PAGEOUT;
#else
        return -1;
#endif
    case TMEM__OS_ADVISE_HUGEPAGE:
#ifdef MADV_HUGEPAGE
        return MADV_HUGEPAGE;
#else
        return -1;
#endif
    case TMEM__OS_ADVISE_NOHUGEPAGE:
#ifdef MADV_NOHUGEPAGE
        return MADV_NOHUGEPAGE;
#else
        return -1;
#endif
    }
    return -2;
}

tmem_status tmem__os_advise(void *addr, size_t size, tmem__os_advice advice) {
    if (!range_ok(addr, size)) return TMEM_E_INVALID_ARG;
    bool optional;
    int flag = advice_flag(advice, &optional);
    if (flag == -2) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_ADVISE);
    if (st != TMEM_OK) return st;
    if (flag == -1) return TMEM_E_UNSUPPORTED;
    if (madvise(addr, size, flag) == 0) return TMEM_OK;
    int e = errno;
    if (e == EINVAL && optional) return TMEM_E_UNSUPPORTED;
    return tmem__os_status_from_errno(e);
}

/* Sanitizer runtimes replace mlock/munlock with no-ops (they fear locking
 * shadow memory), which would make locked placements silently unlocked in
 * ASan builds; the raw system call keeps the semantics tests check. */
int tmem__os_mlock_raw(const void *addr, size_t size) {
#if defined(__linux__) && defined(SYS_mlock)
    return (int)syscall(SYS_mlock, addr, size);
#else
    return mlock(addr, size);
#endif
}

static int munlock_raw(const void *addr, size_t size) {
#if defined(__linux__) && defined(SYS_munlock)
    return (int)syscall(SYS_munlock, addr, size);
#else
    return munlock(addr, size);
#endif
}

tmem_status tmem__os_lock_errno_status(int err) {
    if (err == EPERM) return TMEM_E_PERMISSION;
    if (err == ENOMEM) {
        /* ENOMEM is also "range not mapped", which range checks rule out for
         * our callers; with a finite RLIMIT_MEMLOCK it is the limit. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) return TMEM_E_PERMISSION;
        return TMEM_E_NO_MEMORY;
    }
    return tmem__os_status_from_errno(err);
}

tmem_status tmem__os_lock(void *addr, size_t size) {
    if (!range_ok(addr, size)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_LOCK);
    if (st != TMEM_OK) return st;
    if (tmem__os_mlock_raw(addr, size) != 0) return tmem__os_lock_errno_status(errno);
    return TMEM_OK;
}

tmem_status tmem__os_unlock(void *addr, size_t size) {
    if (!range_ok(addr, size)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_UNLOCK);
    if (st != TMEM_OK) return st;
    if (munlock_raw(addr, size) != 0) return tmem__os_status_from_errno(errno);
    return TMEM_OK;
}

tmem_status tmem__os_residency(void *addr, size_t size, size_t *out_resident_pages) {
    if (!out_resident_pages) return TMEM_E_INVALID_ARG;
    *out_resident_pages = 0;
    if (!range_ok(addr, size)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_RESIDENCY);
    if (st != TMEM_OK) return st;
    /* mincore in chunks so the vector stays on the stack. */
    enum { CHUNK = 1024 };
    unsigned char vec[CHUNK]; /* passed as void *: Linux wants unsigned char *, the BSDs char * */
    size_t page = tmem__os_page_size(), pages = size / page, resident = 0;
    for (size_t done = 0; done < pages;) {
        size_t n = pages - done < CHUNK ? pages - done : CHUNK;
        if (mincore((char *)addr + done * page, n * page, (void *)vec) != 0) return tmem__os_status_from_errno(errno);
        for (size_t i = 0; i < n; i++) resident += vec[i] & 1;
        done += n;
    }
    *out_resident_pages = resident;
    return TMEM_OK;
}

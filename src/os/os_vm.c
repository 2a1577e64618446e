/*
 * Address space: reserve / commit / decommit / release, anonymous mappings,
 * huge pages. POSIX mmap is enough for most of it; Linux adds MAP_NORESERVE,
 * MAP_HUGETLB, MADV_POPULATE_WRITE and THP advice.
 *
 * A reservation is PROT_NONE with MAP_NORESERVE: it costs address space only,
 * no commit charge and no pages. Commit flips a sub-range to read-write;
 * decommit maps fresh PROT_NONE pages over it (one syscall that drops the
 * pages, unlocks them and returns the commit charge, mimalloc's habit).
 */
#include "os/os_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif
#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif

/* Immutable facts, cached on first use (a benign race: every thread computes
 * the same value). */
static atomic_size_t g_page_size;
static atomic_size_t g_huge_page_size;
static atomic_bool g_huge_page_known;

size_t tmem__os_page_size(void) {
    size_t p = atomic_load_explicit(&g_page_size, memory_order_relaxed);
    if (p == 0) {
        long v = sysconf(_SC_PAGESIZE);
        p = v > 0 ? (size_t)v : 4096;
        atomic_store_explicit(&g_page_size, p, memory_order_relaxed);
    }
    return p;
}

uint64_t tmem__os_physical_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

size_t tmem__os_huge_page_size(void) {
    if (atomic_load_explicit(&g_huge_page_known, memory_order_acquire))
        return atomic_load_explicit(&g_huge_page_size, memory_order_relaxed);
    size_t h = 0;
#ifdef __linux__
    tmem__os_meminfo mi;
    if (tmem__os_meminfo_read(&mi) == TMEM_OK && mi.huge_page_size <= SIZE_MAX) h = (size_t)mi.huge_page_size;
#endif
    atomic_store_explicit(&g_huge_page_size, h, memory_order_relaxed);
    atomic_store_explicit(&g_huge_page_known, true, memory_order_release);
    return h;
}

static bool page_aligned(const void *addr, size_t size) {
    size_t p = tmem__os_page_size();
    return addr != NULL && size > 0 && ((uintptr_t)addr % p) == 0 && (size % p) == 0;
}

static tmem_status errno_status(void) { return tmem__os_status_from_errno(errno); }

tmem_status tmem__os_reserve(size_t size, size_t align, void **out) {
    if (!out) return TMEM_E_INVALID_ARG;
    *out = NULL;
    size_t page = tmem__os_page_size();
    if (align == 0) align = page;
    if (size == 0 || size % page != 0) return TMEM_E_INVALID_ARG;
    if ((align & (align - 1)) != 0 || align < page) return TMEM_E_ALIGNMENT;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_RESERVE);
    if (st != TMEM_OK) return st;
    /* Over-reserve by align - page and trim both ends: the aligned start is
     * inside the first align bytes. */
    size_t span;
    if (__builtin_add_overflow(size, align - page, &span)) return TMEM_E_OVERFLOW;
    void *p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return errno_status();
    uintptr_t start = (uintptr_t)p, aligned = (start + align - 1) & ~(uintptr_t)(align - 1);
    size_t head = aligned - start, tail = span - head - size;
    if (head) (void)munmap(p, head);
    if (tail) (void)munmap((void *)(aligned + size), tail);
    tmem__os_count_mapping(+1);
    *out = (void *)aligned;
    return TMEM_OK;
}

/* Release and unmap are the same operation; only the fault kind differs. */
static tmem_status unmap_range(void *addr, size_t size, tmem__os_call kind) {
    if (!page_aligned(addr, size)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(kind);
    if (st != TMEM_OK) return st;
    if (munmap(addr, size) != 0) return errno_status();
    tmem__os_count_mapping(-1);
    return TMEM_OK;
}

tmem_status tmem__os_release(void *addr, size_t size) { return unmap_range(addr, size, TMEM__OS_RELEASE); }
tmem_status tmem__os_unmap(void *addr, size_t size) { return unmap_range(addr, size, TMEM__OS_UNMAP); }

/* Fault pages in without changing their contents: MADV_POPULATE_WRITE
 * (Linux 5.14), else read and write back one byte per page. */
static void populate(void *addr, size_t size) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    if (madvise(addr, size, MADV_POPULATE_WRITE) == 0) return;
#endif
    size_t page = tmem__os_page_size();
    volatile unsigned char *p = addr;
    for (size_t off = 0; off < size; off += page) p[off] = p[off];
}

/* Transparent huge pages for a range: a hint, failures ignored. */
static bool advise_thp(void *addr, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    return madvise(addr, size, MADV_HUGEPAGE) == 0;
#else
    (void)addr;
    (void)size;
    return false;
#endif
}

tmem_status tmem__os_commit(void *addr, size_t size, unsigned map_flags) {
    if (!page_aligned(addr, size)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_COMMIT);
    if (st != TMEM_OK) return st;
    if (mprotect(addr, size, PROT_READ | PROT_WRITE) != 0) return errno_status();
    if (map_flags & TMEM__OS_MAP_HUGE) (void)advise_thp(addr, size);
    if (map_flags & TMEM__OS_MAP_LOCKED) {
        /* mlock also populates. On refusal put the range back as it was. */
        if (tmem__os_mlock_raw(addr, size) != 0) {
            int e = errno;
            (void)mmap(addr, size, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            return tmem__os_lock_errno_status(e);
        }
    } else if (map_flags & TMEM__OS_MAP_POPULATE) {
        populate(addr, size);
    }
    return TMEM_OK;
}

tmem_status tmem__os_decommit(void *addr, size_t size) {
    if (!page_aligned(addr, size)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_DECOMMIT);
    if (st != TMEM_OK) return st;
    void *p = mmap(addr, size, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return errno_status();
    return TMEM_OK;
}

tmem_status tmem__os_map_anon(size_t size, unsigned map_flags, void **out, bool *used_huge) {
    if (used_huge) *used_huge = false;
    if (!out) return TMEM_E_INVALID_ARG;
    *out = NULL;
    if (size == 0 || size % tmem__os_page_size() != 0) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_MAP_ANON);
    if (st != TMEM_OK) return st;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
    void *p = MAP_FAILED;
    bool huge = false;
#if defined(__linux__) && defined(MAP_HUGETLB)
    size_t hp = tmem__os_huge_page_size();
    if ((map_flags & TMEM__OS_MAP_HUGE) && hp && size % hp == 0) {
        /* hugetlb pages are reserved at mmap time, so failure (no free huge
         * pages, none configured) shows up here and we fall back. */
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags | MAP_HUGETLB, -1, 0);
        huge = p != MAP_FAILED;
    }
#endif
    if (p == MAP_FAILED) {
#if defined(__linux__) && defined(MAP_POPULATE)
        if ((map_flags & TMEM__OS_MAP_POPULATE) && !(map_flags & TMEM__OS_MAP_HUGE)) flags |= MAP_POPULATE;
#endif
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (p == MAP_FAILED) return errno_status();
        if (map_flags & TMEM__OS_MAP_HUGE) {
            (void)advise_thp(p, size);
            if (map_flags & TMEM__OS_MAP_POPULATE) populate(p, size); /* after the advice, so THP can back it */
        }
    }
    if (map_flags & TMEM__OS_MAP_LOCKED) {
        if (tmem__os_mlock_raw(p, size) != 0) {
            int e = errno;
            (void)munmap(p, size);
            return tmem__os_lock_errno_status(e);
        }
    } else if ((map_flags & TMEM__OS_MAP_POPULATE) && huge) {
        populate(p, size);
    }
    tmem__os_count_mapping(+1);
    if (used_huge) *used_huge = huge;
    *out = p;
    return TMEM_OK;
}

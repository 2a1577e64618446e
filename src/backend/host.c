/*
 * The host backend: a pool is one PROT_NONE reservation of the process's
 * address space; commit makes pages readable/writable (charging nothing to
 * the OS until they are touched, unless POPULATE), decommit drops them.
 * Everything goes through src/os/.
 */
#include "backend/backend.h"
#include "os/os.h"

static uint64_t host_granule(uint32_t type_flags) {
    uint64_t page = tmem__os_page_size();
    if (type_flags & TMEM_TYPE_HUGE_PAGES) {
        uint64_t huge = tmem__os_huge_page_size();
        if (huge > page && tmem__is_pow2(huge)) return huge;
    }
    return page;
}

static bool wants_lock(const tmem__region *r) {
    return (r->flags & TMEM_TYPE_LOCKED) || r->placement == TMEM_PLACEMENT_PINNED;
}

static tmem_status host_reserve(const tmem__backend *be, tmem_placement placement,
                                uint32_t type_flags, uint64_t size, tmem__region *out) {
    (void)be;
    tmem__region r = {0};
    r.granule = host_granule(type_flags);
    r.flags = type_flags;
    r.placement = placement;
    if (!tmem__align_up(size, r.granule, &r.size) || r.size > (uint64_t)SIZE_MAX) return tmem__err(TMEM_E_OVERFLOW);
    /* Align the base generously (2 MiB, or the granule if larger) so heaps
     * can carve sub-ranges with large alignments (huge-page friendly). */
    r.base_align = r.granule > (2u << 20) ? r.granule : (2u << 20);
    if (r.size) {
        tmem_status st = tmem__os_reserve((size_t)r.size, (size_t)r.base_align, &r.base);
        if (st != TMEM_OK) return st;
    }
    *out = r;
    return TMEM_OK;
}

static void host_release(const tmem__backend *be, tmem__region *r) {
    (void)be;
    if (r->base && r->size) (void)tmem__os_release(r->base, (size_t)r->size);
    r->base = NULL;
    r->size = 0;
}

static tmem_status host_commit(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size) {
    (void)be;
    char *p = (char *)r->base + off;
    unsigned mf = 0;
    if ((r->flags & TMEM_TYPE_POPULATE) || r->placement == TMEM_PLACEMENT_PINNED) mf |= TMEM__OS_MAP_POPULATE;
    if (r->flags & TMEM_TYPE_HUGE_PAGES) mf |= TMEM__OS_MAP_HUGE;
    tmem_status st = tmem__os_commit(p, (size_t)size, mf);
    if (st != TMEM_OK) return st;
    if (wants_lock(r)) {
        st = tmem__os_lock(p, (size_t)size);
        if (st != TMEM_OK) {
            (void)tmem__os_decommit(p, (size_t)size);
            /* mlock over RLIMIT_MEMLOCK reports ENOMEM; to the caller that is
             * a refusal to pin, not an out-of-memory condition. */
            return st == TMEM_E_NO_MEMORY ? tmem__err(TMEM_E_PERMISSION) : st;
        }
    }
    return TMEM_OK;
}

static tmem_status host_decommit(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size) {
    (void)be;
    char *p = (char *)r->base + off;
    /* Locked pages cannot be dropped with madvise; unlock first. A failed
     * unlock is not fatal: decommit remaps the range, which unlocks it. */
    if (wants_lock(r)) (void)tmem__os_unlock(p, (size_t)size);
    tmem_status st = tmem__os_decommit(p, (size_t)size);
    if (st != TMEM_OK && wants_lock(r)) (void)tmem__os_lock(p, (size_t)size);
    return st;
}

static tmem_status host_advise(const tmem__backend *be, tmem__region *r, uint64_t off,
                               uint64_t size, tmem__advice advice) {
    (void)be;
    char *p = (char *)r->base + off;
    tmem_status st;
    switch (advice) {
    case TMEM__ADVICE_VOLATILE:
        /* MADV_FREE lets the kernel drop the pages lazily; a write cancels
         * it. Without MADV_FREE the pages simply stay (never lost). */
        st = tmem__os_advise(p, (size_t)size, TMEM__OS_ADVISE_FREE);
        return st == TMEM_E_UNSUPPORTED ? TMEM_OK : st;
    case TMEM__ADVICE_EMPTY:
        return tmem__os_advise(p, (size_t)size, TMEM__OS_ADVISE_DONTNEED);
    case TMEM__ADVICE_WILLNEED:
    case TMEM__ADVICE_COLD:
        tmem__os_benign_begin();
        st = tmem__os_advise(p, (size_t)size,
                             advice == TMEM__ADVICE_WILLNEED ? TMEM__OS_ADVISE_WILLNEED
                                                             : TMEM__OS_ADVISE_COLD);
        tmem__os_benign_end();
        (void)st; /* hints */
        return TMEM_OK;
    }
    return tmem__err(TMEM_E_INVALID_ARG);
}

static tmem_status host_residency(const tmem__backend *be, const tmem__region *r, uint64_t off,
                                  uint64_t size, uint64_t *out_bytes) {
    (void)be;
    size_t pages = 0;
    tmem_status st = tmem__os_residency((char *)r->base + off, (size_t)size, &pages);
    *out_bytes = st == TMEM_OK ? (uint64_t)pages * tmem__os_page_size() : 0;
    return st;
}

static const tmem__backend host_backend = {
    "host", host_reserve, host_release, host_commit, host_decommit, host_advise, host_residency, NULL, NULL, NULL, NULL, NULL, NULL,
};

const tmem__backend *tmem__backend_host(void) {
    return &host_backend;
}

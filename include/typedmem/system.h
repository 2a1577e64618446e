/**
 * @file system.h
 * @brief What the OS says about this process and machine: footprint, limits,
 *        features. Read-only queries; no context needed.
 */
#ifndef TYPEDMEM_SYSTEM_H
#define TYPEDMEM_SYSTEM_H

#include "status.h"

TMEM_EXTERN_C_BEGIN

/** @brief The process's memory as the OS accounts it, in bytes
 *  (Linux: /proc/self/smaps_rollup). Private_Dirty is what counts against a
 *  phone's per-app limit; clean file-backed pages can be dropped and re-read. */
typedef struct tmem_footprint {
    uint64_t rss;
    uint64_t private_dirty;
    uint64_t private_clean;
    uint64_t shared_clean;
    uint64_t shared_dirty;
    uint64_t anonymous;
    uint64_t swap;
    uint64_t pss_dirty;     /**< Pss_Dirty (Linux 6.0+; 0 if the kernel lacks it) */
    uint64_t swap_pss;      /**< SwapPss */
    /** What a jetsam-style limit counts: dirty memory (anonymous, and
     *  shmem/memfd, each page once however often it is mapped) plus its swap;
     *  clean file-backed pages excluded. Pss_Dirty + SwapPss where the kernel
     *  reports Pss_Dirty (a page shared with another process counts in
     *  proportion), else Private_Dirty + Shared_Dirty + Swap (a page mapped
     *  twice then counts twice: an upper bound). */
    uint64_t footprint;
} tmem_footprint;

/** @brief Memory limits that apply to this process. 0 means "none found". */
typedef struct tmem_system_limits {
    uint64_t cgroup_max;    /**< cgroup v2 memory.max ("max" reads as 0). */
    uint64_t cgroup_high;   /**< cgroup v2 memory.high ("max" reads as 0). */
    uint64_t cgroup_current;/**< cgroup v2 memory.current. */
    uint64_t mem_total;     /**< /proc/meminfo MemTotal. */
    uint64_t mem_available; /**< /proc/meminfo MemAvailable. */
    uint64_t env_limit;     /**< TMEM_LIMIT from the environment (decimal
                                 bytes), the limit a supervisor such as
                                 `tmem watch` grants, like an app's
                                 entitlement; 0 if unset or malformed. */
    uint64_t effective;     /**< The limit typedmem would use as a default
                                 budget: the smallest of env_limit,
                                 cgroup_max and cgroup_high that is set,
                                 else mem_available. */
} tmem_system_limits;

/** @brief Features the OS layer found at run time. */
typedef struct tmem_system_info {
    uint64_t page_size;
    uint64_t huge_page_size;     /**< Default hugetlb page size; 0 if unknown. */
    uint64_t huge_pages_free;    /**< Free hugetlb pages (HugePages_Free). */
    bool memfd;                  /**< memfd_create works. */
    bool memfd_seals;            /**< F_ADD_SEALS works on a memfd. */
    bool seal_future_write;      /**< F_SEAL_FUTURE_WRITE is accepted. */
    bool thp;                    /**< Transparent huge pages can be advised. */
    bool madv_free;              /**< MADV_FREE accepted. */
    bool madv_cold;              /**< MADV_COLD accepted. */
    bool madv_pageout;           /**< MADV_PAGEOUT accepted. */
    bool psi;                    /**< /proc/pressure/memory is readable. */
    bool cgroup_v2;              /**< This process sits in a cgroup v2 with a memory controller. */
} tmem_system_info;

/** @brief Read this process's footprint.
 *  @param[out] out  Zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (out NULL) | TMEM_E_UNSUPPORTED (no
 *          smaps_rollup: not Linux, or Linux before 4.14) | TMEM_E_PERMISSION
 *          (smaps_rollup not readable) | TMEM_E_IO (unreadable or malformed)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_footprint_read(tmem_footprint *out);

/** @brief Read another process's footprint (/proc/PID/smaps_rollup); pid 0
 *  is this process. The cost grows with the process's mapped size (the
 *  kernel walks its page tables): tens of microseconds for a small process.
 *  @param[out] out  Zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (out NULL, pid < 0) |
 *          TMEM_E_NOT_FOUND (no such process, or it exited) |
 *          TMEM_E_UNSUPPORTED | TMEM_E_PERMISSION | TMEM_E_IO
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_footprint_read_pid(int pid, tmem_footprint *out);

/** @brief Discover the memory limits that apply to this process.
 *  @param[out] out  Zeroed on failure.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED | TMEM_E_IO
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_system_limits_read(tmem_system_limits *out);

/** @brief This process's memory cgroup directory, for supervisors that
 *  create a child cgroup under it (e.g. `tmem watch --cgroup`): cgroup v2's
 *  directory if it has a memory controller, else the cgroup v1 memory
 *  controller's.
 *  @param[out] buf      The directory as a C string; "" on failure.
 *  @param[out] version  2 or 1; 0 on failure. May be NULL.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG (buf NULL or cap 0) |
 *          TMEM_E_NOT_FOUND (no memory cgroup, or the path does not fit cap)
 *  @par Threads safe */
TMEM_API TMEM_NODISCARD tmem_status tmem_system_cgroup_dir(char *buf, size_t cap, int *version);

/** @brief Probe OS features (memfd, seals, huge pages, madvise kinds, PSI).
 *  Probing creates and destroys a tiny memfd and mapping.
 *  @return TMEM_OK | TMEM_E_INVALID_ARG
 *  @par Threads safe
 *  Fails only on NULL out. */
TMEM_API TMEM_NODISCARD tmem_status tmem_system_info_read(tmem_system_info *out);

TMEM_EXTERN_C_END

#endif /* TYPEDMEM_SYSTEM_H */

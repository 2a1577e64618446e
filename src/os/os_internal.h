/*
 * Private to src/os/ (and its tests): helpers shared by the OS layer's files
 * and the pure parsers of /proc and cgroup text. Nothing above src/os/ may
 * include this; the porting contract is os.h.
 */
#ifndef TMEM_OS_INTERNAL_H
#define TMEM_OS_INTERNAL_H

#include "os/os.h"

/* ---- live resource counters (os_fault.c) ---- */
void tmem__os_count_mapping(int delta);
void tmem__os_count_fd(int delta);

/* ---- locking (os_advise.c) ---- */
/* mlock's errno as a status: over RLIMIT_MEMLOCK (ENOMEM/EPERM for an
 * unprivileged process) is TMEM_E_PERMISSION, EAGAIN is TMEM_E_NO_MEMORY. */
tmem_status tmem__os_lock_errno_status(int err);
/* mlock(2) itself, bypassing sanitizer interceptors (0 or -1 + errno). */
int tmem__os_mlock_raw(const void *addr, size_t size);

/* ---- pure parsers (os_parse.c) ----
 * Each takes text of `len` bytes (not necessarily NUL-terminated, any
 * content), never reads past it, never allocates, and fills its outputs only
 * from lines it fully understood. Numbers are overflow-checked: a value that
 * does not fit in 64 bits makes its line malformed. */

/* /proc/self/smaps_rollup ("Rss:   1640 kB" lines) -> footprint in bytes.
 * TMEM_E_PARSE when not one known field was found. */
tmem_status tmem__os_parse_smaps_rollup(const char *text, size_t len, tmem_footprint *out);

/* /proc/meminfo -> bytes (fields absent read as 0; HugePages_Free is a page
 * count). TMEM_E_PARSE when neither MemTotal nor MemAvailable was found. */
typedef struct tmem__os_meminfo {
    uint64_t mem_total, mem_available, huge_page_size, huge_pages_total, huge_pages_free;
    bool has_available;
} tmem__os_meminfo;
tmem_status tmem__os_parse_meminfo(const char *text, size_t len, tmem__os_meminfo *out);

/* /proc/self/cgroup -> the cgroup v2 path (the "0::/path" line) and the v1
 * memory controller's path (a "N:...memory...:/path" line). Either may be
 * absent (empty string). Paths longer than cap-1 count as absent.
 * TMEM_E_PARSE when neither was found. */
tmem_status tmem__os_parse_proc_cgroup(const char *text, size_t len, char *v2_path, size_t v2_cap, char *v1_path,
                                       size_t v1_cap);

/* /proc/self/mountinfo -> mount point and root of the cgroup2 filesystem and
 * of the cgroup v1 hierarchy with the memory controller (octal escapes such as
 * \040 decoded). Absent ones are empty strings. TMEM_E_PARSE when neither. */
typedef struct tmem__os_cgroup_mounts {
    char v2_mount[256], v2_root[256];
    char v1_mount[256], v1_root[256];
} tmem__os_cgroup_mounts;
tmem_status tmem__os_parse_mountinfo(const char *text, size_t len, tmem__os_cgroup_mounts *out);

/* The cgroup directory: mount point + the /proc/self/cgroup path made
 * relative to the mount's root. false (buf = "") when it does not fit, the
 * path is not absolute, or it has a ".." component. */
bool tmem__os_cgroup_join(const char *mount, const char *root, const char *path, char *buf, size_t cap);

/* A cgroup limit file (memory.max, memory.high, memory.current,
 * memory.limit_in_bytes): a decimal number or "max". "max" and v1's
 * "unlimited" sentinels (>= 2^62) read as *out = 0, meaning no limit.
 * TMEM_E_PARSE on anything else. */
tmem_status tmem__os_parse_cgroup_value(const char *text, size_t len, uint64_t *out);

/* PSI ("some avg10=1.23 avg60=... total=N" / "full ...") -> avg10 x 100.
 * *has_full tells whether a "full" line was present. TMEM_E_PARSE without a
 * valid "some" line. */
tmem_status tmem__os_parse_psi(const char *text, size_t len, uint32_t *some_avg10_x100, uint32_t *full_avg10_x100,
                               bool *has_full);

/* cgroup v2 memory.events ("high 3" lines) -> counters. TMEM_E_PARSE when no
 * known key was found. */
tmem_status tmem__os_parse_memory_events(const char *text, size_t len, tmem__os_pressure_info *out);

/* ---- /proc readers (os_proc.c) ---- */
/* Read a small text file into buf (at most cap-1 bytes, NUL-terminated).
 * *truncated (may be NULL) says the file was longer. */
tmem_status tmem__os_read_text(const char *path, char *buf, size_t cap, size_t *out_len, bool *truncated);
/* /proc/meminfo, parsed. */
tmem_status tmem__os_meminfo_read(tmem__os_meminfo *out);
/* The cgroup v2 directory of this process with a memory controller
 * (memory.max readable), into buf. TMEM_E_NOT_FOUND when none. */
tmem_status tmem__os_cgroup_v2_dir(char *buf, size_t cap);
/* This process's memory cgroup: v2's directory (version 2), else the v1
 * memory controller's (version 1); TMEM_E_NOT_FOUND if neither. */
tmem_status tmem__os_cgroup_memory_dir(char *buf, size_t cap, int *version);

/* THP is not switched off ("[never]" in
 * /sys/kernel/mm/transparent_hugepage/enabled). */
bool tmem__os_thp_enabled(void);

#endif /* TMEM_OS_INTERNAL_H */

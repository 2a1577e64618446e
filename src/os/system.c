/*
 * Public read-only queries (include/typedmem/system.h) on top of the porting
 * contract. Feature probes run inside a benign section: an armed fault must
 * not make a test believe the OS lacks a feature.
 */
#include "os/os_internal.h"

#include <string.h>

tmem_status tmem_footprint_read(tmem_footprint *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    return tmem__os_footprint(out);
}

tmem_status tmem_footprint_read_pid(int pid, tmem_footprint *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    if (pid < 0) {
        memset(out, 0, sizeof *out);
        return TMEM_E_INVALID_ARG;
    }
    return tmem__os_footprint_pid(pid, out);
}

tmem_status tmem_system_cgroup_dir(char *buf, size_t cap, int *version) {
    return tmem__os_cgroup_memory_dir(buf, cap, version);
}

tmem_status tmem_system_limits_read(tmem_system_limits *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    return tmem__os_limits(out);
}

/* memfd, its seals and F_SEAL_FUTURE_WRITE, on a one-page memfd. */
static void probe_memfd(tmem_system_info *info, size_t page) {
    int fd;
    if (tmem__os_memfd_create("tmem-probe", page, &fd) != TMEM_OK) return;
    info->memfd = true;
    unsigned seals = 0;
    info->memfd_seals =
        tmem__os_memfd_seal(fd, TMEM__OS_SEAL_SHRINK | TMEM__OS_SEAL_GROW) == TMEM_OK &&
        tmem__os_fd_seals(fd, &seals) == TMEM_OK &&
        (seals & (TMEM__OS_SEAL_SHRINK | TMEM__OS_SEAL_GROW)) ==
            (TMEM__OS_SEAL_SHRINK | TMEM__OS_SEAL_GROW);
    info->seal_future_write = info->memfd_seals && tmem__os_memfd_seal(fd, TMEM__OS_SEAL_FUTURE_WRITE) == TMEM_OK;
    (void)tmem__os_close(fd);
}

/* madvise kinds on a small anonymous mapping; THP on a huge-page-aligned
 * reservation (MADV_HUGEPAGE needs THP compiled in and not "never"). */
static void probe_advice(tmem_system_info *info, size_t page) {
    void *p;
    if (tmem__os_map_anon(page, 0, &p, NULL) == TMEM_OK) {
        info->madv_free = tmem__os_advise(p, page, TMEM__OS_ADVISE_FREE) == TMEM_OK;
        info->madv_cold = tmem__os_advise(p, page, TMEM__OS_ADVISE_COLD) == TMEM_OK;
        info->madv_pageout = tmem__os_advise(p, page, TMEM__OS_ADVISE_PAGEOUT) == TMEM_OK;
        (void)tmem__os_unmap(p, page);
    }
    size_t huge = info->huge_page_size ? (size_t)info->huge_page_size : 2u << 20;
    if (tmem__os_reserve(huge, huge, &p) == TMEM_OK) {
        if (tmem__os_commit(p, huge, 0) == TMEM_OK)
            info->thp = tmem__os_advise(p, huge, TMEM__OS_ADVISE_HUGEPAGE) == TMEM_OK && tmem__os_thp_enabled();
        (void)tmem__os_release(p, huge);
    }
}

tmem_status tmem_system_info_read(tmem_system_info *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    tmem_system_info info;
    memset(&info, 0, sizeof info);
    tmem__os_benign_begin();
    info.page_size = tmem__os_page_size();
    info.huge_page_size = tmem__os_huge_page_size();
    tmem__os_meminfo mi;
    if (tmem__os_meminfo_read(&mi) == TMEM_OK) info.huge_pages_free = mi.huge_pages_free;
    probe_memfd(&info, (size_t)info.page_size);
    probe_advice(&info, (size_t)info.page_size);
    tmem__os_pressure_info pr;
    info.psi = tmem__os_pressure(&pr) == TMEM_OK && pr.has_psi;
    char dir[512];
    info.cgroup_v2 = tmem__os_cgroup_v2_dir(dir, sizeof dir) == TMEM_OK;
    tmem__os_benign_end();
    *out = info;
    return TMEM_OK;
}

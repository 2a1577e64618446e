/*
 * What the OS says about this process: footprint (/proc/self/smaps_rollup),
 * limits (cgroup v2 memory.max / memory.high / memory.current, cgroup v1
 * memory.limit_in_bytes, /proc/meminfo) and pressure (PSI, memory.events).
 *
 * Reading is here; understanding the text is in os_parse.c (pure functions).
 * The cgroup directory is found the way systemd and container runtimes lay
 * it out: /proc/self/cgroup names the path, /proc/self/mountinfo names where
 * the hierarchy is mounted (hybrid hosts mount cgroup2 at
 * /sys/fs/cgroup/unified, so the mount point is never assumed).
 */
#include "os/os_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

enum { PATH_CAP = 512, SMALL_CAP = 4096, MOUNTINFO_CAP = 512 * 1024 };

tmem_status tmem__os_read_text(const char *path, char *buf, size_t cap, size_t *out_len, bool *truncated) {
    if (out_len) *out_len = 0;
    if (truncated) *truncated = false;
    if (!path || !buf || cap == 0) return TMEM_E_INVALID_ARG;
    buf[0] = '\0';
    int fd;
    do fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) return TMEM_E_NOT_FOUND;
        if (e == EACCES || e == EPERM) return TMEM_E_PERMISSION;
        return TMEM_E_IO;
    }
    size_t len = 0;
    tmem_status st = TMEM_OK;
    while (len < cap - 1) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0) {
            if (errno == EINTR) continue;
            st = TMEM_E_IO;
            break;
        }
        if (n == 0) break;
        len += (size_t)n;
    }
    if (st == TMEM_OK && len == cap - 1 && truncated) {
        char extra;
        ssize_t n;
        do n = read(fd, &extra, 1);
        while (n < 0 && errno == EINTR);
        *truncated = n > 0;
    }
    (void)close(fd);
    buf[len] = '\0';
    if (out_len) *out_len = len;
    return st;
}

tmem_status tmem__os_meminfo_read(tmem__os_meminfo *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
#ifdef __linux__
    char buf[SMALL_CAP * 2];
    size_t len;
    tmem_status st = tmem__os_read_text("/proc/meminfo", buf, sizeof buf, &len, NULL);
    if (st != TMEM_OK) return st == TMEM_E_NOT_FOUND ? TMEM_E_UNSUPPORTED : st;
    return tmem__os_parse_meminfo(buf, len, out);
#else
    return TMEM_E_UNSUPPORTED;
#endif
}

tmem_status tmem__os_footprint_pid(int pid, tmem_footprint *out) {
    if (!out || pid < 0) return TMEM_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    tmem_status st = tmem__os_fault_hit(TMEM__OS_FOOTPRINT);
    if (st != TMEM_OK) return st;
#ifdef __linux__
    char path[64];
    if (pid == 0) snprintf(path, sizeof path, "/proc/self/smaps_rollup");
    else snprintf(path, sizeof path, "/proc/%d/smaps_rollup", pid);
    char buf[SMALL_CAP];
    size_t len;
    st = tmem__os_read_text(path, buf, sizeof buf, &len, NULL);
    if (st == TMEM_E_NOT_FOUND) {
        /* Our own rollup missing means Linux < 4.14; another's, no process. */
        return pid == 0 ? TMEM_E_UNSUPPORTED : TMEM_E_NOT_FOUND;
    }
    if (st != TMEM_OK) return st == TMEM_E_PERMISSION ? st : TMEM_E_IO;
    /* A process that has exited but not been reaped reads empty. */
    if (len == 0) return pid == 0 ? TMEM_E_IO : TMEM_E_NOT_FOUND;
    st = tmem__os_parse_smaps_rollup(buf, len, out);
    return st == TMEM_OK ? TMEM_OK : TMEM_E_IO;
#else
    return TMEM_E_UNSUPPORTED;
#endif
}

tmem_status tmem__os_footprint(tmem_footprint *out) {
    return tmem__os_footprint_pid(0, out);
}

/* TMEM_LIMIT: decimal bytes, no sign, no suffix. Anything else reads as
 * unset (0): a supervisor writes the number, a typo must not turn into a
 * tiny or a huge limit. */
const char *tmem__os_getenv(const char *name) { return name ? getenv(name) : NULL; }

static uint64_t env_limit_read(void) {
    const char *v = tmem__os_getenv("TMEM_LIMIT");
    if (!v || !*v) return 0;
    uint64_t n = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        unsigned d = (unsigned)(*p - '0');
        if (n > (UINT64_MAX - d) / 10) return 0;
        n = n * 10 + d;
    }
    return n;
}

#ifdef __linux__
/* This process's cgroup directories: v2 and the v1 memory controller's. The
 * mount lengths bound ancestor walks. Empty strings when absent. */
typedef struct cgroup_dirs {
    char v2[PATH_CAP], v1[PATH_CAP];
    size_t v2_mount_len, v1_mount_len;
} cgroup_dirs;

static tmem_status find_cgroup_dirs(cgroup_dirs *out) {
    memset(out, 0, sizeof *out);
    char text[SMALL_CAP], p2[PATH_CAP], p1[PATH_CAP];
    size_t len;
    tmem_status st = tmem__os_read_text("/proc/self/cgroup", text, sizeof text, &len, NULL);
    if (st != TMEM_OK) return st;
    if (tmem__os_parse_proc_cgroup(text, len, p2, sizeof p2, p1, sizeof p1) != TMEM_OK) return TMEM_E_NOT_FOUND;
    /* mountinfo can be long on container hosts: read it from the heap. */
    char *mi = malloc(MOUNTINFO_CAP);
    tmem__os_cgroup_mounts *m = malloc(sizeof *m);
    if (!mi || !m) {
        free(mi);
        free(m);
        return TMEM_E_NO_MEMORY;
    }
    bool truncated;
    st = tmem__os_read_text("/proc/self/mountinfo", mi, MOUNTINFO_CAP, &len, &truncated);
    if (st == TMEM_OK && truncated)
        while (len > 0 && mi[len - 1] != '\n') len--; /* drop the cut last line */
    if (st == TMEM_OK && tmem__os_parse_mountinfo(mi, len, m) == TMEM_OK) {
        if (p2[0] && m->v2_mount[0] && tmem__os_cgroup_join(m->v2_mount, m->v2_root, p2, out->v2, sizeof out->v2))
            out->v2_mount_len = strlen(m->v2_mount);
        else
            out->v2[0] = '\0';
        if (p1[0] && m->v1_mount[0] && tmem__os_cgroup_join(m->v1_mount, m->v1_root, p1, out->v1, sizeof out->v1))
            out->v1_mount_len = strlen(m->v1_mount);
        else
            out->v1[0] = '\0';
    }
    free(m);
    free(mi);
    if (st != TMEM_OK) return st;
    return out->v2[0] || out->v1[0] ? TMEM_OK : TMEM_E_NOT_FOUND;
}

/* Read dir/name as a cgroup value. */
static bool cgroup_read(const char *dir, const char *name, uint64_t *out) {
    char path[PATH_CAP + 64], text[128];
    size_t len;
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n <= 0 || (size_t)n >= sizeof path) return false;
    return tmem__os_read_text(path, text, sizeof text, &len, NULL) == TMEM_OK &&
           tmem__os_parse_cgroup_value(text, len, out) == TMEM_OK;
}

static uint64_t min_limit(uint64_t a, uint64_t b) {
    if (a == 0) return b;
    if (b == 0) return a;
    return a < b ? a : b;
}

/* The tightest `name` limit over dir and its ancestors inside the mount: a
 * parent's limit binds its children. */
static uint64_t cgroup_limit_up(const char *dir, size_t mount_len, const char *name) {
    char d[PATH_CAP];
    snprintf(d, sizeof d, "%s", dir);
    uint64_t lim = 0;
    for (int depth = 0; depth < 64; depth++) {
        uint64_t v;
        if (cgroup_read(d, name, &v)) lim = min_limit(lim, v);
        char *slash = strrchr(d, '/');
        if (!slash || (size_t)(slash - d) < mount_len) break;
        *slash = '\0';
    }
    return lim;
}
#endif

tmem_status tmem__os_cgroup_v2_dir(char *buf, size_t cap) {
    if (!buf || cap == 0) return TMEM_E_INVALID_ARG;
    buf[0] = '\0';
#ifdef __linux__
    cgroup_dirs d;
    uint64_t v;
    /* The root cgroup has no memory.max: a memory controller is enabled for
     * us only in a child cgroup. */
    if (find_cgroup_dirs(&d) != TMEM_OK || !d.v2[0] || !cgroup_read(d.v2, "memory.max", &v)) return TMEM_E_NOT_FOUND;
    size_t n = strlen(d.v2);
    if (n >= cap) return TMEM_E_NOT_FOUND;
    memcpy(buf, d.v2, n + 1);
    return TMEM_OK;
#else
    return TMEM_E_NOT_FOUND;
#endif
}

tmem_status tmem__os_cgroup_memory_dir(char *buf, size_t cap, int *version) {
    if (version) *version = 0;
    if (!buf || cap == 0) return TMEM_E_INVALID_ARG;
    buf[0] = '\0';
#ifdef __linux__
    if (tmem__os_cgroup_v2_dir(buf, cap) == TMEM_OK) {
        if (version) *version = 2;
        return TMEM_OK;
    }
    cgroup_dirs d;
    uint64_t v;
    if (find_cgroup_dirs(&d) != TMEM_OK || !d.v1[0] || !cgroup_read(d.v1, "memory.limit_in_bytes", &v))
        return TMEM_E_NOT_FOUND;
    size_t n = strlen(d.v1);
    if (n >= cap) return TMEM_E_NOT_FOUND;
    memcpy(buf, d.v1, n + 1);
    if (version) *version = 1;
    return TMEM_OK;
#else
    return TMEM_E_NOT_FOUND;
#endif
}

tmem_status tmem__os_limits(tmem_system_limits *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    tmem_status st = tmem__os_fault_hit(TMEM__OS_LIMITS);
    if (st != TMEM_OK) return st;
#ifdef __linux__
    tmem_system_limits l = {0};
    tmem__os_meminfo mi;
    tmem_status mst = tmem__os_meminfo_read(&mi);
    if (mst == TMEM_OK) {
        l.mem_total = mi.mem_total;
        l.mem_available = mi.mem_available;
    }
    cgroup_dirs d;
    bool cg = false;
    if (find_cgroup_dirs(&d) == TMEM_OK) {
        uint64_t v;
        if (d.v2[0] && cgroup_read(d.v2, "memory.max", &v)) {
            cg = true;
            l.cgroup_max = cgroup_limit_up(d.v2, d.v2_mount_len, "memory.max");
            l.cgroup_high = cgroup_limit_up(d.v2, d.v2_mount_len, "memory.high");
            if (cgroup_read(d.v2, "memory.current", &v)) l.cgroup_current = v;
        } else if (d.v1[0] && cgroup_read(d.v1, "memory.limit_in_bytes", &v)) {
            /* cgroup v1 (hybrid hosts): the hard limit is memory.max's twin;
             * v1 has no memory.high. */
            cg = true;
            l.cgroup_max = cgroup_limit_up(d.v1, d.v1_mount_len, "memory.limit_in_bytes");
            if (cgroup_read(d.v1, "memory.usage_in_bytes", &v)) l.cgroup_current = v;
        }
    }
    if (mst != TMEM_OK && !cg) return mst == TMEM_E_UNSUPPORTED ? TMEM_E_UNSUPPORTED : TMEM_E_IO;
    l.env_limit = env_limit_read();
    l.effective = min_limit(min_limit(l.cgroup_max, l.cgroup_high), l.env_limit);
    if (l.effective == 0) l.effective = l.mem_available;
    *out = l;
    return TMEM_OK;
#else
    return TMEM_E_UNSUPPORTED;
#endif
}

tmem_status tmem__os_pressure(tmem__os_pressure_info *out) {
    if (!out) return TMEM_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    tmem_status st = tmem__os_fault_hit(TMEM__OS_PRESSURE);
    if (st != TMEM_OK) return st;
#ifdef __linux__
    tmem__os_pressure_info p = {0};
    char text[SMALL_CAP], path[PATH_CAP + 32];
    size_t len;
    cgroup_dirs d;
    bool have_dirs = find_cgroup_dirs(&d) == TMEM_OK && d.v2[0];
    /* PSI: the cgroup's own memory.pressure is what bounds us; the system's
     * /proc/pressure/memory when we sit in the root cgroup or it is absent. */
    bool full;
    bool psi = false;
    if (have_dirs && d.v2[d.v2_mount_len] != '\0') {
        snprintf(path, sizeof path, "%s/memory.pressure", d.v2);
        psi = tmem__os_read_text(path, text, sizeof text, &len, NULL) == TMEM_OK &&
              tmem__os_parse_psi(text, len, &p.psi_some_avg10_x100, &p.psi_full_avg10_x100, &full) == TMEM_OK;
    }
    if (!psi)
        psi = tmem__os_read_text("/proc/pressure/memory", text, sizeof text, &len, NULL) == TMEM_OK &&
              tmem__os_parse_psi(text, len, &p.psi_some_avg10_x100, &p.psi_full_avg10_x100, &full) == TMEM_OK;
    p.has_psi = psi;
    if (have_dirs) {
        snprintf(path, sizeof path, "%s/memory.events", d.v2);
        p.has_events = tmem__os_read_text(path, text, sizeof text, &len, NULL) == TMEM_OK &&
                       tmem__os_parse_memory_events(text, len, &p) == TMEM_OK;
    }
    if (!p.has_psi) p.psi_some_avg10_x100 = p.psi_full_avg10_x100 = 0;
    if (!p.has_psi && !p.has_events) return TMEM_E_UNSUPPORTED;
    *out = p;
    return TMEM_OK;
#else
    return TMEM_E_UNSUPPORTED;
#endif
}

bool tmem__os_thp_enabled(void) {
#ifdef __linux__
    char text[256];
    size_t len;
    if (tmem__os_read_text("/sys/kernel/mm/transparent_hugepage/enabled", text, sizeof text, &len, NULL) != TMEM_OK)
        return false;
    return strstr(text, "[never]") == NULL && strchr(text, '[') != NULL;
#else
    return false;
#endif
}

/* watch_cgroup.c: see watch_cgroup.h. */
#include "system/watch_cgroup.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "typedmem/typedmem.h"

static int write_file(const char *dir, const char *name, const char *text) {
    char path[768];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

/* The value after `key` in dir/name ("oom_kill 3"), or the first number
 * when key is NULL. 0 when absent. */
static uint64_t read_number(const char *dir, const char *name, const char *key) {
    char path[768], line[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    size_t klen = key ? strlen(key) : 0;
    while (fgets(line, sizeof line, f)) {
        if (key && (strncmp(line, key, klen) || line[klen] != ' ')) continue;
        if (sscanf(line + klen, "%llu", &v) == 1) break;
    }
    fclose(f);
    return v;
}

int watch_cgroup_create(uint64_t limit, watch_cgroup *cg, char *err, size_t err_len) {
    char parent[512];
    memset(cg, 0, sizeof *cg);
    if (tmem_system_cgroup_dir(parent, sizeof parent, &cg->version) != TMEM_OK) {
        snprintf(err, err_len, "this process is in no memory cgroup (v2 memory.max or v1 memory controller)");
        return -1;
    }
    snprintf(cg->dir, sizeof cg->dir, "%s/tmem-watch-%ld", parent, (long)getpid());
    if (mkdir(cg->dir, 0755) != 0) {
        snprintf(err, err_len, "cannot create %s: %s", cg->dir, strerror(errno));
        return -1;
    }
    char v[32];
    snprintf(v, sizeof v, "%llu", (unsigned long long)limit);
    /* v1: without a swap limit the kernel would swap the child out rather
     * than kill it; set memsw too where the kernel has it. */
    int rc = cg->version == 2 ? write_file(cg->dir, "memory.max", v)
                              : write_file(cg->dir, "memory.limit_in_bytes", v);
    if (rc == 0 && cg->version == 2) (void)write_file(cg->dir, "memory.swap.max", "0");
    if (rc == 0 && cg->version == 1) (void)write_file(cg->dir, "memory.memsw.limit_in_bytes", v);
    if (rc != 0) {
        snprintf(err, err_len, "cannot set the limit in %s: %s", cg->dir, strerror(errno));
        rmdir(cg->dir);
        return -1;
    }
    return 0;
}

int watch_cgroup_add(const watch_cgroup *cg, pid_t pid, char *err, size_t err_len) {
    char v[32];
    snprintf(v, sizeof v, "%ld", (long)pid);
    if (write_file(cg->dir, "cgroup.procs", v) != 0) {
        snprintf(err, err_len, "cannot move pid %ld into %s: %s", (long)pid, cg->dir, strerror(errno));
        return -1;
    }
    return 0;
}

uint64_t watch_cgroup_peak(const watch_cgroup *cg) {
    return cg->version == 2 ? read_number(cg->dir, "memory.peak", NULL)
                            : read_number(cg->dir, "memory.max_usage_in_bytes", NULL);
}

uint64_t watch_cgroup_oom_kills(const watch_cgroup *cg) {
    return cg->version == 2 ? read_number(cg->dir, "memory.events", "oom_kill")
                            : read_number(cg->dir, "memory.oom_control", "oom_kill");
}

void watch_cgroup_remove(const watch_cgroup *cg) {
    /* The kernel may still hold the dead child's charge for a moment. */
    for (int i = 0; i < 200 && rmdir(cg->dir) != 0 && errno == EBUSY; i++) {
        struct timespec t = {0, 5 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
}

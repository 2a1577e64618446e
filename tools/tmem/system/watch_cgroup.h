/* watch_cgroup: a child memory cgroup under ours for `tmem watch --cgroup`
 * (cgroup v2 memory.max, or v1 memory.limit_in_bytes). Created only under
 * this process's own cgroup and removed afterwards. */
#ifndef TMEM_TOOL_WATCH_CGROUP_H
#define TMEM_TOOL_WATCH_CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct watch_cgroup {
    char dir[640];
    int version;    /* 1 or 2 */
} watch_cgroup;

/* 0, or -1 with a message in err. */
int watch_cgroup_create(uint64_t limit, watch_cgroup *cg, char *err, size_t err_len);
int watch_cgroup_add(const watch_cgroup *cg, pid_t pid, char *err, size_t err_len);
/* The cgroup's high-water mark (v1 max_usage_in_bytes, v2 memory.peak); 0 if unknown. */
uint64_t watch_cgroup_peak(const watch_cgroup *cg);
/* OOM kills the kernel made in it (memory.events / memory.oom_control). */
uint64_t watch_cgroup_oom_kills(const watch_cgroup *cg);
/* Removes the (now empty) cgroup; retries briefly while the kernel drains it. */
void watch_cgroup_remove(const watch_cgroup *cg);

#endif

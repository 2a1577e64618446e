/*
 * tmem watch: run a command under a jetsam-style footprint limit.
 *
 *   tmem watch --limit SIZE [--interval-ms N] [--cgroup] [--json] -- CMD ARGS...
 *
 * A phone does not ask an app to free memory past its limit: it kills it.
 * This samples the child's footprint (tmem_footprint.footprint: dirty
 * anonymous and shmem pages once each, plus swap; clean file pages excluded)
 * from /proc/PID/smaps_rollup every N ms (default 1: 1 kHz) and sends SIGKILL
 * the moment it crosses the limit. The child sees the limit as TMEM_LIMIT
 * (bytes), which typedmem's limit discovery reads, the way an app reads its
 * entitlement. With --cgroup the kernel enforces the limit too: the child
 * runs in a new memory cgroup under ours (v2 memory.max or v1
 * memory.limit_in_bytes), removed afterwards.
 *
 * Exit status: the child's; 128+signal if a signal ended it (137 when this
 * watch or the kernel killed it); 2 for bad usage; 1 if the child could not
 * be started.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "system/watch_cgroup.h"
#include "typedmem/typedmem.h"

typedef struct watch_opts {
    uint64_t limit;
    uint64_t interval_us;
    bool json, cgroup;
    char **cmd;
} watch_opts;

typedef struct watch_result {
    uint64_t peak, peak_rss, samples;
    double peak_ms, elapsed_ms, max_gap_ms;
    bool killed;            /* by this watch, past the limit */
    bool kernel_killed;     /* by the cgroup's OOM killer */
    int status;             /* waitpid status */
    uint64_t cgroup_peak;   /* the cgroup's own high-water mark, if any */
} watch_result;

static void usage(FILE *f) {
    fprintf(f,
            "usage: tmem watch --limit SIZE [--interval-ms N] [--cgroup] [--json] -- CMD ARGS...\n"
            "  runs CMD and kills it (SIGKILL) the moment its footprint crosses SIZE,\n"
            "  as a phone's jetsam does; footprint = dirty anonymous + shmem pages\n"
            "  (each once) + swap, clean file pages excluded (smaps_rollup)\n"
            "  --limit SIZE     bytes, or with B, KiB, MiB, GiB (K, M, G binary) or KB, MB, GB\n"
            "  --interval-ms N  sampling period, 0..1000 (default 1: 1 kHz; 0 = back to back)\n"
            "  --cgroup         also run CMD in a child memory cgroup with the same limit\n"
            "                   (kernel-enforced); fails if no cgroup can be created\n"
            "  --json           one JSON object on stdout at the end\n"
            "  the child sees TMEM_LIMIT=<bytes>; exit status is the child's (137 if killed)\n");
}

/* The library's one size parser (typedmem/parse.h), as every command uses. */
static bool parse_limit(const char *s, uint64_t *out) {
    const char *why;
    return tmem_parse_size(s, strlen(s), out, &why) == TMEM_OK && *out > 0;
}

static bool parse_interval_ms(const char *s, uint64_t *out_us) {
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') return false;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > 1000) return false;
    *out_us = (uint64_t)v * 1000;
    return true;
}

static int parse_args(int argc, char **argv, watch_opts *o) {
    memset(o, 0, sizeof *o);
    o->interval_us = 1000;
    bool have_limit = false;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--cgroup")) {
            o->cgroup = true;
        } else if (!strcmp(a, "--limit") || !strcmp(a, "--interval-ms")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tmem watch: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            bool ok = !strcmp(a, "--limit") ? parse_limit(v, &o->limit)
                                            : parse_interval_ms(v, &o->interval_us);
            if (!ok) {
                fprintf(stderr, "tmem watch: bad value '%s' for %s\n", v, a);
                return 2;
            }
            have_limit |= !strcmp(a, "--limit");
        } else {
            fprintf(stderr, "tmem watch: unknown argument '%s' (the command goes after --)\n", a);
            return 2;
        }
    }
    if (!have_limit) {
        fprintf(stderr, "tmem watch: --limit SIZE is required\n");
        return 2;
    }
    if (i >= argc) {
        fprintf(stderr, "tmem watch: no command given after --\n");
        return 2;
    }
    o->cmd = argv + i;
    return -1;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The child: wait for the parent's go (it may move us into a cgroup first),
 * publish the limit, exec. */
static void child_run(const watch_opts *o, int go_fd) {
    char c;
    ssize_t n;
    do n = read(go_fd, &c, 1);
    while (n < 0 && errno == EINTR);
    close(go_fd);
    if (n != 1) _exit(127);
    char lim[32];
    snprintf(lim, sizeof lim, "%llu", (unsigned long long)o->limit);
    setenv("TMEM_LIMIT", lim, 1);
    execvp(o->cmd[0], o->cmd);
    fprintf(stderr, "tmem watch: cannot run '%s': %s\n", o->cmd[0], strerror(errno));
    _exit(127);
}

static void sleep_until(double deadline_ms) {
    struct timespec t;
    t.tv_sec = (time_t)(deadline_ms / 1e3);
    t.tv_nsec = (long)((deadline_ms - (double)t.tv_sec * 1e3) * 1e6);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {}
}

/* Sample until the child ends; kill it the moment it crosses the limit. */
static void sample_loop(pid_t pid, const watch_opts *o, watch_result *r) {
    double t0 = now_ms(), last = t0, next = t0;
    for (;;) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            r->status = status;
            break;
        }
        tmem_footprint f;
        double t = now_ms();
        if (tmem_footprint_read_pid((int)pid, &f) == TMEM_OK) {
            r->samples++;
            if (r->samples > 1 && t - last > r->max_gap_ms) r->max_gap_ms = t - last;
            last = t;
            if (f.rss > r->peak_rss) r->peak_rss = f.rss;
            if (f.footprint > r->peak) {
                r->peak = f.footprint;
                r->peak_ms = t - t0;
            }
            if (f.footprint > o->limit && !r->killed) {
                kill(pid, SIGKILL);
                r->killed = true;
            }
        }
        if (o->interval_us) {
            next += (double)o->interval_us / 1e3;
            if (next < t) next = t; /* fell behind: do not burst to catch up */
            sleep_until(next);
        }
    }
    r->elapsed_ms = now_ms() - t0;
}

static void print_result(const watch_opts *o, const watch_result *r, const watch_cgroup *cg) {
    int code = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
    int sig = WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0;
    double rate = r->elapsed_ms > 0 ? (double)r->samples / (r->elapsed_ms / 1e3) : 0;
    if (o->json) {
        printf("{\"limit\":%llu,\"peak_footprint\":%llu,\"peak_rss\":%llu,\"peak_ms\":%.3f,"
               "\"elapsed_ms\":%.3f,\"samples\":%llu,\"sample_hz\":%.1f,\"max_gap_ms\":%.3f,"
               "\"killed\":%s,\"kernel_killed\":%s,\"cgroup\":%s,\"cgroup_peak\":%llu,"
               "\"exit_code\":%d,\"signal\":%d}\n",
               (unsigned long long)o->limit, (unsigned long long)r->peak,
               (unsigned long long)r->peak_rss, r->peak_ms, r->elapsed_ms,
               (unsigned long long)r->samples, rate, r->max_gap_ms, r->killed ? "true" : "false",
               r->kernel_killed ? "true" : "false", cg ? "true" : "false",
               (unsigned long long)r->cgroup_peak, code, sig);
        return;
    }
    const double mib = 1024.0 * 1024.0;
    fprintf(stderr, "tmem watch: limit %.1f MiB, peak footprint %.1f MiB at %.1f ms (rss %.1f MiB)\n",
            (double)o->limit / mib, (double)r->peak / mib, r->peak_ms, (double)r->peak_rss / mib);
    fprintf(stderr, "tmem watch: %llu samples in %.1f ms (%.0f Hz, longest gap %.2f ms)\n",
            (unsigned long long)r->samples, r->elapsed_ms, rate, r->max_gap_ms);
    if (cg) fprintf(stderr, "tmem watch: cgroup %s, its peak %.1f MiB\n", cg->dir, (double)r->cgroup_peak / mib);
    if (r->killed) fprintf(stderr, "tmem watch: KILLED (SIGKILL): footprint crossed the limit\n");
    else if (r->kernel_killed) fprintf(stderr, "tmem watch: KILLED by the kernel's OOM killer (cgroup limit)\n");
    else if (sig) fprintf(stderr, "tmem watch: child ended by signal %d\n", sig);
    else fprintf(stderr, "tmem watch: child exited with %d\n", code);
}

int tmem_cmd_watch(int argc, char **argv) {
    watch_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;

    watch_cgroup cg_store, *cg = NULL;
    if (o.cgroup) {
        char err[256];
        if (watch_cgroup_create(o.limit, &cg_store, err, sizeof err) != 0) {
            fprintf(stderr, "tmem watch: --cgroup: %s\n", err);
            return 1;
        }
        cg = &cg_store;
    }
    int go[2];
    if (pipe(go) != 0) {
        perror("tmem watch: pipe");
        if (cg) watch_cgroup_remove(cg);
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("tmem watch: fork");
        close(go[0]);
        close(go[1]);
        if (cg) watch_cgroup_remove(cg);
        return 1;
    }
    if (pid == 0) {
        close(go[1]);
        child_run(&o, go[0]);
    }
    close(go[0]);
    char err[256];
    if (cg && watch_cgroup_add(cg, pid, err, sizeof err) != 0) {
        fprintf(stderr, "tmem watch: --cgroup: %s\n", err);
        kill(pid, SIGKILL);
        close(go[1]);
        waitpid(pid, NULL, 0);
        watch_cgroup_remove(cg);
        return 1;
    }
    ssize_t n;
    do n = write(go[1], "g", 1);
    while (n < 0 && errno == EINTR);
    close(go[1]);

    watch_result r = {0};
    sample_loop(pid, &o, &r);
    if (cg) {
        r.cgroup_peak = watch_cgroup_peak(cg);
        r.kernel_killed = !r.killed && watch_cgroup_oom_kills(cg) > 0;
        watch_cgroup_remove(cg);
    }
    print_result(&o, &r, cg);
    if (WIFEXITED(r.status)) return WEXITSTATUS(r.status);
    if (WIFSIGNALED(r.status)) return 128 + WTERMSIG(r.status);
    return 1;
}

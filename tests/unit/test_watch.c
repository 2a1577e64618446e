/*
 * tmem watch on programs of known footprint (tests/watch/memhog.c):
 * anonymous memory is counted, clean file pages are not, a memfd mapped
 * twice counts once, crossing the limit is a SIGKILL, the child sees
 * TMEM_LIMIT, and --cgroup makes the kernel enforce the limit where this
 * process may create a child cgroup. Each hog holds its memory for a while
 * so the sampler sees the plateau; the verdicts are about bytes, not time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define MIB (1024.0 * 1024.0)

static const char *tool, *hog;

typedef struct watch_json {
    double peak, peak_rss, samples, cgroup_peak;
    int killed, kernel_killed, exit_code, signal;
} watch_json;

static double num_after(const char *s, const char *key) {
    const char *p = strstr(s, key);
    return p ? atof(p + strlen(key)) : -1;
}

static int bool_after(const char *s, const char *key) {
    const char *p = strstr(s, key);
    return p ? !strncmp(p + strlen(key), "true", 4) : -1;
}

/* Run `tmem watch --json ARGS`; returns its exit status, fills *j. */
static int run_watch(const char *args, watch_json *j, char *out, size_t cap) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s watch --json %s", tool, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    j->peak = num_after(out, "\"peak_footprint\":");
    j->peak_rss = num_after(out, "\"peak_rss\":");
    j->samples = num_after(out, "\"samples\":");
    j->cgroup_peak = num_after(out, "\"cgroup_peak\":");
    j->killed = bool_after(out, "\"killed\":");
    j->kernel_killed = bool_after(out, "\"kernel_killed\":");
    j->exit_code = (int)num_after(out, "\"exit_code\":");
    j->signal = (int)num_after(out, "\"signal\":");
    printf("   %s\n   -> %s", cmd, out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_dirty_counted(void) {
    char out[2048], args[1024];
    watch_json j;
    snprintf(args, sizeof args, "--limit 512MiB -- %s dirty 64 1500", hog);
    CHECK(run_watch(args, &j, out, sizeof out) == 0);
    CHECK(j.killed == 0);
    CHECK(j.samples >= 1);
    CHECK_MSG(j.peak >= 64 * MIB && j.peak <= 72 * MIB, "peak %.1f MiB", j.peak / MIB);
}

static void test_over_limit_killed(void) {
    char out[2048], args[1024];
    watch_json j;
    snprintf(args, sizeof args, "--limit 32MiB -- %s dirty 256 3000", hog);
    CHECK(run_watch(args, &j, out, sizeof out) == 137);
    CHECK(j.killed == 1);
    CHECK(j.signal == 9);
    CHECK(j.peak > 32 * MIB);
}

static void test_clean_file_not_counted(void) {
    char dir[256], path[300], out[1024], args[700];
    watch_json j;
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/clean.bin", dir);
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL);
    static unsigned char block[1 << 16];
    memset(block, 0x5a, sizeof block);
    for (int i = 0; i < 1024; i++) fwrite(block, 1, sizeof block, f); /* 64 MiB */
    /* Pages just written are dirty in the page cache until written back:
     * the hog must see a model file as it is on disk, clean. */
    fflush(f);
    CHECK(fsync(fileno(f)) == 0);
    fclose(f);
    snprintf(args, sizeof args, "--limit 16MiB -- %s file %s 1500", hog, path);
    CHECK(run_watch(args, &j, out, sizeof out) == 0);
    CHECK(j.killed == 0);
    CHECK_MSG(j.peak < 8 * MIB, "clean pages counted: peak %.1f MiB", j.peak / MIB);
    CHECK_MSG(j.peak_rss > 60 * MIB, "file not read? rss %.1f MiB", j.peak_rss / MIB);
    unlink(path);
    rmdir(dir);
}

static void test_memfd_counted_once(void) {
    tmem_footprint self;
    REQUIRE_OK(tmem_footprint_read(&self));
    char out[2048], args[1024];
    watch_json j;
    snprintf(args, sizeof args, "--limit 512MiB -- %s memfd 48 1500", hog);
    CHECK(run_watch(args, &j, out, sizeof out) == 0);
    CHECK(j.peak >= 48 * MIB);
    /* Pss_Dirty (Linux 6.0+) counts a page mapped twice once; older kernels
     * give the per-mapping upper bound (documented in system.h). */
    if (self.pss_dirty > 0) CHECK_MSG(j.peak <= 56 * MIB, "memfd counted twice? %.1f MiB", j.peak / MIB);
}

static void test_child_sees_limit(void) {
    char cmd[1400], out[512];
    snprintf(cmd, sizeof cmd, "%s watch --limit 300MiB -- %s limit 2>/dev/null", tool, hog);
    FILE *p = popen(cmd, "r");
    REQUIRE(p != NULL);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    CHECK(pclose(p) == 0);
    CHECK_MSG(strstr(out, "env_limit=314572800 ") != NULL, "%.200s", out);
    /* The effective limit is at most the granted one. */
    double eff = num_after(out, "effective=");
    CHECK(eff > 0 && eff <= 314572800.0);
}

static void test_usage_errors(void) {
    char cmd[600];
    const char *bad[] = {"", "--limit", "--limit 0 -- true", "--limit -5 -- true", "--limit 1.5GiB -- true",
                         "--limit 10MiB", "--limit 10MiB --interval-ms nan -- true", "--bogus -- true"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s watch %s >/dev/null 2>&1", tool, bad[i]);
        int st = system(cmd);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 2, "'%s' gave %d", bad[i], st);
    }
    snprintf(cmd, sizeof cmd, "%s watch --help >/dev/null 2>&1", tool);
    CHECK(system(cmd) == 0);
}

/* Kernel enforcement: a sampler that looks once a second is too slow to
 * catch the hog, so the cgroup's own limit must stop it. */
static void test_cgroup_kernel_enforced(void) {
    char dir[512];
    int version;
    if (tmem_system_cgroup_dir(dir, sizeof dir, &version) != TMEM_OK) {
        printf("   SKIP part: no memory cgroup here\n");
        return;
    }
    char out[2048], args[1024];
    watch_json j;
    snprintf(args, sizeof args, "--cgroup --interval-ms 1000 --limit 64MiB -- %s dirty 256 3000", hog);
    int rc = run_watch(args, &j, out, sizeof out);
    if (rc == 1 && strstr(out, "cgroup") == NULL) {
        printf("   SKIP part: cannot create a child cgroup here (not permitted)\n");
        return;
    }
    CHECK(rc == 137);
    CHECK_MSG(j.kernel_killed == 1 || j.killed == 1, "%.200s", out);
    CHECK(j.cgroup_peak <= 64 * MIB + 4096);
    /* A fit under the same cgroup limit completes. */
    snprintf(args, sizeof args, "--cgroup --limit 128MiB -- %s dirty 32 500", hog);
    CHECK(run_watch(args, &j, out, sizeof out) == 0);
    CHECK(j.kernel_killed == 0 && j.killed == 0);
}

int main(void) {
    tool = getenv("TMEM_TOOL");
    hog = getenv("TMEM_MEMHOG");
    if (!tool || !hog) {
        printf("SKIP: TMEM_TOOL / TMEM_MEMHOG not set (run through ctest)\n");
        return 77;
    }
    tmem_footprint f;
    if (tmem_footprint_read(&f) == TMEM_E_UNSUPPORTED) {
        printf("SKIP: no smaps_rollup on this OS\n");
        return 77;
    }
    RUN(test_usage_errors);
    RUN(test_dirty_counted);
    RUN(test_over_limit_killed);
    RUN(test_clean_file_not_counted);
    RUN(test_memfd_counted_once);
    RUN(test_child_sees_limit);
    RUN(test_cgroup_kernel_enforced);
    return tmem_test_finish();
}

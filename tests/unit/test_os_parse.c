/* Pure parsers of /proc and cgroup text, fed hand-written strings: real
 * layouts, odd spacing, truncation, overflow, garbage. */
#include "harness.h"
#include "os/os_internal.h"

#include <stdlib.h>
#include <string.h>

#define S(lit) lit, sizeof(lit) - 1

static void test_smaps_rollup(void) {
    static const char real[] =
        "55885f30d000-7fff22e4b000 ---p 00000000 00:00 0                          [rollup]\n"
        "Rss:                1640 kB\n"
        "Pss:                 294 kB\n"
        "Shared_Clean:       1484 kB\n"
        "Shared_Dirty:          0 kB\n"
        "Private_Clean:        40 kB\n"
        "Private_Dirty:       116 kB\n"
        "Referenced:         1640 kB\n"
        "Anonymous:           116 kB\n"
        "LazyFree:              0 kB\n"
        "Swap:                  8 kB\n"
        "SwapPss:               0 kB\n";
    tmem_footprint f;
    CHECK_OK(tmem__os_parse_smaps_rollup(S(real), &f));
    CHECK(f.rss == 1640 * 1024);
    CHECK(f.shared_clean == 1484 * 1024);
    CHECK(f.private_clean == 40 * 1024);
    CHECK(f.private_dirty == 116 * 1024);
    CHECK(f.anonymous == 116 * 1024);
    CHECK(f.swap == 8 * 1024);
    CHECK(f.shared_dirty == 0);
    /* No Pss_Dirty (Linux < 6.0): the per-mapping upper bound. */
    CHECK(f.footprint == (116 + 0 + 8) * 1024);

    /* Pss_Dirty present: a page mapped twice counts once. */
    CHECK_OK(tmem__os_parse_smaps_rollup(S("Rss: 200 kB\nPss_Dirty: 60 kB\nShared_Dirty: 100 kB\n"
                                           "Private_Dirty: 10 kB\nSwap: 4 kB\nSwapPss: 2 kB\n"), &f));
    CHECK(f.pss_dirty == 60 * 1024 && f.swap_pss == 2 * 1024);
    CHECK(f.footprint == (60 + 2) * 1024);

    /* no trailing newline, tabs, CRLF */
    CHECK_OK(tmem__os_parse_smaps_rollup(S("Rss:\t12 kB\r\nPrivate_Dirty: 3 kB"), &f));
    CHECK(f.rss == 12 * 1024 && f.private_dirty == 3 * 1024);
    /* len bounds the read: the second line is outside */
    CHECK_OK(tmem__os_parse_smaps_rollup("Rss: 1 kB\nSwap: 9 kB\n", 10, &f));
    CHECK(f.rss == 1024 && f.swap == 0);
    /* cut mid-number: "Rss: 12" without unit reads as 12 bytes? no: the
     * line is "Rss: 1" — a number without unit is taken as-is */
    CHECK_OK(tmem__os_parse_smaps_rollup("Rss: 12 kB", 6, &f));
    CHECK(f.rss == 1);
    /* malformed lines are skipped, not half-used */
    CHECK_OK(tmem__os_parse_smaps_rollup(S("Rss: 12 MB\nRss: x kB\nAnonymous: 5 kB\nRss: 3 kB kB\n"), &f));
    CHECK(f.rss == 0 && f.anonymous == 5 * 1024);
    /* overflow: value that does not fit, and one that overflows *1024 */
    CHECK_ST(tmem__os_parse_smaps_rollup(S("Rss: 99999999999999999999999 kB\n"), &f), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_smaps_rollup(S("Rss: 18446744073709551615 kB\n"), &f), TMEM_E_PARSE);
    CHECK_OK(tmem__os_parse_smaps_rollup(S("Rss: 18014398509481983 kB\n"), &f));
    CHECK(f.rss == 18014398509481983ull * 1024);
    /* nothing known */
    CHECK_ST(tmem__os_parse_smaps_rollup(S(""), &f), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_smaps_rollup(S("hello\nworld:\n\n\n"), &f), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_smaps_rollup(S("Rssx: 1 kB\nRss 1 kB\n"), &f), TMEM_E_PARSE);
    CHECK(f.rss == 0);
    /* embedded NUL */
    static const char nul[] = "Rss: 4\0 kB\nSwap: 1 kB\n";
    CHECK_OK(tmem__os_parse_smaps_rollup(nul, sizeof nul - 1, &f));
    CHECK(f.rss == 0 && f.swap == 1024); /* the NUL makes the Rss line malformed */
    CHECK_ST(tmem__os_parse_smaps_rollup(NULL, 0, &f), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_parse_smaps_rollup(S("Rss: 1 kB"), NULL), TMEM_E_INVALID_ARG);
}

static void test_meminfo(void) {
    static const char real[] =
        "MemTotal:       24683520 kB\n"
        "MemFree:        23000000 kB\n"
        "MemAvailable:   24310000 kB\n"
        "HugePages_Total:       4\n"
        "HugePages_Free:        3\n"
        "HugePages_Rsvd:        0\n"
        "Hugepagesize:       2048 kB\n";
    tmem__os_meminfo m;
    CHECK_OK(tmem__os_parse_meminfo(S(real), &m));
    CHECK(m.mem_total == 24683520ull * 1024);
    CHECK(m.mem_available == 24310000ull * 1024 && m.has_available);
    CHECK(m.huge_pages_total == 4 && m.huge_pages_free == 3);
    CHECK(m.huge_page_size == 2u << 20);
    /* old kernel: no MemAvailable */
    CHECK_OK(tmem__os_parse_meminfo(S("MemTotal: 100 kB\nMemFree: 50 kB\n"), &m));
    CHECK(m.mem_total == 102400 && !m.has_available && m.mem_available == 0);
    CHECK_ST(tmem__os_parse_meminfo(S("MemFree: 50 kB\n"), &m), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_meminfo(S("MemTotal: -5 kB\n"), &m), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_meminfo(S("\n\n\n"), &m), TMEM_E_PARSE);
}

static void test_proc_cgroup(void) {
    char v2[64], v1[64];
    static const char hybrid[] = "9:name=systemd:/\n"
                                 "4:memory:/process_api/4f7b\n"
                                 "3:cpuset:/\n"
                                 "0::/user.slice/app.scope\n";
    CHECK_OK(tmem__os_parse_proc_cgroup(S(hybrid), v2, sizeof v2, v1, sizeof v1));
    CHECK(strcmp(v2, "/user.slice/app.scope") == 0);
    CHECK(strcmp(v1, "/process_api/4f7b") == 0);
    /* pure v2 */
    CHECK_OK(tmem__os_parse_proc_cgroup(S("0::/\n"), v2, sizeof v2, v1, sizeof v1));
    CHECK(strcmp(v2, "/") == 0 && v1[0] == '\0');
    /* v1 memory co-mounted with other controllers, path with a colon */
    CHECK_OK(tmem__os_parse_proc_cgroup(S("5:cpu,memory,io:/a:b\n"), v2, sizeof v2, v1, sizeof v1));
    CHECK(v2[0] == '\0' && strcmp(v1, "/a:b") == 0);
    /* "memoryx" is not "memory" */
    CHECK_ST(tmem__os_parse_proc_cgroup(S("5:memoryx:/a\n"), v2, sizeof v2, v1, sizeof v1), TMEM_E_PARSE);
    /* too long for the buffer: absent */
    char tiny[4];
    CHECK_ST(tmem__os_parse_proc_cgroup(S("0::/abcdef\n"), tiny, sizeof tiny, v1, sizeof v1), TMEM_E_PARSE);
    CHECK(tiny[0] == '\0');
    /* garbage */
    CHECK_ST(tmem__os_parse_proc_cgroup(S("::\n:\n0::\n0::relative\nnonsense"), v2, sizeof v2, v1, sizeof v1), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_proc_cgroup(S(""), v2, sizeof v2, v1, sizeof v1), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_proc_cgroup(S("0::/"), v2, 0, v1, sizeof v1), TMEM_E_INVALID_ARG);
}

static void test_mountinfo(void) {
    static const char real[] =
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
    tmem__os_cgroup_mounts m;
    CHECK_OK(tmem__os_parse_mountinfo(S(real), &m));
    CHECK(strcmp(m.v2_mount, "/sys/fs/cgroup/unified") == 0 && strcmp(m.v2_root, "/") == 0);
    CHECK(strcmp(m.v1_mount, "/sys/fs/cgroup/memory") == 0);
    /* container: cgroup2 with a non-root root and an escaped space */
    CHECK_OK(tmem__os_parse_mountinfo(S("1 0 0:1 /kubepods/pod1 /sys/fs/my\\040cg rw - cgroup2 none rw\n"), &m));
    CHECK(strcmp(m.v2_mount, "/sys/fs/my cg") == 0 && strcmp(m.v2_root, "/kubepods/pod1") == 0);
    CHECK(m.v1_mount[0] == '\0');
    /* bad escapes, no separator, truncated lines: skipped */
    CHECK_ST(tmem__os_parse_mountinfo(S("1 0 0:1 / /x\\0 rw - cgroup2 none rw\n"), &m), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_mountinfo(S("1 0 0:1 / /x\\000 rw - cgroup2 none rw\n"), &m), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_mountinfo(S("1 0 0:1 / /x rw cgroup2 none rw\n"), &m), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_mountinfo(S("1 0 0:1 / /x rw -"), &m), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_mountinfo(S("- cgroup2\n"), &m), TMEM_E_PARSE);
    /* a v1 hierarchy without memory does not count */
    CHECK_ST(tmem__os_parse_mountinfo(S("1 0 0:1 / /c rw - cgroup cgroup rw,cpu,memoryless\n"), &m), TMEM_E_PARSE);
    /* a mount point longer than the buffer is skipped */
    char longline[600];
    memset(longline, 0, sizeof longline);
    strcpy(longline, "1 0 0:1 / /");
    memset(longline + strlen(longline), 'a', 400);
    strcat(longline, " rw - cgroup2 none rw\n");
    CHECK_ST(tmem__os_parse_mountinfo(longline, strlen(longline), &m), TMEM_E_PARSE);
}

static void test_cgroup_join(void) {
    char b[64];
    CHECK(tmem__os_cgroup_join("/sys/fs/cgroup", "/", "/user.slice/app", b, sizeof b));
    CHECK(strcmp(b, "/sys/fs/cgroup/user.slice/app") == 0);
    CHECK(tmem__os_cgroup_join("/sys/fs/cgroup", "/", "/", b, sizeof b));
    CHECK(strcmp(b, "/sys/fs/cgroup") == 0);
    /* container: the mount shows /kubepods/pod1 as its root */
    CHECK(tmem__os_cgroup_join("/sys/fs/cgroup", "/kubepods/pod1", "/kubepods/pod1/ctr", b, sizeof b));
    CHECK(strcmp(b, "/sys/fs/cgroup/ctr") == 0);
    CHECK(tmem__os_cgroup_join("/sys/fs/cgroup", "/kubepods/pod1", "/kubepods/pod1", b, sizeof b));
    CHECK(strcmp(b, "/sys/fs/cgroup") == 0);
    /* a root that is only a prefix of a component does not strip */
    CHECK(tmem__os_cgroup_join("/m", "/kube", "/kubepods/x", b, sizeof b));
    CHECK(strcmp(b, "/m/kubepods/x") == 0);
    /* refused: climbing out, relative, too long */
    CHECK(!tmem__os_cgroup_join("/m", "/", "/a/../../etc", b, sizeof b) && b[0] == '\0');
    CHECK(!tmem__os_cgroup_join("/m", "/", "/..", b, sizeof b));
    CHECK(tmem__os_cgroup_join("/m", "/", "/a..b/c", b, sizeof b)); /* ".." inside a name is fine */
    CHECK(!tmem__os_cgroup_join("/m", "/", "rel", b, sizeof b));
    char tiny[8];
    CHECK(!tmem__os_cgroup_join("/sys/fs/cgroup", "/", "/x", tiny, sizeof tiny) && tiny[0] == '\0');
}

static void test_cgroup_value(void) {
    uint64_t v = 7;
    CHECK_OK(tmem__os_parse_cgroup_value(S("max\n"), &v));
    CHECK(v == 0);
    CHECK_OK(tmem__os_parse_cgroup_value(S("3221225472\n"), &v));
    CHECK(v == 3221225472ull);
    CHECK_OK(tmem__os_parse_cgroup_value(S("  42  "), &v));
    CHECK(v == 42);
    CHECK_OK(tmem__os_parse_cgroup_value(S("9223372036854771712\n"), &v)); /* v1 "unlimited" */
    CHECK(v == 0);
    CHECK_ST(tmem__os_parse_cgroup_value(S("maxx\n"), &v), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_cgroup_value(S("12 34\n"), &v), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_cgroup_value(S("-1\n"), &v), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_cgroup_value(S("\n"), &v), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_cgroup_value(S("99999999999999999999\n"), &v), TMEM_E_PARSE);
    CHECK(v == 0);
}

static void test_psi(void) {
    uint32_t some = 1, full = 1;
    bool has_full = true;
    static const char real[] = "some avg10=12.34 avg60=1.00 avg300=0.00 total=123456\n"
                               "full avg10=0.50 avg60=0.00 avg300=0.00 total=99\n";
    CHECK_OK(tmem__os_parse_psi(S(real), &some, &full, &has_full));
    CHECK(some == 1234 && full == 50 && has_full);
    /* old kernel: only "some"; extra decimals truncated, one decimal scaled */
    CHECK_OK(tmem__os_parse_psi(S("some avg10=100.999 avg60=0 total=0"), &some, &full, &has_full));
    CHECK(some == 10099 && full == 0 && !has_full);
    CHECK_OK(tmem__os_parse_psi(S("some avg10=3.5 total=0\n"), &some, &full, &has_full));
    CHECK(some == 350);
    CHECK_OK(tmem__os_parse_psi(S("some avg10=7 total=0\n"), &some, &full, &has_full));
    CHECK(some == 700);
    CHECK_ST(tmem__os_parse_psi(S("full avg10=1.00\n"), &some, &full, &has_full), TMEM_E_PARSE);
    CHECK(some == 0 && full == 0 && !has_full);
    CHECK_ST(tmem__os_parse_psi(S("some avg10=.5\n"), &some, &full, &has_full), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_psi(S("some avg10=1.\n"), &some, &full, &has_full), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_psi(S("some avg10=1.5x\n"), &some, &full, &has_full), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_psi(S("some avg10=1 avg10=2\n"), &some, &full, &has_full), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_psi(S("some avg10=99999999999\n"), &some, &full, &has_full), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_psi(S("some total=5\n"), &some, &full, &has_full), TMEM_E_PARSE);
    CHECK_ST(tmem__os_parse_psi(S("somex avg10=1.00\n"), &some, &full, &has_full), TMEM_E_PARSE);
}

static void test_memory_events(void) {
    tmem__os_pressure_info p;
    memset(&p, 0xff, sizeof p);
    p.has_psi = true;
    static const char real[] = "low 0\nhigh 17\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n";
    CHECK_OK(tmem__os_parse_memory_events(S(real), &p));
    CHECK(p.events_high == 17 && p.events_max == 3 && p.events_oom == 1 && p.events_oom_kill == 1);
    CHECK(p.has_psi); /* other fields untouched */
    /* missing keys read 0; a malformed line is skipped */
    CHECK_OK(tmem__os_parse_memory_events(S("high 5\nmax x\noom 1 2\n"), &p));
    CHECK(p.events_high == 5 && p.events_max == 0 && p.events_oom == 0 && p.events_oom_kill == 0);
    /* duplicates: the first wins */
    CHECK_OK(tmem__os_parse_memory_events(S("high 1\nhigh 2\n"), &p));
    CHECK(p.events_high == 1);
    p.events_high = 42;
    CHECK_ST(tmem__os_parse_memory_events(S("low 0\nhighx 1\n"), &p), TMEM_E_PARSE);
    CHECK(p.events_high == 42); /* unchanged on failure */
    CHECK_ST(tmem__os_parse_memory_events(S("high 99999999999999999999\n"), &p), TMEM_E_PARSE);
}

/* Random bytes and random mutations of real inputs: no crash, no read past
 * len (ASan checks), outputs consistent with the status. */
static void test_random_garbage(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(0x05a5e));
    static const char *seeds[] = {
        "Rss: 1640 kB\nPrivate_Dirty: 116 kB\n", "MemTotal: 100 kB\nMemAvailable: 50 kB\nHugepagesize: 2048 kB\n",
        "0::/a/b\n4:memory:/x\n", "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "max\n",
        "some avg10=1.00 avg60=0 total=1\nfull avg10=0.10 total=0\n", "high 1\nmax 2\noom 3\noom_kill 4\n"};
    for (int iter = 0; iter < 20000; iter++) {
        const char *seed = seeds[iter % 7];
        size_t len = strlen(seed);
        char *buf = malloc(len + 8);
        REQUIRE(buf);
        memcpy(buf, seed, len);
        size_t n = len + tmem_rng_range(&r, 0, 8);
        for (size_t i = len; i < n; i++) buf[i] = (char)tmem_rng_next(&r);
        int muts = (int)tmem_rng_range(&r, 0, 4);
        for (int k = 0; k < muts && n; k++) buf[tmem_rng_range(&r, 0, n - 1)] = (char)tmem_rng_next(&r);
        n = tmem_rng_range(&r, 0, n);
        tmem_footprint f;
        tmem__os_meminfo mi;
        char a[32], b[32];
        tmem__os_cgroup_mounts m;
        uint64_t v;
        uint32_t s1, s2;
        bool hf;
        tmem__os_pressure_info p = {0};
        if (tmem__os_parse_smaps_rollup(buf, n, &f) != TMEM_OK) CHECK(f.rss == 0 && f.private_dirty == 0);
        (void)tmem__os_parse_meminfo(buf, n, &mi);
        if (tmem__os_parse_proc_cgroup(buf, n, a, sizeof a, b, sizeof b) == TMEM_OK) CHECK(a[0] == '/' || b[0] == '/');
        if (tmem__os_parse_mountinfo(buf, n, &m) == TMEM_OK) CHECK(m.v2_mount[0] || m.v1_mount[0]);
        (void)tmem__os_parse_cgroup_value(buf, n, &v);
        if (tmem__os_parse_psi(buf, n, &s1, &s2, &hf) != TMEM_OK) CHECK(s1 == 0 && !hf);
        (void)tmem__os_parse_memory_events(buf, n, &p);
        free(buf);
    }
}

int main(void) {
    RUN(test_smaps_rollup);
    RUN(test_meminfo);
    RUN(test_proc_cgroup);
    RUN(test_mountinfo);
    RUN(test_cgroup_join);
    RUN(test_cgroup_value);
    RUN(test_psi);
    RUN(test_memory_events);
    RUN(test_random_garbage);
    return tmem_test_finish();
}

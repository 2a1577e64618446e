/* The OS porting contract on Linux: semantics checked by touching memory and
 * by asking the kernel (mincore residency, smaps_rollup footprint, seals). */
#include "harness.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/capability.h>
#include <sys/syscall.h>
#endif

static size_t pg(void) { return tmem__os_page_size(); }

static size_t resident(void *p, size_t size) {
    size_t n = (size_t)-1;
    tmem_status st = tmem__os_residency(p, size, &n);
    return st == TMEM_OK ? n : (size_t)-1;
}

static bool all_bytes(const void *p, size_t n, unsigned char v) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != v) return false;
    return true;
}

static void test_queries(void) {
    CHECK(pg() == (size_t)sysconf(_SC_PAGESIZE));
    size_t h = tmem__os_huge_page_size();
    CHECK(h == 0 || (h > pg() && (h & (h - 1)) == 0));
    printf("   page %zu, huge page %zu\n", pg(), h);
}

static void test_bad_args(void) {
    void *p = (void *)1;
    CHECK_ST(tmem__os_reserve(0, 0, &p), TMEM_E_INVALID_ARG);
    CHECK(p == NULL);
    CHECK_ST(tmem__os_reserve(pg() + 1, 0, &p), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_reserve(pg(), 3 * pg(), &p), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem__os_reserve(pg(), pg() / 2, &p), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem__os_reserve(pg(), 0, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_reserve(SIZE_MAX - pg() + 1, 1ull << 40, &p), TMEM_E_OVERFLOW);
    CHECK_ST(tmem__os_map_anon(0, 0, &p, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_commit(NULL, pg(), 0), TMEM_E_INVALID_ARG);
    char buf[64];
    CHECK_ST(tmem__os_commit(buf + 1, pg(), 0), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_decommit(buf + 1, pg()), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_release(buf + 1, pg()), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_advise(buf + 1, pg(), TMEM__OS_ADVISE_DONTNEED), TMEM_E_INVALID_ARG);
    size_t n = 5;
    CHECK_ST(tmem__os_residency(buf + 1, pg(), &n), TMEM_E_INVALID_ARG);
    CHECK(n == 0);
    int fd = 3;
    CHECK_ST(tmem__os_memfd_create("x", UINT64_MAX, &fd), TMEM_E_OVERFLOW);
    CHECK(fd == -1);
    CHECK_ST(tmem__os_memfd_seal(-1, TMEM__OS_SEAL_GROW), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_fd_resize(-1, 0), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_file_open(NULL, &fd, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_file_open("", &fd, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_close(-5), TMEM_E_INVALID_ARG);
}

static void test_reserve_commit_decommit(void) {
    const size_t align = 1u << 21, size = 64 * pg();
    int64_t maps0 = tmem__os_live_mappings();
    void *r = NULL;
    REQUIRE_OK(tmem__os_reserve(size, align, &r));
    CHECK(((uintptr_t)r & (align - 1)) == 0);
    CHECK(tmem__os_live_mappings() == maps0 + 1);
    CHECK(resident(r, size) == 0);

    char *p = (char *)r + 8 * pg();
    CHECK_OK(tmem__os_commit(p, 16 * pg(), 0));
    CHECK(resident(r, size) == 0); /* committed is not resident until touched */
    memset(p, 0x5a, 16 * pg());
    CHECK(resident(r, size) == 16);
    CHECK(resident(p, 16 * pg()) == 16);

    /* decommit half: those pages go, the rest keep their contents */
    CHECK_OK(tmem__os_decommit(p, 8 * pg()));
    CHECK(resident(p, 16 * pg()) == 8);
    CHECK(all_bytes(p + 8 * pg(), 8 * pg(), 0x5a));
    /* recommit: fresh zero pages */
    CHECK_OK(tmem__os_commit(p, 8 * pg(), 0));
    CHECK(all_bytes(p, 8 * pg(), 0));

    /* commit with populate: resident at once, contents kept */
    char *q = (char *)r + 40 * pg();
    CHECK_OK(tmem__os_commit(q, 4 * pg(), TMEM__OS_MAP_POPULATE));
    CHECK(resident(q, 4 * pg()) == 4);
    CHECK(all_bytes(q, 4 * pg(), 0));

    CHECK_OK(tmem__os_release(r, size));
    CHECK(tmem__os_live_mappings() == maps0);
}

/* Committing and touching N pages grows Private_Dirty and Anonymous by N
 * pages; decommitting gives them back. */
static void test_footprint_tracks_commit(void) {
    const size_t n = 2048; /* 8 MiB with 4 KiB pages: noise is far smaller */
    const uint64_t bytes = (uint64_t)n * pg(), tol = 64 * (uint64_t)pg();
    tmem_footprint f0, f1, f2;
    tmem_status st = tmem_footprint_read(&f0);
    if (st == TMEM_E_UNSUPPORTED) {
        printf("   no smaps_rollup: skipped\n");
        return;
    }
    REQUIRE_OK(st);
    CHECK(f0.rss > 0 && f0.private_dirty > 0 && f0.anonymous > 0);
    void *r;
    REQUIRE_OK(tmem__os_reserve(bytes, 0, &r));
    REQUIRE_OK(tmem__os_commit(r, bytes, 0));
    memset(r, 1, bytes);
    REQUIRE_OK(tmem_footprint_read(&f1));
    int64_t dirty = (int64_t)(f1.private_dirty - f0.private_dirty), anon = (int64_t)(f1.anonymous - f0.anonymous);
    printf("   +%zu pages: private_dirty %+lld KiB, anonymous %+lld KiB (want %llu KiB)\n", n, (long long)dirty / 1024,
           (long long)anon / 1024, (unsigned long long)bytes / 1024);
    CHECK_MSG(dirty >= (int64_t)(bytes - tol) && dirty <= (int64_t)(bytes + tol), "private_dirty grew by %lld", (long long)dirty);
    CHECK_MSG(anon >= (int64_t)(bytes - tol) && anon <= (int64_t)(bytes + tol), "anonymous grew by %lld", (long long)anon);
    CHECK(f1.rss >= f0.rss + bytes - tol);
    REQUIRE_OK(tmem__os_decommit(r, bytes));
    REQUIRE_OK(tmem_footprint_read(&f2));
    int64_t back = (int64_t)(f1.private_dirty - f2.private_dirty);
    CHECK_MSG(back >= (int64_t)(bytes - tol), "decommit gave back only %lld bytes", (long long)back);
    CHECK_OK(tmem__os_release(r, bytes));
    /* zeroed on bad args */
    CHECK_ST(tmem_footprint_read(NULL), TMEM_E_INVALID_ARG);
}

static void test_map_anon(void) {
    void *p = NULL;
    bool huge = true;
    REQUIRE_OK(tmem__os_map_anon(8 * pg(), TMEM__OS_MAP_POPULATE, &p, &huge));
    CHECK(!huge);
    CHECK(resident(p, 8 * pg()) == 8);
    CHECK(all_bytes(p, 8 * pg(), 0));
    CHECK_OK(tmem__os_unmap(p, 8 * pg()));
    REQUIRE_OK(tmem__os_map_anon(8 * pg(), 0, &p, NULL));
    CHECK(resident(p, 8 * pg()) == 0);
    CHECK_OK(tmem__os_unmap(p, 8 * pg()));
}

/* MAP_HUGETLB works (pages configured) or the call falls back to normal pages
 * with THP advice and says so; either way the memory is usable. */
static void test_huge_pages(void) {
    size_t h = tmem__os_huge_page_size();
    if (!h) {
        printf("   huge page size unknown: skipped\n");
        return;
    }
    void *p = NULL;
    bool used = true;
    REQUIRE_OK(tmem__os_map_anon(2 * h, TMEM__OS_MAP_HUGE | TMEM__OS_MAP_POPULATE, &p, &used));
    tmem_system_info info;
    CHECK_OK(tmem_system_info_read(&info));
    printf("   MAP_HUGETLB %s (HugePages_Free was %llu, THP %s)\n", used ? "used" : "unavailable: fell back",
           (unsigned long long)info.huge_pages_free, info.thp ? "advisable" : "off");
    memset(p, 7, 2 * h);
    CHECK(all_bytes(p, 2 * h, 7));
    CHECK(resident(p, 2 * h) == 2 * h / pg());
    CHECK_OK(tmem__os_unmap(p, 2 * h));
    /* not a multiple of the huge page size: never hugetlb */
    REQUIRE_OK(tmem__os_map_anon(pg(), TMEM__OS_MAP_HUGE, &p, &used));
    CHECK(!used);
    CHECK_OK(tmem__os_unmap(p, pg()));
}

static void test_advise(void) {
    const size_t n = 16;
    void *p;
    REQUIRE_OK(tmem__os_map_anon(n * pg(), 0, &p, NULL));
    memset(p, 3, n * pg());
    CHECK(resident(p, n * pg()) == n);
    CHECK_OK(tmem__os_advise(p, n * pg(), TMEM__OS_ADVISE_WILLNEED));
    CHECK_OK(tmem__os_advise(p, 4 * pg(), TMEM__OS_ADVISE_DONTNEED));
    CHECK(resident(p, 4 * pg()) == 0);
    CHECK(all_bytes(p, 4 * pg(), 0)); /* anon DONTNEED reads zeros */
    CHECK(all_bytes((char *)p + 4 * pg(), 4 * pg(), 3));
    static const tmem__os_advice optional[] = {TMEM__OS_ADVISE_FREE, TMEM__OS_ADVISE_COLD, TMEM__OS_ADVISE_PAGEOUT,
                                               TMEM__OS_ADVISE_HUGEPAGE, TMEM__OS_ADVISE_NOHUGEPAGE};
    static const char *names[] = {"FREE", "COLD", "PAGEOUT", "HUGEPAGE", "NOHUGEPAGE"};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
        tmem_status st = tmem__os_advise((char *)p + 8 * pg(), 4 * pg(), optional[i]);
        printf("   MADV_%s: %s\n", names[i], tmem_status_name(st));
        CHECK(st == TMEM_OK || st == TMEM_E_UNSUPPORTED);
    }
    /* MADV_FREE'd pages either still hold their data or read zeros, nothing else */
    const unsigned char *b = (const unsigned char *)p + 8 * pg();
    CHECK(b[0] == 3 || b[0] == 0);
    CHECK_ST(tmem__os_advise(p, pg(), (tmem__os_advice)99), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem__os_unmap(p, n * pg()));
}

static void test_lock(void) {
    void *p;
    REQUIRE_OK(tmem__os_map_anon(4 * pg(), 0, &p, NULL));
    tmem_status st = tmem__os_lock(p, pg());
    CHECK(st == TMEM_OK || st == TMEM_E_PERMISSION);
    if (st == TMEM_OK) {
        CHECK(resident(p, pg()) == 1); /* mlock faults the pages in */
        CHECK_OK(tmem__os_unlock(p, pg()));
    }
    CHECK_OK(tmem__os_unmap(p, 4 * pg()));
    /* a locked commit inside a reservation */
    void *r;
    REQUIRE_OK(tmem__os_reserve(8 * pg(), 0, &r));
    st = tmem__os_commit(r, 2 * pg(), TMEM__OS_MAP_LOCKED);
    CHECK(st == TMEM_OK || st == TMEM_E_PERMISSION);
    if (st == TMEM_OK) CHECK(resident(r, 2 * pg()) == 2);
    CHECK_OK(tmem__os_release(r, 8 * pg()));
}

#ifdef __linux__
/* Without CAP_IPC_LOCK and over RLIMIT_MEMLOCK, locking is a clean
 * TMEM_E_PERMISSION and a locked commit leaves the range uncommitted. Runs in
 * a child that drops the capability (we may be root). */
static int lock_child(void) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) != 0) return 10;
    data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    data[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
    if (syscall(SYS_capset, &hdr, data) != 0) return 11;
    struct rlimit rl = {tmem__os_page_size(), tmem__os_page_size()};
    if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) return 12;
    size_t p4 = 4 * tmem__os_page_size();
    void *p;
    if (tmem__os_map_anon(p4, 0, &p, NULL) != TMEM_OK) return 13;
    if (tmem__os_lock(p, p4) != TMEM_E_PERMISSION) return 14;
    if (tmem__os_map_anon(p4, TMEM__OS_MAP_LOCKED, &p, NULL) != TMEM_E_PERMISSION || p != NULL) return 15;
    void *r;
    if (tmem__os_reserve(p4, 0, &r) != TMEM_OK) return 16;
    if (tmem__os_commit(r, p4, TMEM__OS_MAP_LOCKED) != TMEM_E_PERMISSION) return 17;
    size_t n = 99;
    if (tmem__os_residency(r, p4, &n) != TMEM_OK || n != 0) return 18;
    return 0;
}

static void test_lock_over_limit(void) {
    fflush(stdout);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(lock_child());
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock child failed at step %d", WEXITSTATUS(status));
}
#endif

static void test_memfd_seals(void) {
    int fd = -1;
    tmem_status st = tmem__os_memfd_create("tmem-test", 4 * pg(), &fd);
    if (st == TMEM_E_UNSUPPORTED) {
        printf("   no memfd: skipped\n");
        return;
    }
    REQUIRE_OK(st);
    uint64_t size = 0;
    CHECK_OK(tmem__os_fd_size(fd, &size));
    CHECK(size == 4 * pg());
    unsigned seals = 99;
    CHECK_OK(tmem__os_fd_seals(fd, &seals));
    CHECK(seals == 0);

    void *w = NULL;
    REQUIRE_OK(tmem__os_map_fd(fd, 0, 4 * pg(), true, true, &w));
    memset(w, 0x42, 4 * pg());

    /* size seals: resizing fails either way */
    CHECK_OK(tmem__os_memfd_seal(fd, TMEM__OS_SEAL_SHRINK | TMEM__OS_SEAL_GROW));
    CHECK_OK(tmem__os_fd_seals(fd, &seals));
    CHECK(seals == (TMEM__OS_SEAL_SHRINK | TMEM__OS_SEAL_GROW));
    CHECK_ST(tmem__os_fd_resize(fd, 2 * pg()), TMEM_E_PERMISSION);
    CHECK_ST(tmem__os_fd_resize(fd, 8 * pg()), TMEM_E_PERMISSION);
    CHECK_OK(tmem__os_fd_resize(fd, 4 * pg())); /* same size is allowed */

    /* write seal while a writable shared mapping lives: busy */
    CHECK_ST(tmem__os_memfd_seal(fd, TMEM__OS_SEAL_WRITE), TMEM_E_BUSY);
    CHECK_OK(tmem__os_unmap(w, 4 * pg()));
    CHECK_OK(tmem__os_memfd_seal(fd, TMEM__OS_SEAL_WRITE | TMEM__OS_SEAL_SEAL));
    CHECK_OK(tmem__os_fd_seals(fd, &seals));
    CHECK(seals & TMEM__OS_SEAL_WRITE);
    CHECK(seals & TMEM__OS_SEAL_SEAL);
    /* no new writable shared mapping; write() fails; read-only mapping works */
    void *x = NULL;
    CHECK_ST(tmem__os_map_fd(fd, 0, 4 * pg(), true, true, &x), TMEM_E_PERMISSION);
    CHECK(x == NULL);
    char one = 1;
    CHECK(pwrite(fd, &one, 1, 0) == -1 && errno == EPERM);
    void *ro = NULL;
    REQUIRE_OK(tmem__os_map_fd(fd, 0, 4 * pg(), false, true, &ro));
    CHECK(all_bytes(ro, 4 * pg(), 0x42));
    CHECK_OK(tmem__os_unmap(ro, 4 * pg()));
    /* F_SEAL_SEAL: no more seals */
    CHECK_ST(tmem__os_memfd_seal(fd, TMEM__OS_SEAL_FUTURE_WRITE), TMEM_E_PERMISSION);
    CHECK_ST(tmem__os_memfd_seal(fd, 1u << 7), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem__os_close(fd));
}

/* F_SEAL_FUTURE_WRITE: the producer keeps its writable mapping, nobody gets a
 * new one. */
static void test_seal_future_write(void) {
    int fd;
    if (tmem__os_memfd_create("tmem-fw", pg(), &fd) != TMEM_OK) return;
    void *w;
    REQUIRE_OK(tmem__os_map_fd(fd, 0, pg(), true, true, &w));
    tmem_status st = tmem__os_memfd_seal(fd, TMEM__OS_SEAL_FUTURE_WRITE);
    printf("   F_SEAL_FUTURE_WRITE: %s\n", tmem_status_name(st));
    CHECK(st == TMEM_OK || st == TMEM_E_UNSUPPORTED);
    if (st == TMEM_OK) {
        ((volatile char *)w)[0] = 9; /* existing mapping still writable */
        void *x = NULL;
        CHECK_ST(tmem__os_map_fd(fd, 0, pg(), true, true, &x), TMEM_E_PERMISSION);
        void *ro;
        REQUIRE_OK(tmem__os_map_fd(fd, 0, pg(), false, true, &ro));
        CHECK(((volatile char *)ro)[0] == 9);
        CHECK_OK(tmem__os_unmap(ro, pg()));
    }
    CHECK_OK(tmem__os_unmap(w, pg()));
    CHECK_OK(tmem__os_close(fd));
}

static void test_file_mapping(void) {
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/model.bin", dir);
    int wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(wfd >= 0);
    const size_t len = 3 * pg() + 123;
    unsigned char *data = malloc(len);
    REQUIRE(data);
    for (size_t i = 0; i < len; i++) data[i] = (unsigned char)(i * 31 + 7);
    REQUIRE(write(wfd, data, len) == (ssize_t)len);
    close(wfd);

    int64_t fds0 = tmem__os_live_fds();
    int fd = -1;
    uint64_t size = 0;
    REQUIRE_OK(tmem__os_file_open(path, &fd, &size));
    CHECK(size == len);
    CHECK(tmem__os_live_fds() == fds0 + 1);
    uint64_t sz2;
    CHECK_OK(tmem__os_fd_size(fd, &sz2));
    CHECK(sz2 == len);
    void *m = NULL;
    REQUIRE_OK(tmem__os_map_fd(fd, 0, len, false, false, &m));
    CHECK(memcmp(m, data, len) == 0);
    CHECK_OK(tmem__os_unmap(m, (len + pg() - 1) / pg() * pg()));
    /* offset mapping */
    REQUIRE_OK(tmem__os_map_fd(fd, pg(), pg(), false, true, &m));
    CHECK(memcmp(m, data + pg(), pg()) == 0);
    CHECK_OK(tmem__os_unmap(m, pg()));
    CHECK_ST(tmem__os_map_fd(fd, 1, pg(), false, false, &m), TMEM_E_INVALID_ARG);
    /* a read-only fd cannot be mapped writable and shared */
    CHECK_ST(tmem__os_map_fd(fd, 0, pg(), true, true, &m), TMEM_E_PERMISSION);
    CHECK_OK(tmem__os_close(fd));
    CHECK(tmem__os_live_fds() == fds0);

    snprintf(path, sizeof path, "%s/missing.bin", dir);
    CHECK_ST(tmem__os_file_open(path, &fd, &size), TMEM_E_NOT_FOUND);
    CHECK(fd == -1 && size == 0);
    CHECK_ST(tmem__os_file_open(dir, &fd, &size), TMEM_E_INVALID_ARG);
    CHECK(tmem__os_live_fds() == fds0);
    snprintf(path, sizeof path, "%s/model.bin", dir);
    unlink(path);
    rmdir(dir);
    free(data);
}

static void test_limits_and_info(void) {
    tmem_system_limits l;
    tmem_status st = tmem_system_limits_read(&l);
    REQUIRE_OK(st);
    printf("   mem_total %llu MiB, available %llu MiB, cgroup max %llu high %llu current %llu, effective %llu MiB\n",
           (unsigned long long)l.mem_total >> 20, (unsigned long long)l.mem_available >> 20,
           (unsigned long long)l.cgroup_max, (unsigned long long)l.cgroup_high, (unsigned long long)l.cgroup_current,
           (unsigned long long)l.effective >> 20);
    CHECK(l.mem_total > 0);
    CHECK(l.mem_available > 0 && l.mem_available <= l.mem_total);
    CHECK(l.effective > 0);
    if (l.env_limit) {
        CHECK(l.effective <= l.env_limit); /* run under a supervisor's TMEM_LIMIT */
    } else if (l.cgroup_max || l.cgroup_high) {
        uint64_t m = l.cgroup_max && l.cgroup_high ? (l.cgroup_max < l.cgroup_high ? l.cgroup_max : l.cgroup_high)
                                                   : (l.cgroup_max ? l.cgroup_max : l.cgroup_high);
        CHECK(l.effective == m);
    } else {
        CHECK(l.effective == l.mem_available);
    }
    CHECK_ST(tmem_system_limits_read(NULL), TMEM_E_INVALID_ARG);

    /* TMEM_LIMIT: decimal bytes bind the effective limit; anything else is
     * ignored rather than misread. */
    const char *saved = getenv("TMEM_LIMIT");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    setenv("TMEM_LIMIT", "12345678", 1);
    REQUIRE_OK(tmem_system_limits_read(&l));
    CHECK(l.env_limit == 12345678 && l.effective == 12345678);
    const char *bad[] = {"-5", "12MiB", "0x10", " 7", "99999999999999999999999", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TMEM_LIMIT", bad[i], 1);
        REQUIRE_OK(tmem_system_limits_read(&l));
        CHECK_MSG(l.env_limit == 0, "'%s' read as %llu", bad[i], (unsigned long long)l.env_limit);
    }
    if (saved) setenv("TMEM_LIMIT", keep, 1);
    else unsetenv("TMEM_LIMIT");

    tmem_system_info info;
    int64_t m0 = tmem__os_live_mappings(), f0 = tmem__os_live_fds();
    REQUIRE_OK(tmem_system_info_read(&info));
    CHECK(tmem__os_live_mappings() == m0 && tmem__os_live_fds() == f0); /* probes clean up */
    printf("   memfd %d seals %d future_write %d thp %d free %d cold %d pageout %d psi %d cgroup_v2 %d\n", info.memfd,
           info.memfd_seals, info.seal_future_write, info.thp, info.madv_free, info.madv_cold, info.madv_pageout,
           info.psi, info.cgroup_v2);
    CHECK(info.page_size == pg());
#ifdef __linux__
    CHECK(info.memfd && info.memfd_seals);
    if (access("/proc/pressure/memory", R_OK) == 0) CHECK(info.psi);
#endif
    CHECK_ST(tmem_system_info_read(NULL), TMEM_E_INVALID_ARG);
    /* probes ignore injected faults (benign) */
    tmem_system_info again;
    tmem__os_fault_arm(TMEM__OS_ANY, 0, true, ENOMEM);
    CHECK_OK(tmem_system_info_read(&again));
    tmem__os_fault_disarm();
    CHECK(again.memfd == info.memfd && again.madv_free == info.madv_free);

    tmem__os_pressure_info pr;
    st = tmem__os_pressure(&pr);
    CHECK(st == TMEM_OK || st == TMEM_E_UNSUPPORTED);
    if (st == TMEM_OK) {
        CHECK(pr.has_psi || pr.has_events);
        CHECK(pr.psi_some_avg10_x100 <= 10000);
    }
}

int main(void) {
    RUN(test_queries);
    RUN(test_bad_args);
    RUN(test_reserve_commit_decommit);
    RUN(test_footprint_tracks_commit);
    RUN(test_map_anon);
    RUN(test_huge_pages);
    RUN(test_advise);
    RUN(test_lock);
#ifdef __linux__
    RUN(test_lock_over_limit);
#endif
    RUN(test_memfd_seals);
    RUN(test_seal_future_write);
    RUN(test_file_mapping);
    RUN(test_limits_and_info);
    return tmem_test_finish();
}

/* Two processes (fork + exec of this binary as the child):
 *  - writer/reader: the reader sees the bytes and the seed change, use counts
 *    are visible on both sides, and the reader can neither write the
 *    read-only pixels nor resize either file;
 *  - a peer killed mid-use (holding uses and a write lock): the honest side's
 *    use count drops back, its view and seed are intact, nothing leaks;
 *  - a hostile peer sending wrong sizes, a wrong format, truncated messages,
 *    missing / extra fds, unsealed memfds, a regular file, one fd twice and a
 *    control page of another surface: each ends in a clear error on the
 *    honest side with no fd or mapping left behind; then a good surface from
 *    the same peer works, and the peer cannot shrink or grow it. */
#include "harness.h"
#include "surface/surface_internal.h"
#include "os/os.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- plumbing ---- */

static void say(int fd, const char *msg) {
    if (send(fd, msg, strlen(msg) + 1, MSG_NOSIGNAL) < 0) perror("send");
}

/* Next control message (10 s timeout so a broken peer cannot hang the test). */
static bool hear(int fd, char *buf, size_t cap) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) return false;
    ssize_t n = recv(fd, buf, cap - 1, 0);
    if (n <= 0) return false;
    buf[n] = 0;
    return true;
}

static pid_t spawn(const char *role, int fd) {
    pid_t pid = fork();
    if (pid == 0) {
        int fl = fcntl(fd, F_GETFD);
        if (fl >= 0) (void)fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
        char num[16];
        snprintf(num, sizeof num, "%d", fd);
        execl("/proc/self/exe", "test_surface_ipc", "--child", role, num, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int wait_exit(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static tmem_context *new_ctx(void) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    tmem_context *ctx = NULL;
    return tmem_context_create(&cd, &ctx) == TMEM_OK ? ctx : NULL;
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return false;
    return true;
}

/* ---- writer / reader ---- */

static int child_reader(int sock) {
    tmem_context *ctx = new_ctx();
    if (!ctx) return 1;
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    tmem_surface *s = NULL;
    CHECK_OK(tmem_surface_receive(ctx, sock, 0, &s));
    if (!s) return tmem_test_finish();
    tmem_surface_info info;
    CHECK_OK(tmem_surface_get_info(s, &info));
    CHECK(info.read_only && info.shared_read_only && info.layout.format == TMEM_FORMAT_NV12);
    uint32_t seed;
    CHECK_OK(tmem_surface_lock(s, TMEM_LOCK_READ_ONLY, &seed));
    CHECK(seed == 1);
    CHECK(all_bytes(tmem_surface_plane_ptr(s, 0), info.layout.planes[0].size, 0x11));
    CHECK(all_bytes(tmem_surface_plane_ptr(s, 1), info.layout.planes[1].size, 0x80));
    CHECK_OK(tmem_surface_unlock(s, TMEM_LOCK_READ_ONLY, NULL));
    CHECK_ST(tmem_surface_lock(s, 0, NULL), TMEM_E_PERMISSION);
    CHECK_OK(tmem_surface_use_begin(s));
    uint32_t n = 0;
    CHECK_OK(tmem_surface_use_count(s, &n));
    char msg[64];
    snprintf(msg, sizeof msg, "in-use %u", n);
    say(sock, msg);
    CHECK(hear(sock, msg, sizeof msg) && strcmp(msg, "written") == 0);
    CHECK(tmem_surface_seed(s) == 2);
    CHECK_OK(tmem_surface_lock(s, TMEM_LOCK_READ_ONLY, &seed));
    CHECK(seed == 2 && all_bytes(tmem_surface_plane_ptr(s, 0), info.layout.planes[0].size, 0x22));
    CHECK_OK(tmem_surface_unlock(s, TMEM_LOCK_READ_ONLY, NULL));
    /* What a misbehaving reader would try: all refused by the kernel. */
    tmem_surface_share sh;
    CHECK_OK(tmem_surface_export(s, TMEM_SHARE_READ_ONLY, &sh));
    void *p = NULL;
    CHECK_ST(tmem__os_map_fd(sh.fds[1], 0, 4096, true, true, &p), TMEM_E_PERMISSION);
    CHECK(ftruncate(sh.fds[1], 4096) != 0 && errno == EPERM);
    CHECK(ftruncate(sh.fds[1], 64u << 20) != 0 && errno == EPERM);
    CHECK(ftruncate(sh.fds[0], 0) != 0 && errno == EPERM);
    CHECK(fcntl(sh.fds[1], F_ADD_SEALS, 0x0008 /* F_SEAL_WRITE */) != 0);
    tmem_surface_share_close(&sh);
    CHECK_OK(tmem_surface_use_end(s));
    tmem_surface_release(s);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
    say(sock, "done");
    tmem_context_destroy(ctx);
    return tmem_test_finish();
}

static void test_writer_reader(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    int sv[2];
    REQUIRE_OK(tmem__os_socketpair(sv));
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_NV12;
    d.width = 1280;
    d.height = 720;
    tmem_surface *s;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    tmem_surface_info info;
    REQUIRE_OK(tmem_surface_get_info(s, &info));
    REQUIRE_OK(tmem_surface_lock(s, 0, NULL));
    memset(tmem_surface_plane_ptr(s, 0), 0x11, info.layout.planes[0].size);
    memset(tmem_surface_plane_ptr(s, 1), 0x80, info.layout.planes[1].size);
    REQUIRE_OK(tmem_surface_unlock(s, 0, NULL));
    pid_t pid = spawn("reader", sv[1]);
    (void)tmem__os_close(sv[1]);
    CHECK_OK(tmem_surface_send(s, sv[0], TMEM_SHARE_READ_ONLY));
    char msg[64] = "";
    CHECK(hear(sv[0], msg, sizeof msg));
    CHECK_MSG(strcmp(msg, "in-use 1") == 0, "reader said '%s'", msg);
    uint32_t n = 0;
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK(n == 1); /* the reader's use, seen here */
    CHECK_OK(tmem_surface_lock(s, 0, NULL));
    memset(tmem_surface_plane_ptr(s, 0), 0x22, info.layout.planes[0].size);
    uint32_t seed;
    CHECK_OK(tmem_surface_unlock(s, 0, &seed));
    CHECK(seed == 2);
    say(sv[0], "written");
    CHECK(hear(sv[0], msg, sizeof msg) && strcmp(msg, "done") == 0);
    CHECK(wait_exit(pid) == 0);
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK(n == 0);
    tmem_surface_release(s);
    (void)tmem__os_close(sv[0]);
    tmem_context_destroy(ctx);
}

/* ---- a peer killed mid-use ---- */

static int child_victim(int sock) {
    tmem_context *ctx = new_ctx();
    if (!ctx) return 1;
    tmem_surface *s = NULL;
    if (tmem_surface_receive(ctx, sock, 0, &s) != TMEM_OK) return 2;
    for (int i = 0; i < 3; i++)
        if (tmem_surface_use_begin(s) != TMEM_OK) return 3;
    if (tmem_surface_lock(s, 0, NULL) != TMEM_OK) return 4;
    memset(tmem_surface_base(s), 0x77, 100); /* half-written frame */
    say(sock, "ready");
    for (;;) pause(); /* killed here */
}

static void test_peer_killed(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_RGBA8;
    d.width = d.height = 256;
    tmem_surface *s;
    REQUIRE_OK(tmem_surface_create(ctx, &d, &s));
    REQUIRE_OK(tmem_surface_lock(s, 0, NULL));
    memset(tmem_surface_base(s), 0x33, 256 * 256 * 4);
    REQUIRE_OK(tmem_surface_unlock(s, 0, NULL));
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    int sv[2];
    REQUIRE_OK(tmem__os_socketpair(sv));
    pid_t pid = spawn("victim", sv[1]);
    (void)tmem__os_close(sv[1]);
    CHECK_OK(tmem_surface_send(s, sv[0], 0));
    char msg[32] = "";
    CHECK(hear(sv[0], msg, sizeof msg) && strcmp(msg, "ready") == 0);
    uint32_t n = 0;
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK(n == 3);
    kill(pid, SIGKILL);
    CHECK(wait_exit(pid) == 128 + SIGKILL);
    /* Its uses are gone with it; our view is whole. */
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK(n == 0 && !tmem_surface_in_use(s));
    CHECK(tmem_surface_seed(s) == 1); /* its write lock never completed */
    const uint8_t *p = tmem_surface_base(s);
    CHECK(p[0] == 0x77 && p[99] == 0x77 && p[100] == 0x33 && p[256 * 256 * 4 - 1] == 0x33);
    uint32_t seed;
    CHECK_OK(tmem_surface_lock(s, 0, NULL));
    memset(tmem_surface_base(s), 0x44, 256 * 256 * 4);
    CHECK_OK(tmem_surface_unlock(s, 0, &seed));
    CHECK(seed == 2);
    /* Its slot is recycled by the next holder. */
    tmem_surface_share sh;
    tmem_surface *again;
    CHECK_OK(tmem_surface_export(s, 0, &sh));
    CHECK_OK(tmem_surface_import(ctx, &sh, 0, &again));
    tmem_surface_share_close(&sh);
    CHECK_OK(tmem_surface_use_begin(again));
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK(n == 1);
    tmem_surface_release(again);
    (void)tmem__os_close(sv[0]);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
    tmem_surface_release(s);
    tmem_context_destroy(ctx);
}

/* ---- a hostile peer ---- */

typedef struct hostile_case {
    const char *name;
    tmem_status want;
} hostile_case;

static const hostile_case hostile_cases[] = {
    {"fds swapped", TMEM_E_CORRUPT},
    {"descriptor truncated to 60 bytes", TMEM_E_PARSE},
    {"one fd missing", TMEM_E_PARSE},
    {"an extra third fd", TMEM_E_PARSE},
    {"no fds", TMEM_E_PARSE},
    {"sizes: 1080p descriptor over 480p memory", TMEM_E_CORRUPT},
    {"format changed in the descriptor", TMEM_E_CORRUPT},
    {"unsealed memfds of the right sizes", TMEM_E_PERMISSION},
    {"a regular file instead of the pixels", TMEM_E_PERMISSION},
    {"the control fd twice", TMEM_E_CORRUPT},
    {"control page of another surface", TMEM_E_CORRUPT},
    {"random bytes", TMEM_E_PARSE},
    {"a descriptor 200 bytes long", TMEM_E_PARSE},
};
enum { NHOSTILE = sizeof hostile_cases / sizeof hostile_cases[0] };

static uint32_t fnv(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static tmem_surface *mk(tmem_context *ctx, tmem_pixel_format f, uint32_t w, uint32_t h) {
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = f;
    d.width = w;
    d.height = h;
    tmem_surface *s = NULL;
    return tmem_surface_create(ctx, &d, &s) == TMEM_OK ? s : NULL;
}

static int child_hostile(int sock) {
    tmem_context *ctx = new_ctx();
    if (!ctx) return 1;
    tmem_surface *big = mk(ctx, TMEM_FORMAT_NV12, 1920, 1080), *small = mk(ctx, TMEM_FORMAT_NV12, 640, 480);
    tmem_surface *twin = mk(ctx, TMEM_FORMAT_NV12, 1920, 1080);
    if (!big || !small || !twin) return 2;
    tmem_surface_share a, b, t;
    if (tmem_surface_export(big, 0, &a) != TMEM_OK || tmem_surface_export(small, 0, &b) != TMEM_OK ||
        tmem_surface_export(twin, 0, &t) != TMEM_OK)
        return 3;
    int unsealed[2] = {-1, -1};
    tmem__os_fd_stat_info ci, pi;
    if (tmem__os_fd_stat(a.fds[0], &ci) != TMEM_OK || tmem__os_fd_stat(a.fds[1], &pi) != TMEM_OK) return 4;
    if (tmem__os_memfd_create("fake", ci.size, &unsealed[0]) != TMEM_OK ||
        tmem__os_memfd_create("fake", pi.size, &unsealed[1]) != TMEM_OK)
        return 5;
    char path[] = "/tmp/tmem-hostile-XXXXXX";
    int file = mkstemp(path);
    if (file < 0 || ftruncate(file, (off_t)pi.size) != 0) return 6;
    unlink(path);
    uint8_t buf[256];
    tmem_rng r;
    tmem_rng_init(&r, 99);
    for (int i = 0; i < NHOSTILE; i++) {
        memcpy(buf, a.descriptor, 128);
        size_t len = 128;
        int fds[3] = {a.fds[0], a.fds[1], b.fds[0]};
        size_t nfds = 2;
        switch (i) {
        case 0: fds[0] = a.fds[1], fds[1] = a.fds[0]; break;
        case 1: len = 60; break;
        case 2: nfds = 1; break;
        case 3: nfds = 3; break;
        case 4: nfds = 0; break;
        case 5: fds[0] = b.fds[0], fds[1] = b.fds[1]; break;
        case 6:
            buf[12] = TMEM_FORMAT_I420;
            {
                uint32_t c = fnv(buf, 124);
                memcpy(buf + 124, &c, 4); /* little-endian host */
            }
            break;
        case 7: fds[0] = unsealed[0], fds[1] = unsealed[1]; break;
        case 8: fds[1] = file; break;
        case 9: fds[1] = a.fds[0]; break;
        case 10: fds[0] = t.fds[0]; break;
        case 11:
            for (size_t k = 0; k < 128; k++) buf[k] = (uint8_t)tmem_rng_next(&r);
            break;
        case 12: len = 200; break;
        }
        if (tmem__os_send_fds(sock, buf, len, fds, nfds) != TMEM_OK) return 10 + i;
        char msg[32];
        if (!hear(sock, msg, sizeof msg) || strcmp(msg, "next") != 0) return 40 + i;
    }
    /* Finally a good one; then try to pull the memory from under the peer. */
    if (tmem_surface_lock(big, 0, NULL) != TMEM_OK) return 60;
    memset(tmem_surface_base(big), 0x5C, 4096);
    if (tmem_surface_unlock(big, 0, NULL) != TMEM_OK) return 61;
    if (tmem_surface_send(big, sock, 0) != TMEM_OK) return 62;
    char msg[32];
    if (!hear(sock, msg, sizeof msg) || strcmp(msg, "imported") != 0) return 63;
    bool shrink_refused = ftruncate(a.fds[1], 4096) != 0 && errno == EPERM;
    bool grow_refused = ftruncate(a.fds[1], 1 << 26) != 0 && errno == EPERM;
    say(sock, shrink_refused && grow_refused ? "resize-refused" : "resized!");
    tmem_surface_share_close(&a);
    tmem_surface_share_close(&b);
    tmem_surface_share_close(&t);
    (void)tmem__os_close(unsealed[0]);
    (void)tmem__os_close(unsealed[1]);
    close(file);
    tmem_context_destroy(ctx);
    return 0;
}

static void test_hostile_peer(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    int sv[2];
    REQUIRE_OK(tmem__os_socketpair(sv));
    pid_t pid = spawn("hostile", sv[1]);
    (void)tmem__os_close(sv[1]);
    for (int i = 0; i < NHOSTILE; i++) {
        int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
        tmem_surface *s = (tmem_surface *)(uintptr_t)1;
        tmem_status st = tmem_surface_receive(ctx, sv[0], 0, &s);
        CHECK_MSG(st == hostile_cases[i].want, "%s: got %s, want %s", hostile_cases[i].name, tmem_status_name(st),
                  tmem_status_name(hostile_cases[i].want));
        CHECK(s == NULL);
        CHECK_MSG(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0, "%s leaked", hostile_cases[i].name);
        if (s) tmem_surface_release(s);
        say(sv[0], "next");
    }
    tmem_surface *s = NULL;
    CHECK_OK(tmem_surface_receive(ctx, sv[0], 0, &s));
    if (s) CHECK(((uint8_t *)tmem_surface_base(s))[4095] == 0x5C && tmem_surface_seed(s) == 1);
    say(sv[0], "imported");
    char msg[32] = "";
    CHECK(hear(sv[0], msg, sizeof msg));
    CHECK_MSG(strcmp(msg, "resize-refused") == 0, "peer said '%s'", msg);
    CHECK(wait_exit(pid) == 0);
    /* The peer is gone; the memory stays ours until we let go. */
    if (s) {
        CHECK(((uint8_t *)tmem_surface_base(s))[0] == 0x5C);
        tmem_surface_release(s);
    }
    (void)tmem__os_close(sv[0]);
    tmem_context_destroy(ctx);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--child") == 0) {
        int fd = atoi(argv[3]);
        if (strcmp(argv[2], "reader") == 0) return child_reader(fd);
        if (strcmp(argv[2], "victim") == 0) return child_victim(fd);
        if (strcmp(argv[2], "hostile") == 0) return child_hostile(fd);
        return 100;
    }
    RUN(test_writer_reader);
    RUN(test_peer_killed);
    RUN(test_hostile_peer);
    return tmem_test_finish();
}

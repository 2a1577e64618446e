/* Hostile peers, round two (each peer is a forked process):
 *  - forged pixels: a surface's control page sent again with another memfd
 *    of the same size (sealed like the real one) is refused; the real import
 *    keeps its bytes;
 *  - a seal race: the peer adds seals on another thread while the message is
 *    in flight: every import either refuses (seals missing) or maps a file
 *    whose seals are final, never anything between;
 *  - a flood: thousands of messages of the same surface and of junk: one
 *    mapping, every fd closed;
 *  - fd exhaustion: the receiver has no room for the fds: a clean error, no
 *    leak, and the next message imports once room is back;
 *  - many readers: 24 processes import one surface and hold uses; the
 *    writer's count follows them as half are killed and the rest leave.
 */
#include "harness.h"
#include "os/os.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#endif
#define SEAL_SEAL 0x0001
#define SEAL_SHRINK 0x0002
#define SEAL_GROW 0x0004
#ifndef F_GET_SEALS
#define F_GET_SEALS 1034
#endif

static tmem_context *new_ctx(void) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    tmem_context *ctx = NULL;
    return tmem_context_create(&cd, &ctx) == TMEM_OK ? ctx : NULL;
}

static tmem_surface *mk(tmem_context *ctx, uint32_t w, uint32_t h, uint8_t fill) {
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_RGBA8;
    d.width = w;
    d.height = h;
    tmem_surface *s = NULL;
    if (tmem_surface_create(ctx, &d, &s) != TMEM_OK) return NULL;
    if (tmem_surface_lock(s, 0, NULL) != TMEM_OK) return s;
    memset(tmem_surface_base(s), fill, (size_t)w * h * 4);
    if (tmem_surface_unlock(s, 0, NULL) != TMEM_OK) fprintf(stderr, "unlock failed\n");
    return s;
}

static void say(int fd, const char *msg) {
    if (send(fd, msg, strlen(msg) + 1, MSG_NOSIGNAL) < 0) perror("send");
}

static bool hear(int fd, char *buf, size_t cap) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 20000) != 1) return false;
    ssize_t n = recv(fd, buf, cap - 1, 0);
    if (n <= 0) return false;
    buf[n] = 0;
    return true;
}

/* Fork a peer running fn(sock); the parent keeps the other end. */
static pid_t spawn(int (*fn)(int), int *parent_sock) {
    int sv[2];
    if (tmem__os_socketpair(sv) != TMEM_OK) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        (void)tmem__os_close(sv[0]);
        _exit(fn(sv[1]));
    }
    (void)tmem__os_close(sv[1]);
    *parent_sock = sv[0];
    return pid;
}

static int wait_exit(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* A memfd of `size` bytes, filled, sealed as a real surface's pixels are. */
static int forged_memfd(uint64_t size, uint8_t fill, bool seal) {
    int fd = -1;
    if (tmem__os_memfd_create("forged", size, &fd) != TMEM_OK) return -1;
    uint8_t buf[4096];
    memset(buf, fill, sizeof buf);
    for (uint64_t off = 0; off < size; off += sizeof buf)
        if (pwrite(fd, buf, sizeof buf, (off_t)off) != (ssize_t)sizeof buf) return -1;
    if (seal && fcntl(fd, F_ADD_SEALS, SEAL_SHRINK | SEAL_GROW | SEAL_SEAL) != 0) return -1;
    return fd;
}

/* ---- forged pixels ---- */

static int peer_forger(int sock) {
    tmem_context *ctx = new_ctx();
    tmem_surface *s = ctx ? mk(ctx, 64, 64, 0x11) : NULL;
    if (!s) return 2;
    tmem_surface_share sh;
    if (tmem_surface_export(s, 0, &sh) != TMEM_OK) return 3;
    if (tmem__os_send_fds(sock, sh.descriptor, sh.descriptor_size, sh.fds, 2) != TMEM_OK) return 4;
    char msg[32];
    if (!hear(sock, msg, sizeof msg)) return 5;
    tmem__os_fd_stat_info pi;
    if (tmem__os_fd_stat(sh.fds[1], &pi) != TMEM_OK) return 6;
    int fake = forged_memfd(pi.size, 0xEE, true);
    if (fake < 0) return 7;
    int fds[2] = {sh.fds[0], fake};
    if (tmem__os_send_fds(sock, sh.descriptor, sh.descriptor_size, fds, 2) != TMEM_OK) return 8;
    if (!hear(sock, msg, sizeof msg)) return 9;
    close(fake);
    tmem_surface_share_close(&sh);
    tmem_context_destroy(ctx);
    return 0;
}

static void test_forged_pixels(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    int sock;
    pid_t pid = spawn(peer_forger, &sock);
    REQUIRE(pid > 0);
    tmem_surface *real = NULL;
    CHECK_OK(tmem_surface_receive(ctx, sock, 0, &real));
    say(sock, "next");
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    tmem_surface *forged = (tmem_surface *)(uintptr_t)1;
    CHECK_ST(tmem_surface_receive(ctx, sock, 0, &forged), TMEM_E_CORRUPT);
    CHECK(forged == NULL);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
    say(sock, "done");
    if (real) CHECK(((uint8_t *)tmem_surface_base(real))[0] == 0x11);
    CHECK(wait_exit(pid) == 0);
    tmem_surface_release(real);
    (void)tmem__os_close(sock);
    tmem_context_destroy(ctx);
}

/* ---- a seal race ---- */

enum { RACE_ROUNDS = 200 };

typedef struct sealer {
    int fd;
    volatile int go;
    unsigned delay_us; /* spread the seals around the receiver's check */
} sealer;

static void *seal_later(void *arg) {
    sealer *s = arg;
    while (!s->go) {}
    usleep(s->delay_us);
    (void)fcntl(s->fd, F_ADD_SEALS, SEAL_SHRINK);
    (void)fcntl(s->fd, F_ADD_SEALS, SEAL_GROW);
    (void)fcntl(s->fd, F_ADD_SEALS, SEAL_SEAL);
    return NULL;
}

static int peer_sealer(int sock) {
    tmem_context *ctx = new_ctx();
    if (!ctx) return 2;
    char ack[32];
    for (int i = 0; i < RACE_ROUNDS; i++) {
        /* A fresh real control page each round (a control page already
         * imported with other pixels is refused for another reason). */
        tmem_surface *s = mk(ctx, 32, 32, 0x22);
        tmem_surface_share sh;
        if (!s || tmem_surface_export(s, 0, &sh) != TMEM_OK) return 3;
        tmem__os_fd_stat_info pi;
        if (tmem__os_fd_stat(sh.fds[1], &pi) != TMEM_OK) return 4;
        sealer st = {forged_memfd(pi.size, 0x33, false), 0, (unsigned)(i * 7 % 60)};
        if (st.fd < 0) return 5;
        pthread_t t;
        if (pthread_create(&t, NULL, seal_later, &st) != 0) return 6;
        int fds[2] = {sh.fds[0], st.fd};
        /* Every third round the seals land before the send; otherwise they
         * race the receiver's check. */
        st.go = 1;
        if (i % 3 == 0) pthread_join(t, NULL);
        if (tmem__os_send_fds(sock, sh.descriptor, sh.descriptor_size, fds, 2) != TMEM_OK) return 7;
        if (i % 3 != 0) pthread_join(t, NULL);
        if (!hear(sock, ack, sizeof ack)) return 8;
        close(st.fd);
        tmem_surface_share_close(&sh);
        tmem_surface_release(s);
    }
    tmem_context_destroy(ctx);
    return 0;
}

static void test_seal_race(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    int sock;
    pid_t pid = spawn(peer_sealer, &sock);
    REQUIRE(pid > 0);
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    int refused = 0, accepted = 0, other = 0;
    for (int i = 0; i < RACE_ROUNDS; i++) {
        tmem_surface *s = NULL;
        tmem_status st = tmem_surface_receive(ctx, sock, 0, &s);
        if (st == TMEM_E_PERMISSION) {
            refused++;
        } else if (st == TMEM_OK) {
            accepted++;
            /* Accepted only with the final seals: nobody can resize it now. */
            tmem_surface_share sh;
            if (tmem_surface_export(s, 0, &sh) == TMEM_OK) {
                int seals = fcntl(sh.fds[1], F_GET_SEALS);
                CHECK((seals & (SEAL_SHRINK | SEAL_GROW | SEAL_SEAL)) == (SEAL_SHRINK | SEAL_GROW | SEAL_SEAL));
                tmem_surface_share_close(&sh);
            }
            tmem_surface_release(s);
        } else {
            other++;
            printf("   round %d: %s\n", i, tmem_status_name(st));
        }
        say(sock, "next");
    }
    printf("   %d refused (seals missing when checked), %d accepted (sealed in time), %d other\n", refused,
           accepted, other);
    CHECK(other == 0 && refused + accepted == RACE_ROUNDS);
    CHECK(accepted >= RACE_ROUNDS / 3); /* the rounds sealed before sending */
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
    CHECK(wait_exit(pid) == 0);
    (void)tmem__os_close(sock);
    tmem_context_destroy(ctx);
}

/* ---- a flood ---- */

enum { FLOOD_GOOD = 3000, FLOOD_JUNK = 1000 };

static int peer_flooder(int sock) {
    tmem_context *ctx = new_ctx();
    tmem_surface *s = ctx ? mk(ctx, 64, 32, 0x44) : NULL;
    if (!s) return 2;
    tmem_surface_share sh;
    if (tmem_surface_export(s, TMEM_SHARE_READ_ONLY, &sh) != TMEM_OK) return 3;
    uint8_t junk[128];
    tmem_rng r;
    tmem_rng_init(&r, 7);
    for (int i = 0; i < FLOOD_GOOD + FLOOD_JUNK; i++) {
        bool good = i % 4 != 3 || i >= 4 * FLOOD_JUNK;
        if (good) {
            if (tmem__os_send_fds(sock, sh.descriptor, sh.descriptor_size, sh.fds, 2) != TMEM_OK) return 4;
        } else {
            for (size_t k = 0; k < sizeof junk; k++) junk[k] = (uint8_t)tmem_rng_next(&r);
            size_t nfds = tmem_rng_range(&r, 0, 3);
            int fds[3] = {sh.fds[0], sh.fds[1], sh.fds[0]};
            if (tmem__os_send_fds(sock, junk, tmem_rng_range(&r, 1, 128), fds, nfds) != TMEM_OK) return 5;
        }
    }
    char msg[32];
    if (!hear(sock, msg, sizeof msg)) return 6;
    tmem_surface_share_close(&sh);
    tmem_context_destroy(ctx);
    return 0;
}

static void test_flood(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    int sock;
    pid_t pid = spawn(peer_flooder, &sock);
    REQUIRE(pid > 0);
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    tmem_surface *first = NULL;
    int good = 0, bad = 0;
    for (int i = 0; i < FLOOD_GOOD + FLOOD_JUNK; i++) {
        tmem_surface *s = NULL;
        if (tmem_surface_receive(ctx, sock, 0, &s) == TMEM_OK) {
            good++;
            if (!first) first = s;
            else {
                CHECK(s == first); /* one mapping however often it comes */
                tmem_surface_release(s);
            }
        } else {
            bad++;
        }
    }
    say(sock, "done");
    printf("   %d imported (one handle), %d refused\n", good, bad);
    CHECK(good == FLOOD_GOOD && bad == FLOOD_JUNK);
    /* One surface's fds and mappings more than before, nothing else. */
    CHECK(tmem__os_live_fds() == fds0 + 2 && tmem__os_live_mappings() == maps0 + 2);
    tmem_surface_release(first);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
    CHECK(wait_exit(pid) == 0);
    (void)tmem__os_close(sock);
    tmem_context_destroy(ctx);
}

/* ---- fd exhaustion ---- */

static int peer_sender(int sock) {
    tmem_context *ctx = new_ctx();
    tmem_surface *s = ctx ? mk(ctx, 16, 16, 0x55) : NULL;
    if (!s) return 2;
    char msg[32];
    for (int i = 0; i < 2; i++) {
        if (tmem_surface_send(s, sock, 0) != TMEM_OK) return 3;
        if (!hear(sock, msg, sizeof msg)) return 4;
    }
    tmem_context_destroy(ctx);
    return 0;
}

/* Lowest fd number free now: with RLIMIT_NOFILE at that, no fd fits. */
static int lowest_free_fd(void) {
    int fd = dup(0);
    if (fd < 0) return -1;
    close(fd);
    return fd;
}

static void test_fd_exhaustion(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    int sock;
    pid_t pid = spawn(peer_sender, &sock);
    REQUIRE(pid > 0);
    struct rlimit old;
    REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
    /* Make sure the message is waiting before fds run out. */
    struct pollfd p = {sock, POLLIN, 0};
    REQUIRE(poll(&p, 1, 20000) == 1);
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    int lowest = lowest_free_fd();
    REQUIRE(lowest > 0);
    struct rlimit tight = old;
    tight.rlim_cur = (rlim_t)lowest; /* room for no new fd at all */
    REQUIRE(setrlimit(RLIMIT_NOFILE, &tight) == 0);
    tmem_surface *s = (tmem_surface *)(uintptr_t)1;
    tmem_status st = tmem_surface_receive(ctx, sock, 0, &s);
    REQUIRE(setrlimit(RLIMIT_NOFILE, &old) == 0);
    printf("   with no fd left: %s\n", tmem_status_name(st));
    CHECK(st != TMEM_OK && s == NULL);
    CHECK(tmem__os_live_fds() == fds0 && tmem__os_live_mappings() == maps0);
    CHECK(lowest_free_fd() == lowest); /* the kernel dropped what did not fit */
    say(sock, "again");
    CHECK_OK(tmem_surface_receive(ctx, sock, 0, &s));
    if (s) CHECK(((uint8_t *)tmem_surface_base(s))[0] == 0x55);
    tmem_surface_release(s);
    say(sock, "done");
    CHECK(wait_exit(pid) == 0);
    (void)tmem__os_close(sock);
    tmem_context_destroy(ctx);
}

/* ---- many readers ---- */

enum { READERS = 24 };

static int peer_reader(int sock) {
    tmem_context *ctx = new_ctx();
    if (!ctx) return 2;
    tmem_surface *s = NULL;
    if (tmem_surface_receive(ctx, sock, 0, &s) != TMEM_OK) return 3;
    if (tmem_surface_use_begin(s) != TMEM_OK) return 4;
    uint32_t seed;
    if (tmem_surface_lock(s, TMEM_LOCK_READ_ONLY, &seed) != TMEM_OK) return 5;
    bool ok = ((uint8_t *)tmem_surface_base(s))[100] == 0x66;
    if (tmem_surface_unlock(s, TMEM_LOCK_READ_ONLY, NULL) != TMEM_OK) ok = false;
    say(sock, ok ? "reading" : "wrong-bytes");
    char msg[32];
    if (!hear(sock, msg, sizeof msg)) return 6; /* held until told */
    if (tmem_surface_use_end(s) != TMEM_OK) return 7;
    tmem_surface_release(s);
    tmem_context_destroy(ctx);
    return 0;
}

static void test_many_readers(void) {
    tmem_context *ctx = new_ctx();
    REQUIRE(ctx);
    tmem_surface *s = mk(ctx, 128, 128, 0x66);
    REQUIRE(s);
    pid_t pids[READERS];
    int socks[READERS];
    for (int i = 0; i < READERS; i++) {
        pids[i] = spawn(peer_reader, &socks[i]);
        REQUIRE(pids[i] > 0);
        CHECK_OK(tmem_surface_send(s, socks[i], TMEM_SHARE_READ_ONLY));
    }
    char msg[32];
    for (int i = 0; i < READERS; i++) CHECK(hear(socks[i], msg, sizeof msg) && !strcmp(msg, "reading"));
    uint32_t n = 0;
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK_MSG(n == READERS, "use count %u", n);
    for (int i = 0; i < READERS; i += 2) {
        kill(pids[i], SIGKILL);
        CHECK(wait_exit(pids[i]) == 128 + SIGKILL);
    }
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK_MSG(n == READERS / 2, "after killing half: %u", n);
    for (int i = 1; i < READERS; i += 2) {
        say(socks[i], "stop");
        CHECK(wait_exit(pids[i]) == 0);
    }
    CHECK_OK(tmem_surface_use_count(s, &n));
    CHECK(n == 0 && !tmem_surface_in_use(s));
    for (int i = 0; i < READERS; i++) (void)tmem__os_close(socks[i]);
    tmem_surface_release(s);
    tmem_context_destroy(ctx);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    RUN(test_forged_pixels);
    RUN(test_seal_race);
    RUN(test_flood);
    RUN(test_fd_exhaustion);
    RUN(test_many_readers);
    return tmem_test_finish();
}

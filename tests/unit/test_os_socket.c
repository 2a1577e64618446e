/* The OS layer's socket and fd calls (src/os/os_socket.c): fd passing with
 * SCM_RIGHTS, extra fds closed and reported, truncation flags, fstat
 * identity, dup, pid liveness, fault injection, and exact live-fd counts. */
#include "harness.h"
#include "os/os.h"
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_pass_fds(void) {
    int64_t fds0 = tmem__os_live_fds();
    int sv[2];
    REQUIRE_OK(tmem__os_socketpair(sv));
    CHECK(tmem__os_live_fds() == fds0 + 2);
    int m1, m2, m3;
    REQUIRE_OK(tmem__os_memfd_create("a", 4096, &m1));
    REQUIRE_OK(tmem__os_memfd_create("b", 8192, &m2));
    REQUIRE_OK(tmem__os_memfd_create("c", 4096, &m3));
    int send_fds[3] = {m1, m2, m3};
    REQUIRE_OK(tmem__os_send_fds(sv[0], "hello", 5, send_fds, 2));
    char buf[16];
    int got[2];
    tmem__os_recv_info info;
    int64_t before = tmem__os_live_fds();
    REQUIRE_OK(tmem__os_recv_fds(sv[1], buf, sizeof buf, &info, got, 2));
    CHECK(info.len == 5 && memcmp(buf, "hello", 5) == 0 && info.nfds == 2 && !info.extra_fds);
    CHECK(!info.truncated && !info.control_truncated);
    CHECK(tmem__os_live_fds() == before + 2);
    /* The received fds are the same files: same identity, same size. */
    tmem__os_fd_stat_info a, b;
    REQUIRE_OK(tmem__os_fd_stat(m2, &a));
    REQUIRE_OK(tmem__os_fd_stat(got[1], &b));
    CHECK(a.dev == b.dev && a.ino == b.ino && b.size == 8192 && b.regular);
    REQUIRE_OK(tmem__os_fd_stat(got[0], &b));
    CHECK(b.ino != a.ino && b.size == 4096);
    (void)tmem__os_close(got[0]);
    (void)tmem__os_close(got[1]);

    /* Three fds sent, two asked for: the third is received and closed. */
    REQUIRE_OK(tmem__os_send_fds(sv[0], "x", 1, send_fds, 3));
    before = tmem__os_live_fds();
    REQUIRE_OK(tmem__os_recv_fds(sv[1], buf, sizeof buf, &info, got, 2));
    CHECK(info.nfds == 2 && info.extra_fds == 1);
    CHECK(tmem__os_live_fds() == before + 2);
    (void)tmem__os_close(got[0]);
    (void)tmem__os_close(got[1]);

    /* A payload longer than the buffer: MSG_TRUNC on a seqpacket socket. */
    char big[64];
    memset(big, 'z', sizeof big);
    REQUIRE_OK(tmem__os_send_fds(sv[0], big, sizeof big, NULL, 0));
    REQUIRE_OK(tmem__os_recv_fds(sv[1], buf, 8, &info, got, 2));
    CHECK(info.truncated && info.len == 8 && info.nfds == 0 && got[0] == -1);

    /* Peer closed: zero bytes, nothing else. */
    (void)tmem__os_close(sv[0]);
    REQUIRE_OK(tmem__os_recv_fds(sv[1], buf, sizeof buf, &info, got, 2));
    CHECK(info.len == 0 && info.nfds == 0);
    /* Sending to a closed peer: TMEM_E_IO, no SIGPIPE. */
    int sv2[2];
    REQUIRE_OK(tmem__os_socketpair(sv2));
    (void)tmem__os_close(sv2[1]);
    CHECK_ST(tmem__os_send_fds(sv2[0], "y", 1, NULL, 0), TMEM_E_IO);
    (void)tmem__os_close(sv2[0]);
    (void)tmem__os_close(sv[1]);
    (void)tmem__os_close(m1);
    (void)tmem__os_close(m2);
    (void)tmem__os_close(m3);
    CHECK(tmem__os_live_fds() == fds0);
}

static void test_dup_stat_args(void) {
    int64_t fds0 = tmem__os_live_fds();
    int m, d = 5;
    REQUIRE_OK(tmem__os_memfd_create("d", 4096, &m));
    REQUIRE_OK(tmem__os_fd_dup(m, &d));
    tmem__os_fd_stat_info a, b;
    REQUIRE_OK(tmem__os_fd_stat(m, &a));
    REQUIRE_OK(tmem__os_fd_stat(d, &b));
    CHECK(d != m && a.ino == b.ino);
    (void)tmem__os_close(d);
    (void)tmem__os_close(m);
    CHECK(tmem__os_live_fds() == fds0);
    CHECK_ST(tmem__os_fd_dup(-1, &d), TMEM_E_INVALID_ARG);
    CHECK(d == -1);
    CHECK(tmem__os_fd_dup(987654, &d) != TMEM_OK && d == -1);
    CHECK_ST(tmem__os_fd_stat(-1, &a), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_socketpair(NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_send_fds(-1, "a", 1, NULL, 0), TMEM_E_INVALID_ARG);
    int many[TMEM__OS_MAX_PASS_FDS + 1] = {0};
    CHECK_ST(tmem__os_send_fds(0, "a", 1, many, TMEM__OS_MAX_PASS_FDS + 1), TMEM_E_INVALID_ARG);
    tmem__os_recv_info info;
    char buf[4];
    CHECK_ST(tmem__os_recv_fds(-1, buf, 4, &info, NULL, 0), TMEM_E_INVALID_ARG);
    CHECK(tmem__os_live_fds() == fds0);
}

static void test_faults(void) {
    int64_t fds0 = tmem__os_live_fds();
    int sv[2] = {7, 7};
    tmem__os_fault_arm(TMEM__OS_SOCKETPAIR, 0, false, ENFILE);
    CHECK(tmem__os_socketpair(sv) != TMEM_OK && sv[0] == -1 && sv[1] == -1);
    CHECK(tmem__os_fault_fired());
    tmem__os_fault_disarm();
    REQUIRE_OK(tmem__os_socketpair(sv));
    tmem__os_fault_arm(TMEM__OS_SEND_FDS, 0, false, ENOBUFS);
    CHECK(tmem__os_send_fds(sv[0], "a", 1, NULL, 0) != TMEM_OK);
    tmem__os_fault_disarm();
    REQUIRE_OK(tmem__os_send_fds(sv[0], "a", 1, NULL, 0));
    tmem__os_fault_arm(TMEM__OS_RECV_FDS, 0, false, ENOMEM);
    tmem__os_recv_info info;
    char buf[4];
    int got[2];
    CHECK_ST(tmem__os_recv_fds(sv[1], buf, 4, &info, got, 2), TMEM_E_NO_MEMORY);
    tmem__os_fault_disarm();
    REQUIRE_OK(tmem__os_recv_fds(sv[1], buf, 4, &info, got, 2)); /* the message waited */
    CHECK(info.len == 1);
    (void)tmem__os_close(sv[0]);
    (void)tmem__os_close(sv[1]);
    CHECK(tmem__os_live_fds() == fds0);
}

static void test_pid_alive(void) {
    CHECK(tmem__os_pid_self() == (int)getpid());
    CHECK(tmem__os_pid_alive(tmem__os_pid_self()));
    CHECK(!tmem__os_pid_alive(0));
    CHECK(!tmem__os_pid_alive(-1));
    CHECK(!tmem__os_pid_alive(-(int)getpid()));
    pid_t child = fork();
    if (child == 0) _exit(0);
    int st;
    waitpid(child, &st, 0);
    CHECK(!tmem__os_pid_alive((int)child)); /* reaped: gone */
}

int main(void) {
    RUN(test_pass_fds);
    RUN(test_dup_stat_args);
    RUN(test_faults);
    RUN(test_pid_alive);
    return tmem_test_finish();
}

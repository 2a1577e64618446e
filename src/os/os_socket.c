/*
 * Unix sockets and fd passing (SCM_RIGHTS), fstat identity, fd duplication and
 * process liveness: what surfaces need to travel between processes.
 *
 * Every fd that enters the process here (socketpair, dup, each fd received
 * with SCM_RIGHTS) is counted in the live-fd counter and must leave through
 * tmem__os_close, so leak checks see received fds too.
 */
#include "os/os_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

tmem_status tmem__os_socketpair(int out_fds[2]) {
    if (!out_fds) return TMEM_E_INVALID_ARG;
    out_fds[0] = out_fds[1] = -1;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_SOCKETPAIR);
    if (st != TMEM_OK) return st;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return tmem__os_status_from_errno(errno);
    tmem__os_count_fd(2);
    out_fds[0] = sv[0];
    out_fds[1] = sv[1];
    return TMEM_OK;
}

tmem_status tmem__os_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds) {
    if (sock < 0 || (!buf && len) || nfds > TMEM__OS_MAX_PASS_FDS || (nfds && !fds)) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_SEND_FDS);
    if (st != TMEM_OK) return st;
    struct iovec iov = {(void *)(uintptr_t)buf, len};
    union {
        struct cmsghdr align;
        char bytes[CMSG_SPACE(sizeof(int) * TMEM__OS_MAX_PASS_FDS)];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (nfds) {
        msg.msg_control = control.bytes;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    ssize_t n;
    do {
        n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return errno == EPIPE || errno == ECONNRESET ? TMEM_E_IO : tmem__os_status_from_errno(errno);
    if ((size_t)n != len) return TMEM_E_IO; /* a short message would be read as truncated */
    return TMEM_OK;
}

tmem_status tmem__os_recv_fds(int sock, void *buf, size_t cap, tmem__os_recv_info *out, int *fds, size_t max_fds) {
    if (out) memset(out, 0, sizeof *out);
    for (size_t i = 0; fds && i < max_fds; i++) fds[i] = -1;
    if (sock < 0 || !buf || !out || (max_fds && !fds) || max_fds > TMEM__OS_MAX_PASS_FDS) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_RECV_FDS);
    if (st != TMEM_OK) return st;
    struct iovec iov = {buf, cap};
    /* Room for more fds than asked: a peer sending extra ones must not make
     * the kernel drop them silently; we take them all and close the extras. */
    union {
        struct cmsghdr align;
        char bytes[CMSG_SPACE(sizeof(int) * TMEM__OS_MAX_PASS_FDS * 2)];
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
    ssize_t n;
    do {
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return tmem__os_status_from_errno(errno);
    size_t got = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            tmem__os_count_fd(1);
            if (got < max_fds) {
                fds[got++] = fd;
            } else {
                out->extra_fds++;
                (void)tmem__os_close(fd);
            }
        }
    }
    out->len = (size_t)n;
    out->nfds = got;
    out->truncated = (msg.msg_flags & MSG_TRUNC) != 0;
    out->control_truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
    return TMEM_OK;
}

tmem_status tmem__os_fd_stat(int fd, tmem__os_fd_stat_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (fd < 0 || !out) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_FD_STAT);
    if (st != TMEM_OK) return st;
    struct stat sb;
    if (fstat(fd, &sb) != 0) return tmem__os_status_from_errno(errno);
    out->size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    out->dev = (uint64_t)sb.st_dev;
    out->ino = (uint64_t)sb.st_ino;
    out->regular = S_ISREG(sb.st_mode);
    return TMEM_OK;
}

tmem_status tmem__os_fd_dup(int fd, int *out_fd) {
    if (out_fd) *out_fd = -1;
    if (fd < 0 || !out_fd) return TMEM_E_INVALID_ARG;
    tmem_status st = tmem__os_fault_hit(TMEM__OS_FD_DUP);
    if (st != TMEM_OK) return st;
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0) return tmem__os_status_from_errno(errno);
    tmem__os_count_fd(1);
    *out_fd = d;
    return TMEM_OK;
}

int tmem__os_pid_self(void) { return (int)getpid(); }

bool tmem__os_pid_alive(int pid) {
    /* pid <= 0 would address process groups: never pass it to kill(). */
    if (pid <= 0) return false;
    if (kill((pid_t)pid, 0) == 0) return true;
    /* EPERM: it exists but belongs to someone else. A zombie still answers
     * 0 until reaped; its uses then count until its parent reaps it. */
    return errno == EPERM;
}

/*
 * Send and receive a surface over a Unix socket: one message whose payload is
 * the descriptor and whose SCM_RIGHTS carries the control and pixel fds.
 *
 * The receiver owns every fd the kernel hands it the moment recvmsg returns,
 * so each error path below closes them (or passes them to the import, which
 * closes them on failure). Message-preserving sockets (SOCK_SEQPACKET, as
 * tmem__os_socketpair makes) are the natural fit; on SOCK_STREAM a message of
 * tmem_surface_send arrives whole because its fds pin it to one segment.
 */
#include "surface/surface_internal.h"
#include "os/os.h"
#include <string.h>

tmem_status tmem_surface_send(tmem_surface *s, int socket_fd, uint32_t flags) {
    if (!tmem__surface_valid(s) || socket_fd < 0) return tmem__err(TMEM_E_INVALID_ARG);
    uint8_t desc[TMEM_SURFACE_DESCRIPTOR_SIZE];
    tmem_status st = tmem__surface_prepare_share(s, flags, desc);
    if (st != TMEM_OK) return st;
    /* The kernel duplicates the fds into the message: no dup here. */
    int fds[2] = {s->ctl_fd, s->pix_fd};
    return tmem__os_send_fds(socket_fd, desc, sizeof desc, fds, 2);
}

tmem_status tmem_surface_receive(tmem_context *ctx, int socket_fd, uint32_t flags, tmem_surface **out) {
    if (out) *out = NULL;
    if (!ctx || !out || socket_fd < 0) return tmem__err(TMEM_E_INVALID_ARG);
    /* One byte more than a descriptor: a longer message shows as too long
     * (or MSG_TRUNC) instead of being silently cut to size. */
    uint8_t buf[TMEM_SURFACE_DESCRIPTOR_SIZE + 1];
    int fds[2];
    tmem__os_recv_info info;
    tmem_status st = tmem__os_recv_fds(socket_fd, buf, sizeof buf, &info, fds, 2);
    if (st != TMEM_OK) return st;
    bool bad = info.truncated || info.control_truncated || info.extra_fds || info.nfds != 2 ||
               info.len != TMEM_SURFACE_DESCRIPTOR_SIZE;
    if (bad) {
        for (size_t i = 0; i < info.nfds; i++) (void)tmem__os_close(fds[i]);
        /* Nothing at all: the peer closed the connection. */
        if (info.len == 0 && info.nfds == 0 && !info.extra_fds) return tmem__err(TMEM_E_IO);
        return tmem__err(TMEM_E_PARSE);
    }
    return tmem__surface_import_fds(ctx, fds[0], fds[1], buf, info.len, flags, out);
}

/*
 * Fuzz target: one IPC message as tmem_surface_receive() sees it off a Unix
 * socket: a payload and 0..3 passed fds.
 *
 * Input: byte 0 picks the fds (bits 0-1: how many, 0..3; bits 2i+2..2i+3:
 * which file slot i gets: the real control page, the real pixels, an
 * unsealed memfd of the pixels' size, /dev/null). Byte 1 bit 0: the payload
 * is the real surface's descriptor XOR the rest of the input (an all-zero
 * input is the valid message, so mutations explore near it); else the rest
 * of the input is the payload verbatim.
 *
 * Invariants (abort on violation): every fd that arrives is either owned by
 * the surface returned or closed; a failed receive leaves no mapping; a
 * successful one maps the real pixels (the seeded byte reads back).
 */
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include "fuzz.h"
#include "os/os.h"
#include "typedmem/typedmem.h"

static tmem_context *g_ctx;
static tmem_surface *g_surface;
static tmem_surface_share g_share;
static int g_unsealed = -1, g_null = -1;

static bool setup(void) {
    if (g_surface) return true;
    tmem_context_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.budget = 1ull << 30;
    if (tmem_context_create(&cd, &g_ctx) != TMEM_OK) return false;
    tmem_surface_desc d;
    memset(&d, 0, sizeof d);
    d.format = TMEM_FORMAT_RGBA8;
    d.width = 16;
    d.height = 8;
    if (tmem_surface_create(g_ctx, &d, &g_surface) != TMEM_OK) return false;
    ((unsigned char *)tmem_surface_base(g_surface))[0] = 0xA5;
    if (tmem_surface_export(g_surface, 0, &g_share) != TMEM_OK) return false;
    tmem__os_fd_stat_info pi;
    if (tmem__os_fd_stat(g_share.fds[1], &pi) != TMEM_OK) return false;
    if (tmem__os_memfd_create("fuzz-unsealed", pi.size, &g_unsealed) != TMEM_OK) return false;
    g_null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return g_null >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || !setup()) return 0;
    int files[4] = {g_share.fds[0], g_share.fds[1], g_unsealed, g_null};
    size_t nfds = data[0] & 3u;
    int fds[3];
    for (size_t i = 0; i < nfds; i++) fds[i] = files[(data[0] >> (2 + 2 * i)) & 3u];
    uint8_t payload[512];
    size_t len = size - 2 > sizeof payload ? sizeof payload : size - 2;
    if (data[1] & 1u) {
        len = TMEM_SURFACE_DESCRIPTOR_SIZE;
        memcpy(payload, g_share.descriptor, len);
        for (size_t i = 0; i + 2 < size && i < len; i++) payload[i] ^= data[2 + i];
    } else {
        memcpy(payload, data + 2, len);
    }
    if (len == 0) return 0; /* a zero-length seqpacket reads as a closed peer */
    int sv[2];
    if (tmem__os_socketpair(sv) != TMEM_OK) return 0;
    int64_t fds0 = tmem__os_live_fds(), maps0 = tmem__os_live_mappings();
    if (tmem__os_send_fds(sv[0], payload, len, fds, nfds) == TMEM_OK) {
        tmem_surface *s = NULL;
        tmem_status st = tmem_surface_receive(g_ctx, sv[1], 0, &s);
        if (st == TMEM_OK) {
            if (!s || ((const unsigned char *)tmem_surface_base(s))[0] != 0xA5) abort();
            tmem_surface_release(s);
        } else if (s) {
            abort();
        }
        /* Imports of our own files dedupe to nothing new: back to zero. */
        if (tmem__os_live_fds() != fds0 || tmem__os_live_mappings() != maps0) abort();
    }
    (void)tmem__os_close(sv[0]);
    (void)tmem__os_close(sv[1]);
    return 0;
}

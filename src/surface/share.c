/*
 * Export and import: a memfd surface leaves the process as (control fd,
 * pixel fd, descriptor) and comes back as a surface mapping the same memory.
 *
 * Sealing. The control page is sealed for good at creation. The pixels are
 * sealed against shrink/grow at creation and get their last seals the first
 * time they are shared: SEAL (no more seals), plus FUTURE_WRITE for a
 * read-only share, after which no process can map them writable again (the
 * creator's existing mapping still writes). The first share therefore fixes
 * the mode: a later share in the other mode is refused (TMEM_E_PERMISSION)
 * because the kernel cannot add or remove a seal once SEAL is set.
 *
 * Import order matters: decode and validate the descriptor, fstat both fds
 * (distinct files, exact sizes), check the seals, and only then map. The
 * control page is mapped read-write even for read-only shares so a read-only
 * consumer can still count its uses (see surface.h, "Sharing").
 */
#include "surface/surface_internal.h"
#include "os/os.h"
#include <stdio.h>
#include <string.h>

tmem_status tmem__surface_prepare_share(tmem_surface *s, uint32_t flags, uint8_t desc[TMEM_SURFACE_DESCRIPTOR_SIZE]) {
    if (!tmem__surface_valid(s) || (flags & ~(uint32_t)TMEM_SHARE_READ_ONLY)) return tmem__err(TMEM_E_INVALID_ARG);
    if (s->backing == TMEM_SURFACE_BACKING_HEAP) return tmem__err(TMEM_E_STATE);
    bool ro = flags & TMEM_SHARE_READ_ONLY;
    if (!ro && s->read_only) return tmem__err(TMEM_E_PERMISSION);
    /* Read the seals the file carries (an imported surface was sealed by its
     * creator) and add the final ones if nobody did yet. Serialised so two
     * threads exporting in different modes agree on the outcome. */
    int mode = atomic_load_explicit(&s->share_mode, memory_order_acquire);
    if (mode == TMEM__SHARE_MODE_UNKNOWN) {
        tmem__context_lock(s->ctx);
        unsigned seals = 0;
        tmem_status st = tmem__os_fd_seals(s->pix_fd, &seals);
        if (st == TMEM_OK && !(seals & TMEM__OS_SEAL_SEAL)) {
            unsigned add = TMEM__OS_SEAL_SEAL | (ro ? TMEM__OS_SEAL_FUTURE_WRITE : 0u);
            st = tmem__os_memfd_seal(s->pix_fd, add);
            if (st == TMEM_OK) seals |= add;
        }
        /* Final once SEAL is set: later shares skip the syscalls. */
        if (st == TMEM_OK) {
            bool write_sealed = seals & (TMEM__OS_SEAL_FUTURE_WRITE | TMEM__OS_SEAL_WRITE);
            mode = write_sealed ? TMEM__SHARE_MODE_READ_ONLY : TMEM__SHARE_MODE_READ_WRITE;
            atomic_store(&s->sealed_ro, write_sealed);
            atomic_store_explicit(&s->share_mode, mode, memory_order_release);
        }
        tmem__context_unlock(s->ctx);
        if (st != TMEM_OK) return st;
    }
    bool write_sealed = mode == TMEM__SHARE_MODE_READ_ONLY;
    if (ro != write_sealed) return tmem__err(TMEM_E_PERMISSION);

    tmem__wire_desc w;
    memset(&w, 0, sizeof w);
    w.flags = ro ? TMEM__WIRE_FLAG_READ_ONLY : 0;
    w.layout = s->layout;
    tmem_status st = tmem__surface_memfd_sizes(&s->layout, &w.pixel_bytes, &w.control_bytes);
    if (st != TMEM_OK) return st;
    w.uid = s->uid;
    w.origin_id = s->id;
    tmem__wire_encode(&w, desc);
    return TMEM_OK;
}

tmem_status tmem_surface_export(tmem_surface *s, uint32_t flags, tmem_surface_share *out) {
    if (out) {
        memset(out, 0, sizeof *out);
        out->fds[0] = out->fds[1] = -1;
    }
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = tmem__surface_prepare_share(s, flags, out->descriptor);
    if (st != TMEM_OK) return st;
    if ((st = tmem__os_fd_dup(s->ctl_fd, &out->fds[0])) == TMEM_OK) st = tmem__os_fd_dup(s->pix_fd, &out->fds[1]);
    if (st != TMEM_OK) {
        tmem_surface_share_close(out);
        memset(out->descriptor, 0, sizeof out->descriptor);
        return st;
    }
    out->descriptor_size = TMEM_SURFACE_DESCRIPTOR_SIZE;
    return TMEM_OK;
}

void tmem_surface_share_close(tmem_surface_share *share) {
    if (!share) return;
    for (int i = 0; i < 2; i++) {
        if (share->fds[i] >= 0) (void)tmem__os_close(share->fds[i]);
        share->fds[i] = -1;
    }
}

/* fd_seals on something that is not a memfd reports TMEM_E_UNSUPPORTED:
 * for the importer that simply means "not sealed". */
static tmem_status read_seals(int fd, unsigned *seals) {
    tmem_status st = tmem__os_fd_seals(fd, seals);
    if (st == TMEM_E_UNSUPPORTED) {
        *seals = 0;
        return TMEM_OK;
    }
    return st;
}

/* Checks on the files themselves before anything is mapped; records their
 * identities in s. */
static tmem_status check_files(tmem_surface *s, int ctl_fd, int pix_fd, const tmem__wire_desc *w, bool *write_sealed) {
    tmem__os_fd_stat_info c, p;
    tmem_status st = tmem__os_fd_stat(ctl_fd, &c);
    if (st == TMEM_OK) st = tmem__os_fd_stat(pix_fd, &p);
    if (st != TMEM_OK) return st;
    /* The same file twice would alias the control page with pixels. */
    if (c.dev == p.dev && c.ino == p.ino) return tmem__err(TMEM_E_CORRUPT);
    if (c.size != w->control_bytes || p.size != w->pixel_bytes) return tmem__err(TMEM_E_CORRUPT);
    s->ctl_dev = c.dev, s->ctl_ino = c.ino, s->pix_dev = p.dev, s->pix_ino = p.ino;
    const unsigned need = TMEM__OS_SEAL_SHRINK | TMEM__OS_SEAL_GROW | TMEM__OS_SEAL_SEAL;
    unsigned cs, ps;
    if ((st = read_seals(ctl_fd, &cs)) != TMEM_OK || (st = read_seals(pix_fd, &ps)) != TMEM_OK) return st;
    /* Without these seals the peer could shrink the file under our mapping
     * (SIGBUS on our next access) or keep changing the rules. */
    if ((cs & need) != need || (ps & need) != need) return tmem__err(TMEM_E_PERMISSION);
    *write_sealed = ps & (TMEM__OS_SEAL_FUTURE_WRITE | TMEM__OS_SEAL_WRITE);
    return TMEM_OK;
}

tmem_status tmem__surface_import_fds(tmem_context *ctx, int ctl_fd, int pix_fd, const uint8_t *desc, size_t desc_len,
                                     uint32_t flags, tmem_surface **out) {
    tmem_surface *s = ctx ? tmem__surface_new(ctx) : NULL;
    if (!s) {
        if (ctl_fd >= 0) (void)tmem__os_close(ctl_fd);
        if (pix_fd >= 0) (void)tmem__os_close(pix_fd);
        return tmem__err(ctx ? TMEM_E_NO_MEMORY : TMEM_E_INVALID_ARG);
    }
    /* From here the object owns the fds: every failure frees them with it. */
    s->ctl_fd = ctl_fd;
    s->pix_fd = pix_fd;
    s->backing = TMEM_SURFACE_BACKING_IMPORTED;
    tmem__wire_desc w;
    memset(&w, 0, sizeof w);
    bool write_sealed = false;
    tmem_type *type = NULL;
    tmem_status st = TMEM_OK;
    if ((flags & ~(uint32_t)TMEM_SHARE_READ_ONLY) || ctl_fd < 0 || pix_fd < 0) st = tmem__err(TMEM_E_INVALID_ARG);
    if (st == TMEM_OK) st = tmem__wire_decode(desc, desc_len, &w);
    if (st == TMEM_OK) st = check_files(s, ctl_fd, pix_fd, &w, &write_sealed);
    bool ro = (flags & TMEM_SHARE_READ_ONLY) || (w.flags & TMEM__WIRE_FLAG_READ_ONLY) || write_sealed;
    if (st == TMEM_OK) {
        /* Already imported here: hand out that handle, drop the new fds. */
        s->uid = w.uid;
        s->layout = w.layout;
        s->read_only = ro;
        bool conflict;
        tmem_surface *existing = tmem__surface_registry_find_import(ctx, s, &conflict);
        if (conflict) st = tmem__err(TMEM_E_CORRUPT);
        if (existing) {
            tmem__surface_free(s);
            *out = existing;
            return TMEM_OK;
        }
    }
    if (st == TMEM_OK) st = tmem__surface_image_type(ctx, NULL, &type);
    uint64_t total = 0;
    if (st == TMEM_OK && tmem__add_overflow(w.pixel_bytes, w.control_bytes, &total)) st = tmem__err(TMEM_E_OVERFLOW);
    if (st == TMEM_OK && (st = tmem__type_charge(type, total, false)) == TMEM_OK) {
        s->charged_type = type;
        s->charged = total;
    }
    void *p = NULL;
    if (st == TMEM_OK && (st = tmem__os_map_fd(ctl_fd, 0, (size_t)w.control_bytes, true, true, &p)) == TMEM_OK) {
        s->ctl = p;
        s->ctl_map_size = (size_t)w.control_bytes;
        if (!tmem__surface_ctl_valid(s->ctl, w.uid)) st = tmem__err(TMEM_E_CORRUPT);
    }
    if (st == TMEM_OK && (st = tmem__os_map_fd(pix_fd, 0, (size_t)w.pixel_bytes, !ro, true, &p)) == TMEM_OK) {
        s->base = p;
        s->pix_map_size = (size_t)w.pixel_bytes;
    }
    if (st == TMEM_OK) {
        atomic_store(&s->sealed_ro, write_sealed);
        /* check_files required SEAL: the mode is final. */
        atomic_store(&s->share_mode, write_sealed ? TMEM__SHARE_MODE_READ_ONLY : TMEM__SHARE_MODE_READ_WRITE);
        snprintf(s->name, sizeof s->name, "imported-%llu", (unsigned long long)w.origin_id);
        st = tmem__surface_publish(s);
    }
    if (st != TMEM_OK) {
        tmem__surface_free(s);
        return st;
    }
    *out = s;
    return TMEM_OK;
}

tmem_status tmem_surface_import(tmem_context *ctx, const tmem_surface_share *share, uint32_t flags,
                                tmem_surface **out) {
    if (out) *out = NULL;
    if (!ctx || !share || !out || share->fds[0] < 0 || share->fds[1] < 0 ||
        share->descriptor_size > TMEM_SURFACE_DESCRIPTOR_SIZE)
        return tmem__err(TMEM_E_INVALID_ARG);
    int c = -1, p = -1;
    tmem_status st = tmem__os_fd_dup(share->fds[0], &c);
    if (st == TMEM_OK) st = tmem__os_fd_dup(share->fds[1], &p);
    if (st != TMEM_OK) {
        if (c >= 0) (void)tmem__os_close(c);
        /* EBADF from a bad fd arrives as TMEM_E_OS: the caller's argument. */
        return st == TMEM_E_OS ? tmem__err(TMEM_E_INVALID_ARG) : st;
    }
    return tmem__surface_import_fds(ctx, c, p, share->descriptor, share->descriptor_size, flags, out);
}

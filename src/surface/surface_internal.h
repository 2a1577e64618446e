/*
 * Private to src/surface/: the surface object, the shared control page and the
 * functions the surface files share. Other layers use surface.h only.
 *
 * Files:
 *   format.c    pixel formats, size-and-align (layout) and its comparison
 *   control.c   the control page: seed and per-process use slots (atomics)
 *   surface.c   create / retain / release, lock / unlock, use count, info
 *   registry.c  per-context id -> surface table
 *   wire.c      the versioned descriptor: encode, decode, validate (pure)
 *   share.c     export / import (fstat, seals, mapping)
 *   message.c   send / receive over a Unix socket with SCM_RIGHTS
 *   view.c      tensor views of planes and tensor surfaces
 *   convert.c   fused conversion to a normalized planar float tensor or patches
 *   convert_avx2.c  its AVX2 row kernel (target attributes, run-time dispatch)
 * What layers above may use is surface/internal.h (included here).
 */
#ifndef TMEM_SURFACE_INTERNAL_H
#define TMEM_SURFACE_INTERNAL_H

#include <stdatomic.h>
#include "surface/internal.h"
#include "base/half.h"

/* ---- format.c ---- */
bool tmem__surface_format_is_tensor(tmem_pixel_format format);
/* Field-by-field equality (structs have padding). */
bool tmem__surface_layout_equal(const tmem_surface_layout *a, const tmem_surface_layout *b);

/* ---- control.c ----
 * The control page is shared with every process that holds the surface and
 * none of them is trusted: we read it only through atomics, validate every
 * value before use (a pid <= 0 is never passed to the OS) and never derive a
 * size or an address from it. */
#define TMEM__SURFACE_CTL_MAGIC 0x43534d54u   /* "TMSC" */
#define TMEM__SURFACE_CTL_VERSION 1u
#define TMEM__SURFACE_CTL_SLOTS 128u

typedef struct tmem__surface_slot {
    _Atomic int32_t pid;       /* 0 = free */
    _Atomic uint32_t uses;     /* written only by the slot's owner */
} tmem__surface_slot;

typedef struct tmem__surface_ctl {
    uint32_t magic;
    uint32_t version;
    uint64_t uid;              /* identity, repeated in the descriptor */
    _Atomic uint32_t seed;
    uint32_t reserved;
    tmem__surface_slot slots[TMEM__SURFACE_CTL_SLOTS];
} tmem__surface_ctl;

/* Initialise a fresh (zeroed) control block. */
void tmem__surface_ctl_init(tmem__surface_ctl *ctl, uint64_t uid);
/* Check magic, version and identity of a mapped control page. */
bool tmem__surface_ctl_valid(const tmem__surface_ctl *ctl, uint64_t uid);
/* Claim a use slot for this process (recycling slots of dead processes).
 * TMEM_E_FULL when every slot belongs to a live process. */
tmem_status tmem__surface_ctl_claim(tmem__surface_ctl *ctl, uint32_t *out_slot);
/* Give a slot back (its uses vanish with it). */
void tmem__surface_ctl_unclaim(tmem__surface_ctl *ctl, uint32_t slot);
/* Sum of the uses of every live process (dead ones are not counted). */
uint32_t tmem__surface_ctl_uses(tmem__surface_ctl *ctl);

/* ---- surface.c ---- */
struct tmem_surface {
    uint32_t magic;
    tmem_context *ctx;
    tmem_surface_layout layout;
    tmem_surface_backing backing;
    uint64_t id;
    uint64_t uid;
    uint8_t *base;             /* pixels */
    tmem__surface_ctl *ctl;    /* mapped control page, or local_ctl */
    tmem__surface_ctl *local_ctl; /* heap backing: allocated, not shared */
    size_t ctl_map_size;       /* 0 when not mapped */
    size_t pix_map_size;       /* 0 when not mapped */
    int ctl_fd, pix_fd;        /* -1 when none */
    tmem_type *charged_type;   /* type charged with `charged` bytes */
    uint64_t charged;
    bool accounted;            /* alloc_size counted as in use for TMEM_ROLE_IMAGE */
    tmem_heap *heap;           /* heap backing */
    uint64_t heap_offset;
    uint32_t slot;             /* our use slot in ctl */
    uint64_t ctl_dev, ctl_ino, pix_dev, pix_ino; /* imported: file identities */
    bool read_only;            /* pixels mapped PROT_READ */
    _Atomic bool sealed_ro;    /* pixels carry F_SEAL_FUTURE_WRITE */
    _Atomic int share_mode;    /* TMEM__SHARE_MODE_*: fixed by the final seals */
    _Atomic uint32_t refs;
    _Atomic uint32_t ro_locks, rw_locks;
    struct tmem_surface *reg_next; /* registry chains (under the registry lock): */
    struct tmem_surface *imp_ctl_next, *imp_pix_next; /* imports by file */
    char name[32];
};
#define TMEM__SURFACE_MAGIC 0x53534d54u       /* "TMSS" */
enum { TMEM__SHARE_MODE_UNKNOWN = 0, TMEM__SHARE_MODE_READ_WRITE, TMEM__SHARE_MODE_READ_ONLY };

bool tmem__surface_valid(const tmem_surface *s);
/* Allocate a zeroed surface object with fds -1 and one reference. */
tmem_surface *tmem__surface_new(tmem_context *ctx);
/* Undo everything the object holds (unmap, close, uncharge, unregister) and
 * free it. Used by the last release, failed creations and context destroy. */
void tmem__surface_free(tmem_surface *s);
/* Claim the use slot, register, add to the context's owned list; the last
 * step of every creation. On failure the caller frees the object. */
tmem_status tmem__surface_publish(tmem_surface *s);
/* An identity for a new surface: unique enough to catch mixed-up control
 * pages (not a secret). */
uint64_t tmem__surface_new_uid(const tmem_surface *s);

/* The type a memfd or imported surface charges (asked or the IMAGE role's). */
tmem_status tmem__surface_image_type(tmem_context *ctx, tmem_type *asked, tmem_type **out);

/* ---- registry.c ---- */
tmem_status tmem__surface_registry_add(tmem_surface *s);
void tmem__surface_registry_remove(tmem_surface *s);
/* Drop one reference; true when it was the last (the surface is then out of
 * the registry, so no lookup can revive it; the caller frees it). */
bool tmem__surface_registry_release(tmem_surface *s);
/* An imported surface of ctx with this identity, files, layout and access,
 * with one more reference; NULL when none. */
/* An import of the same files and layout already in ctx (one more ref), or
 * NULL. *conflict: one of like's files is already imported here paired with
 * a different other file (a forged pairing). */
tmem_surface *tmem__surface_registry_find_import(tmem_context *ctx, const tmem_surface *like, bool *conflict);

/* ---- wire.c ----
 * Descriptor v1, little endian, TMEM_SURFACE_DESCRIPTOR_SIZE bytes:
 *   0 magic "TMSD"  4 version u16  6 size u16  8 flags u32  12 format u32
 *  16 width u32  20 height u32  24 channels u32  28 row_alignment u32
 *  32 bytes_per_row[4] u64  64 alloc_size u64  72 pixel_bytes u64 (memfd size)
 *  80 control_bytes u64  88 uid u64  96 origin id u64  104 plane_count u32
 * 108 reserved (zero) .. 124 checksum u32 (FNV-1a of bytes 0..123) */
#define TMEM__WIRE_MAGIC 0x44534d54u          /* "TMSD" */
#define TMEM__WIRE_FLAG_READ_ONLY 1u

typedef struct tmem__wire_desc {
    uint32_t flags;
    tmem_surface_layout layout;  /* recomputed and checked on decode */
    uint64_t pixel_bytes;        /* memfd size of the pixels */
    uint64_t control_bytes;      /* memfd size of the control page */
    uint64_t uid;
    uint64_t origin_id;
} tmem__wire_desc;

/* Bytes the memfds of a layout take (page multiples). */
tmem_status tmem__surface_memfd_sizes(const tmem_surface_layout *l, uint64_t *pixel_bytes, uint64_t *control_bytes);
void tmem__wire_encode(const tmem__wire_desc *d, uint8_t out[TMEM_SURFACE_DESCRIPTOR_SIZE]);
/* Decode and validate: TMEM_E_PARSE (length, magic, version, checksum,
 * unknown flags, reserved bytes) or TMEM_E_CORRUPT (a layout that does not
 * recompute, memfd sizes that do not follow from it). Never reads past len. */
tmem_status tmem__wire_decode(const uint8_t *buf, size_t len, tmem__wire_desc *out);

/* ---- share.c ---- */
/* Import from fds; takes ownership of both fds on success and on failure
 * (receive hands its fds over; import dups first). */
tmem_status tmem__surface_import_fds(tmem_context *ctx, int ctl_fd, int pix_fd, const uint8_t *desc, size_t desc_len,
                                     uint32_t flags, tmem_surface **out);
/* Prepare a surface for leaving the process: the seals, the descriptor. */
tmem_status tmem__surface_prepare_share(tmem_surface *s, uint32_t flags, uint8_t desc[TMEM_SURFACE_DESCRIPTOR_SIZE]);

/* ---- convert.c ---- */
/* The conversion over raw memory (no surface, no lock): for tests, fuzzing
 * and the bench. scratch_ctx may be NULL (tables then come from libc). */
tmem_status tmem__surface_convert_raw(const tmem_surface_layout *l, const uint8_t *base, const tmem_convert_desc *desc,
                                      const tmem_tensor_view *dst, tmem_context *scratch_ctx);
/* The patch-order conversion over raw memory (same conventions). */
tmem_status tmem__surface_convert_patches_raw(const tmem_surface_layout *l, const uint8_t *base,
                                              const tmem_convert_desc *desc, const tmem_patch_desc *patch,
                                              const tmem_tensor_view *dst, tmem_context *scratch_ctx);

#endif /* TMEM_SURFACE_INTERNAL_H */

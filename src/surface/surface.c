/*
 * The surface object: creation (memfd or heap backing), references, lock /
 * unlock with the seed, use counts, read-back.
 *
 * A memfd surface is two memfds: a one-page control block (seed, use slots)
 * and the pixels. Both are sized once and sealed against shrinking and
 * growing at creation; sharing adds the final seals (share.c). Their bytes
 * are charged to the images type for as long as this handle maps them.
 */
#include "surface/surface_internal.h"
#include "os/os.h"
#include <stdio.h>
#include <string.h>

bool tmem__surface_valid(const tmem_surface *s) { return s && s->magic == TMEM__SURFACE_MAGIC; }

tmem_surface *tmem__surface_new(tmem_context *ctx) {
    tmem_surface *s = tmem__calloc(ctx, 1, sizeof *s);
    if (!s) return NULL;
    s->magic = TMEM__SURFACE_MAGIC;
    s->ctx = ctx;
    s->ctl_fd = s->pix_fd = -1;
    s->slot = TMEM__SURFACE_CTL_SLOTS; /* none */
    atomic_init(&s->refs, 1);
    atomic_init(&s->ro_locks, 0);
    atomic_init(&s->rw_locks, 0);
    atomic_init(&s->sealed_ro, false);
    atomic_init(&s->share_mode, TMEM__SHARE_MODE_UNKNOWN);
    return s;
}

static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t tmem__surface_new_uid(const tmem_surface *s) {
    /* Address-space layout is randomised per process, the pid tells processes
     * apart: enough to catch a control page of another surface. */
    uint64_t u = mix64((uint64_t)tmem__os_pid_self()) ^ mix64((uint64_t)(uintptr_t)s) ^
                 mix64((uint64_t)(uintptr_t)s->ctl + 1);
    return u ? u : 1;
}

/* Everything the object holds, released in reverse order of acquisition.
 * Each step checks whether it was reached, so a half-built object frees
 * cleanly. */
static void surface_teardown(tmem_surface *s, bool unlink_owned) {
    tmem_context *ctx = s->ctx;
    if (unlink_owned && s->id) tmem__context_remove_owned(ctx, s);
    tmem__surface_registry_remove(s);
    if (s->ctl && s->slot < TMEM__SURFACE_CTL_SLOTS) tmem__surface_ctl_unclaim(s->ctl, s->slot);
    if (s->pix_map_size) (void)tmem__os_unmap(s->base, s->pix_map_size);
    if (s->ctl_map_size) (void)tmem__os_unmap(s->ctl, s->ctl_map_size);
    if (s->pix_fd >= 0) (void)tmem__os_close(s->pix_fd);
    if (s->ctl_fd >= 0) (void)tmem__os_close(s->ctl_fd);
    if (s->heap && tmem_heap_free_offset(s->heap, s->heap_offset) != TMEM_OK) {
        /* Cannot happen for an offset the heap gave us; nothing to undo. */
    }
    if (s->local_ctl) tmem__free(ctx, s->local_ctl, sizeof *s->local_ctl);
    if (s->accounted) tmem__account_free(s->charged_type, TMEM_ROLE_IMAGE, s->layout.alloc_size);
    if (s->charged) tmem__type_uncharge(s->charged_type, s->charged, false);
    s->magic = 0;
    tmem__free(ctx, s, sizeof *s);
}

void tmem__surface_free(tmem_surface *s) { surface_teardown(s, true); }

/* Context destroy: the context already popped us from its owned list. */
static void surface_destroy_owned(void *object) { surface_teardown(object, false); }

tmem_status tmem__surface_publish(tmem_surface *s) {
    /* In-use bytes by role (stats, reports): heap-backed pixels are accounted
     * by their heap's allocation already. */
    if (s->charged_type && !s->heap) {
        tmem__account_alloc(s->charged_type, TMEM_ROLE_IMAGE, s->layout.alloc_size);
        s->accounted = true;
    }
    tmem_status st = tmem__surface_ctl_claim(s->ctl, &s->slot);
    if (st != TMEM_OK) return st;
    st = tmem__surface_registry_add(s);
    if (st != TMEM_OK) return st;
    st = tmem__context_add_owned(s->ctx, s, surface_destroy_owned);
    if (st != TMEM_OK) {
        /* Not owned: make sure teardown does not try to unlink it. */
        tmem__surface_registry_remove(s);
        s->id = 0;
    }
    return st;
}

static void set_name(tmem_surface *s, const char *name) {
    snprintf(s->name, sizeof s->name, "%s", name ? name : "tmem-surface");
}

/* Memfd backing: control page + pixels, mapped read-write, sized for good. */
static tmem_status create_memfd(tmem_surface *s, tmem_type *type) {
    uint64_t pixel_bytes, control_bytes, total;
    tmem_status st = tmem__surface_memfd_sizes(&s->layout, &pixel_bytes, &control_bytes);
    if (st != TMEM_OK) return st;
    if (tmem__add_overflow(pixel_bytes, control_bytes, &total)) return tmem__err(TMEM_E_OVERFLOW);
    st = tmem__type_charge(type, total, false);
    if (st != TMEM_OK) return st;
    s->charged_type = type;
    s->charged = total;
    if ((st = tmem__os_memfd_create(s->name, control_bytes, &s->ctl_fd)) != TMEM_OK) return st;
    if ((st = tmem__os_memfd_create(s->name, pixel_bytes, &s->pix_fd)) != TMEM_OK) return st;
    /* The control page is final now; the pixels get SEAL (and maybe
     * FUTURE_WRITE) when first shared. */
    if ((st = tmem__os_memfd_seal(s->ctl_fd, TMEM__OS_SEAL_SHRINK | TMEM__OS_SEAL_GROW |
                                                 TMEM__OS_SEAL_SEAL)) != TMEM_OK)
        return st;
    if ((st = tmem__os_memfd_seal(s->pix_fd, TMEM__OS_SEAL_SHRINK | TMEM__OS_SEAL_GROW)) != TMEM_OK) return st;
    void *p;
    if ((st = tmem__os_map_fd(s->ctl_fd, 0, (size_t)control_bytes, true, true, &p)) != TMEM_OK) return st;
    s->ctl = p;
    s->ctl_map_size = (size_t)control_bytes;
    if ((st = tmem__os_map_fd(s->pix_fd, 0, (size_t)pixel_bytes, true, true, &p)) != TMEM_OK) return st;
    s->base = p;
    s->pix_map_size = (size_t)pixel_bytes;
    s->uid = tmem__surface_new_uid(s);
    tmem__surface_ctl_init(s->ctl, s->uid);
    s->backing = TMEM_SURFACE_BACKING_MEMFD;
    return TMEM_OK;
}

/* Heap backing: the pixels are an allocation, the control block is local. */
static tmem_status create_heap(tmem_surface *s, tmem_heap *heap) {
    tmem_alloc_desc ad;
    memset(&ad, 0, sizeof ad);
    ad.size = s->layout.alloc_size;
    ad.alignment = s->layout.alignment;
    ad.flags = TMEM_ALLOC_ZERO;
    ad.role = TMEM_ROLE_IMAGE;
    ad.name = s->name;
    tmem_alloc_info info;
    tmem_status st = tmem_heap_alloc_ex(heap, &ad, &info);
    if (st != TMEM_OK) return st;
    s->heap = heap;
    s->heap_offset = info.offset;
    if (!info.ptr) return tmem__err(TMEM_E_INVALID_ARG); /* a device heap: no host pixels */
    s->base = info.ptr;
    s->local_ctl = tmem__calloc(s->ctx, 1, sizeof *s->local_ctl);
    if (!s->local_ctl) return tmem__err(TMEM_E_NO_MEMORY);
    s->ctl = s->local_ctl;
    s->uid = tmem__surface_new_uid(s);
    tmem__surface_ctl_init(s->ctl, s->uid);
    s->backing = TMEM_SURFACE_BACKING_HEAP;
    return TMEM_OK;
}

/* The type a memfd surface charges: the caller's, or the IMAGE role's. */
tmem_status tmem__surface_image_type(tmem_context *ctx, tmem_type *asked, tmem_type **out) {
    tmem_type *type = asked;
    if (!type) {
        tmem_status st = tmem_role_get_type(ctx, TMEM_ROLE_IMAGE, &type);
        if (st != TMEM_OK) return st;
    }
    if (tmem__type_context(type) != ctx) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_placement pl = tmem__type_placement(type);
    /* PINNED is refused: a memfd surface is not locked, and promising
     * otherwise would be worse than an error. */
    if (pl != TMEM_PLACEMENT_HOST && pl != TMEM_PLACEMENT_HOST_SHARED) return tmem__err(TMEM_E_INVALID_ARG);
    *out = type;
    return TMEM_OK;
}

tmem_status tmem_surface_create(tmem_context *ctx, const tmem_surface_desc *desc, tmem_surface **out) {
    if (out) *out = NULL;
    if (!ctx || !desc || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_surface_layout layout;
    tmem_status st = tmem_surface_size_and_align(desc, &layout);
    if (st != TMEM_OK) return st;
    tmem_type *type = NULL;
    if (desc->heap) {
        if (tmem__type_context(tmem__heap_type(desc->heap)) != ctx) return tmem__err(TMEM_E_INVALID_ARG);
    } else if ((st = tmem__surface_image_type(ctx, desc->type, &type)) != TMEM_OK) {
        return st;
    }
    tmem_surface *s = tmem__surface_new(ctx);
    if (!s) return tmem__err(TMEM_E_NO_MEMORY);
    s->layout = layout;
    set_name(s, desc->name);
    st = desc->heap ? create_heap(s, desc->heap) : create_memfd(s, type);
    if (st == TMEM_OK) st = tmem__surface_publish(s);
    if (st != TMEM_OK) {
        tmem__surface_free(s);
        return st;
    }
    *out = s;
    return TMEM_OK;
}

tmem_surface *tmem_surface_retain(tmem_surface *s) {
    if (tmem__surface_valid(s)) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void tmem_surface_release(tmem_surface *s) {
    if (!tmem__surface_valid(s)) return;
    /* The drop to zero happens under the registry lock, where lookups run. */
    if (tmem__surface_registry_release(s)) tmem__surface_free(s);
}

uint64_t tmem_surface_id(const tmem_surface *s) { return tmem__surface_valid(s) ? s->id : 0; }

void *tmem_surface_base(const tmem_surface *s) { return tmem__surface_valid(s) ? s->base : NULL; }

uint64_t tmem__surface_map_size(const tmem_surface *s) { return tmem__surface_valid(s) ? s->pix_map_size : 0; }

void *tmem_surface_plane_ptr(const tmem_surface *s, uint32_t plane) {
    if (!tmem__surface_valid(s) || plane >= s->layout.plane_count) return NULL;
    return s->base + s->layout.planes[plane].offset;
}

/* ---- lock / unlock / seed ---- */

/* Decrement a counter unless it is zero. */
static bool dec_nonzero(_Atomic uint32_t *c) {
    uint32_t v = atomic_load_explicit(c, memory_order_relaxed);
    while (v) {
        if (atomic_compare_exchange_weak_explicit(c, &v, v - 1, memory_order_acq_rel,
                                                  memory_order_relaxed))
            return true;
    }
    return false;
}

/* Increment a counter below 2^31. */
static bool inc_bounded(_Atomic uint32_t *c) {
    uint32_t v = atomic_load_explicit(c, memory_order_relaxed);
    while (v < (1u << 31)) {
        if (atomic_compare_exchange_weak_explicit(c, &v, v + 1, memory_order_acq_rel,
                                                  memory_order_relaxed))
            return true;
    }
    return false;
}

tmem_status tmem_surface_lock(tmem_surface *s, uint32_t flags, uint32_t *seed) {
    if (seed) *seed = 0;
    if (!tmem__surface_valid(s) || (flags & ~(uint32_t)TMEM_LOCK_READ_ONLY)) return tmem__err(TMEM_E_INVALID_ARG);
    bool ro = flags & TMEM_LOCK_READ_ONLY;
    if (!ro && s->read_only) return tmem__err(TMEM_E_PERMISSION);
    if (!inc_bounded(ro ? &s->ro_locks : &s->rw_locks)) return tmem__err(TMEM_E_OVERFLOW);
    /* Acquire: see every write published by an earlier read-write unlock. */
    uint32_t v = atomic_load_explicit(&s->ctl->seed, memory_order_acquire);
    if (seed) *seed = v;
    tmem__trace(s->ctx, TMEM__TRACE_LOCK, s->charged_type, TMEM_ROLE_IMAGE, s->layout.alloc_size, s->id, s->name);
    return TMEM_OK;
}

tmem_status tmem_surface_unlock(tmem_surface *s, uint32_t flags, uint32_t *seed) {
    if (seed) *seed = 0;
    if (!tmem__surface_valid(s) || (flags & ~(uint32_t)TMEM_LOCK_READ_ONLY)) return tmem__err(TMEM_E_INVALID_ARG);
    bool ro = flags & TMEM_LOCK_READ_ONLY;
    if (!dec_nonzero(ro ? &s->ro_locks : &s->rw_locks)) return tmem__err(TMEM_E_STATE);
    uint32_t v;
    if (ro) {
        v = atomic_load_explicit(&s->ctl->seed, memory_order_acquire);
    } else {
        /* Release: the pixels written under the lock are visible to whoever
         * reads the new seed (in any process: the page is shared). */
        v = atomic_fetch_add_explicit(&s->ctl->seed, 1, memory_order_acq_rel) + 1;
    }
    if (seed) *seed = v;
    tmem__trace(s->ctx, TMEM__TRACE_UNLOCK, s->charged_type, TMEM_ROLE_IMAGE, s->layout.alloc_size, s->id, s->name);
    return TMEM_OK;
}

uint32_t tmem_surface_seed(const tmem_surface *s) {
    if (!tmem__surface_valid(s)) return 0;
    return atomic_load_explicit(&s->ctl->seed, memory_order_acquire);
}

/* ---- use count ---- */

tmem_status tmem_surface_use_begin(tmem_surface *s) {
    if (!tmem__surface_valid(s)) return tmem__err(TMEM_E_INVALID_ARG);
    /* Our slot's uses are written only by us (any thread of this handle). */
    return inc_bounded(&s->ctl->slots[s->slot].uses) ? TMEM_OK : tmem__err(TMEM_E_OVERFLOW);
}

tmem_status tmem_surface_use_end(tmem_surface *s) {
    if (!tmem__surface_valid(s)) return tmem__err(TMEM_E_INVALID_ARG);
    return dec_nonzero(&s->ctl->slots[s->slot].uses) ? TMEM_OK : tmem__err(TMEM_E_STATE);
}

tmem_status tmem_surface_use_count(tmem_surface *s, uint32_t *out) {
    if (out) *out = 0;
    if (!tmem__surface_valid(s) || !out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = tmem__surface_ctl_uses(s->ctl);
    return TMEM_OK;
}

bool tmem_surface_in_use(tmem_surface *s) {
    uint32_t n;
    return tmem_surface_use_count(s, &n) == TMEM_OK && n > 0;
}

tmem_status tmem_surface_get_info(tmem_surface *s, tmem_surface_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!tmem__surface_valid(s) || !out) return tmem__err(TMEM_E_INVALID_ARG);
    out->id = s->id;
    out->layout = s->layout;
    out->backing = s->backing;
    out->read_only = s->read_only;
    out->shared_read_only = atomic_load(&s->sealed_ro);
    out->seed = tmem_surface_seed(s);
    out->use_count = tmem__surface_ctl_uses(s->ctl);
    out->ref_count = atomic_load(&s->refs);
    out->lock_count = atomic_load(&s->ro_locks) + atomic_load(&s->rw_locks);
    out->mapped_bytes = s->heap ? s->layout.alloc_size : (uint64_t)s->ctl_map_size + s->pix_map_size;
    return TMEM_OK;
}

/* A fake device backend for the unit tests (test_type.c, test_trace_device.c):
 * 64 KiB device pages, no host view, counting its calls. It proves a GPU
 * backend plugs in under the pool without a GPU. Header-only. */
#ifndef TMEM_TEST_FAKE_DEVICE_H
#define TMEM_TEST_FAKE_DEVICE_H

#include <string.h>
#include "backend/backend.h"

typedef struct fake_dev {
    tmem__backend be;
    int reserves, releases, commits, decommits;
    uint64_t committed;
} fake_dev;

static tmem_status dev_reserve(const tmem__backend *be, tmem_placement pl, uint32_t flags,
                               uint64_t size, tmem__region *out) {
    fake_dev *d = be->user;
    d->reserves++;
    memset(out, 0, sizeof *out);
    out->granule = 64 << 10; /* device pages of 64 KiB */
    out->size = (size + out->granule - 1) & ~(out->granule - 1);
    out->flags = flags;
    out->placement = pl;
    out->handle = 0xD0D0;
    return TMEM_OK;
}
static void dev_release(const tmem__backend *be, tmem__region *r) {
    ((fake_dev *)be->user)->releases++;
    r->size = 0;
}
static tmem_status dev_commit(const tmem__backend *be, tmem__region *r, uint64_t off,
                              uint64_t size) {
    (void)r; (void)off;
    fake_dev *d = be->user;
    d->commits++;
    d->committed += size;
    return TMEM_OK;
}
static tmem_status dev_decommit(const tmem__backend *be, tmem__region *r, uint64_t off,
                                uint64_t size) {
    (void)r; (void)off;
    fake_dev *d = be->user;
    d->decommits++;
    d->committed -= size;
    return TMEM_OK;
}
static tmem_status dev_advise(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size,
                              tmem__advice a) {
    (void)be; (void)r; (void)off; (void)size; (void)a;
    return TMEM_E_UNSUPPORTED;
}

/* A fresh fake backend; its `user` must be set to its own address. */
static inline fake_dev fake_dev_make(void) {
    fake_dev d;
    memset(&d, 0, sizeof d);
    d.be =
        (tmem__backend){"fake-gpu", dev_reserve, dev_release, dev_commit, dev_decommit, dev_advise,
                        NULL,       NULL,        NULL,        NULL,       NULL, NULL, NULL};
    return d;
}

#endif

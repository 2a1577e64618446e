/* What the runtime's Vulkan op tests share (tests/gpu/test_vk_*.c): a
 * context with a Vulkan gpu and the compute layer on it, host-visible
 * device buffers (VkBuffers at offsets of one 256 MiB heap, each with a
 * host view), a recorder, seeded random data and the
 * comparison of a result with its reference relative to max |ref|. Skips
 * (77) without a Vulkan device. */
#ifndef TMEM_VK_TEST_UTIL_H
#define TMEM_VK_TEST_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "typedmem/vulkan.h"
#include "gpu/vk_ops.h"

typedef struct vkt {
    tmem_context *ctx;
    tmem_gpu *gpu;
    tmrt_vk *vk;
    tmem_type *type;
    tmem_heap *heap;
    tmrt_vk_rec *rec;
} vkt;

typedef struct vkt_buf {
    uint64_t offset;    /* in the heap */
    VkBuffer vb;
    tmrt_vk_buf b;      /* the whole buffer */
    void *host;
    uint64_t bytes;
} vkt_buf;

/* Open everything; false (with a skip printed) where no Vulkan device is. */
static inline bool vkt_open(vkt *t, const tmrt_vk_desc *d) {
    memset(t, 0, sizeof *t);
    tmem_context_desc cd = {0};
    cd.budget = 2ull << 30;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    if (tmem_context_create(&cd, &t->ctx) != TMEM_OK) return false;
    tmem_gpu_desc gd = {0};
    gd.chunk_size = 256ull << 20;
    tmem_status st = tmem_gpu_attach(t->ctx, &gd, &t->gpu);
    if (st != TMEM_OK) {
        printf("SKIP: no Vulkan device (%s)\n", tmem_status_name(st));
        tmem_context_destroy(t->ctx);
        t->ctx = NULL;
        return false;
    }
    tmem_type_desc td = {0};
    td.name = "/memory/vk-test";
    td.placement = TMEM_PLACEMENT_DEVICE_HOST_VISIBLE;
    td.reserve = 1ull << 30;
    st = tmem_type_create(t->ctx, &td, &t->type);
    char err[256];
    tmem_heap_desc hd = {0};
    hd.type = t->type;
    hd.size = 256ull << 20;
    if (st == TMEM_OK) st = tmem_heap_create(t->ctx, &hd, &t->heap);
    if (st == TMEM_OK) st = tmrt__vk_create(t->gpu, d, &t->vk, err, sizeof err);
    else snprintf(err, sizeof err, "host-visible device type: %s", tmem_status_name(st));
    if (st == TMEM_OK) st = tmrt__vk_rec_create(t->vk, &(tmrt_vk_rec_desc){.max_dispatches = 4096}, &t->rec);
    if (st != TMEM_OK) {
        printf("vkt_open: %s (%s)\n", err, tmem_status_name(st));
        tmrt__vk_destroy(t->vk);
        tmem_heap_destroy(t->heap);
        tmem_gpu_release(t->gpu);
        tmem_context_destroy(t->ctx);
        memset(t, 0, sizeof *t);
        return false;
    }
    return true;
}

static inline void vkt_close(vkt *t) {
    tmrt__vk_rec_destroy(t->rec);
    tmrt__vk_destroy(t->vk);
    tmem_heap_destroy(t->heap);
    tmem_gpu_release(t->gpu);
    tmem_context_destroy(t->ctx);
    memset(t, 0, sizeof *t);
}

static inline bool vkt_buf_new(vkt *t, uint64_t bytes, vkt_buf *out) {
    memset(out, 0, sizeof *out);
    uint64_t size = (bytes + 255) & ~255ull;
    tmem_alloc_info ai;
    tmem_alloc_desc ad = {0};
    ad.size = size;
    ad.alignment = 256;
    tmem_device_span sp;
    tmem_status st = tmem_heap_alloc_ex(t->heap, &ad, &ai);
    bool allocated = st == TMEM_OK;
    if (st == TMEM_OK) st = tmem_heap_device_span(t->heap, ai.offset, size, &sp);
    if (st == TMEM_OK && !sp.host) st = TMEM_E_UNSUPPORTED;
    if (st == TMEM_OK)
        st = tmem_vk_buffer_create(t->gpu, t->heap, ai.offset, size,
                                   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                   &out->vb);
    if (st != TMEM_OK) {
        printf("vkt_buf_new(%llu): %s\n", (unsigned long long)bytes, tmem_status_name(st));
        if (allocated && tmem_heap_free_offset(t->heap, ai.offset) != TMEM_OK) printf("free failed\n");
        memset(out, 0, sizeof *out);
        return false;
    }
    out->offset = ai.offset;
    out->b = (tmrt_vk_buf){out->vb, 0, size};
    out->host = sp.host;
    out->bytes = size;
    memset(out->host, 0, size);
    return true;
}

static inline void vkt_buf_free(vkt *t, vkt_buf *b) {
    if (b->vb) {
        tmem_vk_buffer_destroy(t->gpu, b->vb);
        if (tmem_heap_free_offset(t->heap, b->offset) != TMEM_OK) printf("vkt_buf_free: not freed\n");
    }
    memset(b, 0, sizeof *b);
}

/* A sub-range of a buffer (offset and range in bytes). */
static inline tmrt_vk_buf vkt_sub(const vkt_buf *b, uint64_t offset, uint64_t range) {
    return (tmrt_vk_buf){b->vb, offset, range};
}

/* Uniform floats in [-1, 1). */
static inline void vkt_fill(tmem_rng *r, float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = (float)((double)(tmem_rng_next(r) >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

/* max |got - ref| / max |ref| over n values (stride 1); NaN anywhere -> inf */
static inline double vkt_rel_err(const float *got, const float *ref, size_t n) {
    double mx = 0, err = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]) || isnan(ref[i])) return INFINITY;
        double a = fabs((double)ref[i]), e = fabs((double)got[i] - (double)ref[i]);
        if (a > mx) mx = a;
        if (e > err) err = e;
    }
    return mx > 0 ? err / mx : err;
}

/* Record with `fn`, make the writes host-visible, run; false (with the
 * recorder's message) on failure. */
static inline bool vkt_run(vkt *t) {
    tmrt__vk_barrier_host(t->rec);
    tmem_status st = tmrt__vk_run(t->rec);
    if (st != TMEM_OK) printf("run: %s: %s\n", tmem_status_name(st), tmrt__vk_rec_error(t->rec));
    return st == TMEM_OK;
}

#endif

/*
 * tmem_gpu: attach a device (Vulkan or CUDA) to a context as the backend of
 * its placements, with a reference count so pools may outlive the caller's
 * handle. The API-specific work is in vulkan*.c and cuda*.c; an API not
 * compiled in answers TMEM_E_UNSUPPORTED.
 */
#include <stdlib.h>
#include <string.h>
#include "gpu/gpu_internal.h"
#include "core/core.h"

static const char *const api_names[TMEM_GPU_API_COUNT] = {"vulkan", "cuda"};

bool tmem_gpu_api_built(tmem_gpu_api api) {
#ifdef TMEM_HAVE_VULKAN
    if (api == TMEM_GPU_VULKAN) return true;
#endif
#ifdef TMEM_HAVE_CUDA
    if (api == TMEM_GPU_CUDA) return true;
#endif
    (void)api;
    return false;
}

const char *tmem_gpu_api_name(tmem_gpu_api api) {
    return (unsigned)api < TMEM_GPU_API_COUNT ? api_names[api] : NULL;
}

uint64_t tmem__gpu_pow2_ceil(uint64_t x) {
    uint64_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

tmem_status tmem__gpu_advise(const tmem__backend *be, tmem__region *r, uint64_t off, uint64_t size,
                             tmem__advice advice) {
    (void)be, (void)r, (void)off, (void)size;
    if (advice == TMEM__ADVICE_VOLATILE || advice == TMEM__ADVICE_EMPTY) return tmem__err(TMEM_E_UNSUPPORTED);
    return TMEM_OK;
}

void tmem__gpu_retain(tmem_gpu *gpu) { atomic_fetch_add(&gpu->refs, 1); }

void tmem__gpu_unref(tmem_gpu *gpu) {
    if (atomic_fetch_sub(&gpu->refs, 1) != 1) return;
    gpu->ops->destroy(gpu);
    tmem__os_mutex_destroy(&gpu->lock);
    gpu->magic = 0;
    free(gpu);
}

bool tmem__gpu_fault_hit(tmem_gpu *gpu) {
    int64_t n = atomic_load(&gpu->fail_countdown);
    while (n > 0)
        if (atomic_compare_exchange_weak(&gpu->fail_countdown, &n, n - 1)) return n == 1;
    return false;
}

void tmem__gpu_fault_set(tmem_gpu *gpu, int64_t n) { atomic_store(&gpu->fail_countdown, n > 0 ? n : 0); }

void tmem__gpu_count(tmem_gpu *gpu, int64_t bytes) {
    tmem__os_mutex_lock(&gpu->lock);
    gpu->device_bytes = (uint64_t)((int64_t)gpu->device_bytes + bytes);
    tmem__os_mutex_unlock(&gpu->lock);
}

uint64_t tmem__gpu_device_bytes(tmem_gpu *gpu) {
    tmem__os_mutex_lock(&gpu->lock);
    uint64_t b = gpu->device_bytes;
    tmem__os_mutex_unlock(&gpu->lock);
    return b;
}

static bool gpu_valid(const tmem_gpu *gpu) { return gpu && gpu->magic == TMEM__GPU_MAGIC; }

tmem_status tmem_gpu_attach(tmem_context *ctx, const tmem_gpu_desc *desc, tmem_gpu **out) {
    if (out) *out = NULL;
    tmem_gpu_desc d = {0};
    if (desc) d = *desc;
    if (!ctx || !out || (unsigned)d.api >= TMEM_GPU_API_COUNT || (d.flags & ~(uint32_t)TMEM_GPU_FLAG_MASK) ||
        (d.chunk_size && !tmem__is_pow2(d.chunk_size)) || (d.api == TMEM_GPU_CUDA && d.native) ||
        ((d.flags & TMEM_GPU_HOST_IMPORT) && (d.flags & TMEM_GPU_EXPORTABLE) && d.api == TMEM_GPU_VULKAN))
        return tmem__err(TMEM_E_INVALID_ARG);
    if (!tmem_gpu_api_built(d.api)) return tmem__err(TMEM_E_UNSUPPORTED);
    tmem_gpu *gpu = calloc(1, sizeof *gpu);
    if (!gpu) return tmem__err(TMEM_E_NO_MEMORY);
    gpu->magic = TMEM__GPU_MAGIC;
    gpu->api = d.api;
    gpu->flags = d.flags;
    gpu->ctx = ctx;
    atomic_init(&gpu->refs, 1);
    atomic_init(&gpu->fail_countdown, 0);
    if (tmem__os_mutex_init(&gpu->lock, 0)) {
        free(gpu);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    tmem_status st = d.api == TMEM_GPU_VULKAN ? tmem__vk_open(gpu, &d) : tmem__cuda_open(gpu, &d);
    if (st != TMEM_OK) {
        tmem__os_mutex_destroy(&gpu->lock);
        free(gpu);
        return st;
    }
    for (unsigned p = 0; p < TMEM_PLACEMENT_COUNT && st == TMEM_OK; p++)
        if (gpu->placements & (1u << p)) st = tmem__context_set_backend(ctx, (tmem_placement)p, &gpu->backends[p]);
    if (st != TMEM_OK) {
        for (unsigned p = 0; p < TMEM_PLACEMENT_COUNT; p++)
            if ((gpu->placements & (1u << p)) && tmem__context_backend(ctx, (tmem_placement)p) == &gpu->backends[p])
                (void)tmem__context_set_backend(ctx, (tmem_placement)p,
                                                p < TMEM_PLACEMENT_DEVICE ? tmem__backend_host()
                                                                          : NULL);
        tmem__gpu_unref(gpu);
        return st;
    }
    *out = gpu;
    return TMEM_OK;
}

void tmem_gpu_release(tmem_gpu *gpu) {
    if (!gpu_valid(gpu)) return;
    /* Types created from now on must not reach a device nobody holds: give
     * the placements back (host placements to the host backend). Existing
     * pools keep their own reference. */
    for (unsigned p = 0; p < TMEM_PLACEMENT_COUNT; p++)
        if ((gpu->placements & (1u << p)) && tmem__context_backend(gpu->ctx, (tmem_placement)p) == &gpu->backends[p])
            (void)tmem__context_set_backend(gpu->ctx, (tmem_placement)p,
                                            p < TMEM_PLACEMENT_DEVICE ? tmem__backend_host()
                                                                      : NULL);
    tmem__gpu_unref(gpu);
}

tmem_status tmem_gpu_get_info(tmem_gpu *gpu, tmem_gpu_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!gpu_valid(gpu) || !out) return tmem__err(TMEM_E_INVALID_ARG);
    out->api = gpu->api;
    out->placements = gpu->placements;
    out->chunk_size = gpu->chunk;
    return gpu->ops->info(gpu, out);
}

/* The level of usage against budget with the context's fractions. */
static tmem_pressure level_of(uint64_t usage, uint64_t budget, float warning, float critical) {
    if (!budget) return TMEM_PRESSURE_NORMAL;
    double u = (double)usage, b = (double)budget;
    return u >= b * critical ? TMEM_PRESSURE_CRITICAL : u >= b * warning ? TMEM_PRESSURE_WARNING : TMEM_PRESSURE_NORMAL;
}

tmem_status tmem_gpu_poll_pressure(tmem_gpu *gpu, tmem_pressure *level) {
    if (level) *level = TMEM_PRESSURE_NORMAL;
    if (!gpu_valid(gpu)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_gpu_info gi;
    tmem_status st = tmem_gpu_get_info(gpu, &gi);
    if (st != TMEM_OK) return st;
    float w, c;
    tmem__pressure_fractions(gpu->ctx, &w, &c);
    tmem_pressure worst = TMEM_PRESSURE_NORMAL;
    bool any = false;
    for (uint32_t i = 0; i < gi.type_count; i++) {
        if (!gi.types[i].budget_from_driver) continue;
        any = true;
        tmem_pressure l = level_of(gi.types[i].usage, gi.types[i].budget, w, c);
        if (l > worst) worst = l;
    }
    if (any) tmem__pressure_set_device(gpu->ctx, worst);
    if (level) *level = tmem__pressure_level(gpu->ctx);
    return any ? TMEM_OK : tmem__err(TMEM_E_UNSUPPORTED);
}

tmem_status tmem_gpu_get_heaps(tmem_gpu *gpu, tmem_gpu_heap *heaps, uint32_t cap, uint32_t *count) {
    if (count) *count = 0;
    if (!gpu_valid(gpu) || !count || (!heaps && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    if (!gpu->ops->heaps) return tmem__err(TMEM_E_UNSUPPORTED);
    tmem_status st = gpu->ops->heaps(gpu, heaps, cap, count);
    if (st != TMEM_OK && st != TMEM_E_FULL) *count = 0;
    return st;
}

tmem_status tmem_gpu_export_fd(tmem_gpu *gpu, const tmem_heap *heap, uint64_t offset, uint64_t size, int *fd,
                               uint64_t *memory_offset, uint64_t *memory_size) {
    if (fd) *fd = -1;
    if (memory_offset) *memory_offset = 0;
    if (memory_size) *memory_size = 0;
    if (!gpu_valid(gpu) || !fd || !memory_offset || !memory_size) return tmem__err(TMEM_E_INVALID_ARG);
    if (!(gpu->flags & TMEM_GPU_EXPORTABLE) || !gpu->ops->export_fd) return tmem__err(TMEM_E_UNSUPPORTED);
    tmem_device_span span;
    tmem_status st = tmem_heap_device_span(heap, offset, size, &span);
    if (st != TMEM_OK) return st;
    const tmem__backend *be = tmem__heap_type(heap)->pool.backend;
    if (!be || be->user != gpu) return tmem__err(TMEM_E_UNSUPPORTED);
    if (span.offset + size > span.memory_size) return tmem__err(TMEM_E_ALIGNMENT); /* two objects */
    st = gpu->ops->export_fd(gpu, &span, fd);
    if (st == TMEM_OK) {
        *memory_offset = span.offset;
        *memory_size = span.memory_size;
    }
    return st;
}

#ifndef TMEM_HAVE_VULKAN
tmem_status tmem__vk_open(tmem_gpu *gpu, const tmem_gpu_desc *desc) {
    (void)gpu, (void)desc;
    return tmem__err(TMEM_E_UNSUPPORTED);
}
#endif
#ifndef TMEM_HAVE_CUDA
tmem_status tmem__cuda_open(tmem_gpu *gpu, const tmem_gpu_desc *desc) {
    (void)gpu, (void)desc;
    return tmem__err(TMEM_E_UNSUPPORTED);
}
#endif

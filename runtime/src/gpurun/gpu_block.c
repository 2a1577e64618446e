/* gpu_block.c: one role's device memory as one binding. Each block is a
 * device type of its own, reserved at the block's size, so that its pool
 * is one VkDeviceMemory (the library's Vulkan pools commit whole chunks:
 * a type smaller than the gpu's chunk gets one chunk of the next power of
 * two), and a LINEAR heap over all of it with one allocation; a VkBuffer
 * covers the heap. The type goes with the block, so the typed accounting
 * (tmem_role_get_stats: device_in_use) shows exactly what the role holds. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "gpurun/gpu_internal.h"

static atomic_uint block_serial;

tmem_status tmrt__gpu_block_create(tmem_context *ctx, tmem_gpu *gpu, const char *type_name, tmem_placement placement,
                                   tmem_lifetime lifetime, tmem_role role, const char *name, uint64_t size,
                                   tmrt_gpu_block *out, tmrt_error *err) {
    memset(out, 0, sizeof *out);
    size = (size + 255) / 256 * 256;
    if (!size) size = 256;
    char tn[64];
    snprintf(tn, sizeof tn, "/memory/%.40s-%u", type_name, atomic_fetch_add(&block_serial, 1u));
    tmem_type_desc td = {0};
    td.name = tn;
    td.placement = placement;
    td.lifetime = lifetime;
    td.reserve = size;
    tmem_type *t;
    tmem_status st = tmem_type_create(ctx, &td, &t);
    out->type = t;
    if (st) return tmrt__fail(err, st, "device type for %s (%llu bytes): %s", name, (unsigned long long)size,
                              tmem_strerror(st));
    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_LINEAR;
    hd.type = t;
    hd.role = role;
    hd.size = size;
    hd.flags = TMEM_HEAP_COMMIT_ALL;
    hd.name = name;
    tmem_alloc_desc ad = {0};
    ad.size = size;
    ad.alignment = 256;
    ad.name = name;
    ad.role = -1;
    tmem_alloc_info ai = {0};
    if ((st = tmem_heap_create(ctx, &hd, &out->heap))) {
        tmrt__fail(err, st, "device heap for %s (%llu bytes): %s", name, (unsigned long long)size, tmem_strerror(st));
        goto fail;
    }
    if ((st = tmem_heap_alloc_ex(out->heap, &ad, &ai))) {
        tmrt__fail(err, st, "device memory for %s (%llu bytes): %s", name, (unsigned long long)size,
                   tmem_strerror(st));
        goto fail;
    }
    if ((st = tmem_vk_buffer_create(gpu, out->heap, ai.offset, size,
                                    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                        VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    &out->buf))) {
        tmrt__fail(err, st, "VkBuffer for %s: %s", name, tmem_strerror(st));
        goto fail;
    }
    if (placement == TMEM_PLACEMENT_DEVICE_HOST_VISIBLE) {
        tmem_device_span sp;
        if ((st = tmem_heap_device_span(out->heap, ai.offset, size, &sp)) || !sp.host) {
            if (!st) st = TMEM_E_UNSUPPORTED;
            tmrt__fail(err, st, "host view of %s: %s", name, tmem_strerror(st));
            goto fail;
        }
        out->host = sp.host;
    }
    out->size = size;
    return TMEM_OK;
fail:
    tmrt__gpu_block_destroy(gpu, out);
    return st;
}

void tmrt__gpu_block_destroy(tmem_gpu *gpu, tmrt_gpu_block *b) {
    if (b->buf) tmem_vk_buffer_destroy(gpu, b->buf);
    tmem_heap_destroy(b->heap);
    if (b->type) (void)!tmem_type_destroy(b->type);
    memset(b, 0, sizeof *b);
}

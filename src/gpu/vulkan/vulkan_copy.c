/*
 * Device-side copies and fills of pool ranges (backend.h's copy / fill
 * hooks): what lets the KV cache fork, copy on write and snapshot blocks
 * that have no host address. A range is split where it crosses a chunk of
 * either pool; each piece becomes one vkCmdCopyBuffer (vkCmdFillBuffer)
 * region between transient buffers spanning whole chunks (bound at offset
 * 0, so no alignment is asked of the caller's offsets). All pieces of one
 * call go in one command buffer, closed by a barrier that makes the
 * transfer writes visible to later shader, transfer and host accesses; the
 * call waits for it.
 * Fault injection (tmem__gpu_fault_hit) sits before each buffer creation,
 * each bind and the submission, so tests fail every device call in turn.
 */
#include <string.h>
#include "gpu/vulkan/vulkan_internal.h"

#define PIECES 16 /* copy regions per submission */

/* One chunk's transient buffer. */
typedef struct chunk_buf {
    const tmem__region *r;
    uint64_t chunk;
    VkBuffer buf;
} chunk_buf;

typedef struct batch {
    tmem_gpu *gpu;
    chunk_buf bufs[2 * PIECES];
    uint32_t nbufs;
    VkBuffer src[PIECES], dst[PIECES];
    VkBufferCopy regions[PIECES];
    uint32_t value;
    uint32_t n;
    bool fill;
} batch;

static void batch_free(batch *b) {
    tmem__vk *vk = tmem__vk_of(b->gpu);
    for (uint32_t i = 0; i < b->nbufs; i++) vk->fn.vkDestroyBuffer(vk->device, b->bufs[i].buf, NULL);
    b->nbufs = 0;
    b->n = 0;
}

/* The buffer over chunk `c` of region `r`, made on first use. */
static tmem_status buffer_of(batch *b, const tmem__region *r, uint64_t c, VkBuffer *out) {
    for (uint32_t i = 0; i < b->nbufs; i++)
        if (b->bufs[i].r == r && b->bufs[i].chunk == c) {
            *out = b->bufs[i].buf;
            return TMEM_OK;
        }
    tmem_gpu *gpu = b->gpu;
    tmem__vk *vk = tmem__vk_of(gpu);
    const tmem__vk_region *vr = (const tmem__vk_region *)(uintptr_t)r->handle;
    if (c >= vr->nchunks) return tmem__err(TMEM_E_INVALID_ARG);
    if (!vr->chunks[c]) return tmem__err(TMEM_E_STATE);
    VkExternalMemoryBufferCreateInfo ext = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                            .handleTypes = tmem__vk_region_handle_types(gpu, r)};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = vr->chunk,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .pNext = ext.handleTypes ? &ext : NULL};
    VkBuffer buf;
    VkResult res = tmem__gpu_fault_hit(gpu) ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                                            : vk->fn.vkCreateBuffer(vk->device, &bci, NULL, &buf);
    if (res != VK_SUCCESS) return tmem__vk_status(res);
    res = tmem__gpu_fault_hit(gpu) ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                                   : vk->fn.vkBindBufferMemory(vk->device, buf, vr->chunks[c], 0);
    if (res != VK_SUCCESS) {
        vk->fn.vkDestroyBuffer(vk->device, buf, NULL);
        return tmem__vk_status(res);
    }
    b->bufs[b->nbufs++] = (chunk_buf){r, c, buf};
    *out = buf;
    return TMEM_OK;
}

static void record(tmem__vk *vk, VkCommandBuffer cb, void *arg) {
    const batch *b = arg;
    for (uint32_t i = 0; i < b->n; i++) {
        if (b->fill)
            vk->fn.vkCmdFillBuffer(cb, b->dst[i], b->regions[i].dstOffset, b->regions[i].size, b->value);
        else
            vk->fn.vkCmdCopyBuffer(cb, b->src[i], b->dst[i], 1, &b->regions[i]);
    }
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_HOST_READ_BIT};
    vk->fn.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                                    VK_PIPELINE_STAGE_HOST_BIT,
                                0, 1, &mb, 0, NULL, 0, NULL);
}

static tmem_status flush(batch *b) {
    tmem_status st = TMEM_OK;
    if (b->n) {
        st = tmem__gpu_fault_hit(b->gpu) ? tmem__vk_status(VK_ERROR_DEVICE_LOST)
                                         : tmem__vk_submit(tmem__vk_of(b->gpu), record, b);
    }
    batch_free(b);
    return st;
}

static uint64_t chunk_of(const tmem__region *r) { return ((const tmem__vk_region *)(uintptr_t)r->handle)->chunk; }

/* Split [dst_off, +size) x [src_off, +size) at chunk boundaries of both. */
static tmem_status run(tmem_gpu *gpu, const tmem__region *dst, uint64_t dst_off, const tmem__region *src,
                       uint64_t src_off, uint64_t size, bool fill, uint32_t value) {
    batch b;
    memset(&b, 0, sizeof b);
    b.gpu = gpu, b.fill = fill, b.value = value;
    uint64_t dc = chunk_of(dst), sc = src ? chunk_of(src) : UINT64_MAX;
    tmem_status st = TMEM_OK;
    while (size && st == TMEM_OK) {
        uint64_t n = size, room = dc - dst_off % dc;
        if (room < n) n = room;
        if (src && (room = sc - src_off % sc) < n) n = room;
        VkBuffer d, s = VK_NULL_HANDLE;
        st = buffer_of(&b, dst, dst_off / dc, &d);
        if (st == TMEM_OK && src) st = buffer_of(&b, src, src_off / sc, &s);
        if (st != TMEM_OK) break;
        b.dst[b.n] = d, b.src[b.n] = s;
        b.regions[b.n++] = (VkBufferCopy){src ? src_off % sc : 0, dst_off % dc, n};
        dst_off += n, src_off += n, size -= n;
        if (b.n == PIECES || b.nbufs + 2 > 2 * PIECES) st = flush(&b);
    }
    if (st == TMEM_OK) return flush(&b);
    batch_free(&b);
    return st;
}

tmem_status tmem__vk_copy(const tmem__backend *be, const tmem__region *dst, uint64_t dst_off,
                          const tmem__region *src, uint64_t src_off, uint64_t size) {
    return run(tmem__gpu_of(be), dst, dst_off, src, src_off, size, false, 0);
}

tmem_status tmem__vk_fill(const tmem__backend *be, const tmem__region *r, uint64_t off, uint64_t size,
                          uint32_t value) {
    return run(tmem__gpu_of(be), r, off, NULL, 0, size, true, value);
}

/* vk_record.c: the recorder: one command buffer, the descriptor sets of
 * its dispatches (from its own pool, sized at create: nothing is allocated
 * while recording), a fence, optional timestamps; barriers only where the
 * caller asks, two in a row recorded as one; the first error sticks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/vk_internal.h"

tmem_status tmrt__vk_rec_fail(tmrt_vk_rec *rec, tmem_status st, const char *fmt, ...) {
    if (rec->status != TMEM_OK) return rec->status;
    rec->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rec->error, sizeof rec->error, fmt, ap);
    va_end(ap);
    return st;
}

bool tmrt__vk_rec_ok(tmrt_vk_rec *rec) {
    if (rec->status != TMEM_OK) return false;
    if (!rec->recording) {
        tmrt__vk_rec_fail(rec, TMEM_E_STATE, "recording outside tmrt__vk_begin/end");
        return false;
    }
    return true;
}

static tmem_status vk_fail(tmrt_vk_rec *rec, VkResult r, const char *call) {
    return tmrt__vk_rec_fail(rec, tmrt__vk_status(rec->vk, r), "%s: %s", call, tmrt__vk_result_name(r));
}

tmem_status tmrt__vk_rec_create(tmrt_vk *vk, const tmrt_vk_rec_desc *desc, tmrt_vk_rec **out) {
    if (out) *out = NULL;
    tmrt_vk_rec_desc d = {0};
    if (desc) d = *desc;
    if (!vk || !out || d.max_dispatches > (1u << 20) || d.max_timestamps > 4096) return TMEM_E_INVALID_ARG;
    if (d.max_timestamps && !vk->lim.timestamps) return TMEM_E_UNSUPPORTED;
    tmrt_vk_rec *rec = calloc(1, sizeof *rec);
    if (!rec) return TMEM_E_NO_MEMORY;
    rec->vk = vk;
    rec->max_dispatches = d.max_dispatches ? d.max_dispatches : 1024;
    rec->max_timestamps = d.max_timestamps;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .queueFamilyIndex = vk->queue_family};
    VkResult r = TMRT_VK(vk, vk->fn.vkCreateCommandPool(vk->device, &pci, NULL, &rec->cmd_pool));
    if (r == VK_SUCCESS) {
        VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                           .commandPool = rec->cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                           .commandBufferCount = 1};
        r = TMRT_VK(vk, vk->fn.vkAllocateCommandBuffers(vk->device, &cai, &rec->cb));
    }
    if (r == VK_SUCCESS) {
        VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, rec->max_dispatches * TMRT_VK_MAX_BINDINGS};
        VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = rec->max_dispatches, .poolSizeCount = 1, .pPoolSizes = &ps};
        r = TMRT_VK(vk, vk->fn.vkCreateDescriptorPool(vk->device, &dpi, NULL, &rec->desc_pool));
    }
    if (r == VK_SUCCESS) {
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        r = TMRT_VK(vk, vk->fn.vkCreateFence(vk->device, &fci, NULL, &rec->fence));
    }
    if (r == VK_SUCCESS && rec->max_timestamps) {
        VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = rec->max_timestamps};
        r = TMRT_VK(vk, vk->fn.vkCreateQueryPool(vk->device, &qci, NULL, &rec->queries));
    }
    if (r != VK_SUCCESS) {
        tmem_status st = tmrt__vk_status(vk, r);
        tmrt__vk_rec_destroy(rec);
        return st;
    }
    *out = rec;
    return TMEM_OK;
}

void tmrt__vk_rec_destroy(tmrt_vk_rec *rec) {
    if (!rec) return;
    tmrt_vk *vk = rec->vk;
    /* a lost device returns from the wait in finite time (the spec) */
    if (rec->in_flight) (void)vk->fn.vkWaitForFences(vk->device, 1, &rec->fence, VK_TRUE, UINT64_MAX);
    if (rec->queries) vk->fn.vkDestroyQueryPool(vk->device, rec->queries, NULL);
    if (rec->fence) vk->fn.vkDestroyFence(vk->device, rec->fence, NULL);
    if (rec->desc_pool) vk->fn.vkDestroyDescriptorPool(vk->device, rec->desc_pool, NULL);
    if (rec->cmd_pool) vk->fn.vkDestroyCommandPool(vk->device, rec->cmd_pool, NULL); /* frees cb */
    free(rec);
}

tmem_status tmrt__vk_begin(tmrt_vk_rec *rec) {
    tmrt_vk *vk = rec->vk;
    if (rec->in_flight) {
        tmem_status st = tmrt__vk_wait(rec, UINT64_MAX);
        if (st != TMEM_OK) return st;
    }
    rec->status = TMEM_OK;
    rec->error[0] = 0;
    rec->recording = rec->ended = rec->ran = rec->dirty = false;
    if (vk->lost) return tmrt__vk_rec_fail(rec, TMEM_E_OS, "begin: the device was lost");
    rec->dispatches = rec->barriers = 0;
    rec->bound = VK_NULL_HANDLE;
    VkResult r = TMRT_VK(vk, vk->fn.vkResetCommandPool(vk->device, rec->cmd_pool, 0));
    if (r == VK_SUCCESS) r = TMRT_VK(vk, vk->fn.vkResetDescriptorPool(vk->device, rec->desc_pool, 0));
    if (r == VK_SUCCESS) {
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        r = TMRT_VK(vk, vk->fn.vkBeginCommandBuffer(rec->cb, &bi));
    }
    if (r != VK_SUCCESS) return vk_fail(rec, r, "begin recording");
    rec->recording = true;
    if (rec->queries) vk->fn.vkCmdResetQueryPool(rec->cb, rec->queries, 0, rec->max_timestamps);
    return TMEM_OK;
}

static void memory_barrier(tmrt_vk_rec *rec, VkPipelineStageFlags src, VkAccessFlags sa, VkPipelineStageFlags dst,
                           VkAccessFlags da) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = sa, .dstAccessMask = da};
    rec->vk->fn.vkCmdPipelineBarrier(rec->cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
    rec->barriers++;
}

#define WORK_STAGES (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT)
#define WORK_ACCESS                                                                                         \
    (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |                  \
     VK_ACCESS_TRANSFER_WRITE_BIT)

void tmrt__vk_barrier(tmrt_vk_rec *rec) {
    if (!tmrt__vk_rec_ok(rec) || !rec->dirty) return;
    memory_barrier(rec, WORK_STAGES, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, WORK_STAGES,
                   WORK_ACCESS);
    rec->dirty = false;
}

void tmrt__vk_barrier_host(tmrt_vk_rec *rec) {
    if (!tmrt__vk_rec_ok(rec)) return;
    memory_barrier(rec, WORK_STAGES, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT | WORK_STAGES, VK_ACCESS_HOST_READ_BIT | WORK_ACCESS);
    rec->dirty = false;
}

void tmrt__vk_copy(tmrt_vk_rec *rec, tmrt_vk_buf src, tmrt_vk_buf dst, uint64_t bytes) {
    if (!tmrt__vk_rec_ok(rec)) return;
    if (!src.buffer || !dst.buffer || !bytes || bytes > src.range || bytes > dst.range) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "copy: %llu bytes past a range", (unsigned long long)bytes);
        return;
    }
    VkBufferCopy c = {src.offset, dst.offset, bytes};
    rec->vk->fn.vkCmdCopyBuffer(rec->cb, src.buffer, dst.buffer, 1, &c);
    rec->dirty = true;
}

void tmrt__vk_fill(tmrt_vk_rec *rec, tmrt_vk_buf dst, uint64_t bytes, uint32_t value) {
    if (!tmrt__vk_rec_ok(rec)) return;
    if (!dst.buffer || !bytes || bytes % 4 || dst.offset % 4 || bytes > dst.range) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "fill: %llu bytes (a multiple of 4 within the range)",
                          (unsigned long long)bytes);
        return;
    }
    rec->vk->fn.vkCmdFillBuffer(rec->cb, dst.buffer, dst.offset, bytes, value);
    rec->dirty = true;
}

void tmrt__vk_timestamp(tmrt_vk_rec *rec, uint32_t slot) {
    if (!tmrt__vk_rec_ok(rec)) return;
    if (slot >= rec->max_timestamps) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "timestamp slot %u of %u", slot, rec->max_timestamps);
        return;
    }
    rec->vk->fn.vkCmdWriteTimestamp(rec->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, rec->queries, slot);
}

tmem_status tmrt__vk_end(tmrt_vk_rec *rec) {
    if (rec->ended && rec->status == TMEM_OK) return TMEM_OK;
    if (!rec->recording && rec->status == TMEM_OK)
        return tmrt__vk_rec_fail(rec, TMEM_E_STATE, "end without begin");
    if (rec->recording) {
        rec->recording = false;
        VkResult r = TMRT_VK(rec->vk, rec->vk->fn.vkEndCommandBuffer(rec->cb));
        if (r != VK_SUCCESS) vk_fail(rec, r, "vkEndCommandBuffer");
    }
    rec->ended = rec->status == TMEM_OK;
    return rec->status;
}

tmem_status tmrt__vk_submit(tmrt_vk_rec *rec) {
    tmrt_vk *vk = rec->vk;
    if (rec->status != TMEM_OK) return rec->status;
    if (!rec->ended || rec->in_flight) return TMEM_E_STATE;
    if (vk->lost) return tmrt__vk_rec_fail(rec, TMEM_E_OS, "submit: the device was lost");
    VkResult r = TMRT_VK(vk, vk->fn.vkResetFences(vk->device, 1, &rec->fence));
    if (r != VK_SUCCESS) return vk_fail(rec, r, "vkResetFences");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &rec->cb};
    tmem_status st = tmrt__vk_fault_now(vk) ? tmrt__vk_status(vk, vk->fail_result)
                                             : tmem_vk_queue_submit(vk->gpu, 1, &si, rec->fence);
    if (st != TMEM_OK) return tmrt__vk_rec_fail(rec, st, "vkQueueSubmit: %s", tmem_status_name(st));
    rec->in_flight = true;
    return TMEM_OK;
}

tmem_status tmrt__vk_wait(tmrt_vk_rec *rec, uint64_t timeout_ns) {
    tmrt_vk *vk = rec->vk;
    if (!rec->in_flight) return rec->status;
    VkResult r = TMRT_VK(vk, vk->fn.vkWaitForFences(vk->device, 1, &rec->fence, VK_TRUE, timeout_ns));
    if (r == VK_TIMEOUT) return TMEM_E_LIMIT;
    /* a failed wait leaves the work in flight (begin and destroy wait
     * again) unless the device is gone */
    if (r != VK_SUCCESS && !vk->lost) return vk_fail(rec, r, "vkWaitForFences");
    rec->in_flight = r != VK_SUCCESS; /* lost: destroy still waits (it returns) */
    if (r != VK_SUCCESS) return vk_fail(rec, r, "vkWaitForFences");
    rec->ran = true;
    return TMEM_OK;
}

tmem_status tmrt__vk_run(tmrt_vk_rec *rec) {
    tmem_status st = tmrt__vk_end(rec);
    if (st == TMEM_OK) st = tmrt__vk_submit(rec);
    if (st == TMEM_OK) st = tmrt__vk_wait(rec, UINT64_MAX);
    return st;
}

tmem_status tmrt__vk_timestamps(tmrt_vk_rec *rec, double *ns, uint32_t n) {
    tmrt_vk *vk = rec->vk;
    if (!ns || n > rec->max_timestamps || !n) return TMEM_E_INVALID_ARG;
    if (!rec->ran) return TMEM_E_STATE;
    uint64_t t[64], base = 0;
    for (uint32_t i0 = 0; i0 < n; i0 += 64) {
        uint32_t c = n - i0 < 64 ? n - i0 : 64;
        VkResult r = TMRT_VK(vk, vk->fn.vkGetQueryPoolResults(vk->device, rec->queries, i0, c, sizeof t, t, 8,
                                                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        if (r != VK_SUCCESS) return vk_fail(rec, r, "vkGetQueryPoolResults");
        if (i0 == 0) base = t[0];
        for (uint32_t i = 0; i < c; i++) ns[i0 + i] = (double)(t[i] - base) * vk->lim.timestamp_ns;
    }
    return TMEM_OK;
}

tmem_status tmrt__vk_rec_status(const tmrt_vk_rec *rec) { return rec->status; }
const char *tmrt__vk_rec_error(const tmrt_vk_rec *rec) { return rec->error; }
uint32_t tmrt__vk_rec_dispatches(const tmrt_vk_rec *rec) { return rec->dispatches; }
uint32_t tmrt__vk_rec_barriers(const tmrt_vk_rec *rec) { return rec->barriers; }

/* ---- dispatch ---- */

bool tmrt__vk_buf_ok(tmrt_vk_rec *rec, const char *op, const char *what, tmrt_vk_buf b) {
    const tmrt_vk_limits *l = &rec->vk->lim;
    if (b.buffer && b.range && b.offset % l->storage_align == 0 && b.range <= l->max_storage_range) return true;
    tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG,
                      "%s: binding %s (offset %llu, range %llu): NULL, empty, offset not a multiple of %llu or "
                      "range past %llu",
                      op, what, (unsigned long long)b.offset, (unsigned long long)b.range,
                      (unsigned long long)l->storage_align, (unsigned long long)l->max_storage_range);
    return false;
}

void tmrt__vk_dispatch3(tmrt_vk_rec *rec, tmrt_vk_kernel k, const tmrt_vk_buf *bufs, uint32_t nb, const void *push,
                        uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    tmrt_vk *vk = rec->vk;
    if (!tmrt__vk_rec_ok(rec) || !gx || !gy || !gz) return;
    const tmrt_vk_kernel_info *ki = &tmrt__vk_kernels[k];
    if (nb != ki->bindings || push_bytes > TMRT_VK_PUSH_BYTES || gx > vk->lim.max_groups[0] ||
        gy > vk->lim.max_groups[1] || gz > vk->lim.max_groups[2]) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %u bindings (wants %u), grid %ux%ux%u", ki->name, nb,
                          ki->bindings, gx, gy, gz);
        return;
    }
    if (rec->dispatches >= rec->max_dispatches) {
        tmrt__vk_rec_fail(rec, TMEM_E_FULL, "%s: more than the recorder's %u dispatches", ki->name,
                          rec->max_dispatches);
        return;
    }
    VkPipeline pl = tmrt__vk_pipeline(rec, k);
    if (!pl) return;
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = rec->desc_pool, .descriptorSetCount = 1,
                                       .pSetLayouts = &vk->set_layout[nb]};
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkResult r = TMRT_VK(vk, vk->fn.vkAllocateDescriptorSets(vk->device, &dai, &set));
    if (r != VK_SUCCESS) {
        vk_fail(rec, r, "vkAllocateDescriptorSets");
        return;
    }
    VkDescriptorBufferInfo bi[TMRT_VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[TMRT_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < nb; i++) {
        bi[i] = (VkDescriptorBufferInfo){bufs[i].buffer, bufs[i].offset, bufs[i].range};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
                                      .dstBinding = i, .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &bi[i]};
    }
    vk->fn.vkUpdateDescriptorSets(vk->device, nb, w, 0, NULL);
    if (rec->bound != pl) vk->fn.vkCmdBindPipeline(rec->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl);
    rec->bound = pl;
    VkPipelineLayout lay = vk->layout[nb];
    vk->fn.vkCmdBindDescriptorSets(rec->cb, VK_PIPELINE_BIND_POINT_COMPUTE, lay, 0, 1, &set, 0, NULL);
    uint8_t pc[TMRT_VK_PUSH_BYTES] = {0};
    if (push_bytes) memcpy(pc, push, push_bytes);
    vk->fn.vkCmdPushConstants(rec->cb, lay, VK_SHADER_STAGE_COMPUTE_BIT, 0, TMRT_VK_PUSH_BYTES, pc);
    vk->fn.vkCmdDispatch(rec->cb, gx, gy, gz);
    rec->dispatches++;
    rec->dirty = true;
}

void tmrt__vk_dispatch(tmrt_vk_rec *rec, tmrt_vk_kernel k, const tmrt_vk_buf *bufs, uint32_t nb, const void *push,
                       uint32_t push_bytes, uint64_t groups) {
    uint64_t mx = rec->vk->lim.max_groups[0];
    uint64_t gx = groups < mx ? groups : mx, gy = gx ? tmrt__vk_div_up(groups, gx) : 0;
    if (gy > rec->vk->lim.max_groups[1]) {
        tmrt__vk_rec_fail(rec, TMEM_E_INVALID_ARG, "%s: %llu workgroups", tmrt__vk_kernels[k].name,
                          (unsigned long long)groups);
        return;
    }
    tmrt__vk_dispatch3(rec, k, bufs, nb, push, push_bytes, (uint32_t)gx, (uint32_t)gy, 1);
}

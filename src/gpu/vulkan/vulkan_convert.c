/*
 * The NV12 -> CHW compute conversion on Vulkan: the SPIR-V of
 * shaders/nv12_to_chw.comp (compiled at build time when glslangValidator is
 * found, else the committed nv12_to_chw.spv.h), fed the CPU conversion's own
 * taps and coefficients (src/surface/convert.c), so the two agree bit for
 * bit. The taps go in a small host-visible buffer of the backend's own,
 * outside every pool (scratch of this call, freed before it returns).
 */
#include <stdlib.h>
#include <string.h>
#include "gpu/vulkan/vulkan_internal.h"
#include "surface/internal.h"
#include "nv12_to_chw.spv.h"
#include "nv12_to_chw_f32.spv.h"

typedef struct convert_push {
    uint32_t y_offset, y_bpr, uv_offset, uv_bpr;
    uint32_t width, height, dst_index;
    uint32_t map[3];
    float yuv[6];
    float sub[3], div[3];
} convert_push;

static tmem_status build_pipeline(tmem__vk *vk) {
    tmem__vk_convert *c = &vk->conv;
    if (c->pipeline) return TMEM_OK;
    /* exact division where the device has float64 (the shader says why) */
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = vk->has_f64 ? sizeof tmem__spv_nv12_to_chw
                                                            : sizeof tmem__spv_nv12_to_chw_f32,
                                    .pCode = vk->has_f64 ? tmem__spv_nv12_to_chw : tmem__spv_nv12_to_chw_f32};
    VkResult r = vk->fn.vkCreateShaderModule(vk->device, &smi, NULL, &c->module);
    VkDescriptorSetLayoutBinding b[3];
    for (uint32_t i = 0; i < 3; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dli = {.sType =
                                               VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 3,
                                           .pBindings = b};
    if (r == VK_SUCCESS) r = vk->fn.vkCreateDescriptorSetLayout(vk->device, &dli, NULL, &c->set_layout);
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(convert_push)};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                      .pSetLayouts = &c->set_layout, .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &pr};
    if (r == VK_SUCCESS) r = vk->fn.vkCreatePipelineLayout(vk->device, &pli, NULL, &c->layout);
    VkComputePipelineCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = c->module, .pName = "main"},
        .layout = c->layout};
    if (r == VK_SUCCESS) r = vk->fn.vkCreateComputePipelines(vk->device, VK_NULL_HANDLE, 1, &cpi, NULL, &c->pipeline);
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3 * 64}; /* 64 conversions at once */
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT, .maxSets = 64,
                                      .poolSizeCount = 1, .pPoolSizes = &ps};
    if (r == VK_SUCCESS) r = vk->fn.vkCreateDescriptorPool(vk->device, &dpi, NULL, &c->pool);
    if (r != VK_SUCCESS) tmem__vk_convert_destroy(vk);
    return tmem__vk_status(r);
}

void tmem__vk_convert_destroy(tmem__vk *vk) {
    tmem__vk_convert *c = &vk->conv;
    if (c->pool) vk->fn.vkDestroyDescriptorPool(vk->device, c->pool, NULL);
    if (c->pipeline) vk->fn.vkDestroyPipeline(vk->device, c->pipeline, NULL);
    if (c->layout) vk->fn.vkDestroyPipelineLayout(vk->device, c->layout, NULL);
    if (c->set_layout) vk->fn.vkDestroyDescriptorSetLayout(vk->device, c->set_layout, NULL);
    if (c->module) vk->fn.vkDestroyShaderModule(vk->device, c->module, NULL);
    if (c->fence) vk->fn.vkDestroyFence(vk->device, c->fence, NULL);
    if (c->cmd_pool) vk->fn.vkDestroyCommandPool(vk->device, c->cmd_pool, NULL);
    memset(c, 0, sizeof *c);
}

/* A host-visible scratch buffer holding `bytes` copied from `data`. */
typedef struct scratch {
    VkBuffer buffer;
    VkDeviceMemory memory;
} scratch;

static tmem_status scratch_create(tmem__vk *vk, const void *data, uint64_t bytes, scratch *out) {
    uint32_t t = vk->type_of[TMEM_PLACEMENT_DEVICE_HOST_VISIBLE];
    if (t == UINT32_MAX) return tmem__err(TMEM_E_UNSUPPORTED);
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = bytes,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VkResult r = vk->fn.vkCreateBuffer(vk->device, &bci, NULL, &out->buffer);
    VkMemoryRequirements req = {0};
    if (r == VK_SUCCESS) vk->fn.vkGetBufferMemoryRequirements(vk->device, out->buffer, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                               .memoryTypeIndex = t};
    if (r == VK_SUCCESS) r = vk->fn.vkAllocateMemory(vk->device, &ai, NULL, &out->memory);
    void *map = NULL;
    if (r == VK_SUCCESS) r = vk->fn.vkMapMemory(vk->device, out->memory, 0, VK_WHOLE_SIZE, 0, &map);
    if (r == VK_SUCCESS) {
        memcpy(map, data, (size_t)bytes);
        vk->fn.vkUnmapMemory(vk->device, out->memory); /* coherent: visible at submit */
        r = vk->fn.vkBindBufferMemory(vk->device, out->buffer, out->memory, 0);
    }
    return tmem__vk_status(r);
}

static void scratch_destroy(tmem__vk *vk, scratch *s) {
    if (s->buffer) vk->fn.vkDestroyBuffer(vk->device, s->buffer, NULL);
    if (s->memory) vk->fn.vkFreeMemory(vk->device, s->memory, NULL);
}

typedef struct convert_job {
    convert_push push;
    VkDescriptorSet set;
} convert_job;

static void record_convert(tmem__vk *vk, VkCommandBuffer cb, void *arg) {
    const convert_job *j = arg;
    /* The host wrote the surface (and the taps) before this submission:
     * queue submission makes host writes visible to the device. Earlier
     * device work on dst (an alias) must finish before the shader writes. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT};
    vk->fn.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    vk->fn.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->conv.pipeline);
    vk->fn.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->conv.layout, 0, 1, &j->set, 0, NULL);
    vk->fn.vkCmdPushConstants(cb, vk->conv.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof j->push, &j->push);
    vk->fn.vkCmdDispatch(cb, (j->push.width + 7) / 8, (j->push.height + 7) / 8, 1);
    /* The results are visible to later device work and to host reads. */
    VkMemoryBarrier after = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                             .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT |
                                              VK_ACCESS_TRANSFER_READ_BIT};
    vk->fn.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                    VK_PIPELINE_STAGE_TRANSFER_BIT,
                                0, 1, &after, 0, NULL, 0, NULL);
}

tmem_status tmem_vk_convert_nv12(tmem_gpu *gpu, const tmem_vk_surface_memory *src, const tmem_convert_desc *desc,
                                 VkBuffer dst, uint64_t dst_offset, uint32_t width, uint32_t height) {
    tmem_convert_desc d = {0};
    if (desc) d = *desc;
    if (!gpu || gpu->magic != TMEM__GPU_MAGIC || gpu->api != TMEM_GPU_VULKAN || !src || !src->buffer || !dst)
        return tmem__err(TMEM_E_INVALID_ARG);
    const tmem_surface_layout *l = &src->layout;
    if (l->format != TMEM_FORMAT_NV12 || !width || !height || width > TMEM_SURFACE_MAX_DIM ||
        height > TMEM_SURFACE_MAX_DIM || dst_offset % 4 || (unsigned)d.filter >= TMEM_RESIZE_COUNT ||
        (unsigned)d.matrix >= TMEM_YUV_COUNT || (d.flags & ~(uint32_t)(TMEM_CONVERT_BGR | TMEM_CONVERT_REFERENCE)))
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem_rect r = d.src_rect;
    if (!r.x && !r.y && !r.width && !r.height) r = (tmem_rect){0, 0, l->width, l->height};
    if (!r.width || !r.height || r.x >= l->width || r.y >= l->height || r.width > l->width - r.x ||
        r.height > l->height - r.y)
        return tmem__err(TMEM_E_INVALID_ARG);
    convert_job job = {0};
    float sub[4], div[4];
    tmem_status st = tmem__convert_normalise(&d, sub, div);
    if (st != TMEM_OK) return st;
    tmem__vk *vk = tmem__vk_of(gpu);
    convert_push *p = &job.push;
    p->y_offset = (uint32_t)l->planes[0].offset, p->y_bpr = (uint32_t)l->planes[0].bytes_per_row;
    p->uv_offset = (uint32_t)l->planes[1].offset, p->uv_bpr = (uint32_t)l->planes[1].bytes_per_row;
    p->width = width, p->height = height, p->dst_index = (uint32_t)(dst_offset / 4);
    bool bgr = d.flags & TMEM_CONVERT_BGR;
    p->map[0] = bgr ? 2 : 0, p->map[1] = 1, p->map[2] = bgr ? 0 : 2;
    tmem__convert_yuv(d.matrix, p->yuv);
    for (int c = 0; c < 3; c++) p->sub[c] = sub[c], p->div[c] = div[c];
    /* taps: x then y, three words each */
    uint64_t ntaps = (uint64_t)width + height, bytes = ntaps * 3 * sizeof(uint32_t);
    uint32_t *taps = malloc((size_t)bytes);
    if (!taps) return tmem__err(TMEM_E_NO_MEMORY);
    for (uint32_t i = 0; i < ntaps; i++) {
        bool x = i < width;
        float w;
        tmem__convert_tap(x ? i : i - width, x ? width : height, x ? r.x : r.y, x ? r.width : r.height, d.filter,
                          &taps[3 * i], &taps[3 * i + 1], &w);
        memcpy(&taps[3 * i + 2], &w, sizeof w);
    }
    scratch tap_buf = {0};
    tmem__os_mutex_lock(&vk->submit_lock);
    st = build_pipeline(vk);
    tmem__os_mutex_unlock(&vk->submit_lock);
    if (st == TMEM_OK) st = scratch_create(vk, taps, bytes, &tap_buf);
    free(taps);
    VkResult res = VK_SUCCESS;
    if (st == TMEM_OK) {
        tmem__os_mutex_lock(&vk->submit_lock);
        VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                           .descriptorPool = vk->conv.pool, .descriptorSetCount = 1,
                                           .pSetLayouts = &vk->conv.set_layout};
        res = vk->fn.vkAllocateDescriptorSets(vk->device, &dai, &job.set);
        tmem__os_mutex_unlock(&vk->submit_lock);
        st = tmem__vk_status(res);
    }
    if (st == TMEM_OK) {
        VkDescriptorBufferInfo bi[3] = {{src->buffer, 0, VK_WHOLE_SIZE}, {tap_buf.buffer, 0, VK_WHOLE_SIZE},
                                        {dst, 0, VK_WHOLE_SIZE}};
        VkWriteDescriptorSet w[3];
        for (uint32_t i = 0; i < 3; i++)
            w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = job.set,
                                          .dstBinding = i, .descriptorCount = 1,
                                          .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &bi[i]};
        vk->fn.vkUpdateDescriptorSets(vk->device, 3, w, 0, NULL);
        st = tmem__vk_submit(vk, record_convert, &job);
        tmem__os_mutex_lock(&vk->submit_lock);
        (void)vk->fn.vkFreeDescriptorSets(vk->device, vk->conv.pool, 1, &job.set);
        tmem__os_mutex_unlock(&vk->submit_lock);
    }
    scratch_destroy(vk, &tap_buf);
    return st;
}

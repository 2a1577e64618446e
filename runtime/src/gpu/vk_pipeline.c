/* vk_pipeline.c: one compute pipeline per kernel, created once (on first
 * use, or all at tmrt__vk_warm) from the variant of its SPIR-V the device
 * runs (subgroup reductions, 16-bit storage), with its specialisation
 * constants; descriptor-set and pipeline layouts shared by every kernel
 * with the same number of storage-buffer bindings (push constants: the
 * guaranteed 128 bytes). */
#include <stdio.h>
#include <string.h>
#include "gpu/vk_internal.h"

static tmem_status layouts(tmrt_vk *vk, uint32_t nb, char *err, size_t cap) {
    if (vk->layout[nb]) return TMEM_OK;
    VkDescriptorSetLayoutBinding b[TMRT_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < nb; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = nb, .pBindings = b};
    VkResult r = TMRT_VK(vk, vk->fn.vkCreateDescriptorSetLayout(vk->device, &dli, NULL, &vk->set_layout[nb]));
    if (r == VK_SUCCESS) {
        VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = TMRT_VK_PUSH_BYTES};
        VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                          .setLayoutCount = 1, .pSetLayouts = &vk->set_layout[nb],
                                          .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
        r = TMRT_VK(vk, vk->fn.vkCreatePipelineLayout(vk->device, &pli, NULL, &vk->layout[nb]));
    }
    if (r != VK_SUCCESS) {
        if (vk->set_layout[nb]) vk->fn.vkDestroyDescriptorSetLayout(vk->device, vk->set_layout[nb], NULL);
        vk->set_layout[nb] = VK_NULL_HANDLE;
        vk->layout[nb] = VK_NULL_HANDLE;
        if (err && cap)
            snprintf(err, cap, "descriptor/pipeline layout of %u bindings: %s", nb, tmrt__vk_result_name(r));
    }
    return tmrt__vk_status(vk, r);
}

/* The SPIR-V the device runs: the variant of its features, else the
 * nearest one built (without subgroups, without 16-bit storage, plain). */
static const tmrt_vk_spirv *pick(const tmrt_vk *vk, tmrt_vk_kernel k, const char **suffix) {
    static const char *const names[4] = {"", "_sg", "_s16", "_s16_sg"};
    const tmrt_vk_kernel_info *ki = &tmrt__vk_kernels[k];
    uint32_t want = vk->variant, v = want;
    if (!ki->spv[v].code) v = want & ~(uint32_t)TMRT_VK_V_SG;
    if (!ki->spv[v].code) v = want & ~(uint32_t)TMRT_VK_V_S16;
    if (!ki->spv[v].code) v = 0;
    *suffix = names[v];
    return &ki->spv[v];
}

static VkResult build(tmrt_vk *vk, tmrt_vk_kernel k, const tmrt_vk_spirv *spv, VkPipeline *out) {
    const tmrt_vk_kernel_info *ki = &tmrt__vk_kernels[k];
    tmrt_vk_pipeline *p = &vk->pipe[k];
    if (!p->tuned) memcpy(p->spec, ki->spec, sizeof p->spec);
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = spv->bytes,
                                    .pCode = spv->code};
    VkShaderModule mod = VK_NULL_HANDLE;
    VkResult r = TMRT_VK(vk, vk->fn.vkCreateShaderModule(vk->device, &smi, NULL, &mod));
    if (r != VK_SUCCESS) return r;
    VkSpecializationMapEntry me[TMRT_VK_MAX_SPEC];
    for (uint32_t i = 0; i < TMRT_VK_MAX_SPEC; i++)
        me[i] = (VkSpecializationMapEntry){.constantID = i, .offset = 4 * i, .size = 4};
    VkSpecializationInfo si = {.mapEntryCount = TMRT_VK_MAX_SPEC, .pMapEntries = me, .dataSize = sizeof p->spec,
                               .pData = p->spec};
    VkComputePipelineCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod, .pName = "main", .pSpecializationInfo = &si},
        .layout = vk->layout[ki->bindings]};
    r = TMRT_VK(vk, vk->fn.vkCreateComputePipelines(vk->device, VK_NULL_HANDLE, 1, &cpi, NULL, out));
    vk->fn.vkDestroyShaderModule(vk->device, mod, NULL);
    return r;
}

tmem_status tmrt__vk_pipeline_create(tmrt_vk *vk, tmrt_vk_kernel k, char *err, size_t cap) {
    if (vk->pipe[k].pipeline) return TMEM_OK;
    const tmrt_vk_kernel_info *ki = &tmrt__vk_kernels[k];
    tmem_status st = layouts(vk, ki->bindings, err, cap);
    if (st != TMEM_OK) return st;
    const char *suffix;
    const tmrt_vk_spirv *spv = pick(vk, k, &suffix);
    VkPipeline pl = VK_NULL_HANDLE;
    VkResult r = build(vk, k, spv, &pl);
    if (r != VK_SUCCESS) {
        if (err && cap) snprintf(err, cap, "pipeline %s%s: %s", ki->name, suffix, tmrt__vk_result_name(r));
        return tmrt__vk_status(vk, r);
    }
    vk->pipe[k].pipeline = pl;
    return TMEM_OK;
}

VkPipeline tmrt__vk_pipeline(tmrt_vk_rec *rec, tmrt_vk_kernel k) {
    tmrt_vk *vk = rec->vk;
    if (vk->pipe[k].pipeline) return vk->pipe[k].pipeline;
    char msg[200];
    tmem_status st = tmrt__vk_pipeline_create(vk, k, msg, sizeof msg);
    if (st != TMEM_OK) {
        tmrt__vk_rec_fail(rec, st, "%s", msg);
        return VK_NULL_HANDLE;
    }
    return vk->pipe[k].pipeline;
}

VkPipelineLayout tmrt__vk_layout(const tmrt_vk *vk, tmrt_vk_kernel k) {
    return vk->layout[tmrt__vk_kernels[k].bindings];
}

tmem_status tmrt__vk_tune(tmrt_vk *vk, tmrt_vk_kernel k, const uint32_t *spec, uint32_t n) {
    if ((unsigned)k >= TMRT_VK_KERNEL_COUNT || n > TMRT_VK_MAX_SPEC || (n && !spec)) return TMEM_E_INVALID_ARG;
    tmrt_vk_pipeline *p = &vk->pipe[k];
    (void)vk->fn.vkDeviceWaitIdle(vk->device);
    if (p->pipeline) vk->fn.vkDestroyPipeline(vk->device, p->pipeline, NULL);
    p->pipeline = VK_NULL_HANDLE;
    memcpy(p->spec, tmrt__vk_kernels[k].spec, sizeof p->spec);
    for (uint32_t i = 0; i < n; i++) p->spec[i] = spec[i];
    p->tuned = n > 0;
    return TMEM_OK;
}

const uint32_t *tmrt__vk_spec(const tmrt_vk *vk, tmrt_vk_kernel k) {
    return vk->pipe[k].tuned || vk->pipe[k].pipeline ? vk->pipe[k].spec : tmrt__vk_kernels[k].spec;
}

void tmrt__vk_pipelines_destroy(tmrt_vk *vk) {
    for (int k = 0; k < TMRT_VK_KERNEL_COUNT; k++)
        if (vk->pipe[k].pipeline) vk->fn.vkDestroyPipeline(vk->device, vk->pipe[k].pipeline, NULL);
    for (uint32_t n = 0; n <= TMRT_VK_MAX_BINDINGS; n++) {
        if (vk->layout[n]) vk->fn.vkDestroyPipelineLayout(vk->device, vk->layout[n], NULL);
        if (vk->set_layout[n]) vk->fn.vkDestroyDescriptorSetLayout(vk->device, vk->set_layout[n], NULL);
    }
    memset(vk->pipe, 0, sizeof vk->pipe);
    memset(vk->layout, 0, sizeof vk->layout);
    memset(vk->set_layout, 0, sizeof vk->set_layout);
}

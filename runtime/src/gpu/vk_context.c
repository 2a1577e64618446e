/* vk_context.c: the compute layer's context on a library gpu: the entry
 * points through the library's own loader (tmem_vk_get_native), the
 * device's limits and which shader variants it runs, the fault hook, and
 * VkResult -> tmem_status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/vk_internal.h"

static tmem_status fail(char *err, size_t cap, tmem_status st, const char *msg) {
    if (err && cap) snprintf(err, cap, "%s", msg);
    return st;
}

static bool load_fns(tmrt_vk *vk, const tmem_vk_native *nat) {
    bool ok = true;
#define TMRT_VK_LOAD_I(name)                                                                        \
    vk->fn.name = (PFN_##name)nat->get_instance_proc_addr(nat->instance, #name);                   \
    ok = ok && vk->fn.name;
#define TMRT_VK_LOAD_D(name)                                                                        \
    vk->fn.name = (PFN_##name)nat->get_device_proc_addr(nat->device, #name);                       \
    ok = ok && vk->fn.name;
    TMRT_VK_INSTANCE_FNS(TMRT_VK_LOAD_I)
    TMRT_VK_DEVICE_FNS(TMRT_VK_LOAD_D)
#undef TMRT_VK_LOAD_I
#undef TMRT_VK_LOAD_D
    return ok;
}

static void read_limits(tmrt_vk *vk, const tmem_vk_native *nat, const tmrt_vk_desc *d) {
    uint32_t flags = d->flags;
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    vk->fn.vkGetPhysicalDeviceProperties2(vk->physical, &p2);
    const VkPhysicalDeviceLimits *l = &p2.properties.limits;
    tmrt_vk_limits *o = &vk->lim;
    snprintf(o->device, sizeof o->device, "%.63s", p2.properties.deviceName);
    o->max_storage_range = l->maxStorageBufferRange;
    if (d->max_storage_range && d->max_storage_range < o->max_storage_range)
        o->max_storage_range = d->max_storage_range;
    o->storage_align = l->minStorageBufferOffsetAlignment ? l->minStorageBufferOffsetAlignment : 4;
    for (int i = 0; i < 3; i++) o->max_groups[i] = l->maxComputeWorkGroupCount[i];
    o->max_shared = l->maxComputeSharedMemorySize;
    o->subgroup_size = sg.subgroupSize ? sg.subgroupSize : 1;
    o->subgroup = !(flags & TMRT_VK_NO_SUBGROUP) && (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                  (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                  (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
    o->storage16 = !(flags & TMRT_VK_NO_STORAGE16) && nat->features.storage_buffer_16bit;
    o->timestamp_ns = l->timestampPeriod;
    uint32_t nq = 0;
    vk->fn.vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    if (nq > 16) nq = 16;
    vk->fn.vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &nq, qf);
    o->timestamps = vk->queue_family < nq && qf[vk->queue_family].timestampValidBits > 0 &&
                    (l->timestampComputeAndGraphics || l->timestampPeriod > 0);
    vk->variant = (o->subgroup ? TMRT_VK_V_SG : 0u) | (o->storage16 ? TMRT_VK_V_S16 : 0u);
}

tmem_status tmrt__vk_create(tmem_gpu *gpu, const tmrt_vk_desc *desc, tmrt_vk **out, char *err, size_t cap) {
    if (out) *out = NULL;
    if (err && cap) err[0] = 0;
    tmrt_vk_desc d = {0};
    if (desc) d = *desc;
    if (!gpu || !out || (d.flags & ~(uint32_t)TMRT_VK_FLAG_MASK))
        return fail(err, cap, TMEM_E_INVALID_ARG, "invalid argument");
    tmem_vk_native nat;
    tmem_status st = tmem_vk_get_native(gpu, &nat, NULL);
    if (st != TMEM_OK) return fail(err, cap, TMEM_E_UNSUPPORTED, "not a Vulkan gpu");
    if (!nat.get_instance_proc_addr || !nat.get_device_proc_addr)
        return fail(err, cap, TMEM_E_UNSUPPORTED, "the library gave no Vulkan entry points");
    tmrt_vk *vk = calloc(1, sizeof *vk);
    if (!vk) return fail(err, cap, TMEM_E_NO_MEMORY, "out of memory");
    vk->gpu = gpu;
    vk->device = nat.device;
    vk->physical = nat.physical_device;
    vk->queue_family = nat.queue_family;
    if (!load_fns(vk, &nat)) {
        free(vk);
        return fail(err, cap, TMEM_E_UNSUPPORTED, "a Vulkan entry point is missing (Vulkan 1.1 needed)");
    }
    read_limits(vk, &nat, &d);
    *out = vk;
    return TMEM_OK;
}

void tmrt__vk_destroy(tmrt_vk *vk) {
    if (!vk) return;
    (void)vk->fn.vkDeviceWaitIdle(vk->device);
    tmrt__vk_pipelines_destroy(vk);
    free(vk);
}

const tmrt_vk_limits *tmrt__vk_limits(const tmrt_vk *vk) { return &vk->lim; }
tmem_gpu *tmrt__vk_gpu(const tmrt_vk *vk) { return vk->gpu; }
bool tmrt__vk_lost(const tmrt_vk *vk) { return vk->lost; }

tmem_status tmrt__vk_warm(tmrt_vk *vk) {
    for (int k = 0; k < TMRT_VK_KERNEL_COUNT; k++) {
        tmem_status st = tmrt__vk_pipeline_create(vk, (tmrt_vk_kernel)k, NULL, 0);
        if (st != TMEM_OK) return st;
    }
    return TMEM_OK;
}

void tmrt__vk_fault_set(tmrt_vk *vk, int64_t n, VkResult result) {
    vk->fail_countdown = n > 0 ? n : 0;
    vk->fail_result = result;
}

uint64_t tmrt__vk_calls(const tmrt_vk *vk) { return vk->calls; }

bool tmrt__vk_fault_now(tmrt_vk *vk) {
    vk->calls++;
    if (vk->fail_countdown > 0 && --vk->fail_countdown == 0) return true;
    return false;
}

VkResult tmrt__vk_check(tmrt_vk *vk, VkResult r) {
    if (r == VK_ERROR_DEVICE_LOST) vk->lost = true;
    return r;
}

const char *tmrt__vk_result_name(VkResult r) {
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST (device lost)";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    default: return "VkResult error";
    }
}

tmem_status tmrt__vk_status(tmrt_vk *vk, VkResult r) {
    switch (r) {
    case VK_SUCCESS: return TMEM_OK;
    case VK_TIMEOUT:
    case VK_NOT_READY: return TMEM_E_LIMIT;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS: return TMEM_E_NO_MEMORY;
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER: return TMEM_E_UNSUPPORTED;
    case VK_ERROR_DEVICE_LOST: vk->lost = true; return TMEM_E_OS;
    default: return TMEM_E_OS;
    }
}

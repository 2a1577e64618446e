/* vk_internal.h: what the files of runtime/src/gpu/ share: the entry
 * points (fetched through the library's vkGetDeviceProcAddr), the context
 * and recorder structs, the kernel table and the dispatch helper. */
#ifndef TMRT_VK_INTERNAL_H
#define TMRT_VK_INTERNAL_H

#include "gpu/vk_compute.h"
#include "gpu/vk_kernels.h"

/* Instance-level entry points the layer reads properties with. */
#define TMRT_VK_INSTANCE_FNS(X) X(vkGetPhysicalDeviceProperties) X(vkGetPhysicalDeviceProperties2) \
    X(vkGetPhysicalDeviceQueueFamilyProperties)
/* Device-level entry points. */
#define TMRT_VK_DEVICE_FNS(X)                                                                        \
    X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateDescriptorSetLayout)                \
    X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)           \
    X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreateDescriptorPool)                     \
    X(vkDestroyDescriptorPool) X(vkResetDescriptorPool) X(vkAllocateDescriptorSets)                \
    X(vkUpdateDescriptorSets) X(vkCreateCommandPool) X(vkDestroyCommandPool)                       \
    X(vkResetCommandPool) X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer)                      \
    X(vkEndCommandBuffer) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants)    \
    X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer)                 \
    X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences) X(vkGetFenceStatus)     \
    X(vkDeviceWaitIdle) X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkCmdResetQueryPool)          \
    X(vkCmdWriteTimestamp) X(vkGetQueryPoolResults)

typedef struct tmrt_vk_fns {
#define TMRT_VK_DECL(name) PFN_##name name;
    TMRT_VK_INSTANCE_FNS(TMRT_VK_DECL)
    TMRT_VK_DEVICE_FNS(TMRT_VK_DECL)
#undef TMRT_VK_DECL
} tmrt_vk_fns;

/* Storage-buffer bindings of one set, at most. */
#define TMRT_VK_MAX_BINDINGS 12u
/* Push-constant bytes every pipeline layout declares (the guaranteed minimum). */
#define TMRT_VK_PUSH_BYTES 128u

typedef struct tmrt_vk_pipeline {
    VkPipeline pipeline;
    uint32_t spec[TMRT_VK_MAX_SPEC];   /* the values it was built with */
    bool tuned;                        /* spec set by tmrt__vk_tune */
} tmrt_vk_pipeline;

struct tmrt_vk {
    tmem_gpu *gpu;
    tmrt_vk_fns fn;
    VkDevice device;
    VkPhysicalDevice physical;
    uint32_t queue_family;
    tmrt_vk_limits lim;
    uint32_t variant;                              /* TMRT_VK_V_* bits in use */
    VkDescriptorSetLayout set_layout[TMRT_VK_MAX_BINDINGS + 1]; /* by binding count */
    VkPipelineLayout layout[TMRT_VK_MAX_BINDINGS + 1];
    tmrt_vk_pipeline pipe[TMRT_VK_KERNEL_COUNT];
    bool lost;
    int64_t fail_countdown;
    VkResult fail_result;
    uint64_t calls;
};

struct tmrt_vk_rec {
    tmrt_vk *vk;
    VkCommandPool cmd_pool;
    VkCommandBuffer cb;
    VkDescriptorPool desc_pool;
    VkFence fence;
    VkQueryPool queries;
    uint32_t max_dispatches, max_timestamps;
    uint32_t dispatches, barriers;
    bool recording, ended, in_flight, ran, dirty; /* dirty: work since the last barrier */
    VkPipeline bound;
    tmem_status status;
    char error[256];
};

/* A Vulkan call's result through the fault hook (counts the call). */
VkResult tmrt__vk_check(tmrt_vk *vk, VkResult r);
#define TMRT_VK(vk, call) tmrt__vk_check((vk), tmrt__vk_fault_now(vk) ? (vk)->fail_result : (call))
/* True (and disarmed) when the armed fault fires on this call. */
bool tmrt__vk_fault_now(tmrt_vk *vk);
/* VkResult -> tmem_status; device loss marks the context lost. */
tmem_status tmrt__vk_status(tmrt_vk *vk, VkResult r);
const char *tmrt__vk_result_name(VkResult r);

/* The pipeline of kernel k, created on first use (vk_pipeline.c). NULL
 * with the recorder's error set on failure. */
VkPipeline tmrt__vk_pipeline(tmrt_vk_rec *rec, tmrt_vk_kernel k);
VkPipelineLayout tmrt__vk_layout(const tmrt_vk *vk, tmrt_vk_kernel k);
tmem_status tmrt__vk_pipeline_create(tmrt_vk *vk, tmrt_vk_kernel k, char *err, size_t cap);
void tmrt__vk_pipelines_destroy(tmrt_vk *vk);
/* Benches: build kernel k with these specialisation constants (n values,
 * the rest defaults) from now on; 0 values = the defaults again. Waits for
 * the device and drops the pipeline: recordings that use k must be
 * recorded again. TMEM_OK | TMEM_E_INVALID_ARG */
tmem_status tmrt__vk_tune(tmrt_vk *vk, tmrt_vk_kernel k, const uint32_t *spec, uint32_t n);
/* The specialisation constants kernel k is (or will be) built with: the
 * ops size their grids from them. */
const uint32_t *tmrt__vk_spec(const tmrt_vk *vk, tmrt_vk_kernel k);

/* Record the recorder's first error (printf into its message); returns st. */
tmem_status tmrt__vk_rec_fail(tmrt_vk_rec *rec, tmem_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* False (recording nothing) when the recorder is not recording or failed. */
bool tmrt__vk_rec_ok(tmrt_vk_rec *rec);

/* One dispatch of kernel k with `nb` bindings (0..nb-1), push constants
 * and a 1D count of workgroups spread over x and y when it passes the
 * device's x limit (shaders read tmrt_group_id(), vk_common.glsl).
 * Bindings must honour the storage alignment and range limits. */
void tmrt__vk_dispatch(tmrt_vk_rec *rec, tmrt_vk_kernel k, const tmrt_vk_buf *bufs, uint32_t nb, const void *push,
                       uint32_t push_bytes, uint64_t groups);
/* Same with an explicit grid (each under the device limits). */
void tmrt__vk_dispatch3(tmrt_vk_rec *rec, tmrt_vk_kernel k, const tmrt_vk_buf *bufs, uint32_t nb, const void *push,
                        uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz);
/* The binding check ops run before recording: NULL buffer, offset not a
 * multiple of the storage alignment, range 0 or past the device limit. */
bool tmrt__vk_buf_ok(tmrt_vk_rec *rec, const char *op, const char *what, tmrt_vk_buf b);

static inline uint64_t tmrt__vk_div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

#endif /* TMRT_VK_INTERNAL_H */

/* vk_compute.h: the runtime's Vulkan compute layer (built with
 * TMRT_HAVE_VULKAN; docs/runtime-gpu.md).
 *
 * A context (tmrt_vk) over the device a tmem_gpu opened: Vulkan entry points
 * are the library's own (tmem_vk_get_native: vkGetInstanceProcAddr /
 * vkGetDeviceProcAddr as the library loaded them; the runtime never loads
 * Vulkan itself), pipelines created once per context from the committed
 * SPIR-V (shaders/, vk_spirv.c), the limits the ops honour.
 *
 * A recorder (tmrt_vk_rec) is one command buffer with its descriptor sets:
 * ops (vk_ops.h) append dispatches in graph order; a barrier goes in only
 * where the caller says a dependency or an aliasing needs one
 * (tmrt__vk_barrier). A recording can be submitted many times (the
 * descriptor sets and push constants stay with it) until the next begin.
 *
 * Buffers are bound as (VkBuffer, offset, range): a buffer at a planner
 * offset in a device arena is just a binding. Offsets must be multiples of
 * the device's minStorageBufferOffsetAlignment (tmrt_vk_limits::
 * storage_align) and ranges at most maxStorageBufferRange; the ops that read
 * weights split a range past that limit into several dispatches.
 *
 * Errors: every Vulkan call's failure becomes a tmem_status (device loss is
 * TMEM_E_OS with "device lost" in the message, and the context refuses
 * further submissions: never a crash). A recorder's first error sticks: the
 * ops after it record nothing, end/submit return it, the message says
 * which call failed (tmrt__vk_rec_error).
 *
 * Threads: a context and its recorders are used by one thread at a time
 * (externally synchronized); submissions go through tmem_vk_queue_submit,
 * serialised with the library's own. Nothing here allocates while recording
 * or submitting (descriptor sets come from the recorder's pool, sized at
 * create). */
#ifndef TMRT_VK_COMPUTE_H
#define TMRT_VK_COMPUTE_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>
#include "typedmem/vulkan.h"

typedef struct tmrt_vk tmrt_vk;
typedef struct tmrt_vk_rec tmrt_vk_rec;

/* A storage-buffer binding: `range` bytes of `buffer` from `offset`. */
typedef struct tmrt_vk_buf {
    VkBuffer buffer;
    uint64_t offset, range;
} tmrt_vk_buf;

/* Context flags (tests force the fallbacks a device without the feature
 * would take). */
enum tmrt_vk_flag {
    TMRT_VK_NO_SUBGROUP = 1u << 0,   /* shared-memory reductions only */
    TMRT_VK_NO_STORAGE16 = 1u << 1,  /* 32-bit-word reads of 16-bit data */
    TMRT_VK_FLAG_MASK = 0x3u
};

typedef struct tmrt_vk_desc {
    uint32_t flags;                  /* tmrt_vk_flag bits */
    uint64_t max_storage_range;      /* 0 = the device's maxStorageBufferRange;
                                        smaller forces the ops' splits (tests) */
} tmrt_vk_desc;

/* What the device allows and what the shaders use. */
typedef struct tmrt_vk_limits {
    char device[64];
    uint64_t max_storage_range;      /* maxStorageBufferRange */
    uint64_t storage_align;          /* minStorageBufferOffsetAlignment */
    uint32_t max_groups[3];          /* maxComputeWorkGroupCount */
    uint32_t max_shared;             /* maxComputeSharedMemorySize */
    uint32_t subgroup_size;
    bool subgroup;                   /* subgroup arithmetic in compute: used */
    bool storage16;                  /* 16-bit storage: used */
    bool timestamps;                 /* the queue writes timestamps */
    double timestamp_ns;             /* ns per timestamp tick */
} tmrt_vk_limits;

/* Open the compute layer on `gpu` (a Vulkan gpu of the library). Creates no
 * pipeline yet: each is created on first use, once. *out NULL on failure.
 * TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_UNSUPPORTED (not Vulkan, or the
 * device lacks what every shader needs: a compute queue with 32-bit storage)
 * | TMEM_E_NO_MEMORY. err (may be NULL) says why. */
tmem_status tmrt__vk_create(tmem_gpu *gpu, const tmrt_vk_desc *desc, tmrt_vk **out, char *err, size_t cap);
/* Waits for the device, destroys every pipeline and object. NULL ok; every
 * recorder must be destroyed first. */
void tmrt__vk_destroy(tmrt_vk *vk);
const tmrt_vk_limits *tmrt__vk_limits(const tmrt_vk *vk);
/* The library's gpu and the device's entry points (for the memory side:
 * buffers are the library's, tmem_vk_buffer_create). */
tmem_gpu *tmrt__vk_gpu(const tmrt_vk *vk);
/* Create every pipeline now (a session that must not create one during its
 * first step). TMEM_OK or the first failure. */
tmem_status tmrt__vk_warm(tmrt_vk *vk);
/* True once the device was lost: every later submission fails. */
bool tmrt__vk_lost(const tmrt_vk *vk);

/* Fault injection (tests): the n-th Vulkan call from now that can fail
 * (1 = the next) returns `result` instead, then calls run normally again;
 * n = 0 disarms. Counts only calls this layer makes. */
void tmrt__vk_fault_set(tmrt_vk *vk, int64_t n, VkResult result);
/* Vulkan calls that could fail made so far (for sweeps). */
uint64_t tmrt__vk_calls(const tmrt_vk *vk);

/* ---- recorder ------------------------------------------------------------ */

typedef struct tmrt_vk_rec_desc {
    uint32_t max_dispatches;         /* descriptor sets per recording; 0 = 1024 */
    uint32_t max_timestamps;         /* timestamp slots; 0 = none */
} tmrt_vk_rec_desc;

/* *out NULL on failure. TMEM_OK | TMEM_E_INVALID_ARG | TMEM_E_NO_MEMORY |
 * TMEM_E_UNSUPPORTED (timestamps asked on a queue without them) | TMEM_E_OS */
tmem_status tmrt__vk_rec_create(tmrt_vk *vk, const tmrt_vk_rec_desc *desc, tmrt_vk_rec **out);
/* Waits for its submission, frees everything. NULL ok. */
void tmrt__vk_rec_destroy(tmrt_vk_rec *rec);

/* Start a new recording (the previous one and its descriptor sets are
 * dropped; waits for a submission in flight first). Clears the sticky
 * error. TMEM_OK | TMEM_E_OS | TMEM_E_NO_MEMORY */
tmem_status tmrt__vk_begin(tmrt_vk_rec *rec);
/* Later dispatches see what earlier ones wrote (one global compute ->
 * compute memory barrier; two in a row record one). Also the barrier
 * between two buffers sharing bytes (the planner's aliasing). */
void tmrt__vk_barrier(tmrt_vk_rec *rec);
/* The host's writes since the last submission are visible by queue
 * submission; this makes the recording's writes visible to host reads
 * after the wait (and to transfers). Put it last when reading back. */
void tmrt__vk_barrier_host(tmrt_vk_rec *rec);
/* Copy / fill (transfer commands, ordered by tmrt__vk_barrier like a
 * dispatch). bytes a multiple of 4 for fill. */
void tmrt__vk_copy(tmrt_vk_rec *rec, tmrt_vk_buf src, tmrt_vk_buf dst, uint64_t bytes);
void tmrt__vk_fill(tmrt_vk_rec *rec, tmrt_vk_buf dst, uint64_t bytes, uint32_t value);
/* Write timestamp slot `slot` (< max_timestamps) after all earlier work. */
void tmrt__vk_timestamp(tmrt_vk_rec *rec, uint32_t slot);
/* End the recording. The first error of the recording, if any. */
tmem_status tmrt__vk_end(tmrt_vk_rec *rec);
/* Submit the ended recording (again, if already run). Does not wait.
 * TMEM_E_STATE (not ended, or still in flight) | TMEM_E_OS (lost) ... */
tmem_status tmrt__vk_submit(tmrt_vk_rec *rec);
/* Wait for the submission (timeout_ns, UINT64_MAX = forever).
 * TMEM_OK | TMEM_E_LIMIT (timeout, still in flight) | TMEM_E_OS (lost) */
tmem_status tmrt__vk_wait(tmrt_vk_rec *rec, uint64_t timeout_ns);
/* end + submit + wait. */
tmem_status tmrt__vk_run(tmrt_vk_rec *rec);
/* Timestamps of the last completed run, in ns since slot 0 (n slots). */
tmem_status tmrt__vk_timestamps(tmrt_vk_rec *rec, double *ns, uint32_t n);
/* The sticky status and its message ("" when OK). */
tmem_status tmrt__vk_rec_status(const tmrt_vk_rec *rec);
const char *tmrt__vk_rec_error(const tmrt_vk_rec *rec);
/* Dispatches recorded since begin (for tests and benches). */
uint32_t tmrt__vk_rec_dispatches(const tmrt_vk_rec *rec);
uint32_t tmrt__vk_rec_barriers(const tmrt_vk_rec *rec);

#endif /* TMRT_VK_COMPUTE_H */

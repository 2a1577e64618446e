/* gpurun.h: the forward pass on Vulkan, every role in typed device memory
 * (docs/runtime.md, "The GPU path"). Built with TMRT_HAVE_VULKAN; the
 * model and session code call only what is declared here.
 *
 *   gpu_model.c    the device attached to the model's context, the weights
 *                  in device memory (uploaded through a bounded staging
 *                  ring), one tmrt_vk_wmat per tensor
 *   gpu_session.c  a session's device memory: the planned activation arena
 *                  (one plan per layer graph, all in one arena), the KV pool
 *                  and its block table, the recurrent and conv state, the
 *                  host-visible io and logits buffers
 *   gpu_forward.c  a step recorded in graph order, barriers where a
 *                  dependency or the plan's aliasing needs one */
#ifndef TMRT_GPURUN_H
#define TMRT_GPURUN_H

#include "rt_internal.h"

typedef struct tmrt_gpu_model tmrt_gpu_model;
typedef struct tmrt_gpu_session tmrt_gpu_session;

/* Attach the device to m->ctx and place the weights m->w views in device
 * memory. m->gpu set on success; on failure nothing is left. */
tmem_status tmrt__gpu_model_open(tmrt_model *m, const tmrt_device *dev, tmrt_error *err);
void tmrt__gpu_model_close(tmrt_gpu_model *g);
/* Bytes of weights on the device; whether they were imported (no copy). */
uint64_t tmrt__gpu_model_weight_bytes(const tmrt_gpu_model *g, bool *imported);
tmem_gpu *tmrt__gpu_model_gpu(const tmrt_gpu_model *g);

/* A session's device memory for n_ctx tokens, prefill chunks of `chunk`. */
typedef struct tmrt_gpu_session_desc {
    uint32_t n_ctx, chunk;
    bool kv_f32;
} tmrt_gpu_session_desc;
tmem_status tmrt__gpu_session_create(tmrt_model *m, const tmrt_gpu_session_desc *d, tmrt_gpu_session **out,
                                     uint64_t *arena_bytes, tmrt_error *err);
void tmrt__gpu_session_destroy(tmrt_gpu_session *g);
/* Device bytes of the session's buffers (typed: its blocks; naive: its own
 * allocations). */
uint64_t tmrt__gpu_session_device_bytes(const tmrt_gpu_session *g);

/* One step (st->n <= chunk tokens at st->n_past) on the device. Logits rows
 * go to st->fn as the CPU path sends them; the last row is copied into
 * `last_logits` (n_vocab floats) when any row was asked for. */
tmem_status tmrt__gpu_forward(tmrt_gpu_session *g, const tmrt_step *st, float *last_logits, tmrt_error *err);

#endif

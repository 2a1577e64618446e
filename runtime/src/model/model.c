/* model.c: open a qwen35 GGUF in one of the two memory modes
 * (util/gguf_file.c, shared with the vision tower). Typed: the file mapped
 * read-only into the WEIGHTS role's FILE type (clean pages, charged to the
 * context). Naive: the whole file read into one malloc'd buffer (anonymous,
 * private dirty), the baseline. Both parse through the same validating
 * reader and bind the same views. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt_internal.h"
#include "util/gguf_file.h"
#if TMRT_HAVE_VULKAN
#include "gpurun/gpurun.h"
#endif

tmem_status tmrt_model_open(tmem_context *ctx, const tmrt_model_desc *desc, tmrt_model **out, tmrt_error *err) {
    if (out) *out = NULL;
    if (!desc || !out || !desc->path || (desc->memory == TMRT_MEMORY_TYPED && !ctx) ||
        (unsigned)desc->memory > TMRT_MEMORY_NAIVE || (unsigned)desc->device.kind > TMRT_DEVICE_VULKAN)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "model open: bad arguments");
    if (desc->device.kind == TMRT_DEVICE_VULKAN && !tmrt_device_built(TMRT_DEVICE_VULKAN))
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "model open: the runtime was built without Vulkan");
    tmrt_model *m = calloc(1, sizeof *m);
    if (!m) return tmrt__fail(err, TMEM_E_NO_MEMORY, "no memory for the model");
    m->memory = desc->memory;
    m->ctx = ctx;
    tmem_gguf_error ge = {0};
    tmem_status st = tmrt__gguf_open_in(ctx, desc->path, m->memory, &m->gguf, &m->naive_file, err);
    if (st) goto fail_quiet;
    if ((st = tmrt__hparams_read(m->gguf, &m->hp, err)) || (st = tmrt__weights_bind(m->gguf, &m->hp, &m->w, err)))
        goto fail_quiet;
    if ((st = tmem_model_from_gguf(m->gguf, &m->mdesc, &ge))) {
        tmrt__fail(err, st, "%s: %s", desc->path, ge.message);
        goto fail_quiet;
    }
    /* the memory descriptor describes what the forward pass runs */
    m->mdesc.n_vocab = m->hp.n_vocab;
    m->mdesc.attn_output_gate = true;
    m->mdesc.tied_embeddings = m->hp.tied_embeddings;
    m->device = desc->device;
#if TMRT_HAVE_VULKAN
    if (desc->device.kind == TMRT_DEVICE_VULKAN && (st = tmrt__gpu_model_open(m, &desc->device, err))) goto fail_quiet;
#endif
    *out = m;
    return TMEM_OK;
fail_quiet:
    tmrt_model_close(m);
    return st;
}

void tmrt_model_close(tmrt_model *m) {
    if (!m) return;
#if TMRT_HAVE_VULKAN
    tmrt__gpu_model_close(m->gpu);
#endif
    tmem_gguf_close(m->gguf);
    free(m->naive_file);
    free(m);
}

const tmrt_hparams *tmrt_model_hparams(const tmrt_model *m) { return m ? &m->hp : NULL; }
const tmem_gguf *tmrt_model_gguf(const tmrt_model *m) { return m ? m->gguf : NULL; }
const tmem_model_desc *tmrt_model_memory_desc(const tmrt_model *m) { return m ? &m->mdesc : NULL; }

bool tmrt_device_built(tmrt_device_kind kind) {
#if TMRT_HAVE_VULKAN
    return kind == TMRT_DEVICE_CPU || kind == TMRT_DEVICE_VULKAN;
#else
    return kind == TMRT_DEVICE_CPU;
#endif
}

tmrt_device tmrt_model_device(const tmrt_model *m) {
    tmrt_device d = {0};
    return m ? m->device : d;
}

tmem_gpu *tmrt_model_gpu(const tmrt_model *m) {
#if TMRT_HAVE_VULKAN
    return m && m->gpu ? tmrt__gpu_model_gpu(m->gpu) : NULL;
#else
    (void)m;
    return NULL;
#endif
}

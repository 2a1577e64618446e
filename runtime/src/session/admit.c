/* admit.c: whether a session fits its budget, and at which prefill chunk.
 *
 * The one arithmetic of admission: tmrt_session_create runs it before it
 * allocates anything, and `tmem fit` runs it (tmrt_session_admit) for a
 * model the runtime can open, so the two answer the same question with the
 * same call: tmem_fit over the runtime's own graphs (TMRT_GRAPH_FLAGS), KV
 * dtype, per-op scratch and thread pool, and the tokenizer the caller
 * counts (tmrt_session_desc::tokenizer_bytes). */
#include <string.h>
#include "session.h"

tmem_status tmrt__session_fit(const tmrt_model *m, tmem_context *typed_ctx, tmem_kv_dtype kv_dtype,
                              uint32_t n_tokens, uint32_t chunk, uint64_t budget, uint64_t scratch,
                              uint64_t tokenizer, tmem_fit_result *out) {
    tmem_fit_desc f = {0};
    f.model = &m->mdesc;
    f.ctx = typed_ctx;
    f.ctx_tokens = n_tokens;
    f.budget = budget;
    f.prefill_chunk = chunk;
    f.graph_flags = TMRT_GRAPH_FLAGS;
    f.kv_dtype = kv_dtype;
    f.state_dtype = TMEM_KV_DTYPE_F32;
    f.scratch_bytes = scratch;
    f.tokenizer_bytes = tokenizer;
    return tmem_fit(&f, out);
}

/* The one rule of tmemrt/defaults.h: max(n_ctx_min, min(TMRT_DEFAULT_CTX, n_ctx_train)). */
static uint32_t default_ctx(const tmrt_hparams *hp, uint32_t n_ctx_min) {
    uint32_t c = hp->n_ctx_train && hp->n_ctx_train < TMRT_DEFAULT_CTX ? hp->n_ctx_train : TMRT_DEFAULT_CTX;
    return n_ctx_min > c ? n_ctx_min : c;
}

/* What a LINEAR heap of `bytes` in `role`'s type commits (session.c's
 * linear_block: 64-byte multiples, whole granules of the pool). */
static uint64_t heap_commit(tmem_context *typed, tmem_role role, uint64_t bytes) {
    tmem_type *t;
    uint64_t c;
    bytes = (bytes + 63) / 64 * 64;
    if (typed && tmem_role_get_type(typed, role, &t) == TMEM_OK && tmem_type_heap_bytes(t, bytes, &c) == TMEM_OK)
        return c;
    return bytes;
}

/* The "scratch" line at this chunk: the per-op scratch heap and the thread
 * pool's heap, as committed. */
static uint64_t scratch_at(const tmrt_model *m, tmem_context *typed, uint32_t chunk, uint32_t threads) {
    return heap_commit(typed, TMEM_ROLE_SCRATCH, tmrt__scratch_bytes(m, chunk, (int)threads)) +
           heap_commit(typed, TMEM_ROLE_SCRATCH, tmrt__kern_pool_bytes((int)threads));
}

tmem_status tmrt_session_admit(const tmrt_model *m, const tmrt_session_desc *desc, tmrt_session_info *out,
                               tmrt_error *err) {
    if (out) memset(out, 0, sizeof *out);
    if (!m || !desc || !out || (desc->flags & ~(uint32_t)TMRT_SESSION_NO_CHUNK_SHRINK))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "session: bad arguments");
    if (desc->threads > 64) return tmrt__fail(err, TMEM_E_INVALID_ARG, "session: %u threads (1..64)", desc->threads);
    if (desc->kv_dtype != TMEM_KV_DTYPE_DEFAULT && desc->kv_dtype != TMEM_KV_DTYPE_F16 &&
        desc->kv_dtype != TMEM_KV_DTYPE_F32)
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "session: KV rows in %s (f16 or f32 supported)",
                          tmem_kv_dtype_name(desc->kv_dtype));
    tmem_kv_dtype kv = desc->kv_dtype == TMEM_KV_DTYPE_F32 ? TMEM_KV_DTYPE_F32 : TMEM_KV_DTYPE_F16;
    tmem_context *typed = m->memory == TMRT_MEMORY_TYPED ? m->ctx : NULL;
    out->memory = m->memory;
    out->n_ctx = desc->n_ctx ? desc->n_ctx : default_ctx(&m->hp, desc->n_ctx_min);
    uint32_t chunk = desc->chunk ? desc->chunk : TMRT_DEFAULT_CHUNK;
    out->chunk_asked = chunk;
    if (chunk > out->n_ctx) chunk = out->n_ctx;
    out->threads = desc->threads ? desc->threads : 1;
    out->tokenizer_bytes = desc->tokenizer_bytes;
    uint64_t budget = desc->budget;
    if (!budget && typed) {
        tmem_budget_info bi;
        if (tmem_context_budget(typed, &bi) == TMEM_OK) budget = bi.budget;
    }
    /* the fit at the asked chunk, then smaller chunks */
    uint64_t scratch = scratch_at(m, typed, chunk, out->threads);
    tmem_status st = tmrt__session_fit(m, typed, kv, out->n_ctx, chunk, budget, scratch, out->tokenizer_bytes,
                                       &out->fit);
    if (st) return tmrt__fail(err, st, "fit: %s", tmem_strerror(st));
    if (!out->fit.fits && !(desc->flags & TMRT_SESSION_NO_CHUNK_SHRINK)) {
        for (uint32_t c = chunk / 2; c >= TMRT_MIN_CHUNK; c /= 2) {
            tmem_fit_result r;
            uint64_t sc = scratch_at(m, typed, c, out->threads);
            if (tmrt__session_fit(m, typed, kv, out->n_ctx, c, budget, sc, out->tokenizer_bytes, &r) == TMEM_OK &&
                r.fits) {
                out->fit = r;
                chunk = c;
                scratch = sc;
                break;
            }
        }
    }
    out->chunk = chunk;
    out->scratch_bytes = scratch;
    if (!out->fit.fits)
        return tmrt__fail(err, TMEM_E_BUDGET,
                          "%u tokens of context need %llu dirty bytes, the budget is %llu; the largest context that "
                          "fits is %llu tokens",
                          out->n_ctx, (unsigned long long)out->fit.total_dirty, (unsigned long long)budget,
                          (unsigned long long)out->fit.max_ctx_tokens);
    return TMEM_OK;
}

/* session.c: one sequence's memory and its evaluation.
 *
 * Creation runs the admission (admit.c: tmem_fit over the same graphs,
 * dtypes and scratch the session then allocates), which refuses the request
 * before anything is allocated when it cannot fit the budget (or shrinks the
 * prefill chunk when that makes it fit), then builds, in typed mode: the planned activation arena
 * (acts.c), a LINEAR scratch heap reset every step, the logits row, the
 * token buffer, the thread pool's memory, and a paged KV cache with the
 * sequence's recurrent-state slot; in naive mode the same with malloc. */
#include <stdlib.h>
#include <string.h>
#include "session.h"
#if TMRT_HAVE_VULKAN
#include "gpurun/gpurun.h"
#endif

static tmem_status fit_tokens(const tmrt_session *s, uint32_t n_tokens, tmem_fit_result *out) {
    return tmrt__session_fit(s->model, s->memory == TMRT_MEMORY_TYPED ? s->ctx : NULL, s->kv_dtype, n_tokens,
                             s->chunk, 0, s->info.scratch_bytes, s->info.tokenizer_bytes, out);
}

tmem_status tmrt_session_fit(const tmrt_session *s, uint32_t n_tokens, tmem_fit_result *out) {
    if (!s || !out || !n_tokens) return TMEM_E_INVALID_ARG;
    /* the session's fit (its arena, buffers and token ring were made for
     * n_ctx at its chunk) with the KV line of n_tokens: the paged cache is
     * the one thing that grows */
    tmem_status st = fit_tokens(s, s->n_ctx, out);
    tmem_fit_result small;
    if (st || (st = fit_tokens(s, n_tokens, &small))) return st;
    out->total = out->total_dirty = 0;
    for (uint32_t i = 0; i < out->item_count; i++) {
        if (out->items[i].kind == TMEM_FIT_ITEM_KV_CACHE)
            out->items[i].bytes = tmem_fit_bytes(&small, TMEM_FIT_ITEM_KV_CACHE);
        out->total += out->items[i].bytes;
        if (!out->items[i].clean) out->total_dirty += out->items[i].bytes;
    }
    out->kv_tokens = small.kv_tokens;
    return TMEM_OK;
}

/* A LINEAR heap of `bytes` in `role`'s type with one allocation of all of it. */
static tmem_status linear_block(tmrt_session *s, tmem_role role, const char *name, uint64_t bytes, tmem_heap **heap,
                                void **ptr, tmrt_error *err) {
    tmem_type *t;
    tmem_status st = tmem_role_get_type(s->ctx, role, &t);
    if (st) return tmrt__fail(err, st, "no type for role %s", tmem_role_name(s->ctx, role));
    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_LINEAR;
    hd.type = t;
    hd.role = role;
    hd.size = (bytes + 63) / 64 * 64;
    hd.name = name;
    if ((st = tmem_heap_create(s->ctx, &hd, heap)) || (st = tmem_heap_alloc(*heap, hd.size, 64, ptr)))
        return tmrt__fail(err, st, "%s heap of %llu bytes: %s", name, (unsigned long long)bytes, tmem_strerror(st));
    return TMEM_OK;
}

static tmem_status refresh_views(tmrt_session *s) {
    const tmrt_hparams *hp = &s->model->hp;
    if (s->memory == TMRT_MEMORY_NAIVE) return TMEM_OK;
    tmrt_kv_view *kv = &s->run.kv;
    tmem_status st = TMEM_OK;
    /* the sequence's block addresses, resolved once for the step: attention
     * then indexes them without the cache's lock */
    if (kv->row_bytes) st = tmem_kv_seq_block_ptrs(s->cache, s->seq, kv->blocks, kv->cap_blocks, &kv->n_blocks);
    for (uint32_t il = 0, rl = 0; il < hp->n_layers && !st; il++) {
        if (!hp->recurrent[il]) continue;
        void *conv, *ssm;
        st = tmem_kv_seq_state(s->cache, s->seq, rl++, &conv, &ssm);
        s->run.conv_state[il] = conv;
        s->run.ssm_state[il] = ssm;
    }
    return st;
}

/* The snapshot type the sessions of a context share. Created here, with no
 * own budget (address space only: each session's cache carves its range),
 * rather than by the first cache, which would size the type for itself
 * alone and leave no room for a second session (TMEM_E_FULL; the soak found
 * it). Priority -1 as the library's own: a cache of recomputable states. */
static tmem_status shared_snapshot_type(tmem_context *ctx, tmem_type **out) {
    if (tmem_type_find(ctx, "/memory/snapshots", out) == TMEM_OK) return TMEM_OK;
    tmem_type_desc td = {.name = "/memory/snapshots", .placement = TMEM_PLACEMENT_HOST,
                         .lifetime = TMEM_LIFETIME_GROWING, .reclaim_priority = -1};
    tmem_status st = tmem_type_create(ctx, &td, out);
    if (st == TMEM_E_EXISTS) st = tmem_type_find(ctx, td.name, out); /* another thread was first */
    return st;
}

/* The session's range of the snapshot type: TMRT_SESSION_SNAPSHOTS state
 * slots, fewer when the budget (which is also the default types' reserve)
 * holds fewer. Snapshots are address space until taken, and dropped first
 * under pressure, so they are no line of the fit; but a range larger than
 * the type's pool would fail the cache's creation (TMEM_E_FULL) for a
 * request the fit admitted (issue 21: 4 x 19.3 MiB at a 75 MiB budget). */
static uint64_t snapshot_range(tmem_type *snap_type, const tmem_fit_result *fit) {
    uint64_t slot = tmem_fit_bytes(fit, TMEM_FIT_ITEM_RECURRENT_STATE), n = TMRT_SESSION_SNAPSHOTS;
    tmem_type_info ti;
    if (!slot) return 0;
    if (fit->budget && fit->budget / slot < n) n = fit->budget / slot;
    if (tmem_type_get_info(snap_type, &ti) == TMEM_OK && ti.reserve / slot < n) n = ti.reserve / slot;
    return (n ? n : 1) * slot;
}

static tmem_status kv_create(tmrt_session *s, const tmem_fit_result *fit, tmrt_error *err) {
    const tmrt_hparams *hp = &s->model->hp;
    uint32_t full, linear;
    tmem_model_layer_counts(&s->model->mdesc, &full, &linear);
    tmem_kv_layout kl = {0};
    tmem_recurrent_layout rl = {0};
    tmem_status st;
    if (full && (st = tmem_model_kv_layout(&s->model->mdesc, s->kv_dtype, 0, &kl)))
        return tmrt__fail(err, st, "KV layout: %s", tmem_strerror(st));
    if (linear && (st = tmem_model_recurrent_layout(&s->model->mdesc, TMEM_KV_DTYPE_F32, &rl)))
        return tmrt__fail(err, st, "recurrent layout: %s", tmem_strerror(st));
    tmrt_kv_view *kv = &s->run.kv;
    if (full) {
        uint64_t bb;
        if ((st = tmem_kv_layout_block_bytes(&kl, &bb))) return tmrt__fail(err, st, "KV block size");
        kv->block_tokens = kl.block_tokens ? kl.block_tokens : TMEM_KV_DEFAULT_BLOCK_TOKENS;
        kv->f32 = s->kv_dtype == TMEM_KV_DTYPE_F32;
        kv->row_bytes = (size_t)hp->n_head_kv * hp->head_dim * (kv->f32 ? 4 : 2);
        kv->block_bytes = (size_t)bb;
        /* the view: an address per block the context can need */
        kv->cap_blocks = (uint32_t)(((uint64_t)s->n_ctx + kv->block_tokens - 1) / kv->block_tokens);
        kv->blocks = calloc(kv->cap_blocks ? kv->cap_blocks : 1, sizeof *kv->blocks);
        if (!kv->blocks) return tmrt__fail(err, TMEM_E_NO_MEMORY, "KV view of %u blocks", kv->cap_blocks);
    }
    if (s->memory == TMRT_MEMORY_NAIVE) {
        /* the baseline: one max-length KV buffer, cleared as llama.cpp clears its KV buffer */
        if (full) {
            size_t bytes = (size_t)kv->cap_blocks * kv->block_bytes;
            kv->flat = calloc(1, bytes);
            if (!kv->flat) return tmrt__fail(err, TMEM_E_NO_MEMORY, "KV buffer of %zu bytes", bytes);
            memset(kv->flat, 0, bytes);
            s->info.naive_bytes += bytes;
            for (uint32_t b = 0; b < kv->cap_blocks; b++)
                kv->blocks[b] = (uint8_t *)kv->flat + (size_t)b * kv->block_bytes;
            kv->n_blocks = kv->cap_blocks;
        }
        tmem_recurrent_sizes rs = {0};
        if (linear && (st = tmem_recurrent_layout_sizes(&rl, &rs))) return tmrt__fail(err, st, "state sizes");
        for (uint32_t il = 0; il < hp->n_layers; il++) {
            if (!hp->recurrent[il]) continue;
            if (s->n_naive_bufs + 2 > TMRT_NAIVE_MAX_BUFS)
                return tmrt__fail(err, TMEM_E_FULL, "too many state buffers");
            s->run.conv_state[il] = calloc(1, rs.conv_bytes ? rs.conv_bytes : 4);
            s->run.ssm_state[il] = calloc(1, rs.ssm_bytes);
            s->naive_bufs[s->n_naive_bufs++] = s->run.conv_state[il];
            s->naive_bufs[s->n_naive_bufs++] = s->run.ssm_state[il];
            if (!s->run.conv_state[il] || !s->run.ssm_state[il])
                return tmrt__fail(err, TMEM_E_NO_MEMORY, "recurrent state");
            s->info.naive_bytes += rs.layer_bytes;
        }
        return TMEM_OK;
    }
    tmem_kv_cache_desc cd = {0};
    cd.kv = kl;
    cd.recurrent = rl;
    cd.kv_pool_bytes = full ? tmem_fit_bytes(fit, TMEM_FIT_ITEM_KV_CACHE) : 0;
    cd.state_pool_bytes = linear ? tmem_fit_bytes(fit, TMEM_FIT_ITEM_RECURRENT_STATE) : 0;
    /* Snapshots: a range of the shared type for a few states, not the whole
     * type (the default range), so sessions can share the context. */
    if (linear) {
        if ((st = shared_snapshot_type(s->ctx, &cd.snapshot_type)))
            return tmrt__fail(err, st, "snapshot type: %s", tmem_strerror(st));
        cd.snapshot_budget = snapshot_range(cd.snapshot_type, fit);
    }
    cd.on_evict = s->on_evict;
    cd.user = s->evict_user;
    cd.max_sequences = 4;
    cd.max_tokens = s->n_ctx;
    if ((st = tmem_kv_cache_create(s->ctx, &cd, &s->cache)))
        return tmrt__fail(err, st, "KV cache: %s", tmem_strerror(st));
    /* Until pinned, the new sequence is fair game for the reclaim another
     * thread's budget hit runs over every cache (the soak found it evicted
     * between create and pin): free the evicted handle and try again. */
    for (int attempt = 0;; attempt++) {
        st = tmem_kv_seq_create(s->cache, &s->seq);
        if (st == TMEM_OK) st = tmem_kv_seq_pin(s->cache, s->seq, true);
        if (st != TMEM_E_STATE) break;
        (void)!tmem_kv_seq_free(s->cache, s->seq); /* releases the evicted handle */
        s->seq = TMEM_KV_SEQ_NONE;
        if (attempt == 7) {
            st = TMEM_E_BUDGET; /* the budget is contested too hard to keep one */
            break;
        }
    }
    if (st) return tmrt__fail(err, st, "KV sequence: %s", tmem_strerror(st));
    kv->cache = s->cache;
    return refresh_views(s);
}

static tmem_status buffers_create(tmrt_session *s, size_t scratch, tmrt_error *err) {
    const tmrt_hparams *hp = &s->model->hp;
    size_t pool_bytes = tmrt__kern_pool_bytes((int)s->info.threads);
    void *logits, *scratch_mem, *tokens;
    tmem_status st;
    if (s->memory == TMRT_MEMORY_TYPED) {
        if ((st = linear_block(s, TMEM_ROLE_ACTIVATION, "logits", (uint64_t)hp->n_vocab * 4, &s->logits_heap,
                               &logits, err)) ||
            (st = linear_block(s, TMEM_ROLE_SCRATCH, "scratch", scratch, &s->scratch_heap, &scratch_mem, err)) ||
            (st = linear_block(s, TMEM_ROLE_SCRATCH, "thread pool", pool_bytes, &s->pool_heap, &s->pool_mem, err)) ||
            (st = linear_block(s, TMEM_ROLE_OUTPUT_TOKENS, "tokens", (uint64_t)s->n_ctx * 4, &s->token_heap, &tokens,
                               err)))
            return st;
    } else {
        logits = malloc((size_t)hp->n_vocab * 4);
        scratch_mem = aligned_alloc(64, (scratch + 63) / 64 * 64);
        s->pool_mem = aligned_alloc(64, (pool_bytes + 63) / 64 * 64);
        tokens = malloc((size_t)s->n_ctx * 4);
        void *all[] = {logits, scratch_mem, tokens};
        for (int i = 0; i < 3; i++) s->naive_bufs[s->n_naive_bufs++] = all[i];
        if (!logits || !scratch_mem || !s->pool_mem || !tokens)
            return tmrt__fail(err, TMEM_E_NO_MEMORY, "session buffers");
        s->info.naive_bytes += (uint64_t)hp->n_vocab * 4 + scratch + pool_bytes + (uint64_t)s->n_ctx * 4;
    }
    s->run.logits = logits;
    s->run.scratch = scratch_mem;
    s->run.scratch_cap = scratch;
    s->run.scratch_heap = s->scratch_heap;
    s->tokens = tokens;
    int e = tmrt__kern_pool_init(s->pool_mem, (int)s->info.threads, &s->run.pool);
    if (e) return tmrt__fail(err, TMEM_E_OS, "thread pool of %u threads: error %d", s->info.threads, e);
    s->run.n_threads = (int)s->info.threads;
    return TMEM_OK;
}

tmem_status tmrt_session_create(tmrt_model *m, const tmrt_session_desc *desc, tmrt_session **out,
                                tmrt_session_info *info, tmrt_error *err) {
    if (out) *out = NULL;
    if (info) memset(info, 0, sizeof *info);
    if (!out) return tmrt__fail(err, TMEM_E_INVALID_ARG, "session: bad arguments");
    /* admission first: nothing is allocated for a request that does not fit */
    tmrt_session_info admitted;
    tmem_status st = tmrt_session_admit(m, desc, &admitted, err);
#if TMRT_HAVE_VULKAN
    /* the host fit counts the roles the device path keeps on the device: on
     * the device, its heaps' budget admits them */
    if (st == TMEM_E_BUDGET && m && m->gpu) st = TMEM_OK;
#endif
    if (st) {
        if (info && st == TMEM_E_BUDGET) *info = admitted;
        return st;
    }
    tmrt_session *s = calloc(1, sizeof *s);
    if (!s) return tmrt__fail(err, TMEM_E_NO_MEMORY, "no memory for the session");
    s->model = m;
    s->ctx = m->ctx;
    s->memory = m->memory;
    s->kv_dtype = desc->kv_dtype == TMEM_KV_DTYPE_F32 ? TMEM_KV_DTYPE_F32 : TMEM_KV_DTYPE_F16;
    s->info = admitted;
    s->n_ctx = admitted.n_ctx;
    s->chunk = admitted.chunk;
    s->on_evict = desc->on_evict;
    s->evict_user = desc->evict_user;
    s->run.model = m;
    for (uint32_t il = 0, a = 0; il < m->hp.n_layers; il++)
        if (!m->hp.recurrent[il]) s->run.attn_index[il] = a++;
#if TMRT_HAVE_VULKAN
    if (m->gpu) {
        /* the device path: activations, KV, state on the device (gpurun/);
         * the host keeps the logits row, the sampler's scratch and the tokens */
        uint32_t chunk = admitted.chunk_asked < admitted.n_ctx ? admitted.chunk_asked : admitted.n_ctx;
        s->chunk = s->info.chunk = chunk;
        s->info.threads = 1;
        s->info.device = TMRT_DEVICE_VULKAN;
        size_t sc = (size_t)m->hp.n_vocab * 8;
        s->info.scratch_bytes = sc;
        tmrt_gpu_session_desc gd = {s->n_ctx, chunk, s->kv_dtype == TMEM_KV_DTYPE_F32};
        if ((st = tmrt__gpu_session_create(m, &gd, &s->gpu, &s->info.device_arena, err)) ||
            (st = buffers_create(s, sc, err))) {
            tmrt_session_destroy(s);
            return st;
        }
        s->info.device_bytes = tmrt__gpu_session_device_bytes(s->gpu) + tmrt__gpu_model_weight_bytes(m->gpu, NULL);
        tmem_gguf_info gi;
        if (s->memory == TMRT_MEMORY_NAIVE && tmem_gguf_get_info(m->gguf, &gi) == TMEM_OK)
            s->info.naive_bytes += gi.file_size; /* the twin's host copy of the file */
        if (info) *info = s->info;
        *out = s;
        return TMEM_OK;
    }
#endif
    size_t scratch = tmrt__scratch_bytes(m, admitted.chunk, (int)admitted.threads); /* in the "scratch" line */
    if ((st = tmrt__acts_create(s, err)) || (st = kv_create(s, &s->info.fit, err)) ||
        (st = buffers_create(s, scratch, err))) {
        tmrt_session_destroy(s);
        return st;
    }
    if (info) *info = s->info;
    *out = s;
    return TMEM_OK;
}

void tmrt_session_destroy(tmrt_session *s) {
    if (!s) return;
#if TMRT_HAVE_VULKAN
    tmrt__gpu_session_destroy(s->gpu);
#endif
    tmrt__kern_pool_fini(s->run.pool);
    tmem_kv_cache_destroy(s->cache);
    free(s->run.kv.blocks);
    tmem_heap *heaps[] = {s->act_heap, s->scratch_heap, s->pool_heap, s->logits_heap, s->token_heap};
    for (size_t i = 0; i < sizeof heaps / sizeof heaps[0]; i++) tmem_heap_destroy(heaps[i]);
    if (s->memory == TMRT_MEMORY_NAIVE) {
        for (uint32_t i = 0; i < s->n_naive_bufs; i++) free(s->naive_bufs[i]);
        free(s->run.kv.flat);
        free(s->pool_mem);
    }
    free(s);
}

tmem_status tmrt_session_get_info(const tmrt_session *s, tmrt_session_info *out) {
    if (!s || !out) return TMEM_E_INVALID_ARG;
    *out = s->info;
    out->n_past = s->n_past;
    return TMEM_OK;
}

const float *tmrt_session_logits(const tmrt_session *s) { return s && s->have_logits ? s->run.logits : NULL; }

const int32_t *tmrt_session_tokens(const tmrt_session *s, uint32_t *n) {
    if (n) *n = s ? s->n_past : 0;
    return s ? s->tokens : NULL;
}

/* Room for n more tokens: KV blocks (typed: the paged cache grows). */
static tmem_status grow(tmrt_session *s, uint32_t n, tmrt_error *err) {
    if (s->memory == TMRT_MEMORY_NAIVE) return TMEM_OK;
    tmem_status st = tmem_kv_seq_append(s->cache, s->seq, n);
    if (st) return tmrt__fail(err, st, "KV cache cannot grow by %u tokens: %s", n, tmem_strerror(st));
    return refresh_views(s);
}

static tmem_status reset_scratch(tmrt_session *s) {
    if (s->memory == TMRT_MEMORY_NAIVE) return TMEM_OK;
    /* the per-step LINEAR heap: rewind it and take the whole range again */
    void *p;
    tmem_status st = tmem_heap_reset(s->scratch_heap);
    if (!st) st = tmem_heap_alloc(s->scratch_heap, (s->run.scratch_cap + 63) / 64 * 64, 64, &p);
    if (!st) s->run.scratch = p;
    return st;
}

tmem_status tmrt_session_eval(tmrt_session *s, const tmrt_batch *b, tmrt_logits_fn fn, void *user, tmrt_error *err) {
    if (!s || !b || !b->n_tokens || (!b->tokens && !b->embd_rows) || (unsigned)b->logits > TMRT_LOGITS_ALL)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "eval: bad arguments");
    const tmrt_hparams *hp = &s->model->hp;
    if (b->embd_rows && (b->embd_first > b->n_tokens || b->embd_count > b->n_tokens - b->embd_first))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "eval: embedding rows past the batch");
    for (uint32_t i = 0; i < b->n_tokens; i++) {
        bool embd = b->embd_rows && i >= b->embd_first && i - b->embd_first < b->embd_count;
        if (!embd && (!b->tokens || b->tokens[i] < 0 || (uint32_t)b->tokens[i] >= hp->n_vocab))
            return tmrt__fail(err, TMEM_E_INVALID_ARG, "eval: token %u (id %d) outside the vocabulary of %u", i,
                              b->tokens ? b->tokens[i] : -1, hp->n_vocab);
    }
    if (b->n_tokens > s->n_ctx - s->n_past)
        return tmrt__fail(err, TMEM_E_FULL, "eval: %u tokens after %u pass the context of %u", b->n_tokens,
                          s->n_past, s->n_ctx);
    tmem_status st;
    for (uint32_t done = 0; done < b->n_tokens;) {
        uint32_t n = b->n_tokens - done < s->chunk ? b->n_tokens - done : s->chunk;
        if (!s->gpu && ((st = grow(s, n, err)) || (st = reset_scratch(s)))) return st;
        tmrt_step step = {0};
        step.tokens = b->tokens ? b->tokens + done : NULL;
        step.embd_rows = b->embd_rows;
        step.embd_first = b->embd_first;
        step.embd_count = b->embd_count;
        step.positions = b->positions ? b->positions + 4 * (size_t)done : NULL;
        step.n = n;
        step.n_past = s->n_past;
        step.decode = n == 1;
        step.batch_offset = done;
        bool last = done + n == b->n_tokens;
        step.logits = b->logits == TMRT_LOGITS_ALL ? TMRT_LOGITS_ALL
                      : b->logits == TMRT_LOGITS_LAST && last ? TMRT_LOGITS_LAST : TMRT_LOGITS_NONE;
        step.fn = fn;
        step.user = user;
#if TMRT_HAVE_VULKAN
        if (s->gpu) {
            if ((st = tmrt__gpu_forward(s->gpu, &step, s->run.logits, err))) return st;
        } else
#endif
        if ((st = tmrt__forward(&s->run, &step))) return tmrt__fail(err, st, "logits consumer: %s", tmem_strerror(st));
        for (uint32_t i = 0; i < n; i++) s->tokens[s->n_past + i] = b->tokens ? b->tokens[done + i] : -1;
        s->n_past += n;
        done += n;
        if (step.logits != TMRT_LOGITS_NONE) s->have_logits = true;
    }
    return TMEM_OK;
}

tmem_status tmrt_session_snapshot(tmrt_session *s) {
    if (!s) return TMEM_E_INVALID_ARG;
    if (s->memory == TMRT_MEMORY_NAIVE || s->gpu) return TMEM_E_UNSUPPORTED;
    return tmem_kv_snapshot_take(s->cache, s->seq, NULL);
}

tmem_status tmrt_session_rollback(tmrt_session *s, uint32_t n_tokens) {
    if (!s) return TMEM_E_INVALID_ARG;
    if (s->memory == TMRT_MEMORY_NAIVE || s->gpu) return TMEM_E_UNSUPPORTED;
    tmem_status st = tmem_kv_seq_rollback(s->cache, s->seq, n_tokens);
    if (!st) {
        s->n_past = n_tokens;
        s->have_logits = false;
        st = refresh_views(s);
    }
    return st;
}

tmrt_run *tmrt__session_run(tmrt_session *s) { return &s->run; }

/* The inference steps: planned arenas and heaps, the vision encoder, the
 * prefill and the decode loop. The math is left out; every buffer a kernel
 * would write is written, so what the OS sees is what a runtime would use. */
#include <string.h>
#include "demo/demo_session.h"

static tmem_status heap(session *s, tmem_role type_role, tmem_role role, tmem_heap_kind kind, uint64_t size,
                        const char *name, tmem_heap **out) {
    tmem_type *t;
    tmem_status st = tmem_role_get_type(s->ctx, type_role, &t);
    if (st != TMEM_OK) return st;
    tmem_heap_desc hd = {0};
    hd.kind = kind;
    hd.type = t;
    hd.role = role;
    hd.size = size;
    hd.name = name;
    return tmem_heap_create(s->ctx, &hd, out);
}

static tmem_status placement(session *s, tmem_role role, uint64_t size, const char *name, tmem_heap **out) {
    return heap(s, role, role, TMEM_HEAP_PLACEMENT, size, name, out);
}

static tmem_model_layer_kind layer_kind(const tmem_model_desc *m, uint32_t l) {
    bool full = m->full_attn_interval == 0 || (l + 1) % m->full_attn_interval == 0;
    return full ? TMEM_MODEL_LAYER_ATTENTION : TMEM_MODEL_LAYER_DELTANET;
}

tmem_status demo_step_plans(session *s) {
    static const tmem_model_layer_kind vis[] = {TMEM_MODEL_LAYER_VISION};
    static const tmem_model_layer_kind dec[] = {TMEM_MODEL_LAYER_DELTANET, TMEM_MODEL_LAYER_ATTENTION};
    uint64_t ctx = (uint64_t)s->prompt_total + s->opt->decode_tokens;
    tmem_status st = demo_plan_build(&s->model, &s->own->vision, "vision", vis, 1, s->image_patches, s->image_patches);
    if (st == TMEM_OK) st = demo_plan_build(&s->model, &s->own->prefill, "prefill", dec, 2, s->chunk, ctx);
    if (st == TMEM_OK) st = demo_plan_build(&s->model, &s->own->decode, "decode", dec, 2, 1, ctx);
    if (st != TMEM_OK) return st;
    const demo_plan *p[3] = {&s->own->vision, &s->own->prefill, &s->own->decode};
    for (int i = 0; i < 3; i++) {
        if (!s->opt->quiet) demo_plan_print(p[i]);
        if (s->res) {
            s->res->plan_arena[i] = p[i]->info.arena;
            s->res->plan_lower[i] = p[i]->info.lower_bound;
            s->res->plan_sum[i] = p[i]->info.sum_sizes;
        }
    }
    return TMEM_OK;
}

tmem_status demo_step_heaps(session *s) {
    const tmem_model_desc *m = &s->model;
    tmem_heap_desc vd, pd, dd;
    tmem_status st;
    if ((st = tmem_plan_heap_desc(s->own->vision.plan, &vd)) != TMEM_OK ||
        (st = tmem_plan_heap_desc(s->own->prefill.plan, &pd)) != TMEM_OK ||
        (st = tmem_plan_heap_desc(s->own->decode.plan, &dd)) != TMEM_OK)
        return st;
    uint64_t act = pd.size > dd.size ? pd.size : dd.size;
    if ((st = placement(s, TMEM_ROLE_VISION_INTERMEDIATE, vd.size, "vision.arena",
                        &s->vision_heap)) != TMEM_OK ||
        (st = placement(s, TMEM_ROLE_ACTIVATION, act, "activations.arena",
                        &s->act_heap)) != TMEM_OK ||
        (st = heap(s, TMEM_ROLE_VISION_INTERMEDIATE, TMEM_ROLE_IMAGE, TMEM_HEAP_LINEAR,
                   3ull * s->side * s->side * 4 + 4096, "pixels", &s->pixels)) != TMEM_OK ||
        (st = heap(s, TMEM_ROLE_VISION_INTERMEDIATE, TMEM_ROLE_VISION_INTERMEDIATE,
                   TMEM_HEAP_LINEAR, s->image_tokens * m->n_embd * 4 + 4096, "vision.embeddings",
                   &s->embd)) != TMEM_OK ||
        (st = heap(s, TMEM_ROLE_OUTPUT_TOKENS, TMEM_ROLE_OUTPUT_TOKENS, TMEM_HEAP_GENERAL,
                   DEMO_MAX_CONTEXT * 4 + 65536, "tokens", &s->tokens)) != TMEM_OK ||
        /* the last position's logits: a step's output, transient (the fit's "logits" line) */
        (st = heap(s, TMEM_ROLE_ACTIVATION, TMEM_ROLE_ACTIVATION, TMEM_HEAP_LINEAR,
                   (uint64_t)m->n_vocab * 4 + 4096, "logits", &s->logits_heap)) != TMEM_OK ||
        (st = heap(s, TMEM_ROLE_SCRATCH, TMEM_ROLE_SCRATCH, TMEM_HEAP_LINEAR,
                   (uint64_t)m->n_vocab * 8 + 4096, "sampler", &s->scratch)) != TMEM_OK)
        return st;

    /* The paged KV cache and the recurrent state, laid out by the model
     * layer exactly as the fit calculator sized them. */
    tmem_kv_cache_desc kd = {0};
    if ((st = tmem_model_kv_layout(m, TMEM_KV_DTYPE_DEFAULT, 0, &kd.kv)) != TMEM_OK ||
        (st = tmem_model_recurrent_layout(m, TMEM_KV_DTYPE_DEFAULT, &kd.recurrent)) != TMEM_OK)
        return st;
    kd.max_tokens = DEMO_MAX_CONTEXT;
    kd.max_sequences = 4;
    if ((st = tmem_kv_cache_create(s->ctx, &kd, &s->own->kv)) != TMEM_OK) return st;

    tmem_alloc_desc ad = {0};
    tmem_alloc_info ai;
    ad.size = DEMO_MAX_CONTEXT * sizeof(uint32_t);
    ad.name = "token_ring";
    if ((st = tmem_heap_alloc_ex(s->tokens, &ad, &ai)) != TMEM_OK) return st;
    s->token_ring = ai.ptr;
    return TMEM_OK;
}

tmem_status demo_step_vision(session *s) {
    demo_plan *p = &s->own->vision;
    tmem_status st = tmem_plan_heap_bind(s->vision_heap, p->plan, p->ptrs);
    if (st != TMEM_OK) return st;
    /* patch embedding reads the pixel tensor (twice: the temporal patch) */
    volatile float acc = 0;
    for (int t = 0; t < 2; t++)
        for (uint64_t i = 0; i < 3ull * s->side * s->side; i += 16) acc += s->pixel_values[i];
    (void)acc;
    for (uint32_t l = 0; l < s->model.vis_depth; l++) {
        demo_plan_run_layer(p, TMEM_MODEL_LAYER_VISION, l);
        if (l == s->model.vis_depth / 2) demo_sample(s->res, s->fp_base);
    }
    /* the merger's output waits for the prefill that consumes it */
    uint64_t bytes = s->image_tokens * s->model.n_embd * 4;
    if ((st = tmem_heap_alloc(s->embd, bytes, 64, (void **)&s->image_embed)) != TMEM_OK) return st;
    demo_touch(s->image_embed, bytes, 7);
    demo_sample(s->res, s->fp_base);
    /* transient: the encoder's arena and the pixel tensor go back now */
    st = tmem_plan_heap_unbind(s->vision_heap, p->plan);
    s->pixel_values = NULL;
    return st == TMEM_OK ? tmem_heap_reset(s->pixels) : st;
}

/* Write the K and V rows of tokens [pos, pos + n) in attention layer `al`. */
static tmem_status write_kv(session *s, uint32_t al, uint32_t pos, uint32_t n, uint64_t row) {
    for (uint32_t t = pos; t < pos + n; t++) {
        void *k, *v;
        tmem_status st = tmem_kv_seq_kv(s->own->kv, s->seq, al, t, TMEM_KV_WRITE, &k, &v);
        if (st != TMEM_OK) return st;
        memset(k, (int)(t + al), (size_t)row);
        memset(v, (int)(t - al), (size_t)row);
    }
    return TMEM_OK;
}

/* The last position's logits, then the sampler's scratch (top-k over the
 * vocabulary: value and index per entry); both transient, per step. */
static tmem_status sample_token(session *s, uint32_t pos) {
    uint64_t v = s->model.n_vocab;
    float *logits;
    void *cand;
    tmem_alloc_desc ad = {0};
    tmem_alloc_info ai;
    ad.size = v * 4;
    ad.alignment = 64;
    ad.name = "logits";
    tmem_status st = tmem_heap_alloc_ex(s->logits_heap, &ad, &ai);
    if (st != TMEM_OK) return st;
    logits = ai.ptr;
    demo_touch(logits, v * 4, pos);
    if ((st = tmem_heap_alloc(s->scratch, v * 8, 64, &cand)) != TMEM_OK) return st;
    demo_touch(cand, v * 8, pos);
    if ((st = tmem_heap_reset(s->scratch)) != TMEM_OK) return st;
    return tmem_heap_reset(s->logits_heap);
}

/* One forward pass over tokens [pos, pos + n) with the plan bound in the
 * activation arena: every layer writes its graph's buffers, attention layers
 * their new K/V rows, DeltaNet layers their recurrent state. */
static tmem_status forward(session *s, const demo_plan *p, uint32_t pos, uint32_t n, bool sample) {
    const tmem_model_desc *m = &s->model;
    tmem_kv_layout kl;
    tmem_recurrent_layout rl;
    tmem_recurrent_sizes rs;
    uint64_t tok_bytes;
    tmem_status st;
    if ((st = tmem_model_kv_layout(m, TMEM_KV_DTYPE_DEFAULT, 0, &kl)) != TMEM_OK ||
        (st = tmem_model_recurrent_layout(m, TMEM_KV_DTYPE_DEFAULT, &rl)) != TMEM_OK ||
        (st = tmem_recurrent_layout_sizes(&rl, &rs)) != TMEM_OK ||
        (st = tmem_kv_layout_token_bytes(&kl, &tok_bytes)) != TMEM_OK)
        return st;
    uint64_t row = tok_bytes / ((uint64_t)kl.layers * 2);
    if ((st = tmem_kv_seq_append(s->own->kv, s->seq, n)) != TMEM_OK) return st;
    uint32_t al = 0, ll = 0;
    for (uint32_t l = 0; l < m->n_layers; l++) {
        tmem_model_layer_kind kind = layer_kind(m, l);
        demo_plan_run_layer(p, kind, l);
        if (kind == TMEM_MODEL_LAYER_ATTENTION) {
            if ((st = write_kv(s, al++, pos, n, row)) != TMEM_OK) return st;
        } else {
            void *conv, *ssm;
            if ((st = tmem_kv_seq_state(s->own->kv, s->seq, ll++, &conv, &ssm)) != TMEM_OK) return st;
            demo_touch(conv, rs.conv_bytes, pos + l);
            demo_touch(ssm, rs.ssm_bytes, pos + l);
        }
        if (sample) demo_sample(s->res, s->fp_base);
    }
    return sample_token(s, pos);
}

tmem_status demo_step_prefill(session *s) {
    demo_plan *p = &s->own->prefill;
    tmem_status st = tmem_kv_seq_create(s->own->kv, &s->seq);
    /* The sequence being generated is pinned while it is worked on: the
     * context's reclaim must not evict it between two appends (a budget
     * that is too small is then a TMEM_E_BUDGET from the allocation that
     * did not fit, not a stale handle). Unpinned when generation ends. */
    if (st == TMEM_OK) st = tmem_kv_seq_pin(s->own->kv, s->seq, true);
    if (st == TMEM_OK) st = tmem_plan_heap_bind(s->act_heap, p->plan, p->ptrs);
    for (uint32_t pos = 0; st == TMEM_OK && pos < s->prompt_total; pos += s->chunk) {
        uint32_t n = s->prompt_total - pos < s->chunk ? s->prompt_total - pos : s->chunk;
        /* the same plan for a short last chunk: its buffers are sized for a full one */
        st = forward(s, p, pos, n, true);
    }
    if (st != TMEM_OK) return st;
    /* the image embeddings were consumed by the prompt's forward pass */
    s->image_embed = NULL;
    if ((st = tmem_heap_reset(s->embd)) != TMEM_OK) return st;
    /* end of the prompt: snapshot the recurrent state (prefix reuse,
     * rollback of a speculative continuation) */
    if ((st = tmem_kv_snapshot_take(s->own->kv, s->seq, NULL)) != TMEM_OK) return st;
    s->token_ring[s->generated_tokens++ % DEMO_MAX_CONTEXT] = 151644u;
    return tmem_plan_heap_unbind(s->act_heap, p->plan);
}

tmem_status demo_step_decode(session *s) {
    demo_plan *p = &s->own->decode;
    tmem_status st = tmem_plan_heap_bind(s->act_heap, p->plan, p->ptrs);
    for (uint32_t i = 0; st == TMEM_OK && i < s->opt->decode_tokens; i++) {
        st = forward(s, p, s->prompt_total + i, 1, false);
        s->token_ring[s->generated_tokens++ % DEMO_MAX_CONTEXT] = 1000u + i;
        demo_sample(s->res, s->fp_base);
    }
    if (st != TMEM_OK) return st;
    if ((st = tmem_kv_seq_pin(s->own->kv, s->seq, false)) != TMEM_OK) return st;
    tmem_kv_cache_stats ks;
    if ((st = tmem_kv_cache_get_stats(s->own->kv, &ks)) != TMEM_OK) return st;
    if (s->res) {
        s->res->kv_bytes = ks.kv_bytes_allocated;
        s->res->state_bytes = ks.state_bytes;
        s->res->snapshot_bytes = ks.snapshot_bytes;
        s->res->generated = s->generated_tokens;
    }
    return tmem_kv_cache_check(s->own->kv);
}

/*
 * The activation graph of one layer as buffers with lifetimes: the input of
 * the activation planner. Each op advances a step counter; a buffer lives
 * from the step that produces it to one past the last step that reads it.
 * Activations are f32 (what CPU backends compute in).
 *
 * The ops follow llama.cpp's graphs for these layers (qwen35/qwen3next,
 * llama, the Qwen ViT blocks) closely enough that the sizes and overlaps are
 * the real ones; views and in-place ops (rope, norms, activations) make no
 * new buffer, as in ggml.
 */
#include "model_internal.h"
#include <string.h>

#define F32 4ull
#define DELTA_CHUNK ((uint64_t)TMEM_MODEL_DELTA_CHUNK) /* chunk length of the chunked gated delta rule */

typedef struct gb {
    tmem_model_buffer *bufs;
    uint32_t cap, n, step;
    bool overflow;
} gb;

/* A new buffer produced by the current op: rows x cols f32. */
static uint32_t out(gb *g, const char *name, uint64_t rows, uint64_t cols) {
    uint64_t sz;
    if (tmem__mul_overflow(rows, cols, &sz) || tmem__mul_overflow(sz, F32, &sz)) {
        g->overflow = true;
        sz = 0;
    }
    uint32_t i = g->n++;
    if (i < g->cap) {
        g->bufs[i].name = name;
        g->bufs[i].size = sz;
        g->bufs[i].start = g->step;
        g->bufs[i].end = g->step + 1;
    }
    return i;
}
/* The current op reads buffer i: it must live through this step. */
static void use(gb *g, uint32_t i) {
    if (i < g->cap && g->bufs[i].end < g->step + 1) g->bufs[i].end = g->step + 1;
}
static void next(gb *g) { g->step++; }
/* Alive until the end of the layer (the layer's output). */
static void keep(gb *g, uint32_t i) {
    if (i < g->cap) g->bufs[i].end = UINT32_MAX; /* fixed up at the end */
}

/* residual + FFN (SwiGLU), shared by both decoder layer kinds */
static void ffn(gb *g, const tmem_model_desc *m, uint64_t N, uint32_t x, uint32_t o) {
    uint64_t E = m->n_embd, F = m->n_ff;
    uint32_t h = out(g, "attn_residual", N, E); use(g, x); use(g, o); next(g);
    uint32_t hn = out(g, "ffn_norm", N, E); use(g, h); next(g);
    uint32_t fg = out(g, "ffn_gate", N, F); use(g, hn); next(g);
    uint32_t fu = out(g, "ffn_up", N, F); use(g, hn); next(g);
    use(g, fg); use(g, fu); next(g); /* silu(gate) * up, into gate */
    uint32_t fd = out(g, "ffn_down", N, E); use(g, fg); next(g);
    uint32_t y = out(g, "layer_out", N, E); use(g, h); use(g, fd); keep(g, y); next(g);
}

static void attention_layer(gb *g, const tmem_model_desc *m, uint64_t N, uint64_t C, uint32_t flags) {
    uint64_t E = m->n_embd, H = m->n_head, Hkv = m->n_head_kv, dk = m->head_dim_k, dv = m->head_dim_v;
    uint32_t x = out(g, "layer_in", N, E); next(g);
    uint32_t xn = out(g, "attn_norm", N, E); use(g, x); next(g);
    uint32_t q = out(g, m->attn_output_gate ? "q_gate" : "q", N, H * dk * (m->attn_output_gate ? 2 : 1));
    use(g, xn); next(g);
    uint32_t k = out(g, "k", N, Hkv * dk); use(g, xn); next(g);
    uint32_t v = out(g, "v", N, Hkv * dv); use(g, xn); next(g);
    use(g, q); use(g, k); next(g);  /* q/k norm + rope, in place */
    use(g, k); use(g, v); next(g);  /* store k, v into the cache */
    uint32_t ao;
    if (flags & TMEM_MODEL_GRAPH_NO_FLASH_ATTN) {
        uint64_t hn;
        if (tmem__mul_overflow(H, N, &hn)) g->overflow = true;
        uint32_t kq = out(g, "kq", hn, C); use(g, q); next(g); /* Q K^T over the cache */
        use(g, kq); next(g);                                  /* softmax, in place */
        ao = out(g, "kqv", N, H * dv); use(g, kq); next(g);
    } else {
        ao = out(g, "attn_out", N, H * dv); use(g, q); next(g); /* flash attention over the cache */
    }
    if (m->attn_output_gate) { use(g, ao); use(g, q); next(g); } /* * sigmoid(gate) */
    uint32_t o = out(g, "attn_proj", N, E); use(g, ao); next(g);
    ffn(g, m, N, x, o);
}

/* The delta rule one chunk at a time: the chunk loop is one step in which
 * one chunk's buffers, the inputs and the output are alive together. */
static uint32_t delta_per_chunk(gb *g, const tmem_model_desc *m, uint64_t N, uint32_t qr, uint32_t kr,
                                uint32_t conv, uint32_t beta, uint32_t gate) {
    uint64_t G = m->ssm_group_count, dk = m->ssm_state_size, Hv = m->ssm_time_step_rank;
    uint64_t dv = m->ssm_inner_size / Hv, CH = N < DELTA_CHUNK ? N : DELTA_CHUNK;
    (void)G;
    out(g, "k_beta", CH, Hv * dk);
    out(g, "v_beta", CH, Hv * dv);
    out(g, "decay_mask", Hv * CH, CH);
    out(g, "chunk_attn", Hv * CH, CH);
    out(g, "u", CH, Hv * dv);
    out(g, "w", CH, Hv * dk);
    out(g, "chunk_qk", Hv * CH, CH);
    out(g, "v_new", CH, Hv * dv);
    uint32_t core = out(g, "core_out", N, Hv * dv);
    use(g, qr); use(g, kr); use(g, conv); use(g, beta); use(g, gate);
    next(g);
    return core;
}

static void deltanet_layer(gb *g, const tmem_model_desc *m, uint64_t N, uint32_t flags) {
    uint64_t E = m->n_embd, G = m->ssm_group_count, dk = m->ssm_state_size, Hv = m->ssm_time_step_rank;
    uint64_t I = m->ssm_inner_size, dv = I / Hv, conv_ch = I + 2 * G * dk;
    uint64_t nch = (N + DELTA_CHUNK - 1) / DELTA_CHUNK, Np = nch * DELTA_CHUNK;
    uint32_t x = out(g, "layer_in", N, E); next(g);
    uint32_t xn = out(g, "attn_norm", N, E); use(g, x); next(g);
    uint32_t qkv = out(g, "qkv_mixed", N, conv_ch); use(g, xn); next(g);
    uint32_t z = out(g, "z", N, I); use(g, xn); next(g);
    uint32_t beta = out(g, "beta", N, Hv); use(g, xn); next(g);
    uint32_t a = out(g, "alpha", N, Hv); use(g, xn); next(g);
    uint32_t conv = out(g, "conv_out", N, conv_ch); use(g, qkv); next(g); /* conv1d + silu with conv state */
    uint32_t gate = out(g, "gate", N, Hv); use(g, a); next(g);            /* -exp(A) * softplus(a + dt) */
    use(g, conv); next(g);                                                /* l2 norm q, k in place */
    uint32_t qr = conv, kr = conv;
    if (Hv != G) { /* repeat q, k from key heads to value heads */
        qr = out(g, "q_rep", N, Hv * dk); use(g, conv); next(g);
        kr = out(g, "k_rep", N, Hv * dk); use(g, conv); next(g);
    }
    if (flags & TMEM_MODEL_GRAPH_CHUNKED_DELTA) {
        uint32_t core = delta_per_chunk(g, m, N, qr, kr, conv, beta, gate);
        use(g, core); use(g, z); next(g); /* rms_norm(core) * silu(z), in place */
        uint32_t o = out(g, "attn_proj", N, E); use(g, core); next(g);
        ffn(g, m, N, x, o);
        return;
    }
    uint32_t kb = out(g, "k_beta", Np, Hv * dk); use(g, kr); use(g, beta); next(g);
    uint32_t vb = out(g, "v_beta", Np, Hv * dv); use(g, conv); use(g, beta); next(g);
    uint32_t dm = out(g, "decay_mask", Hv * nch * DELTA_CHUNK, DELTA_CHUNK); use(g, gate); next(g);
    uint32_t at = out(g, "chunk_attn", Hv * nch * DELTA_CHUNK, DELTA_CHUNK); use(g, kb); use(g, kr); use(g, dm);
    next(g);
    use(g, at); next(g); /* triangular solve, in place */
    uint32_t u = out(g, "u", Np, Hv * dv); use(g, at); use(g, vb); next(g);
    uint32_t w = out(g, "w", Np, Hv * dk); use(g, at); use(g, kb); use(g, gate); next(g);
    uint32_t qk = out(g, "chunk_qk", Hv * nch * DELTA_CHUNK, DELTA_CHUNK); use(g, qr); use(g, kr); use(g, dm);
    next(g);
    uint32_t vn = out(g, "v_new", Np, Hv * dv); use(g, u); use(g, w); next(g); /* u - w S, chunk by chunk */
    uint32_t core = out(g, "core_out", Np, Hv * dv); use(g, qr); use(g, qk); use(g, vn); use(g, gate); next(g);
    use(g, core); use(g, z); next(g); /* rms_norm(core) * silu(z), in place */
    uint32_t o = out(g, "attn_proj", N, E); use(g, core); next(g);
    ffn(g, m, N, x, o);
}

static void vision_layer(gb *g, const tmem_model_desc *m, uint64_t P, uint32_t flags) {
    uint64_t h = m->vis_hidden, f = m->vis_ff, nh = m->vis_heads;
    uint32_t x = out(g, "layer_in", P, h); next(g);
    uint32_t xn = out(g, "norm1", P, h); use(g, x); next(g);
    uint32_t qkv = out(g, "qkv", P, 3 * h); use(g, xn); next(g);
    use(g, qkv); next(g); /* rope on q, k in place */
    uint32_t ao;
    if (flags & TMEM_MODEL_GRAPH_NO_FLASH_ATTN) {
        uint64_t hp;
        if (tmem__mul_overflow(nh, P, &hp)) g->overflow = true;
        uint32_t kq = out(g, "kq", hp, P); use(g, qkv); next(g);
        use(g, kq); next(g);
        ao = out(g, "kqv", P, h); use(g, kq); use(g, qkv); next(g);
    } else {
        ao = out(g, "attn_out", P, h); use(g, qkv); next(g);
    }
    uint32_t o = out(g, "attn_proj", P, h); use(g, ao); next(g);
    uint32_t hr = out(g, "residual", P, h); use(g, x); use(g, o); next(g);
    uint32_t hn = out(g, "norm2", P, h); use(g, hr); next(g);
    uint32_t f1 = out(g, "fc1", P, f); use(g, hn); next(g);
    use(g, f1); next(g); /* gelu in place */
    uint32_t f2 = out(g, "fc2", P, h); use(g, f1); next(g);
    uint32_t y = out(g, "layer_out", P, h); use(g, hr); use(g, f2); keep(g, y); next(g);
}

tmem_status tmem_model_layer_graph(const tmem_model_desc *m, tmem_model_layer_kind kind, uint64_t n_tokens,
                                   uint64_t n_ctx, uint32_t flags, tmem_model_buffer *bufs, uint32_t cap,
                                   uint32_t *count) {
    if (count) *count = 0;
    if (!count || (!bufs && cap) || !n_tokens || (flags & ~(uint32_t)TMEM_MODEL_GRAPH_FLAG_MASK))
        return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = tmem_model_validate(m);
    if (st) return st;
    uint32_t full, linear;
    tmem_model_layer_counts(m, &full, &linear);
    gb g = {bufs, cap, 0, 0, false};
    switch (kind) {
    case TMEM_MODEL_LAYER_ATTENTION:
        if (!full) return tmem__err(TMEM_E_INVALID_ARG);
        attention_layer(&g, m, n_tokens, n_ctx < n_tokens ? n_tokens : n_ctx, flags);
        break;
    case TMEM_MODEL_LAYER_DELTANET:
        if (!linear) return tmem__err(TMEM_E_INVALID_ARG);
        deltanet_layer(&g, m, n_tokens, flags);
        break;
    case TMEM_MODEL_LAYER_VISION:
        if (!m->vis_depth) return tmem__err(TMEM_E_INVALID_ARG);
        vision_layer(&g, m, n_tokens, flags);
        break;
    default: return tmem__err(TMEM_E_INVALID_ARG);
    }
    if (g.overflow) return tmem__err(TMEM_E_OVERFLOW);
    for (uint32_t i = 0; i < g.n && i < cap; i++)
        if (bufs[i].end == UINT32_MAX) bufs[i].end = g.step;
    *count = g.n;
    return g.n > cap ? TMEM_E_FULL : TMEM_OK;
}

uint64_t tmem__model_graph_lower_bound(const tmem_model_buffer *bufs, uint32_t n) {
    uint32_t steps = 0;
    for (uint32_t i = 0; i < n; i++)
        if (bufs[i].end > steps) steps = bufs[i].end;
    uint64_t best = 0;
    /* graphs are a few dozen buffers: the quadratic sweep is plenty */
    for (uint32_t s = 0; s < steps; s++) {
        uint64_t live = 0;
        for (uint32_t i = 0; i < n; i++)
            if (bufs[i].start <= s && s < bufs[i].end && tmem__add_overflow(live, bufs[i].size, &live))
                return UINT64_MAX; /* saturate: callers treat it as "does not fit" */
        if (live > best) best = live;
    }
    return best;
}

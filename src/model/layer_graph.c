/*
 * The activation graph of one layer, as one table per layer kind: the only
 * description of each buffer's size and lifetime (model.h: "Layer graphs").
 *
 * A table is a list of rows in execution order. A row is one op
 * (tmem_model_op) that may produce one buffer (rows x cols f32) and read
 * others; consecutive rows of the same op are one op with several outputs
 * (the chunk loop of the chunked delta rule). Every op gets the next step;
 * a buffer lives from the step that produces it to one past the last step
 * that reads or writes it, and a buffer marked `keep` (the layer's output)
 * to the end of the layer. Rows carry a condition (the model has the
 * attention output gate, the graph flags ask for flash attention or the
 * chunked delta rule, ...); a row whose condition does not hold is not in
 * the graph. The fit calculator (fit.c), the runtime's session plan and the
 * runtime's forward pass (which runs each op at the step this file assigns
 * it, checked in testing builds: tests/runtime/test_graph_lifetimes.c) all
 * read the graph this builds, by id.
 *
 * The ops follow llama.cpp's graphs for these layers (qwen35/qwen3next,
 * llama, the Qwen ViT blocks) closely enough that the sizes and overlaps are
 * the real ones; views and in-place ops (rope, norms, activations) make no
 * new buffer, as in ggml. Activations are f32 (what CPU backends compute in).
 */
#include "model_internal.h"
#include <string.h>

#define F32 4ull
#define DELTA_CHUNK ((uint64_t)TMEM_MODEL_DELTA_CHUNK) /* chunk length of the chunked gated delta rule */

/* ---- names (reports only) ------------------------------------------------ */

static const char *const buf_names[TMEM_MODEL_BUF_COUNT] = {
#define X(id, name) [TMEM_MODEL_BUF_##id] = name,
    TMEM_MODEL_BUF_LIST(X)
#undef X
};

static const char *const op_names[TMEM_MODEL_OP_COUNT] = {
#define X(id, name) [TMEM_MODEL_OP_##id] = name,
    TMEM_MODEL_OP_LIST(X)
#undef X
};

const char *tmem_model_buf_name(tmem_model_buf_id id) {
    return (unsigned)id < TMEM_MODEL_BUF_COUNT ? buf_names[id] : NULL;
}

const char *tmem_model_op_name(tmem_model_op op) {
    return (unsigned)op < TMEM_MODEL_OP_COUNT ? op_names[op] : NULL;
}

/* ---- the tables ------------------------------------------------------------ */

/* Dimensions a row's shape is made of, evaluated once per graph. */
typedef enum dim {
    D_1 = 0, D_N, D_E, D_F, D_Q, D_QG, D_KK, D_KV, D_HN, D_CTX, D_HDV, /* attention */
    D_CONV, D_I, D_HV, D_HVK, D_HVV, D_CH, D_HVCH, D_NP, D_HVNP, D_DC,   /* DeltaNet */
    D_VH, D_V3H, D_VF, D_VHP,                                           /* vision */
    D_COUNT
} dim;

/* When a row is in the graph. */
enum {
    W_ALL = 0,
    W_GATE,        /* the q projection carries the output gate */
    W_NOGATE,
    W_FLASH,       /* flash attention: no score matrix */
    W_NOFLASH,     /* TMEM_MODEL_GRAPH_NO_FLASH_ATTN */
    W_REPEAT,      /* DeltaNet value heads != key heads: q, k repeated */
    W_CHUNKED,     /* TMEM_MODEL_GRAPH_CHUNKED_DELTA */
    W_UNCHUNKED
};

/* Reads that name "whichever of two buffers this graph has". */
enum {
    A_QUERY = TMEM_MODEL_BUF_COUNT, /* q_gate, else q */
    A_QR,                           /* q_rep, else conv_out */
    A_KR,                           /* k_rep, else conv_out */
    A_MIXED,                        /* attn_out (flash), else kqv */
    A_END,
    NO = 0xFF                       /* no buffer */
};

#define MAX_USES 6 /* five reads and the NO that ends them */
typedef struct row {
    uint8_t op, when, out, rows, cols, keep;
    uint8_t use[MAX_USES];          /* NO-terminated */
} row;

#define R(op, when, out, r, c, ...) {TMEM_MODEL_OP_##op, when, out, r, c, 0, {__VA_ARGS__, NO}}
#define RK(op, when, out, r, c, ...) {TMEM_MODEL_OP_##op, when, out, r, c, 1, {__VA_ARGS__, NO}}
#define B(id) TMEM_MODEL_BUF_##id

/* residual + FFN (SwiGLU), shared by both decoder layer kinds */
#define FFN_ROWS                                                                  \
    R(RESIDUAL, W_ALL, B(ATTN_RESIDUAL), D_N, D_E, B(LAYER_IN), B(ATTN_PROJ)),    \
    R(FFN_NORM, W_ALL, B(FFN_NORM), D_N, D_E, B(ATTN_RESIDUAL)),                  \
    R(FFN_GATE, W_ALL, B(FFN_GATE), D_N, D_F, B(FFN_NORM)),                       \
    R(FFN_UP, W_ALL, B(FFN_UP), D_N, D_F, B(FFN_NORM)),                           \
    R(FFN_ACT, W_ALL, NO, 0, 0, B(FFN_GATE), B(FFN_UP)), /* silu(gate) * up, into gate */ \
    R(FFN_DOWN, W_ALL, B(FFN_DOWN), D_N, D_E, B(FFN_GATE)),                       \
    RK(LAYER_OUT, W_ALL, B(LAYER_OUT), D_N, D_E, B(ATTN_RESIDUAL), B(FFN_DOWN))

static const row attention_rows[] = {
    R(LAYER_IN, W_ALL, B(LAYER_IN), D_N, D_E, NO),
    R(ATTN_NORM, W_ALL, B(ATTN_NORM), D_N, D_E, B(LAYER_IN)),
    R(Q_PROJ, W_GATE, B(Q_GATE), D_N, D_QG, B(ATTN_NORM)),
    R(Q_PROJ, W_NOGATE, B(Q), D_N, D_Q, B(ATTN_NORM)),
    R(K_PROJ, W_ALL, B(K), D_N, D_KK, B(ATTN_NORM)),
    R(V_PROJ, W_ALL, B(V), D_N, D_KV, B(ATTN_NORM)),
    R(QK_NORM_ROPE, W_ALL, NO, 0, 0, A_QUERY, B(K)), /* q/k norm + rope, in place */
    R(KV_STORE, W_ALL, NO, 0, 0, B(K), B(V)),         /* store k, v into the cache */
    R(ATTN_SCORES, W_NOFLASH, B(KQ), D_HN, D_CTX, A_QUERY), /* Q K^T over the cache */
    R(ATTN_SOFTMAX, W_NOFLASH, NO, 0, 0, B(KQ)),      /* in place */
    R(ATTN_MIX, W_NOFLASH, B(KQV), D_N, D_HDV, B(KQ)),
    R(ATTN, W_FLASH, B(ATTN_OUT), D_N, D_HDV, A_QUERY), /* flash attention over the cache */
    R(OUT_GATE, W_GATE, NO, 0, 0, A_MIXED, A_QUERY), /* * sigmoid(gate) */
    R(OUT_PROJ, W_ALL, B(ATTN_PROJ), D_N, D_E, A_MIXED),
    FFN_ROWS,
};

static const row deltanet_rows[] = {
    R(LAYER_IN, W_ALL, B(LAYER_IN), D_N, D_E, NO),
    R(ATTN_NORM, W_ALL, B(ATTN_NORM), D_N, D_E, B(LAYER_IN)),
    R(QKV_PROJ, W_ALL, B(QKV_MIXED), D_N, D_CONV, B(ATTN_NORM)),
    R(Z_PROJ, W_ALL, B(Z), D_N, D_I, B(ATTN_NORM)),
    R(BETA_PROJ, W_ALL, B(BETA), D_N, D_HV, B(ATTN_NORM)),
    R(ALPHA_PROJ, W_ALL, B(ALPHA), D_N, D_HV, B(ATTN_NORM)),
    R(CONV, W_ALL, B(CONV_OUT), D_N, D_CONV, B(QKV_MIXED)), /* conv1d + silu with the conv state */
    R(DECAY_GATE, W_ALL, B(GATE), D_N, D_HV, B(ALPHA)),    /* -exp(A) * softplus(a + dt) */
    R(L2NORM, W_ALL, NO, 0, 0, B(CONV_OUT)),               /* l2 norm q, k in place */
    R(Q_REPEAT, W_REPEAT, B(Q_REP), D_N, D_HVK, B(CONV_OUT)), /* key heads -> value heads */
    R(K_REPEAT, W_REPEAT, B(K_REP), D_N, D_HVK, B(CONV_OUT)),
    /* chunked: the chunk loop is one step in which one chunk's buffers, the
     * inputs and the output are alive together */
    R(DELTA_RULE, W_CHUNKED, B(K_BETA), D_CH, D_HVK, NO),
    R(DELTA_RULE, W_CHUNKED, B(V_BETA), D_CH, D_HVV, NO),
    R(DELTA_RULE, W_CHUNKED, B(DECAY_MASK), D_HVCH, D_CH, NO),
    R(DELTA_RULE, W_CHUNKED, B(CHUNK_ATTN), D_HVCH, D_CH, NO),
    R(DELTA_RULE, W_CHUNKED, B(U), D_CH, D_HVV, NO),
    R(DELTA_RULE, W_CHUNKED, B(W), D_CH, D_HVK, NO),
    R(DELTA_RULE, W_CHUNKED, B(CHUNK_QK), D_HVCH, D_CH, NO),
    R(DELTA_RULE, W_CHUNKED, B(V_NEW), D_CH, D_HVV, NO),
    R(DELTA_RULE, W_CHUNKED, B(CORE_OUT), D_N, D_HVV, A_QR, A_KR, B(CONV_OUT), B(BETA), B(GATE)),
    /* all chunks at once (llama.cpp's graph) */
    R(K_BETA, W_UNCHUNKED, B(K_BETA), D_NP, D_HVK, A_KR, B(BETA)),
    R(V_BETA, W_UNCHUNKED, B(V_BETA), D_NP, D_HVV, B(CONV_OUT), B(BETA)),
    R(DECAY_MASK, W_UNCHUNKED, B(DECAY_MASK), D_HVNP, D_DC, B(GATE)),
    R(CHUNK_ATTN, W_UNCHUNKED, B(CHUNK_ATTN), D_HVNP, D_DC, B(K_BETA), A_KR, B(DECAY_MASK)),
    R(TRI_SOLVE, W_UNCHUNKED, NO, 0, 0, B(CHUNK_ATTN)), /* triangular solve, in place */
    R(CHUNK_U, W_UNCHUNKED, B(U), D_NP, D_HVV, B(CHUNK_ATTN), B(V_BETA)),
    R(CHUNK_W, W_UNCHUNKED, B(W), D_NP, D_HVK, B(CHUNK_ATTN), B(K_BETA), B(GATE)),
    R(CHUNK_QK, W_UNCHUNKED, B(CHUNK_QK), D_HVNP, D_DC, A_QR, A_KR, B(DECAY_MASK)),
    R(V_NEW, W_UNCHUNKED, B(V_NEW), D_NP, D_HVV, B(U), B(W)), /* u - w S, chunk by chunk */
    R(DELTA_RULE, W_UNCHUNKED, B(CORE_OUT), D_NP, D_HVV, A_QR, B(CHUNK_QK), B(V_NEW), B(GATE)),
    R(GATED_NORM, W_ALL, NO, 0, 0, B(CORE_OUT), B(Z)), /* rms_norm(core) * silu(z), in place */
    R(OUT_PROJ, W_ALL, B(ATTN_PROJ), D_N, D_E, B(CORE_OUT)),
    FFN_ROWS,
};

static const row vision_rows[] = {
    /* the block's input; in the first block the patch embedding, whose
     * second frame's product is held in norm1 until it is summed */
    R(LAYER_IN, W_ALL, B(LAYER_IN), D_N, D_VH, NO),
    R(LAYER_IN, W_ALL, B(NORM1), D_N, D_VH, NO),
    R(NORM1, W_ALL, NO, 0, 0, B(LAYER_IN), B(NORM1)),
    R(QKV_PROJ, W_ALL, B(QKV), D_N, D_V3H, B(NORM1)),
    R(ROPE, W_ALL, NO, 0, 0, B(QKV)), /* rope on q, k in place */
    R(ATTN_SCORES, W_NOFLASH, B(KQ), D_VHP, D_N, B(QKV)),
    R(ATTN_SOFTMAX, W_NOFLASH, NO, 0, 0, B(KQ)),
    R(ATTN_MIX, W_NOFLASH, B(KQV), D_N, D_VH, B(KQ), B(QKV)),
    R(ATTN, W_FLASH, B(ATTN_OUT), D_N, D_VH, B(QKV)),
    R(OUT_PROJ, W_ALL, B(ATTN_PROJ), D_N, D_VH, A_MIXED),
    R(RESIDUAL, W_ALL, B(RESIDUAL), D_N, D_VH, B(LAYER_IN), B(ATTN_PROJ)),
    R(NORM2, W_ALL, B(NORM2), D_N, D_VH, B(RESIDUAL)),
    R(FC1, W_ALL, B(FC1), D_N, D_VF, B(NORM2)),
    R(GELU, W_ALL, NO, 0, 0, B(FC1)), /* in place */
    R(FC2, W_ALL, B(FC2), D_N, D_VH, B(FC1)),
    RK(LAYER_OUT, W_ALL, B(LAYER_OUT), D_N, D_VH, B(RESIDUAL), B(FC2)),
};

#undef R
#undef RK
#undef B

/* ---- the builder ----------------------------------------------------------- */

typedef struct gb {
    tmem_model_graph *g;
    uint64_t d[D_COUNT];
    bool overflow;
} gb;

static uint64_t mul(gb *b, uint64_t x, uint64_t y) {
    uint64_t r;
    if (tmem__mul_overflow(x, y, &r)) {
        b->overflow = true;
        return 0;
    }
    return r;
}

static void dims(gb *b, const tmem_model_desc *m, uint64_t N, uint64_t C) {
    uint64_t *d = b->d, H = m->n_head, Hkv = m->n_head_kv, dk = m->head_dim_k, dv = m->head_dim_v;
    uint64_t G = m->ssm_group_count, sk = m->ssm_state_size, Hv = m->ssm_time_step_rank, I = m->ssm_inner_size;
    uint64_t CH = N < DELTA_CHUNK ? N : DELTA_CHUNK, nch = N / DELTA_CHUNK + (N % DELTA_CHUNK != 0);
    d[D_1] = 1, d[D_N] = N, d[D_E] = m->n_embd, d[D_F] = m->n_ff;
    d[D_Q] = mul(b, H, dk), d[D_QG] = mul(b, d[D_Q], 2), d[D_KK] = mul(b, Hkv, dk), d[D_KV] = mul(b, Hkv, dv);
    d[D_HN] = mul(b, H, N), d[D_CTX] = C, d[D_HDV] = mul(b, H, dv);
    d[D_CONV] = I + 2 * G * sk, d[D_I] = I, d[D_HV] = Hv, d[D_HVK] = mul(b, Hv, sk);
    d[D_HVV] = Hv ? mul(b, Hv, I / Hv) : 0, d[D_CH] = CH, d[D_HVCH] = mul(b, Hv, CH);
    d[D_NP] = mul(b, nch, DELTA_CHUNK), d[D_HVNP] = mul(b, Hv, d[D_NP]), d[D_DC] = DELTA_CHUNK;
    d[D_VH] = m->vis_hidden, d[D_V3H] = mul(b, 3, m->vis_hidden), d[D_VF] = m->vis_ff;
    d[D_VHP] = mul(b, m->vis_heads, N);
}

static bool holds(const tmem_model_desc *m, uint32_t flags, uint8_t when) {
    bool flash = !(flags & TMEM_MODEL_GRAPH_NO_FLASH_ATTN);
    switch (when) {
    case W_GATE: return m->attn_output_gate;
    case W_NOGATE: return !m->attn_output_gate;
    case W_FLASH: return flash;
    case W_NOFLASH: return !flash;
    case W_REPEAT: return m->ssm_time_step_rank != m->ssm_group_count;
    case W_CHUNKED: return (flags & TMEM_MODEL_GRAPH_CHUNKED_DELTA) != 0;
    case W_UNCHUNKED: return !(flags & TMEM_MODEL_GRAPH_CHUNKED_DELTA);
    default: return true;
    }
}

/* The buffer a read names: an alias resolves to what the graph has. */
static int32_t resolve(const tmem_model_graph *g, uint8_t u) {
    switch (u) {
    case A_QUERY: u = g->buf_index[TMEM_MODEL_BUF_Q_GATE] >= 0 ? TMEM_MODEL_BUF_Q_GATE : TMEM_MODEL_BUF_Q; break;
    case A_QR: u = g->buf_index[TMEM_MODEL_BUF_Q_REP] >= 0 ? TMEM_MODEL_BUF_Q_REP : TMEM_MODEL_BUF_CONV_OUT; break;
    case A_KR: u = g->buf_index[TMEM_MODEL_BUF_K_REP] >= 0 ? TMEM_MODEL_BUF_K_REP : TMEM_MODEL_BUF_CONV_OUT; break;
    case A_MIXED: u = g->buf_index[TMEM_MODEL_BUF_ATTN_OUT] >= 0 ? TMEM_MODEL_BUF_ATTN_OUT : TMEM_MODEL_BUF_KQV; break;
    default: break;
    }
    return u < TMEM_MODEL_BUF_COUNT ? g->buf_index[u] : -1;
}

static void build(gb *b, const tmem_model_desc *m, uint32_t flags, const row *rows, size_t n_rows) {
    tmem_model_graph *g = b->g;
    uint32_t step = 0;
    int last_op = -1;
    for (size_t r = 0; r < n_rows; r++) {
        const row *w = &rows[r];
        if (!holds(m, flags, w->when)) continue;
        if (last_op >= 0 && w->op != last_op) step++;
        last_op = w->op;
        g->op_step[w->op] = step;
        if (w->out != NO) {
            tmem_model_buffer *bf = &g->bufs[g->buf_count];
            g->buf_index[w->out] = (int32_t)g->buf_count++;
            bf->name = buf_names[w->out];
            bf->id = (tmem_model_buf_id)w->out;
            bf->size = mul(b, mul(b, b->d[w->rows], b->d[w->cols]), F32);
            bf->start = step;
            bf->end = w->keep ? UINT32_MAX : step + 1; /* keep: fixed up at the end */
        }
        for (int u = 0; u < MAX_USES && w->use[u] != NO; u++) {
            int32_t i = resolve(g, w->use[u]);
            if (i >= 0 && g->bufs[i].end < step + 1) g->bufs[i].end = step + 1;
        }
    }
    g->step_count = last_op >= 0 ? step + 1 : 0;
    for (uint32_t i = 0; i < g->buf_count; i++)
        if (g->bufs[i].end == UINT32_MAX) g->bufs[i].end = g->step_count;
}

tmem_status tmem_model_graph_get(const tmem_model_desc *m, tmem_model_layer_kind kind, uint64_t n_tokens,
                                 uint64_t n_ctx, uint32_t flags, tmem_model_graph *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!out || !n_tokens || (flags & ~(uint32_t)TMEM_MODEL_GRAPH_FLAG_MASK)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = tmem_model_validate(m);
    if (st) return st;
    uint32_t full, linear;
    tmem_model_layer_counts(m, &full, &linear);
    const row *rows;
    size_t n_rows;
    switch (kind) {
    case TMEM_MODEL_LAYER_ATTENTION:
        if (!full) return tmem__err(TMEM_E_INVALID_ARG);
        rows = attention_rows, n_rows = sizeof attention_rows / sizeof *rows;
        break;
    case TMEM_MODEL_LAYER_DELTANET:
        if (!linear) return tmem__err(TMEM_E_INVALID_ARG);
        rows = deltanet_rows, n_rows = sizeof deltanet_rows / sizeof *rows;
        break;
    case TMEM_MODEL_LAYER_VISION:
        if (!m->vis_depth) return tmem__err(TMEM_E_INVALID_ARG);
        rows = vision_rows, n_rows = sizeof vision_rows / sizeof *rows;
        break;
    default: return tmem__err(TMEM_E_INVALID_ARG);
    }
    gb b = {out, {0}, false};
    for (uint32_t i = 0; i < TMEM_MODEL_BUF_COUNT; i++) out->buf_index[i] = -1;
    for (uint32_t i = 0; i < TMEM_MODEL_OP_COUNT; i++) out->op_step[i] = TMEM_MODEL_STEP_NONE;
    out->kind = kind;
    dims(&b, m, n_tokens, kind == TMEM_MODEL_LAYER_ATTENTION && n_ctx < n_tokens ? n_tokens : n_ctx);
    build(&b, m, flags, rows, n_rows);
    if (b.overflow) {
        memset(out, 0, sizeof *out);
        return tmem__err(TMEM_E_OVERFLOW);
    }
    return TMEM_OK;
}

tmem_status tmem_model_layer_graph(const tmem_model_desc *m, tmem_model_layer_kind kind, uint64_t n_tokens,
                                   uint64_t n_ctx, uint32_t flags, tmem_model_buffer *bufs, uint32_t cap,
                                   uint32_t *count) {
    if (count) *count = 0;
    if (!count || (!bufs && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_model_graph g;
    tmem_status st = tmem_model_graph_get(m, kind, n_tokens, n_ctx, flags, &g);
    if (st) return st;
    for (uint32_t i = 0; i < g.buf_count && i < cap; i++) bufs[i] = g.bufs[i];
    *count = g.buf_count;
    return g.buf_count > cap ? TMEM_E_FULL : TMEM_OK;
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

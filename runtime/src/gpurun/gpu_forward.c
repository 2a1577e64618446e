/* gpu_forward.c: one step of the forward pass recorded on Vulkan, in the
 * order of forward/forward.c (the same ops as the CPU, one or a few
 * dispatches each: gpu/vk_ops.h).
 *
 * Barriers: a hazard tracker holds the byte ranges read and written since
 * the last barrier; an op whose reads overlap a write since then
 * (a dependency), or whose writes overlap a read or write since then (the
 * plan gave those bytes to another buffer, or the same buffer is rewritten),
 * gets one barrier first. Independent ops (the q, k, v projections, the
 * conv beside the gates) run without one; ops that are two dispatches
 * (split attention, chunked DeltaNet) record their own. */
#include <math.h>
#include <string.h>
#include "gpurun/gpu_internal.h"

#define MAX_RANGES 64

typedef struct access {
    tmrt_vk_buf b;
    bool write;
} access;

typedef struct fwd {
    tmrt_gpu_session *g;
    tmrt_vk_rec *rec;
    const tmrt_gpu_graph *gr;
    tmrt_vk_buf step;                 /* n_past from the io buffer (a reused decode recording) */
    access seen[MAX_RANGES];
    uint32_t n_seen;
} fwd;

static bool overlap(const tmrt_vk_buf *a, const tmrt_vk_buf *b) {
    return a->buffer == b->buffer && a->offset < b->offset + b->range && b->offset < a->offset + a->range;
}

/* Before an op with these accesses: a barrier if any conflicts with what
 * ran since the last one. */
static void use(fwd *f, const access *acc, uint32_t n) {
    bool conflict = f->n_seen + n > MAX_RANGES;
    for (uint32_t i = 0; i < n && !conflict; i++)
        for (uint32_t j = 0; j < f->n_seen && !conflict; j++)
            conflict = (acc[i].write || f->seen[j].write) && overlap(&acc[i].b, &f->seen[j].b);
    if (conflict) {
        tmrt__vk_barrier(f->rec);
        f->n_seen = 0;
    }
    for (uint32_t i = 0; i < n; i++) f->seen[f->n_seen++] = acc[i];
}
#define RD(x) ((access){(x), false})
#define WR(x) ((access){(x), true})
#define USE(f, ...) use((f), (access[]){__VA_ARGS__}, (uint32_t)(sizeof((access[]){__VA_ARGS__}) / sizeof(access)))

/* Buffer `id` of the graph (the whole planned size), or a part of it. */
static tmrt_vk_buf act(const fwd *f, tmem_model_buf_id id) {
    tmrt_vk_buf b = {f->gr->vb[id], f->gr->off[id], f->gr->size[id]};
    return b;
}
static tmrt_vk_buf act_at(const fwd *f, tmem_model_buf_id id, uint64_t byte) {
    tmrt_vk_buf b = {f->gr->vb[id], f->gr->off[id] + byte, f->gr->size[id] - byte};
    return b;
}
static tmrt_vk_buf scratch_of(const fwd *f) {
    tmrt_vk_buf b = {f->gr->scratch_vb, f->gr->scratch_off, f->gr->scratch_size ? f->gr->scratch_size : 4};
    return b;
}
#define ACT(ID) act(f, TMEM_MODEL_BUF_##ID)

static void matmul(fwd *f, const tmrt_vk_wmat *w, tmrt_vk_buf x, tmrt_vk_buf y, uint32_t n) {
    USE(f, RD(x), WR(y));
    tmrt_vk_matmul m = {0};
    m.w = *w;
    m.x = x;
    m.y = y;
    m.n_tok = n;
    (void)tmrt__vk_matmul(f->rec, &m);
}

static void rmsnorm_rows(fwd *f, tmrt_vk_buf x, tmrt_vk_buf out, const tmrt_vk_wmat *w, uint32_t n_embd, uint32_t n) {
    USE(f, RD(x), WR(out));
    tmrt_vk_rmsnorm r = {0};
    r.x = x;
    r.out = out;
    r.w = *w;
    r.eps = f->g->m->hp.rms_eps;
    r.n = n_embd;
    r.n_tok = n;
    r.n_head = 1;
    (void)tmrt__vk_rmsnorm(f->rec, &r);
}

static void add(fwd *f, tmrt_vk_buf a, tmrt_vk_buf b, tmrt_vk_buf out, uint32_t n) {
    USE(f, RD(a), RD(b), WR(out));
    (void)tmrt__vk_add(f->rec, a, b, out, n);
}

static void attention(fwd *f, const tmrt_gpu_layer *lw, uint32_t layer, const tmrt_step *st, tmrt_vk_buf pos) {
    tmrt_gpu_session *g = f->g;
    const tmrt_hparams *hp = &g->m->hp;
    uint32_t n = st->n, H = hp->n_head, Hkv = hp->n_head_kv, hd = hp->head_dim;
    matmul(f, &lw->wq, ACT(ATTN_NORM), ACT(Q_GATE), n);
    matmul(f, &lw->wk, ACT(ATTN_NORM), ACT(K), n);
    matmul(f, &lw->wv, ACT(ATTN_NORM), ACT(V), n);
    /* q and k: the per-head RMS norm and the partial M-RoPE, one dispatch each */
    tmrt_vk_rope rope = {0};
    rope.pos = pos;
    rope.n_rot = hp->n_rot;
    rope.n_past = st->n_past;
    rope.step = f->step;
    memcpy(rope.sections, hp->rope_sections, sizeof rope.sections);
    rope.freq_base = hp->rope_freq_base;
    tmrt_vk_rmsnorm qn = {0};
    qn.x = qn.out = ACT(Q_GATE);
    qn.w = lw->q_norm;
    qn.eps = hp->rms_eps;
    qn.n = hd;
    qn.n_tok = n;
    qn.n_head = H;
    qn.head_stride = 2 * hd;
    qn.tok_stride = 2 * H * hd;
    qn.rope = &rope;
    USE(f, RD(pos), RD(f->step), WR(qn.x));
    (void)tmrt__vk_rmsnorm(f->rec, &qn);
    tmrt_vk_rmsnorm kn = qn;
    kn.x = kn.out = ACT(K);
    kn.w = lw->k_norm;
    kn.n_head = Hkv;
    kn.head_stride = hd;
    kn.tok_stride = Hkv * hd;
    USE(f, RD(pos), WR(kn.x));
    (void)tmrt__vk_rmsnorm(f->rec, &kn);
    /* the step's K, V rows into the cache */
    tmrt_vk_kv_store ks = {0};
    ks.kv = g->kvd;
    ks.k = ACT(K);
    ks.v = ACT(V);
    ks.layer = g->attn_index[layer];
    ks.n_tok = n;
    ks.dim = Hkv * hd;
    ks.n_past = st->n_past;
    ks.step = f->step;
    tmrt_vk_buf pool = tmrt__gpu_sub(&g->kv, 0, g->kv.size);
    USE(f, RD(ks.k), RD(ks.v), WR(pool));
    (void)tmrt__vk_kv_store(f->rec, &ks);
    /* attention over the cache, the output gate fused */
    tmrt_vk_attention a = {0};
    a.kv = g->kvd;
    a.q = ACT(Q_GATE);
    a.gate = act_at(f, TMEM_MODEL_BUF_Q_GATE, (uint64_t)hd * 4);
    a.out = ACT(ATTN_OUT);
    a.layer = ks.layer;
    a.n_tok = n;
    a.n_head = H;
    a.n_head_kv = Hkv;
    a.head_dim = hd;
    a.n_past = st->n_past;
    a.q_ts = a.gate_ts = 2 * H * hd;
    a.q_hs = a.gate_hs = 2 * hd;
    a.step = f->step;
    /* a reused recording serves every length with the same split count
     * (gpu_forward re-records when the count changes: every 128 keys) */
    a.n_split = tmrt__vk_attention_splits(st->n_past + n, n);
    if (tmrt__vk_attention_scratch_bytes(n, H, hd, a.n_split) > f->gr->scratch_size) a.n_split = 1;
    tmrt_vk_buf scratch = scratch_of(f);
    if (a.n_split > 1) a.scratch = scratch;
    if (a.n_split > 1) USE(f, RD(a.q), RD(pool), WR(a.out), WR(scratch));
    else USE(f, RD(a.q), RD(pool), WR(a.out));
    (void)tmrt__vk_attention(f->rec, &a);
    matmul(f, &lw->wo, ACT(ATTN_OUT), ACT(ATTN_PROJ), n);
}

static void deltanet(fwd *f, const tmrt_gpu_layer *lw, uint32_t layer, const tmrt_step *st) {
    tmrt_gpu_session *g = f->g;
    const tmrt_hparams *hp = &g->m->hp;
    uint32_t n = st->n, dk = hp->ssm_head_dim, G = hp->ssm_k_heads, Hv = hp->ssm_v_heads, I = hp->ssm_inner;
    uint32_t dv = I / Hv, C = 2 * G * dk + I;
    matmul(f, &lw->wqkv, ACT(ATTN_NORM), ACT(QKV_MIXED), n);
    matmul(f, &lw->wgate, ACT(ATTN_NORM), ACT(Z), n);
    matmul(f, &lw->wbeta, ACT(ATTN_NORM), ACT(BETA), n);
    matmul(f, &lw->walpha, ACT(ATTN_NORM), ACT(ALPHA), n);
    tmrt_vk_buf conv_state = g->conv[layer], ssm = g->ssm[layer];
    tmrt_vk_conv cv = {0};
    cv.x = ACT(QKV_MIXED);
    cv.out = ACT(CONV_OUT);
    cv.state = conv_state;
    cv.w = lw->conv1d;
    cv.n_tok = n;
    USE(f, RD(cv.x), WR(cv.out), WR(conv_state));
    (void)tmrt__vk_conv(f->rec, &cv);
    float q_scale = 1.0f / sqrtf((float)dk);
    tmrt_vk_deltanet d = {0};
    d.q = ACT(CONV_OUT);
    d.k = act_at(f, TMEM_MODEL_BUF_CONV_OUT, (uint64_t)G * dk * 4);
    d.v = act_at(f, TMEM_MODEL_BUF_CONV_OUT, (uint64_t)2 * G * dk * 4);
    d.state = ssm;
    d.out = ACT(CORE_OUT);
    d.n_tok = n;
    d.dk = dk;
    d.dv = dv;
    d.n_k_heads = G;
    d.n_v_heads = Hv;
    d.qk_ts = d.v_ts = C;
    d.o_ts = I;
    if (st->decode) {
        /* the recurrent form with the q/k L2 norm and the gates inside */
        d.l2 = true;
        d.l2_eps = hp->rms_eps;
        d.q_scale = q_scale;
        d.gate = ACT(ALPHA);
        d.beta = ACT(BETA);
        d.dt_bias = lw->dt_bias;
        d.ssm_a = lw->ssm_a;
        USE(f, RD(d.q), RD(d.gate), RD(d.beta), WR(ssm), WR(d.out));
    } else {
        tmrt_vk_dn_gates dg = {0};
        dg.alpha = ACT(ALPHA);
        dg.beta = ACT(BETA);
        dg.gate = ACT(GATE);
        dg.dt_bias = lw->dt_bias;
        dg.ssm_a = lw->ssm_a;
        dg.n_tok = n;
        dg.n_head = Hv;
        USE(f, RD(dg.alpha), WR(dg.beta), WR(dg.gate));
        (void)tmrt__vk_dn_gates(f->rec, &dg);
        tmrt_vk_l2norm l2 = {0};
        l2.x = ACT(CONV_OUT);
        l2.eps = hp->rms_eps;
        l2.scale = q_scale;
        l2.n = dk;
        l2.n_tok = n;
        l2.n_head = 2 * G;
        l2.tok_stride = C;
        l2.head_stride = dk;
        l2.n_scaled = G;
        USE(f, WR(l2.x));
        (void)tmrt__vk_l2norm(f->rec, &l2);
        d.chunked = true;
        d.gate = ACT(GATE);
        d.beta = ACT(BETA);
        d.scratch = scratch_of(f);
        USE(f, RD(d.q), RD(d.gate), RD(d.beta), WR(ssm), WR(d.out), WR(d.scratch));
    }
    (void)tmrt__vk_deltanet(f->rec, &d);
    /* gated RMS norm per value head: rmsnorm(o) * ssm_norm * silu(z) */
    tmrt_vk_rmsnorm gn = {0};
    gn.x = gn.out = ACT(CORE_OUT);
    gn.a = ACT(Z);
    gn.gate = true;
    gn.w = lw->ssm_norm;
    gn.eps = hp->rms_eps;
    gn.n = dv;
    gn.n_tok = n;
    gn.n_head = Hv;
    USE(f, RD(gn.a), WR(gn.x));
    (void)tmrt__vk_rmsnorm(f->rec, &gn);
    matmul(f, &lw->ssm_out, ACT(CORE_OUT), ACT(ATTN_PROJ), n);
}

static void ffn(fwd *f, const tmrt_gpu_layer *lw, uint32_t n) {
    const tmrt_hparams *hp = &f->g->m->hp;
    uint32_t E = hp->n_embd, F = hp->n_ff;
    add(f, ACT(LAYER_IN), ACT(ATTN_PROJ), ACT(ATTN_RESIDUAL), n * E);
    rmsnorm_rows(f, ACT(ATTN_RESIDUAL), ACT(FFN_NORM), &lw->post_norm, E, n);
    matmul(f, &lw->ffn_gate, ACT(FFN_NORM), ACT(FFN_GATE), n);
    matmul(f, &lw->ffn_up, ACT(FFN_NORM), ACT(FFN_UP), n);
    USE(f, RD(ACT(FFN_UP)), WR(ACT(FFN_GATE)));
    (void)tmrt__vk_swiglu(f->rec, ACT(FFN_GATE), ACT(FFN_UP), ACT(FFN_GATE), n * F);
    matmul(f, &lw->ffn_down, ACT(FFN_GATE), ACT(FFN_DOWN), n);
    add(f, ACT(ATTN_RESIDUAL), ACT(FFN_DOWN), ACT(LAYER_OUT), n * E);
}

tmem_status tmrt__gpu_record_layers(tmrt_gpu_session *g, const tmrt_step *st, tmrt_vk_buf step, tmrt_vk_buf *out_rows) {
    const tmrt_hparams *hp = &g->m->hp;
    const tmrt_gpu_model *gm = g->gm;
    uint32_t E = hp->n_embd, n = st->n;
    fwd fs = {0}, *f = &fs;
    f->g = g;
    f->rec = g->rec;
    f->step = step;
    tmrt_vk_buf ids = tmrt__gpu_sub(&g->io, g->io_ids, (uint64_t)g->chunk * 4);
    tmrt_vk_buf pos = {0};
    if (st->positions) pos = tmrt__gpu_sub(&g->io, g->io_pos, (uint64_t)g->chunk * 16);
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        bool rec = hp->recurrent[il];
        f->gr = st->decode ? (rec ? &g->decode_delta : &g->decode_attn) : (rec ? &g->prefill_delta : &g->prefill_attn);
        const tmrt_gpu_layer *lw = &gm->layers[il];
        /* LAYER_IN = the previous layer's LAYER_OUT: offset 0 of the arena
         * in every plan (typed), the one hand-off buffer (naive) */
        tmrt_vk_buf in = act(f, TMEM_MODEL_BUF_LAYER_IN);
        in.range = (uint64_t)n * E * 4;
        if (il == 0) {
            USE(f, RD(ids), WR(in));
            tmrt_vk_get_rows gr = {0};
            gr.w = gm->token_embd;
            gr.ids = ids;
            gr.out = in;
            gr.n_tok = n;
            (void)tmrt__vk_get_rows(f->rec, &gr);
        }
        rmsnorm_rows(f, in, ACT(ATTN_NORM), &lw->attn_norm, E, n);
        if (rec) deltanet(f, lw, il, st);
        else attention(f, lw, il, st, pos);
        ffn(f, lw, n);
    }
    /* the output norm over the last layer's rows, in place */
    tmrt_vk_buf x = act(f, TMEM_MODEL_BUF_LAYER_OUT);
    x.range = (uint64_t)n * E * 4;
    if (st->logits != TMRT_LOGITS_NONE) rmsnorm_rows(f, x, x, &gm->output_norm, E, n);
    *out_rows = x;
    return tmrt__vk_rec_status(f->rec);
}

/* The LM head on rows [t0, t0 + rows) of the normed output: their indices
 * gathered by the mat-vec kernels, logits into the host-visible buffer. */
static void head(tmrt_gpu_session *g, tmrt_vk_buf x, uint32_t t0, uint32_t rows) {
    uint32_t *idx = (uint32_t *)((uint8_t *)g->io.host + g->io_rows);
    for (uint32_t i = 0; i < rows; i++) idx[i] = t0 + i;
    tmrt__vk_barrier(g->rec);
    tmrt_vk_matmul m = {0};
    m.w = g->gm->output;
    m.x = x;
    m.x_rows = tmrt__gpu_sub(&g->io, g->io_rows, (uint64_t)rows * 4);
    m.y = tmrt__gpu_sub(&g->logits, 0, (uint64_t)rows * g->m->hp.n_vocab * 4);
    m.ldx = g->m->hp.n_embd;
    m.n_tok = rows;
    (void)tmrt__vk_matmul(g->rec, &m);
    tmrt__vk_barrier_host(g->rec);
}

static tmem_status run(tmrt_gpu_session *g, tmrt_error *err) {
    tmem_status st = tmrt__vk_run(g->rec);
    if (st) return tmrt__fail(err, st, "device step: %s", tmrt__vk_rec_error(g->rec));
    return TMEM_OK;
}

tmem_status tmrt__gpu_forward(tmrt_gpu_session *g, const tmrt_step *st, float *last_logits, tmrt_error *err) {
    const tmrt_hparams *hp = &g->m->hp;
    if (st->n > g->chunk || st->n_past + st->n > g->n_ctx)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "device step of %u tokens at %u", st->n, st->n_past);
    if (st->embd_rows && st->embd_count)
        return tmrt__fail(err, TMEM_E_UNSUPPORTED, "input embeddings (vision) are not on the device path yet");
    uint32_t *ids = (uint32_t *)((uint8_t *)g->io.host + g->io_ids);
    for (uint32_t t = 0; t < st->n; t++) ids[t] = (uint32_t)st->tokens[t];
    if (st->positions) memcpy((uint8_t *)g->io.host + g->io_pos, st->positions, (size_t)st->n * 16);
    *(uint32_t *)((uint8_t *)g->io.host + g->io_step) = st->n_past;
    uint32_t first = st->logits == TMRT_LOGITS_ALL ? 0 : st->n - 1;
    uint32_t rows = st->logits == TMRT_LOGITS_NONE ? 0 : st->n - first;
    uint32_t batch = rows < g->logit_rows ? rows : g->logit_rows;
    /* a decode step with its last logits: one recording for all of them
     * (n_past read from io), recorded once, submitted every step */
    int kind = st->decode && st->logits == TMRT_LOGITS_LAST ? (st->positions ? 2 : 1) : 0;
    if (kind) kind += 4 * (int)tmrt__vk_attention_splits(st->n_past + 1, 1); /* and the attention's splits */
    tmem_status s;
    tmrt_vk_buf x = {0};
    if (!kind || g->decode_ready != kind) {
        g->decode_ready = 0;
        if ((s = tmrt__vk_begin(g->rec))) return tmrt__fail(err, s, "device recorder: %s", tmem_strerror(s));
        tmrt_vk_buf step = {0};
        if (kind) step = tmrt__gpu_sub(&g->io, g->io_step, 4);
        (void)tmrt__gpu_record_layers(g, st, step, &x);
        if (batch) head(g, x, first, batch);
        g->last_dispatches = tmrt__vk_rec_dispatches(g->rec);
        g->last_barriers = tmrt__vk_rec_barriers(g->rec);
        if ((s = tmrt__vk_end(g->rec))) return tmrt__fail(err, s, "device step: %s", tmrt__vk_rec_error(g->rec));
        g->decode_ready = kind;
    } else {
        uint32_t *idx = (uint32_t *)((uint8_t *)g->io.host + g->io_rows);
        idx[0] = 0; /* the head's one row, as recorded */
    }
    if ((s = tmrt__vk_submit(g->rec)) || (s = tmrt__vk_wait(g->rec, UINT64_MAX))) {
        g->decode_ready = 0;
        return tmrt__fail(err, s, "device step: %s", tmrt__vk_rec_error(g->rec));
    }
    for (uint32_t done = 0; done < rows;) {
        const float *l = g->logits.host;
        for (uint32_t i = 0; i < batch; i++) {
            const float *row = l + (size_t)i * hp->n_vocab;
            if (st->fn && (s = st->fn(st->user, st->batch_offset + first + done + i, row, hp->n_vocab))) return s;
            if (done + i + 1 == rows) memcpy(last_logits, row, (size_t)hp->n_vocab * 4);
        }
        done += batch;
        if (done == rows) break;
        batch = rows - done < g->logit_rows ? rows - done : g->logit_rows;
        if ((s = tmrt__vk_begin(g->rec))) return tmrt__fail(err, s, "device recorder: %s", tmem_strerror(s));
        head(g, x, first + done, batch);
        if ((s = run(g, err))) return s;
    }
    return TMEM_OK;
}

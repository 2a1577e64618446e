/*
 * "Will it fit?": the memory of one request by role and type, whether it is
 * under the budget, and if not the largest context and image that are.
 *
 * Every line is computed from the model descriptor (model_desc.c) and the
 * per-layer activation graphs (layer_graph.c); the total is the plain sum of
 * the lines, so a reader can check it by hand. The searches rely on the
 * total growing with the context and with the image, which holds because
 * every line does.
 */
#include "model_internal.h"
#include "typedmem/plan.h"
#include "os/os.h"
#include <stdio.h>
#include <string.h>


/* The builtin type of each role (src/core/defaults.c), for requests made
 * without a context. */
static const char *const default_type[TMEM_ROLE_BUILTIN_END] = {
    [TMEM_ROLE_WEIGHTS] = "/memory/weights",   [TMEM_ROLE_KV_CACHE] = "/memory/kv",
    [TMEM_ROLE_RECURRENT_STATE] = "/memory/state", [TMEM_ROLE_ACTIVATION] = "/memory/activations",
    [TMEM_ROLE_SCRATCH] = "/memory/scratch",   [TMEM_ROLE_IMAGE] = "/memory/images",
    [TMEM_ROLE_VISION_INTERMEDIATE] = "/memory/vision", [TMEM_ROLE_OUTPUT_TOKENS] = "/memory/tokens",
};

/* What one slot of a role's pool commits: whole granules (the KV cache's
 * blocks and state slots are granule-rounded slab slots). */
static uint64_t role_granule(tmem_context *ctx, tmem_role r) {
    tmem_type *t;
    if (ctx && tmem_role_get_type(ctx, r, &t) == TMEM_OK) {
        uint64_t g = tmem__pool_granule(t);
        if (g) return g;
    }
    return tmem__os_page_size();
}

static bool round_to(uint64_t x, uint64_t g, uint64_t *out) {
    uint64_t t;
    if (tmem__add_overflow(x, g - 1, &t)) return false;
    *out = t / g * g;
    return true;
}

static void role_type(tmem_context *ctx, tmem_role r, char *out, size_t cap) {
    tmem_type *t;
    tmem_type_info info;
    if (ctx && tmem_role_get_type(ctx, r, &t) == TMEM_OK && tmem_type_get_info(t, &info) == TMEM_OK) {
        snprintf(out, cap, "%s", info.name);
        return;
    }
    snprintf(out, cap, "%s", r >= TMEM_ROLE_BUILTIN_FIRST && r < TMEM_ROLE_BUILTIN_END ? default_type[r] : "?");
}

#define MEMO_CAP 16u
typedef struct arena_entry {
    tmem_model_layer_kind kind;
    uint64_t n, c, lb, arena;
    bool planned;
} arena_entry;
typedef struct arena_memo {
    arena_entry e[MEMO_CAP];
    uint32_t n, next;
} arena_memo;

typedef struct req {
    arena_memo *memo;
    const tmem_model_desc *m;
    tmem_context *ctx;
    uint32_t n_seqs, chunk, block, flags, snapshots;
    uint64_t scratch, tokenizer;
    tmem_weight_dtype weight_dtype;
    tmem_kv_dtype kv_type, state_type;
    bool exact_weights;
    tmem_model_params params;
} req;

/* The arena for one layer graph: the lifetime planner's answer (every plan
 * it returns has passed its validator), with the sweep lower bound beside it.
 * Buffers are 64-byte aligned (cache lines, SIMD loads). If the planner
 * cannot answer within its limits the lower bound stands in and the result
 * says so (arena_from_planner = false). The text layer graphs are planned
 * with TMEM_FIT_TEXT_PLAN_FLAGS (the greedy portfolio: see model.h), the
 * vision block with the exact search too. */
#define ARENA_ALIGN 64u

static tmem_status plan_arena(const tmem_model_buffer *bufs, uint32_t n, uint32_t flags, uint64_t *lower_bound,
                              uint64_t *arena, bool *planned) {
    *lower_bound = tmem__model_graph_lower_bound(bufs, n);
    *arena = *lower_bound;
    *planned = false;
    tmem_plan_problem *p;
    tmem_status st = tmem_plan_problem_create(&p);
    if (st) return st == TMEM_E_NO_MEMORY ? st : TMEM_OK;
    for (uint32_t i = 0; i < n && !st; i++) {
        tmem_plan_buffer b = {0};
        b.size = bufs[i].size;
        b.alignment = ARENA_ALIGN;
        b.start = bufs[i].start;
        b.end = bufs[i].end;
        st = tmem_plan_problem_add(p, &b, NULL);
    }
    tmem_plan *plan = NULL;
    tmem_plan_desc d = {0};
    /* Graphs are a few dozen buffers: the greedy portfolio is usually
     * optimal. A work budget, not a time limit: a prediction must not
     * depend on how busy the machine is. */
    d.node_limit = TMEM_FIT_PLAN_NODES;
    d.flags = flags;
    if (!st) st = tmem_plan_solve(p, &d, &plan);
    tmem_plan_info info;
    if (!st && tmem_plan_get_info(plan, &info) == TMEM_OK) {
        *arena = info.arena;
        *planned = true;
    }
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(p);
    return st == TMEM_E_NO_MEMORY || st == TMEM_E_OVERFLOW ? st : TMEM_OK;
}

/* Memo of planned arenas: the searches size the same graphs many times. */
static tmem_status layer_arena(const req *r, tmem_model_layer_kind kind, uint64_t n, uint64_t c, uint64_t *lb,
                               uint64_t *arena, bool *planned) {
    /* only the non-flash attention graph depends on the context length */
    if (kind == TMEM_MODEL_LAYER_DELTANET ||
        (kind == TMEM_MODEL_LAYER_ATTENTION && !(r->flags & TMEM_MODEL_GRAPH_NO_FLASH_ATTN)))
        c = 0;
    arena_memo *memo = r->memo;
    for (uint32_t i = 0; i < memo->n; i++) {
        const arena_entry *e = &memo->e[i];
        if (e->kind == kind && e->n == n && e->c == c) {
            *lb = e->lb;
            *arena = e->arena;
            *planned = e->planned;
            return TMEM_OK;
        }
    }
    tmem_model_graph g;
    tmem_status st = tmem_model_graph_get(r->m, kind, n, c ? c : n, r->flags, &g);
    uint32_t plan_flags = kind == TMEM_MODEL_LAYER_VISION ? 0 : TMEM_FIT_TEXT_PLAN_FLAGS;
    if (!st) st = plan_arena(g.bufs, g.buf_count, plan_flags, lb, arena, planned);
    if (st) return st;
    arena_entry *e = &memo->e[memo->n < MEMO_CAP ? memo->n++ : memo->next++ % MEMO_CAP];
    *e = (arena_entry){kind, n, c, *lb, *arena, *planned};
    return TMEM_OK;
}

static const char *const item_names[TMEM_FIT_ITEM_KIND_COUNT] = {
#define X(id, what) [TMEM_FIT_ITEM_##id] = what,
    TMEM_FIT_ITEM_LIST(X)
#undef X
};

static void item(const req *r, tmem_fit_result *o, tmem_fit_item_kind kind, tmem_role role, bool clean,
                 uint64_t bytes, bool *overflow) {
    tmem_fit_item *it = &o->items[o->item_count++];
    it->what = item_names[kind];
    it->kind = kind;
    it->role = role;
    role_type(r->ctx, role, it->type_name, sizeof it->type_name);
    it->clean = clean;
    it->bytes = bytes;
    if (tmem__add_overflow(o->total, bytes, &o->total)) *overflow = true;
    if (!clean && tmem__add_overflow(o->total_dirty, bytes, &o->total_dirty)) *overflow = true;
}

/* The breakdown for one (ctx, image) point. */
static tmem_status compute(const req *r, uint64_t ctx, uint32_t iw, uint32_t ih, tmem_fit_result *o) {
    const tmem_model_desc *m = r->m;
    memset(o, 0, sizeof *o);
    tmem_status st;
    uint32_t full, linear;
    tmem_model_layer_counts(m, &full, &linear);
    bool image = iw && ih, ovf = false;
    if (image && (st = tmem_model_vision_tokens(m, iw, ih, &o->image_tokens, &o->image_patches))) return st;
    if (o->image_tokens > ctx) return tmem__err(TMEM_E_INVALID_ARG);

    /* weights */
    uint64_t text_w, vis_w = 0;
    uint64_t est_text, est_vis;
    if ((st = tmem_model_weight_bytes(m, r->weight_dtype, &est_text, &est_vis))) return st;
    text_w = r->exact_weights && m->file_weight_bytes ? m->file_weight_bytes : est_text;
    if (image) vis_w = r->exact_weights && m->vis_file_weight_bytes ? m->vis_file_weight_bytes : est_vis;

    /* KV cache in whole blocks, recurrent state per sequence */
    if ((st = tmem_model_kv_bytes_per_token(m, r->kv_type, &o->kv_bytes_per_token))) return st;
    if ((st = tmem_model_recurrent_bytes(m, r->state_type, &o->recurrent_bytes_per_seq))) return st;
    /* what the paged cache commits: whole blocks per sequence, each block and
     * each state slot rounded to its pool's granule (kv_slab.c) */
    uint64_t blocks = ctx / r->block + (ctx % r->block != 0), kv = 0, state = 0;
    if (full) {
        tmem_kv_layout kl;
        uint64_t bb;
        if ((st = tmem_model_kv_layout(m, r->kv_type, r->block, &kl)) ||
            (st = tmem_kv_layout_bytes(&kl, ctx, &blocks, NULL)) || (st = tmem_kv_layout_block_bytes(&kl, &bb)))
            return st;
        if (!round_to(bb, role_granule(r->ctx, TMEM_ROLE_KV_CACHE), &bb) || tmem__mul_overflow(blocks, bb, &kv))
            return tmem__err(TMEM_E_OVERFLOW);
    }
    if (linear && !round_to(o->recurrent_bytes_per_seq, role_granule(r->ctx, TMEM_ROLE_RECURRENT_STATE), &state))
        return tmem__err(TMEM_E_OVERFLOW);
    if (tmem__mul_overflow(blocks, r->block, &o->kv_tokens) || tmem__mul_overflow(kv, r->n_seqs, &kv) ||
        tmem__mul_overflow(state, r->n_seqs, &state))
        return tmem__err(TMEM_E_OVERFLOW);

    /* activations: one arena reused layer after layer of the prefill, the
     * largest of the layer kinds' arenas; the vision encoder has its own
     * (its role maps to its own type) */
    uint64_t chunk = ctx < r->chunk ? ctx : r->chunk, lb, ar;
    bool planned = true, p;
    if (full) {
        if ((st = layer_arena(r, TMEM_MODEL_LAYER_ATTENTION, chunk, ctx, &lb, &ar, &p))) return st;
        if (lb > o->activation_lower_bound) o->activation_lower_bound = lb;
        if (ar > o->activation_arena) o->activation_arena = ar;
        planned &= p;
    }
    if (linear) {
        if ((st = layer_arena(r, TMEM_MODEL_LAYER_DELTANET, chunk, ctx, &lb, &ar, &p))) return st;
        if (lb > o->activation_lower_bound) o->activation_lower_bound = lb;
        if (ar > o->activation_arena) o->activation_arena = ar;
        planned &= p;
    }
    uint64_t vis_embd = 0, img = 0;
    if (image) {
        if ((st = layer_arena(r, TMEM_MODEL_LAYER_VISION, o->image_patches, o->image_patches,
                              &o->vision_lower_bound, &o->vision_arena, &p)))
            return st;
        planned &= p;
        /* merged embeddings wait for the prefill that consumes them */
        uint64_t px, pv;
        if (tmem__mul_overflow(o->image_tokens, (uint64_t)m->n_embd * 4, &vis_embd) ||
            /* the decoded RGB8 surface and the f32 pixel_values the encoder reads */
            tmem__mul_overflow((uint64_t)iw * ih, 3, &px) ||
            tmem__mul_overflow(o->image_patches, 3ull * m->vis_temporal_patch * m->vis_patch * m->vis_patch * 4,
                               &pv) ||
            tmem__add_overflow(px, pv, &img))
            return tmem__err(TMEM_E_OVERFLOW);
    }
    o->arena_from_planner = planned;
    /* the last position's f32 logits per sequence (a step's output, transient),
     * and the token ids of the context (the output ring, int32). */
    /* Each of these is its own heap, which commits whole granules of its
     * type's pool (a page): the lines are what the heaps commit, so a budget
     * of exactly total_dirty admits a run that fits in it. */
    uint64_t logits, tokens, act;
    uint64_t g_act = role_granule(r->ctx, TMEM_ROLE_ACTIVATION), g_tok = role_granule(r->ctx, TMEM_ROLE_OUTPUT_TOKENS);
    if (!round_to((uint64_t)m->n_vocab * 4, g_act, &logits) || !round_to(ctx * 4, g_tok, &tokens) ||
        !round_to(o->activation_arena, g_act, &act) || tmem__mul_overflow(logits, r->n_seqs, &logits) ||
        tmem__mul_overflow(tokens, r->n_seqs, &tokens))
        return tmem__err(TMEM_E_OVERFLOW);

    item(r, o, TMEM_FIT_ITEM_WEIGHTS_TEXT, TMEM_ROLE_WEIGHTS, true, text_w, &ovf);
    if (image) item(r, o, TMEM_FIT_ITEM_WEIGHTS_VISION, TMEM_ROLE_WEIGHTS, true, vis_w, &ovf);
    item(r, o, TMEM_FIT_ITEM_KV_CACHE, TMEM_ROLE_KV_CACHE, false, kv, &ovf);
    if (linear) item(r, o, TMEM_FIT_ITEM_RECURRENT_STATE, TMEM_ROLE_RECURRENT_STATE, false, state, &ovf);
    /* snapshots copy a sequence's state slot (tmem_kv_snapshot_take) */
    uint64_t snaps;
    if (tmem__mul_overflow(state, r->snapshots, &snaps)) return tmem__err(TMEM_E_OVERFLOW);
    if (linear && snaps) item(r, o, TMEM_FIT_ITEM_STATE_SNAPSHOTS, TMEM_ROLE_RECURRENT_STATE, false, snaps, &ovf);
    item(r, o, TMEM_FIT_ITEM_ACTIVATIONS, TMEM_ROLE_ACTIVATION, false, act, &ovf);
    if (image) {
        item(r, o, TMEM_FIT_ITEM_VISION_ACTIVATIONS, TMEM_ROLE_VISION_INTERMEDIATE, false, o->vision_arena, &ovf);
        item(r, o, TMEM_FIT_ITEM_VISION_EMBEDDINGS, TMEM_ROLE_VISION_INTERMEDIATE, false, vis_embd, &ovf);
        item(r, o, TMEM_FIT_ITEM_IMAGE, TMEM_ROLE_IMAGE, false, img, &ovf);
    }
    item(r, o, TMEM_FIT_ITEM_LOGITS, TMEM_ROLE_ACTIVATION, false, logits, &ovf);
    if (r->scratch) item(r, o, TMEM_FIT_ITEM_SCRATCH, TMEM_ROLE_SCRATCH, false, r->scratch, &ovf);
    item(r, o, TMEM_FIT_ITEM_TOKENS, TMEM_ROLE_OUTPUT_TOKENS, false, tokens, &ovf);
    if (r->tokenizer) item(r, o, TMEM_FIT_ITEM_TOKENIZER, TMEM_ROLE_OUTPUT_TOKENS, false, r->tokenizer, &ovf);
    o->peak_dirty_encode_first = o->total_dirty;
    if (image && !ovf) {
        /* phases of an encode-first run; dirty lines only (weights are clean) */
        uint64_t text = o->total_dirty - o->vision_arena - vis_embd - img, rows = 0, vis = o->vision_arena, pv;
        pv = img - (uint64_t)iw * ih * 3;
        if (tmem__mul_overflow(o->image_patches, 2ull * m->vis_hidden * 4, &rows)) ovf = true;
        if (img > vis) vis = img;
        if (pv + rows > vis) vis = pv + rows;
        o->peak_dirty_encode_first = vis_embd + (text > vis ? text : vis);
    }
    return ovf ? tmem__err(TMEM_E_OVERFLOW) : TMEM_OK;
}

static bool fits_at(const req *r, uint64_t budget, uint64_t ctx, uint32_t iw, uint32_t ih) {
    tmem_fit_result t;
    /* The budget counts dirty bytes (see context.h): clean file-backed
     * weights are charged to their type, not to it. */
    return compute(r, ctx, iw, ih, &t) == TMEM_OK && t.total_dirty <= budget;
}

/* Largest context in whole KV blocks that fits with the image. */
static uint64_t search_ctx(const req *r, uint64_t budget, uint64_t ctx_cap, uint32_t iw, uint32_t ih,
                           uint64_t image_tokens) {
    uint64_t lo = image_tokens / r->block + (image_tokens % r->block != 0);
    if (lo == 0) lo = 1;
    uint64_t cap = ctx_cap / r->block;
    if (cap < lo || !fits_at(r, budget, lo * r->block, iw, ih)) return 0;
    uint64_t hi = lo; /* invariant: fits(lo); grow hi until it does not or hits the cap */
    while (hi < cap) {
        uint64_t nh = hi * 2 > cap ? cap : hi * 2;
        if (!fits_at(r, budget, nh * r->block, iw, ih)) {
            hi = nh;
            break;
        }
        lo = hi = nh;
    }
    if (lo == hi) return lo * r->block; /* reached the cap */
    while (hi - lo > 1) { /* fits(lo), !fits(hi) */
        uint64_t mid = lo + (hi - lo) / 2;
        if (fits_at(r, budget, mid * r->block, iw, ih)) lo = mid;
        else hi = mid;
    }
    return lo * r->block;
}

/* Image of scale k: long side k*unit, short side in proportion. */
static void scaled(uint64_t k, uint64_t unit, uint32_t iw, uint32_t ih, uint32_t *w, uint32_t *h) {
    uint64_t L = iw > ih ? iw : ih, S = iw > ih ? ih : iw;
    uint64_t lng = k * unit, sh = (lng * S + L / 2) / L;
    sh = (sh + unit / 2) / unit * unit;
    if (sh < unit) sh = unit;
    *w = (uint32_t)(iw >= ih ? lng : sh);
    *h = (uint32_t)(iw >= ih ? sh : lng);
}

static void search_image(const req *r, uint64_t budget, uint64_t ctx, uint32_t iw, uint32_t ih, uint32_t *bw,
                         uint32_t *bh) {
    *bw = *bh = 0;
    uint64_t unit = (uint64_t)r->m->vis_patch * r->m->vis_merge, L = iw > ih ? iw : ih;
    uint64_t kmax = (L + unit / 2) / unit;
    if (kmax == 0) kmax = 1;
    uint32_t w, h;
    scaled(1, unit, iw, ih, &w, &h);
    if (!fits_at(r, budget, ctx, w, h)) return;
    uint64_t lo = 1, hi = kmax + 1; /* fits(lo); hi is past the range */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        scaled(mid, unit, iw, ih, &w, &h);
        if (fits_at(r, budget, ctx, w, h)) lo = mid;
        else hi = mid;
    }
    scaled(lo, unit, iw, ih, bw, bh);
}

static tmem_status resolve(const tmem_fit_desc *d, req *r) {
    memset(r, 0, sizeof *r);
    r->m = d->model;
    r->ctx = d->ctx;
    tmem_status st = tmem_model_validate(d->model);
    if (st) return st;
    if ((d->image_width != 0) != (d->image_height != 0)) return tmem__err(TMEM_E_INVALID_ARG);
    if (d->image_width && !d->model->vis_depth) return tmem__err(TMEM_E_INVALID_ARG);
    if (d->graph_flags & ~(uint32_t)TMEM_MODEL_GRAPH_FLAG_MASK) return tmem__err(TMEM_E_INVALID_ARG);
    if ((unsigned)d->weight_dtype >= TMEM_WEIGHT_COUNT || (unsigned)d->kv_dtype >= TMEM_KV_DTYPE_COUNT ||
        (unsigned)d->state_dtype >= TMEM_KV_DTYPE_COUNT)
        return tmem__err(TMEM_E_INVALID_ARG);
    r->n_seqs = d->n_seqs ? d->n_seqs : 1;
    r->snapshots = d->state_snapshots;
    r->scratch = d->scratch_bytes;
    r->tokenizer = d->tokenizer_bytes;
    r->chunk = d->prefill_chunk ? d->prefill_chunk : TMEM_FIT_DEFAULT_CHUNK;
    r->block = d->kv_block_tokens ? d->kv_block_tokens : TMEM_KV_DEFAULT_BLOCK_TOKENS;
    r->flags = d->graph_flags;
    r->exact_weights = d->weight_dtype == TMEM_WEIGHT_DEFAULT &&
                       (d->model->file_weight_bytes || d->model->vis_file_weight_bytes);
    r->weight_dtype = d->weight_dtype ? d->weight_dtype : TMEM_WEIGHT_BF16;
    r->kv_type = d->kv_dtype ? d->kv_dtype : TMEM_KV_DTYPE_F16;
    r->state_type = d->state_dtype ? d->state_dtype : TMEM_KV_DTYPE_F32;
    return tmem_model_param_count(d->model, &r->params);
}

tmem_status tmem_fit(const tmem_fit_desc *d, tmem_fit_result *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!d || !out || !d->model || !d->ctx_tokens) return tmem__err(TMEM_E_INVALID_ARG);
    req r;
    arena_memo memo;
    memo.n = memo.next = 0;
    tmem_status st = resolve(d, &r);
    r.memo = &memo;
    if (st) return st;
    tmem_fit_result res;
    if ((st = compute(&r, d->ctx_tokens, d->image_width, d->image_height, &res))) return st;
    res.budget = d->budget;
    res.fits = d->budget == 0 || res.total_dirty <= d->budget;
    if (d->budget) {
        /* never past the model's trained context (a request above it is the
         * caller's choice, but it is not a context the model supports) */
        uint64_t cap = d->model->n_ctx_train ? d->model->n_ctx_train : d->ctx_tokens;
        res.max_ctx_tokens = search_ctx(&r, d->budget, cap, d->image_width, d->image_height, res.image_tokens);
        if (d->image_width)
            search_image(&r, d->budget, d->ctx_tokens, d->image_width, d->image_height, &res.max_image_width,
                         &res.max_image_height);
    }
    *out = res;
    return TMEM_OK;
}

const tmem_fit_item *tmem_fit_find(const tmem_fit_result *r, tmem_fit_item_kind kind) {
    if (!r) return NULL;
    for (uint32_t i = 0; i < r->item_count && i < TMEM_FIT_MAX_ITEMS; i++)
        if (r->items[i].kind == kind) return &r->items[i];
    return NULL;
}

uint64_t tmem_fit_bytes(const tmem_fit_result *r, tmem_fit_item_kind kind) {
    const tmem_fit_item *it = tmem_fit_find(r, kind);
    return it ? it->bytes : 0;
}

uint64_t tmem_fit_kv_estimate(const tmem_kv_request *rq, uint32_t chunk, void *user) {
    const tmem_fit_desc *base = user;
    if (!rq || !base || !rq->context_tokens) return UINT64_MAX;
    tmem_fit_desc d = *base;
    d.ctx_tokens = rq->context_tokens;
    d.image_width = rq->image_width;
    d.image_height = rq->image_height;
    d.prefill_chunk = chunk ? chunk : rq->context_tokens;
    d.budget = 0; /* no searches */
    tmem_fit_result r;
    if (tmem_fit(&d, &r) != TMEM_OK) return UINT64_MAX;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < r.item_count; i++) {
        tmem_role role = r.items[i].role;
        if (role != TMEM_ROLE_WEIGHTS && role != TMEM_ROLE_KV_CACHE && role != TMEM_ROLE_RECURRENT_STATE)
            sum += r.items[i].bytes; /* each line is bounded, and the total did not overflow */
    }
    return sum;
}

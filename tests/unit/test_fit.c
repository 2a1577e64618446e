/* Model descriptors and the fit calculator against hand-computed values:
 * KV bytes per token, recurrent state per sequence, vision tokens, parameter
 * counts (Llama-3.2-1B's published 1,235,814,400), the activation graphs'
 * lifetimes, descriptors read back from GGUF metadata, and fit results that
 * add up and whose searched limits sit exactly on the budget's edge. Ends
 * with `tmem fit --json` through the real binary. */
#include "harness.h"
#include "typedmem/model.h"
#include "typedmem/plan.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tmem_model_desc preset(const char *name) {
    tmem_model_desc m;
    memset(&m, 0, sizeof m);
    if (tmem_model_preset(name, &m) != TMEM_OK) printf("no preset %s\n", name);
    return m;
}

static void test_kv_and_state(void) {
    tmem_model_desc m = preset("qwen3.5-0.8b");
    uint32_t full, linear;
    tmem_model_layer_counts(&m, &full, &linear);
    CHECK(full == 6 && linear == 18);
    uint64_t b;
    /* 6 full-attention layers x (K + V) x 2 KV heads x 256 x 2 bytes */
    CHECK_OK(tmem_model_kv_bytes_per_token(&m, TMEM_KV_DTYPE_F16, &b));
    CHECK_MSG(b == 12288, "kv f16 %llu", (unsigned long long)b);
    CHECK_OK(tmem_model_kv_bytes_per_token(&m, TMEM_KV_DTYPE_F32, &b));
    CHECK(b == 24576);
    /* q8_0: 512 values = 16 blocks of 34 bytes, x2 x6 */
    CHECK_OK(tmem_model_kv_bytes_per_token(&m, TMEM_KV_DTYPE_Q8_0, &b));
    CHECK(b == 6 * 2 * 16 * 34);
    /* 18 DeltaNet layers x (16*128*128 delta state + 3 * (2048 + 2*16*128) conv) x 2 bytes */
    CHECK_OK(tmem_model_recurrent_bytes(&m, TMEM_KV_DTYPE_F16, &b));
    CHECK_MSG(b == 10100736, "state f16 %llu", (unsigned long long)b);
    CHECK_OK(tmem_model_recurrent_bytes(&m, TMEM_KV_DTYPE_F32, &b));
    CHECK(b == 20201472);
    CHECK_ST(tmem_model_kv_bytes_per_token(&m, TMEM_KV_DTYPE_COUNT, &b), TMEM_E_INVALID_ARG);
    /* the layouts the cache takes carry the same numbers */
    tmem_kv_layout kl;
    CHECK_OK(tmem_model_kv_layout(&m, TMEM_KV_DTYPE_F16, 0, &kl));
    CHECK(kl.layers == 6 && kl.kv_heads == 2 && kl.head_dim == 256);
    tmem_recurrent_layout rl;
    CHECK_OK(tmem_model_recurrent_layout(&m, TMEM_KV_DTYPE_F16, &rl));
    CHECK(rl.layers == 18 && rl.key_heads == 16 && rl.value_heads == 16 && rl.key_dim == 128 && rl.value_dim == 128 &&
          rl.conv_kernel == 4 && rl.conv_channels == 6144);
    tmem_model_desc dense = preset("llama-3.2-1b");
    CHECK_ST(tmem_model_recurrent_layout(&dense, TMEM_KV_DTYPE_F16, &rl), TMEM_E_INVALID_ARG);
    tmem_model_desc mla = m;
    mla.head_dim_v = 128;
    CHECK_ST(tmem_model_kv_layout(&mla, TMEM_KV_DTYPE_F16, 0, &kl), TMEM_E_UNSUPPORTED);
    tmem_model_desc odd = m;
    odd.head_dim_k = odd.head_dim_v = 40; /* 80-value rows are not whole q8_0 blocks */
    CHECK_ST(tmem_model_kv_bytes_per_token(&odd, TMEM_KV_DTYPE_Q8_0, &b), TMEM_E_INVALID_ARG);

    tmem_model_desc q9 = preset("qwen3.5-9b");
    CHECK_OK(tmem_model_kv_bytes_per_token(&q9, TMEM_KV_DTYPE_F16, &b));
    CHECK(b == 8ull * 2 * 4 * 256 * 2);
    /* 24 layers x (32 value heads x 128 x 128 + 3 x (4096 + 2*16*128)) x 2 */
    CHECK_OK(tmem_model_recurrent_bytes(&q9, TMEM_KV_DTYPE_F16, &b));
    CHECK(b == 24ull * (32 * 128 * 128 + 3 * (4096 + 4096)) * 2);
    tmem_model_desc l = preset("llama-3.2-1b");
    CHECK_OK(tmem_model_kv_bytes_per_token(&l, TMEM_KV_DTYPE_F16, &b));
    CHECK(b == 16ull * 2 * 8 * 64 * 2);
    CHECK_OK(tmem_model_recurrent_bytes(&l, TMEM_KV_DTYPE_F16, &b));
    CHECK(b == 0);
    tmem_model_desc q3 = preset("qwen3-0.6b");
    CHECK_OK(tmem_model_kv_bytes_per_token(&q3, TMEM_KV_DTYPE_BF16, &b));
    CHECK(b == 28ull * 2 * 8 * 128 * 2);
}

static void test_vision_tokens(void) {
    tmem_model_desc m = preset("qwen3.5-0.8b");
    uint64_t t, p;
    CHECK_OK(tmem_model_vision_tokens(&m, 1024, 1024, &t, &p));
    CHECK(p == 4096 && t == 1024);
    CHECK_OK(tmem_model_vision_tokens(&m, 1920, 1080, &t, &p)); /* 1920x1088 -> 120 x 68 patches */
    CHECK(p == 120 * 68 && t == 60 * 34);
    CHECK_OK(tmem_model_vision_tokens(&m, 5, 5, &t, &p)); /* at least one merged token */
    CHECK(p == 4 && t == 1);
    CHECK_ST(tmem_model_vision_tokens(&m, 0, 5, &t, &p), TMEM_E_INVALID_ARG);
    tmem_model_desc l = preset("llama-3.2-1b");
    CHECK_ST(tmem_model_vision_tokens(&l, 64, 64, &t, &p), TMEM_E_INVALID_ARG);
}

static void test_params(void) {
    tmem_model_params p;
    tmem_model_desc l = preset("llama-3.2-1b");
    CHECK_OK(tmem_model_param_count(&l, &p));
    CHECK_MSG(p.total == 1235814400ull, "llama-3.2-1b params %llu", (unsigned long long)p.total);
    CHECK(p.embedding == 128256ull * 2048 && p.output == 2048 && p.vision == 0 && p.linear_attention == 0);
    tmem_model_desc q3 = preset("qwen3-0.6b");
    CHECK_OK(tmem_model_param_count(&q3, &p));
    CHECK_MSG(p.total == 596049920ull, "qwen3-0.6b params %llu", (unsigned long long)p.total);
    for (uint32_t i = 0; tmem_model_preset_name(i); i++) {
        tmem_model_desc m = preset(tmem_model_preset_name(i));
        CHECK_OK(tmem_model_validate(&m));
        CHECK_OK(tmem_model_param_count(&m, &p));
        CHECK(p.total == p.embedding + p.output + p.attention + p.linear_attention + p.ffn + p.vision);
        printf("%-14s %6.3f B parameters (vision %.3f B)\n", m.name, (double)p.total / 1e9, (double)p.vision / 1e9);
    }
    /* the names say 0.8B, 2B, 4B, 9B: the estimates must land near them */
    /* llama.cpp reports 8.95 B for Qwen3.5-9B's text model */
    tmem_model_desc q = preset("qwen3.5-9b");
    CHECK_OK(tmem_model_param_count(&q, &p));
    CHECK((p.total - p.vision) / 10000000 == 895);
    q = preset("qwen3.5-0.8b");
    CHECK_OK(tmem_model_param_count(&q, &p));
    CHECK(p.total > 750000000ull && p.total < 950000000ull);
    q = preset("qwen3.5-9b");
    CHECK_OK(tmem_model_param_count(&q, &p));
    CHECK(p.total > 8500000000ull && p.total < 10000000000ull);
    /* weights per dtype: whole blocks per part */
    uint64_t wt, wv;
    CHECK_OK(tmem_model_weight_bytes(&q, TMEM_WEIGHT_BF16, &wt, &wv));
    CHECK(wt == (p.total - p.vision) * 2 && wv == p.vision * 2);
    CHECK_OK(tmem_model_weight_bytes(&q, TMEM_WEIGHT_Q4_K, &wt, NULL));
    CHECK(wt == (p.total - p.vision + 255) / 256 * 144);
    CHECK_OK(tmem_model_weight_bytes(&q, TMEM_WEIGHT_Q8_0, &wt, &wv));
    CHECK(wv == (p.vision + 31) / 32 * 34);
    CHECK_ST(tmem_model_weight_bytes(&q, TMEM_WEIGHT_DEFAULT, &wt, &wv), TMEM_E_INVALID_ARG);
    tmem_model_desc none;
    CHECK_ST(tmem_model_preset("gpt-5", &none), TMEM_E_NOT_FOUND);
    CHECK_OK(tmem_model_preset("QWEN3.5-0.8B", &none));
    tmem_model_desc bad = preset("qwen3.5-0.8b");
    bad.n_head = 7; /* not a multiple of 2 KV heads */
    CHECK_ST(tmem_model_validate(&bad), TMEM_E_INVALID_ARG);
}

static void test_layer_graphs(void) {
    tmem_model_desc m = preset("qwen3.5-0.8b");
    tmem_model_buffer b[64];
    uint32_t n;
    for (int k = 0; k < TMEM_MODEL_LAYER_KIND_COUNT; k++) {
        REQUIRE_OK(tmem_model_layer_graph(&m, (tmem_model_layer_kind)k, 512, 8192, 0, b, 64, &n));
        CHECK(n > 8);
        uint64_t largest = 0, sum = 0;
        uint32_t steps = 0;
        for (uint32_t i = 0; i < n; i++) {
            CHECK_MSG(b[i].start < b[i].end, "kind %d buffer %s [%u,%u)", k, b[i].name, b[i].start, b[i].end);
            CHECK(b[i].size > 0);
            if (b[i].size > largest) largest = b[i].size;
            if (b[i].end > steps) steps = b[i].end;
            sum += b[i].size;
        }
        CHECK(!strcmp(b[0].name, "layer_in") && b[0].start == 0);
        CHECK(!strcmp(b[n - 1].name, "layer_out") && b[n - 1].end == steps);
        /* too small an array: FULL with the count */
        uint32_t n2;
        CHECK_ST(tmem_model_layer_graph(&m, (tmem_model_layer_kind)k, 512, 8192, 0, b, 3, &n2), TMEM_E_FULL);
        CHECK(n2 == n);
        (void)sum;
    }
    /* attention layer, flash: q_gate is 512 x (8*256*2) f32 */
    REQUIRE_OK(tmem_model_layer_graph(&m, TMEM_MODEL_LAYER_ATTENTION, 512, 8192, 0, b, 64, &n));
    CHECK(!strcmp(b[2].name, "q_gate") && b[2].size == 512ull * 4096 * 4);
    /* without flash attention the KQ scores appear: 8 heads x 512 x 8192 f32 */
    REQUIRE_OK(tmem_model_layer_graph(&m, TMEM_MODEL_LAYER_ATTENTION, 512, 8192, TMEM_MODEL_GRAPH_NO_FLASH_ATTN, b,
                                      64, &n));
    bool kq = false;
    for (uint32_t i = 0; i < n; i++) kq |= !strcmp(b[i].name, "kq") && b[i].size == 8ull * 512 * 8192 * 4;
    CHECK(kq);
    tmem_model_desc l = preset("llama-3.2-1b");
    CHECK_ST(tmem_model_layer_graph(&l, TMEM_MODEL_LAYER_DELTANET, 16, 16, 0, b, 64, &n), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_model_layer_graph(&l, TMEM_MODEL_LAYER_VISION, 16, 16, 0, b, 64, &n), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_model_layer_graph(&m, TMEM_MODEL_LAYER_ATTENTION, 0, 16, 0, b, 64, &n), TMEM_E_INVALID_ARG);
}

/* The table behind the graphs by id: tmem_model_graph_get gives the buffers of
 * tmem_model_layer_graph (same order, sizes, lifetimes) with their ids, an
 * index per id and a step per op; every buffer starts at the step of an op
 * of the graph; names come from the ids. */
static void test_graph_ids(void) {
    const char *names[] = {"qwen3.5-0.8b", "qwen3.5-9b", "llama-3.2-1b"};
    for (size_t p = 0; p < sizeof names / sizeof names[0]; p++) {
        tmem_model_desc m = preset(names[p]);
        for (int k = 0; k < TMEM_MODEL_LAYER_KIND_COUNT; k++)
            for (uint32_t fl = 0; fl <= TMEM_MODEL_GRAPH_FLAG_MASK; fl++) {
                tmem_model_buffer b[64];
                uint32_t n;
                tmem_model_graph g;
                tmem_status st = tmem_model_layer_graph(&m, (tmem_model_layer_kind)k, 100, 300, fl, b, 64, &n);
                CHECK_ST(tmem_model_graph_get(&m, (tmem_model_layer_kind)k, 100, 300, fl, &g), st);
                if (st) continue;
                CHECK(g.kind == (tmem_model_layer_kind)k && g.buf_count == n && g.step_count == b[n - 1].end);
                uint32_t seen = 0;
                for (uint32_t i = 0; i < n; i++) {
                    CHECK(g.bufs[i].id == b[i].id && g.bufs[i].size == b[i].size && g.bufs[i].start == b[i].start &&
                          g.bufs[i].end == b[i].end);
                    CHECK(!strcmp(b[i].name, tmem_model_buf_name(b[i].id)) && g.buf_index[b[i].id] == (int32_t)i);
                    bool at_op = false;
                    for (int o = 0; o < TMEM_MODEL_OP_COUNT; o++) at_op |= g.op_step[o] == b[i].start;
                    CHECK_MSG(at_op, "%s kind %d: %s starts at step %u, no op there", names[p], k, b[i].name,
                              b[i].start);
                }
                for (int id = 0; id < TMEM_MODEL_BUF_COUNT; id++) seen += g.buf_index[id] >= 0;
                CHECK(seen == n);
                for (int o = 0; o < TMEM_MODEL_OP_COUNT; o++)
                    CHECK(g.op_step[o] == TMEM_MODEL_STEP_NONE || g.op_step[o] < g.step_count);
                CHECK(g.op_step[TMEM_MODEL_OP_LAYER_IN] == 0 && g.op_step[TMEM_MODEL_OP_LAYER_OUT] == g.step_count - 1);
            }
    }
    tmem_model_desc m = preset("qwen3.5-0.8b"), m9 = preset("qwen3.5-9b");
    tmem_model_graph g;
    /* the chunked delta rule: the chunk loop is one op with the chunk buffers and core_out */
    REQUIRE_OK(tmem_model_graph_get(&m, TMEM_MODEL_LAYER_DELTANET, 512, 512, TMEM_MODEL_GRAPH_CHUNKED_DELTA, &g));
    uint32_t dr = g.op_step[TMEM_MODEL_OP_DELTA_RULE];
    CHECK(dr != TMEM_MODEL_STEP_NONE && g.op_step[TMEM_MODEL_OP_TRI_SOLVE] == TMEM_MODEL_STEP_NONE);
    CHECK(g.bufs[g.buf_index[TMEM_MODEL_BUF_CHUNK_QK]].start == dr &&
          g.bufs[g.buf_index[TMEM_MODEL_BUF_CORE_OUT]].start == dr);
    CHECK(g.bufs[g.buf_index[TMEM_MODEL_BUF_DECAY_MASK]].size == 16ull * 64 * 64 * 4);
    CHECK(g.buf_index[TMEM_MODEL_BUF_Q_REP] < 0); /* 16 key heads, 16 value heads: no repeat */
    REQUIRE_OK(tmem_model_graph_get(&m9, TMEM_MODEL_LAYER_DELTANET, 8, 8, TMEM_MODEL_GRAPH_CHUNKED_DELTA, &g));
    CHECK(g.buf_index[TMEM_MODEL_BUF_Q_REP] >= 0 && g.buf_index[TMEM_MODEL_BUF_K_REP] >= 0); /* 16 -> 32 heads */
    /* names: ids out of range answer NULL */
    CHECK(tmem_model_buf_name(TMEM_MODEL_BUF_COUNT) == NULL && tmem_model_op_name(TMEM_MODEL_OP_COUNT) == NULL);
    CHECK(!strcmp(tmem_model_op_name(TMEM_MODEL_OP_DELTA_RULE), "delta_rule"));
    /* misuse: outputs zeroed */
    memset(&g, 0xAB, sizeof g);
    CHECK_ST(tmem_model_graph_get(NULL, TMEM_MODEL_LAYER_ATTENTION, 1, 1, 0, &g), TMEM_E_INVALID_ARG);
    CHECK(g.buf_count == 0 && g.step_count == 0);
    CHECK_ST(tmem_model_graph_get(&m, TMEM_MODEL_LAYER_ATTENTION, 0, 1, 0, &g), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_model_graph_get(&m, TMEM_MODEL_LAYER_ATTENTION, 1, 1, 1u << 7, &g), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_model_graph_get(&m, TMEM_MODEL_LAYER_KIND_COUNT, 1, 1, 0, &g), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_model_graph_get(&m, TMEM_MODEL_LAYER_ATTENTION, 1, 1, 0, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_model_graph_get(&m, TMEM_MODEL_LAYER_ATTENTION, UINT64_MAX / 2, 1, 0, &g), TMEM_E_OVERFLOW);
    CHECK(g.buf_count == 0);
}

/* Every preset's layer graphs through the planner: its lower bound equals the
 * graph's sweep, its plan validates, and the fit reports the planned arena. */
static void test_graphs_planned(void) {
    for (uint32_t pi = 0; tmem_model_preset_name(pi); pi++) {
        tmem_model_desc m = preset(tmem_model_preset_name(pi));
        for (int k = 0; k < TMEM_MODEL_LAYER_KIND_COUNT; k++) {
            for (uint32_t fl = 0; fl <= TMEM_MODEL_GRAPH_NO_FLASH_ATTN; fl += TMEM_MODEL_GRAPH_NO_FLASH_ATTN) {
                tmem_model_buffer b[64];
                uint32_t n;
                if (tmem_model_layer_graph(&m, (tmem_model_layer_kind)k, 512, 4096, fl, b, 64, &n) != TMEM_OK)
                    continue; /* the model lacks this layer kind */
                tmem_plan_problem *p;
                REQUIRE_OK(tmem_plan_problem_create(&p));
                uint64_t sweep = 0, sum = 0;
                for (uint32_t i = 0; i < n; i++) {
                    tmem_plan_buffer pb = {0};
                    pb.size = b[i].size;
                    pb.start = b[i].start;
                    pb.end = b[i].end;
                    CHECK_OK(tmem_plan_problem_add(p, &pb, NULL));
                    sum += b[i].size;
                }
                for (uint32_t t = 0; t < 64; t++) {
                    uint64_t live = 0;
                    for (uint32_t i = 0; i < n; i++)
                        if (b[i].start <= t && t < b[i].end) live += b[i].size;
                    if (live > sweep) sweep = live;
                }
                uint64_t lb;
                CHECK_OK(tmem_plan_problem_lower_bound(p, &lb));
                CHECK_MSG(lb == sweep, "%s kind %d: planner bound %llu, sweep %llu", m.name, k,
                          (unsigned long long)lb, (unsigned long long)sweep);
                tmem_plan *plan;
                REQUIRE_OK(tmem_plan_solve(p, NULL, &plan));
                tmem_plan_info info;
                CHECK_OK(tmem_plan_get_info(plan, &info));
                CHECK(info.arena >= lb && info.arena < sum);
                uint64_t offs[64];
                for (uint32_t i = 0; i < n; i++) offs[i] = tmem_plan_offset(plan, i);
                CHECK_OK(tmem_plan_validate(p, offs, 0, NULL));
                tmem_plan_destroy(plan);
                tmem_plan_problem_destroy(p);
            }
        }
    }
    tmem_model_desc m = preset("qwen3.5-0.8b");
    tmem_fit_desc f;
    memset(&f, 0, sizeof f);
    f.model = &m;
    f.ctx_tokens = 4096;
    f.image_width = f.image_height = 512;
    tmem_fit_result r;
    REQUIRE_OK(tmem_fit(&f, &r));
    CHECK(r.arena_from_planner && r.activation_arena >= r.activation_lower_bound &&
          r.vision_arena >= r.vision_lower_bound);
    printf("qwen3.5-0.8b prefill arena %llu (bound %llu), vision %llu (bound %llu)\n",
           (unsigned long long)r.activation_arena, (unsigned long long)r.activation_lower_bound,
           (unsigned long long)r.vision_arena, (unsigned long long)r.vision_lower_bound);
}

static tmem_fit_desc request(const tmem_model_desc *m, uint64_t ctx, uint32_t img, uint64_t budget) {
    tmem_fit_desc f;
    memset(&f, 0, sizeof f);
    f.model = m;
    f.ctx_tokens = ctx;
    f.image_width = f.image_height = img;
    f.budget = budget;
    return f;
}

static uint64_t total_at(const tmem_model_desc *m, uint64_t ctx, uint32_t w, uint32_t h) {
    tmem_fit_desc f = request(m, ctx, 0, 0);
    f.image_width = w;
    f.image_height = h;
    tmem_fit_result r;
    /* budgets count dirty bytes: what the fit compares with them */
    return tmem_fit(&f, &r) == TMEM_OK ? r.total_dirty : UINT64_MAX;
}

static void check_sums(const tmem_fit_result *r) {
    uint64_t sum = 0, dirty = 0;
    for (uint32_t i = 0; i < r->item_count; i++) {
        sum += r->items[i].bytes;
        if (!r->items[i].clean) dirty += r->items[i].bytes;
        CHECK(r->items[i].what && r->items[i].type_name);
    }
    CHECK(sum == r->total && dirty == r->total_dirty);
}

static const tmem_fit_item *find_item(const tmem_fit_result *r, const char *what) {
    for (uint32_t i = 0; i < r->item_count; i++)
        if (!strcmp(r->items[i].what, what)) return &r->items[i];
    return NULL;
}

/* Fit lines by kind: each line's kind names it (its what), tmem_fit_find
 * finds it, tmem_fit_bytes reads it; absent lines answer NULL and 0. */
static void test_fit_kinds(void) {
    static const char *const whats[TMEM_FIT_ITEM_KIND_COUNT] = {
#define X(id, what) [TMEM_FIT_ITEM_##id] = what,
        TMEM_FIT_ITEM_LIST(X)
#undef X
    };
    tmem_model_desc m = preset("qwen3.5-0.8b");
    tmem_fit_desc f = request(&m, 8192, 1024, 0);
    f.scratch_bytes = 12345;
    f.tokenizer_bytes = 6789;
    f.state_snapshots = 2;
    tmem_fit_result r;
    REQUIRE_OK(tmem_fit(&f, &r));
    CHECK(r.item_count == TMEM_FIT_ITEM_KIND_COUNT); /* an image, DeltaNet, snapshots, scratch, tokenizer: every line */
    for (uint32_t i = 0; i < r.item_count; i++) {
        const tmem_fit_item *it = &r.items[i];
        CHECK_MSG((unsigned)it->kind < TMEM_FIT_ITEM_KIND_COUNT && !strcmp(it->what, whats[it->kind]),
                  "line %u: kind %d, what %s", i, it->kind, it->what);
        CHECK(it->kind == (tmem_fit_item_kind)i); /* listed in TMEM_FIT_ITEM_LIST's order */
        CHECK(tmem_fit_find(&r, it->kind) == it && tmem_fit_bytes(&r, it->kind) == it->bytes);
    }
    CHECK(tmem_fit_bytes(&r, TMEM_FIT_ITEM_SCRATCH) == 12345 && tmem_fit_bytes(&r, TMEM_FIT_ITEM_TOKENIZER) == 6789);
    CHECK(tmem_fit_find(&r, TMEM_FIT_ITEM_TOKENIZER)->role == TMEM_ROLE_OUTPUT_TOKENS);
    f = request(&m, 8192, 0, 0); /* no image, no scratch, no tokenizer */
    REQUIRE_OK(tmem_fit(&f, &r));
    CHECK(tmem_fit_find(&r, TMEM_FIT_ITEM_IMAGE) == NULL && tmem_fit_bytes(&r, TMEM_FIT_ITEM_SCRATCH) == 0 &&
          tmem_fit_find(&r, TMEM_FIT_ITEM_TOKENIZER) == NULL);
    CHECK(tmem_fit_find(NULL, TMEM_FIT_ITEM_KV_CACHE) == NULL && tmem_fit_bytes(NULL, TMEM_FIT_ITEM_KV_CACHE) == 0);
    CHECK(tmem_fit_find(&r, TMEM_FIT_ITEM_KIND_COUNT) == NULL);
}

static void test_fit_breakdown(void) {
    tmem_model_desc m = preset("qwen3.5-0.8b");
    tmem_fit_desc f = request(&m, 8192, 1024, 3ull << 30);
    tmem_fit_result r;
    REQUIRE_OK(tmem_fit(&f, &r));
    check_sums(&r);
    CHECK(r.fits && r.total <= f.budget);
    CHECK(r.kv_bytes_per_token == 12288 && r.recurrent_bytes_per_seq == 20201472);
    CHECK(r.image_tokens == 1024 && r.image_patches == 4096 && r.kv_tokens == 8192);
    const tmem_fit_item *kv = find_item(&r, "kv_cache"), *st = find_item(&r, "recurrent_state");
    REQUIRE(kv && st);
    CHECK(kv->bytes == 8192ull * 12288 && kv->role == TMEM_ROLE_KV_CACHE && !kv->clean);
    CHECK(st->bytes == 20201472);
    const tmem_fit_item *w = find_item(&r, "weights.text"), *img = find_item(&r, "image"), *lg = find_item(&r, "logits");
    REQUIRE(w && img && lg && find_item(&r, "weights.vision") && find_item(&r, "vision_embeddings"));
    CHECK(w->clean && !strcmp(w->type_name, "/memory/weights"));
    tmem_model_params p;
    REQUIRE_OK(tmem_model_param_count(&m, &p));
    CHECK(w->bytes == (p.total - p.vision) * 2); /* bf16 by default */
    CHECK(img->bytes == 1024ull * 1024 * 3 + 4096ull * 3 * 2 * 16 * 16 * 4);
    CHECK(lg->bytes == 248320ull * 4 && lg->role == TMEM_ROLE_ACTIVATION);
    CHECK(find_item(&r, "tokens")->bytes == 8192ull * 4 && find_item(&r, "tokens")->role == TMEM_ROLE_OUTPUT_TOKENS);
    CHECK(find_item(&r, "vision_embeddings")->bytes == 1024ull * 1024 * 4);
    CHECK(r.activation_arena >= r.activation_lower_bound && r.activation_lower_bound > 0);
    CHECK(r.vision_arena >= r.vision_lower_bound && r.vision_lower_bound > 0);
    CHECK(find_item(&r, "vision_activations")->bytes == r.vision_arena);
    CHECK(find_item(&r, "activations")->bytes == r.activation_arena);
    CHECK(!strcmp(find_item(&r, "recurrent_state")->type_name, "/memory/state"));
    /* 2 sequences double KV, state, logits and tokens, nothing else */
    f.n_seqs = 2;
    tmem_fit_result r2;
    REQUIRE_OK(tmem_fit(&f, &r2));
    check_sums(&r2);
    CHECK(r2.total == r.total + kv->bytes + st->bytes + lg->bytes + find_item(&r, "tokens")->bytes);
    /* a ctx that is not a whole number of blocks rounds up */
    f = request(&m, 8193, 0, 0);
    REQUIRE_OK(tmem_fit(&f, &r2));
    CHECK(r2.kv_tokens == 8208 && find_item(&r2, "kv_cache")->bytes == 8208ull * 12288 && r2.fits);
    CHECK(!find_item(&r2, "image") && !find_item(&r2, "weights.vision"));
    /* dtype choices */
    f.kv_dtype = TMEM_KV_DTYPE_Q8_0;
    f.weight_dtype = TMEM_WEIGHT_Q4_K;
    f.state_dtype = TMEM_KV_DTYPE_F16;
    REQUIRE_OK(tmem_fit(&f, &r2));
    CHECK(r2.kv_bytes_per_token == 6528 && r2.recurrent_bytes_per_seq == 10100736);
    CHECK(find_item(&r2, "weights.text")->bytes == ((p.total - p.vision + 255) / 256) * 144);
    /* refusals */
    f = request(&m, 512, 1024, 0); /* 1024 image tokens > 512 ctx */
    CHECK_ST(tmem_fit(&f, &r2), TMEM_E_INVALID_ARG);
    tmem_model_desc l = preset("llama-3.2-1b");
    f = request(&l, 4096, 256, 0);
    CHECK_ST(tmem_fit(&f, &r2), TMEM_E_INVALID_ARG);
    f = request(&m, 0, 0, 0);
    CHECK_ST(tmem_fit(&f, &r2), TMEM_E_INVALID_ARG);
    f = request(NULL, 10, 0, 0);
    CHECK_ST(tmem_fit(&f, &r2), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_fit(NULL, &r2), TMEM_E_INVALID_ARG);
}

/* state_snapshots: one recurrent-state copy per snapshot per sequence, as
 * tmem_kv_snapshot_take commits it; none for a dense model. */
static void test_fit_snapshots(void) {
    tmem_model_desc m = preset("qwen3.5-0.8b");
    tmem_fit_desc f = request(&m, 4096, 448, 0);
    tmem_fit_result r0, r2;
    REQUIRE_OK(tmem_fit(&f, &r0));
    CHECK(find_item(&r0, "state_snapshots") == NULL);
    f.state_snapshots = 2;
    f.n_seqs = 3;
    REQUIRE_OK(tmem_fit(&f, &r2));
    check_sums(&r2);
    const tmem_fit_item *it = find_item(&r2, "state_snapshots");
    REQUIRE(it != NULL);
    CHECK(it->role == TMEM_ROLE_RECURRENT_STATE && !it->clean);
    CHECK(it->bytes == 2 * 3 * r2.recurrent_bytes_per_seq);
    tmem_fit_desc f1 = request(&m, 4096, 448, 0);
    f1.n_seqs = 3;
    tmem_fit_result r1;
    REQUIRE_OK(tmem_fit(&f1, &r1));
    CHECK(r2.total == r1.total + it->bytes && r2.total_dirty == r1.total_dirty + it->bytes);
    tmem_model_desc l = preset("llama-3.2-1b");
    f = request(&l, 4096, 0, 0);
    f.state_snapshots = 4;
    REQUIRE_OK(tmem_fit(&f, &r2));
    CHECK(find_item(&r2, "state_snapshots") == NULL);
}

static void test_fit_limits(void) {
    for (uint32_t pi = 0; tmem_model_preset_name(pi); pi++) {
        tmem_model_desc m = preset(tmem_model_preset_name(pi));
        uint32_t img = m.vis_depth ? 1024 : 0;
        /* a budget that fits ctx 20000 but not ctx 100000 */
        uint64_t lo = total_at(&m, 20000, img, img), hi = total_at(&m, 100000, img, img);
        REQUIRE(lo < hi && hi != UINT64_MAX);
        uint64_t budget = lo + (hi - lo) / 3;
        tmem_fit_desc f = request(&m, 100000, img, budget);
        tmem_fit_result r;
        REQUIRE_OK(tmem_fit(&f, &r));
        check_sums(&r);
        CHECK(!r.fits && r.total_dirty > budget);
        uint64_t c = r.max_ctx_tokens;
        CHECK_MSG(c > 20000 && c < 100000 && c % 16 == 0, "%s: max ctx %llu", m.name, (unsigned long long)c);
        CHECK_MSG(total_at(&m, c, img, img) <= budget, "%s: max ctx %llu does not fit", m.name, (unsigned long long)c);
        /* the search stops at the model's context length (qwen3-0.6b: 40960) */
        CHECK_MSG(c <= m.n_ctx_train, "%s: max ctx %llu past the model's %u", m.name, (unsigned long long)c,
                  m.n_ctx_train);
        CHECK_MSG(c == m.n_ctx_train || total_at(&m, c + 16, img, img) > budget, "%s: ctx %llu + 1 block still fits",
                  m.name, (unsigned long long)c);
        if (img) {
            /* at ctx 100000 the image is fine; shrink the budget until only a smaller image fits */
            uint64_t small = total_at(&m, 20000, 256, 256), big = total_at(&m, 20000, 2048, 2048);
            REQUIRE(small < big);
            f = request(&m, 20000, 2048, small + (big - small) / 2);
            REQUIRE_OK(tmem_fit(&f, &r));
            CHECK(!r.fits);
            uint32_t w = r.max_image_width, h = r.max_image_height;
            CHECK_MSG(w >= 256 && w < 2048 && w == h && w % 32 == 0, "%s: max image %ux%u", m.name, w, h);
            CHECK(total_at(&m, 20000, w, h) <= f.budget);
            CHECK(total_at(&m, 20000, w + 32, h + 32) > f.budget);
        }
    }
    /* a wide image keeps its aspect ratio while it shrinks */
    {
        tmem_model_desc m = preset("qwen3.5-0.8b");
        uint64_t small = total_at(&m, 20000, 512, 256), big = total_at(&m, 20000, 2048, 1024);
        tmem_fit_desc f = request(&m, 20000, 0, small + (big - small) / 2);
        f.image_width = 2048;
        f.image_height = 1024;
        tmem_fit_result r;
        REQUIRE_OK(tmem_fit(&f, &r));
        uint32_t w = r.max_image_width, h = r.max_image_height;
        CHECK_MSG(w > 512 && w < 2048 && w % 32 == 0 && h % 32 == 0 && (w == 2 * h || w == 2 * h + 32 || w + 32 == 2 * h),
                  "wide max image %ux%u", w, h);
        CHECK(total_at(&m, 20000, w, h) <= f.budget);
    }
    /* nothing fits: the recurrent state alone exceeds the budget (the
     * weights are clean file pages: budgets count dirty bytes) */
    tmem_model_desc m = preset("qwen3.5-9b");
    tmem_fit_desc f = request(&m, 4096, 0, 4ull << 20);
    tmem_fit_result r;
    REQUIRE_OK(tmem_fit(&f, &r));
    CHECK(!r.fits && r.max_ctx_tokens == 0);
    /* 18 GiB of weights beside a 1 GiB budget: the request still fits */
    f = request(&m, 4096, 0, 1ull << 30);
    REQUIRE_OK(tmem_fit(&f, &r));
    CHECK(r.fits && r.total > f.budget && r.total_dirty <= f.budget);
    /* fits everything: the ctx search stops at the training context */
    f = request(&m, 4096, 0, 1ull << 50);
    REQUIRE_OK(tmem_fit(&f, &r));
    CHECK(r.fits && r.max_ctx_tokens == 262144);
}

/* With a context, each line names the type the context's policy maps its role to. */
static void test_fit_ctx_policy(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/hybrid_state";
    td.placement = TMEM_PLACEMENT_HOST;
    td.lifetime = TMEM_LIFETIME_GROWING;
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    REQUIRE_OK(tmem_role_set_type(ctx, TMEM_ROLE_RECURRENT_STATE, t));
    tmem_model_desc m = preset("qwen3.5-0.8b");
    tmem_fit_desc f = request(&m, 4096, 0, 0);
    f.ctx = ctx;
    tmem_fit_result r;
    CHECK_OK(tmem_fit(&f, &r));
    CHECK(!strcmp(find_item(&r, "recurrent_state")->type_name, "/memory/hybrid_state"));
    CHECK(!strcmp(find_item(&r, "kv_cache")->type_name, "/memory/kv"));
    CHECK(!strcmp(find_item(&r, "weights.text")->type_name, "/memory/weights"));
    tmem_context_destroy(ctx);
}

/* One number for the cache and the calculator: a KV cache built from the
 * model's layouts admits a request needing exactly the fit's KV and state
 * lines, and tmem_fit_kv_estimate gives admission the fit's other lines. */
static void test_fit_matches_kv_cache(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 2ull << 30;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_model_desc m = preset("qwen3.5-0.8b");
    for (int q = 0; q < 2; q++) {
        tmem_kv_cache_desc kd = {0};
        tmem_kv_dtype kvd = q ? TMEM_KV_DTYPE_Q8_0 : TMEM_KV_DTYPE_F16; /* q8_0 blocks are not page multiples */
        REQUIRE_OK(tmem_model_kv_layout(&m, kvd, 0, &kd.kv));
        REQUIRE_OK(tmem_model_recurrent_layout(&m, TMEM_KV_DTYPE_DEFAULT, &kd.recurrent));
        kd.kv_pool_bytes = 512ull << 20;
        kd.state_pool_bytes = 64ull << 20;
        kd.flags = TMEM_KV_CACHE_NO_RECLAIM;
        tmem_kv_cache *cache;
        REQUIRE_OK(tmem_kv_cache_create(ctx, &kd, &cache));
        tmem_fit_desc f = request(&m, 8000, 512, 0);
        f.ctx = ctx;
        f.kv_dtype = kvd;
        tmem_fit_result r;
        REQUIRE_OK(tmem_fit(&f, &r));
        tmem_kv_request req = {0};
        req.context_tokens = 8000;
        req.image_width = req.image_height = 512;
        req.prefill_chunk = 512;
        req.estimate = tmem_fit_kv_estimate;
        req.estimate_user = &f;
        tmem_kv_admission adm;
        CHECK_OK(tmem_kv_admit(cache, &req, &adm));
        CHECK(adm.admitted && adm.prefill_chunk == 512);
        CHECK_MSG(adm.kv_bytes == find_item(&r, "kv_cache")->bytes, "kv: cache %llu, fit %llu",
                  (unsigned long long)adm.kv_bytes, (unsigned long long)find_item(&r, "kv_cache")->bytes);
        CHECK_MSG(adm.state_bytes == find_item(&r, "recurrent_state")->bytes, "state: cache %llu, fit %llu",
                  (unsigned long long)adm.state_bytes, (unsigned long long)find_item(&r, "recurrent_state")->bytes);
        uint64_t other = 0;
        for (uint32_t i = 0; i < r.item_count; i++)
            if (r.items[i].role != TMEM_ROLE_WEIGHTS && r.items[i].role != TMEM_ROLE_KV_CACHE &&
                r.items[i].role != TMEM_ROLE_RECURRENT_STATE)
                other += r.items[i].bytes;
        CHECK(adm.other_bytes == other && other > 0);
        /* and the cache really commits that much for 8000 tokens */
        tmem_kv_seq seq;
        REQUIRE_OK(tmem_kv_seq_create(cache, &seq));
        CHECK_OK(tmem_kv_seq_append(cache, seq, 8000));
        tmem_kv_cache_stats ks;
        REQUIRE_OK(tmem_kv_cache_get_stats(cache, &ks));
        CHECK_MSG(ks.kv_bytes_allocated == find_item(&r, "kv_cache")->bytes, "allocated %llu",
                  (unsigned long long)ks.kv_bytes_allocated);
        CHECK(ks.state_bytes == find_item(&r, "recurrent_state")->bytes);
        CHECK_OK(tmem_kv_seq_free(cache, seq));
        tmem_kv_cache_destroy(cache);
    }
    /* an image on a text-only model cannot be sized: admission must refuse */
    tmem_fit_desc bad = request(&m, 100, 0, 0);
    tmem_kv_request req = {0};
    req.context_tokens = 100;
    req.image_width = req.image_height = 1024; /* 1024 tokens > 100 */
    CHECK(tmem_fit_kv_estimate(&req, 16, &bad) == UINT64_MAX);
    req.context_tokens = 0;
    CHECK(tmem_fit_kv_estimate(&req, 16, &bad) == UINT64_MAX);
    tmem_context_destroy(ctx);
}

/* A small GGUF image with llama.cpp's qwen35 keys for the 0.8B's text shape. */
static uint8_t *qwen35_image(size_t *n) {
    tmem_gguf_writer *w;
    if (tmem_gguf_writer_create(NULL, 0, &w) != TMEM_OK) return NULL;
    struct { const char *k; uint64_t v; } keys[] = {
        {"qwen35.block_count", 25}, {"qwen35.nextn_predict_layers", 1}, {"qwen35.embedding_length", 1024},
        {"qwen35.feed_forward_length", 3584}, {"qwen35.context_length", 262144}, {"qwen35.attention.head_count", 8},
        {"qwen35.attention.head_count_kv", 2}, {"qwen35.attention.key_length", 256},
        {"qwen35.attention.value_length", 256}, {"qwen35.full_attention_interval", 4},
        {"qwen35.ssm.conv_kernel", 4}, {"qwen35.ssm.state_size", 128}, {"qwen35.ssm.group_count", 16},
        {"qwen35.ssm.time_step_rank", 16}, {"qwen35.ssm.inner_size", 2048}, {"qwen35.vocab_size", 248320}};
    tmem_gguf_value v = {.type = TMEM_GGUF_STRING};
    v.v.s.data = "qwen35";
    v.v.s.len = 6;
    bool ok = !tmem_gguf_writer_set(w, "general.architecture", &v);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        v = (tmem_gguf_value){.type = i % 2 ? TMEM_GGUF_UINT32 : TMEM_GGUF_UINT64};
        v.v.u = keys[i].v;
        ok &= !tmem_gguf_writer_set(w, keys[i].k, &v);
    }
    uint64_t d[2] = {1024, 16};
    ok &= !tmem_gguf_writer_add_tensor(w, "token_embd.weight", TMEM_GGML_Q8_0, 2, d, NULL);
    ok &= !tmem_gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", TMEM_GGML_Q4_K, 2, d, NULL);
    ok &= !tmem_gguf_writer_add_tensor(w, "blk.0.ffn_down.weight", TMEM_GGML_Q4_K, 2, d, NULL);
    size_t need = 0;
    ok &= tmem_gguf_writer_write(w, NULL, 0, &need) == TMEM_E_FULL;
    uint8_t *buf = ok ? malloc(need) : NULL;
    if (buf && tmem_gguf_writer_write(w, buf, need, n) != TMEM_OK) {
        free(buf);
        buf = NULL;
    }
    tmem_gguf_writer_destroy(w);
    return buf;
}

/* A GGUF with llama.cpp's qwen35 keys reads back as the preset's text shape. */
static void test_from_gguf(void) {
    tmem_model_desc p = preset("qwen3.5-0.8b");
    size_t need;
    uint8_t *buf = qwen35_image(&need);
    REQUIRE(buf);
    tmem_gguf_writer *w;
    tmem_gguf_value v;
    tmem_gguf *g;
    REQUIRE_OK(tmem_gguf_open_memory(NULL, buf, need, &g, NULL));
    tmem_model_desc m;
    tmem_gguf_error e;
    tmem_status st = tmem_model_from_gguf(g, &m, &e);
    CHECK_MSG(st == TMEM_OK, "%s: %s", tmem_status_name(st), e.message);
    CHECK(!strcmp(m.arch, "qwen35") && m.n_layers == 24 && m.full_attn_interval == 4 && m.n_embd == 1024);
    CHECK(m.n_head == 8 && m.n_head_kv == 2 && m.head_dim_k == 256 && m.ssm_inner_size == 2048);
    CHECK(m.tied_embeddings && m.attn_output_gate && m.vis_depth == 0);
    CHECK(m.file_weight_bytes == 1024 * 16 / 32 * 34 + 2 * (1024 * 16 / 256 * 144));
    CHECK(m.file_weight_type == TMEM_GGML_Q4_K);
    uint64_t a, b;
    CHECK_OK(tmem_model_kv_bytes_per_token(&m, TMEM_KV_DTYPE_F16, &a));
    CHECK_OK(tmem_model_kv_bytes_per_token(&p, TMEM_KV_DTYPE_F16, &b));
    CHECK(a == b && a == 12288);
    CHECK_OK(tmem_model_recurrent_bytes(&m, TMEM_KV_DTYPE_F16, &a));
    CHECK(a == 10100736);
    /* exact weight bytes flow into the fit */
    tmem_fit_desc f = request(&m, 1024, 0, 0);
    tmem_fit_result r;
    REQUIRE_OK(tmem_fit(&f, &r));
    CHECK(find_item(&r, "weights.text")->bytes == m.file_weight_bytes);
    tmem_gguf_close(g);
    free(buf);

    /* llama metadata without key_length: head dim = embedding / heads; a missing key is named */
    REQUIRE_OK(tmem_gguf_writer_create(NULL, 0, &w));
    v = (tmem_gguf_value){.type = TMEM_GGUF_STRING};
    v.v.s.data = "llama";
    v.v.s.len = 5;
    CHECK_OK(tmem_gguf_writer_set(w, "general.architecture", &v));
    const char *toks[] = {"a", "b", "c"};
    CHECK_OK(tmem_gguf_writer_set_array(w, "tokenizer.ggml.tokens", TMEM_GGUF_STRING, toks, 3));
    struct { const char *k; uint64_t v; } lk[] = {{"llama.block_count", 16}, {"llama.embedding_length", 2048},
                                                   {"llama.feed_forward_length", 8192},
                                                   {"llama.attention.head_count", 32}};
    for (size_t i = 0; i < 4; i++) {
        v = (tmem_gguf_value){.type = TMEM_GGUF_UINT32};
        v.v.u = lk[i].v;
        CHECK_OK(tmem_gguf_writer_set(w, lk[i].k, &v));
    }
    CHECK_ST(tmem_gguf_writer_write(w, NULL, 0, &need), TMEM_E_FULL);
    buf = malloc(need);
    REQUIRE(buf);
    CHECK_OK(tmem_gguf_writer_write(w, buf, need, &need));
    REQUIRE_OK(tmem_gguf_open_memory(NULL, buf, need, &g, NULL));
    CHECK_OK(tmem_model_from_gguf(g, &m, NULL));
    CHECK(m.head_dim_k == 64 && m.n_head_kv == 32 && m.n_vocab == 3 && m.full_attn_interval == 0);
    tmem_gguf_close(g);
    free(buf);
    v = (tmem_gguf_value){.type = TMEM_GGUF_STRING};
    v.v.s.data = "qwen35";
    v.v.s.len = 6;
    tmem_gguf_writer_destroy(w);
    REQUIRE_OK(tmem_gguf_writer_create(NULL, 0, &w));
    CHECK_OK(tmem_gguf_writer_set(w, "general.architecture", &v));
    CHECK_ST(tmem_gguf_writer_write(w, NULL, 0, &need), TMEM_E_FULL);
    buf = malloc(need);
    REQUIRE(buf);
    CHECK_OK(tmem_gguf_writer_write(w, buf, need, &need));
    REQUIRE_OK(tmem_gguf_open_memory(NULL, buf, need, &g, NULL));
    CHECK_ST(tmem_model_from_gguf(g, &m, &e), TMEM_E_NOT_FOUND);
    CHECK(strstr(e.message, "qwen35.block_count") != NULL);
    tmem_gguf_close(g);
    free(buf);
    tmem_gguf_writer_destroy(w);
}

/* An mmproj GGUF image with the 0.8B's vision tower (llama.cpp's clip.vision.* keys). */
static uint8_t *mmproj_image(size_t *n) {
    tmem_gguf_writer *w;
    if (tmem_gguf_writer_create(NULL, 0, &w) != TMEM_OK) return NULL;
    struct { const char *k; uint32_t v; } keys[] = {
        {"clip.vision.block_count", 12}, {"clip.vision.embedding_length", 768},
        {"clip.vision.feed_forward_length", 3072}, {"clip.vision.attention.head_count", 12},
        {"clip.vision.patch_size", 16}, {"clip.vision.spatial_merge_size", 2}, {"clip.vision.projection_dim", 1024}};
    bool ok = true;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        tmem_gguf_value v = {.type = TMEM_GGUF_UINT32};
        v.v.u = keys[i].v;
        ok &= !tmem_gguf_writer_set(w, keys[i].k, &v);
    }
    tmem_gguf_value v = {.type = TMEM_GGUF_STRING};
    v.v.s.data = "qwen3vl_merger";
    v.v.s.len = strlen(v.v.s.data);
    ok &= !tmem_gguf_writer_set(w, "clip.vision.projector_type", &v);
    uint64_t d[2] = {768, 2304};
    ok &= !tmem_gguf_writer_add_tensor(w, "v.position_embd.weight", TMEM_GGML_F16, 2, d, NULL);
    size_t need = 0;
    ok &= tmem_gguf_writer_write(w, NULL, 0, &need) == TMEM_E_FULL;
    uint8_t *buf = ok ? malloc(need) : NULL;
    if (buf && tmem_gguf_writer_write(w, buf, need, n) != TMEM_OK) {
        free(buf);
        buf = NULL;
    }
    tmem_gguf_writer_destroy(w);
    return buf;
}

/* The vision encoder from an mmproj GGUF. */
static void test_mmproj(void) {
    size_t need;
    uint8_t *buf = mmproj_image(&need);
    REQUIRE(buf);
    tmem_gguf *g;
    REQUIRE_OK(tmem_gguf_open_memory(NULL, buf, need, &g, NULL));
    tmem_model_desc want = preset("qwen3.5-0.8b"), m = want;
    m.vis_depth = m.vis_hidden = m.vis_ff = m.vis_heads = m.vis_patch = m.vis_merge = 0;
    m.vis_temporal_patch = m.vis_out_hidden = m.vis_pos_embd = 0;
    tmem_gguf_error e;
    tmem_status st = tmem_model_add_mmproj(g, &m, &e);
    CHECK_MSG(st == TMEM_OK, "%s: %s", tmem_status_name(st), e.message);
    CHECK(m.vis_depth == want.vis_depth && m.vis_hidden == want.vis_hidden && m.vis_ff == want.vis_ff &&
          m.vis_heads == want.vis_heads && m.vis_patch == want.vis_patch && m.vis_merge == want.vis_merge &&
          m.vis_temporal_patch == want.vis_temporal_patch && m.vis_out_hidden == want.vis_out_hidden &&
          m.vis_pos_embd == want.vis_pos_embd);
    CHECK(m.vis_file_weight_bytes == 768ull * 2304 * 2);
    tmem_gguf_close(g);
    /* without spatial_merge_size a Qwen projector still merges 2x2 */
    uint8_t *b2 = malloc(need);
    REQUIRE(b2);
    memcpy(b2, buf, need);
    char *hit = memmem(b2, need, "clip.vision.spatial_merge_size", 30);
    REQUIRE(hit);
    hit[12] = 'X'; /* rename the key: clip.vision.Xpatial_merge_size */
    REQUIRE_OK(tmem_gguf_open_memory(NULL, b2, need, &g, NULL));
    tmem_model_desc m2 = m;
    m2.vis_merge = 0;
    CHECK_OK(tmem_model_add_mmproj(g, &m2, &e));
    CHECK(m2.vis_merge == 2 && m2.vis_temporal_patch == 2);
    tmem_gguf_close(g);
    free(b2);
    REQUIRE_OK(tmem_gguf_open_memory(NULL, buf, need, &g, NULL));
    /* the exact mmproj bytes replace the vision estimate; the text stays estimated */
    tmem_fit_desc f = request(&m, 4096, 512, 0);
    tmem_fit_result r;
    REQUIRE_OK(tmem_fit(&f, &r));
    CHECK(find_item(&r, "weights.vision")->bytes == m.vis_file_weight_bytes);
    tmem_model_params p;
    REQUIRE_OK(tmem_model_param_count(&want, &p));
    CHECK(find_item(&r, "weights.text")->bytes == (p.total - p.vision) * 2);
    tmem_gguf_close(g);
    free(buf);
    /* a text model is not an mmproj: the missing key is named, nothing changes */
    buf = qwen35_image(&need);
    REQUIRE(buf);
    REQUIRE_OK(tmem_gguf_open_memory(NULL, buf, need, &g, NULL));
    tmem_model_desc before = m;
    CHECK_ST(tmem_model_add_mmproj(g, &m, &e), TMEM_E_NOT_FOUND);
    CHECK(strstr(e.message, "clip.vision.block_count") && !memcmp(&before, &m, sizeof m));
    tmem_gguf_close(g);
    free(buf);
}

/* The CLI: JSON fields, and its totals agree with the library. */
static void test_cli(void) {
    const char *tool = getenv("TMEM_TOOL");
    if (!tool) {
        printf("TMEM_TOOL not set: skipping the CLI check\n");
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%.200s' fit --model qwen3.5-0.8b --ctx 8192 --image 1024x1024 --budget 3GiB --json",
             tool);
    FILE *p = popen(cmd, "r");
    REQUIRE(p);
    static char out[16384];
    char want[256];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    CHECK_MSG(rc == 0, "exit %d", rc);
    tmem_model_desc m = preset("qwen3.5-0.8b");
    tmem_fit_desc f = request(&m, 8192, 1024, 3ull << 30);
    tmem_fit_result r;
    REQUIRE_OK(tmem_fit(&f, &r));
    snprintf(want, sizeof want, "\"total\":%llu,", (unsigned long long)r.total);
    CHECK_MSG(strstr(out, want), "JSON lacks %.200s", want);
    const char *fields[] = {"\"kv_bytes_per_token\":12288", "\"fits\":true", "\"by_type\":{", "\"by_role\":{",
                            "\"items\":[", "\"max_ctx_tokens\":", "\"max_image\":{", "\"image_tokens\":1024",
                            "\"recurrent_bytes_per_seq\":20201472", "\"what\":\"kv_cache\"",
                            "\"weights_by_dtype\":{\"f32\":{", "\"file_weights_by_type\":{}"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) CHECK_MSG(strstr(out, fields[i]), "no %s", fields[i]);
    snprintf(cmd, sizeof cmd, "'%s' fit --model qwen3.5-9b --ctx 8192 --budget 256MiB >/dev/null", tool);
    rc = system(cmd);
    CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 3, "does-not-fit exit %d", rc);
    snprintf(cmd, sizeof cmd, "'%s' fit --model nope --ctx 8192 2>/dev/null", tool);
    rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    snprintf(cmd, sizeof cmd, "'%s' fit --model qwen3.5-0.8b --ctx 8192 --budget 3XB 2>/dev/null", tool);
    rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    /* --gguf: the file's exact bytes and shape, the preset's vision tower */
    char dir[200], path[400];
    size_t gn;
    uint8_t *gb = qwen35_image(&gn);
    if (gb && tmem_test_tmpdir(dir, sizeof dir)) {
        snprintf(path, sizeof path, "%s/q.gguf", dir);
        FILE *gf = fopen(path, "wb");
        if (gf) {
            CHECK(fwrite(gb, 1, gn, gf) == gn);
            fclose(gf);
            snprintf(cmd, sizeof cmd, "'%s' fit --gguf '%s' --model qwen3.5-0.8b --ctx 4096 --image 512x512 --json",
                     tool, path);
            p = popen(cmd, "r");
            REQUIRE(p);
            n = fread(out, 1, sizeof out - 1, p);
            out[n] = 0;
            CHECK(pclose(p) == 0);
            uint64_t wbytes = 1024 * 16 / 32 * 34 + 2 * (1024 * 16 / 256 * 144);
            snprintf(want, sizeof want, "\"what\":\"weights.text\",\"role\":\"weights\",\"type\":\"/memory/weights\","
                     "\"clean\":true,\"bytes\":%llu}", (unsigned long long)wbytes);
            CHECK_MSG(strstr(out, want), "no %.200s", want);
            CHECK(strstr(out, "\"file_weights_by_type\":{\"q8_0\":17408,\"q4_K\":18432}") != NULL);
            CHECK(strstr(out, "\"weight_dtype\":\"q4_K\"") && strstr(out, "\"image_tokens\":256") &&
                  strstr(out, "\"kv_bytes_per_token\":12288"));
            unlink(path);
        }
        /* --mmproj: the vision tower's exact bytes */
        size_t mn;
        uint8_t *mb = mmproj_image(&mn);
        gf = mb ? fopen(path, "wb") : NULL;
        if (gf) {
            CHECK(fwrite(mb, 1, mn, gf) == mn);
            fclose(gf);
            snprintf(cmd, sizeof cmd, "'%.200s' fit --model qwen3.5-0.8b --mmproj '%.300s' --ctx 4096 --image 512x512 --json",
                     tool, path);
            p = popen(cmd, "r");
            REQUIRE(p);
            n = fread(out, 1, sizeof out - 1, p);
            out[n] = 0;
            CHECK(pclose(p) == 0);
            snprintf(want, sizeof want, "\"what\":\"weights.vision\",\"role\":\"weights\",\"type\":\"/memory/weights\","
                     "\"clean\":true,\"bytes\":%llu}", 768ull * 2304 * 2);
            CHECK_MSG(strstr(out, want), "no %.200s", want);
            unlink(path);
        }
        free(mb);
        rmdir(dir);
    }
    free(gb);
}

int main(void) {
    RUN(test_kv_and_state);
    RUN(test_vision_tokens);
    RUN(test_params);
    RUN(test_layer_graphs);
    RUN(test_graph_ids);
    RUN(test_graphs_planned);
    RUN(test_fit_breakdown);
    RUN(test_fit_kinds);
    RUN(test_fit_snapshots);
    RUN(test_fit_limits);
    RUN(test_fit_ctx_policy);
    RUN(test_fit_matches_kv_cache);
    RUN(test_from_gguf);
    RUN(test_mmproj);
    RUN(test_cli);
    return tmem_test_finish();
}

/* The forward pass uses every buffer inside the lifetime its graph's table
 * gives it (issue 18): the runtime's testing copy records, for each layer
 * graph, at which op step every buffer is used (runtime/src/util/
 * graph_acts.h), and a use outside the table's [start, end) is a violation.
 *
 *  - prefill chunked (40 tokens at chunk 16: 16 + 16 + 8) and not (10
 *    tokens at chunk 64), then decode, on both tiny models (3 DeltaNet + 1
 *    attention layer with repeated key heads; a 1:1 pattern without), typed
 *    and naive, and the vision encoder (typed and naive): no violation, and
 *    every buffer of every table used (decode: all but the chunk buffers the
 *    recurrent form does not need), each first at its start step and last at
 *    the step before its end (the table is no looser than the code);
 *  - a fixture table with ffn_norm's lifetime shortened by one step: the
 *    violation is caught, naming the buffer, the step and the op;
 *  - built as runtime/test_graph_lifetimes_planted (against the runtime
 *    built with TMRT_PLANT_REORDER: the FFN's up projection moved after the
 *    down projection, the vision block's output projection after the
 *    residual), the reorders are caught, naming buffer and step. */
#include "tiny_model.h"
#include "rt_internal.h"
#include "tmemrt/runtime.h"
#include "tmemrt/vision.h"
#include "vision/vision_internal.h"

static char dir[400], path[600], mmproj[600];
static int32_t prompt[64];

/* Record the session's four graphs into log. */
static void attach(tmrt_session *s, tmrt_use_log *log) {
    tmrt_run *r = tmrt__session_run(s);
    tmrt_acts *a[] = {&r->prefill_attn, &r->decode_attn, &r->prefill_delta, &r->decode_delta};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) a[i]->log = log;
}

static bool eval(tmrt_session *s, const int32_t *toks, uint32_t n) {
    tmrt_batch b = {0};
    b.tokens = toks;
    b.n_tokens = n;
    b.logits = TMRT_LOGITS_LAST;
    tmrt_error e;
    tmem_status st = tmrt_session_eval(s, &b, NULL, NULL, &e);
    CHECK_MSG(st == TMEM_OK, "eval: %.200s", e.message);
    return st == TMEM_OK;
}

/* Prefill n tokens at `chunk`, then `decode` tokens one by one. */
static tmrt_session *run(tmrt_model *m, uint32_t chunk, uint32_t n, uint32_t decode, tmrt_use_log *log) {
    tmrt_session_desc sd = {0};
    sd.n_ctx = 128;
    sd.chunk = chunk;
    tmrt_session *s;
    tmrt_error e;
    if (tmrt_session_create(m, &sd, &s, NULL, &e)) {
        CHECK_MSG(false, "session: %.200s", e.message);
        return NULL;
    }
    attach(s, log);
    if (eval(s, prompt, n))
        for (uint32_t i = 0; i < decode && eval(s, prompt + n + i, 1); i++) {}
    return s;
}

#if !TMRT_TEST_PLANTED
static bool is_chunk_buffer(tmem_model_buf_id id) {
    return id >= TMEM_MODEL_BUF_K_BETA && id <= TMEM_MODEL_BUF_V_NEW;
}

/* No violation; every buffer of each graph that ran used (decode DeltaNet:
 * but the chunk buffers), from the first step of its lifetime to the last. */
static void expect_clean(const tmrt_use_log *log, const char *what) {
    CHECK_MSG(log->uses > 0, "%s: no use recorded: the runtime's testing copy records nothing", what);
    CHECK_MSG(log->violations == 0, "%s: %u violations, first: %.150s", what, log->violations, log->report[0]);
    for (int s = 0; s < TMRT_SLOT_COUNT; s++) {
        if (!log->ran[s]) continue;
        const tmem_model_graph *g = &log->graph[s];
        for (uint32_t i = 0; i < g->buf_count; i++) {
            const tmem_model_buffer *b = &g->bufs[i];
            uint32_t first = log->first[s][b->id], last = log->last[s][b->id];
            if (first == UINT32_MAX) {
                CHECK_MSG(s == TMRT_SLOT_DECODE_DELTA && is_chunk_buffer(b->id), "%s: %s: %s never used", what,
                          tmrt__slot_name((tmrt_graph_slot)s), b->name);
                continue;
            }
            /* inside the lifetime, and the lifetime no longer than the uses:
             * the table is exactly what the forward pass does */
            CHECK_MSG(first == b->start && last + 1 == b->end, "%s: %s: %s used %u..%u, lifetime [%u,%u)", what,
                      tmrt__slot_name((tmrt_graph_slot)s), b->name, first, last, b->start, b->end);
        }
    }
}

#endif

static bool reported(const tmrt_use_log *log, const char *needle) {
    for (uint32_t i = 0; i < log->violations && i < TMRT_USE_REPORTS; i++)
        if (strstr(log->report[i], needle)) return true;
    return false;
}

static void open_model(tmem_context **ctx, tmrt_model **m, bool naive) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    *m = NULL;
    if (tmem_context_create(&cd, ctx)) return;
    tmrt_model_desc md = {0};
    md.path = path;
    md.memory = naive ? TMRT_MEMORY_NAIVE : TMRT_MEMORY_TYPED;
    tmrt_error e;
    if (tmrt_model_open(naive ? NULL : *ctx, &md, m, &e)) *m = NULL;
}

static void text_runs(const tiny_config *c, const char *name) {
    REQUIRE(tiny_model_write(c, path));
    for (int naive = 0; naive < 2; naive++) {
        tmem_context *ctx;
        tmrt_model *m;
        open_model(&ctx, &m, naive);
        REQUIRE(m);
        tmrt_use_log log;
        tmrt__use_log_init(&log);
        tmrt_session_destroy(run(m, 16, 40, 3, &log)); /* chunked: 16 + 16 + 8, then decode */
        tmrt_session_destroy(run(m, 64, 10, 3, &log)); /* one chunk */
        char what[64];
        snprintf(what, sizeof what, "%s %s", name, naive ? "naive" : "typed");
        printf("   %s: %llu uses\n", what, (unsigned long long)log.uses);
#if !TMRT_TEST_PLANTED
        if (!naive && !strcmp(name, "tiny-a")) tmrt__use_log_print(&log, stdout);
        expect_clean(&log, what);
        for (int s = 0; s < TMRT_SLOT_VISION; s++) CHECK_MSG(log.ran[s], "%s: graph %d never ran", what, s);
#else
        /* the up projection after the down projection: ffn_norm read at
         * ffn_down's step, past its lifetime */
        CHECK_MSG(log.violations > 0 && reported(&log, "buffer ffn_norm used at step"),
                  "%s: the planted reorder went unseen (%u violations: %.100s)", what, log.violations, log.report[0]);
        for (uint32_t i = 0; i < log.violations && i < TMRT_USE_REPORTS; i++) printf("   caught: %s\n", log.report[i]);
#endif
        tmrt_model_close(m);
        tmem_context_destroy(ctx);
    }
}

static void test_text(void) {
    tiny_config a = tiny_config_a(), b = tiny_config_b();
    text_runs(&a, "tiny-a");
    text_runs(&b, "tiny-b");
}

#if !TMRT_TEST_PLANTED
/* A fixture table with ffn_norm's lifetime one step short (it ends at
 * ffn_gate's step, so ffn_up's read is outside): caught, named. */
static void test_shortened_table(void) {
    tiny_config c = tiny_config_a();
    REQUIRE(tiny_model_write(&c, path));
    tmem_context *ctx;
    tmrt_model *m;
    open_model(&ctx, &m, false);
    REQUIRE(m);
    tmrt_use_log log;
    tmrt__use_log_init(&log);
    tmrt_session *s = run(m, 16, 8, 0, &log); /* a clean first step */
    REQUIRE(s);
    CHECK(log.violations == 0);
    tmem_model_graph *g = &tmrt__session_run(s)->prefill_attn.graph;
    int32_t i = g->buf_index[TMEM_MODEL_BUF_FFN_NORM];
    REQUIRE(i >= 0);
    uint32_t up = g->op_step[TMEM_MODEL_OP_FFN_UP];
    CHECK(g->bufs[i].end == up + 1); /* read last by the up projection */
    g->bufs[i].end = up;              /* the fixture: one step short */
    REQUIRE(eval(s, prompt, 8));
    char want[96];
    snprintf(want, sizeof want, "prefill_attn: buffer ffn_norm used at step %u (op ffn_up), outside its lifetime",
             up);
    CHECK_MSG(log.violations > 0 && reported(&log, want), "not caught: %u violations, first: %.150s", log.violations,
              log.report[0]);
    printf("   caught: %s\n", log.report[0]);
    tmrt_session_destroy(s);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
}
#endif

/* An RGB image (its pixels do not matter here: only when buffers are used). */
static tmem_surface *rgb_surface(tmem_context *ctx, uint32_t w, uint32_t h) {
    tmem_surface_desc d = {0};
    d.width = w, d.height = h, d.format = TMEM_FORMAT_RGB8;
    tmem_surface *s = NULL;
    tmem_tensor_view tv;
    bool ok = tmem_surface_create(ctx, &d, &s) == TMEM_OK && tmem_surface_plane_view(s, 0, NULL, &tv) == TMEM_OK &&
              tmem_surface_lock(s, 0, NULL) == TMEM_OK;
    for (uint32_t y = 0; ok && y < h; y++) memset((uint8_t *)tv.data + (size_t)y * (size_t)tv.strides[0], (int)y, 3 * w);
    if (ok && tmem_surface_unlock(s, 0, NULL) == TMEM_OK) return s;
    tmem_surface_release(s);
    return NULL;
}

static void test_vision(void) {
    tmrt_vision_config c;
    tmrt_error err = {""};
    REQUIRE(tmrt_vision_preset("tiny", &c) == TMEM_OK);
    REQUIRE(tmrt_vision_write_random(&c, TMEM_GGML_F32, 7, mmproj, &err) == TMEM_OK);
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    for (int naive = 0; naive < 2; naive++) {
        tmrt_vision *v; /* the mode is the handle's (tmrt_vision_desc::memory) */
        tmrt_vision_desc vd = {mmproj, naive ? TMRT_MEMORY_NAIVE : TMRT_MEMORY_TYPED, NULL};
        REQUIRE(tmrt_vision_open(ctx, &vd, &v, &err) == TMEM_OK);
        tmrt_use_log log;
        tmrt__use_log_init(&log);
        v->use_log = &log;
        tmem_surface *img = rgb_surface(ctx, 128, 64);
        REQUIRE(img);
        float emb[32 * 96];
        tmrt_vision_encode_desc d = {2, false};
        CHECK_MSG(tmrt_vision_encode(v, &img, &d, emb, 96, NULL, &err) == TMEM_OK, "encode: %.200s", err.message);
        v->use_log = NULL;
        const char *what = naive ? "vision naive" : "vision typed";
        printf("   %s: %llu uses\n", what, (unsigned long long)log.uses);
        CHECK_MSG(log.ran[TMRT_SLOT_VISION], "%s: the block graph never ran", what);
#if !TMRT_TEST_PLANTED
        if (!naive) tmrt__use_log_print(&log, stdout);
        expect_clean(&log, what);
#else
        /* the output projection after the residual: attn_out read past its end */
        CHECK_MSG(reported(&log, "vision: buffer attn_out used at step"), "%s: the planted reorder went unseen (%.100s)",
                  what, log.report[0]);
        for (uint32_t i = 0; i < log.violations && i < TMRT_USE_REPORTS; i++) printf("   caught: %s\n", log.report[i]);
#endif
        tmrt_vision_close(v);
    }
    tmem_context_destroy(ctx);
}

int main(void) {
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    snprintf(mmproj, sizeof mmproj, "%s/tiny-mmproj.gguf", dir);
    for (int i = 0; i < 64; i++) prompt[i] = (i * 37 + 5) % 60;
    RUN(test_text);
#if !TMRT_TEST_PLANTED
    RUN(test_shortened_table);
#endif
    RUN(test_vision);
    remove(path);
    remove(mmproj);
    remove(dir);
    return tmem_test_finish();
}

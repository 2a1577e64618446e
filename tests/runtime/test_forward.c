/* The forward pass on tiny random qwen35 models (two configs: 3:1 layers
 * with 2 key / 4 value DeltaNet heads, untied; 1:1 layers, tied, full
 * rotary): prefill chunk sizes 1, 7, 64, 512 give the same logits within
 * 1e-5 of the largest, prefill then decode (teacher forcing) matches the
 * full prefill, typed and naive memory give bit-identical logits, threads
 * do not change the bits, greedy generation is deterministic, and the
 * session's memory is what tmem_fit predicted. */
#include "tiny_model.h"
#include "tmemrt/runtime.h"

#define PROMPT 150

typedef struct rows {
    float *data;
    uint32_t n_vocab, cap, count;
} rows;

static tmem_status keep_row(void *user, uint32_t index, const float *logits, uint32_t n_vocab) {
    rows *r = user;
    if (index >= r->cap) return TMEM_E_FULL;
    memcpy(r->data + (size_t)index * n_vocab, logits, n_vocab * sizeof *logits);
    r->n_vocab = n_vocab;
    if (index + 1 > r->count) r->count = index + 1;
    return TMEM_OK;
}

static char model_path[2][512];
static int32_t prompt[PROMPT];

typedef struct run_opts {
    tmrt_memory_mode memory;
    uint32_t chunk, threads, decode_from;
} run_opts;

/* All-position logits of the prompt: rows[t] for t < PROMPT. */
static bool run_model(int cfg, run_opts o, rows *out) {
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    if (o.memory == TMRT_MEMORY_TYPED && tmem_context_create(&cd, &ctx)) return false;
    tmrt_model *m = NULL;
    tmrt_session *s = NULL;
    tmrt_error e = {{0}};
    tmrt_model_desc md = {0};
    md.path = model_path[cfg];
    md.memory = o.memory;
    bool ok = tmrt_model_open(ctx, &md, &m, &e) == TMEM_OK;
    CHECK_MSG(ok, "open: %.200s", e.message);
    tmrt_session_desc sd = {0};
    sd.n_ctx = 256;
    sd.chunk = o.chunk;
    sd.threads = o.threads;
    if (ok) {
        ok = tmrt_session_create(m, &sd, &s, NULL, &e) == TMEM_OK;
        CHECK_MSG(ok, "session: %.200s", e.message);
    }
    uint32_t first = o.decode_from ? o.decode_from : PROMPT;
    if (ok) {
        tmrt_batch b = {0};
        b.tokens = prompt;
        b.n_tokens = first;
        b.logits = TMRT_LOGITS_ALL;
        ok = tmrt_session_eval(s, &b, keep_row, out, &e) == TMEM_OK;
        CHECK_MSG(ok, "eval: %.200s", e.message);
    }
    for (uint32_t t = first; ok && t < PROMPT; t++) {
        /* teacher forcing: one token at a time, through the recurrent form */
        rows shifted = *out;
        shifted.data = out->data + (size_t)t * out->n_vocab;
        shifted.cap = 1;
        tmrt_batch b = {0};
        b.tokens = prompt + t;
        b.n_tokens = 1;
        b.logits = TMRT_LOGITS_LAST;
        ok = tmrt_session_eval(s, &b, keep_row, &shifted, &e) == TMEM_OK;
        CHECK_MSG(ok, "decode: %.200s", e.message);
    }
    tmrt_session_destroy(s);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
    return ok;
}

static rows rows_new(void) {
    rows r = {calloc((size_t)PROMPT * 128, sizeof(float)), 0, PROMPT, 0};
    return r;
}

static float max_abs(const rows *r) {
    float m = 0;
    for (size_t i = 0; i < (size_t)PROMPT * r->n_vocab; i++) m = fabsf(r->data[i]) > m ? fabsf(r->data[i]) : m;
    return m;
}

static float max_diff(const rows *a, const rows *b) {
    float m = 0;
    for (size_t i = 0; i < (size_t)PROMPT * a->n_vocab; i++) {
        float d = fabsf(a->data[i] - b->data[i]);
        if (!(d <= m)) m = d; /* NaN wins */
    }
    return m;
}

static void test_chunks_agree(void) {
    for (int cfg = 0; cfg < 2; cfg++) {
        rows ref = rows_new();
        REQUIRE(run_model(cfg, (run_opts){TMRT_MEMORY_TYPED, 512, 1, 0}, &ref));
        float scale = max_abs(&ref);
        CHECK_MSG(scale > 0.1f && isfinite(scale), "cfg %d: logits look dead (max %g)", cfg, scale);
        uint32_t chunks[] = {1, 7, 64};
        for (int i = 0; i < 3; i++) {
            rows r = rows_new();
            REQUIRE(run_model(cfg, (run_opts){TMRT_MEMORY_TYPED, chunks[i], 1, 0}, &r));
            float d = max_diff(&ref, &r);
            CHECK_MSG(d <= 1e-5f * scale, "cfg %d chunk %u: max |diff| %g vs max |logit| %g", cfg, chunks[i], d,
                      scale);
            free(r.data);
        }
        free(ref.data);
    }
}

static void test_decode_matches_prefill(void) {
    for (int cfg = 0; cfg < 2; cfg++) {
        rows ref = rows_new(), dec = rows_new();
        REQUIRE(run_model(cfg, (run_opts){TMRT_MEMORY_TYPED, 64, 1, 0}, &ref));
        REQUIRE(run_model(cfg, (run_opts){TMRT_MEMORY_TYPED, 64, 1, 70}, &dec));
        float d = max_diff(&ref, &dec), scale = max_abs(&ref);
        CHECK_MSG(d <= 1e-5f * scale, "cfg %d: decode vs prefill max |diff| %g (max |logit| %g)", cfg, d, scale);
        free(ref.data);
        free(dec.data);
    }
}

static void test_typed_naive_identical(void) {
    for (int cfg = 0; cfg < 2; cfg++) {
        rows t = rows_new(), n = rows_new(), t2 = rows_new();
        REQUIRE(run_model(cfg, (run_opts){TMRT_MEMORY_TYPED, 32, 2, 100}, &t));
        REQUIRE(run_model(cfg, (run_opts){TMRT_MEMORY_NAIVE, 32, 2, 100}, &n));
        REQUIRE(run_model(cfg, (run_opts){TMRT_MEMORY_TYPED, 32, 1, 100}, &t2));
        CHECK_MSG(!memcmp(t.data, n.data, (size_t)PROMPT * t.n_vocab * 4), "cfg %d: typed and naive logits differ",
                  cfg);
        CHECK_MSG(!memcmp(t.data, t2.data, (size_t)PROMPT * t.n_vocab * 4), "cfg %d: 1 and 2 threads differ", cfg);
        free(t.data);
        free(n.data);
        free(t2.data);
    }
}

static void test_greedy_and_fit(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmrt_model *m;
    tmrt_error e;
    tmrt_model_desc md = {0};
    md.path = model_path[0];
    REQUIRE_OK(tmrt_model_open(ctx, &md, &m, &e));
    int32_t out[2][20];
    for (int rep = 0; rep < 2; rep++) {
        tmrt_session *s;
        tmrt_session_desc sd = {0};
        sd.n_ctx = 64;
        sd.chunk = 16;
        tmrt_session_info info;
        REQUIRE_OK(tmrt_session_create(m, &sd, &s, &info, &e));
        /* what the session committed is what the fit predicted, line by line */
        tmem_budget_info bi;
        CHECK_OK(tmem_context_budget(ctx, &bi));
        CHECK_MSG(bi.committed <= info.fit.total + (256u << 10) && bi.committed + (256u << 10) >= info.fit.total,
                  "committed %llu vs predicted %llu", (unsigned long long)bi.committed,
                  (unsigned long long)info.fit.total);
        tmrt_batch b = {0};
        b.tokens = prompt;
        b.n_tokens = 10;
        b.logits = TMRT_LOGITS_LAST;
        REQUIRE_OK(tmrt_session_eval(s, &b, NULL, NULL, &e));
        tmrt_sampler sp;
        tmrt_sampler_init(&sp, NULL);
        for (int i = 0; i < 20; i++) {
            REQUIRE_OK(tmrt_session_sample(s, &sp, &out[rep][i]));
            CHECK(out[rep][i] >= 0 && out[rep][i] < 97);
            b.tokens = &out[rep][i];
            b.n_tokens = 1;
            REQUIRE_OK(tmrt_session_eval(s, &b, NULL, NULL, &e));
        }
        uint32_t n;
        const int32_t *toks = tmrt_session_tokens(s, &n);
        CHECK(n == 30 && toks[10] == out[rep][0] && toks[29] == out[rep][19]);
        /* the context is full at 64: an eval past it is refused, nothing evaluated */
        int32_t many[40] = {0};
        b.tokens = many;
        b.n_tokens = 40;
        CHECK_ST(tmrt_session_eval(s, &b, NULL, NULL, &e), TMEM_E_FULL);
        tmrt_session_destroy(s);
    }
    CHECK(!memcmp(out[0], out[1], sizeof out[0]));
    /* a seeded sampler replays */
    tmrt_sampler_desc sd = {0.8f, 20, 0.9f, 42};
    float logits[97];
    for (int i = 0; i < 97; i++) logits[i] = (float)((i * 37) % 11) * 0.3f;
    float scratch[2 * 97];
    int32_t a[8], c[8];
    tmrt_sampler s1, s2;
    tmrt_sampler_init(&s1, &sd);
    tmrt_sampler_init(&s2, &sd);
    for (int i = 0; i < 8; i++) {
        a[i] = tmrt_sample(logits, 97, &s1, scratch);
        c[i] = tmrt_sample(logits, 97, &s2, scratch);
    }
    CHECK(!memcmp(a, c, sizeof a));
    CHECK(tmrt_sample(logits, 97, NULL, NULL) == 8); /* argmax: (i*37)%11 == 10 first at i = 8 */
    /* top-k 1 and a tiny top-p are the argmax; top-k 3 only ever draws the 3 best */
    tmrt_sampler_desc k1 = {1.0f, 1, 0, 5}, p0 = {1.0f, 0, 1e-6f, 5}, k3 = {2.0f, 3, 0, 9};
    tmrt_sampler a1, a2, a3;
    tmrt_sampler_init(&a1, &k1);
    tmrt_sampler_init(&a2, &p0);
    tmrt_sampler_init(&a3, &k3);
    float distinct[97];
    int best[3] = {0, 0, 0};
    for (int i = 0; i < 97; i++) {
        distinct[i] = (float)((i * 53) % 97) * 0.05f; /* a permutation of 0..96 */
        for (int r = 0; r < 3; r++)
            if ((i * 53) % 97 == 96 - r) best[r] = i;
    }
    int seen[97] = {0};
    for (int i = 0; i < 2000; i++) {
        CHECK(tmrt_sample(distinct, 97, &a1, scratch) == best[0]);
        CHECK(tmrt_sample(distinct, 97, &a2, scratch) == best[0]);
        int32_t t = tmrt_sample(distinct, 97, &a3, scratch);
        if (t >= 0 && t < 97) seen[t]++;
    }
    int n0 = seen[best[0]], n1 = seen[best[1]], n2 = seen[best[2]];
    CHECK_MSG(n0 && n1 && n2 && n0 + n1 + n2 == 2000, "%d %d %d", n0, n1, n2);
    CHECK(n0 > n1 && n1 > n2);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
}

static void test_budget_refusal(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 20;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmrt_model *m;
    tmrt_error e;
    tmrt_model_desc md = {0};
    md.path = model_path[0];
    REQUIRE_OK(tmrt_model_open(ctx, &md, &m, &e));
    tmem_budget_info before;
    CHECK_OK(tmem_context_budget(ctx, &before));
    tmrt_session *s;
    tmrt_session_desc sd = {0};
    sd.n_ctx = 1u << 20; /* far too much KV for the budget */
    sd.budget = 8ull << 20;
    tmrt_session_info info;
    CHECK_ST(tmrt_session_create(m, &sd, &s, &info, &e), TMEM_E_BUDGET);
    CHECK(s == NULL && !info.fit.fits && info.fit.total > sd.budget);
    CHECK_MSG(info.fit.max_ctx_tokens > 0 && info.fit.max_ctx_tokens < sd.n_ctx, "max ctx %llu",
              (unsigned long long)info.fit.max_ctx_tokens);
    tmem_budget_info after;
    CHECK_OK(tmem_context_budget(ctx, &after));
    CHECK_MSG(after.committed == before.committed, "a refused session committed memory");
    /* the largest context it named does fit */
    sd.n_ctx = (uint32_t)info.fit.max_ctx_tokens;
    CHECK_OK(tmrt_session_create(m, &sd, &s, &info, &e));
    tmrt_session_destroy(s);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
}

/* A budget between the fit at the asked chunk and at a smaller one: the
 * session shrinks the prefill chunk (and says so) instead of refusing; with
 * NO_CHUNK_SHRINK it refuses. */
static void test_chunk_shrink(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmrt_model *m;
    tmrt_error e;
    tmrt_model_desc md = {0};
    md.path = model_path[0];
    REQUIRE_OK(tmrt_model_open(ctx, &md, &m, &e));
    tmrt_session *s;
    tmrt_session_desc sd = {0};
    sd.n_ctx = 256;
    sd.chunk = 256;
    tmrt_session_info big;
    REQUIRE_OK(tmrt_session_create(m, &sd, &s, &big, &e));
    tmrt_session_destroy(s);
    sd.budget = big.fit.total - 1;
    tmrt_session_info info;
    CHECK_OK(tmrt_session_create(m, &sd, &s, &info, &e));
    CHECK_MSG(info.chunk < 256 && info.chunk_asked == 256 && info.fit.fits && info.fit.total <= sd.budget,
              "chunk %u of %u, total %llu", info.chunk, info.chunk_asked, (unsigned long long)info.fit.total);
    tmrt_session_destroy(s);
    sd.flags = TMRT_SESSION_NO_CHUNK_SHRINK;
    CHECK_ST(tmrt_session_create(m, &sd, &s, &info, &e), TMEM_E_BUDGET);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
}

#if defined(__GLIBC__)
#include <malloc.h>
/* The forward pass keeps nothing from malloc: decoding tokens inside one KV
 * block (no new block, no table growth) leaves the C heap's bytes in use as
 * they were. (A malloc freed before returning would not show here; there is
 * no malloc call under runtime/src/forward/ or runtime/src/sample/.) */
static void test_no_malloc(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmrt_model *m;
    tmrt_error e;
    tmrt_model_desc md = {0};
    md.path = model_path[0];
    REQUIRE_OK(tmrt_model_open(ctx, &md, &m, &e));
    tmrt_session *s;
    tmrt_session_desc sd = {0};
    sd.n_ctx = 64;
    sd.chunk = 16;
    sd.threads = 2;
    REQUIRE_OK(tmrt_session_create(m, &sd, &s, NULL, &e));
    tmrt_batch b = {0};
    b.tokens = prompt;
    b.n_tokens = 17; /* blocks 0 and 1 exist now */
    b.logits = TMRT_LOGITS_LAST;
    REQUIRE_OK(tmrt_session_eval(s, &b, NULL, NULL, &e));
    struct mallinfo2 before = mallinfo2();
    tmrt_sampler sp;
    tmrt_sampler_init(&sp, NULL);
    for (int i = 17; i < 32; i++) {
        b.tokens = prompt + i;
        b.n_tokens = 1;
        REQUIRE_OK(tmrt_session_eval(s, &b, NULL, NULL, &e));
        int32_t t;
        REQUIRE_OK(tmrt_session_sample(s, &sp, &t));
    }
    struct mallinfo2 after = mallinfo2();
    CHECK_MSG(after.uordblks == before.uordblks && after.hblkhd == before.hblkhd,
              "the C heap changed during decode: %zu -> %zu bytes in use", before.uordblks, after.uordblks);
    tmrt_session_destroy(s);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
}
#endif

int main(void) {
    char dir[400];
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    tiny_config cfg[2] = {tiny_config_a(), tiny_config_b()};
    for (int i = 0; i < 2; i++) {
        snprintf(model_path[i], sizeof model_path[i], "%s/tiny%d.gguf", dir, i);
        if (!tiny_model_write(&cfg[i], model_path[i])) {
            printf("cannot write %s\n", model_path[i]);
            return 1;
        }
    }
    tmem_rng rng;
    tmem_rng_init(&rng, 7);
    for (int i = 0; i < PROMPT; i++) prompt[i] = (int32_t)tmem_rng_range(&rng, 0, 60);
    RUN(test_chunks_agree);
    RUN(test_decode_matches_prefill);
    RUN(test_typed_naive_identical);
    RUN(test_greedy_and_fit);
    RUN(test_budget_refusal);
    RUN(test_chunk_shrink);
#if defined(__GLIBC__)
    RUN(test_no_malloc);
#endif
    for (int i = 0; i < 2; i++) remove(model_path[i]);
    remove(dir);
    return tmem_test_finish();
}

/* The session API around the forward pass: a prefix snapshot reused by the
 * next request gives the logits of a fresh run bit for bit; embedding rows
 * passed for a span of the prompt (the vision hook) splice in exactly where
 * the token embeddings were; explicit M-RoPE positions equal to the token
 * indices change nothing; argument errors leave the session as it was; a
 * zeroed context and chunk take the one rule of tmemrt/defaults.h. */
#include "tiny_model.h"
#include "tmemrt/runtime.h"

static char path[600];
static int32_t prompt[40];

typedef struct last {
    float row[128];
    uint32_t n;
} last;

static tmem_status keep_last(void *user, uint32_t index, const float *logits, uint32_t n_vocab) {
    (void)index;
    last *l = user;
    memcpy(l->row, logits, n_vocab * sizeof *logits);
    l->n = n_vocab;
    return TMEM_OK;
}

static void open_all(tmem_context **ctx, tmrt_model **m, tmrt_session **s) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    *ctx = NULL;
    *m = NULL;
    *s = NULL;
    if (tmem_context_create(&cd, ctx)) return;
    tmrt_error e;
    tmrt_model_desc md = {0};
    md.path = path;
    if (tmrt_model_open(*ctx, &md, m, &e)) return;
    tmrt_session_desc sd = {0};
    sd.n_ctx = 128;
    sd.chunk = 16;
    if (tmrt_session_create(*m, &sd, s, NULL, &e)) *s = NULL;
}

static void close_all(tmem_context *ctx, tmrt_model *m, tmrt_session *s) {
    tmrt_session_destroy(s);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
}

static last eval_last(tmrt_session *s, const int32_t *toks, uint32_t n, const float *rows, uint32_t first,
                      uint32_t count, const int32_t *pos) {
    last l = {{0}, 0};
    tmrt_batch b = {0};
    b.tokens = toks;
    b.n_tokens = n;
    b.embd_rows = rows;
    b.embd_first = first;
    b.embd_count = count;
    b.positions = pos;
    b.logits = TMRT_LOGITS_LAST;
    tmrt_error e;
    CHECK_MSG(tmrt_session_eval(s, &b, keep_last, &l, &e) == TMEM_OK, "eval: %.200s", e.message);
    return l;
}

static void test_snapshot_reuse(void) {
    tmem_context *ctx;
    tmrt_model *m;
    tmrt_session *s;
    open_all(&ctx, &m, &s);
    REQUIRE(s);
    /* fresh: prefix (20) then suffix A (10), the same steps as below */
    (void)eval_last(s, prompt, 20, NULL, 0, 0, NULL);
    last a0 = eval_last(s, prompt + 20, 10, NULL, 0, 0, NULL);
    tmrt_session_destroy(s);
    tmrt_session_desc sd = {0};
    sd.n_ctx = 128;
    sd.chunk = 16;
    tmrt_error e;
    REQUIRE_OK(tmrt_session_create(m, &sd, &s, NULL, &e));
    /* reuse: prefix, snapshot, suffix B, roll back, suffix A */
    (void)eval_last(s, prompt, 20, NULL, 0, 0, NULL);
    CHECK_OK(tmrt_session_snapshot(s));
    int32_t other[10];
    for (int i = 0; i < 10; i++) other[i] = (prompt[i] * 7 + 3) % 90;
    (void)eval_last(s, other, 10, NULL, 0, 0, NULL);
    CHECK_OK(tmrt_session_rollback(s, 20));
    tmrt_session_info info;
    CHECK_OK(tmrt_session_get_info(s, &info));
    CHECK(info.n_past == 20);
    last a1 = eval_last(s, prompt + 20, 10, NULL, 0, 0, NULL);
    CHECK_MSG(a0.n && !memcmp(a0.row, a1.row, a0.n * sizeof(float)), "rolled-back prefix differs");
    CHECK_ST(tmrt_session_rollback(s, 7), TMEM_E_NOT_FOUND); /* no snapshot there */
    close_all(ctx, m, s);
}

static void test_embedding_rows(void) {
    tmem_context *ctx;
    tmrt_model *m;
    tmrt_session *s;
    open_all(&ctx, &m, &s);
    REQUIRE(s);
    last ref = eval_last(s, prompt, 30, NULL, 0, 0, NULL);
    tmrt_session_destroy(s);
    /* the rows of tokens 5..14 from token_embd (f32 in this model), passed as embeddings */
    tmem_gguf_tensor t;
    REQUIRE_OK(tmem_gguf_tensor_find(tmrt_model_gguf(m), "token_embd.weight", &t));
    REQUIRE(t.type == TMEM_GGML_F32);
    uint32_t E = tmrt_model_hparams(m)->n_embd;
    static float rows[10 * 64];
    for (int i = 0; i < 10; i++) memcpy(rows + (size_t)i * E, (const float *)t.data + (size_t)prompt[5 + i] * E, E * 4);
    int32_t masked[30];
    memcpy(masked, prompt, sizeof masked);
    for (int i = 5; i < 15; i++) masked[i] = -1; /* ignored under the rows */
    int32_t pos[30 * 4];
    for (int i = 0; i < 30; i++) pos[4 * i] = pos[4 * i + 1] = pos[4 * i + 2] = pos[4 * i + 3] = i;
    tmrt_session_desc sd = {0};
    sd.n_ctx = 128;
    sd.chunk = 16;
    tmrt_error e;
    REQUIRE_OK(tmrt_session_create(m, &sd, &s, NULL, &e));
    last got = eval_last(s, masked, 30, rows, 5, 10, pos);
    CHECK_MSG(ref.n && !memcmp(ref.row, got.row, ref.n * 4), "spliced rows differ from the token embeddings");
    tmrt_session_destroy(s);
    /* different positions for the span (an image's grid) do change the result */
    for (int i = 5; i < 15; i++) pos[4 * i + 1] = 5 + (i - 5) / 3, pos[4 * i + 2] = 5 + (i - 5) % 3;
    REQUIRE_OK(tmrt_session_create(m, &sd, &s, NULL, &e));
    got = eval_last(s, masked, 30, rows, 5, 10, pos);
    CHECK(memcmp(ref.row, got.row, ref.n * 4) != 0);
    close_all(ctx, m, s);
}

static void test_errors(void) {
    tmem_context *ctx;
    tmrt_model *m;
    tmrt_session *s;
    open_all(&ctx, &m, &s);
    REQUIRE(s);
    tmrt_sampler sp;
    tmrt_sampler_init(&sp, NULL);
    int32_t tok;
    CHECK_ST(tmrt_session_sample(s, &sp, &tok), TMEM_E_STATE); /* no logits yet */
    tmrt_error e;
    tmrt_batch b = {0};
    int32_t bad[3] = {1, 97, 2}; /* 97 = n_vocab */
    b.tokens = bad;
    b.n_tokens = 3;
    CHECK_ST(tmrt_session_eval(s, &b, NULL, NULL, &e), TMEM_E_INVALID_ARG);
    CHECK(strstr(e.message, "97") != NULL);
    b.n_tokens = 0;
    CHECK_ST(tmrt_session_eval(s, &b, NULL, NULL, &e), TMEM_E_INVALID_ARG);
    tmrt_session_info info;
    CHECK_OK(tmrt_session_get_info(s, &info));
    CHECK(info.n_past == 0);
    tmrt_session_desc sd = {0};
    sd.kv_dtype = TMEM_KV_DTYPE_Q8_0;
    tmrt_session *s2;
    CHECK_ST(tmrt_session_create(m, &sd, &s2, NULL, &e), TMEM_E_UNSUPPORTED);
    close_all(ctx, m, s);
}

/* The context and chunk a zeroed desc gets, on a model trained for n_ctx_train tokens. */
static void expect_defaults(uint32_t n_ctx_train, uint32_t n_ctx, uint32_t n_ctx_min, uint32_t want_ctx) {
    char p2[640];
    snprintf(p2, sizeof p2, "%s.ctx%u", path, n_ctx_train);
    tiny_config c = tiny_config_a();
    c.n_ctx_train = n_ctx_train;
    REQUIRE(tiny_model_write(&c, p2));
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmrt_error e;
    tmrt_model_desc md = {0};
    md.path = p2;
    tmrt_model *m;
    REQUIRE_OK(tmrt_model_open(ctx, &md, &m, &e));
    tmrt_session_desc sd = {0};
    sd.n_ctx = n_ctx;
    sd.n_ctx_min = n_ctx_min;
    tmrt_session *s;
    tmrt_session_info info;
    CHECK_OK(tmrt_session_create(m, &sd, &s, &info, &e));
    CHECK_MSG(info.n_ctx == want_ctx, "trained %u, n_ctx %u, n_ctx_min %u: ctx %u, want %u", n_ctx_train, n_ctx,
              n_ctx_min, info.n_ctx, want_ctx);
    uint32_t chunk = want_ctx < TMRT_DEFAULT_CHUNK ? want_ctx : TMRT_DEFAULT_CHUNK;
    CHECK_MSG(info.chunk == chunk && info.chunk_asked == TMRT_DEFAULT_CHUNK, "chunk %u (asked %u), want %u",
              info.chunk, info.chunk_asked, chunk);
    tmrt_session_destroy(s);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
    remove(p2);
}

static void test_defaults(void) {
    expect_defaults(4096, 0, 0, TMRT_DEFAULT_CTX);
    expect_defaults(8192, 0, 0, TMRT_DEFAULT_CTX);      /* the default, below the trained context */
    expect_defaults(200, 0, 0, 200);                   /* capped by the trained context */
    expect_defaults(200, 0, 300, 300);                 /* ...unless the request needs more */
    expect_defaults(8192, 0, 5000, 5000);
    expect_defaults(8192, 0, 100, TMRT_DEFAULT_CTX);   /* n_ctx_min only grows it */
    expect_defaults(200, 64, 300, 64);                 /* an explicit context is taken as given */
}

int main(void) {
    char dir[400];
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    tiny_config c = tiny_config_a();
    if (!tiny_model_write(&c, path)) return 1;
    for (int i = 0; i < 40; i++) prompt[i] = (i * 37 + 5) % 90;
    RUN(test_snapshot_reuse);
    RUN(test_embedding_rows);
    RUN(test_errors);
    RUN(test_defaults);
    remove(path);
    remove(dir);
    return tmem_test_finish();
}

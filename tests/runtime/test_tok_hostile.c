/* Hostile tokenizer metadata: every broken file gets its status and a
 * message naming the key (and element), and a failed load leaves nothing
 * allocated. */
#include "tok_test_util.h"

static tmem_context *ctx;

static void expect(const mini *m, tmem_status want, const char *needle) {
    void *img = NULL;
    tmem_gguf *g;
    tmrt_tokenizer *tok;
    tmrt_error err = {""};
    uint64_t d0, c0, d1, c1;
    tmem_role_stats rs0, rs1;
    CHECK_OK(tmem_context_accounted(ctx, &d0, &c0));
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_OUTPUT_TOKENS, &rs0));
    tmem_status st = mini_load(ctx, m, &img, &g, &tok, &err);
    CHECK_MSG(st == want, "got %s, want %s (%.160s)", tmem_status_name(st), tmem_status_name(want), err.message);
    CHECK_MSG(strstr(err.message, needle) != NULL, "message '%.120s' lacks '%.80s'", err.message, needle);
    CHECK(tok == NULL);
    CHECK_OK(tmem_context_accounted(ctx, &d1, &c1));
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_OUTPUT_TOKENS, &rs1));
    CHECK_MSG(rs1.live_count == rs0.live_count && rs1.in_use.current == rs0.in_use.current,
              "a failed load left %llu bytes live", (unsigned long long)(rs1.in_use.current - rs0.in_use.current));
    CHECK_OK(tmem_context_check(ctx));
    printf("   %-16s %s\n", tmem_status_name(st), err.message);
    tmem_gguf_close(g);
    free(img);
}

static void test_sane_base_loads(void) {
    mini m;
    mini_init(&m);
    void *img = NULL;
    tmem_gguf *g;
    tmrt_tokenizer *tok;
    tmrt_error err = {""};
    CHECK_OK(mini_load(ctx, &m, &img, &g, &tok, &err));
    CHECK(tmrt_tokenizer_n_vocab(tok) == MINI_N);
    tmrt_tokenizer_destroy(tok);
    tmem_gguf_close(g);
    free(img);
}

static void test_no_tokenizer(void) {
    mini m;
    mini_init(&m);
    m.model = NULL;
    expect(&m, TMEM_E_NOT_FOUND, "tokenizer.ggml.model");
    m.model = "none";
    expect(&m, TMEM_E_NOT_FOUND, "no tokenizer");
    m.model = "no_vocab";
    expect(&m, TMEM_E_NOT_FOUND, "no tokenizer");
}

static void test_unsupported(void) {
    mini m;
    mini_init(&m);
    m.model = "llama";
    expect(&m, TMEM_E_UNSUPPORTED, "tokenizer.ggml.model 'llama'");
    mini_init(&m);
    m.pre = "tekken";
    expect(&m, TMEM_E_UNSUPPORTED, "tokenizer.ggml.pre 'tekken'");
    m.pre = NULL;
    expect(&m, TMEM_E_UNSUPPORTED, "tokenizer.ggml.pre");
}

static void test_missing_and_wrong_types(void) {
    mini m;
    mini_init(&m);
    m.omit_tokens = true;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.tokens: missing");
    mini_init(&m);
    m.tokens_wrong_type = true;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.tokens: an ARRAY of INT32, not of STRING");
    mini_init(&m);
    m.omit_merges = true;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.merges: missing");
    mini_init(&m);
    m.merges_scalar = true;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.merges: a STRING, not an ARRAY");
    mini_init(&m);
    m.types_wrong_type = true;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.token_type: an ARRAY of UINT8, not of INT32");
    mini_init(&m);
    m.n_types = MINI_N - 1;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.token_type: 265 types for 266 tokens");
    mini_init(&m);
    m.types[MINI_HE] = 9;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.token_type[256] = 9");
    mini_init(&m);
    m.types[MINI_HE] = -1;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.token_type[256] = -1");
    mini_init(&m);
    m.eos_as_string = true;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.eos_token_id: not a non-negative integer");
}

static void test_ids_out_of_range(void) {
    mini m;
    mini_init(&m);
    m.eos = MINI_N;
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.eos_token_id = 266: out of range");
    m.eos = 1ll << 40;
    expect(&m, TMEM_E_CORRUPT, "out of range");
}

static void test_broken_tokens(void) {
    mini m;
    mini_init(&m);
    m.tokens[MINI_LL] = "he"; /* duplicate */
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.tokens[257] 'he': duplicates token 256");
    mini_init(&m);
    m.tokens[MINI_HELLO] = "";
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.tokens[259]: empty token");
    mini_init(&m);
    m.tokens[MINI_HELLO] = "\xe4\xb8\xad"; /* raw UTF-8 in a normal token */
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.tokens[259] '\\xe4\\xb8\\xad': a normal token that is not byte-level");
    mini_init(&m);
    m.tokens['A'] = "AA"; /* byte 0x41 has no token now */
    expect(&m, TMEM_E_CORRUPT, "no normal token for byte 0x41");
    mini_init(&m);
    m.types['A'] = 3; /* the byte token is a control token */
    expect(&m, TMEM_E_CORRUPT, "no normal token for byte 0x41");
}

static void test_broken_merges(void) {
    mini m;
    mini_init(&m);
    m.merges[2] = "hell";
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.merges[2] 'hell': not 'LEFT RIGHT'");
    m.merges[2] = "he ";
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.merges[2] 'he ': not 'LEFT RIGHT'");
    m.merges[2] = "he zz";
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.merges[2] 'he zz': 'zz' is not a token");
    m.merges[2] = "qq ll";
    expect(&m, TMEM_E_CORRUPT, "'qq' is not a token");
    m.merges[2] = "l o"; /* "lo" is not in the vocabulary */
    expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.merges[2] 'l o': the merged text is not a token");
    /* A merge into a token that does not decode as byte-level text would break
     * decode(encode(x)) == x (fuzz_tok_meta found it with an unused token:
     * fuzz/tok_meta/corpus/regress-merge-into-unused-token). */
    static const int32_t not_normal[] = {TMRT_TOKEN_UNUSED, TMRT_TOKEN_CONTROL,
                                         TMRT_TOKEN_USER_DEFINED};
    for (size_t i = 0; i < sizeof not_normal / sizeof not_normal[0]; i++) {
        mini_init(&m);
        m.types[MINI_HELL] = not_normal[i];
        expect(&m, TMEM_E_CORRUPT, "tokenizer.ggml.merges[2] 'he ll': merges into token 258");
    }
}

static void test_huge_vocab(void) {
    /* 2^21 - 1 tokens: past what a 21-bit id indexes */
    mini m;
    mini_init(&m);
    uint32_t n = (1u << 21) - 1;
    const char **toks = malloc(n * sizeof *toks);
    char *blob = malloc((size_t)n * 8);
    REQUIRE(toks && blob);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(blob + (size_t)i * 8, 8, "%07x", i);
        toks[i] = blob + (size_t)i * 8;
    }
    tmem_gguf_writer *w;
    REQUIRE_OK(tmem_gguf_writer_create(NULL, 0, &w));
    tmem_gguf_value v = {.type = TMEM_GGUF_STRING};
    v.v.s.data = "gpt2";
    v.v.s.len = 4;
    CHECK_OK(tmem_gguf_writer_set(w, "tokenizer.ggml.model", &v));
    v.v.s.data = "qwen2";
    v.v.s.len = 5;
    CHECK_OK(tmem_gguf_writer_set(w, "tokenizer.ggml.pre", &v));
    CHECK_OK(tmem_gguf_writer_set_array(w, "tokenizer.ggml.tokens", TMEM_GGUF_STRING, toks, n));
    CHECK_OK(tmem_gguf_writer_set_array(w, "tokenizer.ggml.merges", TMEM_GGUF_STRING, toks, 1));
    size_t need = 0, len;
    CHECK_ST(tmem_gguf_writer_write(w, NULL, 0, &need), TMEM_E_FULL);
    void *img = malloc(need);
    REQUIRE(img);
    CHECK_OK(tmem_gguf_writer_write(w, img, need, &len));
    tmem_gguf_writer_destroy(w);
    tmem_gguf *g;
    tmem_gguf_error ge;
    REQUIRE_OK(tmem_gguf_open_memory(ctx, img, len, &g, &ge));
    tmrt_tokenizer *tok;
    tmrt_error err = {""};
    CHECK_ST(tmrt_tokenizer_load(ctx, g, &tok, &err), TMEM_E_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "tokenizer.ggml.tokens: 2097151 tokens") != NULL, "%s", err.message);
    CHECK(tok == NULL);
    tmem_gguf_close(g);
    free(img);
    free(toks);
    free(blob);
}

static void test_bad_args(void) {
    tmrt_tokenizer *tok = (tmrt_tokenizer *)1;
    tmrt_error err = {""};
    CHECK_ST(tmrt_tokenizer_load(NULL, NULL, &tok, &err), TMEM_E_INVALID_ARG);
    CHECK(tok == NULL);
    CHECK_ST(tmrt_tokenizer_load(ctx, NULL, NULL, NULL), TMEM_E_INVALID_ARG);
    tmrt_tokenizer_destroy(NULL);
    /* a FILE type cannot hold tables */
    mini m;
    mini_init(&m);
    void *img = NULL;
    size_t len;
    REQUIRE(mini_image(&m, &img, &len));
    tmem_gguf *g;
    tmem_gguf_error ge;
    REQUIRE_OK(tmem_gguf_open_memory(ctx, img, len, &g, &ge));
    tmem_type *weights;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_WEIGHTS, &weights));
    tmrt_tokenizer_desc d = {.type = weights};
    CHECK_ST(tmrt_tokenizer_load_ex(ctx, g, &d, &tok, &err), TMEM_E_INVALID_ARG);
    CHECK(strstr(err.message, "not host memory") != NULL);
    d.type = NULL;
    d.flags = 0x80;
    CHECK_ST(tmrt_tokenizer_load_ex(ctx, g, &d, &tok, &err), TMEM_E_INVALID_ARG);
    tmem_gguf_close(g);
    free(img);
}

int main(void) {
    tmem_context_desc cd = {0};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    RUN(test_sane_base_loads);
    RUN(test_no_tokenizer);
    RUN(test_unsupported);
    RUN(test_missing_and_wrong_types);
    RUN(test_ids_out_of_range);
    RUN(test_broken_tokens);
    RUN(test_broken_merges);
    RUN(test_huge_vocab);
    RUN(test_bad_args);
    tmem_context_destroy(ctx);
    return tmem_test_finish();
}

/* Hostile or mismatched model files get an error naming the tensor or key,
 * never a crash: a missing tensor, a tensor one column too wide, a NaN in a
 * norm, another architecture, a missing key, a file that is not GGUF. Every
 * failure leaves the context's accounting where it was. */
#include "tiny_model.h"
#include "tmemrt/runtime.h"

static char dir[512];

static void expect_error(const tiny_config *c, tmem_status want, const char *needle) {
    char path[700];
    snprintf(path, sizeof path, "%s/bad.gguf", dir);
    REQUIRE(tiny_model_write(c, path));
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_budget_info before, after;
    CHECK_OK(tmem_context_budget(ctx, &before));
    for (int mode = 0; mode < 2; mode++) {
        tmrt_model *m = (tmrt_model *)&m;
        tmrt_error e = {{0}};
        tmrt_model_desc md = {0};
        md.path = path;
        md.memory = mode ? TMRT_MEMORY_NAIVE : TMRT_MEMORY_TYPED;
        CHECK_ST(tmrt_model_open(mode ? NULL : ctx, &md, &m, &e), want);
        CHECK(m == NULL);
        CHECK_MSG(strstr(e.message, needle) != NULL, "message %.150s does not name %.60s", e.message, needle);
    }
    CHECK_OK(tmem_context_budget(ctx, &after));
    CHECK(after.committed == before.committed);
    tmem_context_destroy(ctx);
    remove(path);
}

static void test_missing_tensor(void) {
    tiny_config c = tiny_config_a();
    c.skip_tensor = "blk.1.ssm_alpha.weight";
    expect_error(&c, TMEM_E_NOT_FOUND, "blk.1.ssm_alpha.weight");
    c.skip_tensor = "blk.3.attn_k_norm.weight";
    expect_error(&c, TMEM_E_NOT_FOUND, "blk.3.attn_k_norm.weight");
    c.skip_tensor = "output_norm.weight";
    expect_error(&c, TMEM_E_NOT_FOUND, "output_norm.weight");
}

static void test_wrong_shape(void) {
    tiny_config c = tiny_config_a();
    c.bad_shape = "blk.3.attn_q.weight";
    expect_error(&c, TMEM_E_CORRUPT, "blk.3.attn_q.weight");
    c.bad_shape = "blk.0.ssm_conv1d.weight";
    expect_error(&c, TMEM_E_CORRUPT, "blk.0.ssm_conv1d.weight");
    c.bad_shape = "blk.2.ffn_down.weight";
    expect_error(&c, TMEM_E_CORRUPT, "blk.2.ffn_down.weight");
}

static void test_nan(void) {
    tiny_config c = tiny_config_b();
    c.nan_tensor = "blk.1.attn_norm.weight";
    expect_error(&c, TMEM_E_CORRUPT, "blk.1.attn_norm.weight");
    c.nan_tensor = "blk.0.ssm_a";
    expect_error(&c, TMEM_E_CORRUPT, "blk.0.ssm_a");
}

static void test_inconsistent_config(void) {
    tiny_config c = tiny_config_a();
    c.v_heads = 3; /* not a multiple of the 2 key heads */
    expect_error(&c, TMEM_E_CORRUPT, "group_count");
    c = tiny_config_a();
    c.n_rot = 20; /* more than the head dim of 16 */
    expect_error(&c, TMEM_E_CORRUPT, "rope.dimension_count");
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void test_not_a_model(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/junk.gguf", dir);
    write_bytes(path, "not a gguf file at all, just text", 33);
    tmrt_model *m;
    tmrt_error e = {{0}};
    tmrt_model_desc md = {0};
    md.path = path;
    md.memory = TMRT_MEMORY_NAIVE;
    CHECK(tmrt_model_open(NULL, &md, &m, &e) != TMEM_OK && m == NULL && e.message[0]);
    remove(path);
    md.path = "/nonexistent/model.gguf";
    CHECK_ST(tmrt_model_open(NULL, &md, &m, &e), TMEM_E_NOT_FOUND);
    /* another architecture: a GGUF with general.architecture = llama */
    tmem_gguf_writer *w;
    REQUIRE_OK(tmem_gguf_writer_create(NULL, 0, &w));
    tmem_gguf_value v = {0};
    v.type = TMEM_GGUF_STRING;
    v.v.s.data = "llama";
    v.v.s.len = 5;
    CHECK_OK(tmem_gguf_writer_set(w, "general.architecture", &v));
    static uint8_t buf[4096];
    size_t n = 0;
    CHECK_OK(tmem_gguf_writer_write(w, buf, sizeof buf, &n));
    tmem_gguf_writer_destroy(w);
    snprintf(path, sizeof path, "%s/llama.gguf", dir);
    write_bytes(path, buf, n);
    md.path = path;
    CHECK_ST(tmrt_model_open(NULL, &md, &m, &e), TMEM_E_UNSUPPORTED);
    CHECK_MSG(strstr(e.message, "llama") != NULL, "%.200s", e.message);
    remove(path);
    /* bad arguments */
    CHECK_ST(tmrt_model_open(NULL, NULL, &m, &e), TMEM_E_INVALID_ARG);
    md.memory = TMRT_MEMORY_TYPED; /* typed needs a context */
    CHECK_ST(tmrt_model_open(NULL, &md, &m, &e), TMEM_E_INVALID_ARG);
}

int main(void) {
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    RUN(test_missing_tensor);
    RUN(test_wrong_shape);
    RUN(test_nan);
    RUN(test_inconsistent_config);
    RUN(test_not_a_model);
    remove(dir);
    return tmem_test_finish();
}

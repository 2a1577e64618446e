/* The runtime's Vulkan ops for the vision encoder (runtime/src/gpu/:
 * LayerNorm, GELU tanh and erf, bias rows, non-causal attention over plain
 * rows) against the CPU encoder's own functions (vision/ops.c,
 * vision/attention.c) on the encoder's layouts (qkv [t][3 hidden]), odd
 * token counts and key splits. Tolerances relative to max |ref|: LayerNorm
 * 1e-5, GELU 1e-6, bias exact, attention 1e-5. Skips (77) without a
 * Vulkan device. */
#include "vk_test_util.h"
#include "kern/kern.h"
#include "vision/vision_internal.h"
#include "typedmem/model.h"

static vkt g;
static tmem_rng g_rng;

static bool rand_buf(size_t n, float s, vkt_buf *b) {
    if (!vkt_buf_new(&g, n * 4 + 16, b)) return false;
    vkt_fill(&g_rng, b->host, n);
    for (size_t i = 0; i < n; i++) ((float *)b->host)[i] *= s;
    return true;
}

static void test_layernorm_gelu_bias(void) {
    uint32_t n = 768, rows = 7, ld = 770;
    vkt_buf x, w, b, y;
    REQUIRE(rand_buf((size_t)rows * ld, 3.0f, &x) && rand_buf(n, 1.0f, &w) && rand_buf(n, 1.0f, &b) &&
            vkt_buf_new(&g, (size_t)rows * n * 4, &y));
    for (size_t i = 0; i < (size_t)rows * ld; i++) ((float *)x.host)[i] += 2.0f; /* a mean to take out */
    float *ref = malloc((size_t)rows * n * 4), *x0 = malloc((size_t)rows * ld * 4);
    memcpy(x0, x.host, (size_t)rows * ld * 4);
    tmrt_vk_wmat wm = {w.b, TMEM_GGML_F32, n, 1, n * 4}, bm = {b.b, TMEM_GGML_F32, n, 1, n * 4};
    tmrt_vk_layernorm ln = {x.b, y.b, wm, bm, n, rows, ld, 0, 1e-6f};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_layernorm(g.rec, &ln));
    CHECK(vkt_run(&g));
    for (uint32_t r = 0; r < rows; r++)
        tmrt__vis_layernorm(ref + (size_t)r * n, x0 + (size_t)r * ld, w.host, b.host, n, 1e-6f);
    double e = vkt_rel_err(y.host, ref, (size_t)rows * n);
    printf("layernorm: err %.2e\n", e);
    CHECK_MSG(e <= 1e-5, "layernorm %.2e", e);
    /* GELU, both forms, in place */
    for (int erf = 0; erf < 2; erf++) {
        memcpy(ref, y.host, (size_t)rows * n * 4);
        REQUIRE_OK(tmrt__vk_begin(g.rec));
        CHECK_OK(tmrt__vk_gelu(g.rec, y.b, rows * n, erf));
        CHECK(vkt_run(&g));
        if (erf) tmrt__vis_gelu_erf(ref, (int64_t)rows * n);
        else tmrt__vis_gelu_tanh(ref, (int64_t)rows * n);
        e = vkt_rel_err(y.host, ref, (size_t)rows * n);
        printf("gelu %s: err %.2e\n", erf ? "erf" : "tanh", e);
        CHECK_MSG(e <= 1e-6, "gelu %d: %.2e", erf, e);
    }
    /* bias rows */
    memcpy(x0, x.host, (size_t)rows * ld * 4);
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_bias_add(g.rec, x.b, &bm, n, rows, ld));
    CHECK(vkt_run(&g));
    tmrt__vis_add_bias(x0, ld, rows, b.host, n);
    CHECK(memcmp(x0, x.host, (size_t)rows * ld * 4) == 0);
    free(ref), free(x0);
    vkt_buf_free(&g, &x), vkt_buf_free(&g, &w), vkt_buf_free(&g, &b), vkt_buf_free(&g, &y);
}

/* Non-causal attention on the encoder's qkv rows against tmrt__vis_attention:
 * 0.8B's encoder heads (12 of 64 in 768), 1, 65 and 130 tokens, splits. */
static void dense_case(uint32_t n_tok, uint32_t splits) {
    uint32_t H = 768, heads = 12, hd = 64;
    vkt_buf qkv, out, scr;
    uint64_t sb = tmrt__vk_attention_scratch_bytes(n_tok, heads, hd, splits);
    REQUIRE(rand_buf((size_t)n_tok * 3 * H, 1.0f, &qkv) && vkt_buf_new(&g, (size_t)n_tok * H * 4, &out) &&
            vkt_buf_new(&g, sb ? sb : 16, &scr));
    tmrt_vk_buf k = vkt_sub(&qkv, H * 4, qkv.bytes - H * 4), v = vkt_sub(&qkv, 2 * H * 4, qkv.bytes - 2 * H * 4);
    tmrt_vk_attention_dense a = {qkv.b, k, v, out.b, {0}, scr.b, n_tok, n_tok, heads, heads, hd, splits,
                                 3 * H, hd, 3 * H, hd, 3 * H, hd, 0, 0, 0, 0, 0};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_attention_dense(g.rec, &a));
    CHECK(vkt_run(&g));
    tmrt_vision vis;
    memset(&vis, 0, sizeof vis);
    vis.cfg.hidden = H, vis.cfg.heads = heads;
    float *ref = malloc((size_t)n_tok * H * 4), *sc = malloc(tmrt__vis_attention_scratch_floats(hd) * 4);
    tmrt__vis_attention(&vis, n_tok, qkv.host, ref, sc, NULL);
    double e = vkt_rel_err(out.host, ref, (size_t)n_tok * H);
    printf("attention_dense %u tokens, %u splits: err %.2e\n", n_tok, splits, e);
    CHECK_MSG(e <= 1e-5, "attention_dense %u tokens %u splits: %.2e", n_tok, splits, e);
    free(ref), free(sc);
    vkt_buf_free(&g, &qkv), vkt_buf_free(&g, &out), vkt_buf_free(&g, &scr);
}

static void test_attention_dense(void) {
    dense_case(1, 1);
    dense_case(65, 1);
    dense_case(130, 3);
}

int main(void) {
    tmem_rng_init(&g_rng, tmem_test_seed(23));
    const char *mode = getenv("TMRT_VK_TEST_FLAGS");
    tmrt_vk_desc d = {0};
    if (mode) d.flags = (uint32_t)strtoul(mode, NULL, 0);
    if (!vkt_open(&g, &d)) tmem_test_skip("no Vulkan device");
    RUN(test_layernorm_gelu_bias);
    RUN(test_attention_dense);
    vkt_close(&g);
    return tmem_test_finish();
}

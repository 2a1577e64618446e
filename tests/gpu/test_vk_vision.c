/* The runtime's Vulkan ops for the vision encoder (runtime/src/gpu/:
 * LayerNorm, GELU tanh and erf, bias rows, non-causal attention over plain
 * rows, the patch embedding read in place from a CHW image, the position
 * embedding's interpolation, the 2D rotary positions) against the CPU
 * encoder's own functions (vision/ops.c, vision/attention.c, the naive
 * chain's CHW -> patches gather of vision/preprocess.c) on the encoder's
 * layouts (qkv [t][3 hidden], merge-order tokens), odd token counts, key
 * splits, non-square grids. Tolerances relative to max |ref|: LayerNorm
 * 1e-5, GELU 1e-6, bias exact, attention 1e-5, patch embedding 2e-5 (vs
 * the dequantised weights in double), position embedding bit for bit,
 * RoPE 2e-6. Skips (77) without a Vulkan device. */
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

/* The patch embedding: a CHW image of a gw x gh grid of p x p patches,
 * weights of `type` (hidden rows of 3 p^2), against the gathered patch rows
 * times the dequantised weights in double. */
static void patch_case(uint32_t type, uint32_t p, uint32_t merge, uint32_t gw, uint32_t gh, uint32_t hidden) {
    uint32_t W = gw * p, Hh = gh * p, n_in = 3 * p * p, P = gw * gh;
    size_t rb = tmrt__kern_row_bytes(type, n_in);
    vkt_buf img, w, y;
    REQUIRE(rand_buf((size_t)3 * W * Hh, 1.0f, &img) && vkt_buf_new(&g, rb * hidden + 64, &w) &&
            vkt_buf_new(&g, (size_t)P * hidden * 4, &y));
    float *row = malloc((size_t)n_in * 4), *deq = malloc((size_t)n_in * hidden * 4);
    for (uint32_t o = 0; o < hidden; o++) {
        vkt_fill(&g_rng, row, n_in);
        REQUIRE(tmrt__kern_quantize_row(type, row, (uint8_t *)w.host + (size_t)o * rb, n_in));
        REQUIRE(tmrt__kern_dequantize_row(type, (uint8_t *)w.host + (size_t)o * rb, deq + (size_t)o * n_in, n_in));
    }
    tmrt_vk_patches pt = {W, Hh, p, merge};
    tmrt_vk_matmul m = {{w.b, type, n_in, hidden, rb}, img.b, y.b, {0}, 0, 0, P, 0, &pt};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_matmul(g.rec, &m));
    CHECK(vkt_run(&g));
    float *ref = malloc((size_t)P * hidden * 4);
    const float *chw = img.host;
    for (uint32_t t = 0; t < P; t++) {
        uint32_t r, c;
        tmrt__vis_token_pos(t, gw, merge, &r, &c);
        for (uint32_t k = 0; k < 3; k++) /* vision/preprocess.c's CHW -> patches */
            for (uint32_t py = 0; py < p; py++)
                for (uint32_t px = 0; px < p; px++)
                    row[(k * p + py) * p + px] = chw[(size_t)k * W * Hh + ((size_t)r * p + py) * W + c * p + px];
        for (uint32_t o = 0; o < hidden; o++) {
            double acc = 0;
            for (uint32_t i = 0; i < n_in; i++) acc += (double)deq[(size_t)o * n_in + i] * row[i];
            ref[(size_t)t * hidden + o] = (float)acc;
        }
    }
    double e = vkt_rel_err(y.host, ref, (size_t)P * hidden);
    printf("patch embedding type %u, p %u, merge %u, grid %ux%u, hidden %u: err %.2e\n", type, p, merge, gw, gh,
           hidden, e);
    CHECK_MSG(e <= 2e-5, "patch embedding type %u grid %ux%u: %.2e", type, gw, gh, e);
    /* misuse: an image that is not a whole number of merge blocks */
    tmrt_vk_patches bad = {W + p, Hh, p, merge};
    m.chw = &bad;
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK(tmrt__vk_matmul(g.rec, &m) == TMEM_E_INVALID_ARG);
    free(row), free(deq), free(ref);
    vkt_buf_free(&g, &img), vkt_buf_free(&g, &w), vkt_buf_free(&g, &y);
}

static void test_patch_embed(void) {
    patch_case(TMEM_GGML_F32, 16, 2, 4, 6, 64);
    patch_case(TMEM_GGML_F16, 16, 2, 8, 2, 96);
    patch_case(TMEM_GGML_BF16, 4, 2, 6, 4, 40);
    patch_case(TMEM_GGML_Q8_0, 8, 2, 10, 4, 70); /* 3 x 8 x 8 = 192: six Q8_0 blocks */
    patch_case(TMEM_GGML_F16, 14, 1, 3, 5, 33);  /* no merge, a patch not a multiple of 8 */
}

/* The position embedding against tmrt__vis_add_pos_embed: a side x side
 * table (F32 and F16) onto grids smaller, larger and not square. */
static void pos_case(uint32_t type, uint32_t side, uint32_t H, uint32_t gw, uint32_t gh) {
    uint32_t n = gw * gh, npos = side * side;
    size_t rb = tmrt__kern_row_bytes(type, H);
    vkt_buf tab, x;
    REQUIRE(vkt_buf_new(&g, rb * npos + 64, &tab) && rand_buf((size_t)n * H, 1.0f, &x));
    float *row = malloc((size_t)H * 4), *ref = malloc((size_t)n * H * 4), *rows = malloc((size_t)4 * H * 4);
    for (uint32_t r = 0; r < npos; r++) {
        vkt_fill(&g_rng, row, H);
        REQUIRE(tmrt__kern_quantize_row(type, row, (uint8_t *)tab.host + (size_t)r * rb, H));
    }
    memcpy(ref, x.host, (size_t)n * H * 4);
    tmrt_vk_pos_embed pe = {x.b, {tab.b, type, H, npos, rb}, H, gw, gh, 2};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_pos_embed(g.rec, &pe));
    CHECK(vkt_run(&g));
    tmrt_vision vis;
    memset(&vis, 0, sizeof vis);
    vis.cfg.hidden = H, vis.cfg.merge = 2, vis.cfg.n_pos = npos;
    vis.pos = (kern_wmat){tab.host, type, H, npos, rb};
    tmrt_vision_grid gr = {gw * 16, gh * 16, gw, gh, n, n / 4};
    tmrt__vis_add_pos_embed(&vis, &gr, ref, 0, n, rows);
    size_t diff = 0;
    for (size_t i = 0; i < (size_t)n * H; i++) diff += memcmp(&ref[i], &((float *)x.host)[i], 4) != 0;
    printf("pos_embed type %u, side %u, grid %ux%u: %zu of %u values differ, err %.2e\n", type, side, gw, gh, diff,
           n * H, vkt_rel_err(x.host, ref, (size_t)n * H));
    CHECK_MSG(diff == 0, "pos_embed grid %ux%u: %zu values differ", gw, gh, diff);
    free(row), free(ref), free(rows);
    vkt_buf_free(&g, &tab), vkt_buf_free(&g, &x);
}

static void test_pos_embed(void) {
    pos_case(TMEM_GGML_F32, 6, 64, 4, 4);
    pos_case(TMEM_GGML_F16, 6, 48, 10, 4);
    pos_case(TMEM_GGML_F32, 8, 32, 2, 14);
    pos_case(TMEM_GGML_F16, 48, 16, 32, 32);
}

/* The 2D rotary positions against tmrt__vis_rope on qkv rows. */
static void rope_case(uint32_t H, uint32_t heads, uint32_t gw, uint32_t gh) {
    uint32_t n = gw * gh;
    vkt_buf qkv;
    REQUIRE(rand_buf((size_t)n * 3 * H, 1.0f, &qkv));
    float *ref = malloc((size_t)n * 3 * H * 4);
    memcpy(ref, qkv.host, (size_t)n * 3 * H * 4);
    tmrt_vk_vis_rope r = {qkv.b, n, H, heads, 3 * H, gw, 2};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_vis_rope(g.rec, &r));
    CHECK(vkt_run(&g));
    tmrt_vision vis;
    memset(&vis, 0, sizeof vis);
    vis.cfg.hidden = H, vis.cfg.heads = heads, vis.cfg.merge = 2;
    tmrt_vision_grid gr = {gw * 16, gh * 16, gw, gh, n, n / 4};
    tmrt__vis_rope(&vis, &gr, ref, NULL);
    double e = vkt_rel_err(qkv.host, ref, (size_t)n * 3 * H);
    printf("vis_rope H %u, %u heads, grid %ux%u: err %.2e\n", H, heads, gw, gh, e);
    CHECK_MSG(e <= 2e-6, "vis_rope grid %ux%u: %.2e", gw, gh, e);
    /* misuse: head_dim past the push constants' 24 frequencies */
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    tmrt_vk_vis_rope bad = {qkv.b, 1, 128, 1, 384, 2, 2};
    CHECK(tmrt__vk_vis_rope(g.rec, &bad) == TMEM_E_INVALID_ARG);
    free(ref);
    vkt_buf_free(&g, &qkv);
}

static void test_vis_rope(void) {
    rope_case(768, 12, 4, 6);
    rope_case(64, 4, 64, 2);   /* columns up to 63 */
    rope_case(192, 2, 2, 40);  /* head_dim 96: 24 frequencies */
}

int main(void) {
    tmem_rng_init(&g_rng, tmem_test_seed(23));
    const char *mode = getenv("TMRT_VK_TEST_FLAGS");
    tmrt_vk_desc d = {0};
    if (mode) d.flags = (uint32_t)strtoul(mode, NULL, 0);
    if (!vkt_open(&g, &d)) tmem_test_skip("no Vulkan device");
    RUN(test_layernorm_gelu_bias);
    RUN(test_attention_dense);
    RUN(test_patch_embed);
    RUN(test_pos_embed);
    RUN(test_vis_rope);
    vkt_close(&g);
    return tmem_test_finish();
}

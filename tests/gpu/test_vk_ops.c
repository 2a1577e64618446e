/* The runtime's Vulkan ops (runtime/src/gpu/) on a real device (lavapipe in
 * CI) against the CPU runtime's kernels and oracles: every op on odd shapes
 * and tails, the tolerance stated per op and type relative to max |ref|.
 * Run again under the Khronos validation layer (gpu/test_vk_ops_validation),
 * and with the fallbacks forced (no subgroup ops, no 16-bit storage).
 * Skips (77) without a Vulkan device. */
#include "vk_test_util.h"
#include "gpu/vk_internal.h"
#include "kern/kern.h"
#include "typedmem/model.h"

static vkt g;
static tmem_rng g_rng;
static double g_max_err[31], g_max_cpu[31]; /* by ggml type: the largest errors seen */

static const uint32_t k_types[] = {TMEM_GGML_F32, TMEM_GGML_F16, TMEM_GGML_BF16,
                                   TMEM_GGML_Q8_0, TMEM_GGML_Q4_K, TMEM_GGML_Q6_K};
static const char *type_name(uint32_t t) {
    switch (t) {
    case TMEM_GGML_F32: return "f32";
    case TMEM_GGML_F16: return "f16";
    case TMEM_GGML_BF16: return "bf16";
    case TMEM_GGML_Q8_0: return "q8_0";
    case TMEM_GGML_Q4_K: return "q4_K";
    default: return "q6_K";
    }
}

/* A random weight matrix of `type` with rows `row_bytes` apart (>= packed;
 * the padding is junk the ops must not read), `lead` bytes into its buffer
 * (the binding then starts below the weights), and its f32 dequantisation. */
typedef struct wtest {
    vkt_buf buf;
    tmrt_vk_wmat w;
    float *deq;                   /* n_out x n_in */
    uint8_t *bytes;               /* the packed rows (for the CPU kernels) */
} wtest;

static bool wtest_make(wtest *wt, uint32_t type, uint32_t n_in, uint32_t n_out, uint32_t pad, uint32_t lead) {
    memset(wt, 0, sizeof *wt);
    size_t packed = tmrt__kern_row_bytes(type, n_in), rb = packed + pad;
    float *row = malloc(n_in * sizeof *row);
    wt->deq = malloc((size_t)n_out * n_in * sizeof *wt->deq);
    wt->bytes = malloc((size_t)n_out * packed);
    if (!row || !wt->deq || !wt->bytes || !vkt_buf_new(&g, lead + (uint64_t)n_out * rb + 64, &wt->buf)) {
        free(row);
        return false;
    }
    uint8_t *dst = (uint8_t *)wt->buf.host + lead;
    for (uint32_t o = 0; o < n_out; o++) {
        vkt_fill(&g_rng, row, n_in);
        if (!tmrt__kern_quantize_row(type, row, wt->bytes + o * packed, n_in)) return false;
        memcpy(dst + o * rb, wt->bytes + o * packed, packed);
        memset(dst + o * rb + packed, 0xFF, pad); /* NaN if read as f16/f32 */
        tmrt__kern_dequantize_row(type, wt->bytes + o * packed, wt->deq + (size_t)o * n_in, n_in);
    }
    free(row);
    wt->w = (tmrt_vk_wmat){vkt_sub(&wt->buf, lead, ((uint64_t)n_out * rb + 3) & ~3ull), type, n_in, n_out, rb};
    return true;
}

static void wtest_free(wtest *wt) {
    vkt_buf_free(&g, &wt->buf);
    free(wt->deq);
    free(wt->bytes);
}

/* ---- matmul ----
 * Oracle: the dequantised weights times x in double. Tolerance 2e-5 of
 * max |ref| for every type (f32 accumulation in a different order; the
 * dequantised weights are exact in f32). Against the CPU kernel
 * (tmrt__kern_matmul_ref, which quantises x to Q8_0/Q8_K for the quantised
 * types): 2e-5 for f32/f16/bf16, 2e-2 for the quantised types (the
 * activation rounding, |dx| <= |x|/254 per element). */
typedef struct mm_case {
    uint32_t type, n_in, n_out, n_tok, pad, lead, ldx_extra, ldy_extra;
    bool gather;
    uint32_t mv_max;              /* tmrt_vk_matmul::mv_max_tok (0 = default 8) */
} mm_case;

static void mm_check(const mm_case *c) {
    wtest wt;
    REQUIRE(wtest_make(&wt, c->type, c->n_in, c->n_out, c->pad, c->lead));
    uint32_t ldx = c->n_in + c->ldx_extra, ldy = c->n_out + c->ldy_extra, nx = c->gather ? c->n_tok + 2 : c->n_tok;
    vkt_buf xb, yb, rb;
    REQUIRE(vkt_buf_new(&g, (uint64_t)nx * ldx * 4, &xb));
    REQUIRE(vkt_buf_new(&g, (uint64_t)c->n_tok * ldy * 4, &yb));
    REQUIRE(vkt_buf_new(&g, (uint64_t)c->n_tok * 4 + 4, &rb));
    float *x = xb.host, *y = yb.host;
    uint32_t *rows = rb.host;
    vkt_fill(&g_rng, x, (size_t)nx * ldx);
    for (uint32_t t = 0; t < c->n_tok; t++) rows[t] = c->gather ? (t * 7 + 1) % nx : t;
    for (size_t i = 0; i < (size_t)c->n_tok * ldy; i++) y[i] = -999.0f;
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    tmrt_vk_buf xbind = vkt_sub(&xb, 0, (uint64_t)nx * ldx * 4), ybind = vkt_sub(&yb, 0, (uint64_t)c->n_tok * ldy * 4);
    tmrt_vk_matmul m = {wt.w, xbind, ybind, c->gather ? rb.b : (tmrt_vk_buf){0}, ldx, ldy, c->n_tok, c->mv_max, NULL};
    CHECK_OK(tmrt__vk_matmul(g.rec, &m));
    CHECK(vkt_run(&g));
    float *ref = calloc((size_t)c->n_tok * c->n_out, sizeof *ref), *got = calloc((size_t)c->n_tok * c->n_out, 4);
    float *cpu = calloc((size_t)c->n_tok * c->n_out, sizeof *cpu), *xg = calloc((size_t)c->n_tok * c->n_in, 4);
    REQUIRE(ref && got && cpu && xg);
    for (uint32_t t = 0; t < c->n_tok; t++) {
        memcpy(xg + (size_t)t * c->n_in, x + (size_t)rows[t] * ldx, c->n_in * 4);
        for (uint32_t o = 0; o < c->n_out; o++) {
            double s = 0;
            const float *wr = wt.deq + (size_t)o * c->n_in, *xr = xg + (size_t)t * c->n_in;
            for (uint32_t i = 0; i < c->n_in; i++) s += (double)wr[i] * xr[i];
            ref[(size_t)t * c->n_out + o] = (float)s;
            got[(size_t)t * c->n_out + o] = y[(size_t)t * ldy + o];
        }
        for (uint32_t o = c->n_out; o < ldy; o++) CHECK(y[(size_t)t * ldy + o] == -999.0f); /* untouched */
    }
    kern_wmat kw = {wt.bytes, c->type, c->n_in, c->n_out, tmrt__kern_row_bytes(c->type, c->n_in)};
    tmrt__kern_matmul_ref(&kw, xg, c->n_in, c->n_tok, cpu, c->n_out);
    size_t n = (size_t)c->n_tok * c->n_out;
    double e = vkt_rel_err(got, ref, n), ec = vkt_rel_err(got, cpu, n);
    bool quant = c->type == TMEM_GGML_Q8_0 || c->type == TMEM_GGML_Q4_K || c->type == TMEM_GGML_Q6_K;
    g_max_err[c->type] = fmax(g_max_err[c->type], e), g_max_cpu[c->type] = fmax(g_max_cpu[c->type], ec);
    CHECK_MSG(e <= 2e-5 && ec <= (quant ? 2e-2 : 2e-5), "matmul %s %ux%u tok %u pad %u lead %u gather %d mv %u: err "
              "%.2e vs dequantised, %.2e vs the CPU kernel", type_name(c->type), c->n_out, c->n_in, c->n_tok, c->pad,
              c->lead, c->gather, c->mv_max, e, ec);
    free(ref), free(got), free(cpu), free(xg);
    vkt_buf_free(&g, &xb), vkt_buf_free(&g, &yb), vkt_buf_free(&g, &rb);
    wtest_free(&wt);
}

static void test_matmul_types(void) {
    for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
        uint32_t t = k_types[ti], b = tmrt__vk_type_block(t) > 1 ? tmrt__vk_type_block(t) : 1;
        uint32_t n_in[3] = {b == 1 ? 7 : b, b == 1 ? 1000 : 3 * b, b == 1 ? 1024 : (b == 32 ? 1056 : 1024)};
        for (int i = 0; i < 3; i++) {
            mm_case c = {t, n_in[i], i == 0 ? 3 : (i == 1 ? 17 : 65), i == 2 ? 9 : 1 + 2 * i, 0, 0, 0, 0, false, 0};
            mm_check(&c);
        }
    }
}

/* Tokens 1, 3, 8, 9, 17 (token groups of 8), gathered rows, strides. */
static void test_matmul_tokens(void) {
    static const uint32_t toks[] = {1, 3, 8, 9, 17};
    for (size_t i = 0; i < 5; i++) {
        mm_case c = {TMEM_GGML_Q4_K, 512, 33, toks[i], 0, 0, 3, 5, i % 2 == 1, 0};
        mm_check(&c);
        c.type = TMEM_GGML_F16, c.n_in = 200;
        mm_check(&c);
    }
}

/* The tiled mat-mat (more than 8 tokens) on 1/3/17/64/65/130 tokens, rows
 * and tokens not multiples of the 64 x 64 tile, n_in with a tail (float
 * types), and the mat-vec forced on the same shapes: both within the
 * tolerance of the same oracle. */
static void test_matmul_prefill(void) {
    static const uint32_t toks[] = {1, 3, 17, 64, 65, 130};
    for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
        uint32_t t = k_types[ti], b = tmrt__vk_type_block(t);
        for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) {
            mm_case c = {t, b == 1 ? 100 + 37 * (uint32_t)i : b * (1 + (uint32_t)i % 3), 65 + 32 * (uint32_t)(i % 2),
                         toks[i], 0, 0, i % 2, 0, false, 1};
            mm_check(&c); /* mat-mat from 2 tokens */
            c.mv_max = 1000;
            if (i % 2) mm_check(&c); /* mat-vec on every token */
        }
    }
}

/* The mat-mat's other tiles (specialisation constants: 128 x 64, 64 x 128,
 * 128 x 128) on shapes with partial tiles, for a float and two quantised
 * types; then the defaults again. */
static void test_matmul_tiles(void) {
    static const uint32_t tiles[3][3] = {{256, 128, 64}, {256, 64, 128}, {256, 128, 128}};
    static const uint32_t types[3] = {TMEM_GGML_F16, TMEM_GGML_Q4_K, TMEM_GGML_Q6_K};
    for (int ti = 0; ti < 3; ti++) {
        tmrt_vk_kernel k = (tmrt_vk_kernel)(TMRT_VK_K_MATMAT_F32 + (ti == 0 ? 1 : ti == 1 ? 4 : 5));
        for (int c = 0; c < 3; c++) {
            REQUIRE_OK(tmrt__vk_tune(g.vk, k, tiles[c], 3));
            mm_case m = {types[ti], types[ti] == TMEM_GGML_F16 ? 300 : 512, 200, 150, 0, 0, 1, 0, false, 1};
            mm_check(&m);
        }
        REQUIRE_OK(tmrt__vk_tune(g.vk, k, NULL, 0));
        CHECK(tmrt__vk_spec(g.vk, k)[1] == 64 && tmrt__vk_spec(g.vk, k)[2] == 64);
    }
}

/* Padded rows (junk between them), weights at an offset the binding must
 * start below (w_base), rows not 16-byte aligned (the element path). */
static void test_matmul_layouts(void) {
    for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
        uint32_t t = k_types[ti], b = tmrt__vk_type_block(t);
        mm_case c = {t, b == 1 ? 64 : 2 * b, 19, 2, 16, 32, 0, 0, false, 0};
        mm_check(&c);
        c.pad = 4, c.lead = 4; /* rows 4 bytes off 16 */
        if (t == TMEM_GGML_F16 || t == TMEM_GGML_BF16 || t == TMEM_GGML_Q8_0 || t == TMEM_GGML_Q6_K)
            c.pad = 2, c.lead = 36; /* and 2 bytes off 4 */
        mm_check(&c);
    }
}

/* Weights past maxStorageBufferRange (forced down to 64 KiB): bound and
 * dispatched in row pieces, each from the alignment below its first row. */
static void test_matmul_split(void) {
    vkt saved = g;
    tmrt_vk_desc d = {.flags = tmrt__vk_limits(saved.vk)->subgroup ? 0 : TMRT_VK_NO_SUBGROUP,
                      .max_storage_range = 65536};
    REQUIRE(vkt_open(&g, &d));
    CHECK(tmrt__vk_limits(g.vk)->max_storage_range == 65536);
    mm_case cases[] = {{TMEM_GGML_F32, 16000, 5, 1, 0, 0, 0, 0, false, 0}, /* one row a piece */
                       {TMEM_GGML_Q4_K, 4096, 100, 3, 0, 20, 0, 0, false, 0},
                       {TMEM_GGML_Q8_0, 1024, 200, 1, 2, 36, 0, 0, false, 0},
                       {TMEM_GGML_F16, 4001, 30, 2, 0, 4, 0, 0, true, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) mm_check(&cases[i]);
    /* a row larger than the limit: a clean error, nothing recorded */
    wtest wt;
    REQUIRE(wtest_make(&wt, TMEM_GGML_F32, 16400, 2, 0, 0));
    vkt_buf xb;
    REQUIRE(vkt_buf_new(&g, 16400 * 4, &xb));
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    tmrt_vk_matmul m = {wt.w, vkt_sub(&xb, 0, 16400 * 4 - 256), vkt_sub(&xb, 0, 64), {0}, 0, 0, 1, 0, NULL};
    m.x.range = 65536;
    CHECK_ST(tmrt__vk_matmul(g.rec, &m), TMEM_E_INVALID_ARG);
    CHECK(tmrt__vk_rec_dispatches(g.rec) == 0);
    CHECK_MSG(strstr(tmrt__vk_rec_error(g.rec), "maxStorageBufferRange") != NULL, "%s", tmrt__vk_rec_error(g.rec));
    CHECK_ST(tmrt__vk_end(g.rec), TMEM_E_INVALID_ARG);
    vkt_buf_free(&g, &xb);
    wtest_free(&wt);
    vkt_close(&g);
    g = saved;
}

int main(void) {
    tmem_rng_init(&g_rng, tmem_test_seed(19));
    const char *mode = getenv("TMRT_VK_TEST_FLAGS");
    tmrt_vk_desc d = {0};
    if (mode) d.flags = (uint32_t)strtoul(mode, NULL, 0);
    if (!vkt_open(&g, &d)) tmem_test_skip("no Vulkan device");
    const tmrt_vk_limits *l = tmrt__vk_limits(g.vk);
    printf("device %s: subgroup %u (%s), 16-bit storage %s, max range %llu, align %llu\n", l->device,
           l->subgroup_size, l->subgroup ? "used" : "not used", l->storage16 ? "used" : "not used",
           (unsigned long long)l->max_storage_range, (unsigned long long)l->storage_align);
    RUN(test_matmul_types);
    RUN(test_matmul_tokens);
    RUN(test_matmul_prefill);
    RUN(test_matmul_tiles);
    RUN(test_matmul_layouts);
    RUN(test_matmul_split);
    for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++)
        printf("matmul %-5s largest error: %.2e vs the dequantised weights, %.2e vs the CPU kernel\n",
               type_name(k_types[ti]), g_max_err[k_types[ti]], g_max_cpu[k_types[ti]]);
    vkt_close(&g);
    return tmem_test_finish();
}

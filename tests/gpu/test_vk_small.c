/* The runtime's small Vulkan ops (runtime/src/gpu/: get_rows, the norms,
 * the element-wise ops, RoPE, the KV store, the short conv) on a real
 * device against the CPU runtime's kernels and its forward pass's own
 * functions, on odd shapes; tolerances relative to max |ref|, stated per op.
 * Skips (77) without a Vulkan device. */
#include "vk_test_util.h"
#include "kern/kern_half.h"
#include "kern/kern.h"
#include "rt_internal.h"
#include "typedmem/model.h"

static vkt g;
static tmem_rng g_rng;

/* A buffer of n random floats in [-s, s) (host copy in *host). */
static bool rand_buf(size_t n, float s, vkt_buf *b) {
    if (!vkt_buf_new(&g, n * 4 + 16, b)) return false;
    vkt_fill(&g_rng, b->host, n);
    for (size_t i = 0; i < n; i++) ((float *)b->host)[i] *= s;
    return true;
}

/* A vector weight of n values of `type` (F32/F16/BF16) `lead` bytes into
 * its buffer, and its f32 values. */
static bool vec_weight(uint32_t type, uint32_t n_out, uint32_t n, uint32_t lead, vkt_buf *b, tmrt_vk_wmat *w,
                       float *vals) {
    size_t rb = tmrt__kern_row_bytes(type, n);
    if (!vkt_buf_new(&g, lead + n_out * rb + 16, b)) return false;
    for (uint32_t o = 0; o < n_out; o++) {
        vkt_fill(&g_rng, vals + (size_t)o * n, n);
        uint8_t *row = (uint8_t *)b->host + lead + o * rb;
        tmrt__kern_quantize_row(type, vals + (size_t)o * n, row, n);
        tmrt__kern_dequantize_row(type, row, vals + (size_t)o * n, n);
    }
    *w = (tmrt_vk_wmat){vkt_sub(b, lead, (n_out * rb + 3) & ~3ull), type, n, n_out, rb};
    return true;
}

/* get_rows: ids in and past the table; float types exact, quantised ones
 * within 1e-6 of max |ref| (the dequantisation's operation order). */
static void test_get_rows(void) {
    static const uint32_t types[] = {TMEM_GGML_F32, TMEM_GGML_F16, TMEM_GGML_BF16,
                                     TMEM_GGML_Q8_0, TMEM_GGML_Q4_K, TMEM_GGML_Q6_K};
    for (size_t ti = 0; ti < 6; ti++) {
        uint32_t t = types[ti], n_in = tmrt__vk_type_block(t) == 1 ? 301 : 512, n_rows = 37, n_tok = 5, ld = n_in + 3;
        size_t rb = tmrt__kern_row_bytes(t, n_in);
        vkt_buf wb, ib, ob;
        REQUIRE(vkt_buf_new(&g, n_rows * rb + 64, &wb) && vkt_buf_new(&g, 64, &ib) &&
                vkt_buf_new(&g, (size_t)n_tok * ld * 4, &ob));
        float *row = malloc(n_in * 4), *ref = malloc(n_in * 4);
        for (uint32_t r = 0; r < n_rows; r++) {
            vkt_fill(&g_rng, row, n_in);
            tmrt__kern_quantize_row(t, row, (uint8_t *)wb.host + 32 + r * rb, n_in);
        }
        uint32_t *ids = ib.host;
        uint32_t want[5] = {3, 36, 0, 1000, 17}; /* 1000: past the table -> zeros */
        memcpy(ids, want, sizeof want);
        tmrt_vk_get_rows gr = {{vkt_sub(&wb, 32, (n_rows * rb + 3) & ~3ull), t, n_in, n_rows, rb}, ib.b, ob.b, n_tok,
                               ld};
        REQUIRE_OK(tmrt__vk_begin(g.rec));
        CHECK_OK(tmrt__vk_get_rows(g.rec, &gr));
        CHECK(vkt_run(&g));
        const float *out = ob.host;
        for (uint32_t k = 0; k < n_tok; k++) {
            if (want[k] < n_rows) {
                kern_wmat kw = {(uint8_t *)wb.host + 32, t, n_in, n_rows, rb};
                tmrt__kern_get_row(&kw, want[k], ref);
            } else {
                memset(ref, 0, n_in * 4);
            }
            double e = vkt_rel_err(out + (size_t)k * ld, ref, n_in);
            CHECK_MSG(tmrt__vk_type_block(t) == 1 ? e == 0 : e <= 1e-6, "get_rows type %u id %u: %.2e", t, want[k], e);
            if (k == 0) printf("get_rows type %u: err %.2e\n", t, e);
        }
        free(row), free(ref);
        vkt_buf_free(&g, &wb), vkt_buf_free(&g, &ib), vkt_buf_free(&g, &ob);
    }
}

/* RMS norm over rows and heads (strided groups, in place), with the fused
 * residual add, the weight offset and the gated form; 1e-5 of max |ref|
 * against tmrt__kern_rmsnorm_offset_ref (and silu_mul_ref). */
static void rms_case(uint32_t n, uint32_t n_tok, uint32_t n_head, uint32_t hs, uint32_t ts, bool add, bool gate,
                     uint32_t wtype, float w_off, bool in_place) {
    size_t total = (size_t)(n_tok - 1) * ts + (size_t)(n_head - 1) * hs + n;
    vkt_buf xb, ab, ob, sb, wb;
    float *wv = malloc(n * 4);
    tmrt_vk_wmat w = {0};
    REQUIRE(rand_buf(total, 2.0f, &xb) && rand_buf(total, 1.0f, &ab) && vkt_buf_new(&g, total * 4, &ob) &&
            vkt_buf_new(&g, total * 4, &sb));
    bool has_w = wtype != UINT32_MAX;
    if (has_w) REQUIRE(vec_weight(wtype, 1, n, 4, &wb, &w, wv));
    float *x0 = malloc(total * 4), *ref = malloc(total * 4), *sum = malloc(total * 4);
    memcpy(x0, xb.host, total * 4);
    tmrt_vk_rmsnorm r = {xb.b, in_place ? xb.b : ob.b, ab.b, sb.b, w, w_off, 1e-6f, n, n_tok, n_head, ts, hs, add,
                         gate, NULL};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_rmsnorm(g.rec, &r));
    CHECK(vkt_run(&g));
    const float *out = in_place ? xb.host : ob.host;
    double err = 0;
    for (uint32_t t = 0; t < n_tok; t++)
        for (uint32_t h = 0; h < n_head; h++) {
            size_t o = (size_t)t * ts + (size_t)h * hs;
            for (uint32_t i = 0; i < n; i++) sum[o + i] = add ? x0[o + i] + ((float *)ab.host)[o + i] : x0[o + i];
            tmrt__kern_rmsnorm_offset_ref(ref + o, sum + o, has_w ? wv : NULL, w_off, n, 1e-6f);
            if (gate) tmrt__kern_silu_mul_ref(ref + o, (float *)ab.host + o, ref + o, n);
            double e = vkt_rel_err(out + o, ref + o, n);
            if (e > err) err = e;
            if (add) CHECK(memcmp(sum + o, (float *)sb.host + o, n * 4) == 0); /* the residual, exact */
        }
    CHECK_MSG(err <= 1e-5, "rmsnorm n %u tok %u heads %u add %d gate %d w %u: %.2e", n, n_tok, n_head, add, gate,
              wtype, err);
    printf("rmsnorm n %u heads %u add %d gate %d: err %.2e\n", n, n_head, add, gate, err);
    free(x0), free(ref), free(sum), free(wv);
    vkt_buf_free(&g, &xb), vkt_buf_free(&g, &ab), vkt_buf_free(&g, &ob), vkt_buf_free(&g, &sb);
    if (has_w) vkt_buf_free(&g, &wb);
}

static void test_rmsnorm(void) {
    rms_case(1024, 3, 1, 1024, 1024, false, false, TMEM_GGML_F32, 0.0f, false);  /* attn_norm rows */
    rms_case(1000, 17, 1, 1000, 1003, true, false, TMEM_GGML_F16, 1.0f, false);  /* add + norm, offset */
    rms_case(256, 3, 8, 512, 4096, false, false, TMEM_GGML_BF16, 0.0f, true);    /* q heads in q_gate */
    rms_case(128, 5, 16, 128, 2048, false, true, TMEM_GGML_F32, 0.0f, true);     /* gated DeltaNet norm */
    rms_case(33, 2, 3, 40, 130, false, false, UINT32_MAX, 0.0f, false);          /* no weight */
}

/* L2 norm with the scale on the first n_scaled heads: 1e-5 (double oracle
 * of deltanet.c's l2norm). */
static void test_l2norm(void) {
    uint32_t n = 128, n_tok = 3, n_head = 6, ts = 6144, hs = 128;
    size_t total = (size_t)(n_tok - 1) * ts + (size_t)(n_head - 1) * hs + n;
    vkt_buf xb;
    REQUIRE(rand_buf(total, 1.0f, &xb));
    float *x0 = malloc(total * 4);
    memcpy(x0, xb.host, total * 4);
    ((float *)xb.host)[hs] = 0, x0[hs] = 0; /* a tiny head: eps wins */
    for (uint32_t i = 1; i < n; i++) ((float *)xb.host)[hs + i] = x0[hs + i] = 1e-9f;
    tmrt_vk_l2norm l = {xb.b, 1e-6f, 0.0883883f, n, n_tok, n_head, ts, hs, 2};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_l2norm(g.rec, &l));
    CHECK(vkt_run(&g));
    float ref[128];
    double err = 0;
    for (uint32_t t = 0; t < n_tok; t++)
        for (uint32_t h = 0; h < n_head; h++) {
            size_t o = (size_t)t * ts + (size_t)h * hs;
            double ss = 0;
            for (uint32_t i = 0; i < n; i++) ss += (double)x0[o + i] * x0[o + i];
            double nm = sqrt(ss), s = (h < 2 ? 0.0883883 : 1.0) / (nm > 1e-6 ? nm : 1e-6);
            for (uint32_t i = 0; i < n; i++) ref[i] = (float)(x0[o + i] * s);
            double e = vkt_rel_err((float *)xb.host + o, ref, n);
            if (e > err) err = e;
        }
    CHECK_MSG(err <= 1e-5, "l2norm: %.2e", err);
    printf("l2norm: err %.2e\n", err);
    free(x0);
    vkt_buf_free(&g, &xb);
}

/* add, swiglu (1e-6 against silu_mul_ref; out aliasing an input), the
 * sigmoid output gate on the joint q + gate layout, the DeltaNet's gates
 * (1e-6 against deltanet.c's formulas). */
static void test_eltwise(void) {
    uint32_t n = 3584 * 3 + 5;
    vkt_buf a, b, o;
    REQUIRE(rand_buf(n, 8.0f, &a) && rand_buf(n, 2.0f, &b) && vkt_buf_new(&g, n * 4, &o));
    float *a0 = malloc(n * 4), *ref = malloc(n * 4);
    memcpy(a0, a.host, n * 4);
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_add(g.rec, a.b, b.b, o.b, n));
    CHECK_OK(tmrt__vk_swiglu(g.rec, a.b, b.b, a.b, n)); /* in place; reads a like add: no barrier needed */
    CHECK(vkt_run(&g));
    for (uint32_t i = 0; i < n; i++) ref[i] = a0[i] + ((float *)b.host)[i];
    CHECK(vkt_rel_err(o.host, ref, n) == 0);
    tmrt__kern_silu_mul_ref(ref, a0, b.host, n);
    CHECK_MSG(vkt_rel_err(a.host, ref, n) <= 1e-6, "swiglu %.2e", vkt_rel_err(a.host, ref, n));
    printf("swiglu: err %.2e\n", vkt_rel_err(a.host, ref, n));
    /* output gate: attn_out [t][H][hd] *= sigmoid(q_gate[t][h][hd + i]) */
    uint32_t H = 3, hd = 20, T = 4;
    vkt_buf x, qg;
    REQUIRE(rand_buf((size_t)T * H * hd, 1.0f, &x) && rand_buf((size_t)T * 2 * H * hd, 4.0f, &qg));
    memcpy(a0, x.host, (size_t)T * H * hd * 4);
    tmrt_vk_sigmoid_gate sg = {x.b, vkt_sub(&qg, hd * 4, qg.b.range - hd * 4), hd, H, T, H * hd, hd, 2 * H * hd,
                               2 * hd};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_sigmoid_gate(g.rec, &sg));
    CHECK(vkt_run(&g));
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t h = 0; h < H; h++)
            for (uint32_t i = 0; i < hd; i++) {
                float gv = ((float *)qg.host)[(size_t)t * 2 * H * hd + (size_t)h * 2 * hd + hd + i];
                size_t xi = (size_t)t * H * hd + (size_t)h * hd + i;
                ref[xi] = a0[xi] * (1.0f / (1.0f + expf(-gv)));
            }
    CHECK_MSG(vkt_rel_err(x.host, ref, (size_t)T * H * hd) <= 1e-6, "sigmoid gate");
    printf("sigmoid gate: err %.2e\n", vkt_rel_err(x.host, ref, (size_t)T * H * hd));
    /* DeltaNet gates: gate = softplus(alpha + dt_bias) * ssm_a, beta = sigmoid(beta) */
    uint32_t Hv = 16, nt = 9;
    vkt_buf al, be, ga, db, sa;
    tmrt_vk_wmat wdb, wsa;
    float bias[16], ssa[16];
    REQUIRE(rand_buf(Hv * nt, 30.0f, &al) && rand_buf(Hv * nt, 6.0f, &be) && vkt_buf_new(&g, Hv * nt * 4, &ga));
    REQUIRE(vec_weight(TMEM_GGML_F32, 1, Hv, 0, &db, &wdb, bias));
    REQUIRE(vec_weight(TMEM_GGML_F16, 1, Hv, 4, &sa, &wsa, ssa));
    memcpy(a0, be.host, Hv * nt * 4);
    tmrt_vk_dn_gates dg = {al.b, be.b, ga.b, wdb, wsa, nt, Hv};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_dn_gates(g.rec, &dg));
    CHECK(vkt_run(&g));
    float rg[16 * 9], rb[16 * 9];
    for (uint32_t i = 0; i < Hv * nt; i++) {
        float v = ((float *)al.host)[i] + bias[i % Hv];
        rg[i] = (v > 20.0f ? v : log1pf(expf(v))) * ssa[i % Hv];
        rb[i] = 1.0f / (1.0f + expf(-a0[i]));
    }
    CHECK_MSG(vkt_rel_err(ga.host, rg, Hv * nt) <= 1e-6, "dn gate %.2e", vkt_rel_err(ga.host, rg, Hv * nt));
    CHECK_MSG(vkt_rel_err(be.host, rb, Hv * nt) <= 1e-6, "dn beta %.2e", vkt_rel_err(be.host, rb, Hv * nt));
    printf("dn_gates: gate err %.2e, beta err %.2e\n", vkt_rel_err(ga.host, rg, Hv * nt),
           vkt_rel_err(be.host, rb, Hv * nt));
    free(a0), free(ref);
    vkt_buf_free(&g, &a), vkt_buf_free(&g, &b), vkt_buf_free(&g, &o), vkt_buf_free(&g, &x), vkt_buf_free(&g, &qg);
    vkt_buf_free(&g, &al), vkt_buf_free(&g, &be), vkt_buf_free(&g, &ga), vkt_buf_free(&g, &db);
    vkt_buf_free(&g, &sa);
}

/* RoPE against forward/rope.c's tmrt__rope: text positions (n_past + t,
 * pushed or from the step buffer, up to 2^17) and M-RoPE positions from a
 * buffer, on heads of the joint q + gate layout; the dims past n_rot stay.
 * 2e-6 of max |ref| (the angles are the CPU's; sin/cos within ~1e-7). */
static void rope_case(uint32_t n_past, bool use_pos, bool use_step) {
    tmrt_hparams hp = {0};
    hp.n_rot = 64, hp.rope_freq_base = 10000000.0f;
    int32_t sect[4] = {11, 11, 10, 0};
    memcpy(hp.rope_sections, sect, sizeof sect);
    uint32_t H = 3, hd = 256, T = 5, hs = 2 * hd, ts = 2 * H * hd;
    vkt_buf xb, pb, sb;
    REQUIRE(rand_buf((size_t)T * ts, 1.0f, &xb) && vkt_buf_new(&g, T * 16, &pb) && vkt_buf_new(&g, 16, &sb));
    int32_t *pos = pb.host;
    for (uint32_t t = 0; t < T; t++)
        for (int c = 0; c < 4; c++) pos[4 * t + c] = (int32_t)(n_past + t * (c + 1) * 37 + (uint32_t)c);
    *(uint32_t *)sb.host = n_past;
    float *ref = malloc((size_t)T * ts * 4);
    memcpy(ref, xb.host, (size_t)T * ts * 4);
    tmrt_vk_rope r = {xb.b, use_pos ? pb.b : (tmrt_vk_buf){0}, use_step ? sb.b : (tmrt_vk_buf){0},
                      T, H, ts, hs, hp.n_rot, use_step ? 0 : n_past, {11, 11, 10, 0}, hp.rope_freq_base};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_rope(g.rec, &r));
    CHECK(vkt_run(&g));
    for (uint32_t t = 0; t < T; t++) {
        int32_t p[4];
        for (int c = 0; c < 4; c++) p[c] = use_pos ? pos[4 * t + c] : (int32_t)(n_past + t);
        for (uint32_t h = 0; h < H; h++) tmrt__rope(ref + (size_t)t * ts + (size_t)h * hs, &hp, p);
    }
    double e = vkt_rel_err(xb.host, ref, (size_t)T * ts);
    printf("rope n_past %u pos %d step %d: err %.2e\n", n_past, use_pos, use_step, e);
    CHECK_MSG(e <= 2e-6, "rope n_past %u pos %d step %d: %.2e", n_past, use_pos, use_step, e);
    free(ref);
    vkt_buf_free(&g, &xb), vkt_buf_free(&g, &pb), vkt_buf_free(&g, &sb);
}

static void test_rope(void) {
    rope_case(0, false, false);
    rope_case(131071, false, true);
    rope_case(4093, true, false);
}

/* RMS norm and RoPE in one dispatch (the q/k heads of attention, in place
 * in the joint q + gate layout, and k with 2 heads): as rmsnorm_offset_ref
 * then tmrt__rope, within 2e-6 of max |ref|; with M-RoPE positions and the
 * step buffer; the fused residual add too. */
static void norm_rope_case(uint32_t H, uint32_t hs, bool use_pos, bool add) {
    tmrt_hparams hp = {0};
    hp.n_rot = 64, hp.rope_freq_base = 10000000.0f;
    int32_t sect[4] = {11, 11, 10, 0};
    memcpy(hp.rope_sections, sect, sizeof sect);
    uint32_t hd = 256, T = 3, ts = H * hs, n_past = 1000;
    size_t total = (size_t)T * ts;
    vkt_buf xb, ab, sb, pb, stb, wb;
    float wv[256];
    tmrt_vk_wmat w;
    REQUIRE(rand_buf(total, 3.0f, &xb) && rand_buf(total, 1.0f, &ab) && vkt_buf_new(&g, total * 4, &sb) &&
            vkt_buf_new(&g, T * 16, &pb) && vkt_buf_new(&g, 16, &stb));
    REQUIRE(vec_weight(TMEM_GGML_F32, 1, hd, 0, &wb, &w, wv));
    int32_t *pos = pb.host;
    for (uint32_t t = 0; t < T; t++)
        for (int c = 0; c < 4; c++) pos[4 * t + c] = (int32_t)(n_past + t + 50 * (uint32_t)c);
    *(uint32_t *)stb.host = n_past;
    float *ref = malloc(total * 4);
    for (size_t i = 0; i < total; i++) ref[i] = ((float *)xb.host)[i] + (add ? ((float *)ab.host)[i] : 0.0f);
    tmrt_vk_rope rp = {{0}, use_pos ? pb.b : (tmrt_vk_buf){0}, use_pos ? (tmrt_vk_buf){0} : stb.b, 0, 0, 0, 0, 64, 0,
                       {11, 11, 10, 0}, hp.rope_freq_base};
    tmrt_vk_rmsnorm r = {xb.b, xb.b, ab.b, sb.b, w, 0, 1e-6f, hd, T, H, ts, hs, add, false, &rp};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_rmsnorm(g.rec, &r));
    CHECK(vkt_run(&g));
    for (uint32_t t = 0; t < T; t++) {
        int32_t p[4];
        for (int c = 0; c < 4; c++) p[c] = use_pos ? pos[4 * t + c] : (int32_t)(n_past + t);
        for (uint32_t h = 0; h < H; h++) {
            float *v = ref + (size_t)t * ts + (size_t)h * hs;
            tmrt__kern_rmsnorm_offset_ref(v, v, wv, 0, hd, 1e-6f);
            tmrt__rope(v, &hp, p);
        }
    }
    double e = 0;
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t h = 0; h < H; h++) {
            size_t o = (size_t)t * ts + (size_t)h * hs;
            e = fmax(e, vkt_rel_err((float *)xb.host + o, ref + o, hd));
        }
    printf("norm + rope: %u heads, pos %d add %d: err %.2e\n", H, use_pos, add, e);
    CHECK_MSG(e <= 2e-6, "norm + rope %u heads pos %d add %d: %.2e", H, use_pos, add, e);
    free(ref);
    vkt_buf_free(&g, &xb), vkt_buf_free(&g, &ab), vkt_buf_free(&g, &sb), vkt_buf_free(&g, &pb);
    vkt_buf_free(&g, &stb), vkt_buf_free(&g, &wb);
}

static void test_norm_rope(void) {
    norm_rope_case(8, 512, false, false); /* q in q_gate */
    norm_rope_case(2, 256, true, false);  /* k */
    norm_rope_case(3, 300, true, true);
}

/* The KV store into a pool split over two buffers, a permuted block table,
 * slots across block boundaries, one layer of two: f16 rows bit for bit
 * the CPU's kern_f32_to_f16 (NaN, infinity, subnormals and the rounding
 * edges included), f32 rows exact, every other byte untouched. */
static void kv_case(bool f32, bool use_step) {
    uint32_t Hkv = 2, hd = 6, dim = Hkv * hd, bt = 4, layers = 2, esz = f32 ? 4 : 2;
    uint32_t row = dim * esz, block = layers * 2 * bt * row, per_buf = 3, n_tok = 7, n_past = 5;
    uint32_t table[6] = {5, 0, 3, 1, 4, 2};
    vkt_buf pool[2], tb, kb, vb, sb;
    for (int i = 0; i < 2; i++) REQUIRE(vkt_buf_new(&g, per_buf * block, &pool[i]));
    REQUIRE(vkt_buf_new(&g, sizeof table, &tb) && rand_buf(n_tok * 16, 100.0f, &kb) &&
            rand_buf(n_tok * 16, 1e-5f, &vb) && vkt_buf_new(&g, 16, &sb));
    memcpy(tb.host, table, sizeof table);
    *(uint32_t *)sb.host = n_past;
    for (int i = 0; i < 2; i++) memset(pool[i].host, 0xAB, pool[i].bytes);
    /* the conversion's edges: NaN (with a payload), infinity, f16 subnormals,
     * the rounding to infinity, -0, the halfway to zero */
    static const uint32_t edges[8] = {0x7fc12345u, 0x7f800000u, 0x36490000u, 0x477ff000u,
                                      0x80000000u, 0x33800000u, 0x33000000u, 0x477fefffu};
    memcpy(kb.host, edges, sizeof edges);
    tmrt_vk_kv kv = {{pool[0].b, pool[1].b}, 2, per_buf, tb.b, bt, row, block, f32};
    tmrt_vk_kv_store st = {kv, kb.b, vb.b, use_step ? sb.b : (tmrt_vk_buf){0}, 1, n_tok, dim, 16, 16,
                           use_step ? 0 : n_past};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_kv_store(g.rec, &st));
    CHECK(vkt_run(&g));
    uint8_t *want[2];
    for (int i = 0; i < 2; i++) {
        want[i] = malloc(pool[i].bytes);
        memset(want[i], 0xAB, pool[i].bytes);
    }
    for (uint32_t t = 0; t < n_tok; t++) {
        uint32_t s = n_past + t, id = table[s / bt], in = s % bt;
        for (uint32_t v = 0; v < 2; v++) {
            uint8_t *dst = want[id / per_buf] + (id % per_buf) * block + ((2 * 1 + v) * bt + in) * row;
            const float *src = (const float *)(v ? vb.host : kb.host) + t * 16;
            for (uint32_t i = 0; i < dim; i++) {
                uint16_t h = kern_f32_to_f16(src[i]);
                if (f32) memcpy(dst + 4 * i, &src[i], 4);
                else memcpy(dst + 2 * i, &h, 2);
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(memcmp(want[i], pool[i].host, pool[i].bytes) == 0, "kv_store f32 %d step %d: pool %d", f32,
                  use_step, i);
        free(want[i]);
        vkt_buf_free(&g, &pool[i]);
    }
    vkt_buf_free(&g, &tb), vkt_buf_free(&g, &kb), vkt_buf_free(&g, &vb), vkt_buf_free(&g, &sb);
}

static void test_kv_store(void) {
    kv_case(false, false);
    kv_case(false, true);
    kv_case(true, false);
}

/* The short conv over three steps (1, 5, 2 tokens) with the state carried
 * in place: outputs within 1e-5 of a double evaluation of deltanet.c's
 * conv, the state bit for bit the last K-1 inputs. */
static void test_conv(void) {
    uint32_t C = 37, K = 4, ld = 40, steps[3] = {1, 5, 2};
    vkt_buf wb, sb, xb, ob;
    tmrt_vk_wmat w;
    float taps[37 * 4], hist[3 * 37] = {0};
    REQUIRE(vec_weight(TMEM_GGML_F32, C, K, 0, &wb, &w, taps) && vkt_buf_new(&g, (K - 1) * C * 4, &sb));
    for (int s = 0; s < 3; s++) {
        uint32_t n = steps[s];
        REQUIRE(rand_buf((size_t)n * ld, 2.0f, &xb) && vkt_buf_new(&g, (size_t)n * C * 4, &ob));
        tmrt_vk_conv cv = {xb.b, ob.b, sb.b, w, n, ld, 0};
        REQUIRE_OK(tmrt__vk_begin(g.rec));
        CHECK_OK(tmrt__vk_conv(g.rec, &cv));
        CHECK(vkt_run(&g));
        const float *x = xb.host, *o = ob.host;
        double err = 0, mx = 0;
        for (uint32_t t = 0; t < n; t++)
            for (uint32_t c = 0; c < C; c++) {
                double acc = 0;
                for (uint32_t j = 0; j < K; j++) {
                    int64_t src = (int64_t)t + j - (K - 1);
                    acc += (src < 0 ? hist[(src + K - 1) * C + c] : x[src * ld + c]) * (double)taps[c * K + j];
                }
                double ref = acc / (1 + exp(-acc));
                err = fmax(err, fabs(ref - o[t * C + c])), mx = fmax(mx, fabs(ref));
            }
        CHECK_MSG(err <= 1e-5 * mx, "conv step %d: %.2e of %.2e", s, err, mx);
        printf("conv step %d: err %.2e\n", s, err / mx);
        float nh[3 * 37];
        for (uint32_t j = 0; j + 1 < K; j++) {
            int64_t src = (int64_t)n + j - (K - 1);
            for (uint32_t c = 0; c < C; c++) nh[j * C + c] = src < 0 ? hist[(src + K - 1) * C + c] : x[src * ld + c];
        }
        memcpy(hist, nh, sizeof nh);
        CHECK(memcmp(hist, sb.host, sizeof hist) == 0);
        vkt_buf_free(&g, &xb), vkt_buf_free(&g, &ob);
    }
    vkt_buf_free(&g, &wb), vkt_buf_free(&g, &sb);
}

int main(void) {
    tmem_rng_init(&g_rng, tmem_test_seed(20));
    const char *mode = getenv("TMRT_VK_TEST_FLAGS");
    tmrt_vk_desc d = {0};
    if (mode) d.flags = (uint32_t)strtoul(mode, NULL, 0);
    if (!vkt_open(&g, &d)) tmem_test_skip("no Vulkan device");
    RUN(test_get_rows);
    RUN(test_rmsnorm);
    RUN(test_l2norm);
    RUN(test_eltwise);
    RUN(test_rope);
    RUN(test_norm_rope);
    RUN(test_kv_store);
    RUN(test_conv);
    vkt_close(&g);
    return tmem_test_finish();
}

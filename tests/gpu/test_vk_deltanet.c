/* The runtime's Vulkan Gated DeltaNet (runtime/src/gpu/vk_deltanet.c): the
 * recurrent form and the chunked form against a double-precision run of
 * forward/deltanet.c's recurrence (S = S exp(g); S += k (x) beta (v - S^T k);
 * o = S^T q, per value head, key head h % G), on conv_out's layout (q, k, v
 * of a token side by side), a state carried in and checked out, 1..130
 * tokens (chunks of 64 and their tails), GQA-style key-head repeats, value
 * dims not a multiple of the row blocks. Tolerance 1e-5 of max |ref| for the
 * outputs and the state, both forms (lavapipe: 1e-7..2e-6). Skips (77)
 * without a Vulkan device. */
#include "vk_test_util.h"
#include "kern/kern_half.h"
#include "rt_internal.h"
#include "typedmem/model.h"

static vkt g;
static tmem_rng g_rng;

typedef struct dn_case {
    uint32_t n_tok, dk, dv, G, Hv;
    bool chunked, fused;          /* fused: raw q, k, alpha, b; the norm and gates in the recurrence */
} dn_case;

static double softplus(double v) { return v > 20 ? v : log1p(exp(v)); }

static void l2(float *x, uint32_t n, float scale) {
    double ss = 0;
    for (uint32_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float s = (float)(scale / fmax(sqrt(ss), 1e-6));
    for (uint32_t i = 0; i < n; i++) x[i] *= s;
}

static void dn_check(const dn_case *c) {
    uint32_t n = c->n_tok, dk = c->dk, dv = c->dv, G = c->G, Hv = c->Hv, C = 2 * G * dk + Hv * dv, I = Hv * dv;
    vkt_buf xb, gb, bb, sb, ob, scb;
    size_t ns = (size_t)Hv * dv * dk;
    uint64_t scr = tmrt__vk_deltanet_scratch_bytes(n, dk, dv, Hv);
    REQUIRE(vkt_buf_new(&g, (size_t)n * C * 4, &xb) && vkt_buf_new(&g, (size_t)n * Hv * 4, &gb) &&
            vkt_buf_new(&g, (size_t)n * Hv * 4, &bb) && vkt_buf_new(&g, ns * 4, &sb) &&
            vkt_buf_new(&g, (size_t)n * I * 4, &ob) && vkt_buf_new(&g, scr, &scb));
    float *x = xb.host, *gt = gb.host, *bt = bb.host, *st = sb.host;
    vkt_fill(&g_rng, x, (size_t)n * C);
    float *xn = malloc((size_t)n * C * 4), *gn = malloc((size_t)n * Hv * 4), *bn = malloc((size_t)n * Hv * 4);
    float bias[64], ssa[64];
    memcpy(xn, x, (size_t)n * C * 4);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < 2 * G; h++) l2(xn + (size_t)t * C + h * dk, dk, h < G ? 1.0f / sqrtf((float)dk) : 1);
    if (!c->fused) memcpy(x, xn, (size_t)n * C * 4);
    for (uint32_t h = 0; h < Hv; h++) bias[h] = (float)h / 10 - 0.5f, ssa[h] = -(float)(h + 1) / 8;
    for (size_t i = 0; i < (size_t)n * Hv; i++) {
        uint64_t r = tmem_rng_next(&g_rng);
        if (c->fused) { /* raw projections; the gates as dn_gates computes them */
            gt[i] = (float)((r >> 40) % 1000) / 160.0f - 3.0f, bt[i] = (float)((r >> 20) % 1000) / 125.0f - 4.0f;
            gn[i] = (float)(softplus((double)gt[i] + bias[i % Hv]) * ssa[i % Hv]);
            bn[i] = (float)(1.0 / (1.0 + exp(-(double)bt[i])));
        } else {
            gt[i] = gn[i] = -(float)((r >> 40) % 1000) / 400.0f;        /* decays down to exp(-2.5) */
            bt[i] = bn[i] = 0.05f + (float)((r >> 20) % 1000) / 1100.0f; /* sigmoid outputs */
        }
    }
    vkt_buf vb_bias, vb_a;
    REQUIRE(vkt_buf_new(&g, 256, &vb_bias) && vkt_buf_new(&g, 256, &vb_a));
    memcpy(vb_bias.host, bias, Hv * 4);
    for (uint32_t h = 0; h < Hv; h++) ((uint16_t *)vb_a.host)[h] = kern_f32_to_f16(ssa[h]);
    for (uint32_t h = 0; h < Hv; h++) ssa[h] = kern_f16_to_f32(((uint16_t *)vb_a.host)[h]);
    for (size_t i = 0; c->fused && i < (size_t)n * Hv; i++)
        gn[i] = (float)(softplus((double)gt[i] + bias[i % Hv]) * ssa[i % Hv]);
    vkt_fill(&g_rng, st, ns);
    for (size_t i = 0; i < ns; i++) st[i] *= 0.1f;
    double *S = malloc(ns * sizeof *S), *ref = malloc((size_t)n * I * sizeof *ref);
    for (size_t i = 0; i < ns; i++) S[i] = st[i];
    uint64_t qk = (uint64_t)G * dk * 4;
    tmrt_vk_deltanet d = {vkt_sub(&xb, 0, xb.bytes), vkt_sub(&xb, qk, xb.bytes - qk),
                          vkt_sub(&xb, 2 * qk, xb.bytes - 2 * qk), gb.b, bb.b, sb.b, ob.b, scb.b,
                          n, dk, dv, G, Hv, C, C, I, c->chunked, c->fused, 1e-6f, 1.0f / sqrtf((float)dk),
                          {{0}, 0, 0, 0, 0}, {{0}, 0, 0, 0, 0}};
    if (c->fused) {
        d.dt_bias = (tmrt_vk_wmat){vb_bias.b, TMEM_GGML_F32, Hv, 1, Hv * 4};
        d.ssm_a = (tmrt_vk_wmat){vkt_sub(&vb_a, 0, 128), TMEM_GGML_F16, Hv, 1, Hv * 2};
    }
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_deltanet(g.rec, &d));
    CHECK(vkt_run(&g));
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < Hv; h++) {
            const float *q = xn + (size_t)t * C + (h % G) * dk, *k = q + (size_t)G * dk;
            const float *v = xn + (size_t)t * C + 2 * (size_t)G * dk + (size_t)h * dv;
            double decay = exp((double)gn[t * Hv + h]), b = bn[t * Hv + h];
            for (uint32_t j = 0; j < dv; j++) {
                double *row = S + ((size_t)h * dv + j) * dk, dot = 0, o = 0;
                for (uint32_t i = 0; i < dk; i++) row[i] *= decay, dot += row[i] * k[i];
                double dd = (v[j] - dot) * b;
                for (uint32_t i = 0; i < dk; i++) row[i] += dd * k[i], o += row[i] * q[i];
                ref[(size_t)t * I + h * dv + j] = o;
            }
        }
    float *rf = malloc((size_t)n * I * 4), *sf = malloc(ns * 4);
    for (size_t i = 0; i < (size_t)n * I; i++) rf[i] = (float)ref[i];
    for (size_t i = 0; i < ns; i++) sf[i] = (float)S[i];
    double eo = vkt_rel_err(ob.host, rf, (size_t)n * I), es = vkt_rel_err(st, sf, ns), tol = 1e-5;
    printf("  %s%s %u tokens dk %u dv %u G %u Hv %u: out %.2e, state %.2e\n", c->chunked ? "chunked" : "recurrent",
           c->fused ? " fused" : "", n, dk, dv, G, Hv, eo, es);
    CHECK_MSG(eo <= tol && es <= tol, "deltanet %s %u tokens: out %.2e state %.2e", c->chunked ? "chunked" : "rec", n,
              eo, es);
    free(S), free(ref), free(rf), free(sf), free(xn), free(gn), free(bn);
    vkt_buf_free(&g, &vb_bias), vkt_buf_free(&g, &vb_a);
    vkt_buf_free(&g, &xb), vkt_buf_free(&g, &gb), vkt_buf_free(&g, &bb), vkt_buf_free(&g, &sb);
    vkt_buf_free(&g, &ob), vkt_buf_free(&g, &scb);
}

static void test_recurrent(void) {
    dn_case cs[] = {{1, 128, 128, 16, 16, false, false}, {3, 128, 128, 16, 16, false, false},
                    {2, 64, 40, 2, 4, false, false},     {17, 32, 33, 1, 3, false, false},
                    {1, 128, 128, 16, 16, false, true},  {5, 64, 40, 2, 4, false, true}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) dn_check(&cs[i]);
}

static void test_chunked(void) {
    dn_case cs[] = {{1, 128, 128, 16, 16, true, false}, {17, 128, 128, 16, 16, true, false},
                    {64, 64, 40, 2, 4, true, false},    {65, 128, 128, 4, 8, true, false},
                    {130, 32, 33, 1, 3, true, false}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) dn_check(&cs[i]);
}

int main(void) {
    tmem_rng_init(&g_rng, tmem_test_seed(22));
    const char *mode = getenv("TMRT_VK_TEST_FLAGS");
    tmrt_vk_desc d = {0};
    if (mode) d.flags = (uint32_t)strtoul(mode, NULL, 0);
    if (!vkt_open(&g, &d)) tmem_test_skip("no Vulkan device");
    RUN(test_recurrent);
    RUN(test_chunked);
    vkt_close(&g);
    return tmem_test_finish();
}

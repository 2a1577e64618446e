/* The runtime's Vulkan attention (runtime/src/gpu/vk_attention.c) over the
 * paged KV cache against a double-precision evaluation of forward/
 * attention.c's math (causal GQA softmax over slots 0..n_past + t, the
 * sigmoid output gate): one token and prefill chunks, GQA ratios 1, 2, 4 and
 * 12, f16 and f32 rows, block boundaries, a pool split over two buffers with
 * a permuted block table, key splits (more than there are keys, too), the
 * step buffer. Tolerance 1e-5 of max |ref|. Skips (77) without a device. */
#include "vk_test_util.h"
#include "kern/kern_half.h"
#include "rt_internal.h"

static vkt g;
static tmem_rng g_rng;

typedef struct at_case {
    uint32_t n_tok, n_past, H, Hkv, hd, bt, splits;
    bool f32, gate, joint, step, two_pools;
} at_case;

static float kv_val(const uint8_t *p, bool f32) {
    if (f32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return kern_f16_to_f32(h);
}

static void at_check(const at_case *c) {
    uint32_t layers = 2, layer = 1, esz = c->f32 ? 4 : 2, dim = c->Hkv * c->hd, row = dim * esz;
    uint32_t slots = c->n_past + c->n_tok, nb = (slots + c->bt - 1) / c->bt, block = layers * 2 * c->bt * row;
    uint32_t per_buf = c->two_pools ? (nb + 1) / 2 : nb, n_pool = c->two_pools ? 2 : 1;
    vkt_buf pool[2], tb, qb, ob, sb, stb;
    uint32_t *table = malloc(nb * 4);
    for (uint32_t b = 0; b < nb; b++) table[b] = (b * 7 + 3) % nb; /* a permutation (nb coprime with 7 here) */
    for (uint32_t i = 0; i < n_pool; i++) REQUIRE(vkt_buf_new(&g, (uint64_t)per_buf * block, &pool[i]));
    uint32_t qts = (c->joint ? 2 : 1) * c->H * c->hd, qhs = (c->joint ? 2 : 1) * c->hd;
    size_t nq = (size_t)c->n_tok * qts;
    REQUIRE(vkt_buf_new(&g, nb * 4 + 16, &tb) && vkt_buf_new(&g, nq * 4, &qb) &&
            vkt_buf_new(&g, (size_t)c->n_tok * c->H * c->hd * 4, &ob) && vkt_buf_new(&g, 16, &stb));
    uint64_t scr = tmrt__vk_attention_scratch_bytes(c->n_tok, c->H, c->hd, c->splits);
    REQUIRE(vkt_buf_new(&g, scr ? scr : 16, &sb));
    memcpy(tb.host, table, nb * 4);
    *(uint32_t *)stb.host = c->n_past;
    vkt_fill(&g_rng, qb.host, nq);
    float *row_f = malloc(dim * 4);
    for (uint32_t s = 0; s < slots; s++)
        for (uint32_t v = 0; v < 2; v++) {
            uint32_t id = table[s / c->bt], in = s % c->bt;
            uint8_t *dst = (uint8_t *)pool[id / per_buf].host + (id % per_buf) * block +
                           ((2 * layer + v) * c->bt + in) * row;
            vkt_fill(&g_rng, row_f, dim);
            for (uint32_t i = 0; i < dim; i++) {
                float f = row_f[i] * (v ? 1.0f : 3.0f);
                uint16_t h = kern_f32_to_f16(f);
                if (c->f32) memcpy(dst + 4 * i, &f, 4);
                else memcpy(dst + 2 * i, &h, 2);
            }
        }
    tmrt_vk_kv kv = {{pool[0].b, c->two_pools ? pool[1].b : (tmrt_vk_buf){0}}, n_pool, per_buf, tb.b, c->bt, row,
                     block, c->f32};
    tmrt_vk_attention a = {kv, qb.b, ob.b, c->gate ? vkt_sub(&qb, c->hd * 4, qb.b.range - c->hd * 4) : (tmrt_vk_buf){0},
                           sb.b, c->step ? stb.b : (tmrt_vk_buf){0}, layer, c->n_tok, c->H, c->Hkv, c->hd,
                           c->step ? 0 : c->n_past, c->splits, qts, qhs, 0, 0, qts, qhs, 0};
    REQUIRE_OK(tmrt__vk_begin(g.rec));
    CHECK_OK(tmrt__vk_attention(g.rec, &a));
    CHECK(vkt_run(&g));
    /* the oracle, in double */
    const float *q = qb.host, *out = ob.host;
    size_t n_out = (size_t)c->n_tok * c->H * c->hd;
    float *ref = malloc(n_out * 4);
    double *sc = malloc(slots * sizeof *sc), scale = 1.0 / sqrt((double)c->hd);
    for (uint32_t t = 0; t < c->n_tok; t++)
        for (uint32_t h = 0; h < c->H; h++) {
            uint32_t kvh = h / (c->H / c->Hkv), last = c->n_past + t;
            const float *qh = q + (size_t)t * qts + (size_t)h * qhs;
            double mx = -INFINITY, l = 0;
            for (uint32_t s = 0; s <= last; s++) {
                uint32_t id = table[s / c->bt], in = s % c->bt;
                const uint8_t *k = (uint8_t *)pool[id / per_buf].host + (id % per_buf) * block +
                                   ((2 * layer) * c->bt + in) * row + kvh * c->hd * esz;
                double d = 0;
                for (uint32_t i = 0; i < c->hd; i++) d += (double)qh[i] * kv_val(k + i * esz, c->f32);
                sc[s] = d * scale, mx = fmax(mx, sc[s]);
            }
            for (uint32_t s = 0; s <= last; s++) l += sc[s] = exp(sc[s] - mx);
            for (uint32_t i = 0; i < c->hd; i++) {
                double acc = 0;
                for (uint32_t s = 0; s <= last; s++) {
                    uint32_t id = table[s / c->bt], in = s % c->bt;
                    const uint8_t *v = (uint8_t *)pool[id / per_buf].host + (id % per_buf) * block +
                                       ((2 * layer + 1) * c->bt + in) * row + kvh * c->hd * esz;
                    acc += sc[s] * kv_val(v + i * esz, c->f32);
                }
                double o = acc / l;
                if (c->gate) o *= 1.0 / (1.0 + exp(-(double)qh[c->hd + i]));
                ref[((size_t)t * c->H + h) * c->hd + i] = (float)o;
            }
        }
    double e = vkt_rel_err(out, ref, n_out);
    printf("  tok %u past %u H %u/%u hd %u splits %u f32 %d: err %.2e\n", c->n_tok, c->n_past, c->H, c->Hkv, c->hd,
           c->splits, c->f32, e);
    CHECK_MSG(e <= 1e-5, "attention tok %u past %u H %u/%u hd %u bt %u splits %u f32 %d gate %d: err %.2e", c->n_tok,
              c->n_past, c->H, c->Hkv, c->hd, c->bt, c->splits, c->f32, c->gate, e);
    free(ref), free(sc), free(row_f), free(table);
    for (uint32_t i = 0; i < n_pool; i++) vkt_buf_free(&g, &pool[i]);
    vkt_buf_free(&g, &tb), vkt_buf_free(&g, &qb), vkt_buf_free(&g, &ob), vkt_buf_free(&g, &sb);
    vkt_buf_free(&g, &stb);
}

/* One token: the 0.8B's heads (8 / 2, head_dim 256, f16), n_past at and
 * across block boundaries, one split, several, more than the keys. */
static void test_decode(void) {
    at_case cs[] = {{1, 0, 8, 2, 256, 16, 1, false, true, true, false, false},
                    {1, 15, 8, 2, 256, 16, 1, false, true, true, true, false},
                    {1, 16, 8, 2, 256, 16, 4, false, true, true, false, true},
                    {1, 300, 8, 2, 256, 16, 8, false, true, true, true, true},
                    {1, 5, 8, 2, 256, 16, 32, false, false, false, false, false},
                    {1, 129, 4, 2, 64, 8, 3, true, false, false, false, true}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) at_check(&cs[i]);
}

/* Prefill chunks: 3, 17, 64 and 65 tokens after 0..33 cached ones, GQA 1, 2,
 * 4 and 12 (query heads in groups of 8), f16 and f32, a split prefill, rows
 * not 16-byte multiples. */
static void test_prefill(void) {
    at_case cs[] = {{3, 0, 8, 2, 256, 16, 1, false, true, true, false, false},
                    {17, 5, 4, 2, 64, 16, 1, true, false, false, true, true},
                    {64, 33, 2, 2, 128, 16, 1, false, true, true, false, false},
                    {65, 0, 12, 1, 32, 4, 1, false, false, false, false, true},
                    {9, 20, 8, 2, 256, 16, 2, false, true, true, false, false},
                    {5, 7, 4, 2, 6, 4, 2, false, false, true, false, true}}; /* rows of 12 bytes: word reads */
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) at_check(&cs[i]);
}

int main(void) {
    tmem_rng_init(&g_rng, tmem_test_seed(21));
    const char *mode = getenv("TMRT_VK_TEST_FLAGS");
    tmrt_vk_desc d = {0};
    if (mode) d.flags = (uint32_t)strtoul(mode, NULL, 0);
    if (!vkt_open(&g, &d)) tmem_test_skip("no Vulkan device");
    RUN(test_decode);
    RUN(test_prefill);
    vkt_close(&g);
    return tmem_test_finish();
}

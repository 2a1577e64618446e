/* bench_vk_ops: the runtime's Vulkan matmuls (and attention, DeltaNet) at
 * the Qwen3.5-0.8B shapes (n_embd 1024, n_ff 3584, vocab 248320), per weight
 * type, timed on the GPU with timestamps: for each shape the same op
 * recorded R times with the graph's barrier between them, (t_end -
 * t_start) / R per op; GB/s counts the weight bytes read once, GFLOP/s
 * 2 n_in n_out n_tok. Then the matmul time of one decode token and of a
 * 512-token prefill of the whole model (each shape times its count in the
 * 24 layers: 6 attention, 18 DeltaNet) as an upper bound of tok/s from the
 * matmuls alone. Weights are random bytes (any bytes are valid blocks; the
 * speed does not depend on them) in a host-visible device type (on the H200
 * device-local: ReBAR). Reports, asserts nothing.
 *
 *   bench_vk_ops [--quick] [--types f16,q4_K,...] [--tune]
 * --quick: small shapes (CI smoke on lavapipe); --tune: also sweep the
 * mat-vec workgroup / rows-per-workgroup specialisation constants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpu/vk_internal.h"
#include "gpu/vk_ops.h"
#include "gpu/vk_weights.h"
#include "typedmem/model.h"
#include "typedmem/vulkan.h"

typedef struct bench {
    tmem_context *ctx;
    tmem_gpu *gpu;
    tmem_type *type;
    tmem_heap *heap;            /* every buffer: one chunk's heap */
    tmrt_vk *vk;
    tmrt_vk_rec *rec;
    bool quick;
} bench;

typedef struct dbuf {
    uint64_t offset;
    VkBuffer vb;
    tmrt_vk_buf b;
    void *host;
} dbuf;

static bool dbuf_new(bench *B, uint64_t bytes, dbuf *out) {
    memset(out, 0, sizeof *out);
    uint64_t size = (bytes + 65535) & ~65535ull;
    tmem_alloc_desc ad = {0};
    ad.size = size;
    ad.alignment = 256;
    tmem_alloc_info ai;
    tmem_device_span sp = {0};
    tmem_status st = tmem_heap_alloc_ex(B->heap, &ad, &ai);
    bool allocated = st == TMEM_OK;
    if (st == TMEM_OK) st = tmem_heap_device_span(B->heap, ai.offset, size, &sp);
    if (st == TMEM_OK)
        st = tmem_vk_buffer_create(B->gpu, B->heap, ai.offset, size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, &out->vb);
    if (st != TMEM_OK || !sp.host) {
        fprintf(stderr, "buffer of %llu bytes: %s\n", (unsigned long long)bytes, tmem_status_name(st));
        if (out->vb) tmem_vk_buffer_destroy(B->gpu, out->vb);
        if (allocated && tmem_heap_free_offset(B->heap, ai.offset) != TMEM_OK) fprintf(stderr, "free failed\n");
        memset(out, 0, sizeof *out);
        return false;
    }
    out->offset = ai.offset;
    out->b = (tmrt_vk_buf){out->vb, 0, size};
    out->host = sp.host;
    return true;
}

static void dbuf_free(bench *B, dbuf *d) {
    if (d->vb) {
        tmem_vk_buffer_destroy(B->gpu, d->vb);
        if (tmem_heap_free_offset(B->heap, d->offset) != TMEM_OK) fprintf(stderr, "free failed\n");
    }
    memset(d, 0, sizeof *d);
}

/* Random bytes, fast (xorshift64), in 8-byte steps. */
static void fill_random(void *p, uint64_t bytes, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1, *w = p;
    for (uint64_t i = 0; i < bytes / 8; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        w[i] = s & 0x3BFF3BFF3BFF3BFFull; /* f16 / bf16 halves and f32 words stay finite and small */
    }
}

/* Small floats in [0, 1) for x. */
static void fill_x(float *x, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
}

typedef void (*record_fn)(bench *B, void *arg);

/* Seconds per op: R recordings of fn separated by barriers, timed. */
static double time_op(bench *B, record_fn fn, void *arg, uint32_t R) {
    double ns[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) { /* the first pass warms up (pipelines, clocks) */
        if (tmrt__vk_begin(B->rec) != TMEM_OK) return -1;
        tmrt__vk_timestamp(B->rec, 0);
        for (uint32_t i = 0; i < R; i++) {
            fn(B, arg);
            tmrt__vk_barrier(B->rec);
        }
        tmrt__vk_timestamp(B->rec, 1);
        if (tmrt__vk_run(B->rec) != TMEM_OK || tmrt__vk_timestamps(B->rec, ns, 2) != TMEM_OK) {
            fprintf(stderr, "run: %s\n", tmrt__vk_rec_error(B->rec));
            return -1;
        }
    }
    return ns[1] * 1e-9 / R;
}

typedef struct shape {
    const char *name;
    uint32_t n_in, n_out, count; /* count: matrices of this shape in the 0.8B's 24 layers */
} shape;

static const shape k_shapes[] = {
    {"attn_q+gate", 1024, 4096, 6}, {"attn_k/v", 1024, 512, 12}, {"attn_out", 2048, 1024, 6},
    {"dn_qkv", 1024, 6144, 18},     {"dn_z", 1024, 2048, 18},    {"dn_out", 2048, 1024, 18},
    {"ffn_gate/up", 1024, 3584, 48}, {"ffn_down", 3584, 1024, 24}, {"lm_head", 1024, 248320, 1}};
static const shape k_quick[] = {{"ffn_up", 256, 64, 1}};

typedef struct mm_arg {
    tmrt_vk_matmul m;
} mm_arg;

static void rec_matmul(bench *B, void *arg) { tmrt__vk_matmul(B->rec, &((mm_arg *)arg)->m); }

static const char *tname(uint32_t t) {
    switch (t) {
    case TMEM_GGML_F32: return "f32";
    case TMEM_GGML_F16: return "f16";
    case TMEM_GGML_BF16: return "bf16";
    case TMEM_GGML_Q8_0: return "q8_0";
    case TMEM_GGML_Q4_K: return "q4_K";
    default: return "q6_K";
    }
}

/* One matmul shape at n_tok tokens: seconds per op (or < 0). */
static double bench_matmul(bench *B, uint32_t type, const shape *s, uint32_t n_tok, dbuf *w, dbuf *x, dbuf *y) {
    uint64_t rb = tmrt__vk_row_bytes(type, s->n_in);
    mm_arg a = {{{{w->vb, 0, (uint64_t)s->n_out * rb}, type, s->n_in, s->n_out, rb},
                 x->b, y->b, {0}, 0, 0, n_tok, 0, NULL}};
    uint64_t bytes = (uint64_t)s->n_out * rb;
    uint32_t R = bytes * n_tok > (1u << 28) ? 10 : (bytes > (1u << 24) ? 40 : 200);
    if (B->quick) R = 2;
    return time_op(B, rec_matmul, &a, R);
}

static void report(const char *what, uint32_t type, const shape *s, uint32_t n_tok, double sec) {
    uint64_t bytes = (uint64_t)s->n_out * tmrt__vk_row_bytes(type, s->n_in);
    double flop = 2.0 * s->n_in * s->n_out * n_tok;
    printf("%-7s %-5s %-12s %6u x %-6u tok %3u: %9.2f us  %7.1f GB/s  %8.1f GFLOP/s\n", what, tname(type), s->name,
           s->n_out, s->n_in, n_tok, sec * 1e6, bytes / sec * 1e-9, flop / sec * 1e-9);
}

/* Every shape of one type, decode (1 token) and prefill (512); the model's
 * matmul time per decode token and per 512-token prefill. */
static void bench_type(bench *B, uint32_t type) {
    const shape *sh = B->quick ? k_quick : k_shapes;
    size_t ns = B->quick ? 1 : sizeof k_shapes / sizeof k_shapes[0];
    uint32_t prefill = B->quick ? 9 : 512;
    dbuf x, y;
    if (!dbuf_new(B, (uint64_t)prefill * 3584 * 4, &x) || !dbuf_new(B, (uint64_t)prefill * 6144 * 4 + (1u << 20), &y))
        return;
    fill_x(x.host, (uint64_t)prefill * 3584);
    double decode = 0, pre = 0;
    for (size_t i = 0; i < ns; i++) {
        const shape *s = &sh[i];
        if (!tmrt__vk_type_supported(type, s->n_in)) continue;
        dbuf w;
        uint64_t bytes = (uint64_t)s->n_out * tmrt__vk_row_bytes(type, s->n_in);
        if (!dbuf_new(B, bytes + 64, &w)) continue;
        fill_random(w.host, bytes, i + 1);
        double t1 = bench_matmul(B, type, s, 1, &w, &x, &y);
        if (t1 > 0) report("decode", type, s, 1, t1), decode += s->count * t1;
        bool lm = s->n_out > 100000;
        double tp = lm ? t1 : bench_matmul(B, type, s, prefill, &w, &x, &y);
        if (tp > 0 && !lm) report("prefill", type, s, prefill, tp);
        if (tp > 0) pre += s->count * tp;
        dbuf_free(B, &w);
    }
    if (!B->quick)
        printf("model   %-5s matmuls of one decode token %.3f ms (<= %.0f tok/s); of a 512-token prefill %.2f ms "
               "(<= %.0f tok/s)\n",
               tname(type), decode * 1e3, 1 / decode, pre * 1e3, 512 / pre);
    dbuf_free(B, &x), dbuf_free(B, &y);
}

/* The mat-mat tiles (specialisation constants 1, 2) on two prefill shapes
 * at 512 tokens. idx: the type's place among the six kernels of a family. */
static void tune_matmat(bench *B, uint32_t type, uint32_t idx) {
    static const uint32_t cfg[][3] = {{256, 64, 64}, {256, 128, 64}, {256, 64, 128}, {256, 128, 128}};
    const shape *sh[2] = {&k_shapes[6], &k_shapes[7]};
    tmrt_vk_kernel k = (tmrt_vk_kernel)(TMRT_VK_K_MATMAT_F32 + idx);
    dbuf x, y;
    if (!dbuf_new(B, 3584ull * 4 * 512, &x) || !dbuf_new(B, 3584ull * 4 * 512, &y)) return;
    fill_x(x.host, 3584ull * 512);
    for (int s = 0; s < 2; s++) {
        dbuf w;
        uint64_t bytes = (uint64_t)sh[s]->n_out * tmrt__vk_row_bytes(type, sh[s]->n_in);
        if (!dbuf_new(B, bytes + 64, &w)) continue;
        fill_random(w.host, bytes, 9);
        for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
            if (tmrt__vk_tune(B->vk, k, cfg[c], 3) != TMEM_OK) continue;
            double t = bench_matmul(B, type, sh[s], 512, &w, &x, &y);
            printf("tune    %-5s %-12s tile %3u x %-3u tok 512: %9.2f us  %8.1f GFLOP/s\n", tname(type), sh[s]->name,
                   cfg[c][1], cfg[c][2], t * 1e6, 2.0 * sh[s]->n_in * sh[s]->n_out * 512 / t * 1e-9);
        }
        (void)tmrt__vk_tune(B->vk, k, NULL, 0);
        dbuf_free(B, &w);
    }
    dbuf_free(B, &x), dbuf_free(B, &y);
}

/* The mat-vec specialisation constants (workgroup size, rows a workgroup)
 * on two decode shapes: the best first. */
static void tune(bench *B, uint32_t type) {
    static const uint32_t cfg[][2] = {{32, 1}, {32, 2}, {32, 4}, {64, 1}, {64, 2}, {64, 4}, {128, 1}, {128, 2}};
    const shape *sh[2] = {&k_shapes[6], &k_shapes[8]};
    static const uint32_t order[] = {TMEM_GGML_F32, TMEM_GGML_F16, TMEM_GGML_BF16,
                                     TMEM_GGML_Q8_0, TMEM_GGML_Q4_K, TMEM_GGML_Q6_K};
    uint32_t idx = 0;
    while (idx < 5 && order[idx] != type) idx++;
    tmrt_vk_kernel k = (tmrt_vk_kernel)(TMRT_VK_K_MATVEC_F32 + idx); /* vk_kernels.h: the six in this order */
    dbuf x, y;
    if (!dbuf_new(B, 3584 * 4 * 8, &x) || !dbuf_new(B, 248320 * 4 * 8, &y)) return;
    fill_x(x.host, 3584 * 8);
    for (int s = 0; s < 2; s++) {
        dbuf w;
        uint64_t bytes = (uint64_t)sh[s]->n_out * tmrt__vk_row_bytes(type, sh[s]->n_in);
        if (!dbuf_new(B, bytes + 64, &w)) continue;
        fill_random(w.host, bytes, 7);
        for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
            if (tmrt__vk_tune(B->vk, k, cfg[c], 2) != TMEM_OK) continue;
            double t = bench_matmul(B, type, sh[s], 1, &w, &x, &y);
            printf("tune    %-5s %-12s WG %3u ROWS %u: %9.2f us  %7.1f GB/s\n", tname(type), sh[s]->name, cfg[c][0],
                   cfg[c][1], t * 1e6, bytes / t * 1e-9);
        }
        (void)tmrt__vk_tune(B->vk, k, NULL, 0);
        dbuf_free(B, &w);
    }
    dbuf_free(B, &x), dbuf_free(B, &y);
    tune_matmat(B, type, idx);
}

/* Attention of one token over 4096 cached slots (the 0.8B's 8 / 2 heads of
 * 256, f16 rows, blocks of 16), and a 512-token prefill chunk; the DeltaNet
 * (16 heads, 128 x 128 states) recurrent at 1 token and chunked at 512. */
typedef struct at_arg {
    tmrt_vk_attention a;
} at_arg;
static void rec_attention(bench *B, void *arg) { tmrt__vk_attention(B->rec, &((at_arg *)arg)->a); }
typedef struct dn_arg {
    tmrt_vk_deltanet d;
} dn_arg;
static void rec_deltanet(bench *B, void *arg) { tmrt__vk_deltanet(B->rec, &((dn_arg *)arg)->d); }

static void bench_mixers(bench *B) {
    uint32_t ctx = B->quick ? 32 : 4096, bt = 16, H = 8, Hkv = 2, hd = 256, row = Hkv * hd * 2;
    uint32_t nb = ctx / bt + 1, block = 6 * 2 * bt * row, pre = B->quick ? 9 : 512;
    dbuf pool, table, q, out, scr, st;
    uint32_t splits = tmrt__vk_attention_splits(ctx, 1);
    if (!dbuf_new(B, (uint64_t)nb * block, &pool) || !dbuf_new(B, nb * 4, &table) ||
        !dbuf_new(B, (uint64_t)pre * 2 * H * hd * 4, &q) || !dbuf_new(B, (uint64_t)pre * H * hd * 4, &out) ||
        !dbuf_new(B, tmrt__vk_attention_scratch_bytes(1, H, hd, splits) + 16, &scr) || !dbuf_new(B, 16, &st))
        return;
    for (uint32_t i = 0; i < nb; i++) ((uint32_t *)table.host)[i] = i;
    fill_random(pool.host, (uint64_t)nb * block, 3);
    fill_x(q.host, (uint64_t)pre * 2 * H * hd);
    tmrt_vk_kv kv = {{pool.b}, 1, nb, table.b, bt, row, block, false};
    at_arg a = {{kv, q.b, out.b, {q.vb, hd * 4, q.b.range - hd * 4}, scr.b, {0}, 0, 1, H, Hkv, hd, ctx - 1, splits,
                 2 * H * hd, 2 * hd, 0, 0, 2 * H * hd, 2 * hd, 0}};
    double t = time_op(B, rec_attention, &a, B->quick ? 2 : 50);
    printf("attn    decode at %u slots (%u splits): %9.2f us, %.1f GB/s of K/V\n", ctx, splits, t * 1e6,
           2.0 * ctx * Hkv * hd * 2 / t * 1e-9);
    a.a.n_tok = pre, a.a.n_past = 0, a.a.n_split = 1;
    t = time_op(B, rec_attention, &a, B->quick ? 2 : 10);
    printf("attn    prefill of %u tokens: %9.2f us\n", pre, t * 1e6);
    /* DeltaNet */
    uint32_t dk = 128, dv = 128, Hv = 16, G = 16, C = 2 * G * dk + Hv * dv;
    dbuf x, gb, sb, ob, sc;
    if (!dbuf_new(B, (uint64_t)pre * C * 4, &x) || !dbuf_new(B, (uint64_t)pre * Hv * 8, &gb) ||
        !dbuf_new(B, (uint64_t)Hv * dv * dk * 4, &sb) || !dbuf_new(B, (uint64_t)pre * Hv * dv * 4, &ob) ||
        !dbuf_new(B, tmrt__vk_deltanet_scratch_bytes(pre, dk, dv, Hv), &sc))
        return;
    fill_x(x.host, (uint64_t)pre * C);
    memset(gb.host, 0, (uint64_t)pre * Hv * 8);
    memset(sb.host, 0, (uint64_t)Hv * dv * dk * 4);
    uint64_t qk = (uint64_t)G * dk * 4;
    dn_arg d = {0};
    d.d.q = x.b, d.d.k = (tmrt_vk_buf){x.vb, qk, x.b.range - qk};
    d.d.v = (tmrt_vk_buf){x.vb, 2 * qk, x.b.range - 2 * qk};
    d.d.gate = gb.b, d.d.beta = (tmrt_vk_buf){gb.vb, (uint64_t)pre * Hv * 4, (uint64_t)pre * Hv * 4};
    d.d.state = sb.b, d.d.out = ob.b, d.d.scratch = sc.b, d.d.n_tok = 1, d.d.dk = dk, d.d.dv = dv, d.d.n_k_heads = G;
    d.d.n_v_heads = Hv, d.d.qk_ts = d.d.v_ts = C, d.d.o_ts = Hv * dv;
    d.d.l2 = true, d.d.l2_eps = 1e-6f, d.d.q_scale = 0.0884f; /* the decode form: the q/k norm fused */
    t = time_op(B, rec_deltanet, &d, B->quick ? 2 : 50);
    printf("deltanet recurrent (q/k norm fused), 1 token: %9.2f us (%.1f GB/s of state read and written)\n", t * 1e6,
           2.0 * Hv * dv * dk * 4 / t * 1e-9);
    d.d.n_tok = pre, d.d.chunked = true, d.d.l2 = false;
    t = time_op(B, rec_deltanet, &d, B->quick ? 2 : 10);
    printf("deltanet chunked, %u tokens: %9.2f us\n", pre, t * 1e6);
    dbuf_free(B, &x), dbuf_free(B, &gb), dbuf_free(B, &sb), dbuf_free(B, &ob), dbuf_free(B, &sc);
    dbuf_free(B, &pool), dbuf_free(B, &table), dbuf_free(B, &q), dbuf_free(B, &out), dbuf_free(B, &scr);
    dbuf_free(B, &st);
}

static uint32_t parse_type(const char *s) {
    static const uint32_t all[] = {TMEM_GGML_F32, TMEM_GGML_F16, TMEM_GGML_BF16,
                                   TMEM_GGML_Q8_0, TMEM_GGML_Q4_K, TMEM_GGML_Q6_K};
    for (int i = 0; i < 6; i++)
        if (!strcmp(s, tname(all[i]))) return all[i];
    return UINT32_MAX;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a timeout's kill */
    bench B = {0};
    bool do_tune = false;
    const char *types = "f32,f16,bf16,q8_0,q4_K,q6_K";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) B.quick = true;
        else if (!strcmp(argv[i], "--tune")) do_tune = true;
        else if (!strcmp(argv[i], "--types") && i + 1 < argc) types = argv[++i];
        else return fprintf(stderr, "usage: bench_vk_ops [--quick] [--tune] [--types f16,q4_K,...]\n"), 2;
    }
    tmem_context_desc cd = {0};
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_gpu_desc gd = {0};
    gd.chunk_size = B.quick ? 256ull << 20 : 2ull << 30;
    tmem_type_desc td = {0};
    td.name = "/memory/bench";
    td.placement = TMEM_PLACEMENT_DEVICE_HOST_VISIBLE;
    td.reserve = gd.chunk_size;
    char err[256] = "";
    if (tmem_context_create(&cd, &B.ctx) != TMEM_OK || tmem_gpu_attach(B.ctx, &gd, &B.gpu) != TMEM_OK) {
        printf("SKIP: no Vulkan device\n");
        return 77;
    }
    tmem_heap_desc hd = {0};
    hd.size = gd.chunk_size;
    if (tmem_type_create(B.ctx, &td, &B.type) != TMEM_OK || (hd.type = B.type, 0) ||
        tmem_heap_create(B.ctx, &hd, &B.heap) != TMEM_OK || tmrt__vk_create(B.gpu, NULL, &B.vk, err, sizeof err) ||
        tmrt__vk_rec_create(B.vk, &(tmrt_vk_rec_desc){.max_dispatches = 4096, .max_timestamps = 2}, &B.rec)) {
        printf("setup failed: %s\n", err);
        return 1;
    }
    const tmrt_vk_limits *l = tmrt__vk_limits(B.vk);
    tmem_device_memory_info mi;
    if (tmem_type_device_info(B.type, &mi) == TMEM_OK)
        printf("device %s: subgroup %u (%s), 16-bit storage %s; weights in memory type %u (flags 0x%x)\n", l->device,
               l->subgroup_size, l->subgroup ? "used" : "not used", l->storage16 ? "used" : "not used",
               mi.memory_type, mi.property_flags);
    char list[128];
    snprintf(list, sizeof list, "%s", types);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        uint32_t t = parse_type(tok);
        if (t == UINT32_MAX) return fprintf(stderr, "unknown type %s\n", tok), 2;
        bench_type(&B, t);
        if (do_tune && !B.quick) tune(&B, t);
    }
    bench_mixers(&B);
    tmrt__vk_rec_destroy(B.rec);
    tmrt__vk_destroy(B.vk);
    tmem_heap_destroy(B.heap);
    tmem_gpu_release(B.gpu);
    tmem_context_destroy(B.ctx);
    return 0;
}

/* tmem bench kv [--json] [--seed N] [--seqs N] [--max-ctx N]
 *
 * Paged KV cache vs one contiguous max-length buffer per sequence, on the
 * same random mix of sequence lengths and forks (fixed seed), in one run:
 * bytes allocated vs bytes holding tokens, and the memory copy-on-write
 * forks save. The paged figures are read from the cache and the KV type's
 * pool (what the budget is charged), not computed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench/bench.h"
#include "cli/cli.h"
#include "typedmem/typedmem.h"
#include "typedmem/kv.h"

typedef struct rng { uint64_t s; } rng;
static uint64_t next(rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint32_t range(rng *r, uint32_t lo, uint32_t hi) { return lo + (uint32_t)(next(r) % (uint64_t)(hi - lo + 1)); }

/* A prompt length from a chat-like mix: half short, a third medium, the rest long. */
static uint32_t prompt_len(rng *r, uint32_t max_ctx) {
    uint32_t p = range(r, 0, 99);
    if (p < 50) return range(r, 16, max_ctx / 8);
    if (p < 85) return range(r, max_ctx / 8, max_ctx / 2);
    return range(r, max_ctx / 2, max_ctx - max_ctx / 8);
}

typedef struct run {
    uint32_t seqs, forks, max_ctx;
    uint64_t token_bytes, block_bytes;
    uint64_t tokens;                 /* sum of sequence lengths (logical) */
    tmem_kv_cache_stats st;
    uint64_t committed;              /* KV type's pool commit */
    double seconds;
    double lookup_ns, flat_ns;       /* one K/V row lookup: the cache vs base + offset */
} run;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Row lookups: tmem_kv_seq_kv (handle check, lock, block table) against the
 * contiguous layout's base[seq] + token x row arithmetic, same random
 * (sequence, layer, token) stream. Context for the memory figures: what the
 * paging costs per access when a kernel does not use the block table. */
#define LOOKUPS 2000000u
static volatile uintptr_t sink;

static void time_lookups(tmem_kv_cache *c, const tmem_kv_seq *live, const uint32_t *len, uint32_t nseq,
                         uint64_t token_bytes, uint64_t seed, run *out) {
    rng r = {seed ^ 0x5eedu};
    uint32_t *q = malloc((size_t)LOOKUPS * 3 * sizeof *q);
    if (!q) return;
    for (uint32_t i = 0; i < LOOKUPS; i++) {
        uint32_t s = range(&r, 0, nseq - 1);
        q[3 * i] = s;
        q[3 * i + 1] = range(&r, 0, 5);
        q[3 * i + 2] = len[s] ? range(&r, 0, len[s] - 1) : 0;
    }
    uintptr_t acc = 0;
    double t0 = now();
    for (uint32_t i = 0; i < LOOKUPS; i++) {
        void *k;
        if (tmem_kv_seq_kv(c, live[q[3 * i]], q[3 * i + 1], q[3 * i + 2], 0, &k, NULL) == TMEM_OK) acc += (uintptr_t)k;
    }
    double t1 = now();
    /* the flat baseline: a max-length buffer per sequence, K then V per layer */
    for (uint32_t i = 0; i < LOOKUPS; i++) {
        uint32_t s = q[3 * i];
        uintptr_t row = (uintptr_t)q[3 * i + 1] * out->max_ctx * 2 + q[3 * i + 2];
        acc += (uintptr_t)0x10000 * s + row * (token_bytes / (2 * 6)); /* row of 6 layers x K,V */
    }
    double t2 = now();
    sink = acc;
    out->lookup_ns = (t1 - t0) * 1e9 / LOOKUPS;
    out->flat_ns = (t2 - t1) * 1e9 / LOOKUPS;
    free(q);
}

static int workload(uint64_t seed, uint32_t nseq, uint32_t max_ctx, run *out) {
    memset(out, 0, sizeof *out);
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 30; /* accounting only: the bench measures, it does not squeeze */
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_context *ctx;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return 1;
    tmem_type_desc td = {0};
    td.name = "/memory/kv";
    td.placement = TMEM_PLACEMENT_HOST;
    td.lifetime = TMEM_LIFETIME_GROWING;
    td.reserve = 32ull << 30;
    tmem_type *kvt;
    tmem_kv_cache *c = NULL;
    tmem_kv_cache_desc d = {0};
    /* Qwen3.5-0.8B: 6 full-attention layers, 2 KV heads of 256, f16 */
    d.kv = (tmem_kv_layout){6, 2, 256, TMEM_KV_DTYPE_F16, 16};
    d.kv_pool_bytes = 32ull << 30;
    d.max_sequences = nseq;
    d.flags = TMEM_KV_CACHE_NO_RECLAIM;
    int rc = 1;
    if (tmem_type_create(ctx, &td, &kvt) != TMEM_OK || tmem_kv_cache_create(ctx, &d, &c) != TMEM_OK) goto out;
    if (tmem_kv_layout_token_bytes(&d.kv, &out->token_bytes) != TMEM_OK ||
        tmem_kv_layout_block_bytes(&d.kv, &out->block_bytes) != TMEM_OK) goto out;
    rng r = {seed};
    tmem_kv_seq *live = calloc(nseq, sizeof *live);
    uint32_t *len = calloc(nseq, sizeof *len);
    if (!live || !len) goto out_free;
    double t0 = now();
    for (uint32_t i = 0; i < nseq; i++) {
        /* 30% of requests fork a live sequence (parallel sampling / a shared
         * system prompt); the rest start fresh with a prompt */
        if (i && range(&r, 0, 99) < 30) {
            uint32_t p = range(&r, 0, i - 1);
            if (tmem_kv_seq_fork(c, live[p], &live[i]) != TMEM_OK) goto out_free;
            len[i] = len[p];
            out->forks++;
        } else {
            uint32_t n = prompt_len(&r, max_ctx);
            if (tmem_kv_seq_create(c, &live[i]) != TMEM_OK ||
                tmem_kv_seq_append(c, live[i], n) != TMEM_OK)
                goto out_free;
            len[i] = n;
        }
        /* decode: a few chunks of generated tokens, each written (a write
         * into a block shared by a fork copies it first) */
        uint32_t gen = range(&r, 16, 512);
        if (len[i] + gen > max_ctx) gen = max_ctx - len[i];
        while (gen) {
            uint32_t step = gen < 32 ? gen : range(&r, 1, 32);
            if (tmem_kv_seq_append(c, live[i], step) != TMEM_OK) goto out_free;
            void *k, *v;
            if (tmem_kv_seq_kv(c, live[i], 0, len[i], TMEM_KV_WRITE, &k, &v) != TMEM_OK) goto out_free;
            memset(k, 1, 2 * 256 * 2);
            len[i] += step;
            gen -= step;
        }
    }
    out->seconds = now() - t0;
    for (uint32_t i = 0; i < nseq; i++) out->tokens += len[i];
    out->seqs = nseq;
    out->max_ctx = max_ctx;
    tmem_type_stats ts;
    if (tmem_kv_cache_get_stats(c, &out->st) != TMEM_OK || tmem_type_get_stats(kvt, &ts) != TMEM_OK) goto out_free;
    out->committed = ts.committed.current;
    time_lookups(c, live, len, nseq, out->token_bytes, seed, out);
    rc = 0;
out_free:
    free(live);
    free(len);
out:
    tmem_kv_cache_destroy(c);
    tmem_context_destroy(ctx);
    return rc;
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }
static double pct(uint64_t waste, uint64_t of) { return of ? 100.0 * (double)waste / (double)of : 0.0; }

int tmem_bench_kv(int argc, char **argv, bool json) {
    uint64_t seed = 1;
    uint32_t nseq = 64, max_ctx = 4096;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *cmd = "tmem bench kv";
        if (!strcmp(a, "--seed")) { if (!tmem_cli_value_u64(cmd, a, v, 0, UINT64_MAX, &seed)) return 2; i++; }
        else if (!strcmp(a, "--seqs")) { if (!tmem_cli_value_u32(cmd, a, v, 1, 100000, &nseq)) return 2; i++; }
        else if (!strcmp(a, "--max-ctx")) { if (!tmem_cli_value_u32(cmd, a, v, 64, 1u << 20, &max_ctx)) return 2; i++; }
        else if (strcmp(a, "--json")) {
            fprintf(stderr, "usage: tmem bench kv [--json] [--seed N] [--seqs N] [--max-ctx N]\n");
            return 2;
        }
    }
    if (nseq < 1 || nseq > 100000 || max_ctx < 64 || max_ctx > (1u << 20)) {
        fprintf(stderr, "tmem bench kv: --seqs 1..100000, --max-ctx 64..1048576\n");
        return 2;
    }
    run r;
    if (workload(seed, nseq, max_ctx, &r)) {
        fprintf(stderr, "tmem bench kv: the paged run failed\n");
        return 1;
    }
    /* paged: blocks held vs bytes holding distinct tokens (a shared prefix once) */
    uint64_t p_alloc = r.st.kv_bytes_allocated, p_used = r.st.kv_bytes_used;
    /* contiguous baseline, same sequences: each owns a max-context buffer and
     * its own copy of any forked prefix (no sharing) */
    uint64_t c_alloc = (uint64_t)r.seqs * r.max_ctx * r.token_bytes, c_used = r.tokens * r.token_bytes;
    /* what the sharing saves: bytes the sequences would hold without it */
    uint64_t logical = r.st.kv_bytes_logical, saved = logical > p_alloc ? logical - p_alloc : 0;
    double p_waste = pct(p_alloc - p_used, p_alloc), c_waste = pct(c_alloc - c_used, c_alloc);
    double commit_over = pct(r.committed > p_alloc ? r.committed - p_alloc : 0, r.committed);
    if (json) {
        printf("{\"bench\":\"kv\",\"seed\":%llu,\"sequences\":%u,\"forks\":%u,\"max_ctx\":%u,"
               "\"token_bytes\":%llu,\"block_bytes\":%llu,\"tokens\":%llu,"
               "\"paged\":{\"allocated\":%llu,\"used\":%llu,\"waste_pct\":%.3f,\"committed\":%llu,"
               "\"blocks\":%llu,\"blocks_shared\":%llu,\"cow_copies\":%llu,\"seconds\":%.6f,"
               "\"lookup_ns\":%.2f},"
               "\"contiguous\":{\"allocated\":%llu,\"used\":%llu,\"waste_pct\":%.3f,"
               "\"lookup_ns\":%.2f},"
               "\"paged_vs_contiguous\":%.4f,"
               "\"cow\":{\"logical\":%llu,\"held\":%llu,\"saved\":%llu,\"saved_pct\":%.3f},"
               "\"target_waste_pct\":4.0,\"met\":%s}\n",
               (unsigned long long)seed, r.seqs, r.forks, r.max_ctx,
               (unsigned long long)r.token_bytes, (unsigned long long)r.block_bytes,
               (unsigned long long)r.tokens, (unsigned long long)p_alloc,
               (unsigned long long)p_used, p_waste, (unsigned long long)r.committed,
               (unsigned long long)r.st.blocks_used, (unsigned long long)r.st.blocks_shared,
               (unsigned long long)r.st.cow_copies, r.seconds, r.lookup_ns,
               (unsigned long long)c_alloc, (unsigned long long)c_used, c_waste, r.flat_ns,
               (double)p_alloc / (double)c_alloc, (unsigned long long)logical,
               (unsigned long long)p_alloc, (unsigned long long)saved, pct(saved, logical),
               p_waste < 4.0 ? "true" : "false");
        return 0;
    }
    printf("kv bench: Qwen3.5-0.8B KV (6 attention layers, 2 KV heads x 256, f16: %llu B/token), "
           "%llu-token blocks (%llu B), max context %u\n",
           (unsigned long long)r.token_bytes, (unsigned long long)(r.block_bytes / r.token_bytes),
           (unsigned long long)r.block_bytes, r.max_ctx);
    printf("workload: %u sequences (%u forks), %llu tokens in all, seed %llu\n\n", r.seqs, r.forks,
           (unsigned long long)r.tokens, (unsigned long long)seed);
    printf("%-28s %12s %12s %8s\n", "", "allocated", "used", "waste");
    printf("%-28s %8.1f MiB %8.1f MiB %7.2f%%\n", "paged (typedmem)", mib(p_alloc), mib(p_used), p_waste);
    printf("%-28s %8.1f MiB %8.1f MiB %7.2f%%\n", "contiguous, max length", mib(c_alloc), mib(c_used), c_waste);
    printf("\npaged / contiguous allocated: %.3fx  (target: paged waste < 4%%: %s)\n",
           (double)p_alloc / (double)c_alloc, p_waste < 4.0 ? "met" : "NOT met");
    printf("copy-on-write forks: %.1f MiB logical, %.1f MiB held, %.1f MiB saved (%.1f%%); "
           "%llu blocks shared, %llu copied on write\n",
           mib(logical), mib(p_alloc), mib(saved), pct(saved, logical),
           (unsigned long long)r.st.blocks_shared, (unsigned long long)r.st.cow_copies);
    printf("KV pool committed: %.1f MiB (%.2f%% above the blocks: pool granules)\n", mib(r.committed), commit_over);
    printf("row lookup: %.1f ns through tmem_kv_seq_kv vs %.1f ns base + offset "
           "(%.0fx; kernels should walk the block table)\n",
           r.lookup_ns, r.flat_ns, r.flat_ns > 0 ? r.lookup_ns / r.flat_ns : 0.0);
    printf("time: %.3f s for the whole mix (context only)\n", r.seconds);
    printf("\nreproduce: tmem bench kv --seed %llu --seqs %u --max-ctx %u\n",
           (unsigned long long)seed, r.seqs, r.max_ctx);
    return 0;
}

/* tmem bench run: the reference runtime on the Qwen3.5-0.8B shape (random
 * F16 weights from `tmem gen`, cached), ctx 4096, a 512-token prompt, 32
 * generated tokens, 2 threads: typed memory vs the naive malloc twin, each
 * in its own process (`tmem run --json`), so the OS figures are each run's
 * own. Reports peak Private_Dirty and RSS, prefill and decode tok/s, the fit
 * prediction vs the OS peak, the bytes a decoded token reads and the GB/s
 * that makes against the best streaming read of this machine, measured in
 * the same run (bench_read.c: 8 streams per thread, as bench kern's
 * baseline; before and after the two runs, the better kept), so decode is
 * also given as a fraction of the bandwidth bound (read GB/s / bytes per
 * token). --dtype q8_0 runs the same shape with Q8_0 weights (half the bytes
 * per decoded token); --model runs any file.
 *
 * With --peer llama.cpp=BUILD_DIR the peer runs in the same bench run on the
 * same file: llama-bench `-p PROMPT -n 0` and `-p 0 -n N -d PROMPT` (the same
 * prefill and the same decode depth as ours), one repetition each, interleaved
 * with the typed run --reps times (A B A B ...), the best of each side kept,
 * so a load that comes and goes hits both. Without --peer no peer runs, and
 * the bench says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/args.h"
#include "bench/bench.h"
#include "bench/bench_peer.h"
#include "bench/bench_read.h"
#include "run/model_cache.h"
#include "run/run_report.h"
#include "tmemrt/testing.h"

typedef struct run_figures {
    bool ok;
    double prefill_tok_s, decode_tok_s, os_vs_pred;
    double predicted, predicted_ctx, committed, dirty, rss, weights;
} run_figures;

static run_figures run_child(const char *exe, const char *model, const char *tokens, const char *memory,
                             unsigned threads, unsigned ctx, unsigned n_gen) {
    run_figures f = {0};
    static char cmd[1 << 16], out[1 << 16];
    snprintf(cmd, sizeof cmd, "'%s' run '%s' --tokens %s -n %u -t %u --ctx %u --memory %s --json", exe, model,
             tokens, n_gen, threads, ctx, memory);
    FILE *p = popen(cmd, "r");
    if (!p) return f;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    if (rc != 0 || !strstr(out, "\"prefill_tok_s\"")) {
        fprintf(stderr, "tmem bench run: the %s run failed (status %d)\n", memory, rc);
        return f;
    }
    f.ok = true;
    f.prefill_tok_s = run_report_json_num(out, "prefill_tok_s");
    f.decode_tok_s = run_report_json_num(out, "decode_tok_s");
    f.predicted = run_report_json_num(out, "predicted_dirty");
    f.predicted_ctx = run_report_json_num(out, "predicted_dirty_ctx");
    f.committed = run_report_json_num(out, "committed_dirty_peak");
    f.dirty = run_report_json_num(out, "os_private_dirty_peak");
    f.rss = run_report_json_num(out, "os_rss_peak");
    f.weights = run_report_json_num(out, "weights_bytes");
    f.os_vs_pred = run_report_json_num(out, "os_vs_predicted_pct");
    return f;
}

/* The best plain streaming read with `threads` threads over a buffer much
 * larger than the caches, in GB/s (0 if it could not run). */
static double stream_gbs(unsigned threads) {
    size_t bytes = (size_t)512 << 20;
    uint64_t *buf = aligned_alloc(4096, bytes);
    tmrt_testing_pool *pool = NULL;
    double best = 0;
    if (buf && tmrt_testing_pool_create((int)threads, &pool) == TMEM_OK) {
        for (size_t i = 0; i < bytes / 8; i++) buf[i] = i;
        best = bench_read_best_gbs(pool, buf, bytes, BENCH_READ_STREAMS, 5);
    }
    tmrt_testing_pool_destroy(pool);
    free(buf);
    return best;
}

/* the best (fastest) of two runs' speeds, the memory of the first */
static void keep_best(run_figures *best, const run_figures *r) {
    if (!best->ok) {
        *best = *r;
        return;
    }
    if (r->prefill_tok_s > best->prefill_tok_s) best->prefill_tok_s = r->prefill_tok_s;
    if (r->decode_tok_s > best->decode_tok_s) best->decode_tok_s = r->decode_tok_s;
}

typedef struct peer_figures {
    bool ran;
    double prefill_tok_s, decode_tok_s, peak_dirty; /* best of the reps; dirty: the largest seen */
} peer_figures;

static bool peer_rep(const bench_peer *peer, const char *model, unsigned threads, unsigned prompt,
                     unsigned n_gen, peer_figures *pf) {
    double pp = 0, tg = 0, d1 = 0, d2 = 0;
    if (!bench_peer_llama_bench(peer, model, threads, prompt, 0, 0, &pp, &d1) ||
        (n_gen && !bench_peer_llama_bench(peer, model, threads, 0, n_gen, prompt, &tg, &d2)))
        return false;
    pf->ran = true;
    if (pp > pf->prefill_tok_s) pf->prefill_tok_s = pp;
    if (tg > pf->decode_tok_s) pf->decode_tok_s = tg;
    if (d1 > pf->peak_dirty) pf->peak_dirty = d1;
    if (d2 > pf->peak_dirty) pf->peak_dirty = d2;
    return true;
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

int tmem_bench_run(int argc, char **argv, bool json) {
    unsigned threads = 2, ctx = 4096, prompt = 512, n_gen = 32, reps = 3;
    const char *model_arg = NULL, *dtype = "f16";
    bench_peer peer;
    bool have_peer = false;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--image")) return tmem_bench_run_image(argc, argv, json);
    for (int i = 1; i < argc; i++) {
        uint64_t v;
        if (!strcmp(argv[i], "--json")) continue;
        if (i + 1 < argc && !strcmp(argv[i], "--model")) model_arg = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--dtype") &&
                 (!strcmp(argv[i + 1], "f16") || !strcmp(argv[i + 1], "q8_0") || !strcmp(argv[i + 1], "bf16")))
            dtype = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--peer")) {
            if (!bench_peer_parse(argv[++i], &peer)) return 2;
            have_peer = true;
        } else if (i + 1 < argc && !strcmp(argv[i], "-t") && tmem_arg_u64(argv[i + 1], &v) && v && v <= 8)
            threads = (unsigned)v, i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--reps") && tmem_arg_u64(argv[i + 1], &v) && v && v <= 20)
            reps = (unsigned)v, i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--prompt") && tmem_arg_u64(argv[i + 1], &v) && v &&
                 v <= 4000)
            prompt = (unsigned)v, i++;
        else if (i + 1 < argc && !strcmp(argv[i], "-n") && tmem_arg_u64(argv[i + 1], &v) && v <= 64)
            n_gen = (unsigned)v, i++;
        else {
            fprintf(stderr, "usage: tmem bench run [--json] [--model GGUF | --dtype f16|bf16|q8_0] [-t THREADS] "
                            "[--prompt N] [-n N]\n"
                            "                      [--peer llama.cpp=BUILD_DIR] [--reps N]\n"
                            "       tmem bench run --image WxH [...]  (with an image;\n"
                            "       --image WxH --help lists its options)\n");
            return 2;
        }
    }
    if (!have_peer) reps = 1; /* best-of-N is for the A/B against the peer */
    char model[1024], exe[1024];
    if (model_arg) snprintf(model, sizeof model, "%s", model_arg);
    else if (!tmem_model_cache_ensure("qwen3.5-0.8b", dtype, model, sizeof model)) return 1;
    if (!tmem_self_exe(exe, sizeof exe)) return 1;
    /* the prompt: fixed token ids (the random model has no real vocabulary) */
    static char tokens[1 << 15];
    size_t at = 0;
    for (unsigned i = 0; i < prompt; i++)
        at += (size_t)snprintf(tokens + at, sizeof tokens - at, "%s%u", i ? "," : "", (i * 7919u + 11u) % 240000u);
    if (!json) {
        printf("tmem bench run: %s, ctx %u, %u-token prompt, %u generated, %u threads", model, ctx, prompt,
               n_gen, threads);
        if (have_peer) printf(", llama.cpp from %s, best of %u interleaved", peer.bin, reps);
        printf("\n");
        fflush(stdout);
    }
    char paths[256]; /* the children inherit TMRT_KERN_ISA: they take the paths this process would */
    tmrt_testing_kern_paths(paths, sizeof paths);
    double gbs = stream_gbs(threads);
    run_figures t = {0};
    peer_figures pf = {0};
    for (unsigned r = 0; r < reps; r++) { /* A B A B ...: the load hits both sides alike */
        run_figures tr = run_child(exe, model, tokens, "typed", threads, ctx, n_gen);
        if (!tr.ok) return 1;
        keep_best(&t, &tr);
        if (have_peer && !peer_rep(&peer, model, threads, prompt, n_gen, &pf)) return 1;
        if (!json && have_peer) {
            printf("  rep %u: typed prefill %.1f decode %.2f tok/s; llama.cpp best so far %.1f / %.2f\n", r + 1,
                   tr.prefill_tok_s, tr.decode_tok_s, pf.prefill_tok_s, pf.decode_tok_s);
            fflush(stdout);
        }
    }
    run_figures n = run_child(exe, model, tokens, "naive", threads, ctx, n_gen);
    if (!n.ok) return 1;
    double gbs_after = stream_gbs(threads); /* the load may have changed: the better read is the bound */
    if (gbs_after > gbs) gbs = gbs_after;
    const double M = 1048576.0;
    double bytes_tok = t.weights; /* every weight is read once per decoded token (the KV is << the weights) */
    double t_gbs = bytes_tok * t.decode_tok_s / 1e9, n_gbs = bytes_tok * n.decode_tok_s / 1e9;
    double bound = bytes_tok > 0 ? gbs * 1e9 / bytes_tok : 0; /* tok/s the read allows */
    double t_of = ratio(t.decode_tok_s, bound), n_of = ratio(n.decode_tok_s, bound);
    double pp_ratio = ratio(t.prefill_tok_s, pf.prefill_tok_s), tg_ratio = ratio(t.decode_tok_s, pf.decode_tok_s);
    if (json) {
        printf("{\"bench\": \"run\", \"model\": \"%s\", \"ctx\": %u, \"prompt\": %u, \"generated\": %u, "
               "\"threads\": %u, \"reps\": %u, \"kernels\": \"%s\", "
               "\"stream_read_gbs\": %.3f, \"bytes_per_token\": %.0f, \"decode_bound_tok_s\": %.3f, "
               "\"typed\": {\"private_dirty_peak\": %.0f, \"rss_peak\": %.0f, \"predicted_dirty\": %.0f, "
               "\"predicted_dirty_ctx\": %.0f, \"os_vs_predicted_pct\": %.3f, \"prefill_tok_s\": %.3f, "
               "\"decode_tok_s\": %.3f, \"decode_gbs\": %.3f, \"decode_of_bound\": %.3f}, "
               "\"naive\": {\"private_dirty_peak\": %.0f, \"rss_peak\": %.0f, \"prefill_tok_s\": %.3f, "
               "\"decode_tok_s\": %.3f, \"decode_gbs\": %.3f, \"decode_of_bound\": %.3f}, ",
               model, ctx, prompt, n_gen, threads, reps, paths, gbs, bytes_tok, bound, t.dirty, t.rss,
               t.predicted, t.predicted_ctx, t.os_vs_pred, t.prefill_tok_s, t.decode_tok_s, t_gbs, t_of,
               n.dirty, n.rss, n.prefill_tok_s, n.decode_tok_s, n_gbs, n_of);
        if (have_peer)
            printf("\"peer\": {\"name\": \"llama.cpp\", \"bin\": \"%s\", \"tool\": \"llama-bench\", "
                   "\"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, \"decode_of_bound\": %.3f, "
                   "\"private_dirty_peak_llama_bench\": %.0f, \"prefill_ratio\": %.4f, "
                   "\"decode_ratio\": %.4f}}\n",
                   peer.bin, pf.prefill_tok_s, pf.decode_tok_s, ratio(pf.decode_tok_s, bound), pf.peak_dirty,
                   pp_ratio, tg_ratio);
        else
            printf("\"peer\": null, \"peer_note\": \"no peer ran (--peer llama.cpp=BUILD_DIR)\"}\n");
        return 0;
    }
    printf("\n%-34s %12s %12s %11s %12s %10s\n", "", "typed", "naive", "naive/typed", "llama.cpp",
           "typed/llama");
    printf("%-34s %12.1f %12.1f %10.2fx %12s\n", "peak Private_Dirty (MiB)", t.dirty / M, n.dirty / M,
           n.dirty / t.dirty, "(below)");
    printf("%-34s %12.1f %12.1f %10.2fx\n", "peak RSS (MiB)", t.rss / M, n.rss / M, n.rss / t.rss);
    if (have_peer) {
        printf("%-34s %12.1f %12.1f %10.2fx %12.1f %9.2fx\n", "prefill (tok/s)", t.prefill_tok_s,
               n.prefill_tok_s, ratio(n.prefill_tok_s, t.prefill_tok_s), pf.prefill_tok_s, pp_ratio);
        printf("%-34s %12.2f %12.2f %10.2fx %12.2f %9.2fx\n", "decode (tok/s)", t.decode_tok_s,
               n.decode_tok_s, ratio(n.decode_tok_s, t.decode_tok_s), pf.decode_tok_s, tg_ratio);
    } else {
        printf("%-34s %12.1f %12.1f %10.2fx\n", "prefill (tok/s)", t.prefill_tok_s, n.prefill_tok_s,
               ratio(n.prefill_tok_s, t.prefill_tok_s));
        printf("%-34s %12.2f %12.2f %10.2fx\n", "decode (tok/s)", t.decode_tok_s, n.decode_tok_s,
               ratio(n.decode_tok_s, t.decode_tok_s));
    }
    printf("%-34s %12.2f %12.2f\n", "decode GB/s (weights per token)", t_gbs, n_gbs);
    printf("%-34s %11.0f%% %11.0f%%", "decode, of the bandwidth bound", 100 * t_of, 100 * n_of);
    if (have_peer) printf(" %11s %11.0f%%", "", 100 * ratio(pf.decode_tok_s, bound));
    printf("\n\nkernels: %s\n", paths);
    printf("bytes read per decoded token: %.1f MiB; best streaming read here: %.2f GB/s (%u threads, "
           "%d streams each) = a bound of %.2f tok/s\n", bytes_tok / M, gbs, threads, BENCH_READ_STREAMS,
           bound);
    printf("typed: fit predicted %.2f MiB for this run (%.2f MiB at ctx %u), OS peak %.2f MiB: %+.1f%%\n",
           t.predicted / M, t.predicted_ctx / M, ctx, t.dirty / M, t.os_vs_pred);
    if (have_peer)
        printf("llama.cpp: llama-bench -p %u -n 0 and -p 0 -n %u -d %u, -t %u -r 1, interleaved with the typed "
               "run %u times, best kept (ours too); llama-bench's peak Private_Dirty %.1f MiB (its context "
               "holds only its test's tokens)\n"
               "targets: prefill >= 1.0x llama.cpp %s, decode >= 1.0x llama.cpp %s\n",
               prompt, n_gen, prompt, threads, reps, pf.peak_dirty / M, pp_ratio >= 1 ? "met" : "NOT met",
               tg_ratio >= 1 ? "met" : "NOT met");
    else
        printf("no peer ran: pass --peer llama.cpp=BUILD_DIR to run llama.cpp's llama-bench on the same file in "
               "this run (docs/benchmarks.md says how to build it)\n");
    printf("targets: peak dirty <= 100 MiB %s, OS within 5%% of fit %s\n", t.dirty / M <= 100 ? "met" : "NOT met",
           t.os_vs_pred <= 5 && t.os_vs_pred >= -5 ? "met" : "NOT met");
    printf("(speeds depend on the machine's load: only the ratios of one run count)\n"
           "reproduce: tmem bench run%s%s%s -t %u --prompt %u -n %u%s%s\n", model_arg ? " --model " : "",
           model_arg ? model_arg : "", json ? " --json" : "", threads, prompt, n_gen,
           have_peer ? " --peer llama.cpp=" : "", have_peer ? peer.bin : "");
    return 0;
}

/* tmem bench serve: the runtime's server (tmemrt/server.h) in process on a
 * model (default: the cached Qwen3.5-0.8B shape, F16; --model FILE for
 * another, e.g. llama-quantize's Q4_K_M of it):
 *   - aggregate decode tok/s with 1, 4, 16 sessions generating at once (each
 *     step one batched forward pass) vs 1 session, same run;
 *   - dirty bytes per added active session, and per suspended one;
 *   - resume of a suspended conversation of --resume-tokens tokens vs
 *     recomputing its prompt (and the next logits compared bit for bit).
 * The figures are this process's committed bytes (the library's accounting:
 * what a footprint limit counts), the times wall clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <tmemrt/server.h>
#include <typedmem/system.h>
#include "bench/bench.h"
#include "bench/bench_serve.h"
#include "cli/args.h"
#include "run/model_cache.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t dirty(tmem_context *ctx) {
    tmem_budget_info bi;
    return tmem_context_budget(ctx, &bi) == TMEM_OK ? bi.committed - bi.committed_clean : 0;
}

typedef struct conc_fig {
    uint32_t sessions;
    double decode_tok_s, prefill_tok_s;
    double per_active, per_suspended; /* bytes */
    double os_dirty_peak;             /* this process's Private_Dirty peak during the level */
    serve_peer_fig peer;
    bool ok;
} conc_fig;

static void prompt_of(uint32_t i, uint32_t n, uint32_t vocab, int32_t *out) {
    for (uint32_t t = 0; t < n; t++) out[t] = (int32_t)((i * 7919u + t * 104729u + 11u) % vocab);
}

static tmrt_server *server(tmrt_model *m, uint32_t sessions, uint32_t n_ctx, uint32_t threads, const char *dir) {
    tmrt_server_desc d = {0};
    d.session.n_ctx = n_ctx;
    d.session.threads = threads;
    d.max_sessions = sessions;
    d.suspend_dir = dir;
    d.flags = TMRT_SERVER_NO_RECLAIM;
    tmrt_server *srv = NULL;
    tmrt_error e = {{0}};
    if (tmrt_server_create(m, &d, &srv, &e)) fprintf(stderr, "tmem bench serve: %s\n", e.message);
    return srv;
}

static conc_fig concurrency(tmem_context *ctx, tmrt_model *m, uint32_t n, uint32_t prompt, uint32_t gen,
                            uint32_t threads, const char *dir) {
    conc_fig f = {0};
    f.sessions = n;
    uint32_t vocab = tmrt_model_hparams(m)->n_vocab;
    tmrt_server *srv = server(m, n, prompt + gen + 16, threads, dir);
    if (!srv) return f;
    uint64_t base = dirty(ctx);
    uint32_t ids[TMRT_SERVER_MAX_SESSIONS];
    int32_t *p = malloc((size_t)prompt * sizeof *p);
    tmrt_error e = {{0}};
    bool ok = p != NULL;
    for (uint32_t i = 0; i < n && ok; i++) {
        tmrt_server_request rq = {0};
        prompt_of(i, prompt, vocab, p);
        rq.tokens = p;
        rq.n_tokens = prompt;
        rq.n_predict = gen;
        ok = !tmrt_server_open(srv, &ids[i], &e) && !tmrt_server_submit(srv, ids[i], &rq, &e);
    }
    double t_prefill = 0, t_decode = 0;
    uint64_t prefilled = 0, decoded = 0, peak = 0;
    for (int guard = 0; ok && guard < 1000000; guard++) {
        tmrt_server_step_info si;
        double t0 = now_s();
        if (tmrt_server_step(srv, &si, &e)) break;
        double dt = now_s() - t0;
        if (si.prefill_tokens) t_prefill += dt, prefilled += si.prefill_tokens;
        else t_decode += dt, decoded += si.decode_rows;
        uint64_t d = dirty(ctx);
        peak = d > peak ? d : peak;
        tmem_footprint fp;
        if (tmem_footprint_read(&fp) == TMEM_OK && fp.private_dirty > f.os_dirty_peak)
            f.os_dirty_peak = (double)fp.private_dirty;
        if (si.idle) break;
    }
    if (ok && t_decode > 0) {
        f.decode_tok_s = (double)decoded / t_decode;
        f.prefill_tok_s = t_prefill > 0 ? (double)prefilled / t_prefill : 0;
        f.per_active = (double)(peak - base) / n;
        for (uint32_t i = 0; i < n && dir; i++) ok = ok && !tmrt_server_suspend(srv, ids[i], &e);
        f.per_suspended = dir ? (double)(dirty(ctx) > base ? dirty(ctx) - base : 0) / n : 0;
        f.ok = ok;
    }
    if (!ok) fprintf(stderr, "tmem bench serve: %u sessions: %s\n", n, e.message);
    free(p);
    tmrt_server_destroy(srv);
    return f;
}

typedef struct resume_fig {
    double recompute_s, suspend_s, resume_s, file_bytes;
    bool same_bits, ok;
} resume_fig;

static resume_fig resume_vs_recompute(tmrt_model *m, uint32_t tokens, uint32_t threads, const char *dir) {
    resume_fig f = {0};
    uint32_t vocab = tmrt_model_hparams(m)->n_vocab;
    tmrt_server *srv = server(m, 1, tokens + 16, threads, dir);
    int32_t *p = malloc((size_t)tokens * sizeof *p);
    float *logits = malloc((size_t)vocab * sizeof *logits);
    uint32_t id;
    tmrt_error e = {{0}};
    bool ok = srv && p && logits && !tmrt_server_open(srv, &id, &e);
    if (ok) {
        tmrt_server_request rq = {0};
        prompt_of(99, tokens, vocab, p);
        rq.tokens = p;
        rq.n_tokens = tokens;
        ok = !tmrt_server_submit(srv, id, &rq, &e);
    }
    double t0 = now_s();
    for (tmrt_server_step_info si = {0}; ok && !si.idle;) ok = !tmrt_server_step(srv, &si, &e);
    f.recompute_s = now_s() - t0;
    const float *l = ok ? tmrt_server_logits(srv, id) : NULL;
    if (l) memcpy(logits, l, (size_t)vocab * sizeof *logits);
    t0 = now_s();
    ok = ok && l && !tmrt_server_suspend(srv, id, &e);
    f.suspend_s = now_s() - t0;
    tmrt_server_stats st;
    if (ok && !tmrt_server_get_stats(srv, &st)) f.file_bytes = (double)st.suspend_bytes;
    t0 = now_s();
    ok = ok && !tmrt_server_resume(srv, id, &e);
    f.resume_s = now_s() - t0;
    l = ok ? tmrt_server_logits(srv, id) : NULL;
    f.same_bits = l && !memcmp(l, logits, (size_t)vocab * sizeof *logits);
    f.ok = ok;
    if (!ok) fprintf(stderr, "tmem bench serve: resume: %s\n", e.message);
    free(p);
    free(logits);
    tmrt_server_destroy(srv);
    return f;
}

static const char usage[] =
    "usage: tmem bench serve [--model FILE] [--prompt N] [--gen N] [--resume-tokens N] [-t N]\n"
    "                        [--peer LLAMA_SERVER] [--json]\n"
    "  aggregate decode tok/s at 1, 4, 16 sessions, dirty bytes per active and suspended session,\n"
    "  resume of a suspended conversation vs recomputing its prompt (docs/serve.md); --peer: llama.cpp's\n"
    "  llama-server binary, run with --parallel N on the same file beside each level\n";

int tmem_bench_serve(int argc, char **argv, bool json) {
    const char *model_arg = NULL, *peer = NULL;
    uint64_t prompt = 64, gen = 16, resume_tokens = 2000, threads = 2;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (!strcmp(o, "--json")) continue;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(o, "--model")) model_arg = v, ok = v != NULL;
        else if (!strcmp(o, "--peer")) peer = v, ok = v != NULL;
        else if (!strcmp(o, "--prompt")) ok = tmem_arg_u64(v, &prompt) && prompt >= 1 && prompt <= 65536;
        else if (!strcmp(o, "--gen")) ok = tmem_arg_u64(v, &gen) && gen >= 2 && gen <= 65536;
        else if (!strcmp(o, "--resume-tokens"))
            ok = tmem_arg_u64(v, &resume_tokens) && resume_tokens >= 1 && resume_tokens <= 1u << 20;
        else if (!strcmp(o, "-t")) ok = tmem_arg_u64(v, &threads) && threads >= 1 && threads <= 64;
        else {
            fprintf(stderr, "tmem bench serve: unknown option %s\n%s", o, usage);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "tmem bench serve: bad value for %s\n%s", o, usage);
            return 2;
        }
        i++;
    }
    char model[1024];
    if (model_arg) snprintf(model, sizeof model, "%s", model_arg);
    else if (!tmem_model_cache_ensure("qwen3.5-0.8b", "f16", model, sizeof model)) return 1;
    char dir[] = "/tmp/tmem-bench-serve-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "tmem bench serve: no temporary directory\n");
        return 1;
    }
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    tmrt_model *m = NULL;
    tmrt_error e = {{0}};
    if (tmem_context_create(&cd, &ctx)) return 1;
    tmrt_model_desc md = {.path = model};
    if (tmrt_model_open(ctx, &md, &m, &e)) {
        fprintf(stderr, "tmem bench serve: %s\n", e.message);
        tmem_context_destroy(ctx);
        rmdir(dir);
        return 1;
    }
    static const uint32_t levels[] = {1, 4, 16};
    conc_fig cf[3];
    uint32_t vocab = tmrt_model_hparams(m)->n_vocab;
    for (int k = 0; k < 3; k++) {
        cf[k] = concurrency(ctx, m, levels[k], (uint32_t)prompt, (uint32_t)gen, (uint32_t)threads, dir);
        if (peer) {
            cf[k].peer = tmem_bench_serve_peer(peer, model, levels[k], (uint32_t)prompt, (uint32_t)gen,
                                               (uint32_t)threads, vocab);
            if (!cf[k].peer.ok)
                fprintf(stderr, "tmem bench serve: the peer %s failed at %u sessions\n", peer, levels[k]);
        }
    }
    resume_fig rf = resume_vs_recompute(m, (uint32_t)resume_tokens, (uint32_t)threads, dir);
    tmrt_model_close(m);
    tmem_context_destroy(ctx);
    rmdir(dir);
    bool ok = cf[0].ok && cf[1].ok && cf[2].ok && rf.ok;
    double mib = 1024.0 * 1024.0;
    if (json) {
        printf("{\"bench\": \"serve\", \"model\": \"%s\", \"threads\": %u, \"prompt\": %u, \"gen\": %u, \"levels\": [",
               model, (unsigned)threads, (unsigned)prompt, (unsigned)gen);
        for (int k = 0; k < 3; k++)
            printf("%s{\"sessions\": %u, \"decode_tok_s\": %.2f, \"prefill_tok_s\": %.2f, "
                   "\"active_bytes_per_session\": "
                   "%.0f, \"suspended_bytes_per_session\": %.0f, \"os_dirty_peak\": %.0f, \"peer_decode_tok_s\": %.2f, "
                   "\"peer_dirty_peak\": %.0f}",
                   k ? ", " : "", cf[k].sessions, cf[k].decode_tok_s, cf[k].prefill_tok_s, cf[k].per_active,
                   cf[k].per_suspended, cf[k].os_dirty_peak, cf[k].peer.decode_tok_s, cf[k].peer.dirty_peak);
        printf("], \"resume\": {\"tokens\": %u, \"recompute_s\": %.4f, \"suspend_s\": %.4f, \"resume_s\": %.4f, "
               "\"file_bytes\": %.0f, \"same_bits\": %s}, \"ok\": %s}\n",
               (unsigned)resume_tokens, rf.recompute_s, rf.suspend_s, rf.resume_s, rf.file_bytes,
               rf.same_bits ? "true" : "false", ok ? "true" : "false");
        return ok ? 0 : 1;
    }
    printf("tmem bench serve: %s, %u threads, %u-token prompts, %u generated each\n", model, (unsigned)threads,
           (unsigned)prompt, (unsigned)gen);
    printf("  sessions | decode tok/s (all) | x 1 session | prefill tok/s | MiB per active | MiB per suspended |"
           " OS dirty peak MiB | llama-server tok/s, dirty peak MiB\n");
    for (int k = 0; k < 3; k++) {
        printf("  %8u | %18.2f | %10.2fx | %13.1f | %14.2f | %17.3f | %17.1f |", cf[k].sessions, cf[k].decode_tok_s,
               cf[0].decode_tok_s > 0 ? cf[k].decode_tok_s / cf[0].decode_tok_s : 0, cf[k].prefill_tok_s,
               cf[k].per_active / mib, cf[k].per_suspended / mib, cf[k].os_dirty_peak / mib);
        if (cf[k].peer.ok) printf(" %.2f, %.1f\n", cf[k].peer.decode_tok_s, cf[k].peer.dirty_peak / mib);
        else printf(" %s\n", peer ? "failed" : "not run (--peer)");
    }
    printf("  resume of a %u-token conversation: %.4f s vs recomputing it %.3f s (%.0fx); suspend %.4f s, "
           "file %.1f MiB; next logits %s\n",
           (unsigned)resume_tokens, rf.resume_s, rf.recompute_s, rf.resume_s > 0 ? rf.recompute_s / rf.resume_s : 0,
           rf.suspend_s, rf.file_bytes / mib, rf.same_bits ? "bit for bit the same" : "DIFFER");
    printf("  reproduce: tmem bench serve%s%s%s%s -t %u --prompt %u --gen %u --resume-tokens %u\n",
           model_arg ? " --model " : "", model_arg ? model_arg : "", peer ? " --peer " : "", peer ? peer : "",
           (unsigned)threads, (unsigned)prompt, (unsigned)gen, (unsigned)resume_tokens);
    return ok && rf.same_bits ? 0 : 1;
}

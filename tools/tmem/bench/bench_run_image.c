/* tmem bench run --image WxH: the reference runtime with an image in the
 * prompt, on the Qwen3.5-0.8B shape (random F16 text + vision weights from
 * `tmem gen --mmproj`, cached), a WxH picture (a PPM written here) plus a
 * 512-token prompt, ctx 4096, 2 threads: typed memory vs the naive twin, each
 * in its own `tmem run --json` process.
 *
 * Measured per run: peak Private_Dirty (this process samples the child's
 * /proc/PID/smaps_rollup every 10 ms, so the encoder's phase, whose memory is
 * gone before the prefill, is seen too; the child's own samples between its
 * steps count as well), the image's copies on its way to patches, encode
 * time, TTFT (image decode to first token), prefill and decode speed, wall
 * and CPU time; and `tmem fit --gguf TEXT --mmproj MMPROJ --image WxH` for
 * the tokens the run held vs the typed run's OS peak.
 *
 * With --peer llama.cpp=BUILD_DIR, llama-mtmd-cli runs on the same two files
 * and the same picture in the same bench run, interleaved with the typed run
 * --reps times (best kept on each side): its encode time, prompt and
 * generation speed and sampled peak Private_Dirty beside ours. Without
 * --peer no peer runs, and the bench says so. */
#include "cli/out.h"
#include "cli/args.h"
#include "bench/bench.h"
#include "bench/bench_peer.h"
#include "run/model_cache.h"
#include "run/run_report.h"
#include "tmemrt/tokenizer.h"
#include "tmemrt/vision.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TARGET_DIRTY_MIB 150.0

typedef struct image_run {
    bool ok;
    double peak_sampled, peak_child, rss, wall_s, cpu_s;
    double ttft_s, prefill_s, prefill_tok_s, decode_tok_s, preprocess_ms, encode_ms;
    double copies, image_tokens, patches, arena, prompt_tokens, generated, tokenizer_bytes;
} image_run;

typedef struct bench_args {
    const char *preset, *dtype, *model, *mmproj;
    uint32_t width, height, threads, ctx, prompt, n_gen, reps;
    bool json, have_peer;
    bench_peer peer;
} bench_args;

static image_run run_child(const char *exe, const bench_args *a, const char *model,
                           const char *mmproj, const char *image, const char *tokens,
                           const char *memory) {
    image_run r = {0};
    static char out[1 << 16];
    char n_gen[16], threads[16], ctx[16];
    snprintf(n_gen, sizeof n_gen, "%u", a->n_gen);
    snprintf(threads, sizeof threads, "%u", a->threads);
    snprintf(ctx, sizeof ctx, "%u", a->ctx);
    char *const argv[] = {(char *)exe,    "run",     (char *)model, "--mmproj",
                          (char *)mmproj, "--image", (char *)image, "--tokens",
                          (char *)tokens, "-n",      n_gen,         "-t",
                          threads,        "--ctx",   ctx,           "--memory",
                          (char *)memory, "--json",  NULL};
    if (!a->json) {
        printf("  %s run...\n", memory);
        fflush(stdout);
    }
    tmem_bench_sample smp;
    bool ran = tmem_bench_sampled(argv, false, out, sizeof out, &smp);
    r.peak_sampled = smp.peak_dirty, r.wall_s = smp.wall_s, r.cpu_s = smp.cpu_s;
    if (!ran || !strstr(out, "\"vision\"")) {
        fprintf(stderr, "tmem bench run --image: the %s run failed\n", memory);
        return r;
    }
    r.ok = true;
    r.peak_child = run_report_json_num(out, "os_private_dirty_peak");
    r.rss = run_report_json_num(out, "os_rss_peak");
    r.ttft_s = run_report_json_num(out, "ttft_s");
    r.prefill_s = run_report_json_num(out, "prefill_s");
    r.prefill_tok_s = run_report_json_num(out, "prefill_tok_s");
    r.decode_tok_s = run_report_json_num(out, "decode_tok_s");
    r.preprocess_ms = run_report_json_num(out, "preprocess_ms");
    r.encode_ms = run_report_json_num(out, "encode_ms");
    r.copies = run_report_json_num(out, "image_copies");
    r.image_tokens = run_report_json_num(out, "image_tokens");
    r.patches = run_report_json_num(out, "patches");
    r.arena = run_report_json_num(out, "arena_bytes");
    r.prompt_tokens = run_report_json_num(out, "prompt_tokens");
    r.generated = run_report_json_num(out, "generated_tokens");
    r.tokenizer_bytes = run_report_json_num(out, "tokenizer_bytes");
    if (r.peak_child > r.peak_sampled) r.peak_sampled = r.peak_child;
    return r;
}

/* `tmem fit --gguf TEXT --mmproj MMPROJ --ctx N --image WxH --json`'s
 * encode-first peak (dirty bytes); -1 on failure. */
static double fit_peak(const char *model, const char *mmproj, uint32_t w, uint32_t h,
                       uint64_t ctx_tokens) {
    char ctx[24], image[32], out[1 << 14];
    snprintf(ctx, sizeof ctx, "%llu", (unsigned long long)ctx_tokens);
    snprintf(image, sizeof image, "%ux%u", w, h);
    char *const argv[] = {"tmem",  "fit", "--gguf",  (char *)model, "--mmproj", (char *)mmproj,
                          "--ctx", ctx,   "--image", image,         "--json",   NULL};
    if (!tmem_bench_child(argv, out, sizeof out)) return -1;
    return run_report_json_num(out, "peak_dirty_encode_first");
}

/* A smooth RGB picture, what a camera or a decoder would give. */
static bool write_ppm(const char *path, uint32_t w, uint32_t h) {
    tmem_out_file *of = NULL;
    FILE *f = tool_out_open("bench", path, NULL, 0, &of);
    if (!f) return false;
    fprintf(f, "P6\n%u %u\n255\n", w, h);
    bool ok = true;
    for (uint32_t y = 0; y < h && ok; y++)
        for (uint32_t x = 0; x < w && ok; x++) {
            unsigned char px[3] = {(unsigned char)((x + y) & 0xFF),
                                   (unsigned char)((2 * y + 60) & 0xFF),
                                   (unsigned char)((3 * x + 120) & 0xFF)};
            ok = fwrite(px, 1, 3, f) == 3;
        }
    return tool_out_close("bench", of, ok);
}

/* The prompt ids: <|vision_start|>, <|image_pad|> once per image token,
 * <|vision_end|>, then `prompt` text ids (fixed, none of the three). */
static char *prompt_ids(const char *model, const char *mmproj, uint32_t w, uint32_t h,
                        uint32_t prompt) {
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    tmem_gguf *g = NULL;
    tmrt_tokenizer *tok = NULL;
    tmrt_vision *v = NULL;
    char *ids = NULL;
    tmrt_error err = {""};
    tmrt_vision_desc vd = {mmproj, TMRT_MEMORY_TYPED, NULL};
    int32_t pad, start, end;
    tmrt_vision_grid grid;
    tmem_gguf_desc gd = {0};
    gd.path = model;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK ||
        tmem_gguf_open(ctx, &gd, &g, NULL) != TMEM_OK ||
        tmrt_tokenizer_load(ctx, g, &tok, &err) != TMEM_OK ||
        tmrt_tokenizer_special(tok, "<|image_pad|>", &pad) != TMEM_OK ||
        tmrt_tokenizer_special(tok, "<|vision_start|>", &start) != TMEM_OK ||
        tmrt_tokenizer_special(tok, "<|vision_end|>", &end) != TMEM_OK ||
        tmrt_vision_open(ctx, &vd, &v, &err) != TMEM_OK ||
        tmrt_vision_smart_resize(tmrt_vision_get_config(v), w, h, &grid) != TMEM_OK) {
        fprintf(stderr,
                "tmem bench run --image: %s: no vocabulary with the vision tokens, or no grid for "
                "%ux%u %s\n",
                model, w, h, err.message);
        goto done;
    }
    uint32_t n_vocab = tmrt_tokenizer_n_vocab(tok);
    size_t cap = ((size_t)grid.n_tokens + prompt + 2) * 12 + 1, at = 0;
    ids = malloc(cap);
    if (!ids) goto done;
    at += (size_t)snprintf(ids + at, cap - at, "%d", start);
    for (uint32_t i = 0; i < grid.n_tokens; i++)
        at += (size_t)snprintf(ids + at, cap - at, ",%d", pad);
    at += (size_t)snprintf(ids + at, cap - at, ",%d", end);
    for (uint32_t i = 0, k = 0; i < prompt; k++) {
        int32_t id = (int32_t)((k * 7919u + 11u) % (n_vocab < 240000u ? n_vocab : 240000u));
        if (id == pad || id == start || id == end) continue;
        at += (size_t)snprintf(ids + at, cap - at, ",%d", id);
        i++;
    }
done:
    tmrt_vision_close(v);
    tmrt_tokenizer_destroy(tok);
    tmem_gguf_close(g);
    tmem_context_destroy(ctx);
    return ids;
}

static int usage(void) {
    fprintf(stderr,
            "usage: tmem bench run --image WxH [--json] [--preset P] [--dtype f16|bf16|q8_0]\n"
            "                      [--model TEXT.gguf --mmproj MMPROJ.gguf] [-t THREADS]\n"
            "                      [--prompt N] [-n N] [--ctx N] [--peer llama.cpp=BUILD_DIR] [--reps N]\n");
    return 2;
}

static int parse(int argc, char **argv, bench_args *a) {
    *a = (bench_args){.preset = "qwen3.5-0.8b", .dtype = "f16", .threads = 2, .ctx = 4096, .prompt = 512,
                      .n_gen = 32, .reps = 1};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n = 0;
        bool num = v && tmem_arg_u64(v, &n);
        if (!strcmp(o, "--json")) {
            a->json = true;
            continue;
        }
        if (!v) return usage();
        if (!strcmp(o, "--image") && sscanf(v, "%ux%u", &a->width, &a->height) == 2)
            i++;
        else if (!strcmp(o, "--preset"))
            a->preset = v, i++;
        else if (!strcmp(o, "--model"))
            a->model = v, i++;
        else if (!strcmp(o, "--mmproj"))
            a->mmproj = v, i++;
        else if (!strcmp(o, "--dtype") &&
                 (!strcmp(v, "f16") || !strcmp(v, "bf16") || !strcmp(v, "q8_0")))
            a->dtype = v, i++;
        else if (!strcmp(o, "-t") && num && n >= 1 && n <= 64)
            a->threads = (uint32_t)n, i++;
        else if (!strcmp(o, "--prompt") && num && n <= 8000)
            a->prompt = (uint32_t)n, i++;
        else if (!strcmp(o, "-n") && num && n <= 256)
            a->n_gen = (uint32_t)n, i++;
        else if (!strcmp(o, "--ctx") && num && n >= 64 && n <= (1u << 20))
            a->ctx = (uint32_t)n, i++;
        else if (!strcmp(o, "--reps") && num && n >= 1 && n <= 20)
            a->reps = (uint32_t)n, i++;
        else if (!strcmp(o, "--peer")) {
            if (!bench_peer_parse(v, &a->peer)) return 2;
            a->have_peer = true, i++;
        }
        else
            return usage();
    }
    if (!a->width || !a->height || !a->model != !a->mmproj) return usage();
    if (!a->have_peer) a->reps = 1; /* best-of-N is for the A/B against the peer */
    return 0;
}

static double mib(double b) { return b / 1048576.0; }

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

static void print_json(const bench_args *a, const image_run r[2], const bench_peer_mtmd *p, double fit_run,
                       double fit_ctx) {
    printf(
        "{\"bench\": \"run_image\", \"image\": [%u, %u], \"ctx\": %u, \"prompt\": %u, "
        "\"generated\": %u, "
        "\"threads\": %u, \"fit_peak_dirty\": %.0f, \"fit_peak_dirty_ctx\": %.0f, \"variants\": [",
        a->width, a->height, a->ctx, a->prompt, a->n_gen, a->threads, fit_run, fit_ctx);
    for (int k = 0; k < 2; k++)
        printf("%s{\"memory\": \"%s\", \"ok\": %s, \"private_dirty_peak\": %.0f, "
               "\"private_dirty_peak_child\": %.0f, \"rss_peak\": %.0f, \"image_copies\": %.0f, "
               "\"patches\": %.0f, \"image_tokens\": %.0f, \"prompt_tokens\": %.0f, "
               "\"arena_bytes\": %.0f, "
               "\"preprocess_ms\": %.3f, \"encode_ms\": %.3f, \"ttft_s\": %.3f, \"prefill_tok_s\": "
               "%.3f, "
               "\"decode_tok_s\": %.3f, \"wall_s\": %.3f, \"cpu_s\": %.3f}",
               k ? ", " : "", k ? "naive" : "typed", r[k].ok ? "true" : "false", r[k].peak_sampled,
               r[k].peak_child, r[k].rss, r[k].copies, r[k].patches, r[k].image_tokens,
               r[k].prompt_tokens, r[k].arena, r[k].preprocess_ms, r[k].encode_ms, r[k].ttft_s,
               r[k].prefill_tok_s, r[k].decode_tok_s, r[k].wall_s, r[k].cpu_s);
    if (a->have_peer)
        printf("], \"reps\": %u, \"peer\": {\"name\": \"llama.cpp\", \"bin\": \"%s\", \"tool\": \"llama-mtmd-cli\", "
               "\"encode_ms\": %.3f, \"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, \"private_dirty_peak\": %.0f, "
               "\"wall_s\": %.3f, \"cpu_s\": %.3f, \"encode_speed_ratio\": %.4f}}\n",
               a->reps, a->peer.bin, p->encode_ms, p->prefill_tok_s, p->decode_tok_s, p->peak_dirty, p->wall_s,
               p->cpu_s, ratio(p->encode_ms, r[0].encode_ms));
    else
        printf("], \"peer\": null, \"peer_note\": \"no peer ran (--peer llama.cpp=BUILD_DIR)\"}\n");
}

static void print_text(const bench_args *a, const image_run r[2], const bench_peer_mtmd *p, double fit_run,
                       double fit_ctx) {
    const image_run *t = &r[0], *n = &r[1];
    printf("\n%-38s %12s %12s %11s\n", "", "typed", "naive", "naive/typed");
    printf("%-38s %12.1f %12.1f %10.2fx\n", "peak Private_Dirty (MiB, OS)",
           mib(t->peak_sampled), mib(n->peak_sampled), n->peak_sampled / t->peak_sampled);
    printf("%-38s %12.1f %12.1f %10.2fx\n", "peak RSS (MiB)", mib(t->rss), mib(n->rss),
           n->rss / t->rss);
    printf("%-38s %12.0f %12.0f\n", "image copies (decode -> patches)", t->copies, n->copies);
    printf("%-38s %12.1f %12.1f\n", "preprocess (ms)", t->preprocess_ms, n->preprocess_ms);
    printf("%-38s %12.1f %12.1f\n", "encode (s)", t->encode_ms / 1e3, n->encode_ms / 1e3);
    printf("%-38s %12.1f %12.1f\n", "TTFT (s, image decode to 1st token)", t->ttft_s, n->ttft_s);
    printf("%-38s %12.1f %12.1f\n", "prefill (tok/s)", t->prefill_tok_s, n->prefill_tok_s);
    printf("%-38s %12.2f %12.2f\n", "decode (tok/s)", t->decode_tok_s, n->decode_tok_s);
    printf("%-38s %12.1f %12.1f\n", "wall (s)", t->wall_s, n->wall_s);
    printf("%-38s %12.1f %12.1f\n", "CPU (s, user + system)", t->cpu_s, n->cpu_s);
    printf("\n%.0f patches -> %.0f image tokens + %u text tokens = %.0f prompt tokens, %.0f "
           "generated\n",
           t->patches, t->image_tokens, a->prompt, t->prompt_tokens, t->generated);
    double pct = fit_run > 0 ? 100.0 * (t->peak_sampled - fit_run) / fit_run : 0;
    printf("typed: tmem fit --image %ux%u predicted %.2f MiB for the %.0f tokens held (tokenizer "
           "tables "
           "included; %.2f MiB at ctx %u), OS peak %.2f MiB: %+.1f%%\n",
           a->width, a->height, mib(fit_run), t->prompt_tokens + t->generated, mib(fit_ctx), a->ctx,
           mib(t->peak_sampled), pct);
    printf("targets: peak dirty <= %.0f MiB %s, image copies = 1 %s, OS within 5%% of the fit %s\n",
           TARGET_DIRTY_MIB, mib(t->peak_sampled) <= TARGET_DIRTY_MIB ? "met" : "NOT met",
           t->copies == 1 ? "met" : "NOT met",
           fit_run > 0 && pct <= 5 && pct >= -5 ? "met" : "NOT met");
    if (a->have_peer) {
        printf("\nllama.cpp (llama-mtmd-cli, same files and picture, -t %u -c %u -n %u, best of %u interleaved "
               "with the typed run, ours too):\n", a->threads, a->ctx, a->n_gen, a->reps);
        printf("  encode %.1f s (ours %.1f s: %.2fx its speed); prompt %.1f tok/s, decode %.2f tok/s; peak "
               "Private_Dirty %.1f MiB (ours %.1f: %.2fx)\n", p->encode_ms / 1e3, t->encode_ms / 1e3,
               ratio(p->encode_ms, t->encode_ms), p->prefill_tok_s, p->decode_tok_s, mib(p->peak_dirty),
               mib(t->peak_sampled), ratio(t->peak_sampled, p->peak_dirty));
        printf("targets: encode >= 1.0x llama-mtmd-cli %s\n",
               ratio(p->encode_ms, t->encode_ms) >= 1 ? "met" : "NOT met");
    } else {
        printf("no peer ran: pass --peer llama.cpp=BUILD_DIR to run llama-mtmd-cli on the same files in this run\n");
    }
    printf("(times depend on the machine's load: only ratios of one run count)\n");
    printf("reproduce: tmem bench run --image %ux%u%s%s -t %u --prompt %u -n %u --ctx %u%s%s\n",
           a->width, a->height, a->model ? "" : " --preset ", a->model ? "" : a->preset, a->threads,
           a->prompt, a->n_gen, a->ctx, a->have_peer ? " --peer llama.cpp=" : "", a->have_peer ? a->peer.bin : "");
}

int tmem_bench_run_image(int argc, char **argv, bool json) {
    bench_args a;
    if (parse(argc, argv, &a)) return 2;
    a.json = a.json || json;
    char model[1024], mmproj[1100], exe[1024], dir[] = "/tmp/tmem-bench-run-image-XXXXXX",
                                               image[128];
    if (a.model) {
        snprintf(model, sizeof model, "%s", a.model);
        snprintf(mmproj, sizeof mmproj, "%s", a.mmproj);
    } else if (!tmem_model_cache_ensure_vision(a.preset, a.dtype, model, sizeof model, mmproj,
                                               sizeof mmproj)) {
        return 1;
    }
    if (!tmem_self_exe(exe, sizeof exe) || !mkdtemp(dir)) return 1;
    snprintf(image, sizeof image, "%s/image.ppm", dir);
    char *tokens = write_ppm(image, a.width, a.height)
                       ? prompt_ids(model, mmproj, a.width, a.height, a.prompt)
                       : NULL;
    if (!tokens) {
        unlink(image);
        rmdir(dir);
        return 1;
    }
    if (!a.json)
        printf("tmem bench run --image: %s + %s, a %ux%u image + %u prompt tokens, ctx %u, %u "
               "generated, %u "
               "threads\n",
               model, mmproj, a.width, a.height, a.prompt, a.ctx, a.n_gen, a.threads);
    image_run r[2] = {0};
    bench_peer_mtmd peer = {0};
    for (uint32_t k = 0; k < a.reps; k++) { /* typed, peer, typed, peer...: the best of each kept */
        image_run tr = run_child(exe, &a, model, mmproj, image, tokens, "typed");
        if (!tr.ok) break;
        if (!r[0].ok || tr.encode_ms < r[0].encode_ms) {
            double keep_peak = r[0].ok && r[0].peak_sampled > tr.peak_sampled ? r[0].peak_sampled : tr.peak_sampled;
            r[0] = tr;
            r[0].peak_sampled = keep_peak;
        }
        if (!a.have_peer) continue;
        bench_peer_mtmd pr = bench_peer_run_mtmd(&a.peer, model, mmproj, image, a.threads, a.ctx, a.n_gen);
        if (!pr.ok) {
            r[0].ok = false;
            break;
        }
        if (!peer.ok || pr.encode_ms < peer.encode_ms) {
            double keep_peak = peer.peak_dirty > pr.peak_dirty ? peer.peak_dirty : pr.peak_dirty;
            peer = pr;
            peer.peak_dirty = keep_peak;
        }
    }
    if (r[0].ok) r[1] = run_child(exe, &a, model, mmproj, image, tokens, "naive");
    free(tokens);
    unlink(image);
    rmdir(dir);
    if (!r[0].ok || !r[1].ok) return 1;
    /* the fit for the tokens this run held, the tokenizer's tables added (as tmem run does) */
    double held = r[0].prompt_tokens + r[0].generated;
    double fit_run = fit_peak(model, mmproj, a.width, a.height, (uint64_t)held);
    double fit_ctx = fit_peak(model, mmproj, a.width, a.height, a.ctx);
    if (fit_run > 0) fit_run += r[0].tokenizer_bytes;
    if (fit_ctx > 0) fit_ctx += r[0].tokenizer_bytes;
    if (a.json)
        print_json(&a, r, &peer, fit_run, fit_ctx);
    else
        print_text(&a, r, &peer, fit_run, fit_ctx);
    return 0;
}

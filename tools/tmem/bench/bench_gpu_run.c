/* tmem bench gpu-run MODEL.gguf [--ctx N] [--prompt N] [--gen N] [-t THREADS]
 *                   [--device vulkan[:N]] [--peer llama.cpp=DIR] [--json]
 * The runtime on the GPU (typed, and the naive twin: a VkDeviceMemory per
 * tensor, weights copied in full) vs on the CPU, same file, same run: each variant
 * is `tmem run --json` in its own child process (its peak is its own), a
 * prompt of --prompt token ids (deterministic, inside the vocabulary) and
 * --gen generated tokens; prefill and decode tok/s, device bytes at the
 * peak (typed accounting; the driver's heap usage where
 * VK_EXT_memory_budget exists), the host's private-dirty peak. With --peer
 * llama.cpp=DIR, DIR/llama-bench on the same file with -ngl 99 (its Vulkan
 * backend when built so): pp and tg tok/s. Reports, asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench/bench.h"
#include "run/run_report.h"
#include "tmemrt/runtime.h"

typedef struct variant {
    const char *name;
    bool ok;
    double pp, tg, dev, dev_driver, dirty;
} variant;

static void run_variant(const char *model, const char *tokens, const char *gen, const char *ctx, const char *threads,
                        const char *device, const char *memory, variant *v) {
    char *args[] = {"tmem", "run", (char *)model, "--tokens", (char *)tokens, "-n", (char *)gen, "--ctx", (char *)ctx,
                    "-t", (char *)threads, "--device", (char *)device, "--memory", (char *)memory, "--json", NULL};
    static char out[1 << 20];
    v->ok = tmem_bench_child(args, out, sizeof out);
    if (!v->ok || !strstr(out, "\"prefill_tok_s\"")) {
        v->ok = false;
        return;
    }
    v->pp = run_report_json_num(out, "prefill_tok_s");
    v->tg = run_report_json_num(out, "decode_tok_s");
    v->dev = run_report_json_num(out, "device_bytes_peak");
    v->dev_driver = run_report_json_num(out, "device_driver_usage");
    v->dirty = run_report_json_num(out, "os_private_dirty_peak");
}

/* llama-bench -o json: avg_ts of the pp and the tg entries. */
static void run_peer(const char *dir, const char *model, unsigned prompt, unsigned gen, variant *v) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s/llama-bench' -m '%s' -p %u -n %u -ngl 99 -r 2 -o json 2>/dev/null", dir, model,
             prompt, gen);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    static char out[1 << 16];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    v->ok = pclose(p) == 0 && n > 0;
    for (const char *s = out; v->ok && (s = strstr(s, "\"n_prompt\":"));) {
        unsigned np = (unsigned)strtoul(s + 11, NULL, 10);
        const char *ng = strstr(s, "\"n_gen\":"), *ts = strstr(s, "\"avg_ts\":");
        if (!ng || !ts) break;
        unsigned g = (unsigned)strtoul(ng + 8, NULL, 10);
        double t = strtod(ts + 9, NULL);
        if (np && !g) v->pp = t;
        if (g && !np) v->tg = t;
        s = ts;
    }
}

int tmem_bench_gpu_run(int argc, char **argv, bool json) {
    const char *model = NULL, *device = "vulkan", *peer = NULL;
    unsigned long ctx = 4096, prompt = 512, gen = 128, threads = 1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--json")) continue;
        if (val && !strcmp(o, "--ctx")) ctx = strtoul(val, NULL, 10), i++;
        else if (val && !strcmp(o, "--prompt")) prompt = strtoul(val, NULL, 10), i++;
        else if (val && !strcmp(o, "--gen")) gen = strtoul(val, NULL, 10), i++;
        else if (val && !strcmp(o, "-t")) threads = strtoul(val, NULL, 10), i++;
        else if (val && !strcmp(o, "--device")) device = val, i++;
        else if (val && !strcmp(o, "--peer") && !strncmp(val, "llama.cpp=", 10)) peer = val + 10, i++;
        else if (!model && o[0] != '-') model = o;
        else {
            fprintf(stderr, "tmem bench gpu-run: unknown option %s\n", o);
            return 2;
        }
    }
    if (!model || !prompt || !gen || prompt + gen > ctx || prompt > 8192) {
        fprintf(stderr, "usage: tmem bench gpu-run MODEL.gguf [--ctx N] [--prompt N<=8192] [--gen N] [-t N] "
                        "[--device vulkan[:N]] [--peer llama.cpp=DIR] [--json]\n");
        return 2;
    }
    /* the vocabulary, for token ids inside it */
    tmrt_model *m = NULL;
    tmrt_model_desc md = {0};
    md.path = model;
    md.memory = TMRT_MEMORY_NAIVE;
    tmrt_error e = {{0}};
    uint32_t vocab = 0;
    if (tmrt_model_open(NULL, &md, &m, &e) == TMEM_OK) vocab = tmrt_model_hparams(m)->n_vocab;
    tmrt_model_close(m);
    if (!vocab) {
        fprintf(stderr, "tmem bench gpu-run: %s: %s\n", model, e.message);
        return 1;
    }
    static char tokens[8192 * 8];
    size_t n = 0;
    for (unsigned long t = 0; t < prompt; t++)
        n += (size_t)snprintf(tokens + n, sizeof tokens - n, "%s%lu", t ? "," : "", (t * 7919u + 13u) % vocab);
    char gs[24], cs[24], ts[24];
    snprintf(gs, sizeof gs, "%lu", gen);
    snprintf(cs, sizeof cs, "%lu", ctx);
    snprintf(ts, sizeof ts, "%lu", threads);
    variant v[4];
    memset(v, 0, sizeof v);
    v[0].name = "typed gpu";
    v[1].name = "naive gpu";
    v[2].name = "typed cpu";
    v[3].name = "llama.cpp -ngl 99";
    run_variant(model, tokens, gs, cs, "1", device, "typed", &v[0]);
    run_variant(model, tokens, gs, cs, "1", device, "naive", &v[1]);
    run_variant(model, tokens, gs, cs, ts, "cpu", "typed", &v[2]);
    if (peer) run_peer(peer, model, (unsigned)prompt, (unsigned)gen, &v[3]);
    uint32_t nv = peer ? 4 : 3;
    if (json) {
        printf("{\"bench\": \"gpu-run\", \"model\": \"%s\", \"ctx\": %lu, \"prompt\": %lu, \"gen\": %lu, "
               "\"threads\": %lu, \"variants\": [",
               model, ctx, prompt, gen, threads);
        for (uint32_t i = 0; i < nv; i++)
            printf("%s{\"name\": \"%s\", \"ok\": %s, \"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, "
                   "\"device_bytes_peak\": %.0f, \"device_driver_usage\": %.0f, \"host_private_dirty_peak\": %.0f}",
                   i ? ", " : "", v[i].name, v[i].ok ? "true" : "false", v[i].pp, v[i].tg, v[i].dev,
                   v[i].dev_driver, v[i].dirty);
        printf("]}\n");
    } else {
        printf("tmem bench gpu-run %s: ctx %lu, %lu-token prompt, %lu generated (CPU: %lu threads)\n", model, ctx,
               prompt, gen, threads);
        printf("  %-20s %12s %12s %14s %14s %14s\n", "variant", "prefill t/s", "decode t/s", "device MiB",
               "driver MiB", "host dirty MiB");
        for (uint32_t i = 0; i < nv; i++) {
            if (!v[i].ok) {
                printf("  %-20s (did not run)\n", v[i].name);
                continue;
            }
            printf("  %-20s %12.1f %12.1f %14.1f %14.1f %14.1f\n", v[i].name, v[i].pp, v[i].tg,
                   v[i].dev > 0 ? v[i].dev / 1048576.0 : 0, v[i].dev_driver > 0 ? v[i].dev_driver / 1048576.0 : 0,
                   v[i].dirty > 0 ? v[i].dirty / 1048576.0 : 0);
        }
        if (v[0].ok && v[1].ok && v[1].dev > 0)
            printf("  typed / naive gpu: device bytes %.3fx, host dirty %.3fx\n", v[0].dev / v[1].dev,
                   v[1].dirty > 0 ? v[0].dirty / v[1].dirty : 0);
        if (v[0].ok && v[2].ok && v[2].pp > 0 && v[2].tg > 0)
            printf("  gpu / cpu: prefill %.3fx, decode %.3fx\n", v[0].pp / v[2].pp, v[0].tg / v[2].tg);
        if (peer && v[0].ok && v[3].ok && v[3].pp > 0 && v[3].tg > 0)
            printf("  gpu / llama.cpp: prefill %.3fx, decode %.3fx\n", v[0].pp / v[3].pp, v[0].tg / v[3].tg);
    }
    return v[0].ok ? 0 : 1;
}

/* tmem demo: the main job, for real. The Qwen3.5-0.8B shape with random
 * weights (tmem gen, generated once and cached) runs through the reference
 * runtime twice on the same prompt: on typed memory (traced) and as the
 * naive malloc twin, each in its own process so the OS figures are its own.
 * Then the memory comparison and the HTML report of the typed run's trace.
 * The weights are random: the generated text is noise; the memory and the
 * speed are real. `tmem demo --bookkeeping` is the older session without
 * the model math (demo_compare.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/args.h"
#include "cli/cli.h"
#include "commands.h"
#include "demo/demo.h"
#include "run/model_cache.h"
#include "run/run_report.h"

typedef struct demo_figures {
    bool ok;
    double prefill, decode, predicted, predicted_ctx, committed, dirty, rss, os_vs_pred, weights;
    char tokens[512];
} demo_figures;

static demo_figures run_one(const char *exe, const char *model, const char *tokens, const char *memory,
                            const char *trace, unsigned n_gen, unsigned threads) {
    demo_figures f = {0};
    static char cmd[1 << 15], out[1 << 16];
    int n = snprintf(cmd, sizeof cmd, "'%s' run '%s' --tokens %s -n %u -t %u --ctx 4096 --memory %s --json", exe,
                     model, tokens, n_gen, threads, memory);
    if (trace) snprintf(cmd + n, sizeof cmd - (size_t)n, " --trace '%s'", trace);
    FILE *p = popen(cmd, "r");
    if (!p) return f;
    size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = 0;
    if (pclose(p) != 0 || !strstr(out, "\"decode_tok_s\"")) return f;
    f.ok = true;
    f.prefill = run_report_json_num(out, "prefill_tok_s");
    f.decode = run_report_json_num(out, "decode_tok_s");
    f.predicted = run_report_json_num(out, "predicted_dirty");
    f.predicted_ctx = run_report_json_num(out, "predicted_dirty_ctx");
    f.committed = run_report_json_num(out, "committed_dirty_peak");
    f.dirty = run_report_json_num(out, "os_private_dirty_peak");
    f.rss = run_report_json_num(out, "os_rss_peak");
    f.os_vs_pred = run_report_json_num(out, "os_vs_predicted_pct");
    f.weights = run_report_json_num(out, "weights_bytes");
    const char *t = strstr(out, "\"tokens\": [");
    if (t) {
        t += 11;
        size_t i = 0;
        while (*t && *t != ']' && i + 1 < sizeof f.tokens) f.tokens[i++] = *t++;
        f.tokens[i] = 0;
    }
    return f;
}

/* Flags only the bookkeeping session has: any of them selects it. */
static bool bookkeeping_flag(const char *a) {
    static const char *const own[] = {"--quick", "--json", "--trace", "--budget", "--budget-mib", "--decode",
                                      "--image-side", "--frame", "--weights-mib"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcmp(a, own[i])) return true;
    return false;
}

int tmem_cmd_demo(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--bookkeeping")) {
            for (int j = i; j + 1 < argc; j++) argv[j] = argv[j + 1];
            return tmem_demo_bookkeeping(argc - 1, argv);
        }
    for (int i = 1; i < argc; i++)
        if (bookkeeping_flag(argv[i])) return tmem_demo_bookkeeping(argc, argv);
    unsigned prompt = 256, n_gen = 16, threads = 2;
    const char *report = "tmem-demo-report.html";
    bool bookkeeping_help = false;
    const tmem_cli_opt opts[] = {
        TMEM_CLI_U32("--prompt", "N", "prompt tokens (default 256)", &prompt, 1, 3000),
        TMEM_CLI_U32("-n", "N", "tokens generated (default 16)", &n_gen, 0, 1000),
        TMEM_CLI_U32("-t", "THREADS", "threads (default 2)", &threads, 1, 64),
        TMEM_CLI_STR("--report", "OUT.html", "where to write the HTML report (default tmem-demo-report.html)", &report),
        TMEM_CLI_FLAG("--bookkeeping", "the session without the model math (tmem demo --bookkeeping --help)",
                      &bookkeeping_help),
    };
    tmem_cli cli = {"tmem demo", "[--prompt N] [-n N] [-t THREADS] [--report OUT.html] | --bookkeeping [...]",
                    "The main job: the Qwen3.5-0.8B shape with random weights through the reference runtime,\n"
                    "typed memory vs the naive malloc twin, each in its own process; then the HTML report.",
                    opts, TMEM_CLI_COUNT(opts), NULL, 0, 0, NULL};
    int rc0 = tmem_cli_parse(&cli, argc, argv);
    if (rc0 != TMEM_CLI_CONTINUE) return rc0;
    printf("typedmem demo: Qwen3.5-0.8B shape (24 layers: 18 Gated DeltaNet + 6 gated attention, F16),\n"
           "%u prompt tokens + %u generated, ctx 4096, %u threads: typed memory vs the naive malloc twin.\n"
           "The weights are RANDOM (tmem gen): the generated tokens are noise. The memory and the speed are "
           "real.\n\n", prompt, n_gen, threads);
    fflush(stdout);
    char model[1024], exe[1024], dir[512], trace[700];
    if (!tmem_model_cache_ensure("qwen3.5-0.8b", "f16", model, sizeof model) || !tmem_self_exe(exe, sizeof exe))
        return 1;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tmem-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("tmem demo: temporary directory");
        return 1;
    }
    snprintf(trace, sizeof trace, "%s/run.tmtrace", dir);
    static char tokens[1 << 15];
    size_t at = 0;
    for (unsigned i = 0; i < prompt; i++)
        at += (size_t)snprintf(tokens + at, sizeof tokens - at, "%s%u", i ? "," : "", (i * 7919u + 11u) % 240000u);

    printf("  typed run (mapped weights, planned arena, paged KV, traced) ...\n");
    fflush(stdout);
    demo_figures t = run_one(exe, model, tokens, "typed", trace, n_gen, threads);
    printf("  naive run (weights read into malloc, a malloc per tensor, one max-length KV) ...\n\n");
    fflush(stdout);
    demo_figures n = t.ok ? run_one(exe, model, tokens, "naive", NULL, n_gen, threads) : t;
    int rc = 1;
    if (!t.ok || !n.ok) {
        fprintf(stderr, "tmem demo: a run failed (try: tmem run %s --tokens 1,2,3 -n 4)\n", model);
        goto done;
    }
    const double M = 1048576.0;
    printf("generated token ids (noise from random weights): %s\n\n", t.tokens);
    printf("%-32s %12s %12s %12s\n", "", "typed", "naive", "naive/typed");
    printf("%-32s %12.1f %12.1f %11.1fx\n", "peak Private_Dirty (MiB, OS)", t.dirty / M,
           n.dirty / M, n.dirty / t.dirty);
    printf("%-32s %12.1f %12.1f %11.1fx\n", "peak RSS (MiB, OS)", t.rss / M, n.rss / M, n.rss / t.rss);
    printf("%-32s %12.1f %12.1f\n", "prefill (tok/s)", t.prefill, n.prefill);
    printf("%-32s %12.2f %12.2f\n", "decode (tok/s)", t.decode, n.decode);
    printf("\ntyped: tmem fit predicted %.1f MiB private dirty for this run (%.1f MiB if the 4096-token context\n"
           "filled up), the library committed %.1f MiB at its peak, the OS measured %.1f MiB (%+.1f%%).\n"
           "The %.0f MiB of weights are clean file pages in the typed run, private dirty copies in the naive one.\n",
           t.predicted / M, t.predicted_ctx / M, t.committed / M, t.dirty / M, t.os_vs_pred, t.weights / M);
    {
        fflush(stdout); /* the table before the report's own lines */
        pid_t pid = fork();
        if (pid == 0) {
            execl(exe, exe, "report", trace, "--html", report, "--title", "tmem demo: Qwen3.5-0.8B shape, typed run",
                  (char *)NULL);
            _exit(127);
        }
        int status = 0;
        bool ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        printf("\n%s %s (open it in a browser: every allocation of the typed run by role over time)\n",
               ok ? "HTML report:" : "could not write the HTML report", report);
    }
    printf("reproduce: tmem demo; figures on a loaded machine vary: tmem bench run for the benchmark\n");
    rc = 0;
done:
    unlink(trace);
    rmdir(dir);
    return rc;
}

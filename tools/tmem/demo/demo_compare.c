/* `tmem demo`: generate the model files, run the typed session and the naive
 * one each in its own forked child (so each peak is its own process's),
 * collect what they measured over a pipe, print the comparison (or --json). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/cli.h"
#include "commands.h"
#include "demo/demo_session.h"

/* Per-type accounted vs resident (mincore per pool), then the process
 * (smaps_rollup) against the context's accounted totals at the session's end. */
static void measure(tmem_context *ctx, const tmem_demo_result *r) {
    printf("\n%-22s %12s %12s %12s\n", "type", "accounted", "resident", "difference");
    for (uint32_t i = 0; i < tmem_type_count(ctx); i++) {
        tmem_type *t;
        tmem_type_info ti;
        tmem_type_stats ts;
        if (tmem_type_at(ctx, i, &t) != TMEM_OK || tmem_type_get_info(t, &ti) != TMEM_OK ||
            tmem_type_get_stats(t, &ts) != TMEM_OK)
            break;
        uint64_t res = 0;
        if (tmem_type_get_residency(t, &res) != TMEM_OK) res = 0;
        /* clean bytes (the mapped weights) are outside the pool: measured below */
        uint64_t pool_acc = ts.committed.current - ts.clean;
        /* memfd surfaces are charged to their type but live in their own
         * files, not in the pool: the process line below measures them */
        bool memfd = ti.placement == TMEM_PLACEMENT_HOST_SHARED && res < pool_acc;
        printf("%-22s %9.1f MiB %9.1f MiB %+9.1f KiB%s\n", ti.name, demo_mib(pool_acc), demo_mib(res),
               ((double)res - (double)pool_acc) / 1024.0,
               ts.clean ? "  (+ clean file pages)" : memfd ? "  (memfd surfaces, outside the pool)" : "");
    }
    if (!r->measured) {
        printf("\n(process footprint not available here)\n");
        return;
    }
    printf("\nprocess (smaps_rollup, change over the session, before the report was written)\n");
    printf("  private dirty   accounted %9.1f MiB   OS %9.1f MiB   (%+.2f%%)\n",
           demo_mib(r->accounted_dirty), demo_mib(r->os_dirty),
           r->accounted_dirty ? 100.0 * ((double)r->os_dirty - (double)r->accounted_dirty) /
                                    (double)r->accounted_dirty
                              : 0.0);
    printf("  clean (file)    accounted %9.1f MiB   OS %9.1f MiB   (%+.2f%%)\n",
           demo_mib(r->accounted_clean), demo_mib(r->os_clean),
           r->accounted_clean ? 100.0 * ((double)r->os_clean - (double)r->accounted_clean) /
                                    (double)r->accounted_clean
                              : 0.0);
}

/* The typed session in this (child) process. */
static int typed_child(tmem_demo_options o, tmem_demo_result *r, bool print) {
    o.result = r;
    o.quiet = !print;
    tmem_context *ctx;
    tmem_status st = tmem_demo_run(&o, &ctx);
    if (st != TMEM_OK) {
        fprintf(stderr, "tmem demo: session failed: %s (%s)\n", tmem_strerror(st), tmem_status_name(st));
        return 1;
    }
    if (print) {
        printf("\nsession done in %.2f s\n\n", r->seconds);
        size_t need = 0;
        DEMO_IGNORE(tmem_stats_table(ctx, NULL, 0, &need));
        char *table = malloc(need ? need : 1);
        if (table && tmem_stats_table(ctx, table, need, NULL) == TMEM_OK) fputs(table, stdout);
        free(table);
    }
    if (print) measure(ctx, r);
    st = tmem_context_check(ctx);
    if (print) printf("\nconsistency check: %s\n", st == TMEM_OK ? "ok" : tmem_strerror(st));
    tmem_context_destroy(ctx);
    return st == TMEM_OK ? 0 : 1;
}

static int naive_child(const tmem_demo_options *o, tmem_demo_result *r) {
    tmem_status st = demo_naive_run(o, o->files, r);
    if (st != TMEM_OK) fprintf(stderr, "tmem demo: naive session failed: %s\n", tmem_strerror(st));
    return st == TMEM_OK ? 0 : 1;
}

/* Run one variant in a child; its result comes back through a pipe. */
static bool in_child(const tmem_demo_options *o, bool typed, bool print, tmem_demo_result *out) {
    memset(out, 0, sizeof *out);
    int fds[2];
    if (pipe(fds) != 0) return false;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        tmem_demo_result r;
        memset(&r, 0, sizeof r);
        int rc = typed ? typed_child(*o, &r, print) : naive_child(o, &r);
        fflush(NULL);
        ssize_t w = rc == 0 ? write(fds[1], &r, sizeof r) : 0;
        /* exit, not _exit: LeakSanitizer checks the child too */
        exit(rc == 0 && w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fds[1]);
    size_t got = 0;
    while (got < sizeof *out) {
        ssize_t n = read(fds[0], (char *)out + got, sizeof *out - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {}
    return got == sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void json(const tmem_demo_options *o, const tmem_demo_result *t, const tmem_demo_result *n) {
    printf("{\"version\":1,\"prompt_tokens\":%u,\"image_tokens\":%u,\"generated\":%u,"
           "\"image_side\":%u,"
           "\"typed\":{\"seconds\":%.3f,\"peak_private_dirty\":%llu,\"samples\":%llu,"
           "\"accounted_dirty\":%llu,"
           "\"accounted_clean\":%llu,\"os_dirty\":%llu,\"os_clean\":%llu,\"peak_committed\":%llu,"
           "\"peak_committed_dirty\":%llu,\"kv_bytes\":%llu,\"state_bytes\":%llu,"
           "\"snapshot_bytes\":%llu},"
           "\"predicted\":{\"total\":%llu,\"dirty\":%llu},"
           "\"plans\":{\"vision\":{\"arena\":%llu,\"lower_bound\":%llu,\"no_alias\":%llu},"
           "\"prefill\":{\"arena\":%llu,\"lower_bound\":%llu,\"no_alias\":%llu},"
           "\"decode\":{\"arena\":%llu,\"lower_bound\":%llu,\"no_alias\":%llu}},"
           "\"naive\":{\"seconds\":%.3f,\"peak_private_dirty\":%llu,\"samples\":%llu,"
           "\"weights_dirty\":%llu},"
           "\"ratio\":%.3f,\"report\":\"%s\"}\n",
           t->prompt_tokens, t->image_tokens, t->generated, o->image_side, t->seconds,
           (unsigned long long)t->peak_private_dirty, (unsigned long long)t->samples,
           (unsigned long long)t->accounted_dirty, (unsigned long long)t->accounted_clean,
           (unsigned long long)t->os_dirty, (unsigned long long)t->os_clean,
           (unsigned long long)t->peak_committed, (unsigned long long)t->peak_committed_dirty,
           (unsigned long long)t->kv_bytes, (unsigned long long)t->state_bytes,
           (unsigned long long)t->snapshot_bytes, (unsigned long long)t->predicted_total,
           (unsigned long long)t->predicted_dirty, (unsigned long long)t->plan_arena[0],
           (unsigned long long)t->plan_lower[0], (unsigned long long)t->plan_sum[0],
           (unsigned long long)t->plan_arena[1], (unsigned long long)t->plan_lower[1],
           (unsigned long long)t->plan_sum[1], (unsigned long long)t->plan_arena[2],
           (unsigned long long)t->plan_lower[2], (unsigned long long)t->plan_sum[2], n->seconds,
           (unsigned long long)n->peak_private_dirty, (unsigned long long)n->samples,
           (unsigned long long)n->weights_dirty,
           t->peak_private_dirty ? (double)n->peak_private_dirty / (double)t->peak_private_dirty
                                 : 0.0,
           t->report_written ? t->report : "");
}

static bool parse_frame(const char *v, void *out, const char **why) {
    tmem_demo_options *o = out;
    return tmem_cli_parse_dims(v, 16, 8192, &o->frame_width, &o->frame_height, why);
}

int tmem_demo_bookkeeping(int argc, char **argv) {
    tmem_demo_options o = {0};
    o.prompt_tokens = 512;
    o.decode_tokens = 64;
    o.image_side = 448;
    o.report_path = "tmem-demo-report.html";
    bool as_json = false, quick = false, have_prompt = false, have_decode = false, have_side = false;
    bool have_mib = false, have_budget = false;
    uint64_t budget_mib = 0, weights_mib = 0, budget = 0;
    const char *trace_out = NULL;
    tmem_cli_opt opts[] = {
        TMEM_CLI_FLAG("--quick", "a shorter session (64 prompt tokens, 224 px image, 8 generated) for tests", &quick),
        TMEM_CLI_FLAG("--json", "print the measured numbers as one JSON object (no per-step lines)", &as_json),
        TMEM_CLI_STR("--report", "OUT.html", "where to write the HTML report (default tmem-demo-report.html)",
                     &o.report_path),
        TMEM_CLI_STR("--trace", "FILE", "keep the session's trace file here (input for tmem report)", &trace_out),
        TMEM_CLI_SIZE("--budget", "the context's budget (default 1GiB)", &budget, 1, 0),
        TMEM_CLI_U64("--budget-mib", "N", "the context's budget in MiB", &budget_mib, 1, 1ull << 24),
        TMEM_CLI_U32("--prompt", "N", "text tokens in the prompt (default 512)", &o.prompt_tokens, 1,
                     DEMO_MAX_CONTEXT - 2048),
        TMEM_CLI_U32("--decode", "N", "tokens generated (default 64)", &o.decode_tokens, 1, DEMO_MAX_CONTEXT - 2048),
        TMEM_CLI_U32("--image-side", "N", "vision input side in pixels (default 448)", &o.image_side, 32, 2048),
        TMEM_CLI_CUSTOM("--frame", "WxH", "camera frame size (default 1280x720; 16..8192)", &o, parse_frame),
        TMEM_CLI_U64("--weights-mib", "N", "generate at most N MiB of text weights (embedding left out first)",
                     &weights_mib, 1, 1ull << 20),
    };
    opts[2].seen = NULL;
    opts[4].seen = &have_budget;
    opts[5].seen = &have_mib;
    opts[6].seen = &have_prompt;
    opts[7].seen = &have_decode;
    opts[8].seen = &have_side;
    tmem_cli cli = {"tmem demo --bookkeeping", "[options]",
                    "The memory bookkeeping of a Qwen3.5-0.8B-shaped VLM session without the model math\n"
                    "(generated GGUF weights, a camera frame, planned arenas, paged KV), accounted vs\n"
                    "measured, against a naive session. `tmem demo` alone runs the real model.",
                    opts, TMEM_CLI_COUNT(opts), NULL, 0, 0, "exit status: 0 ok, 1 a session failed, 2 usage error"};
    int rc = tmem_cli_parse(&cli, argc, argv);
    if (rc != TMEM_CLI_CONTINUE) return rc;
    if (have_mib && have_budget) return tmem_cli_usage_error(&cli, "give --budget or --budget-mib, not both");
    if (quick) { /* --quick sets the defaults; explicit values still win */
        if (!have_prompt) o.prompt_tokens = 64;
        if (!have_decode) o.decode_tokens = 8;
        if (!have_side) o.image_side = 224;
    }
    if (o.prompt_tokens + o.decode_tokens > DEMO_MAX_CONTEXT - 2048)
        return tmem_cli_usage_error(&cli, "--prompt + --decode must stay within %u tokens", DEMO_MAX_CONTEXT - 2048);
    o.budget = have_mib ? budget_mib << 20 : budget;
    o.weights_bytes = weights_mib << 20;
    bool print = !as_json;
    if (print)
        printf("typedmem demo: a Qwen3.5-0.8B-shaped VLM session (%u prompt tokens + a %ux%u image, %u generated), "
               "budget %llu MiB\n\n",
               o.prompt_tokens, o.image_side, o.image_side, o.decode_tokens,
               (unsigned long long)((o.budget ? o.budget : 1ull << 30) >> 20));

    char dir[512], trace[600];
    demo_model_files files;
    if (!demo_temp_dir(dir, sizeof dir)) {
        perror("tmem demo: temporary directory");
        return 1;
    }
    tmem_status st = demo_model_generate(dir, o.weights_bytes, &files);
    if (st != TMEM_OK) {
        fprintf(stderr, "tmem demo: cannot generate the model files: %s\n", tmem_strerror(st));
        (void)rmdir(dir);
        return 1;
    }
    if (print)
        printf("  generated %s (%.1f MiB) and its mmproj (%.1f MiB) with the GGUF writer\n\n", files.text,
               demo_mib(files.text_bytes), demo_mib(files.mmproj_bytes));
    if (trace_out) snprintf(trace, sizeof trace, "%s", trace_out);
    else snprintf(trace, sizeof trace, "%s/session.tmtrace", dir);
    o.files = &files;
    o.trace_path = trace;

    tmem_demo_result typed, naive;
    bool ok = in_child(&o, true, print, &typed);
    if (ok) ok = in_child(&o, false, false, &naive);
    demo_model_files_free(&files);
    if (!trace_out) (void)unlink(trace);
    (void)rmdir(dir);
    if (!ok) {
        fprintf(stderr, "tmem demo: a session failed\n");
        return 1;
    }
    if (as_json) {
        json(&o, &typed, &naive);
        return 0;
    }
    printf("\npredicted vs actual: fit %.1f MiB dirty (+ %.1f MiB clean weights); "
           "the session committed at most %.1f MiB dirty (%+.1f%%)\n",
           demo_mib(typed.predicted_dirty), demo_mib(typed.predicted_total - typed.predicted_dirty),
           demo_mib(typed.peak_committed_dirty),
           typed.predicted_dirty
               ? 100.0 * ((double)typed.peak_committed_dirty - (double)typed.predicted_dirty) /
                     (double)typed.predicted_dirty
               : 0.0);
    printf("planned arenas: vision %.1f MiB (no aliasing: %.1f), prefill %.1f MiB (%.1f), decode %.2f MiB (%.2f)\n",
           demo_mib(typed.plan_arena[0]), demo_mib(typed.plan_sum[0]), demo_mib(typed.plan_arena[1]),
           demo_mib(typed.plan_sum[1]), demo_mib(typed.plan_arena[2]), demo_mib(typed.plan_sum[2]));
    printf("\npeak private dirty (OS, each session in its own process, %llu / %llu samples):\n",
           (unsigned long long)typed.samples, (unsigned long long)naive.samples);
    printf("  typed   %9.1f MiB   (weights mapped clean, planned arenas, paged KV, one image copy)   %.2f s\n",
           demo_mib(typed.peak_private_dirty), typed.seconds);
    printf("  naive   %9.1f MiB   (malloc per tensor, a copy per image stage, max-length KV)        %.2f s\n",
           demo_mib(naive.peak_private_dirty), naive.seconds);
    printf("  naive / typed = %.2fx\n",
           typed.peak_private_dirty
               ? (double)naive.peak_private_dirty / (double)typed.peak_private_dirty
               : 0.0);
    uint64_t nw = naive.peak_private_dirty > naive.weights_dirty ? naive.peak_private_dirty - naive.weights_dirty : 0;
    printf("  without the weights (naive: %.1f MiB of them, dirty): naive %.1f MiB, typed %.1f MiB = %.2fx\n",
           demo_mib(naive.weights_dirty), demo_mib(nw), demo_mib(typed.peak_private_dirty),
           typed.peak_private_dirty ? (double)nw / (double)typed.peak_private_dirty : 0.0);
    if (typed.report_written) printf("\nHTML report: %s\n", typed.report);
    printf("reproduce: make demo   (or: tmem demo --json)\n");
    return 0;
}

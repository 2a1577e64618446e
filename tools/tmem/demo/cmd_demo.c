/* tmem demo: typed memory for one Qwen3.5-0.8B-shaped VLM session.
 *
 * Without the model math but with every byte real: the weights are a GGUF
 * pair generated with the library's writer and mapped (FILE type, clean
 * pages) and read; the fit calculator predicts the session's memory from the
 * GGUF metadata; a camera frame lands in an NV12 surface and one fused
 * conversion writes the vision encoder's input tensor; the encoder's and the
 * decoder's intermediates live in planned arenas (one plan per phase, bound
 * once, reused by every layer); the paged KV cache and the recurrent state
 * grow token by token, with a snapshot at the end of the prompt; generated
 * tokens go to their ring. Everything runs under one budget, traced, and the
 * HTML report is written at the end.
 *
 * The session is a list of steps (see `steps` below); the steps live in
 * demo_*.c. demo_compare.c runs this session and the naive one in forked
 * children and prints the comparison.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "commands.h"
#include "demo/demo_session.h"

typedef struct demo_step {
    const char *name;
    const char *what;
    tmem_status (*run)(session *s);
} demo_step;

static const demo_step steps[] = {
    {"trace", "trace every event of the session to a file", demo_step_trace},
    {"model", "map the GGUF pair (FILE type, clean pages) and read it through", demo_step_model},
    {"predict", "tmem_fit from the GGUF metadata: the session's predicted memory", demo_step_predict},
    {"plans", "layer graphs -> lifetime planner: vision, prefill, decode arenas", demo_step_plans},
    {"heaps", "placement heaps for the plans, paged KV cache, token ring, logits", demo_step_heaps},
    {"image", "camera-like NV12 frame in a surface (/memory/images)", demo_step_image},
    {"pixels", "one fused conversion: resize, YUV->RGB, mean/std, HWC->CHW", demo_step_pixels},
    {"vision", "vision encoder: every block in the same planned arena", demo_step_vision},
    {"prefill", "prompt + image tokens: KV rows, recurrent state, snapshot", demo_step_prefill},
    {"decode", "KV grows token by token, decode plan, token ring", demo_step_decode},
    {"report", "stop the trace, write the HTML report", demo_step_report},
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

char *demo_temp_dir(char *dir, size_t cap) {
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(dir, cap, "%s/tmem-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return n > 0 && (size_t)n < cap ? mkdtemp(dir) : NULL;
}

double demo_mib(uint64_t bytes) { return (double)bytes / 1048576.0; }

void demo_touch(void *p, uint64_t n, uint32_t salt) { memset(p, (int)(salt * 37u + 1u) & 0xff, (size_t)n); }

void demo_sample(tmem_demo_result *res, uint64_t base) {
    tmem_footprint fp;
    if (!res || tmem_footprint_read(&fp) != TMEM_OK) return;
    uint64_t d = fp.private_dirty > base ? fp.private_dirty - base : 0;
    if (d > res->peak_private_dirty) res->peak_private_dirty = d;
    res->samples++;
}

/* The KV cache and the surface are the context's too (destroyed with it,
 * newest first); the plans are plain memory. */
static void destroy_owned(void *p) {
    demo_owned *o = p;
    demo_plan_free(&o->vision);
    demo_plan_free(&o->prefill);
    demo_plan_free(&o->decode);
    free(o);
}

/* The session's end: what the context accounts against what the OS
 * measured since the start (taken before the report step, whose trace
 * loading and HTML export are tooling, not the session). */
static void measure_end(session *s) {
    tmem_footprint fp;
    tmem_demo_result *r = s->res;
    if (!r || tmem_footprint_read(&fp) != TMEM_OK ||
        tmem_context_accounted(s->ctx, &r->accounted_dirty, &r->accounted_clean) != TMEM_OK)
        return;
    const tmem_footprint *b = &s->fp_start;
    r->os_dirty = fp.private_dirty > b->private_dirty ? fp.private_dirty - b->private_dirty : 0;
    uint64_t c0 = b->private_clean + b->shared_clean, c1 = fp.private_clean + fp.shared_clean;
    r->os_clean = c1 > c0 ? c1 - c0 : 0;
    r->measured = true;
}

static tmem_status run_steps(session *s) {
    tmem_status st = TMEM_OK;
    size_t i = 0;
    for (; i < sizeof steps / sizeof steps[0] && st == TMEM_OK; i++) {
        double t0 = now_s();
        if (steps[i].run == demo_step_report) measure_end(s);
        if (s->opt->trace_path && strcmp(steps[i].name, "report") != 0)
            DEMO_IGNORE(tmem_trace_mark(s->ctx, steps[i].name));
        st = steps[i].run(s);
        demo_sample(s->res, s->fp_base);
        if (!s->opt->quiet) {
            tmem_budget_info bi;
            DEMO_IGNORE(tmem_context_budget(s->ctx, &bi));
            printf("  %-8s %-66s %7.1f MiB committed %6.0f ms%s%s\n", steps[i].name, steps[i].what,
                   demo_mib(bi.committed), (now_s() - t0) * 1e3, st == TMEM_OK ? "" : "  FAILED: ",
                   st == TMEM_OK ? "" : tmem_strerror(st));
            fflush(stdout);
        }
    }
    /* A failed session still gets its report: that is when it is needed most. */
    if (st != TMEM_OK && i < sizeof steps / sizeof steps[0] && s->traced) {
        tmem_status rst = demo_step_report(s);
        if (s->res && s->res->report_written)
            fprintf(stderr, "tmem demo: the failed session's HTML report: %s\n", s->res->report);
        else if (rst != TMEM_OK)
            fprintf(stderr, "tmem demo: no report for the failed session: %s\n", tmem_strerror(rst));
    }
    return st;
}

tmem_status tmem_demo_run(const tmem_demo_options *opt, tmem_context **out_ctx) {
    *out_ctx = NULL;
    session s;
    memset(&s, 0, sizeof s);
    s.opt = opt;
    s.res = opt->result;
    s.side = opt->image_side ? opt->image_side : 448;
    if (tmem_footprint_read(&s.fp_start) == TMEM_OK) s.fp_base = s.fp_start.private_dirty;
    double t0 = now_s();

    /* The model files: given by the caller, or generated here (and deleted:
     * the mappings keep them alive until the context goes). */
    demo_model_files own_files;
    const demo_model_files *files = opt->files;
    char dir[512];
    if (!files) {
        if (!demo_temp_dir(dir, sizeof dir)) return TMEM_E_IO;
        tmem_status st = demo_model_generate(dir, opt->weights_bytes, &own_files);
        if (st != TMEM_OK) {
            (void)rmdir(dir);
            return st;
        }
        files = &own_files;
    }
    snprintf(s.gguf_path, sizeof s.gguf_path, "%s", files->text);
    snprintf(s.mmproj_path, sizeof s.mmproj_path, "%s", files->mmproj);

    tmem_context_desc cd = {0};
    cd.budget = opt->budget ? opt->budget : 1ull << 30;
    cd.flags = TMEM_CONTEXT_READ_ENV;
    tmem_status st = tmem_cli_context_create(opt->command ? opt->command : "tmem demo", &cd, &s.ctx);
    if (st == TMEM_OK) {
        s.own = calloc(1, sizeof *s.own);
        st = s.own ? tmem_context_attach(s.ctx, s.own, destroy_owned) : TMEM_E_NO_MEMORY;
        if (st != TMEM_OK) free(s.own);
    }
    if (st == TMEM_OK) st = run_steps(&s);
    if (files == &own_files) {
        demo_model_files_free(&own_files);
        (void)rmdir(dir);
    }
    if (st != TMEM_OK) {
        tmem_context_destroy(s.ctx);
        return st;
    }
    if (s.res) {
        tmem_budget_info bi;
        uint64_t clean = 0, dirty = 0;
        s.res->seconds = now_s() - t0;
        if (tmem_context_budget(s.ctx, &bi) == TMEM_OK && tmem_context_accounted(s.ctx, &dirty, &clean) == TMEM_OK) {
            s.res->peak_committed = bi.peak_committed;
            /* the mapped weights stay for the whole session: the rest of the peak is dirty */
            s.res->peak_committed_dirty = bi.peak_committed > clean ? bi.peak_committed - clean : 0;
        }
    }
    *out_ctx = s.ctx;
    return TMEM_OK;
}

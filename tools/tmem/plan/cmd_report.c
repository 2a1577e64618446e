/* tmem report TRACE [--html out.html] [--json] [--chrome out.json]
 *                   [--svg out.svg] [--plan plan.svg] [--title T] [--top N]
 *
 * Reads a trace file (tmem_trace_start with a path, or tmem_trace_data_save)
 * and prints what was alive at the peak (or the summary JSON with --json);
 * writes the HTML report, Chrome/Perfetto JSON and SVG timeline on request. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "commands.h"
#include "cli/progress.h"
#include "typedmem/typedmem.h"

/* A trace file, or standard input for "-". */
static tmem_status load_trace(const char *path, tmem_trace_data **out) {
    if (strcmp(path, "-")) return tmem_trace_load(path, out);
    size_t len = 0;
    char *bytes = tmem_cli_slurp(path, &len);
    if (!bytes) return TMEM_E_IO;
    tmem_status st = tmem_trace_load_memory(bytes, len, out);
    free(bytes);
    return st;
}

static int fail(const char *what, const char *path, tmem_status st) {
    fprintf(stderr, "tmem report: %s %s: %s (%s)\n", what, path, tmem_strerror(st), tmem_status_name(st));
    return 1;
}

int tmem_cmd_report(int argc, char **argv) {
    const char *trace = NULL, *html = NULL, *chrome = NULL, *svg = NULL, *plan = NULL;
    bool json = false;
    tmem_report_desc rd = {0};
    const tmem_cli_opt opts[] = {
        TMEM_CLI_FLAG("--json", "print the summary JSON instead of the text tables", &json),
        TMEM_CLI_STR("--html", "OUT", "write the self-contained HTML report", &html),
        TMEM_CLI_STR("--chrome", "OUT",
                     "write Chrome/Perfetto trace JSON (ui.perfetto.dev, chrome://tracing)",
                     &chrome),
        TMEM_CLI_STR("--svg", "OUT", "write the SVG timeline", &svg),
        TMEM_CLI_STR("--plan", "FILE",
                     "show this plan picture (SVG, '-' = stdin) in the HTML report", &plan),
        TMEM_CLI_STR("--title", "TEXT", "title of the HTML report", &rd.title),
        TMEM_CLI_U32("--top", "N", "rows per 'alive at the peak' table (default 10)", &rd.top, 1,
                     TMEM_TRACE_TOP_MAX),
    };
    const char **pos[] = {&trace};
    tmem_cli cli = {"tmem report", "TRACE [options]",
                    "Read a typedmem trace file (TRACE '-' = stdin; see docs/trace.md), print what was alive\n"
                    "at the peak, and write the HTML report, Chrome/Perfetto JSON or SVG timeline on request.",
                    opts, TMEM_CLI_COUNT(opts), pos, 1, 1, NULL};
    int cli_rc = tmem_cli_parse(&cli, argc, argv);
    if (cli_rc != TMEM_CLI_CONTINUE) return cli_rc;
    if (plan && trace && !strcmp(plan, "-") && !strcmp(trace, "-"))
        return tmem_cli_usage_error(&cli, "TRACE and --plan cannot both be standard input");

    tmem_progress prog;
    { /* an output may not be the trace or the plan it is made from, nor a special file */
        const char *in[] = {trace, plan}, *out[] = {html, chrome, svg};
        for (size_t i = 0; i < 3; i++) {
            tmem_out_error oe;
            if (out[i] && tmem_out_check(out[i], in, 2, &oe) != TMEM_OK) {
                fprintf(stderr, "tmem report: %s\n", oe.message);
                return 2;
            }
        }
    }
    tmem_progress_begin(&prog, "report", 2u + (html != NULL) + (chrome != NULL) + (svg != NULL));
    char *plan_text = NULL;
    if (plan && !(plan_text = tmem_cli_slurp(plan, NULL))) {
        tmem_progress_end(&prog);
        fprintf(stderr, "tmem report: cannot read plan %s: %s\n", plan, strerror(errno));
        return 1;
    }
    rd.plan_svg = plan_text;
    tmem_trace_data *data;
    tmem_status st = load_trace(trace, &data);
    uint64_t step = 1;
    tmem_progress_update(&prog, step++);
    if (st != TMEM_OK) {
        tmem_progress_end(&prog);
        free(plan_text);
        const char *why = tmem_cli_path_problem(trace);
        if (why) {
            fprintf(stderr, "tmem report: cannot load %s: %s\n", trace, why);
            return 1;
        }
        return fail("cannot load", trace, st);
    }
    int rc = 0;
    char *text = NULL;
    st = tmem_trace_export(data, json ? TMEM_TRACE_FORMAT_SUMMARY_JSON : TMEM_TRACE_FORMAT_PEAK_TEXT, &rd, &text, NULL);
    tmem_progress_update(&prog, step++);
    if (st != TMEM_OK) rc = fail("cannot analyse", trace, st);
    const struct { const char *path; tmem_trace_format format; const char *what; } outs[] = {
        {html, TMEM_TRACE_FORMAT_HTML, "HTML report"},
        {chrome, TMEM_TRACE_FORMAT_CHROME_JSON, "Chrome/Perfetto trace"},
        {svg, TMEM_TRACE_FORMAT_SVG, "SVG timeline"},
    };
    char done[3][512];
    int ndone = 0;
    for (size_t i = 0; rc == 0 && i < sizeof outs / sizeof outs[0]; i++) {
        if (!outs[i].path) continue;
        st = tmem_trace_export_file(data, outs[i].format, &rd, outs[i].path);
        tmem_progress_update(&prog, step++);
        /* With the HTML format, an invalid argument can only be the plan picture. */
        if (st == TMEM_E_INVALID_ARG && outs[i].format == TMEM_TRACE_FORMAT_HTML && plan) {
            fprintf(stderr, "tmem report: plan %s is not an SVG picture (one <svg> element); %s not written\n",
                    plan, outs[i].path);
            rc = 1;
        } else if (st != TMEM_OK) {
            rc = fail("cannot write", outs[i].path, st);
        }
        else snprintf(done[ndone++], sizeof done[0], "%s: %s", outs[i].what, outs[i].path);
    }
    tmem_progress_end(&prog);
    if (rc == 0) {
        fputs(text, stdout);
        /* With --json stdout is the JSON document alone; paths go to stderr. */
        for (int i = 0; i < ndone; i++) fprintf(json ? stderr : stdout, "%s\n", done[i]);
    }
    tmem_trace_string_free(text);
    tmem_trace_data_destroy(data);
    free(plan_text);
    return rc;
}

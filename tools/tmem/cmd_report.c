/* tmem report TRACE [--html out.html] [--json] [--chrome out.json]
 *                   [--svg out.svg] [--plan plan.svg] [--title T] [--top N]
 *
 * Reads a trace file (tmem_trace_start with a path, or tmem_trace_data_save)
 * and prints what was alive at the peak (or the summary JSON with --json);
 * writes the HTML report, Chrome/Perfetto JSON and SVG timeline on request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "progress.h"
#include "typedmem/typedmem.h"

static int usage(void) {
    fprintf(stderr,
            "usage: tmem report TRACE [--html OUT.html] [--json] [--chrome OUT.json] [--svg OUT.svg]\n"
            "                         [--plan PLAN.svg] [--title TEXT] [--top N]\n"
            "  TRACE          a typedmem trace file (see docs/trace.md)\n"
            "  --json         print the summary JSON instead of the text tables\n"
            "  --html OUT     write the self-contained HTML report\n"
            "  --chrome OUT   write Chrome/Perfetto trace JSON (ui.perfetto.dev, chrome://tracing)\n"
            "  --svg OUT      write the SVG timeline\n"
            "  --plan FILE    embed this plan picture (SVG) in the HTML report\n"
            "  --title TEXT   title of the HTML report\n"
            "  --top N        rows per 'alive at the peak' table (1..16, default 10)\n");
    return 2;
}

/* Whole file as a NUL-terminated string; NULL on error. */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 1 >= cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *p = realloc(buf, ncap);
            if (!p) break;
            buf = p, cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (!got) break;
    }
    bool ok = buf && !ferror(f);
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

static int fail(const char *what, const char *path, tmem_status st) {
    fprintf(stderr, "tmem report: %s %s: %s (%s)\n", what, path, tmem_strerror(st), tmem_status_name(st));
    return 1;
}

int tmem_cmd_report(int argc, char **argv) {
    const char *trace = NULL, *html = NULL, *chrome = NULL, *svg = NULL, *plan = NULL;
    bool json = false;
    tmem_report_desc rd = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--html") && has_value) html = argv[++i];
        else if (!strcmp(a, "--chrome") && has_value) chrome = argv[++i];
        else if (!strcmp(a, "--svg") && has_value) svg = argv[++i];
        else if (!strcmp(a, "--plan") && has_value) plan = argv[++i];
        else if (!strcmp(a, "--title") && has_value) rd.title = argv[++i];
        else if (!strcmp(a, "--top") && has_value) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > TMEM_TRACE_TOP_MAX) return usage();
            rd.top = (uint32_t)n;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        } else if (a[0] != '-' && !trace) trace = a;
        else return usage();
    }
    if (!trace) return usage();

    tmem_progress prog;
    tmem_progress_begin(&prog, "report", 2u + (html != NULL) + (chrome != NULL) + (svg != NULL));
    char *plan_text = NULL;
    if (plan && !(plan_text = slurp(plan))) {
        tmem_progress_end(&prog);
        return fail("cannot read plan", plan, TMEM_E_IO);
    }
    rd.plan_svg = plan_text;
    tmem_trace_data *data;
    tmem_status st = tmem_trace_load(trace, &data);
    uint64_t step = 1;
    tmem_progress_update(&prog, step++);
    if (st != TMEM_OK) {
        tmem_progress_end(&prog);
        free(plan_text);
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
        if (st != TMEM_OK) rc = fail("cannot write", outs[i].path, st);
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

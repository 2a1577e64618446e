/* The HTML report in a real browser: `tmem report TRACE --html --plan` on a
 * fixture session, opened in headless Chromium. Checks that the page runs
 * with no console message at all (errors, exceptions, CSP violations: a
 * control page proves each is caught), and that the dumped DOM shows the
 * timeline (one non-empty area per memory type, the peak, the budget) and
 * the plan picture (an image). Skips (exit 77) when chromium is not installed.
 * TMEM_REPORT_SCREENSHOT=path also saves a 1400x1600 screenshot there. */
#include <stdlib.h>
#include <string.h>
#include "trace_fixture.h"

#include "browser_util.h"

/* The control: the same logging catches an error, an exception and a CSP
 * violation, so "no console lines" below means something. */
static void test_control(void) {
    char page[300], dom[300], log[300];
    snprintf(page, sizeof page, "%s/control.html", dir);
    snprintf(dom, sizeof dom, "%s/control.dom", dir);
    snprintf(log, sizeof log, "%s/control.log", dir);
    FILE *f = fopen(page, "w");
    REQUIRE(f);
    fputs("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "script-src 'unsafe-inline'\"></head><body><img src=\"http://127.0.0.1:9/x.png\">"
          "<script>console.error('tmem-control-error');undefinedTmemFn();</script></body></html>", f);
    fclose(f);
    CHECK(browse(page, "--dump-dom", dom, log) == 0);
    char *l = slurp(log);
    REQUIRE(l);
    CHECK(console_lines(l, "tmem-control-error") == 1);
    CHECK(console_lines(l, "undefinedTmemFn") == 1);
    CHECK(console_lines(l, "Content Security Policy") >= 1);
    free(l);
}

/* The planner's own picture of a small plan (include/typedmem/plan.h). */
enum { PLAN_BUFFERS = 12 };
static bool write_plan(const char *path) {
    char csv[1024];
    int n = snprintf(csv, sizeof csv, "id,lower,upper,size\n");
    for (int i = 0; i < PLAN_BUFFERS; i++) /* a chain of overlapping intermediates */
        n += snprintf(csv + n, sizeof csv - (size_t)n, "b%d,%d,%d,%d\n", i, i, i + 2 + i % 3, 4096 * (1 + i % 4));
    tmem_plan_problem *prob;
    tmem_plan *plan = NULL;
    if (tmem_plan_problem_parse_csv(csv, (size_t)n, &prob, NULL) != TMEM_OK) return false;
    tmem_plan_desc pd = {0};
    pd.flags = TMEM_PLAN_HEURISTIC_ONLY;
    tmem_plan_svg_desc sd = {0};
    sd.title = "fixture plan";
    FILE *f = NULL;
    bool ok = tmem_plan_solve(prob, &pd, &plan) == TMEM_OK && (f = fopen(path, "w")) != NULL &&
              tmem_plan_write_svg(plan, &sd, f) == TMEM_OK;
    if (f && fclose(f) != 0) ok = false;
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(prob);
    return ok;
}

/* The element text starting at the first `open` after `from`, up to `close`. */
static char *element(const char *from, const char *open, const char *close) {
    const char *a = from ? strstr(from, open) : NULL;
    const char *b = a ? strstr(a, close) : NULL;
    if (!b) return NULL;
    size_t n = (size_t)(b - a) + strlen(close);
    char *s = malloc(n + 1);
    memcpy(s, a, n);
    s[n] = '\0';
    return s;
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void test_report(void) {
    const char *tool = getenv("TMEM_TOOL");
    REQUIRE(tool);
    tmem_trace_data *d = fx_session(40);
    REQUIRE(d);
    char trace[300], plan[300], html[300], dom[300], log[300], cmd[2400];
    snprintf(trace, sizeof trace, "%s/session.tmtrace", dir);
    snprintf(plan, sizeof plan, "%s/plan.svg", dir);
    snprintf(html, sizeof html, "%s/report.html", dir);
    snprintf(dom, sizeof dom, "%s/report.dom", dir);
    snprintf(log, sizeof log, "%s/report.log", dir);
    REQUIRE_OK(tmem_trace_data_save(d, trace));
    uint64_t ev, peak = fx_brute_peak(d, &ev, NULL);
    tmem_trace_data_destroy(d);
    REQUIRE(write_plan(plan));
    snprintf(cmd, sizeof cmd, "%s report %s --html %s --plan %s --title 'fixture session' >%s/report.txt", tool, trace, html, plan, dir);
    REQUIRE(system(cmd) == 0);

    REQUIRE(browse(html, "--dump-dom", dom, log) == 0);
    char *l = slurp(log), *p = slurp(dom);
    REQUIRE(l && p);
    CHECK_MSG(console_lines(l, NULL) == 0, "the report wrote to the console");
    CHECK(strstr(p, "data-report-ready=\"1\"") != NULL); /* the inline script ran to its end */
    /* the hover readout was drawn at the peak column of both timelines */
    CHECK_MSG(count(p, "data-hover-ok=\"1\"") == 2, "%zu timelines with a working readout", count(p, "data-hover-ok=\"1\""));
    char *tl = element(p, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"tmem-timeline\"", "</svg>");
    REQUIRE(tl);
    const char *types[] = {"/memory/weights", "/memory/kv", "/memory/activations", "/memory/images"};
    for (int i = 0; i < 4; i++) {
        char anchor[96];
        snprintf(anchor, sizeof anchor, "<path class=\"series\" data-series=\"%s\"", types[i]);
        char *path = element(tl, anchor, ">");
        CHECK_MSG(path != NULL, "no series %s in the timeline", types[i]);
        if (!path) continue;
        const char *dd = strstr(path, " d=\"M");
        CHECK_MSG(dd && strlen(dd) > 200, "series %s is empty", types[i]);
        free(path);
    }
    char want[64];
    snprintf(want, sizeof want, "<g class=\"peak\" data-bytes=\"%llu\"", (unsigned long long)peak);
    CHECK(strstr(tl, want) != NULL);
    CHECK(strstr(tl, "<g class=\"budget\"") != NULL);
    char *rl = element(p, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"tmem-timeline-role\"", "</svg>");
    REQUIRE(rl);
    CHECK(count(rl, "<path class=\"series\" data-series=\"kv_cache\"") == 1 && count(rl, "<path class=\"series\"") == 5);
    free(rl);
    /* the plan picture is an image (nothing in it can run) that the browser decoded */
    char *pl = element(p, "<div class=\"panel\" id=\"tmem-plan\">", "</div>");
    REQUIRE(pl);
    CHECK(strstr(pl, "<img") && strstr(pl, "src=\"data:image/svg+xml;base64,"));
    CHECK_MSG(strstr(pl, "data-plan-loaded=\"1\"") != NULL, "the plan image did not load");
    char *picture = img_data(pl);
    REQUIRE(picture);
    CHECK(strstr(picture, "<svg") && strstr(picture, "fixture plan"));
    CHECK_MSG(count(picture, "fill=\"hsl(") == PLAN_BUFFERS, "%zu buffer rects in the plan", count(picture, "fill=\"hsl("));
    free(picture);
    /* the CSP names the one script by its hash: no 'unsafe-inline' scripts */
    CHECK(strstr(p, "script-src 'sha256-") && !strstr(p, "script-src 'unsafe-inline'"));
    CHECK(strstr(p, "id=\"tmem-peak-name\"") != NULL);
    printf("report: %zu bytes of DOM, timeline %zu bytes, plan %zu bytes\n", strlen(p), strlen(tl), strlen(pl));
    free(tl);
    free(pl);
    free(l);
    free(p);

    const char *shot = getenv("TMEM_REPORT_SCREENSHOT");
    if (shot && *shot) {
        char extra[600];
        snprintf(extra, sizeof extra, "--screenshot=%s --window-size=1400,1600 --hide-scrollbars", shot);
        CHECK(browse(html, extra, dom, log) == 0);
        printf("screenshot: %s\n", shot);
    }
}

int main(void) {
    if (!find_browser()) {
        printf("SKIP: chromium not found (apt-get install chromium); the HTML report was not opened in a browser\n");
        return SKIP_CODE;
    }
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    printf("browser: %s, scratch: %s\n", browser, dir);
    RUN(test_control);
    RUN(test_report);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!tmem_test_failures && system(cmd) != 0) printf("could not remove %s\n", dir);
    return tmem_test_finish();
}

/* Hostile plan pictures cannot run script in the HTML report, by
 * construction (the plan is an <img> with a data: URL; the CSP allows only
 * the report's own script, by hash). Each payload is first inlined raw in a
 * permissive control page, where the ones that can fire must fire (so the
 * payloads are live and the check below can fail), then given to
 * `tmem report --plan` and opened in headless Chromium: the title must be
 * ours, no marker in the DOM or the console, the report's own script ran.
 * Skips (exit 77) when chromium is not installed. */
#include <stdlib.h>
#include "trace_fixture.h"
#include "browser_util.h"

#define FIRE "document.title='PWNED';console.log('tmem-pwned')"
#define SVG_OPEN "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "

static const struct {
    const char *what;
    bool fires_inline; /* runs when pasted into a page that allows inline script */
    const char *svg;
} payloads[] = {
    {"onload attribute", true, SVG_OPEN "width=\"20\" height=\"20\" onload=\"" FIRE "\"><rect width=\"20\" height=\"20\"/></svg>"},
    {"image onerror", true, SVG_OPEN "width=\"20\" height=\"20\"><image href=\"x\" onerror=\"" FIRE "\"/></svg>"},
    {"script element", true, SVG_OPEN "width=\"20\" height=\"20\"><script>" FIRE "</script></svg>"},
    {"foreignObject html", true,
     SVG_OPEN "width=\"20\" height=\"20\"><foreignObject width=\"20\" height=\"20\"><img xmlns=\"http://www.w3.org/1999/xhtml\" "
              "src=\"x\" onerror=\"" FIRE "\"/></foreignObject></svg>"},
    {"break out of the svg", true,
     SVG_OPEN "width=\"20\" height=\"20\"><title>t</title></svg><img src=\"x\" onerror=\"" FIRE "\"><svg></svg>"},
    {"javascript: hrefs", false,
     SVG_OPEN "width=\"20\" height=\"20\"><a href=\"javascript:" FIRE "\"><rect width=\"20\" height=\"20\"/></a>"
              "<a xlink:href=\"javascript:" FIRE "\"><text y=\"10\">x</text></a>"
              "<set attributeName=\"href\" to=\"javascript:" FIRE "\"/></svg>"},
    {"css tricks", false,
     SVG_OPEN "width=\"20\" height=\"20\"><style>@import url(http://127.0.0.1:9/x.css);"
              "rect{fill:url(http://127.0.0.1:9/p.svg#a)}svg{background:url(javascript:alert(1))}</style>"
              "<rect width=\"20\" height=\"20\" style=\"filter:url(http://127.0.0.1:9/f.svg#f)\"/></svg>"},
    {"animate into an event handler", false,
     SVG_OPEN "width=\"20\" height=\"20\"><rect width=\"20\" height=\"20\"><animate attributeName=\"onclick\" "
              "to=\"" FIRE "\" dur=\"1s\"/></rect><use href=\"data:image/svg+xml,<svg id='a' "
              "xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>#a\"/></svg>"},
};

static bool write_text(const char *path, const char *a, const char *b, const char *c) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fputs(a, f);
    fputs(b, f);
    fputs(c, f);
    return fclose(f) == 0;
}

static void test_payloads_are_live(void) {
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        if (!payloads[i].fires_inline) continue;
        char page[300], dom[300], log[300];
        snprintf(page, sizeof page, "%s/control%zu.html", dir, i);
        snprintf(dom, sizeof dom, "%s/control%zu.dom", dir, i);
        snprintf(log, sizeof log, "%s/control%zu.log", dir, i);
        REQUIRE(write_text(page, "<!DOCTYPE html><html><head><title>control</title></head><body>", payloads[i].svg,
                           "</body></html>"));
        CHECK(browse(page, "--dump-dom", dom, log) == 0);
        char *d = slurp(dom);
        REQUIRE(d);
        CHECK_MSG(strstr(d, "<title>PWNED</title>") != NULL, "control: payload '%s' did not fire inline",
                  payloads[i].what);
        free(d);
    }
}

static void test_report_runs_none(void) {
    const char *tool = getenv("TMEM_TOOL");
    REQUIRE(tool);
    tmem_trace_data *data = fx_session(20);
    REQUIRE(data);
    char trace[300];
    snprintf(trace, sizeof trace, "%s/session.tmtrace", dir);
    REQUIRE_OK(tmem_trace_data_save(data, trace));
    tmem_trace_data_destroy(data);
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        char svg[300], html[300], dom[300], log[300], cmd[1600], title[64];
        snprintf(svg, sizeof svg, "%s/hostile%zu.svg", dir, i);
        snprintf(html, sizeof html, "%s/hostile%zu.html", dir, i);
        snprintf(dom, sizeof dom, "%s/hostile%zu.dom", dir, i);
        snprintf(log, sizeof log, "%s/hostile%zu.log", dir, i);
        snprintf(title, sizeof title, "hostile %zu", i);
        REQUIRE(write_text(svg, payloads[i].svg, "\n", ""));
        snprintf(cmd, sizeof cmd, "'%s' report '%s' --html '%s' --plan '%s' --title '%s' >/dev/null", tool, trace, html,
                 svg, title);
        CHECK_MSG(system(cmd) == 0, "tmem report refused payload '%s'", payloads[i].what);
        CHECK(browse(html, "--dump-dom", dom, log) == 0);
        char *d = slurp(dom), *l = slurp(log);
        REQUIRE(d && l);
        char want[96];
        snprintf(want, sizeof want, "<title>%s</title>", title);
        CHECK_MSG(strstr(d, want) != NULL && !strstr(d, "PWNED"), "payload '%s' changed the page", payloads[i].what);
        CHECK_MSG(console_lines(l, "tmem-pwned") == 0, "payload '%s' logged", payloads[i].what);
        CHECK_MSG(console_lines(l, NULL) == 0, "payload '%s': the report logged to the console", payloads[i].what);
        CHECK_MSG(strstr(d, "data-report-ready=\"1\"") != NULL, "payload '%s': the report's script did not run",
                  payloads[i].what);
        CHECK(strstr(d, "id=\"tmem-plan-img\"") != NULL);
        free(d);
        free(l);
    }
}

int main(void) {
    if (!find_browser()) {
        printf("SKIP: chromium not found (apt-get install chromium); hostile plan pictures were not opened\n");
        return 77;
    }
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    printf("browser: %s, scratch: %s\n", browser, dir);
    RUN(test_payloads_are_live);
    RUN(test_report_runs_none);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!tmem_test_failures && system(cmd) != 0) printf("could not remove %s\n", dir);
    return tmem_test_finish();
}

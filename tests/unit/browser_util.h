/* Headless Chromium for the HTML report tests (test_report_html.c,
 * test_report_hostile.c): find the browser, open a page with --dump-dom or
 * --screenshot, read the console lines it logged. Header-only; the test sets
 * `dir` (scratch) before browsing. */
#ifndef TMEM_TEST_BROWSER_UTIL_H
#define TMEM_TEST_BROWSER_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "data_url.h"

#define SKIP_CODE 77

static char dir[256] __attribute__((unused)); /* scratch directory: profile, pages, dumps */
static char browser[256] __attribute__((unused));

static inline bool find_browser(void) {
    const char *names[] = {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", names[i]);
        if (system(cmd) == 0) {
            snprintf(browser, sizeof browser, "%s", names[i]);
            return true;
        }
    }
    return false;
}

static inline char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) {
        size_t got = fread(s, 1, (size_t)n, f);
        s[got] = '\0';
    }
    fclose(f);
    return s;
}

/* Run the browser on a page; dom and log go to files next to it. */
static inline int browse(const char *page, const char *extra, const char *dom, const char *log) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "timeout 90 %s --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
             "--disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage "
             "--user-data-dir=%s/profile --enable-logging=stderr --v=0 %s 'file://%s' >%s 2>%s",
             browser, dir, extra, page, dom, log);
    return system(cmd);
}

static inline size_t console_lines(const char *log, const char *must_contain) {
    size_t n = 0;
    for (const char *p = log; (p = strstr(p, ":CONSOLE")); p++) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (!must_contain || memmem(p, len, must_contain, strlen(must_contain))) n++;
        if (!must_contain) printf("  console: %.*s\n", (int)(len > 200 ? 200 : len), p);
    }
    return n;
}

#endif

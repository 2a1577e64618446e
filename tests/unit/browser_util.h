/* Headless Chromium for the HTML report tests (test_report_html.c,
 * test_report_hostile.c): find the browser, open a page with --dump-dom or
 * --screenshot, read the console lines it logged. Header-only; the test sets
 * `dir` (scratch) before browsing. */
#ifndef TMEM_TEST_BROWSER_UTIL_H
#define TMEM_TEST_BROWSER_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#define SKIP_CODE 77

static char dir[256]; /* scratch directory: profile, pages, dumps */
static char browser[256];

static bool find_browser(void) {
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

static char *slurp(const char *path) {
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
static int browse(const char *page, const char *extra, const char *dom, const char *log) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "timeout 90 %s --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
             "--disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage "
             "--user-data-dir=%s/profile --enable-logging=stderr --v=0 %s 'file://%s' >%s 2>%s",
             browser, dir, extra, page, dom, log);
    return system(cmd);
}

static size_t console_lines(const char *log, const char *must_contain) {
    size_t n = 0;
    for (const char *p = log; (p = strstr(p, ":CONSOLE")); p++) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (!must_contain || memmem(p, len, must_contain, strlen(must_contain))) n++;
        if (!must_contain) printf("  console: %.*s\n", (int)(len > 200 ? 200 : len), p);
    }
    return n;
}

/* The data: URL's payload of the first <img ... src="data:MIME;base64,..."
 * after `from`, decoded; NULL when there is none. */
static inline char *img_data(const char *from) {
    const char *p = from ? strstr(from, ";base64,") : NULL;
    if (!p) return NULL;
    p += 8;
    const char *end = strchr(p, '"');
    if (!end) return NULL;
    char *out = malloc((size_t)(end - p) + 1);
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (; p < end; p++) {
        const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *c = *p ? strchr(abc, *p) : NULL;
        if (!c) continue; /* '=' padding */
        acc = acc << 6 | (uint32_t)(c - abc);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[n] = '\0';
    return out;
}

#endif

/* Exporters: Chrome/Perfetto JSON checked by a JSON parser written here (and
 * by python3's json module when python3 exists), the SVG timeline's series,
 * peak and budget, and the HTML report's parts and input checks. */
#include <stdlib.h>
#include <string.h>
#include "trace_fixture.h"

/* ---- a strict JSON validator (RFC 8259 grammar, no extensions) ---- */
static const char *ws(const char *p) {
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
    return p;
}
static const char *value(const char *p, int depth);
static const char *string(const char *p) {
    if (*p++ != '"') return NULL;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20) return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i]) return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
    }
    return p + 1;
}
static const char *number(const char *p) {
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return NULL;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    return p;
}
static const char *value(const char *p, int depth) {
    if (depth > 64) return NULL;
    p = ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        bool obj = *p == '{';
        p = ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (obj) {
                if (!(p = string(ws(p)))) return NULL;
                p = ws(p);
                if (*p++ != ':') return NULL;
            }
            if (!(p = value(p, depth + 1))) return NULL;
            p = ws(p);
            if (*p == close) return p + 1;
            if (*p++ != ',') return NULL;
        }
    }
    if (*p == '"') return string(p);
    if (!strncmp(p, "true", 4)) return p + 4;
    if (!strncmp(p, "false", 5)) return p + 5;
    if (!strncmp(p, "null", 4)) return p + 4;
    return number(p);
}
static bool json_valid(const char *s) {
    const char *end = value(s, 0);
    return end && *ws(end) == '\0';
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void test_json_validator_rejects(void) {
    CHECK(json_valid("{\"a\":[1,2.5,-3e4,true,null,\"x\\u00e9\"]}"));
    const char *bad[] = {"{", "{\"a\":}", "[1,]", "{\"a\" 1}", "[01]", "\"a\nb\"", "[1] x", "{\"a\":1,}", "[.5]", "\"\\x\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_MSG(!json_valid(bad[i]), "accepted %s", bad[i]);
}

/* Final in-use after the whole trace, by brute force. */
static uint64_t final_in_use(const tmem_trace_data *d) {
    uint64_t ev, final = 0;
    fx_brute_peak_final(d, &ev, NULL, &final);
    return final;
}

static void test_chrome_json(void) {
    tmem_trace_data *d = fx_session(30);
    REQUIRE(d);
    /* A hostile-looking name must stay inside its JSON string. */
    fx_builder b = {d, d->events[d->count - 1].time_ns, true};
    fx_ev(&b, TMEM_TRACE_MARK, -1, -1, 0, 0, "quote\" back\\slash \xc3\xa9 </script>");
    char *json;
    size_t len;
    REQUIRE_OK(tmem_trace_export(d, TMEM_TRACE_FORMAT_CHROME_JSON, NULL, &json, &len));
    CHECK(len == strlen(json));
    CHECK(json_valid(json));
    uint64_t allocs = 0, frees = 0, commits = 0, instants = 0;
    for (uint64_t i = 0; i < d->count; i++) {
        uint16_t k = d->events[i].kind;
        if (k == TMEM_TRACE_ALLOC) allocs++;
        else if (k == TMEM_TRACE_FREE || k == TMEM_TRACE_RESET) frees++;
        else if (k == TMEM_TRACE_COMMIT || k == TMEM_TRACE_DECOMMIT) commits++;
        else instants++;
    }
    CHECK(count(json, "\"name\":\"in use by type\"") == allocs + frees);
    CHECK(count(json, "\"name\":\"in use by role\"") == allocs + frees);
    CHECK(count(json, "\"name\":\"committed by type\"") == commits);
    CHECK(count(json, "\"ph\":\"i\"") == instants);
    CHECK(count(json, "\"name\":\"budget\"") == 2);
    CHECK(strstr(json, "\"traceEvents\":[") != NULL);

    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/trace.json", dir);
    CHECK_OK(tmem_trace_export_file(d, TMEM_TRACE_FORMAT_CHROME_JSON, NULL, path));
    if (system("python3 -c 'import json' >/dev/null 2>&1") != 0) {
        printf("SKIP python3 cross-check: python3 with json not found (the C validator above still ran)\n");
    } else {
        char cmd[1200];
        snprintf(cmd, sizeof cmd,
                 "python3 -c '\n"
                 "import json,sys\n"
                 "d=json.load(open(sys.argv[1]))\n"
                 "last={}\n"
                 "for e in d[\"traceEvents\"]:\n"
                 "  assert e[\"ph\"] in (\"M\",\"C\",\"i\") and isinstance(e[\"pid\"],int) and isinstance(e[\"name\"],str), e\n"
                 "  if e[\"ph\"]!=\"M\": assert isinstance(e[\"ts\"],(int,float)) and e[\"ts\"]>=0, e\n"
                 "  if e[\"ph\"]==\"C\":\n"
                 "    assert all(isinstance(v,int) and v>=0 for v in e[\"args\"].values()), e\n"
                 "    last[e[\"name\"]]=e[\"args\"]\n"
                 "  if e[\"ph\"]==\"i\": assert e[\"s\"] in (\"g\",\"p\",\"t\"), e\n"
                 "print(sum(last[\"in use by type\"].values()), sum(last[\"in use by role\"].values()), len(d[\"traceEvents\"]))\n"
                 "' %s", path);
        FILE *p = popen(cmd, "r");
        REQUIRE(p);
        unsigned long long by_type = 0, by_role = 0, n = 0;
        int got = fscanf(p, "%llu %llu %llu", &by_type, &by_role, &n);
        int rc = pclose(p);
        CHECK_MSG(rc == 0 && got == 3, "python json check failed (rc %d)", rc);
        uint64_t want = final_in_use(d);
        CHECK_MSG(by_type == want && by_role == want, "%llu %llu vs %llu", by_type, by_role, (unsigned long long)want);
        CHECK(n > allocs + frees);
        printf("python3 json: %llu trace events, final in use %llu\n", n, by_type);
    }
    remove(path);
    remove(dir);
    tmem_trace_string_free(json);
    tmem_trace_data_destroy(d);
}

/* The number after `attr="` following the first `anchor`. */
static uint64_t attr_after(const char *s, const char *anchor, const char *attr) {
    const char *p = strstr(s, anchor);
    if (!p) return UINT64_MAX;
    p = strstr(p, attr);
    return p ? strtoull(p + strlen(attr), NULL, 10) : UINT64_MAX;
}

static void test_svg(void) {
    tmem_trace_data *d = fx_session(25);
    REQUIRE(d);
    char *svg;
    REQUIRE_OK(tmem_trace_export(d, TMEM_TRACE_FORMAT_SVG, NULL, &svg, NULL));
    uint64_t ev, want = fx_brute_peak(d, &ev, NULL);
    CHECK(!strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"tmem-timeline\"", 57));
    CHECK(count(svg, "<path class=\"series\"") == 4);
    const char *types[] = {"/memory/weights", "/memory/kv", "/memory/activations", "/memory/images"};
    for (int i = 0; i < 4; i++) {
        char anchor[96];
        snprintf(anchor, sizeof anchor, "class=\"series\" data-series=\"%s\"", types[i]);
        uint64_t max = attr_after(svg, anchor, "data-max=\"");
        CHECK_MSG(max > 0 && max <= want, "%s max %llu", types[i], (unsigned long long)max);
    }
    CHECK(attr_after(svg, "<g class=\"peak\"", "data-bytes=\"") == want);
    CHECK(attr_after(svg, "<g class=\"peak\"", "data-time-ns=\"") == d->events[ev].time_ns);
    CHECK(attr_after(svg, "<g class=\"budget\"", "data-bytes=\"") == d->budget);
    CHECK(count(svg, "class=\"denial\"") == 1);
    CHECK(count(svg, "<g class=\"mark\"") == 3);
    CHECK(count(svg, "class=\"committed\"") == 1);
    CHECK(strstr(svg, "</svg>\n") == svg + strlen(svg) - 7);
    tmem_trace_string_free(svg);
    /* By role: one series per role that held bytes, same peak. */
    REQUIRE_OK(tmem_trace_export(d, TMEM_TRACE_FORMAT_SVG_ROLES, NULL, &svg, NULL));
    CHECK(strstr(svg, "id=\"tmem-timeline-role\"") != NULL);
    const char *roles[] = {"weights", "kv_cache", "activation", "image", "vision_intermediate"};
    CHECK(count(svg, "<path class=\"series\"") == 5);
    for (int i = 0; i < 5; i++) {
        char anchor[96];
        snprintf(anchor, sizeof anchor, "class=\"series\" data-series=\"%s\"", roles[i]);
        CHECK_MSG(strstr(svg, anchor) != NULL, "no role series %s", roles[i]);
    }
    CHECK(attr_after(svg, "<g class=\"peak\"", "data-bytes=\"") == want);
    tmem_trace_string_free(svg);
    /* Tiny sizes are clamped, not rejected; an empty trace draws "no events". */
    tmem_report_desc o = {0};
    o.width = 10, o.height = 10;
    REQUIRE_OK(tmem_trace_export(d, TMEM_TRACE_FORMAT_SVG, &o, &svg, NULL));
    CHECK(strstr(svg, "width=\"300\" height=\"200\"") != NULL);
    tmem_trace_string_free(svg);
    tmem_trace_data *e;
    REQUIRE_OK(tmem__trace_data_new(&e));
    REQUIRE_OK(tmem_trace_export(e, TMEM_TRACE_FORMAT_SVG, NULL, &svg, NULL));
    CHECK(strstr(svg, "no events") && !strstr(svg, "class=\"series\""));
    tmem_trace_string_free(svg);
    tmem_trace_data_destroy(e);
    tmem_trace_data_destroy(d);
}

/* A long idle stretch is drawn narrow and labelled; committed bytes far
 * above the in-use peak become a label, not the scale. */
static void test_svg_gap_and_scale(void) {
    fx_builder b = {NULL, 0, true};
    REQUIRE_OK(tmem__trace_data_new(&b.d));
    fx_ev(&b, TMEM_TRACE_COMMIT, 0, -1, 1ull << 30, 0, "charge clean");
    for (int i = 0; i < 10; i++) fx_ev(&b, TMEM_TRACE_ALLOC, 0, TMEM_ROLE_ACTIVATION, 1u << 20, (uint64_t)i << 20, "a");
    uint64_t before = b.t;
    b.t += 5000000000ull; /* 5 s with no event */
    for (int i = 0; i < 10; i++) fx_ev(&b, TMEM_TRACE_FREE, 0, TMEM_ROLE_ACTIVATION, 1u << 20, (uint64_t)i << 20, "a");
    uint64_t gap = b.d->events[11].time_ns - before;
    REQUIRE(b.ok);
    char *svg;
    REQUIRE_OK(tmem_trace_export(b.d, TMEM_TRACE_FORMAT_SVG, NULL, &svg, NULL));
    CHECK(count(svg, "<g class=\"gap\"") == 1);
    CHECK(attr_after(svg, "<g class=\"gap\"", "data-ns=\"") == gap);
    /* The gap's band is narrow: under a tenth of the plot. */
    const char *g = strstr(svg, "<g class=\"gap\"");
    double w = g ? strtod(strstr(g, "width=\"") + 7, NULL) : 1e9;
    CHECK_MSG(w < (1100 - 78 - 210) / 10.0, "gap band %.1f px wide", w);
    CHECK(strstr(svg, "committed: up to 1.00 GiB (above the scale)") && !strstr(svg, "class=\"committed\""));
    CHECK(strstr(svg, ">10.0 MiB<") || strstr(svg, ">10 MiB<")); /* the scale follows the 10 MiB in use */
    tmem_trace_string_free(svg);
    tmem_trace_data_destroy(b.d);
}

static const char plan_svg[] =
    "<?xml version=\"1.0\"?>\n<!-- planner -->\n<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"plan-test\" width=\"100\" height=\"50\">"
    "<rect class=\"buffer\" x=\"0\" y=\"0\" width=\"40\" height=\"20\"/></svg>\n";

static void test_html(void) {
    tmem_trace_data *d = fx_session(25);
    REQUIRE(d);
    tmem_report_note notes[2] = {{"Per-type table", "type  bytes\n<b>kv</b> & more"}, {NULL, NULL}};
    tmem_report_desc o = {0};
    o.title = "demo <session>";
    o.plan_svg = plan_svg;
    o.plan_caption = "arena 40 B";
    o.notes = notes;
    o.note_count = 2;
    char *html;
    REQUIRE_OK(tmem_trace_export(d, TMEM_TRACE_FORMAT_HTML, &o, &html, NULL));
    CHECK(!strncmp(html, "<!DOCTYPE html>", 15));
    CHECK(strstr(html, "<title>demo &lt;session&gt;</title>") != NULL);
    CHECK(strstr(html, "id=\"tmem-timeline\"") != NULL);
    /* the plan picture is an image: its SVG (without the prolog) base64 in a data: URL */
    CHECK(strstr(html, "<div class=\"panel\" id=\"tmem-plan\">\n<img id=\"tmem-plan-img\"") != NULL);
    CHECK(strstr(html, "src=\"data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIGlkPSJwbGFuLXRlc3QiIHdpZHRoPSIxMDAiIGhlaWdodD0iNTAiPjxyZWN0IGNsYXNzPSJidWZmZXIiIHg9IjAiIHk9IjAiIHdpZHRoPSI0MCIgaGVpZ2h0PSIyMCIvPjwvc3ZnPg==") != NULL);
    CHECK(!strstr(html, "<?xml") && !strstr(html, "<!-- planner") && !strstr(html, "id=\"plan-test\""));
    CHECK(strstr(html, "script-src 'sha256-") && !strstr(html, "'unsafe-inline'; img") && !strstr(html, "script-src 'unsafe-inline'"));
    CHECK(strstr(html, "&lt;b&gt;kv&lt;/b&gt; &amp; more") != NULL);
    CHECK(strstr(html, "id=\"tmem-peak-role\"") && strstr(html, "id=\"tmem-peak-type\"") && strstr(html, "id=\"tmem-peak-name\""));
    CHECK(count(html, "<script>") == 1);
    CHECK(strstr(html, "id=\"tmem-timeline-role\"") != NULL);
    CHECK(count(html, "<tr class=\"ev-budget_denied\">") == 1 && count(html, "<tr class=\"ev-mark\">") == 3);
    CHECK(count(html, "<tr class=\"ev-evict\">") == 1 && count(html, "<tr class=\"ev-pressure\">") == 1);
    CHECK(count(html, "<section class=\"note\">") == 2);
    /* Self-contained: nothing fetched (only the SVG namespace URI appears; the one src is data:). */
    CHECK(count(html, "src=") == 1 && count(html, "src=\"data:image/svg+xml;base64,") == 1);
    CHECK(!strstr(html, "https://") && !strstr(html, "<link"));
    CHECK(count(html, "http://") == count(html, "http://www.w3.org/2000/svg"));
    tmem_trace_string_free(html);

    /* hostile but well-formed pictures are accepted: inert as an image, never inline */
    const char *hostile[] = {"<svg><script>alert(1)</script></svg>", "<svg><foreignObject></foreignObject></svg>",
                             "<svg onload=\"alert(1)\"><a href=\"javascript:x()\"/></svg>"};
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        o.plan_svg = hostile[i];
        REQUIRE_OK(tmem_trace_export(d, TMEM_TRACE_FORMAT_HTML, &o, &html, NULL));
        CHECK(!strstr(html, "alert(") && !strstr(html, "javascript:") && !strstr(html, "foreignObject"));
        CHECK(count(html, "<script>") == 1);
        tmem_trace_string_free(html);
    }
    const char *bad_plans[] = {"<div>no</div>", "<svg>unterminated", "<?xml never closed", "<svgx></svgx>", ""};
    for (size_t i = 0; i < sizeof bad_plans / sizeof bad_plans[0]; i++) {
        o.plan_svg = bad_plans[i];
        CHECK_ST(tmem_trace_export(d, TMEM_TRACE_FORMAT_HTML, &o, &html, NULL), TMEM_E_INVALID_ARG);
        CHECK(html == NULL);
    }
    o.plan_svg = NULL;
    o.notes = NULL;
    CHECK_ST(tmem_trace_export(d, TMEM_TRACE_FORMAT_HTML, &o, &html, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_export(d, TMEM_TRACE_FORMAT_COUNT, NULL, &html, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_export(NULL, TMEM_TRACE_FORMAT_SVG, NULL, &html, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_export(d, TMEM_TRACE_FORMAT_SVG, NULL, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_export_file(d, TMEM_TRACE_FORMAT_SVG, NULL, "/nonexistent-dir/x.svg"), TMEM_E_IO);
    /* With defaults: a "no plan" hint instead of the picture. */
    REQUIRE_OK(tmem_trace_export(d, TMEM_TRACE_FORMAT_HTML, NULL, &html, NULL));
    CHECK(!strstr(html, "id=\"tmem-plan\"") && strstr(html, "No plan picture"));
    tmem_trace_string_free(html);
    tmem_trace_data_destroy(d);
}

static void test_summary_and_text(void) {
    tmem_trace_data *d = fx_session(12);
    REQUIRE(d);
    char *s;
    REQUIRE_OK(tmem_trace_export(d, TMEM_TRACE_FORMAT_SUMMARY_JSON, NULL, &s, NULL));
    CHECK(json_valid(s));
    uint64_t ev, want = fx_brute_peak(d, &ev, NULL);
    char key[64];
    snprintf(key, sizeof key, "\"peak\":{\"bytes\":%llu,", (unsigned long long)want);
    CHECK(strstr(s, key) != NULL);
    CHECK(strstr(s, "\"budget_denied\":1") && strstr(s, "\"mark\":3"));
    tmem_trace_string_free(s);
    REQUIRE_OK(tmem_trace_export(d, TMEM_TRACE_FORMAT_PEAK_TEXT, NULL, &s, NULL));
    CHECK(strstr(s, "alive at the peak:") && strstr(s, "by role:") && strstr(s, "weights"));
    tmem_trace_string_free(s);
    tmem_trace_data_destroy(d);
}

/* Export to a file streams in 1 MiB pieces: the bytes must equal the string
 * export's; a refused export leaves no file. */
static void test_file_export_streams(void) {
    tmem_trace_data *d = fx_session(20000); /* ~80k events: tens of MiB of JSON */
    REQUIRE(d);
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/big.json", dir);
    for (int f = 0; f < TMEM_TRACE_FORMAT_COUNT; f++) {
        char *text;
        size_t len;
        REQUIRE_OK(tmem_trace_export(d, (tmem_trace_format)f, NULL, &text, &len));
        CHECK_OK(tmem_trace_export_file(d, (tmem_trace_format)f, NULL, path));
        FILE *fp = fopen(path, "rb");
        REQUIRE(fp);
        char *back = malloc(len + 1);
        size_t got = fread(back, 1, len + 1, fp);
        fclose(fp);
        CHECK_MSG(got == len && !memcmp(back, text, len), "format %d: file differs (%zu vs %zu bytes)", f, got, len);
        if (f == TMEM_TRACE_FORMAT_CHROME_JSON) CHECK(len > (4u << 20)); /* really streamed in pieces */
        free(back);
        tmem_trace_string_free(text);
    }
    remove(path);
    tmem_report_desc o = {0};
    o.plan_svg = "<svg>unterminated";
    CHECK_ST(tmem_trace_export_file(d, TMEM_TRACE_FORMAT_HTML, &o, path), TMEM_E_INVALID_ARG);
    FILE *fp = fopen(path, "rb");
    CHECK(fp == NULL);
    if (fp) fclose(fp);
    remove(dir);
    tmem_trace_data_destroy(d);
}

int main(void) {
    RUN(test_json_validator_rejects);
    RUN(test_chrome_json);
    RUN(test_svg);
    RUN(test_svg_gap_and_scale);
    RUN(test_html);
    RUN(test_summary_and_text);
    RUN(test_file_export_streams);
    return tmem_test_finish();
}

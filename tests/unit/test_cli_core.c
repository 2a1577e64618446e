/* The core's CLI commands end to end: tmem info --json, tmem stats [--json]
 * (validated against docs/stats.schema.json), tmem demo (accounted vs
 * OS-measured agree). */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "json_mini.h"

/* Run the tool, capture stdout (at most cap-1 bytes); returns exit status. */
static int run_tool(const char *args, char *out, size_t cap) {
    const char *tool = getenv("TMEM_TOOL");
    if (!tool) return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s", tool, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char out[1 << 20];

static void test_info(void) {
    REQUIRE(run_tool("info --json", out, sizeof out) == 0);
    jv *doc = json_parse(out, strlen(out));
    REQUIRE(doc);
    const jv *sys = jv_get(doc, "system");
    CHECK(jv_num(jv_get(sys, "page_size")) >= 4096);
    const jv *types = jv_get(doc, "types");
    CHECK(types && types->kind == JV_ARR && types->n >= 8);
    bool kv = false;
    for (size_t i = 0; types && i < types->n; i++) {
        const jv *nm = jv_get(types->items[i], "name");
        const jv *roles = jv_get(types->items[i], "roles");
        if (nm && !strcmp(nm->str, "/memory/kv")) kv = roles && roles->n == 1 && !strcmp(roles->items[0]->str, "kv_cache");
    }
    CHECK(kv);
    jv_free(doc);
    REQUIRE(run_tool("info", out, sizeof out) == 0);
    CHECK(strstr(out, "/memory/weights") && strstr(out, "memfd"));
    CHECK(run_tool("info --bogus 2>/dev/null", out, sizeof out) == 2);
}

static void test_stats(void) {
    REQUIRE(run_tool("stats --json", out, sizeof out) == 0);
    jv *doc = json_parse(out, strlen(out));
    REQUIRE(doc);
    const char *src = getenv("TMEM_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/stats.schema.json", src ? src : ".");
    size_t n;
    char *text = read_file_all(path, &n);
    jv *schema = text ? json_parse(text, n) : NULL;
    free(text);
    REQUIRE(schema);
    char why[256] = "";
    CHECK_MSG(json_validate(doc, schema, schema, "$", why, sizeof why), "schema: %s", why);
    /* The session really ran: every role's type holds memory, the books add up. */
    const jv *types = jv_get(doc, "types");
    double sum = 0;
    for (size_t i = 0; types && i < types->n; i++) {
        double c = jv_num(jv_get(jv_get(types->items[i], "committed"), "current"));
        sum += c;
        CHECK(c > 0);
    }
    CHECK(sum == jv_num(jv_get(jv_get(jv_get(doc, "context"), "committed"), "current")));
    CHECK(jv_get(doc, "heaps")->n >= 7);
    jv_free(doc);
    jv_free(schema);
    REQUIRE(run_tool("stats", out, sizeof out) == 0);
    CHECK(strstr(out, "/memory/kv") && strstr(out, "kv_cache"));
}

static void test_demo(void) {
    REQUIRE(run_tool("demo --bookkeeping --weights-mib 48 --prompt 256 --decode 16", out, sizeof out) == 0);
    CHECK(strstr(out, "consistency check: ok") != NULL);
    /* Accounted vs measured, both lines: within 2% + 3 MiB (other threads
     * of this process do not allocate; the slack is stdio, page tables and
     * the unaccounted malloc'd metadata of the fit calculator, the planner
     * and the tracer, which ASan's redzones and quarantine inflate to ~2 MiB). */
    const char *kinds[2] = {"private dirty", "clean (file)"};
    for (int k = 0; k < 2; k++) {
        const char *line = strstr(out, kinds[k]);
        REQUIRE(line);
        double acc = 0, os = 0;
        const char *a = strstr(line, "accounted"), *o = strstr(line, "OS");
        REQUIRE(a && o);
        acc = strtod(a + 9, NULL);
        os = strtod(o + 2, NULL);
        CHECK_MSG(acc > 0 && os > 0 && (os - acc) < 0.02 * acc + 3 && (acc - os) < 0.02 * acc + 3, "%s: accounted %.1f MiB, OS %.1f MiB", kinds[k], acc, os);
    }
}

int main(void) {
    if (!getenv("TMEM_TOOL")) {
        printf("skipped: TMEM_TOOL not set\n");
        return 0;
    }
    RUN(test_info);
    RUN(test_stats);
    RUN(test_demo);
    return tmem_test_finish();
}

/* Regression: `tmem demo --quick --budget-mib 600` (now `tmem demo --bookkeeping --quick`; the budget,
 * which counts dirty bytes since the weights stopped counting, is now 50 MiB: slightly below
 * the prediction) failed with TMEM_E_STATE from tmem_kv_seq_append after the
 * context's reclaim evicted the one unpinned sequence, wrote no report, and
 * did not say up front that the prediction did not fit. Now: the warning
 * first, TMEM_E_BUDGET from the allocation that did not fit (the sequence
 * being generated is pinned), the failed session's report and its trace
 * (--trace), which `tmem report` reads. Also: the demo's zero-initialised
 * allocations charge their heaps' roles, not weights (tmem stats). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "harness.h"

static char out[1 << 18];

static int run(const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", getenv("TMEM_TOOL"), args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

static void test_small_budget(void) {
    char dir[256], html[300], trace[300], args[1024];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(html, sizeof html, "%s/failed.html", dir);
    snprintf(trace, sizeof trace, "%s/failed.tmtrace", dir);
    snprintf(args, sizeof args, "demo --bookkeeping --quick --budget-mib 50 --report '%s' --trace '%s'", html, trace);
    int rc = run(args);
    CHECK(rc == 1);
    const char *warn = strstr(out, "does not fit the budget"), *fail = strstr(out, "FAILED");
    CHECK_MSG(warn && fail && warn < fail, "no warning before the failure: '%.150s'", out);
    CHECK_MSG(strstr(out, "TMEM_E_BUDGET") && !strstr(out, "TMEM_E_STATE"), "'%.200s'", fail ? fail : out);
    CHECK(strstr(out, "the failed session's HTML report") != NULL);
    CHECK(exists(html) && exists(trace));
    snprintf(args, sizeof args, "report '%s'", trace);
    CHECK_MSG(run(args) == 0 && strstr(out, "alive at the peak"), "'%.200s'", out);
    /* the report shows the denial that ended it */
    CHECK(strstr(out, "budget denials: 0") == NULL);
    remove(html);
    remove(trace);
    remove(dir);
}

static void test_roles_charged(void) {
    REQUIRE(run("stats") == 0);
    /* role table rows: "weights  /memory/weights  in-use peak device allocs live" */
    const char *w = strstr(out, "\nweights "), *t = strstr(out, "\noutput_tokens ");
    REQUIRE(w && t);
    unsigned long long allocs = 0, live = 0;
    char c1[32], c2[32], c3[32], dev[32];
    CHECK(sscanf(w + 1, "weights %31s %31s %31s %31s %llu %llu", c1, c2, c3, dev, &allocs,
                 &live) == 6);
    CHECK_MSG(allocs == 2, "weights allocations %llu (want the 2 mapped GGUF files)", allocs);
    CHECK(sscanf(t + 1, "output_tokens %31s %31s %31s %31s %llu %llu", c1, c2, c3, dev, &allocs,
                 &live) == 6);
    CHECK(!strcmp(dev, "0")); /* host types only: no device part */
    CHECK_MSG(allocs >= 1 && live >= 1, "output_tokens allocations %llu", allocs);
}

int main(void) {
    if (!getenv("TMEM_TOOL")) {
        printf("SKIP: TMEM_TOOL not set\n");
        return 77;
    }
    RUN(test_small_budget);
    RUN(test_roles_charged);
    return tmem_test_finish();
}

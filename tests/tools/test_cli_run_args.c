/* tmem run's flags (issue 21 item 4): -n bounded with a message (it exited 1
 * silently at 99999999999 and blamed an absent --ctx at 4294967295), a note
 * when the request grows the context past the model's trained one, -t and
 * --threads both accepted, and --help documenting every flag with its
 * default. Skips (77) without the tmem tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

static char dir[400], model[600];
static const char *tool;

static int run(const char *args, char *out, size_t cap) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' run %s 2>&1", tool, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_n_bounds(void) {
    static char out[1 << 16];
    char a[900];
    snprintf(a, sizeof a, "'%s' --tokens 1 -n 99999999999", model);
    CHECK(run(a, out, sizeof out) == 2);
    CHECK_MSG(strstr(out, "-n needs a count of tokens from 0 to 16777216"), "%.300s", out);
    snprintf(a, sizeof a, "'%s' --tokens 1 -n 4294967295", model);
    CHECK(run(a, out, sizeof out) == 2);
    CHECK_MSG(!strstr(out, "--ctx 1") && strstr(out, "-n needs"), "%.300s", out);
    snprintf(a, sizeof a, "'%s' --tokens 1 -n 40 --ctx 8", model);
    CHECK(run(a, out, sizeof out) == 2);
    CHECK_MSG(strstr(out, "pass --ctx 8"), "%.300s", out);
    /* past the trained 4096: allowed, and said */
    snprintf(a, sizeof a, "'%s' --tokens 1 -n 4100", model);
    CHECK(run(a, out, sizeof out) == 0);
    CHECK_MSG(strstr(out, "past the 4096 tokens the model was trained for"), "%.300s", out);
}

static void test_threads(void) {
    static char out[1 << 16];
    char a[900];
    snprintf(a, sizeof a, "'%s' --tokens 1,2 -n 2 -t 2", model);
    CHECK_MSG(run(a, out, sizeof out) == 0, "%.300s", out);
    snprintf(a, sizeof a, "'%s' --tokens 1,2 -n 2 --threads 2", model);
    CHECK_MSG(run(a, out, sizeof out) == 0, "%.300s", out);
    snprintf(a, sizeof a, "'%s' --tokens 1,2 -n 2 --threads 0", model);
    CHECK(run(a, out, sizeof out) == 2);
}

static void test_help(void) {
    static char out[1 << 16];
    CHECK(run("--help", out, sizeof out) == 0);
    static const char *const flags[] = {"-p ", "--tokens ", "-n ", "-t, --threads ", "--ctx ", "--chunk ",
                                        "--budget ", "--seed ", "--temp ", "--top-k ", "--top-p ", "--chat ",
                                        "--memory ", "--trace ", "--json ", "--logits-out ", "--decode-from "};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n  %s", flags[i]);
        const char *at = strstr(out, line);
        CHECK_MSG(at, "--help has no line for %s", flags[i]);
        if (!at) continue;
        const char *next = strstr(at + 1, "\n  -");
        size_t len = next ? (size_t)(next - at) : strlen(at);
        char entry[400];
        snprintf(entry, sizeof entry, "%.*s", (int)(len < 399 ? len : 399), at);
        bool flag_only = !strcmp(flags[i], "-p ") || !strcmp(flags[i], "--tokens ") ||
                         !strcmp(flags[i], "--trace ") || !strcmp(flags[i], "--logits-out ");
        CHECK_MSG(flag_only || strstr(entry, "default"), "--help's %s names no default: %s", flags[i], entry);
    }
}

int main(void) {
    tool = getenv("TMEM_TOOL");
    if (!tool || access(tool, X_OK)) {
        printf("SKIP: TMEM_TOOL is not set (run through ctest)\n");
        return 77;
    }
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    snprintf(model, sizeof model, "%s/tiny.gguf", dir);
    char cmd[1500];
    snprintf(cmd, sizeof cmd, "'%s' gen --preset tiny '%s' >/dev/null 2>&1", tool, model);
    if (system(cmd) != 0) {
        printf("cannot generate the tiny model\n");
        return 1;
    }
    RUN(test_n_bounds);
    RUN(test_threads);
    RUN(test_help);
    remove(model);
    remove(dir);
    return tmem_test_finish();
}

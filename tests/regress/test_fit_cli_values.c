/* Regression: `tmem fit` took "--budget nan" as a budget (NaN converted to
 * an integer: undefined, 8 EiB on x86, so the model "fit") and "--ctx ' -1'"
 * as 2^64-1 (strtoull skips spaces and negates), failing later with an
 * overflow instead of a usage error. Both must be usage errors (exit 2). */
#include <stdlib.h>
#include <string.h>
#include "harness.h"

/* Run the tool with its output discarded; returns the exit status. */
static int run_tool(const char *args) {
    const char *tool = getenv("TMEM_TOOL");
    if (!tool) return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>&1", tool, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_bad_values_are_usage_errors(void) {
    static const char *const bad[] = {
        "--budget nan", "--budget NaN", "--budget -nan", "--budget inf", "--budget ' -1'", "--budget ''",
        "--ctx nan", "--ctx ' -1'", "--ctx ' 5'", "--ctx +5", "--ctx 0",
        "--seqs ' -1'", "--chunk ' -2'", "--block ' -3'",
        /* one parser with the config file: whole numbers, no hex, 0 is not a budget */
        "--budget 1.5GiB", "--budget 0x10", "--budget 0", "--image -5x10", "--image 10x", "--weights Q9_X",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[256];
        /* --ctx first so that a bad --ctx later overrides it */
        snprintf(args, sizeof args, "fit --model qwen3.5-0.8b --ctx 4096 %s", bad[i]);
        int rc = run_tool(args);
        if (rc != 2) printf("  %s -> exit %d\n", bad[i], rc);
        CHECK(rc == 2);
    }
}

static void test_good_values_still_accepted(void) {
    /* exit 0 (fits) or 3 (does not fit): parsed, not a usage error */
    int rc = run_tool("fit --model qwen3.5-0.8b --ctx 4096 --budget 1536MiB --seqs 2 --chunk 256 --block 32");
    CHECK(rc == 0 || rc == 3);
    rc = run_tool("fit --model qwen3.5-0.8b --ctx 4096 --budget 2000000000");
    CHECK(rc == 0 || rc == 3);
    rc = run_tool("fit --model qwen3.5-0.8b --ctx 4096 --budget 2GB --weights Q4_K_M");
    CHECK(rc == 0 || rc == 3);
    rc = run_tool("fit --model qwen3.5-0.8b --ctx=4096 --budget=3GiB --weights=q8_0");
    CHECK(rc == 0 || rc == 3);
}

int main(void) {
    if (!getenv("TMEM_TOOL")) {
        printf("skipped: TMEM_TOOL not set\n");
        return 0;
    }
    RUN(test_bad_values_are_usage_errors);
    RUN(test_good_values_still_accepted);
    return tmem_test_finish();
}

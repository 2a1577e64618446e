/* The tmem command line tells the truth: help and version the usual way,
 * bad values rejected with exit 2 and a message naming the option, unknown
 * extra arguments rejected, config errors printed with file and line, errors
 * naming the right object, '-' for stdin (tools/tmem/cli/cli.c and commands). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "harness.h"

static char out[1 << 16];

/* Run `tmem ARGS` through sh with stdout+stderr (or just stdout) captured. */
static int run(const char *env, const char *args, bool with_stderr) {
    const char *tool = getenv("TMEM_TOOL");
    if (!tool) return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' %s %s", env ? env : "", tool, args, with_stderr ? "2>&1" : "2>/dev/null");
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_help_and_version(void) {
    static const char *const cmds[] = {"version", "plan", "bench", "info", "stats", "demo", "fit", "report"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char args[64], want[64];
        for (int form = 0; form < 2; form++) {
            snprintf(args, sizeof args, "%s %s", cmds[i], form ? "-h" : "--help");
            int rc = run(NULL, args, false); /* help goes to stdout */
            snprintf(want, sizeof want, "usage: tmem %s", cmds[i]);
            CHECK_MSG(rc == 0 && strstr(out, want), "tmem %s: exit %d, stdout '%.80s'", args, rc, out);
        }
    }
    CHECK(run(NULL, "bench heap --help", false) == 0 && strstr(out, "usage: tmem bench heap"));
    CHECK(run(NULL, "demo --bookkeeping --help", false) == 0 && strstr(out, "usage: tmem demo --bookkeeping"));
    CHECK(run(NULL, "--help", false) == 0 && strstr(out, "usage:") && strstr(out, "tmem fit"));
    CHECK(run(NULL, "-h", false) == 0 && strstr(out, "usage:"));
    char want[64];
    snprintf(want, sizeof want, "typedmem %d.%d.%d\n", TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH);
    CHECK(run(NULL, "--version", false) == 0 && !strcmp(out, want));
    CHECK(run(NULL, "version", false) == 0 && !strcmp(out, want));
    CHECK(run(NULL, "", true) == 2);
    CHECK(run(NULL, "nosuchcommand", true) == 2 && strstr(out, "unknown command"));
}

/* Each: the arguments, and what stderr must name. Exit 2 for all. */
static void test_bad_values(void) {
    static const struct { const char *args, *names; } bad[] = {
        {"demo --bookkeeping --budget-mib -5", "--budget-mib"},
        {"demo --bookkeeping --prompt -1", "--prompt"},
        {"demo --bookkeeping --budget-mib 1GiB", "--budget-mib"},
        {"demo --bookkeeping --budget 0", "--budget"},
        {"demo --bookkeeping --budget 1.5GiB", "--budget"},
        {"demo --bookkeeping --image-side 5", "--image-side"},
        {"demo --bookkeeping --frame 10", "--frame"},
        {"demo --bookkeeping --decode 0x10", "--decode"},
        {"demo --bookkeeping extra", "unexpected argument 'extra'"},
        {"demo --prompt -1", "--prompt"},
        {"demo -t 0", "-t"},
        {"demo -n x", "-n"},
        {"demo extra", "unexpected argument 'extra'"},
        {"fit --model qwen3.5-0.8b --ctx 4096 --image -5x10", "--image"},
        {"fit --model qwen3.5-0.8b --ctx 4096 --budget 0x10", "--budget"},
        {"fit --model qwen3.5-0.8b --ctx 4096 --budget 0", "--budget"},
        {"fit --model qwen3.5-0.8b --ctx 4096 --weights nope", "--weights"},
        {"fit --model qwen3.5-0.8b --ctx -1", "--ctx"},
        {"fit --model qwen3.5-0.8b --ctx 4096 stray", "unexpected argument 'stray'"},
        {"fit --model nosuch --ctx 4096", "unknown model 'nosuch'"},
        {"fit --ctx 4096", "--model"},
        {"plan x.csv --time-limit nan", "--time-limit"},
        {"plan x.csv --time-limit inf", "--time-limit"},
        {"plan x.csv --time-limit -1", "--time-limit"},
        {"plan x.csv --threads 0", "--threads"},
        {"plan x.csv --threads 65", "--threads"},
        {"plan x.csv --capacity 0x10", "--capacity"},
        {"plan a.csv b.csv", "unexpected argument 'b.csv'"},
        {"plan", "missing argument"},
        {"report t.tmtrace --top 0", "--top"},
        {"report t.tmtrace --top 17", "--top"},
        {"report t.tmtrace --html", "--html needs a value"},
        {"report a b", "unexpected argument 'b'"},
        {"info --bogus", "unknown option '--bogus'"},
        {"info extra", "unexpected argument 'extra'"},
        {"stats extra", "unexpected argument 'extra'"},
        {"version extra", "unexpected argument 'extra'"},
        {"bench heap --ops -1", "--ops"},
        {"bench heap --slots 0x10", "--slots"},
        {"bench kv --seqs 0", "--seqs"},
        {"bench plan --time-limit nan", "--time-limit"},
        {"bench plan --threads 0", "--threads"},
        {"bench trace --ops", "--ops needs a value"},
        {"bench surface --size 0x10", "--size"},
        {"bench nosuch", "unknown bench 'nosuch'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run(NULL, bad[i].args, true);
        CHECK_MSG(rc == 2 && strstr(out, bad[i].names), "tmem %s: exit %d, '%.160s'", bad[i].args, rc, out);
    }
}

static void test_config_errors_named(void) {
    char dir[256], conf[300], env[400];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(conf, sizeof conf, "%s/bad.conf", dir);
    FILE *f = fopen(conf, "w");
    REQUIRE(f);
    fputs("# a typo on line 2\nbudjet = 1GiB\n", f);
    fclose(f);
    snprintf(env, sizeof env, "TMEM_CONFIG='%s'", conf);
    for (int i = 0; i < 2; i++) {
        int rc = run(env, i ? "stats" : "info", true);
        CHECK_MSG(rc == 1 && strstr(out, conf) && strstr(out, "line 2: unknown key 'budjet'") &&
                      strstr(out, i ? "tmem stats: config " : "tmem info: config "),
                  "%s: exit %d, '%.200s'", i ? "stats" : "info", rc, out);
    }
    /* budgets from a good config are shown: the context's and a type's */
    f = fopen(conf, "w");
    REQUIRE(f);
    fputs("budget = 3GB\n[type /memory/kv]\nbudget = 100MiB\n", f);
    fclose(f);
    CHECK(run(env, "info", false) == 0 && strstr(out, "2.79 GiB") && strstr(out, "100.0 MiB"));
    CHECK(run(env, "info --json", false) == 0 && strstr(out, "\"budget\":3000000000") && strstr(out, "\"budget\":104857600"));
    remove(conf);
    remove(dir);
}

static void test_errors_name_the_object(void) {
    char dir[256], cmd[1400];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(cmd, sizeof cmd, "plan '%s'", dir);
    CHECK(run(NULL, cmd, true) == 1 && strstr(out, "not a regular file") && !strstr(out, "Success"));
    CHECK(run(NULL, "fit --gguf /nonexistent/nope.gguf --ctx 10", true) == 1 &&
          strstr(out, "nope.gguf: no such file") && !strstr(out, "at byte"));
    snprintf(cmd, sizeof cmd, "fit --gguf '%s' --ctx 10", dir);
    CHECK(run(NULL, cmd, true) == 1 && strstr(out, "is a directory"));
    snprintf(cmd, sizeof cmd, "report '%s'", dir);
    CHECK(run(NULL, cmd, true) == 1 && strstr(out, "is a directory"));
    /* a bad plan picture is named as the plan, not as the output */
    const char *src = getenv("TMEM_SOURCE_DIR");
    REQUIRE(src);
    char svg[300];
    snprintf(svg, sizeof svg, "%s/bad.svg", dir);
    FILE *f = fopen(svg, "w");
    REQUIRE(f);
    fputs("<div>not svg</div>\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "report '%s/fuzz/trace_file/corpus/session.tmtrace' --html '%s/r.html' --plan '%s'", src, dir,
             svg);
    CHECK_MSG(run(NULL, cmd, true) == 1 && strstr(out, "plan") && strstr(out, "bad.svg") &&
                  strstr(out, "is not an SVG picture"), "'%.200s'", out);
    snprintf(cmd, sizeof cmd, "report '%s/fuzz/trace_file/corpus/session.tmtrace' --plan '%s/none.svg'", src, dir);
    CHECK(run(NULL, cmd, true) == 1 && strstr(out, "none.svg: No such file"));
    remove(svg);
    remove(dir);
}

static void test_stdin(void) {
    const char *src = getenv("TMEM_SOURCE_DIR");
    REQUIRE(src);
    CHECK(run("printf 'id,lower,upper,size\\na,0,3,4\\nb,2,5,4\\n' |", "plan - --json", false) == 0 &&
          strstr(out, "\"arena\":8"));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cat '%s/fuzz/trace_file/corpus/session.tmtrace' |", src);
    CHECK(run(cmd, "report -", false) == 0 && strstr(out, "alive at the peak"));
}

static void test_fit_context_length(void) {
    int rc = run(NULL, "fit --model qwen3.5-0.8b --ctx 300000 --budget 64GiB", true);
    CHECK(rc == 0 && strstr(out, "warning: --ctx 300000 exceeds qwen3.5-0.8b's context length (262144 tokens)"));
    CHECK_MSG(strstr(out, "largest context that fits: 262144 tokens (the model's context length)"), "'%.180s'",
              strstr(out, "largest") ? strstr(out, "largest") : out);
    rc = run(NULL, "fit --model qwen3.5-0.8b --ctx 4096 --budget 2GB --weights Q4_K_M --json", false);
    CHECK(rc == 0 && strstr(out, "\"weight_dtype\":\"q4_K\"") != NULL);
    rc = run(NULL, "fit --model qwen3.5-0.8b --ctx 4096 --json", false);
    CHECK(rc == 0 && strstr(out, "\"context_length\":262144"));
}

int main(void) {
    if (!getenv("TMEM_TOOL")) {
        printf("SKIP: TMEM_TOOL not set\n");
        return 77;
    }
    RUN(test_help_and_version);
    RUN(test_bad_values);
    RUN(test_config_errors_named);
    RUN(test_errors_name_the_object);
    RUN(test_stdin);
    RUN(test_fit_context_length);
    return tmem_test_finish();
}

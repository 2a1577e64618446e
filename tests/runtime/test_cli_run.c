/* tmem run end to end on a tiny model: exit codes (0 ok, 2 usage, 3 does
 * not fit the budget, with the breakdown and the largest context), the
 * --logits-out rows (all: one per prompt position), --decode-from giving the
 * prefill's logits, typed and naive logits files identical byte for byte,
 * and the --json summary. Skips (77) without the tmem tool. */
#include <sys/stat.h>
#include <sys/wait.h>
#include "tiny_model.h"

static char dir[400], model[600];

static int run(const char *args, char *out, size_t cap) {
    const char *tool = getenv("TMEM_TOOL");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' run '%s' %s 2>&1", tool, model, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static float *read_rows(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f) return NULL;
    static float buf[64 * 128];
    *n = fread(buf, sizeof(float), sizeof buf / sizeof buf[0], f);
    fclose(f);
    float *copy = malloc(*n * sizeof(float) + 1);
    if (copy) memcpy(copy, buf, *n * sizeof(float));
    return copy;
}

static void test_logits_files(void) {
    static char out[1 << 16];
    char args[1024], fa[700], fb[700], fc[700];
    const char *toks = "--tokens 3,14,15,92,65,35,89,79,32,38,46,26,43,38,32,79,50,28,84,19 -n 0";
    snprintf(fa, sizeof fa, "%s/a.f32", dir);
    snprintf(fb, sizeof fb, "%s/b.f32", dir);
    snprintf(fc, sizeof fc, "%s/c.f32", dir);
    snprintf(args, sizeof args, "%s --logits all --logits-out '%s' --chunk 8", toks, fa);
    CHECK_MSG(run(args, out, sizeof out) == 0, "%.200s", out);
    snprintf(args, sizeof args, "%s --logits all --logits-out '%s' --chunk 8 --memory naive", toks, fb);
    CHECK_MSG(run(args, out, sizeof out) == 0, "%.200s", out);
    snprintf(args, sizeof args, "%s --logits all --logits-out '%s' --decode-from 6", toks, fc);
    CHECK_MSG(run(args, out, sizeof out) == 0, "%.200s", out);
    size_t na, nb, nc;
    float *a = read_rows(fa, &na), *b = read_rows(fb, &nb), *c = read_rows(fc, &nc);
    CHECK_MSG(na == 20 * 97 && nb == na && nc == na, "rows: %zu %zu %zu floats", na, nb, nc);
    if (a && b && na == nb) CHECK_MSG(!memcmp(a, b, na * sizeof(float)), "typed and naive logits files differ");
    float m = 0, d = 0;
    for (size_t i = 0; a && c && i < na && i < nc; i++) {
        m = fabsf(a[i]) > m ? fabsf(a[i]) : m;
        d = fabsf(a[i] - c[i]) > d ? fabsf(a[i] - c[i]) : d;
    }
    CHECK_MSG(m > 0 && d <= 1e-5f * m, "decode-from vs prefill: %g (max %g)", d, m);
    /* --logits last: one row, the prompt's last */
    snprintf(args, sizeof args, "%s --logits-out '%s'", toks, fb);
    CHECK(run(args, out, sizeof out) == 0);
    free(b);
    b = read_rows(fb, &nb);
    CHECK(nb == 97 && a && b);
    float dl = 0;
    for (size_t i = 0; a && b && i < 97 && nb == 97; i++)
        dl = fabsf(a[19 * 97 + i] - b[i]) > dl ? fabsf(a[19 * 97 + i] - b[i]) : dl;
    CHECK_MSG(dl <= 1e-5f * m, "--logits last vs the last row of all: %g", dl); /* other chunking: rounding only */
    free(a);
    free(b);
    free(c);
    remove(fa);
    remove(fb);
    remove(fc);
}

static void test_exit_codes(void) {
    static char out[1 << 16];
    CHECK(run("--tokens 1,2,3 -n 5 --seed 3 --temp 0.7 --top-k 10 --top-p 0.9", out, sizeof out) == 0);
    CHECK_MSG(strstr(out, "prefill:") && strstr(out, "OS-measured peak"), "%.200s", out);
    CHECK(run("--tokens 1,2,3 --bogus", out, sizeof out) == 2);
    CHECK(run("-n 3", out, sizeof out) == 2);                     /* no prompt */
    CHECK(run("--tokens 1,2,300 -n 1", out, sizeof out) == 2);    /* outside the vocabulary */
    CHECK(run("-p hello -n 1", out, sizeof out) == 2);            /* no tokenizer in this GGUF */
    CHECK(run("--tokens 1,2 --ctx 100000 --budget 3M", out, sizeof out) == 3);
    CHECK_MSG(strstr(out, "refused") && strstr(out, "kv_cache") && strstr(out, "largest context"), "%.200s", out);
    CHECK(run("--tokens 1,2 -n 2 --json", out, sizeof out) == 0);
    CHECK_MSG(strstr(out, "\"prefill_tok_s\"") && strstr(out, "\"os_private_dirty_peak\"") &&
                  strstr(out, "\"tokens\": ["),
              "%.200s", out);
}

/* --trace streams the library's events; tmem report reads the file back. */
static void test_trace(void) {
    static char out[1 << 16];
    char args[1024], trace[700], cmd[2048];
    snprintf(trace, sizeof trace, "%s/run.tmtrace", dir);
    snprintf(args, sizeof args, "--tokens 1,2,3,4,5 -n 3 --trace '%s'", trace);
    CHECK_MSG(run(args, out, sizeof out) == 0, "%.200s", out);
    struct stat st;
    CHECK(stat(trace, &st) == 0 && st.st_size > 64);
    snprintf(cmd, sizeof cmd, "'%s' report '%s' --json > /dev/null 2>&1", getenv("TMEM_TOOL"), trace);
    int rc = system(cmd);
    CHECK_MSG(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "tmem report on the trace: %d", rc);
    CHECK(run("--tokens 1,2 --memory naive --trace /tmp/x", out, sizeof out) == 2);
    remove(trace);
}

int main(void) {
    if (!getenv("TMEM_TOOL")) {
        printf("SKIP: TMEM_TOOL is not set (run through ctest)\n");
        return 77;
    }
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    snprintf(model, sizeof model, "%s/tiny.gguf", dir);
    tiny_config c = tiny_config_a();
    if (!tiny_model_write(&c, model)) return 1;
    RUN(test_logits_files);
    RUN(test_exit_codes);
    RUN(test_trace);
    remove(model);
    remove(dir);
    return tmem_test_finish();
}

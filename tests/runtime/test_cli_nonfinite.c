/* Issue 21 item 2: a non-finite logit is an error naming the position, with
 * exit 1 and the session closed cleanly, whatever the sampler. The issue's
 * reproducer: `tmem gen --preset tiny`, one f16 NaN (bytes 00 7e) at the first
 * element of blk.0.attn_qkv.weight, then `tmem run -p "Hello world" -n 4
 * --temp 0.8` (it crashed in tmrt_sample), with --top-p 0.9, and greedy
 * (which emitted token 0); then an all-Inf row of token_embd.weight, the
 * prompt being that token. The unmodified model still runs (exit 0). Skips
 * (77) without the tmem tool. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "typedmem/typedmem.h"

static char dir[400], model[600];

static int sh(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int run(const char *args, char *out, size_t cap) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' run '%s' %s 2>&1", getenv("TMEM_TOOL"), model, args);
    return sh(cmd, out, cap);
}

/* Read the model, let patch() edit one tensor's bytes, write it back. */
static bool patch_tensor(const char *name, void (*patch)(uint8_t *p, const tmem_gguf_tensor *t)) {
    FILE *f = fopen(model, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *img = malloc((size_t)n);
    bool ok = img && fread(img, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    tmem_gguf *g = NULL;
    tmem_gguf_error ge;
    tmem_gguf_info gi;
    tmem_gguf_tensor t;
    ok = ok && tmem_gguf_open_memory(NULL, img, (size_t)n, &g, &ge) == TMEM_OK &&
         tmem_gguf_get_info(g, &gi) == TMEM_OK && tmem_gguf_tensor_find(g, name, &t) == TMEM_OK;
    if (ok) patch(img + gi.data_offset + t.offset, &t);
    if (g) tmem_gguf_close(g);
    if (ok && (f = fopen(model, "wb"))) {
        ok = fwrite(img, 1, (size_t)n, f) == (size_t)n;
        ok = fclose(f) == 0 && ok;
    }
    free(img);
    return ok;
}

static void nan_first(uint8_t *p, const tmem_gguf_tensor *t) {
    CHECK_MSG(t->type == TMEM_GGML_F16, "attn_qkv is type %u, not f16", t->type);
    p[0] = 0x00; /* f16 NaN, as the issue wrote it */
    p[1] = 0x7e;
}

static uint32_t inf_row = 5;
static void inf_embd_row(uint8_t *p, const tmem_gguf_tensor *t) {
    uint64_t w = t->dims[0];
    if (t->type == TMEM_GGML_F16) {
        for (uint64_t i = 0; i < w; i++) {
            p[(inf_row * w + i) * 2] = 0x00; /* +Inf */
            p[(inf_row * w + i) * 2 + 1] = 0x7c;
        }
    } else if (t->type == TMEM_GGML_F32) {
        float inf = INFINITY;
        for (uint64_t i = 0; i < w; i++) memcpy(p + (inf_row * w + i) * 4, &inf, 4);
    } else {
        CHECK_MSG(false, "token_embd is type %u: the test writes f16 or f32 rows", t->type);
    }
}

static void expect_refused(const char *args) {
    static char out[1 << 16];
    int rc = run(args, out, sizeof out);
    CHECK_MSG(rc == 1, "run %s: exit %d, want 1: %.300s", args, rc, out);
    CHECK_MSG(strstr(out, "non-finite logit") && strstr(out, "at position"), "run %s: %.300s", args, out);
    CHECK_MSG(!strstr(out, "Sanitizer") && !strstr(out, "leak"), "run %s: %.600s", args, out);
}

static void test_nan_weight(void) {
    static char out[1 << 16];
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' gen --preset tiny '%s' 2>&1", getenv("TMEM_TOOL"), model);
    CHECK_MSG(sh(cmd, out, sizeof out) == 0, "gen: %.300s", out);
    CHECK_MSG(run("-p \"Hello world\" -n 4 --temp 0.8", out, sizeof out) == 0, "clean model: %.300s", out);
    REQUIRE(patch_tensor("blk.0.attn_qkv.weight", nan_first));
    expect_refused("-p \"Hello world\" -n 4 --temp 0.8");
    expect_refused("-p \"Hello world\" -n 4 --temp 0.8 --top-p 0.9");
    expect_refused("-p \"Hello world\" -n 4"); /* greedy */
    expect_refused("-p \"Hello world\" -n 4 --temp 0.8 --top-k 5");
}

static void test_inf_embedding(void) {
    static char out[1 << 16];
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' gen --preset tiny '%s' 2>&1", getenv("TMEM_TOOL"), model);
    CHECK_MSG(sh(cmd, out, sizeof out) == 0, "gen: %.300s", out);
    REQUIRE(patch_tensor("token_embd.weight", inf_embd_row));
    expect_refused("--tokens 5 -n 4 --temp 0.8");
    expect_refused("--tokens 5 -n 4 --temp 0.8 --top-p 0.9");
    expect_refused("--tokens 5 -n 4");
}

int main(void) {
    const char *tool = getenv("TMEM_TOOL");
    if (!tool || access(tool, X_OK)) {
        printf("SKIP: TMEM_TOOL is not set (run through ctest)\n");
        return 77;
    }
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    snprintf(model, sizeof model, "%s/t.gguf", dir);
    RUN(test_nan_weight);
    RUN(test_inf_embedding);
    remove(model);
    remove(dir);
    return tmem_test_finish();
}

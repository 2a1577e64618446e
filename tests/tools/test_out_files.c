/* Issue 21 item 1: every file a tmem command writes is replaced atomically
 * (a temporary beside it, fsync, rename), an output that is an input is
 * refused naming both, a special file as output is refused up front, a
 * symlink output has its target replaced and stays a link, and nothing but
 * the command's own temporary is ever removed. The reproducers:
 * convert DIR DIR/model.safetensors and DIR/config.json, run --logits-out M
 * and --trace M, gen over a file that a reader has mapped, a failed write
 * (the file size limit) and a SIGTERM during gen leaving the previous file,
 * and /dev/full as an output. Plus the API (out_file.h) itself. Skips (77)
 * without the tmem tool. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>
#include "harness.h"
#include "typedmem/typedmem.h"

static char dir[400];
static const char *tool;

static int sh(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

static int tmem(char *out, size_t cap, const char *fmt, const char *a, const char *b) {
    char args[1500], cmd[2048];
    snprintf(args, sizeof args, fmt, a, b ? b : "");
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", dir, tool, args);
    return sh(cmd, out, cap);
}

static char *slurp(const char *name, size_t *len) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    *len = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) == (size_t)n) *len = (size_t)n;
    fclose(f);
    return b;
}

static bool same_bytes(const char *a, const char *b) {
    size_t la, lb;
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    bool same = x && y && la == lb && !memcmp(x, y, la);
    free(x);
    free(y);
    return same;
}

static void put(const char *name, const char *text) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* No temporary left in the directory (names starting ".", "tmem-"). */
static int leftovers(const char *sub) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    DIR *d = opendir(p);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".tmem-")) n++;
    if (d) closedir(d);
    return n;
}

static void test_api(void) {
    char p[700], in[700];
    snprintf(p, sizeof p, "%s/api.out", dir);
    snprintf(in, sizeof in, "%s/api.in", dir);
    put("api.out", "old");
    put("api.in", "input");
    tmem_out_file *f;
    tmem_out_error e;
    const char *ins[] = {in};
    /* abort: the previous file stays */
    REQUIRE_OK(tmem_out_file_open(p, ins, 1, &f, &e));
    fputs("new but abandoned", tmem_out_file_stream(f));
    tmem_out_file_abort(f);
    size_t n;
    char *b = slurp("api.out", &n);
    CHECK(b && n == 3 && !memcmp(b, "old", 3));
    free(b);
    /* commit: replaced, and an old descriptor still reads the old bytes */
    int old = open(p, O_RDONLY);
    REQUIRE_OK(tmem_out_file_open(p, ins, 1, &f, &e));
    fputs("new", tmem_out_file_stream(f));
    fputs("er", tmem_out_file_stream(f));
    CHECK_OK(tmem_out_file_commit(f, &e));
    b = slurp("api.out", &n);
    CHECK(b && n == 5 && !memcmp(b, "newer", 5));
    free(b);
    char ob[8] = {0};
    CHECK(old >= 0 && read(old, ob, sizeof ob) == 3 && !memcmp(ob, "old", 3));
    if (old >= 0) close(old);
    /* refusals: an input, a directory, a device, a dangling link */
    CHECK_ST(tmem_out_file_open(in, ins, 1, &f, &e), TMEM_E_EXISTS);
    CHECK_MSG(strstr(e.message, "same file as the input"), "%s", e.message);
    CHECK_ST(tmem_out_file_open(dir, NULL, 0, &f, &e), TMEM_E_INVALID_ARG);
    CHECK_MSG(strstr(e.message, "is a directory"), "%s", e.message);
    CHECK_ST(tmem_out_file_open("/dev/null", NULL, 0, &f, &e), TMEM_E_INVALID_ARG);
    CHECK_MSG(strstr(e.message, "is a device"), "%s", e.message);
    struct stat st;
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    char link[700];
    snprintf(link, sizeof link, "%s/dangling", dir);
    CHECK(symlink("nowhere/at/all", link) == 0);
    CHECK_ST(tmem_out_file_open(link, NULL, 0, &f, &e), TMEM_E_NOT_FOUND);
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode)); /* never unlinked */
    remove(link);
    /* a symlink is written through: the target replaced, the link kept */
    snprintf(link, sizeof link, "%s/api.link", dir);
    CHECK(symlink("api.out", link) == 0);
    REQUIRE_OK(tmem_out_file_open(link, NULL, 0, &f, &e));
    fputs("via link", tmem_out_file_stream(f));
    CHECK_OK(tmem_out_file_commit(f, &e));
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    b = slurp("api.out", &n);
    CHECK(b && n == 8 && !memcmp(b, "via link", 8));
    free(b);
    CHECK(leftovers("") == 0);
    remove(link);
    remove(p);
    remove(in);
}

static void test_gen_and_readers(void) {
    static char out[1 << 16];
    CHECK_MSG(tmem(out, sizeof out, "gen --preset tiny --seed 1 m.gguf", NULL, NULL) == 0, "%.300s", out);
    CHECK(tmem(out, sizeof out, "gen --preset tiny --seed 1 ref1.gguf", NULL, NULL) == 0);
    /* a reader has the model mapped: gen over it must not pull its pages away */
    char p[700];
    snprintf(p, sizeof p, "%s/m.gguf", dir);
    int fd = open(p, O_RDONLY);
    struct stat st;
    REQUIRE(fd >= 0 && fstat(fd, &st) == 0);
    volatile unsigned char *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    REQUIRE(map != MAP_FAILED);
    CHECK(tmem(out, sizeof out, "gen --preset tiny --seed 2 --layers 2 m.gguf", NULL, NULL) == 0);
    unsigned sum = 0;
    for (off_t i = 0; i < st.st_size; i += 512) sum += map[i]; /* SIGBUS here if it was truncated */
    size_t n;
    char *ref = slurp("ref1.gguf", &n);
    CHECK(ref && n == (size_t)st.st_size && !memcmp((const void *)map, ref, n)); /* the old bytes, whole */
    free(ref);
    munmap((void *)map, (size_t)st.st_size);
    close(fd);
    (void)sum;
    /* a reader process of the old file keeps running while gen replaces it */
    CHECK(tmem(out, sizeof out, "gen --preset tiny --seed 1 m.gguf", NULL, NULL) == 0);
    char cmd[1500];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && { '%s' run m.gguf --tokens 1 -n 3000 >/dev/null 2>&1 & p=$!; sleep 0.2; "
             "'%s' gen --preset tiny --seed 2 m.gguf >/dev/null 2>&1; wait $p; }",
             dir, tool, tool);
    CHECK_MSG(sh(cmd, out, sizeof out) == 0, "a run reading m.gguf died while gen replaced it");
    CHECK(tmem(out, sizeof out, "gen --preset tiny --seed 1 m.gguf", NULL, NULL) == 0);
    /* a failed write (file size limit: SIGXFSZ or EFBIG) leaves the previous file */
    snprintf(cmd, sizeof cmd, "cd '%s' && (ulimit -f 64; exec '%s' gen --preset tiny --seed 9 m.gguf) 2>&1", dir, tool);
    int rc = sh(cmd, out, sizeof out);
    CHECK_MSG(rc != 0, "gen under a 64 KiB file limit: exit %d", rc);
    CHECK_MSG(same_bytes("m.gguf", "ref1.gguf"), "a failed gen changed the previous file");
    CHECK(leftovers("") == 0);
    /* SIGTERM during gen: the previous file, or the complete new one; never a part */
    CHECK(tmem(out, sizeof out, "gen --preset tiny --seed 3 --layers 8 --embd 512 --ff 1024 ref3.gguf", NULL,
               NULL) == 0);
    for (int delay_ms = 5; delay_ms <= 80; delay_ms *= 4) {
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && { '%s' gen --preset tiny --seed 3 --layers 8 --embd 512 --ff 1024 m.gguf >/dev/null 2>&1 & "
                 "p=$!; sleep %d.%03d; kill -TERM $p; wait $p; }",
                 dir, tool, delay_ms / 1000, delay_ms % 1000);
        (void)sh(cmd, out, sizeof out);
        bool old = same_bytes("m.gguf", "ref1.gguf"), full = same_bytes("m.gguf", "ref3.gguf");
        CHECK_MSG(old || full, "after SIGTERM at %d ms m.gguf is neither the old nor the new file", delay_ms);
        CHECK(leftovers("") == 0);
        if (full) CHECK(tmem(out, sizeof out, "gen --preset tiny --seed 1 m.gguf", NULL, NULL) == 0);
    }
    /* special files refused up front, never removed */
    CHECK(tmem(out, sizeof out, "gen --preset tiny /dev/full", NULL, NULL) == 2);
    CHECK_MSG(strstr(out, "is a device"), "%.300s", out);
    struct stat dv;
    CHECK(stat("/dev/full", &dv) == 0 && S_ISCHR(dv.st_mode));
    char sub[700];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(sub, 0755);
    CHECK(tmem(out, sizeof out, "gen --preset tiny sub", NULL, NULL) == 2);
    CHECK_MSG(strstr(out, "is a directory"), "%.300s", out);
    /* a symlink output: its target replaced, the link stays */
    snprintf(p, sizeof p, "%s/link.gguf", dir);
    CHECK(symlink("m.gguf", p) == 0);
    CHECK(tmem(out, sizeof out, "gen --preset tiny --seed 3 --layers 8 --embd 512 --ff 1024 link.gguf", NULL,
               NULL) == 0);
    CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(same_bytes("m.gguf", "ref3.gguf"));
    remove(p);
    CHECK(tmem(out, sizeof out, "gen --preset tiny --seed 1 m.gguf", NULL, NULL) == 0);
    rmdir(sub);
    snprintf(p, sizeof p, "%s/ref3.gguf", dir);
    remove(p);
}

static void test_run_outputs(void) {
    static char out[1 << 16];
    /* --logits-out and --trace naming the model: refused, the model intact */
    CHECK(tmem(out, sizeof out, "run m.gguf --tokens 1,2 -n 1 --logits-out m.gguf", NULL, NULL) == 2);
    CHECK_MSG(strstr(out, "same file as the input 'm.gguf'"), "%.300s", out);
    CHECK(tmem(out, sizeof out, "run m.gguf --tokens 1,2 -n 1 --trace ./m.gguf", NULL, NULL) == 2);
    CHECK_MSG(strstr(out, "same file as the input"), "%.300s", out);
    CHECK(same_bytes("m.gguf", "ref1.gguf"));
    /* outputs written whole; a failed write leaves the previous one */
    CHECK_MSG(tmem(out, sizeof out, "run m.gguf --tokens 1,2,3 -n 1 --logits all --logits-out lo.f32 --trace tr.bin",
                   NULL, NULL) == 0, "%.300s", out);
    size_t n;
    char *b = slurp("lo.f32", &n);
    CHECK(b && n == 3 * 512 * 4);
    free(b);
    CHECK(tmem(out, sizeof out, "run m.gguf --tokens 1,2,3 -n 1 --logits-out lo.f32 --trace tr.bin --tokens 99999",
               NULL, NULL) != 0);
    b = slurp("lo.f32", &n);
    CHECK_MSG(b && n == 3 * 512 * 4, "a failed run changed the previous logits file (%zu bytes)", n);
    free(b);
    char cmd[1500];
    put("keep.f32", "previous");
    snprintf(cmd, sizeof cmd,
             "cd '%s' && (ulimit -f 2; exec '%s' run m.gguf --tokens 1,2,3,4,5,6,7,8 --logits all --logits-out keep.f32) 2>&1",
             dir, tool);
    CHECK(sh(cmd, out, sizeof out) != 0);
    b = slurp("keep.f32", &n);
    CHECK_MSG(b && n == 8 && !memcmp(b, "previous", 8), "a failed --logits-out write changed the file");
    free(b);
    CHECK(leftovers("") == 0);
    /* report's outputs may not be its trace */
    CHECK(tmem(out, sizeof out, "report tr.bin --svg tr.bin", NULL, NULL) == 2);
    CHECK_MSG(strstr(out, "same file as the input"), "%.300s", out);
    CHECK(tmem(out, sizeof out, "report tr.bin --svg tl.svg", NULL, NULL) == 0);
}

static void test_convert_inputs(void) {
    static char out[1 << 16];
    char hf[700];
    snprintf(hf, sizeof hf, "%s/hf", dir);
    mkdir(hf, 0755);
    put("hf/model.safetensors", "weights that must survive");
    put("hf/config.json", "{\"a\": 1}");
    CHECK(tmem(out, sizeof out, "convert hf hf/model.safetensors", NULL, NULL) == 2);
    CHECK_MSG(strstr(out, "same file as the input"), "%.300s", out);
    CHECK(tmem(out, sizeof out, "convert hf hf/config.json", NULL, NULL) == 2);
    size_t n;
    char *b = slurp("hf/model.safetensors", &n);
    CHECK(b && n == 25);
    free(b);
    b = slurp("hf/config.json", &n);
    CHECK(b && n == 8);
    free(b);
    /* a conversion that fails leaves the previous output */
    put("prev.gguf", "previous output");
    CHECK(tmem(out, sizeof out, "convert hf prev.gguf", NULL, NULL) != 0);
    b = slurp("prev.gguf", &n);
    CHECK(b && n == 15);
    free(b);
    CHECK(leftovers("") == 0);
}

static void test_plan_outputs(void) {
    static char out[1 << 16];
    put("p.csv", "id,lower,upper,size\n0,0,2,64\n1,1,3,32\n");
    CHECK(tmem(out, sizeof out, "plan p.csv --out p.csv", NULL, NULL) == 2);
    CHECK_MSG(strstr(out, "same file as the input"), "%.300s", out);
    size_t n;
    char *b = slurp("p.csv", &n);
    CHECK(b && n == strlen("id,lower,upper,size\n0,0,2,64\n1,1,3,32\n"));
    free(b);
}

int main(void) {
    tool = getenv("TMEM_TOOL");
    if (!tool || access(tool, X_OK)) {
        printf("SKIP: TMEM_TOOL is not set (run through ctest)\n");
        return 77;
    }
    signal(SIGXFSZ, SIG_IGN);
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 1;
    RUN(test_api);
    RUN(test_gen_and_readers);
    RUN(test_run_outputs);
    RUN(test_convert_inputs);
    RUN(test_plan_outputs);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return tmem_test_finish();
}

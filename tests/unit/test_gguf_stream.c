/* The GGUF streaming writer: a file written header first and tensor by
 * tensor (in chunks, mixed with writer-owned tensors) is byte-identical to
 * the in-memory image; misuse is refused; every failure (including each OS
 * call failed in turn by the fault sweep) leaves no file behind. */
#include "harness.h"
#include "typedmem/model.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[400], path[512];

static bool exists(const char *p) {
    struct stat s;
    return stat(p, &s) == 0;
}

static uint8_t *read_all(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

static uint8_t a_data[40 * 3 * 4], c_data[7 * 2];

/* The same file either way: streamed tensors declared (stream) or copied. */
static tmem_gguf_writer *make(bool stream) {
    tmem_gguf_writer *w;
    if (tmem_gguf_writer_create(NULL, 64, &w)) return NULL;
    tmem_gguf_value v = {.type = TMEM_GGUF_STRING};
    v.v.s.data = "qwen35";
    v.v.s.len = 6;
    bool ok = !tmem_gguf_writer_set(w, "general.architecture", &v);
    uint64_t da[2] = {40, 3}, db[1] = {5}, dc[1] = {7}, dd[1] = {64};
    ok &= !(stream ? tmem_gguf_writer_add_tensor_info(w, "a", TMEM_GGML_F32, 2, da)
                   : tmem_gguf_writer_add_tensor(w, "a", TMEM_GGML_F32, 2, da, a_data));
    ok &= !tmem_gguf_writer_add_tensor(w, "b", TMEM_GGML_F32, 1, db, NULL); /* generated pattern */
    ok &= !(stream ? tmem_gguf_writer_add_tensor_info(w, "c", TMEM_GGML_F16, 1, dc)
                   : tmem_gguf_writer_add_tensor(w, "c", TMEM_GGML_F16, 1, dc, c_data));
    ok &= !tmem_gguf_writer_add_tensor(w, "d", TMEM_GGML_I8, 1, dd, a_data); /* copied, last */
    if (!ok) {
        tmem_gguf_writer_destroy(w);
        return NULL;
    }
    return w;
}

static void test_identical(void) {
    for (size_t i = 0; i < sizeof a_data; i++) a_data[i] = (uint8_t)(i * 37 + 5);
    for (size_t i = 0; i < sizeof c_data; i++) c_data[i] = (uint8_t)(i * 11 + 3);
    tmem_gguf_writer *ref = make(false), *w = make(true);
    REQUIRE(ref && w);
    size_t need;
    CHECK_ST(tmem_gguf_writer_write(ref, NULL, 0, &need), TMEM_E_FULL);
    uint8_t *img = malloc(need);
    REQUIRE_OK(tmem_gguf_writer_write(ref, img, need, &need));
    size_t need2;
    CHECK_ST(tmem_gguf_writer_write(w, NULL, 0, &need2), TMEM_E_STATE); /* streamed bytes are not in w */
    tmem_gguf_stream *s;
    REQUIRE_OK(tmem_gguf_stream_begin(w, path, &s));
    size_t idx;
    uint64_t rem;
    REQUIRE_OK(tmem_gguf_stream_next(s, &idx, &rem));
    CHECK(idx == 0 && rem == sizeof a_data);
    CHECK_ST(tmem_gguf_writer_add_tensor(w, "e", TMEM_GGML_F32, 1, (uint64_t[]){1}, NULL), TMEM_E_STATE);
    tmem_gguf_stream *s2;
    CHECK_ST(tmem_gguf_stream_begin(w, path, &s2), TMEM_E_STATE);
    CHECK_ST(tmem_gguf_stream_write(s, a_data, sizeof a_data + 1), TMEM_E_OVERFLOW);
    for (size_t off = 0; off < sizeof a_data; off += 100) /* uneven chunks */
        REQUIRE_OK(tmem_gguf_stream_write(s, a_data + off, sizeof a_data - off < 100 ? sizeof a_data - off : 100));
    REQUIRE_OK(tmem_gguf_stream_next(s, &idx, &rem));
    CHECK(idx == 2 && rem == sizeof c_data); /* b was emitted by the stream */
    REQUIRE_OK(tmem_gguf_stream_write(s, c_data, 3));
    REQUIRE_OK(tmem_gguf_stream_write(s, c_data + 3, sizeof c_data - 3));
    CHECK_ST(tmem_gguf_stream_next(s, &idx, &rem), TMEM_E_NOT_FOUND); /* d too */
    CHECK_ST(tmem_gguf_stream_write(s, c_data, 1), TMEM_E_STATE);
    uint64_t bytes;
    REQUIRE_OK(tmem_gguf_stream_finish(s, &bytes));
    CHECK_MSG(bytes == need, "stream %llu, image %zu", (unsigned long long)bytes, need);
    size_t n;
    uint8_t *file = read_all(path, &n);
    REQUIRE(file);
    CHECK(n == need && !memcmp(file, img, n));
    tmem_gguf *g;
    tmem_gguf_error e;
    CHECK_OK(tmem_gguf_open_memory(NULL, file, n, &g, &e));
    tmem_gguf_close(g);
    CHECK_OK(tmem_gguf_writer_add_tensor(w, "e", TMEM_GGML_F32, 1, (uint64_t[]){1}, NULL)); /* stream over */
    free(file);
    free(img);
    tmem_gguf_writer_destroy(ref);
    tmem_gguf_writer_destroy(w);
    unlink(path);
}

static void test_failures_leave_no_file(void) {
    tmem_gguf_writer *w = make(true);
    REQUIRE(w);
    tmem_gguf_stream *s;
    REQUIRE_OK(tmem_gguf_stream_begin(w, path, &s));
    CHECK(!exists(path)); /* written beside (out_file.h): nothing under the name until finish */
    REQUIRE_OK(tmem_gguf_stream_write(s, a_data, 10));
    CHECK_ST(tmem_gguf_stream_finish(s, NULL), TMEM_E_STATE); /* incomplete */
    CHECK(!exists(path));
    REQUIRE_OK(tmem_gguf_stream_begin(w, path, &s));
    tmem_gguf_stream_abort(s);
    CHECK(!exists(path));
    /* a previous file survives a failed stream and an abort, byte for byte (issue 21) */
    FILE *prev = fopen(path, "wb");
    REQUIRE(prev);
    fputs("previous", prev);
    fclose(prev);
    REQUIRE_OK(tmem_gguf_stream_begin(w, path, &s));
    REQUIRE_OK(tmem_gguf_stream_write(s, a_data, 10));
    CHECK_ST(tmem_gguf_stream_finish(s, NULL), TMEM_E_STATE);
    REQUIRE_OK(tmem_gguf_stream_begin(w, path, &s));
    tmem_gguf_stream_abort(s);
    char back[16] = {0};
    prev = fopen(path, "rb");
    CHECK(prev && fread(back, 1, sizeof back, prev) == 8 && !strcmp(back, "previous"));
    if (prev) fclose(prev);
    unlink(path);
    /* a directory or a device as the path: refused, untouched */
    CHECK_ST(tmem_gguf_stream_begin(w, dir, &s), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_stream_begin(w, "/dev/null", &s), TMEM_E_INVALID_ARG);
    char bad[600];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.gguf", dir);
    CHECK_ST(tmem_gguf_stream_begin(w, bad, &s), TMEM_E_NOT_FOUND);
    CHECK(s == NULL);
    CHECK_ST(tmem_gguf_stream_begin(w, "", &s), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_stream_begin(NULL, path, &s), TMEM_E_INVALID_ARG);
    tmem_gguf_stream_abort(NULL);
    tmem_gguf_writer_destroy(w);
}

/* Every OS call of begin + write + finish failed in turn. */
typedef struct sweep_state {
    tmem_gguf_writer *w;
} sweep_state;

static tmem_status scenario(void *u) {
    sweep_state *st = u;
    tmem_gguf_stream *s;
    tmem_status r = tmem_gguf_stream_begin(st->w, path, &s);
    if (r) return r;
    r = tmem_gguf_stream_write(s, a_data, sizeof a_data);
    if (!r) r = tmem_gguf_stream_write(s, c_data, sizeof c_data);
    if (r) {
        tmem_gguf_stream_abort(s);
        return r;
    }
    return tmem_gguf_stream_finish(s, NULL);
}
static bool check(void *u, tmem_status st) {
    (void)u;
    return st == TMEM_OK ? exists(path) : !exists(path);
}
static void cleanup(void *u) {
    (void)u;
    unlink(path);
}

static void test_fault_sweep(void) {
    sweep_state s = {make(true)};
    REQUIRE(s.w);
    tmem_test_sweep_desc d = {0};
    d.label = "gguf_stream";
    d.scenario = scenario;
    d.cleanup = cleanup;
    d.check = check;
    d.user = &s;
    d.err = 28; /* ENOSPC: a full disk */
    uint64_t n = tmem_test_fault_sweep_ex(&d);
    CHECK(n >= 2); /* create, write (close is a teardown call, never failed) */
    tmem_gguf_writer_destroy(s.w);
}

int main(void) {
    if (!tmem_test_tmpdir(dir, sizeof dir)) return 77;
    snprintf(path, sizeof path, "%s/s.gguf", dir);
    RUN(test_identical);
    RUN(test_failures_leave_no_file);
    RUN(test_fault_sweep);
    unlink(path);
    rmdir(dir);
    return tmem_test_finish();
}

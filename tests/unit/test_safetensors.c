/* The safetensors reader on valid files: every dtype, scalars and empty
 * tensors, metadata, lookups, unaligned data; mapped from a file into the
 * FILE type (charged clean, closed by the context), and a fault sweep over
 * "open and map" (every OS call failed in turn: a clean error, nothing
 * charged or left mapped). */
#include "harness.h"
#include "st_write.h"
#include "typedmem/safetensors.h"
#include "os/os.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_valid_image(void) {
    st_build b;
    st_init(&b);
    float w[6] = {1, 2, 3, 4, 5, 6};
    uint16_t h[3] = {0x3C00, 0x4000, 0x4200};
    uint8_t one = 1;
    st_meta(&b, "format", "pt");
    st_meta(&b, "note", "caf\\u00e9");
    st_add(&b, "a.bool", "BOOL", 1, (uint64_t[]){1}, &one, 1); /* makes the next tensor unaligned */
    st_add_f32(&b, "b.w", 2, (uint64_t[]){2, 3}, w);
    st_add(&b, "c.h", "BF16", 1, (uint64_t[]){3}, h, 6);
    st_add(&b, "d.empty", "F32", 2, (uint64_t[]){0, 4}, NULL, 0);
    st_add(&b, "e.scalar", "F64", 0, NULL, (double[]){2.5}, 8);
    uint8_t *img;
    size_t n;
    st_finish(&b, &img, &n);
    tmem_safetensors *st;
    tmem_safetensors_error e;
    REQUIRE_OK(tmem_safetensors_open_memory(NULL, img, n, &st, &e));
    tmem_safetensors_info info;
    REQUIRE_OK(tmem_safetensors_get_info(st, &info));
    CHECK(info.tensor_count == 5 && info.metadata_count == 2 && info.file_size == n);
    CHECK(info.tensor_bytes == 1 + 24 + 6 + 0 + 8 && info.mapped_bytes == 0);
    CHECK(info.header_size % 8 == 0 && info.data_offset == 8 + info.header_size);
    tmem_safetensors_tensor t;
    REQUIRE_OK(tmem_safetensors_find(st, "b.w", &t));
    CHECK(t.dtype == TMEM_ST_F32 && t.n_dims == 2 && t.shape[0] == 2 && t.shape[1] == 3 && t.shape[2] == 1);
    CHECK(t.n_elements == 6 && t.size == 24 && t.offset == 1);
    float got[6];
    memcpy(got, t.data, sizeof got); /* unaligned: memcpy */
    CHECK(!memcmp(got, w, sizeof w));
    REQUIRE_OK(tmem_safetensors_find(st, "e.scalar", &t));
    CHECK(t.n_dims == 0 && t.n_elements == 1 && t.size == 8 && t.dtype == TMEM_ST_F64);
    REQUIRE_OK(tmem_safetensors_find(st, "d.empty", &t));
    CHECK(t.n_elements == 0 && t.size == 0);
    CHECK_ST(tmem_safetensors_find(st, "nope", &t), TMEM_E_NOT_FOUND);
    /* tensor_at walks in data order */
    uint64_t last = 0;
    for (uint64_t i = 0; tmem_safetensors_tensor_at(st, i, &t) == TMEM_OK; i++) {
        CHECK(t.offset >= last);
        last = t.offset;
    }
    const char *k, *v;
    REQUIRE_OK(tmem_safetensors_metadata_at(st, 1, &k, &v));
    CHECK(!strcmp(k, "note") && !strcmp(v, "caf\xc3\xa9"));
    CHECK_ST(tmem_safetensors_metadata_at(st, 2, &k, &v), TMEM_E_NOT_FOUND);
    CHECK(!strcmp(tmem_st_dtype_name(TMEM_ST_BF16), "BF16") && tmem_st_dtype_size(TMEM_ST_I64) == 8);
    CHECK(tmem_st_dtype_name(TMEM_ST_DTYPE_COUNT) == NULL && tmem_st_dtype_size(TMEM_ST_DTYPE_COUNT) == 0);
    tmem_safetensors_close(st);
    free(img);
    st_free(&b);
}

static char path[512];

static void make_file(void) {
    st_build b;
    st_init(&b);
    float w[1024];
    for (int i = 0; i < 1024; i++) w[i] = (float)i;
    st_add_f32(&b, "model.w", 2, (uint64_t[]){32, 32}, w);
    uint8_t *img;
    size_t n;
    st_finish(&b, &img, &n);
    char dir[400];
    if (!tmem_test_tmpdir(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    if (st_write_file(path, img, n)) path[0] = 0;
    free(img);
    st_free(&b);
}

static void test_open_file(void) {
    REQUIRE(path[0]);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_safetensors_desc d = {0};
    d.path = path;
    tmem_safetensors *st;
    tmem_safetensors_error e;
    REQUIRE_OK(tmem_safetensors_open(ctx, &d, &st, &e));
    tmem_safetensors_info info;
    REQUIRE_OK(tmem_safetensors_get_info(st, &info));
    CHECK(info.mapped_bytes >= info.file_size && info.mapped_bytes % 4096 == 0);
    tmem_type *wt;
    tmem_type_stats ts;
    REQUIRE_OK(tmem_type_find(ctx, "/memory/weights", &wt));
    REQUIRE_OK(tmem_type_get_stats(wt, &ts));
    CHECK(ts.clean == info.mapped_bytes); /* charged as clean, file-backed */
    tmem_safetensors_tensor t;
    REQUIRE_OK(tmem_safetensors_find(st, "model.w", &t));
    float x;
    memcpy(&x, (const float *)t.data + 1000, 4);
    CHECK(x == 1000.0f);
    tmem_safetensors_close(st);
    REQUIRE_OK(tmem_type_get_stats(wt, &ts));
    CHECK(ts.clean == 0);
    /* left open: the context closes it */
    REQUIRE_OK(tmem_safetensors_open(ctx, &d, &st, &e));
    /* errors name the path */
    d.path = "/nonexistent/x.safetensors";
    CHECK_ST(tmem_safetensors_open(ctx, &d, &st, &e), TMEM_E_NOT_FOUND);
    CHECK(strstr(e.message, "/nonexistent/x.safetensors") != NULL && st == NULL);
    CHECK_ST(tmem_safetensors_open(NULL, &d, &st, &e), TMEM_E_INVALID_ARG);
    tmem_context_destroy(ctx);
}

typedef struct sweep_state {
    tmem_context *ctx;
    tmem_safetensors *st;
} sweep_state;

static tmem_status scenario(void *u) {
    sweep_state *s = u;
    tmem_safetensors_desc d = {0};
    d.path = path;
    d.flags = TMEM_GGUF_WILLNEED;
    return tmem_safetensors_open(s->ctx, &d, &s->st, NULL);
}
static bool check(void *u, tmem_status st) {
    sweep_state *s = u;
    if (st != TMEM_OK && s->st) return false;
    tmem_type *wt;
    tmem_type_stats ts;
    if (tmem_type_find(s->ctx, "/memory/weights", &wt) || tmem_type_get_stats(wt, &ts)) return false;
    if (st != TMEM_OK && ts.clean != 0) return false;
    return tmem_context_check(s->ctx) == TMEM_OK;
}
static void cleanup(void *u) {
    sweep_state *s = u;
    tmem_safetensors_close(s->st);
    s->st = NULL;
}

static void test_fault_sweep(void) {
    REQUIRE(path[0]);
    sweep_state s = {0};
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 20;
    REQUIRE_OK(tmem_context_create(&cd, &s.ctx));
    tmem_test_sweep_desc d = {0};
    d.label = "safetensors_open";
    d.scenario = scenario;
    d.cleanup = cleanup;
    d.check = check;
    d.user = &s;
    uint64_t n = tmem_test_fault_sweep_ex(&d);
    printf("safetensors_open: %llu OS calls swept\n", (unsigned long long)n);
    CHECK(n >= 2);
    tmem_context_destroy(s.ctx);
}

int main(void) {
    make_file();
    RUN(test_valid_image);
    RUN(test_open_file);
    RUN(test_fault_sweep);
    if (path[0]) {
        unlink(path);
        char *slash = strrchr(path, '/');
        if (slash) {
            *slash = 0;
            rmdir(path);
        }
    }
    return tmem_test_finish();
}

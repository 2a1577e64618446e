/* GGUF writer -> reader round trip over memory images: every metadata type
 * (scalars, strings, arrays of each), tensors of several ggml types with
 * generated and given contents, alignment; plus the ggml type table and the
 * writer's own refusals. */
#include "harness.h"
#include "typedmem/model.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool str_is(tmem_gguf_str s, const char *want) {
    return s.len == strlen(want) && !memcmp(s.data, want, s.len);
}

static tmem_gguf_value u(tmem_gguf_vtype t, uint64_t v) {
    tmem_gguf_value x = {.type = t};
    x.v.u = v;
    return x;
}
static tmem_gguf_value i(tmem_gguf_vtype t, int64_t v) {
    tmem_gguf_value x = {.type = t};
    x.v.i = v;
    return x;
}
static tmem_gguf_value f(tmem_gguf_vtype t, double v) {
    tmem_gguf_value x = {.type = t};
    x.v.f = v;
    return x;
}

/* Serialise a writer into a fresh malloc'd buffer of exactly its size. */
static uint8_t *serialise(tmem_gguf_writer *w, size_t *n) {
    size_t need = 0;
    tmem_status st = tmem_gguf_writer_write(w, NULL, 0, &need);
    if (st != TMEM_E_FULL || !need) return NULL;
    uint8_t *buf = malloc(need);
    if (!buf) return NULL;
    if (tmem_gguf_writer_write(w, buf, need, n) != TMEM_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void test_type_table(void) {
    struct { uint32_t t, blk, size; } want[] = {
        {TMEM_GGML_F32, 1, 4}, {TMEM_GGML_F16, 1, 2}, {TMEM_GGML_BF16, 1, 2}, {TMEM_GGML_Q4_0, 32, 18},
        {TMEM_GGML_Q4_1, 32, 20}, {TMEM_GGML_Q5_0, 32, 22}, {TMEM_GGML_Q5_1, 32, 24}, {TMEM_GGML_Q8_0, 32, 34},
        {TMEM_GGML_Q2_K, 256, 84}, {TMEM_GGML_Q3_K, 256, 110}, {TMEM_GGML_Q4_K, 256, 144},
        {TMEM_GGML_Q5_K, 256, 176}, {TMEM_GGML_Q6_K, 256, 210}, {TMEM_GGML_Q8_K, 256, 292},
        {TMEM_GGML_IQ4_NL, 32, 18}, {TMEM_GGML_IQ4_XS, 256, 136}, {TMEM_GGML_TQ1_0, 256, 54},
        {TMEM_GGML_TQ2_0, 256, 66}, {TMEM_GGML_MXFP4, 32, 17}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        tmem_ggml_type_info ti;
        CHECK_OK(tmem_ggml_type_get_info(want[k].t, &ti));
        CHECK_MSG(ti.block_size == want[k].blk && ti.type_size == want[k].size, "type %u: %u/%u", want[k].t,
                  ti.block_size, ti.type_size);
        uint32_t back;
        CHECK_OK(tmem_ggml_type_from_name(ti.name, &back));
        CHECK(back == want[k].t);
    }
    tmem_ggml_type_info ti;
    CHECK_ST(tmem_ggml_type_get_info(4, &ti), TMEM_E_UNSUPPORTED); /* removed Q4_2 */
    CHECK_ST(tmem_ggml_type_get_info(31, &ti), TMEM_E_UNSUPPORTED);
    CHECK_ST(tmem_ggml_type_get_info(TMEM_GGML_TYPE_LIMIT, &ti), TMEM_E_UNSUPPORTED);
    CHECK_ST(tmem_ggml_type_get_info(0, NULL), TMEM_E_INVALID_ARG);
    uint64_t n;
    CHECK_OK(tmem_ggml_row_size(TMEM_GGML_Q4_K, 512, &n));
    CHECK(n == 288);
    CHECK_ST(tmem_ggml_row_size(TMEM_GGML_Q4_K, 100, &n), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_ggml_row_size(TMEM_GGML_F64, UINT64_MAX, &n), TMEM_E_OVERFLOW);
    uint32_t t;
    CHECK_OK(tmem_ggml_type_from_name("Q4_k", &t));
    CHECK(t == TMEM_GGML_Q4_K);
    CHECK_ST(tmem_ggml_type_from_name("q9_9", &t), TMEM_E_NOT_FOUND);
}

/* The model every round-trip case writes. */
enum { N_TENSORS = 6 };
static const struct { const char *name; uint32_t type, n_dims; uint64_t dims[4]; } tensors[N_TENSORS] = {
    {"token_embd.weight", TMEM_GGML_F32, 2, {7, 3}},
    {"blk.0.attn_norm.weight", TMEM_GGML_F16, 1, {8}},
    {"blk.0.attn_q.weight", TMEM_GGML_Q4_0, 2, {64, 2}},
    {"blk.0.ffn_up.weight", TMEM_GGML_Q4_K, 1, {256}},
    {"blk.0.ffn_down.weight", TMEM_GGML_BF16, 4, {3, 2, 2, 2}},
    {"output.weight", TMEM_GGML_Q8_0, 4, {32, 1, 1, 3}},
};

static tmem_gguf_writer *make_model(uint32_t alignment, const uint8_t *given) {
    tmem_gguf_writer *w;
    if (tmem_gguf_writer_create(NULL, alignment, &w) != TMEM_OK) return NULL;
    tmem_gguf_value v;
    bool ok = true;
    v = u(TMEM_GGUF_UINT8, 200); ok &= !tmem_gguf_writer_set(w, "t.u8", &v);
    v = i(TMEM_GGUF_INT8, -100); ok &= !tmem_gguf_writer_set(w, "t.i8", &v);
    v = u(TMEM_GGUF_UINT16, 60000); ok &= !tmem_gguf_writer_set(w, "t.u16", &v);
    v = i(TMEM_GGUF_INT16, -30000); ok &= !tmem_gguf_writer_set(w, "t.i16", &v);
    v = u(TMEM_GGUF_UINT32, 4000000000u); ok &= !tmem_gguf_writer_set(w, "t.u32", &v);
    v = i(TMEM_GGUF_INT32, -2000000000); ok &= !tmem_gguf_writer_set(w, "t.i32", &v);
    v = u(TMEM_GGUF_UINT64, 0xFEDCBA9876543210ull); ok &= !tmem_gguf_writer_set(w, "t.u64", &v);
    v = i(TMEM_GGUF_INT64, INT64_MIN + 5); ok &= !tmem_gguf_writer_set(w, "t.i64", &v);
    v = f(TMEM_GGUF_FLOAT32, 1.5); ok &= !tmem_gguf_writer_set(w, "t.f32", &v);
    v = f(TMEM_GGUF_FLOAT64, -2.25e-300); ok &= !tmem_gguf_writer_set(w, "t.f64", &v);
    v = (tmem_gguf_value){.type = TMEM_GGUF_BOOL}; v.v.b = true; ok &= !tmem_gguf_writer_set(w, "t.bool", &v);
    v = (tmem_gguf_value){.type = TMEM_GGUF_STRING}; v.v.s.data = "héllo"; v.v.s.len = strlen("héllo");
    ok &= !tmem_gguf_writer_set(w, "general.name", &v);
    v.v.s.data = ""; v.v.s.len = 0; ok &= !tmem_gguf_writer_set(w, "t.empty", &v);
    static const uint8_t a_u8[] = {1, 2, 255};
    static const int16_t a_i16[] = {-1, 7};
    static const uint32_t a_u32[] = {10, 20, 30, 40};
    static const int64_t a_i64[] = {-9, 9};
    static const float a_f32[] = {0.5f, -0.25f};
    static const double a_f64[] = {3.0};
    static const uint8_t a_bool[] = {1, 0, 1};
    static const char *const a_str[] = {"a", "", "token three"};
    ok &= !tmem_gguf_writer_set_array(w, "a.u8", TMEM_GGUF_UINT8, a_u8, 3);
    ok &= !tmem_gguf_writer_set_array(w, "a.i16", TMEM_GGUF_INT16, a_i16, 2);
    ok &= !tmem_gguf_writer_set_array(w, "a.u32", TMEM_GGUF_UINT32, a_u32, 4);
    ok &= !tmem_gguf_writer_set_array(w, "a.i64", TMEM_GGUF_INT64, a_i64, 2);
    ok &= !tmem_gguf_writer_set_array(w, "a.f32", TMEM_GGUF_FLOAT32, a_f32, 2);
    ok &= !tmem_gguf_writer_set_array(w, "a.f64", TMEM_GGUF_FLOAT64, a_f64, 1);
    ok &= !tmem_gguf_writer_set_array(w, "a.bool", TMEM_GGUF_BOOL, a_bool, 3);
    ok &= !tmem_gguf_writer_set_array(w, "tokenizer.ggml.tokens", TMEM_GGUF_STRING, a_str, 3);
    ok &= !tmem_gguf_writer_set_array(w, "a.none", TMEM_GGUF_UINT64, NULL, 0);
    for (int k = 0; k < N_TENSORS; k++)
        ok &= !tmem_gguf_writer_add_tensor(w, tensors[k].name, tensors[k].type, tensors[k].n_dims, tensors[k].dims,
                                           k == 2 ? given : NULL);
    if (!ok) {
        tmem_gguf_writer_destroy(w);
        return NULL;
    }
    return w;
}

static void check_model(const tmem_gguf *g, uint32_t alignment, const uint8_t *given) {
    tmem_gguf_info info;
    REQUIRE_OK(tmem_gguf_get_info(g, &info));
    CHECK(info.version == 3);
    CHECK(info.tensor_count == N_TENSORS);
    CHECK(info.kv_count == 22 + (alignment ? 1 : 0));
    CHECK(info.alignment == (alignment ? alignment : 32));
    CHECK(info.data_offset % info.alignment == 0);
    CHECK(info.mapped_bytes == 0);
    uint64_t x;
    int64_t y;
    double d;
    bool b;
    tmem_gguf_str s;
    CHECK_OK(tmem_gguf_get_u64(g, "t.u8", &x)); CHECK(x == 200);
    CHECK_OK(tmem_gguf_get_i64(g, "t.i8", &y)); CHECK(y == -100);
    CHECK_OK(tmem_gguf_get_u64(g, "t.u16", &x)); CHECK(x == 60000);
    CHECK_OK(tmem_gguf_get_i64(g, "t.i16", &y)); CHECK(y == -30000);
    CHECK_OK(tmem_gguf_get_u64(g, "t.u32", &x)); CHECK(x == 4000000000u);
    CHECK_OK(tmem_gguf_get_i64(g, "t.i32", &y)); CHECK(y == -2000000000);
    CHECK_OK(tmem_gguf_get_u64(g, "t.u64", &x)); CHECK(x == 0xFEDCBA9876543210ull);
    CHECK_OK(tmem_gguf_get_i64(g, "t.i64", &y)); CHECK(y == INT64_MIN + 5);
    CHECK_OK(tmem_gguf_get_f64(g, "t.f32", &d)); CHECK(d == 1.5);
    CHECK_OK(tmem_gguf_get_f64(g, "t.f64", &d)); CHECK(d == -2.25e-300);
    CHECK_OK(tmem_gguf_get_f64(g, "t.u16", &d)); CHECK(d == 60000.0);
    CHECK_OK(tmem_gguf_get_bool(g, "t.bool", &b)); CHECK(b);
    CHECK_OK(tmem_gguf_get_str(g, "general.name", &s)); CHECK(str_is(s, "héllo"));
    CHECK_OK(tmem_gguf_get_str(g, "t.empty", &s)); CHECK(s.len == 0);
    /* conversions that must refuse */
    CHECK_ST(tmem_gguf_get_u64(g, "t.i8", &x), TMEM_E_OVERFLOW);
    CHECK_ST(tmem_gguf_get_i64(g, "t.u64", &y), TMEM_E_OVERFLOW);
    CHECK_ST(tmem_gguf_get_u64(g, "general.name", &x), TMEM_E_PARSE);
    CHECK_ST(tmem_gguf_get_bool(g, "t.u8", &b), TMEM_E_PARSE);
    CHECK_ST(tmem_gguf_get_str(g, "t.u8", &s), TMEM_E_PARSE);
    CHECK_ST(tmem_gguf_get_f64(g, "a.u8", &d), TMEM_E_PARSE);
    CHECK_ST(tmem_gguf_get_u64(g, "no.such.key", &x), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_gguf_get_u64(g, "t.u", &x), TMEM_E_NOT_FOUND);     /* prefix of a key */
    CHECK_ST(tmem_gguf_get_u64(g, "t.u8x", &x), TMEM_E_NOT_FOUND);   /* key is a prefix */
    /* arrays: random access and iteration agree */
    uint64_t idx;
    tmem_gguf_value v, e;
    REQUIRE_OK(tmem_gguf_find(g, "a.u32", &idx, &v));
    CHECK(v.type == TMEM_GGUF_ARRAY && v.v.array.type == TMEM_GGUF_UINT32 && v.v.array.count == 4);
    for (uint64_t k = 0; k < 4; k++) {
        CHECK_OK(tmem_gguf_array_get(g, idx, k, &e));
        CHECK(e.type == TMEM_GGUF_UINT32 && e.v.u == 10 * (k + 1));
    }
    CHECK_ST(tmem_gguf_array_get(g, idx, 4, &e), TMEM_E_NOT_FOUND);
    REQUIRE_OK(tmem_gguf_find(g, "tokenizer.ggml.tokens", &idx, &v));
    const char *want[] = {"a", "", "token three"};
    tmem_gguf_array_iter it = {0};
    uint64_t k = 0;
    while (tmem_gguf_array_next(g, idx, &it, &e) == TMEM_OK) {
        CHECK(k < 3 && e.type == TMEM_GGUF_STRING && str_is(e.v.s, want[k]));
        tmem_gguf_value r;
        CHECK_OK(tmem_gguf_array_get(g, idx, k, &r));
        CHECK(r.offset == e.offset);
        k++;
    }
    CHECK(k == 3);
    /* an iterator from another array, or edited by hand, is refused */
    uint64_t idx32;
    REQUIRE_OK(tmem_gguf_find(g, "a.u32", &idx32, NULL));
    CHECK_ST(tmem_gguf_array_next(g, idx32, &it, &e), TMEM_E_INVALID_ARG);
    it = (tmem_gguf_array_iter){0};
    CHECK_OK(tmem_gguf_array_next(g, idx32, &it, &e));
    it.offset += 1;
    CHECK_ST(tmem_gguf_array_next(g, idx32, &it, &e), TMEM_E_INVALID_ARG);
    REQUIRE_OK(tmem_gguf_find(g, "a.bool", &idx, &v));
    CHECK_OK(tmem_gguf_array_get(g, idx, 1, &e)); CHECK(e.type == TMEM_GGUF_BOOL && !e.v.b);
    REQUIRE_OK(tmem_gguf_find(g, "a.i16", &idx, &v));
    CHECK_OK(tmem_gguf_array_get(g, idx, 0, &e)); CHECK(e.v.i == -1);
    REQUIRE_OK(tmem_gguf_find(g, "a.f32", &idx, &v));
    CHECK_OK(tmem_gguf_array_get(g, idx, 1, &e)); CHECK(e.v.f == -0.25);
    REQUIRE_OK(tmem_gguf_find(g, "a.none", &idx, &v));
    CHECK(v.v.array.count == 0);
    it = (tmem_gguf_array_iter){0};
    CHECK_ST(tmem_gguf_array_next(g, idx, &it, &e), TMEM_E_NOT_FOUND);
    REQUIRE_OK(tmem_gguf_find(g, "t.u8", &idx, NULL));
    CHECK_ST(tmem_gguf_array_get(g, idx, 0, &e), TMEM_E_INVALID_ARG);
    /* file order of the pairs is kept */
    tmem_gguf_str key;
    CHECK_OK(tmem_gguf_kv_at(g, alignment ? 1 : 0, &key, &v));
    CHECK(str_is(key, "t.u8") && v.v.u == 200);
    CHECK_ST(tmem_gguf_kv_at(g, info.kv_count, &key, &v), TMEM_E_NOT_FOUND);
    /* tensors: shapes, sizes, alignment and every byte */
    uint64_t sum = 0;
    for (int t = 0; t < N_TENSORS; t++) {
        tmem_gguf_tensor a, bt;
        REQUIRE_OK(tmem_gguf_tensor_at(g, (uint64_t)t, &a));
        REQUIRE_OK(tmem_gguf_tensor_find(g, tensors[t].name, &bt));
        CHECK(a.data == bt.data && str_is(a.name, tensors[t].name));
        CHECK(a.type == tensors[t].type && a.n_dims == tensors[t].n_dims);
        uint64_t n = 1;
        for (uint32_t dd = 0; dd < 4; dd++) {
            uint64_t wd = dd < tensors[t].n_dims ? tensors[t].dims[dd] : 1;
            CHECK(a.dims[dd] == wd);
            n *= wd;
        }
        CHECK(a.n_elements == n);
        uint64_t size;
        CHECK_OK(tmem_ggml_row_size(a.type, n, &size));
        CHECK(a.size == size);
        CHECK(a.offset % info.alignment == 0);
        const uint8_t *p = a.data;
        bool same = true;
        for (uint64_t j = 0; j < a.size; j++) {
            uint8_t wb = t == 2 && given ? given[j] : (uint8_t)(t * 131u + j * 7u + 1u);
            same &= p[j] == wb;
        }
        CHECK_MSG(same, "tensor %d bytes differ", t);
        sum += a.size;
    }
    CHECK(info.tensor_bytes == sum);
    tmem_gguf_tensor none;
    CHECK_ST(tmem_gguf_tensor_find(g, "blk.0", &none), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_gguf_tensor_at(g, N_TENSORS, &none), TMEM_E_NOT_FOUND);
}

static void test_round_trip(void) {
    static const uint32_t aligns[] = {0, 32, 64, 4096, 1};
    uint8_t given[36 * 2];
    for (size_t k = 0; k < sizeof given; k++) given[k] = (uint8_t)(k * 37 + 11);
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
        tmem_gguf_writer *w = make_model(aligns[a], a % 2 ? given : NULL);
        REQUIRE(w);
        size_t n = 0;
        uint8_t *buf = serialise(w, &n);
        tmem_gguf_writer_destroy(w);
        REQUIRE(buf);
        tmem_gguf *g;
        tmem_gguf_error e;
        tmem_status st = tmem_gguf_open_memory(NULL, buf, n, &g, &e);
        CHECK_MSG(st == TMEM_OK, "align %u: %s: %s at %llu", aligns[a], tmem_status_name(st), e.message,
                  (unsigned long long)e.offset);
        if (st == TMEM_OK) {
            check_model(g, aligns[a], a % 2 ? given : NULL);
            tmem_gguf_close(g);
        }
        free(buf);
    }
}

static void test_writer_refusals(void) {
    tmem_gguf_writer *w;
    CHECK_ST(tmem_gguf_writer_create(NULL, 3, &w), TMEM_E_ALIGNMENT);
    CHECK_ST(tmem_gguf_writer_create(NULL, 0, NULL), TMEM_E_INVALID_ARG);
    REQUIRE_OK(tmem_gguf_writer_create(NULL, 0, &w));
    tmem_gguf_value v = u(TMEM_GGUF_UINT32, 7);
    CHECK_OK(tmem_gguf_writer_set(w, "k", &v));
    CHECK_ST(tmem_gguf_writer_set(w, "k", &v), TMEM_E_EXISTS);
    CHECK_ST(tmem_gguf_writer_set(w, "", &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_writer_set(w, "general.alignment", &v), TMEM_E_ALIGNMENT);
    v.type = TMEM_GGUF_ARRAY;
    CHECK_ST(tmem_gguf_writer_set(w, "arr", &v), TMEM_E_INVALID_ARG);
    v.type = (tmem_gguf_vtype)13;
    CHECK_ST(tmem_gguf_writer_set(w, "bad", &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_writer_set_array(w, "x", TMEM_GGUF_ARRAY, "", 0), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_writer_set_array(w, "x", TMEM_GGUF_UINT8, NULL, 2), TMEM_E_INVALID_ARG);
    const char *strs[] = {"a", NULL};
    CHECK_ST(tmem_gguf_writer_set_array(w, "x", TMEM_GGUF_STRING, strs, 2), TMEM_E_INVALID_ARG);
    uint64_t dims[4] = {32, 2, 0, 1};
    CHECK_OK(tmem_gguf_writer_add_tensor(w, "t", TMEM_GGML_Q8_0, 2, dims, NULL));
    CHECK_ST(tmem_gguf_writer_add_tensor(w, "t", TMEM_GGML_Q8_0, 2, dims, NULL), TMEM_E_EXISTS);
    CHECK_ST(tmem_gguf_writer_add_tensor(w, "u", TMEM_GGML_Q8_0, 3, dims, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_writer_add_tensor(w, "u", TMEM_GGML_Q8_0, 0, dims, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_writer_add_tensor(w, "u", TMEM_GGML_Q8_0, 5, dims, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_writer_add_tensor(w, "u", 4, 2, dims, NULL), TMEM_E_UNSUPPORTED);
    uint64_t odd[2] = {33, 1};
    CHECK_ST(tmem_gguf_writer_add_tensor(w, "u", TMEM_GGML_Q8_0, 2, odd, NULL), TMEM_E_INVALID_ARG);
    char longname[80];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK_ST(tmem_gguf_writer_add_tensor(w, longname, TMEM_GGML_F32, 1, dims, NULL), TMEM_E_INVALID_ARG);
    longname[64] = 0; /* exactly 64 bytes is allowed */
    CHECK_OK(tmem_gguf_writer_add_tensor(w, longname, TMEM_GGML_F32, 1, dims, NULL));
    uint64_t huge[2] = {UINT64_MAX / 2, 4};
    CHECK_ST(tmem_gguf_writer_add_tensor(w, "h", TMEM_GGML_F32, 2, huge, NULL), TMEM_E_OVERFLOW);
    size_t need;
    uint8_t small[16];
    CHECK_ST(tmem_gguf_writer_write(w, small, sizeof small, &need), TMEM_E_FULL);
    CHECK(need > sizeof small);
    uint8_t *buf = malloc(need);
    REQUIRE(buf);
    size_t got;
    CHECK_OK(tmem_gguf_writer_write(w, buf, need, &got));
    CHECK(got == need);
    tmem_gguf *g;
    CHECK_OK(tmem_gguf_open_memory(NULL, buf, got, &g, NULL));
    tmem_gguf_close(g);
    free(buf);
    tmem_gguf_writer_destroy(w);
    tmem_gguf_writer_destroy(NULL);
}

static void test_reader_args(void) {
    tmem_gguf *g = (tmem_gguf *)1;
    CHECK_ST(tmem_gguf_open_memory(NULL, NULL, 10, &g, NULL), TMEM_E_INVALID_ARG);
    CHECK(g == NULL);
    CHECK_ST(tmem_gguf_open_memory(NULL, "GGUF", 4, NULL, NULL), TMEM_E_INVALID_ARG);
    tmem_gguf_error e;
    CHECK_ST(tmem_gguf_open_memory(NULL, NULL, 0, &g, &e), TMEM_E_PARSE);
    CHECK(e.message[0] != 0);
    tmem_gguf_info info;
    CHECK_ST(tmem_gguf_get_info(NULL, &info), TMEM_E_INVALID_ARG);
    tmem_gguf_close(NULL);
}

/* With TMEM_GGUF_CORPUS_DIR set, write the fuzz seed corpus (fuzz/gguf/corpus):
 * valid files of every metadata type, a qwen35 model's metadata, and a few
 * broken ones. Regenerate with
 *   TMEM_GGUF_CORPUS_DIR=fuzz/gguf/corpus ./build/unit_test_gguf */
static void put_file(const char *dir, const char *name, const uint8_t *b, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot write %.200s", name);
    if (!f) return;
    CHECK(fwrite(b, 1, n, f) == n);
    fclose(f);
}

static void write_corpus(void) {
    const char *dir = getenv("TMEM_GGUF_CORPUS_DIR");
    if (!dir) return;
    static const uint32_t aligns[] = {0, 64};
    for (size_t a = 0; a < 2; a++) {
        tmem_gguf_writer *w = make_model(aligns[a], NULL);
        REQUIRE(w);
        size_t n;
        uint8_t *b = serialise(w, &n);
        tmem_gguf_writer_destroy(w);
        REQUIRE(b);
        char name[64];
        snprintf(name, sizeof name, "all_types_align%u.gguf", aligns[a]);
        put_file(dir, name, b, n);
        if (a == 0) {
            put_file(dir, "truncated_half.gguf", b, n / 2);
            b[0] = 'X';
            put_file(dir, "bad_magic.gguf", b, n);
            b[0] = 'G';
            b[4] = 1;
            put_file(dir, "version1.gguf", b, n);
        }
        free(b);
    }
    /* a small hybrid model's metadata and tensors, as llama.cpp names them */
    tmem_gguf_writer *w;
    REQUIRE_OK(tmem_gguf_writer_create(NULL, 0, &w));
    tmem_gguf_value v = {.type = TMEM_GGUF_STRING};
    v.v.s.data = "qwen35";
    v.v.s.len = 6;
    CHECK_OK(tmem_gguf_writer_set(w, "general.architecture", &v));
    static const struct { const char *k; uint32_t v; } keys[] = {
        {"qwen35.block_count", 4}, {"qwen35.embedding_length", 64}, {"qwen35.feed_forward_length", 128},
        {"qwen35.context_length", 4096}, {"qwen35.attention.head_count", 4}, {"qwen35.attention.head_count_kv", 2},
        {"qwen35.attention.key_length", 32}, {"qwen35.attention.value_length", 32},
        {"qwen35.full_attention_interval", 4}, {"qwen35.ssm.conv_kernel", 4}, {"qwen35.ssm.state_size", 32},
        {"qwen35.ssm.group_count", 2}, {"qwen35.ssm.time_step_rank", 4}, {"qwen35.ssm.inner_size", 128},
        {"qwen35.vocab_size", 256}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        v = (tmem_gguf_value){.type = TMEM_GGUF_UINT32};
        v.v.u = keys[i].v;
        CHECK_OK(tmem_gguf_writer_set(w, keys[i].k, &v));
    }
    uint64_t d[2] = {64, 256};
    CHECK_OK(tmem_gguf_writer_add_tensor(w, "token_embd.weight", TMEM_GGML_Q8_0, 2, d, NULL));
    uint64_t d2[2] = {256, 4};
    CHECK_OK(tmem_gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", TMEM_GGML_Q4_K, 2, d2, NULL));
    size_t n;
    uint8_t *b = serialise(w, &n);
    tmem_gguf_writer_destroy(w);
    REQUIRE(b);
    put_file(dir, "qwen35_tiny.gguf", b, n);
    free(b);
    /* a small mmproj (vision encoder) with llama.cpp's clip.vision.* keys */
    REQUIRE_OK(tmem_gguf_writer_create(NULL, 0, &w));
    static const struct { const char *k; uint32_t v; } vkeys[] = {
        {"clip.vision.block_count", 2}, {"clip.vision.embedding_length", 64},
        {"clip.vision.feed_forward_length", 128}, {"clip.vision.attention.head_count", 4},
        {"clip.vision.patch_size", 16}, {"clip.vision.spatial_merge_size", 2}, {"clip.vision.projection_dim", 64}};
    for (size_t i = 0; i < sizeof vkeys / sizeof vkeys[0]; i++) {
        v = (tmem_gguf_value){.type = TMEM_GGUF_UINT32};
        v.v.u = vkeys[i].v;
        CHECK_OK(tmem_gguf_writer_set(w, vkeys[i].k, &v));
    }
    v = (tmem_gguf_value){.type = TMEM_GGUF_STRING};
    v.v.s.data = "qwen3vl_merger";
    v.v.s.len = 14;
    CHECK_OK(tmem_gguf_writer_set(w, "clip.vision.projector_type", &v));
    uint64_t d3[2] = {64, 16};
    CHECK_OK(tmem_gguf_writer_add_tensor(w, "v.position_embd.weight", TMEM_GGML_F16, 2, d3, NULL));
    b = serialise(w, &n);
    tmem_gguf_writer_destroy(w);
    REQUIRE(b);
    put_file(dir, "mmproj_tiny.gguf", b, n);
    free(b);
}

int main(void) {
    RUN(write_corpus);
    RUN(test_type_table);
    RUN(test_round_trip);
    RUN(test_writer_refusals);
    RUN(test_reader_args);
    return tmem_test_finish();
}

/* Outputs on failure, as each header states them: every getter below fills
 * its out-parameters with a poison pattern first, calls with bad input
 * (NULL handle, index out of range, wrong JSON kind, bad layout), and
 * checks the outputs were reset to the documented value, not left as
 * garbage a caller might use. */
#include "harness.h"
#include "typedmem/typedmem.h"
#include "typedmem/json.h"
#include "typedmem/kv.h"
#include "typedmem/model.h"
#include "typedmem/plan.h"
#include "typedmem/safetensors.h"
#include "typedmem/trace.h"

#include <string.h>

#define POISON(x) memset(&(x), 0xA5, sizeof(x))

static bool all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return false;
    return true;
}

static void test_json(void) {
    tmem_json *j = NULL;
    const char *text = "{\"n\":1.5,\"s\":\"hi\",\"b\":true,\"a\":[]}";
    REQUIRE_OK(tmem_json_parse(NULL, text, strlen(text), &j, NULL));
    tmem_json_ref s, n, a;
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "s", &s));
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "n", &n));
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "a", &a));
    double d;
    int64_t i;
    bool b;
    size_t len;
    POISON(d);
    CHECK_ST(tmem_json_number(j, s, &d), TMEM_E_PARSE);
    CHECK(d == 0);
    POISON(i);
    CHECK_ST(tmem_json_int(j, n, &i), TMEM_E_PARSE); /* 1.5 has a fraction */
    CHECK(i == 0);
    POISON(b);
    CHECK_ST(tmem_json_bool(j, s, &b), TMEM_E_PARSE);
    CHECK(b == false);
    POISON(len);
    CHECK_ST(tmem_json_string(j, n, NULL, 0, &len), TMEM_E_PARSE);
    CHECK(len == 0);
    /* refs: every value is a valid ref, so a failed lookup leaves it alone */
    tmem_json_ref r = 12345;
    CHECK_ST(tmem_json_first(j, a, &r), TMEM_E_NOT_FOUND);
    CHECK(r == 12345);
    CHECK_ST(tmem_json_at(j, a, 0, &r), TMEM_E_NOT_FOUND);
    CHECK(r == 12345);
    tmem_json_free(j);
}

static void test_model(void) {
    tmem_gguf_str key;
    tmem_gguf_value v;
    tmem_gguf_tensor t;
    uint64_t u, idx;
    POISON(key);
    POISON(v);
    CHECK_ST(tmem_gguf_kv_at(NULL, 0, &key, &v), TMEM_E_INVALID_ARG);
    CHECK(all_zero(&key, sizeof key) && all_zero(&v, sizeof v));
    POISON(idx);
    POISON(v);
    CHECK_ST(tmem_gguf_find(NULL, "k", &idx, &v), TMEM_E_INVALID_ARG);
    CHECK(idx == 0 && all_zero(&v, sizeof v));
    POISON(u);
    CHECK_ST(tmem_gguf_get_u64(NULL, "k", &u), TMEM_E_INVALID_ARG);
    CHECK(u == 0);
    int64_t i64;
    double f64;
    bool bl;
    tmem_gguf_str str;
    POISON(i64);
    POISON(f64);
    POISON(bl);
    POISON(str);
    CHECK_ST(tmem_gguf_get_i64(NULL, "k", &i64), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_get_f64(NULL, "k", &f64), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_get_bool(NULL, "k", &bl), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_gguf_get_str(NULL, "k", &str), TMEM_E_INVALID_ARG);
    CHECK(i64 == 0 && f64 == 0 && bl == false && str.data == NULL && str.len == 0);
    POISON(v);
    CHECK_ST(tmem_gguf_array_get(NULL, 0, 0, &v), TMEM_E_INVALID_ARG);
    CHECK(all_zero(&v, sizeof v));
    POISON(t);
    CHECK_ST(tmem_gguf_tensor_at(NULL, 0, &t), TMEM_E_INVALID_ARG);
    CHECK(all_zero(&t, sizeof t));
    POISON(t);
    CHECK_ST(tmem_gguf_tensor_find(NULL, "w", &t), TMEM_E_INVALID_ARG);
    CHECK(all_zero(&t, sizeof t));
    size_t si;
    POISON(si);
    POISON(u);
    CHECK_ST(tmem_gguf_stream_next(NULL, &si, &u), TMEM_E_INVALID_ARG);
    CHECK(si == 0 && u == 0);
    tmem_weight_dtype wd;
    POISON(wd);
    CHECK_ST(tmem_weight_dtype_from_name("no-such-dtype", &wd), TMEM_E_NOT_FOUND);
    CHECK(wd == TMEM_WEIGHT_DEFAULT);
    tmem_kv_dtype kd;
    POISON(kd);
    CHECK_ST(tmem_kv_dtype_from_name("no-such-dtype", &kd), TMEM_E_NOT_FOUND);
    CHECK(kd == TMEM_KV_DTYPE_DEFAULT);
}

static void test_safetensors_trace_kv(void) {
    tmem_safetensors_tensor st;
    POISON(st);
    CHECK_ST(tmem_safetensors_tensor_at(NULL, 0, &st), TMEM_E_INVALID_ARG);
    CHECK(all_zero(&st, sizeof st));
    POISON(st);
    CHECK_ST(tmem_safetensors_find(NULL, "w", &st), TMEM_E_INVALID_ARG);
    CHECK(all_zero(&st, sizeof st));
    const char *k = "x", *v = "y";
    CHECK_ST(tmem_safetensors_metadata_at(NULL, 0, &k, &v), TMEM_E_INVALID_ARG);
    CHECK(k == NULL && v == NULL);
    tmem_trace_event ev;
    POISON(ev);
    CHECK_ST(tmem_trace_data_event(NULL, 0, &ev), TMEM_E_INVALID_ARG);
    CHECK(all_zero(&ev, sizeof ev));
    tmem_recurrent_layout bad = {0}; /* zero layers */
    uint64_t bytes;
    POISON(bytes);
    CHECK_ST(tmem_recurrent_layout_bytes(&bad, &bytes), TMEM_E_INVALID_ARG);
    CHECK(bytes == 0);
}

static void test_plan(void) {
    tmem_plan_problem *p = NULL;
    REQUIRE_OK(tmem_plan_problem_create(&p));
    tmem_plan_buffer pb;
    POISON(pb);
    CHECK_ST(tmem_plan_problem_get(p, 0, &pb), TMEM_E_NOT_FOUND); /* empty */
    CHECK(pb.offset == TMEM_OFFSET_NONE && pb.size == 0 && pb.id == NULL);
    tmem_plan_info info;
    POISON(info);
    CHECK_ST(tmem_plan_get_info(NULL, &info), TMEM_E_INVALID_ARG);
    CHECK(all_zero(&info, sizeof info));
    POISON(pb);
    CHECK_ST(tmem_plan_get_buffer(NULL, 0, &pb), TMEM_E_INVALID_ARG);
    CHECK(pb.offset == TMEM_OFFSET_NONE && pb.size == 0 && pb.id == NULL);
    size_t len;
    POISON(len);
    CHECK_ST(tmem_plan_svg(NULL, NULL, NULL, 0, &len), TMEM_E_INVALID_ARG);
    CHECK(len == 0);
    tmem_plan_problem_destroy(p);
}

int main(void) {
    RUN(test_json);
    RUN(test_model);
    RUN(test_safetensors_trace_kv);
    RUN(test_plan);
    return tmem_test_finish();
}

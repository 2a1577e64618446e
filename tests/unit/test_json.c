/* The strict JSON reader: values, lookups, decoding, and every class of
 * malformed text refused with a position (RFC 8259 strictness). */
#include "harness.h"
#include "typedmem/json.h"
#include <stdlib.h>
#include <string.h>

static tmem_json *parse_ok(const char *s) {
    tmem_json *j = NULL;
    tmem_json_error e;
    tmem_status st = tmem_json_parse(NULL, s, strlen(s), &j, &e);
    CHECK_MSG(st == TMEM_OK, "'%s': %s at %llu", s, e.message, (unsigned long long)e.offset);
    return j;
}

static void test_values(void) {
    const char *t = " {\"a\": 1, \"b\": [true, false, null, -0.5e2, \"x\\u00e9\\ud83d\\ude00\"],"
                    " \"c\": {\"d\": \"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}, \"big\": 9223372036854775807,"
                    " \"neg\": -9223372036854775808, \"frac\": 1.0} ";
    tmem_json *j = parse_ok(t);
    REQUIRE(j);
    CHECK(tmem_json_type_of(j, TMEM_JSON_ROOT) == TMEM_JSON_OBJECT);
    CHECK(tmem_json_count(j, TMEM_JSON_ROOT) == 6);
    tmem_json_ref v, e;
    int64_t i;
    double d;
    bool b;
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "a", &v));
    CHECK_OK(tmem_json_int(j, v, &i));
    CHECK(i == 1);
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "b", &v));
    CHECK(tmem_json_count(j, v) == 5);
    REQUIRE_OK(tmem_json_at(j, v, 0, &e));
    CHECK_OK(tmem_json_bool(j, e, &b));
    CHECK(b);
    REQUIRE_OK(tmem_json_at(j, v, 2, &e));
    CHECK(tmem_json_type_of(j, e) == TMEM_JSON_NULL);
    REQUIRE_OK(tmem_json_at(j, v, 3, &e));
    CHECK_OK(tmem_json_number(j, e, &d));
    CHECK(d == -50.0);
    CHECK_ST(tmem_json_int(j, e, &i), TMEM_E_PARSE); /* written with a fraction */
    REQUIRE_OK(tmem_json_at(j, v, 4, &e));
    char buf[32];
    size_t n;
    CHECK_OK(tmem_json_string(j, e, buf, sizeof buf, &n));
    CHECK(n == 7 && !strcmp(buf, "x\xc3\xa9\xf0\x9f\x98\x80"));
    CHECK_ST(tmem_json_string(j, e, buf, 7, &n), TMEM_E_FULL); /* no room for the NUL */
    CHECK(n == 7);
    CHECK_ST(tmem_json_at(j, v, 5, &e), TMEM_E_NOT_FOUND);
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "c", &v));
    REQUIRE_OK(tmem_json_get(j, v, "d", &e));
    CHECK(tmem_json_string_eq(j, e, "\"\\/\b\f\n\r\t"));
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "big", &v));
    CHECK_OK(tmem_json_int(j, v, &i));
    CHECK(i == INT64_MAX);
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "neg", &v));
    CHECK_OK(tmem_json_int(j, v, &i));
    CHECK(i == INT64_MIN);
    CHECK_ST(tmem_json_get(j, TMEM_JSON_ROOT, "zz", &v), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_json_get(j, v, "a", &v), TMEM_E_INVALID_ARG); /* a number is no object */
    /* walk in text order */
    tmem_json_ref k;
    const char *order[] = {"a", "b", "c", "big", "neg", "frac"};
    int idx = 0;
    for (tmem_status r = tmem_json_first(j, TMEM_JSON_ROOT, &k); r == TMEM_OK; r = tmem_json_next(j, k, &k))
        CHECK(idx < 6 && tmem_json_string_eq(j, k, order[idx++]));
    CHECK(idx == 6);
    tmem_json_free(j);

    j = parse_ok("{\"x\": 9223372036854775808, \"y\": 1e400}");
    REQUIRE(j);
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "x", &v));
    CHECK_ST(tmem_json_int(j, v, &i), TMEM_E_OVERFLOW);
    REQUIRE_OK(tmem_json_get(j, TMEM_JSON_ROOT, "y", &v));
    CHECK_ST(tmem_json_number(j, v, &d), TMEM_E_OVERFLOW);
    tmem_json_free(j);
}

/* Keys are compared decoded: an escaped spelling is the same key. */
static void test_keys_decoded(void) {
    tmem_json *j = parse_ok("{\"\\u0041b\": 1, \"c\\/d\": 2}");
    REQUIRE(j);
    tmem_json_ref v;
    CHECK_OK(tmem_json_get(j, TMEM_JSON_ROOT, "Ab", &v));
    CHECK_OK(tmem_json_get(j, TMEM_JSON_ROOT, "c/d", &v));
    tmem_json_free(j);
    tmem_json_error e;
    const char *dup = "{\"Ab\": 1, \"\\u0041b\": 2}";
    CHECK_ST(tmem_json_parse(NULL, dup, strlen(dup), &j, &e), TMEM_E_CORRUPT);
    CHECK(strstr(e.message, "duplicate") != NULL);
}

/* A big object (a tokenizer vocabulary): lookups by key, duplicates found. */
static void test_large_object(void) {
    size_t cap = 20u << 20, len = 0;
    char *s = malloc(cap);
    REQUIRE(s);
    s[len++] = '{';
    for (int i = 0; i < 200000; i++) len += (size_t)snprintf(s + len, cap - len, "%s\"k%d\":%d", i ? "," : "", i, i);
    s[len++] = '}';
    tmem_json *j;
    tmem_json_error e;
    REQUIRE_OK(tmem_json_parse(NULL, s, len, &j, &e));
    tmem_json_ref v;
    int64_t x;
    CHECK_OK(tmem_json_get(j, TMEM_JSON_ROOT, "k123456", &v));
    CHECK(tmem_json_int(j, v, &x) == TMEM_OK && x == 123456);
    tmem_json_free(j);
    memcpy(s + len - 1, ",\"k77\":1}", 10);
    len += 8;
    CHECK_ST(tmem_json_parse(NULL, s, len, &j, &e), TMEM_E_CORRUPT);
    free(s);
}

static void test_malformed(void) {
    static const char *const bad[] = {
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{'a':1}", "[01]", "[1.]", "[.5]",
        "[1e]", "[+1]", "[-]", "[NaN]", "[Infinity]", "[0x10]", "tru", "nul", "[true false]", "1 2",
        "\"abc", "\"a\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\tb\"",
        "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "\xef\xbb\xbf{}",
        "/*c*/{}", "{} //", "[1]x", "{\"a\":1}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tmem_json *j = (tmem_json *)1;
        tmem_json_error e;
        size_t n = strlen(bad[i]);
        char *copy = malloc(n ? n : 1); /* exact size: ASan sees a read past the end */
        memcpy(copy, bad[i], n);
        tmem_status st = tmem_json_parse(NULL, copy, n, &j, &e);
        CHECK_MSG(st == TMEM_E_PARSE && j == NULL && e.message[0] && e.offset <= n, "case %zu '%s': %s", i, bad[i],
                  tmem_status_name(st));
        free(copy);
    }
    /* nesting: 64 levels fine, 65 refused */
    char deep[200];
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    tmem_json *j;
    tmem_json_error e;
    CHECK_OK(tmem_json_parse(NULL, deep, 128, &j, &e));
    tmem_json_free(j);
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    CHECK_ST(tmem_json_parse(NULL, deep, 130, &j, &e), TMEM_E_PARSE);
    /* line and column */
    const char *t = "{\n  \"a\": [1,\n   2,]\n}";
    CHECK_ST(tmem_json_parse(NULL, t, strlen(t), &j, &e), TMEM_E_PARSE);
    CHECK_MSG(e.line == 3 && e.column == 6, "line %u col %u", e.line, e.column);
    CHECK_ST(tmem_json_parse(NULL, NULL, 1, &j, &e), TMEM_E_INVALID_ARG);
}

/* Big objects take the prefix-cached sort: keys sharing their first 8 bytes,
 * keys that are prefixes of others, escaped spellings and NUL bytes must
 * still sort and compare by their decoded bytes. */
static void test_large_object_prefixes(void) {
    size_t cap = 4u << 20, len = 0;
    char *s = malloc(cap);
    REQUIRE(s);
    s[len++] = '{';
    for (int i = 0; i < 3000; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s\"commonprefix_%d\":%d,\"c\\u006fmmon%d\":%d", i ? "," : "", i,
                                i, i, -i);
    len += (size_t)snprintf(s + len, cap - len, ",\"a\":1,\"a\\u0000\":2,\"ab\":3,\"\\u00e9t\u00e9\":4}");
    tmem_json *j;
    tmem_json_error e;
    REQUIRE_OK(tmem_json_parse(NULL, s, len, &j, &e));
    tmem_json_ref v;
    int64_t x;
    CHECK(tmem_json_get(j, TMEM_JSON_ROOT, "commonprefix_2999", &v) == TMEM_OK && !tmem_json_int(j, v, &x) && x == 2999);
    CHECK(tmem_json_get(j, TMEM_JSON_ROOT, "common17", &v) == TMEM_OK && !tmem_json_int(j, v, &x) && x == -17);
    CHECK(tmem_json_get(j, TMEM_JSON_ROOT, "a", &v) == TMEM_OK && !tmem_json_int(j, v, &x) && x == 1);
    CHECK(tmem_json_get(j, TMEM_JSON_ROOT, "ab", &v) == TMEM_OK && !tmem_json_int(j, v, &x) && x == 3);
    CHECK(tmem_json_get(j, TMEM_JSON_ROOT, "\xc3\xa9t\xc3\xa9", &v) == TMEM_OK && !tmem_json_int(j, v, &x) && x == 4);
    CHECK_ST(tmem_json_get(j, TMEM_JSON_ROOT, "commonprefix_3000", &v), TMEM_E_NOT_FOUND);
    tmem_json_free(j);
    /* an escaped duplicate of a key among thousands */
    memcpy(s + len - 1, ",\"commonpref\\u0069x_1234\":0}", 29); /* replaces the '}' */
    len += 27;
    CHECK_ST(tmem_json_parse(NULL, s, len, &j, &e), TMEM_E_CORRUPT);
    CHECK(strstr(e.message, "duplicate") != NULL);
    free(s);
}

/* Seeded random mutations of a valid document never crash; each result is
 * either a document or a clean error. */
static void test_mutations(void) {
    const char *base = "{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24],\"m\":{\"k\":\"v\\u00e9\"}}";
    size_t n = strlen(base);
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(77));
    for (int it = 0; it < 20000; it++) {
        char *s = malloc(n);
        memcpy(s, base, n);
        int edits = 1 + (int)tmem_rng_range(&r, 0, 3);
        for (int k = 0; k < edits; k++) s[tmem_rng_range(&r, 0, n - 1)] = (char)tmem_rng_range(&r, 0, 255);
        size_t len = (size_t)tmem_rng_range(&r, 0, n);
        tmem_json *j;
        tmem_json_error e;
        tmem_status st = tmem_json_parse(NULL, s, len, &j, &e);
        CHECK(st == TMEM_OK || st == TMEM_E_PARSE || st == TMEM_E_CORRUPT);
        if (st == TMEM_OK) tmem_json_free(j);
        free(s);
    }
}

int main(void) {
    RUN(test_values);
    RUN(test_keys_decoded);
    RUN(test_large_object);
    RUN(test_large_object_prefixes);
    RUN(test_malformed);
    RUN(test_mutations);
    return tmem_test_finish();
}

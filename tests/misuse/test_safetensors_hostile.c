/* Hostile and broken safetensors files: every prefix of a valid file, bad
 * header lengths, malformed JSON, every field wrong in every way, offsets
 * outside the data, overlaps, gaps, trailing bytes, size/shape mismatches,
 * overflowing shapes, unknown dtypes, and seeded random corruption. Each
 * must give a clean error with a message and a byte offset inside the file,
 * never a crash; images are malloc'd to their exact size so AddressSanitizer
 * catches a read one byte past the end. */
#include "harness.h"
#include "st_write.h"
#include "typedmem/safetensors.h"
#include <stdlib.h>
#include <string.h>

static tmem_status open_img(const uint8_t *img, size_t n, tmem_safetensors_error *e) {
    uint8_t *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, img, n);
    tmem_safetensors *st = (tmem_safetensors *)1;
    memset(e, 0, sizeof *e);
    tmem_status s = tmem_safetensors_open_memory(NULL, copy, n, &st, e);
    if (s == TMEM_OK) tmem_safetensors_close(st);
    else CHECK_MSG(st == NULL && e->message[0] && e->offset <= n, "%s at %llu of %zu", e->message,
                   (unsigned long long)e->offset, n);
    free(copy);
    return s;
}

/* An image whose header is `json` over `data_len` zero bytes. */
static tmem_status open_json(const char *json, size_t data_len, tmem_safetensors_error *e) {
    st_build b;
    st_init(&b);
    uint8_t *zeros = calloc(1, data_len + 1);
    st_add_bytes(&b, zeros, data_len);
    free(zeros);
    uint8_t *img;
    size_t n;
    st_image(&b, json, &img, &n);
    tmem_status s = open_img(img, n, e);
    free(img);
    st_free(&b);
    return s;
}

#define EXPECT(json, len, want, frag)                                                                    \
    do {                                                                                                 \
        tmem_safetensors_error e_;                                                                       \
        tmem_status s_ = open_json(json, len, &e_);                                                      \
        CHECK_MSG(s_ == (want) && strstr(e_.message, frag), "%.60s: got %s '%.120s'", json,             \
                  tmem_status_name(s_), e_.message);                                                     \
    } while (0)

static void test_prefixes(void) {
    st_build b;
    st_init(&b);
    float w[8] = {0};
    st_meta(&b, "format", "pt");
    st_add_f32(&b, "x", 2, (uint64_t[]){2, 2}, w);
    st_add_f32(&b, "y", 1, (uint64_t[]){4}, w + 4);
    uint8_t *img;
    size_t n;
    st_finish(&b, &img, &n);
    tmem_safetensors_error e;
    CHECK_OK(open_img(img, n, &e));
    for (size_t k = 0; k < n; k++) {
        tmem_status s = open_img(img, k, &e);
        CHECK_MSG(s == TMEM_E_PARSE || s == TMEM_E_CORRUPT, "prefix %zu: %s", k, tmem_status_name(s));
    }
    /* one byte too many is trailing data */
    uint8_t *more = malloc(n + 1);
    memcpy(more, img, n);
    more[n] = 0;
    CHECK_ST(open_img(more, n + 1, &e), TMEM_E_CORRUPT);
    CHECK(strstr(e.message, "after the last tensor") != NULL);
    free(more);
    free(img);
    st_free(&b);
}

static void test_header_length(void) {
    uint8_t img[16] = {0};
    tmem_safetensors_error e;
    CHECK_ST(open_img(img, 7, &e), TMEM_E_PARSE);
    uint64_t big[] = {9, 100000001ull, UINT64_MAX, 1, 0};
    tmem_status want[] = {TMEM_E_CORRUPT, TMEM_E_CORRUPT, TMEM_E_CORRUPT, TMEM_E_PARSE, TMEM_E_PARSE};
    for (int i = 0; i < 5; i++) {
        for (int k = 0; k < 8; k++) img[k] = (uint8_t)(big[i] >> (8 * k));
        memcpy(img + 8, "{}      ", 8);
        CHECK_ST(open_img(img, 16, &e), want[i]);
    }
    EXPECT("[1]     ", 0, TMEM_E_PARSE, "does not start");
    EXPECT(" {}", 0, TMEM_E_PARSE, "does not start");
    EXPECT("{}", 0, TMEM_OK, ""); /* an empty checkpoint is valid */
    EXPECT("{}", 4, TMEM_E_CORRUPT, "after the last tensor");
}

#define T(body) "{\"t\":" body "}"

static void test_fields(void) {
    const char *ok = T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}");
    EXPECT(ok, 8, TMEM_OK, "");
    /* JSON-level problems */
    EXPECT("{\"t\":1,}", 0, TMEM_E_PARSE, "header JSON");
    EXPECT("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"t\":{}}", 4, TMEM_E_CORRUPT, "duplicate");
    EXPECT("{\"t\":[]}", 0, TMEM_E_PARSE, "not an object");
    /* missing / unknown fields */
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2]}"), 8, TMEM_E_CORRUPT, "needs dtype");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}"), 8, TMEM_E_CORRUPT, "unknown field");
    /* dtype */
    EXPECT(T("{\"dtype\":\"F128\",\"shape\":[2],\"data_offsets\":[0,8]}"), 8, TMEM_E_UNSUPPORTED, "unknown dtype");
    EXPECT(T("{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}"), 8, TMEM_E_UNSUPPORTED, "unknown dtype");
    EXPECT(T("{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}"), 8, TMEM_E_PARSE, "dtype is not");
    /* shape */
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}"), 8, TMEM_E_PARSE, "shape is not");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}"), 8, TMEM_E_CORRUPT, "out of range");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}"), 8, TMEM_E_PARSE, "integers");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}"), 8, TMEM_E_PARSE, "integers");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}"), 8, TMEM_E_UNSUPPORTED,
           "dimensions");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}"), 8, TMEM_E_CORRUPT,
           "overflows");
    EXPECT(T("{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}"), 8, TMEM_E_CORRUPT,
           "overflows");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}"), 8, TMEM_E_CORRUPT,
           "out of range");
    /* data_offsets */
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}"), 8, TMEM_E_PARSE, "data_offsets");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}"), 8, TMEM_E_PARSE, "data_offsets");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}"), 8, TMEM_E_CORRUPT, "outside");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}"), 8, TMEM_E_CORRUPT, "outside");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}"), 4, TMEM_E_CORRUPT, "needs 8");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-1,8]}"), 8, TMEM_E_CORRUPT, "out of range");
    EXPECT(T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,18446744073709551615]}"), 8, TMEM_E_CORRUPT,
           "out of range");
    /* tiling */
    EXPECT("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
           "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, TMEM_E_CORRUPT, "overlaps");
    EXPECT("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
           "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, TMEM_E_CORRUPT, "overlaps");
    EXPECT("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
           "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20, TMEM_E_CORRUPT, "gap");
    EXPECT("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, TMEM_E_CORRUPT, "gap");
    EXPECT("{\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
           "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, TMEM_OK, "");
    /* names and metadata */
    EXPECT("{\"\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, TMEM_E_CORRUPT, "empty name");
    EXPECT("{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, TMEM_E_CORRUPT, "NUL");
    EXPECT("{\"__metadata__\":{\"k\":1}}", 0, TMEM_E_PARSE, "not a string");
    EXPECT("{\"__metadata__\":[\"k\"]}", 0, TMEM_E_PARSE, "not an object");
    EXPECT("{\"__metadata__\":{\"k\":\"v\"},\"t\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}", 3,
           TMEM_OK, "");
}

/* A header length that claims more than the file holds, or a header that
 * is huge but legal, must not allocate by the claim. */
static void test_big_claims(void) {
    /* 1 MiB of spaces after {}: legal padding */
    size_t n = 8 + (1u << 20);
    uint8_t *img = malloc(n);
    uint64_t h = 1u << 20;
    for (int k = 0; k < 8; k++) img[k] = (uint8_t)(h >> (8 * k));
    memset(img + 8, ' ', 1u << 20);
    memcpy(img + 8, "{}", 2);
    tmem_safetensors_error e;
    CHECK_OK(open_img(img, n, &e));
    /* deep nesting in metadata */
    memset(img + 8, ' ', 1u << 20);
    memcpy(img + 8, "{\"__metadata__\":", 16);
    memset(img + 24, '[', 1000);
    CHECK_ST(open_img(img, n, &e), TMEM_E_PARSE);
    free(img);
}

static void test_random_corruption(void) {
    st_build b;
    st_init(&b);
    float w[16];
    for (int i = 0; i < 16; i++) w[i] = (float)i;
    st_meta(&b, "format", "pt");
    st_add_f32(&b, "model.layers.0.w", 2, (uint64_t[]){2, 4}, w);
    st_add(&b, "model.b", "BF16", 1, (uint64_t[]){8}, w + 8, 16);
    st_add(&b, "model.c", "I64", 1, (uint64_t[]){2}, (int64_t[]){1, 2}, 16);
    uint8_t *img;
    size_t n;
    st_finish(&b, &img, &n);
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(4242));
    uint8_t *m = malloc(n);
    int ok = 0;
    for (int it = 0; it < 30000; it++) {
        memcpy(m, img, n);
        int edits = 1 + (int)tmem_rng_range(&r, 0, 3);
        for (int k = 0; k < edits; k++) {
            size_t at = (size_t)tmem_rng_range(&r, 0, n - 1);
            /* mostly hit the header, where the structure is */
            if (it % 4) at = (size_t)tmem_rng_range(&r, 0, n < 200 ? n - 1 : 199);
            m[at] = (uint8_t)tmem_rng_range(&r, 0, 255);
        }
        size_t len = it % 7 ? n : (size_t)tmem_rng_range(&r, 0, n);
        tmem_safetensors_error e;
        tmem_status s = open_img(m, len, &e);
        CHECK(s == TMEM_OK || s == TMEM_E_PARSE || s == TMEM_E_CORRUPT || s == TMEM_E_UNSUPPORTED);
        ok += s == TMEM_OK;
    }
    printf("random corruption: %d of 30000 still valid\n", ok);
    free(m);
    free(img);
    st_free(&b);
}

int main(void) {
    RUN(test_prefixes);
    RUN(test_header_length);
    RUN(test_fields);
    RUN(test_big_claims);
    RUN(test_random_corruption);
    return tmem_test_finish();
}

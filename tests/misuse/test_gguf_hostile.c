/* Hostile and broken GGUF files: every prefix of a valid file, bad magic and
 * versions, huge counts and lengths, bad types, tensor data outside the file,
 * misaligned and overlapping tensors, duplicates, deep nesting, and seeded
 * random corruption. Each must give a clean error naming a byte offset inside
 * the file, never a crash; every buffer is malloc'd to its exact size so
 * AddressSanitizer catches a read one byte past it. */
#include "harness.h"
#include "typedmem/model.h"
#include <stdlib.h>
#include <string.h>

static uint8_t *valid;
static size_t valid_n;

/* Two tensors whose sizes are multiples of the alignment, so no trailing
 * padding: every strict prefix of the file is invalid. */
static bool build_valid(void) {
    tmem_gguf_writer *w;
    if (tmem_gguf_writer_create(NULL, 32, &w) != TMEM_OK) return false;
    tmem_gguf_value v = {.type = TMEM_GGUF_STRING};
    v.v.s.data = "qwen35";
    v.v.s.len = 6;
    bool ok = !tmem_gguf_writer_set(w, "general.architecture", &v);
    v = (tmem_gguf_value){.type = TMEM_GGUF_UINT32};
    v.v.u = 7;
    ok &= !tmem_gguf_writer_set(w, "t.aa", &v);
    ok &= !tmem_gguf_writer_set(w, "t.ab", &v);
    v = (tmem_gguf_value){.type = TMEM_GGUF_BOOL};
    v.v.b = true;
    ok &= !tmem_gguf_writer_set(w, "t.flag", &v);
    static const char *const toks[] = {"x", "yy"};
    ok &= !tmem_gguf_writer_set_array(w, "t.toks", TMEM_GGUF_STRING, toks, 2);
    static const uint16_t nums[] = {1, 2, 3};
    ok &= !tmem_gguf_writer_set_array(w, "t.nums", TMEM_GGUF_UINT16, nums, 3);
    uint64_t d0[2] = {8, 1}, d1[1] = {32};
    ok &= !tmem_gguf_writer_add_tensor(w, "w.a", TMEM_GGML_F32, 2, d0, NULL);
    ok &= !tmem_gguf_writer_add_tensor(w, "w.b", TMEM_GGML_F16, 1, d1, NULL);
    size_t need = 0;
    ok &= tmem_gguf_writer_write(w, NULL, 0, &need) == TMEM_E_FULL;
    valid = malloc(need);
    ok &= valid && tmem_gguf_writer_write(w, valid, need, &valid_n) == TMEM_OK;
    tmem_gguf_writer_destroy(w);
    return ok;
}

/* Field locations in the valid file, found through the reader itself. */
typedef struct where {
    uint64_t kv_type[8], kv_value[8], kv_keylen[8];
    uint64_t t_name[2], t_rank[2], t_dims[2], t_type[2], t_off[2];
} where;

static bool locate(where *w) {
    tmem_gguf *g;
    if (tmem_gguf_open_memory(NULL, valid, valid_n, &g, NULL) != TMEM_OK) return false;
    for (uint64_t i = 0; i < 7; i++) {
        tmem_gguf_str k;
        tmem_gguf_value v;
        if (tmem_gguf_kv_at(g, i, &k, &v) != TMEM_OK) return false;
        w->kv_keylen[i] = (uint64_t)((const uint8_t *)k.data - valid) - 8;
        w->kv_type[i] = (uint64_t)((const uint8_t *)k.data - valid) + k.len;
        w->kv_value[i] = w->kv_type[i] + 4;
    }
    for (uint64_t i = 0; i < 2; i++) {
        tmem_gguf_tensor t;
        if (tmem_gguf_tensor_at(g, i, &t) != TMEM_OK) return false;
        w->t_name[i] = (uint64_t)((const uint8_t *)t.name.data - valid) - 8;
        w->t_rank[i] = w->t_name[i] + 8 + t.name.len;
        w->t_dims[i] = w->t_rank[i] + 4;
        w->t_type[i] = w->t_dims[i] + 8 * t.n_dims;
        w->t_off[i] = w->t_type[i] + 4;
    }
    tmem_gguf_close(g);
    return true;
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Walk everything a parsed file exposes (a reader's worst case). */
static uint64_t walk(const tmem_gguf *g) {
    tmem_gguf_info info;
    uint64_t h = 0;
    if (tmem_gguf_get_info(g, &info) != TMEM_OK) return 0;
    for (uint64_t i = 0; i < info.kv_count; i++) {
        tmem_gguf_str k;
        tmem_gguf_value v;
        if (tmem_gguf_kv_at(g, i, &k, &v) != TMEM_OK) continue;
        for (uint64_t j = 0; j < k.len; j++) h = h * 31 + (uint8_t)k.data[j];
        if (v.type == TMEM_GGUF_STRING)
            for (uint64_t j = 0; j < v.v.s.len; j++) h = h * 31 + (uint8_t)v.v.s.data[j];
        if (v.type == TMEM_GGUF_ARRAY) {
            tmem_gguf_array_iter it = {0};
            tmem_gguf_value e;
            while (tmem_gguf_array_next(g, i, &it, &e) == TMEM_OK) {
                h = h * 31 + e.v.u;
                if (e.type == TMEM_GGUF_STRING && e.v.s.len) h += (uint8_t)e.v.s.data[e.v.s.len - 1];
            }
        }
    }
    for (uint64_t i = 0; i < info.tensor_count; i++) {
        tmem_gguf_tensor t;
        if (tmem_gguf_tensor_at(g, i, &t) != TMEM_OK) continue;
        const uint8_t *p = t.data;
        h += p[0] + p[t.size - 1];
    }
    return h;
}

/* Parse a patched copy; expect `want` and a message with an offset in the file. */
static void expect(const uint8_t *img, size_t n, tmem_status want, const char *needle, const char *label) {
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) return;
    memcpy(copy, img, n);
    tmem_gguf *g = NULL;
    tmem_gguf_error e;
    memset(&e, 0x55, sizeof e);
    tmem_status st = tmem_gguf_open_memory(NULL, copy, n, &g, &e);
    CHECK_MSG(st == want, "%s: got %s want %s (%s)", label, tmem_status_name(st), tmem_status_name(want),
              st ? e.message : "");
    if (st) {
        CHECK_MSG(g == NULL, "%s: handle on failure", label);
        CHECK_MSG(memchr(e.message, 0, sizeof e.message) && e.message[0], "%s: no message", label);
        CHECK_MSG(e.offset <= n, "%s: offset %llu outside the %zu-byte file", label, (unsigned long long)e.offset, n);
        if (needle) CHECK_MSG(strstr(e.message, needle), "%s: message '%s' lacks '%s'", label, e.message, needle);
    } else {
        (void)walk(g);
        tmem_gguf_close(g);
    }
    free(copy);
}

static void test_every_prefix(void) {
    printf("valid file: %zu bytes\n", valid_n);
    for (size_t n = 0; n < valid_n; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        REQUIRE(copy);
        memcpy(copy, valid, n);
        tmem_gguf *g = NULL;
        tmem_gguf_error e;
        tmem_status st = tmem_gguf_open_memory(NULL, copy, n, &g, &e);
        CHECK_MSG(st == TMEM_E_PARSE || st == TMEM_E_CORRUPT, "prefix %zu: %s", n, tmem_status_name(st));
        CHECK(g == NULL);
        CHECK_MSG(e.offset <= n, "prefix %zu: offset %llu", n, (unsigned long long)e.offset);
        free(copy);
    }
    expect(valid, valid_n, TMEM_OK, NULL, "the whole file");
}

static void test_header(void) {
    uint8_t *b = malloc(valid_n);
    REQUIRE(b);
#define FRESH() memcpy(b, valid, valid_n)
    FRESH(); b[0] = 'X'; expect(b, valid_n, TMEM_E_PARSE, "magic", "bad magic");
    FRESH(); put32(b + 4, 1); expect(b, valid_n, TMEM_E_UNSUPPORTED, "version 1", "v1");
    FRESH(); put32(b + 4, 4); expect(b, valid_n, TMEM_E_UNSUPPORTED, "version", "v4");
    FRESH(); put32(b + 4, 0x03000000u); expect(b, valid_n, TMEM_E_UNSUPPORTED, "big-endian", "big-endian");
    FRESH(); put32(b + 4, 2); expect(b, valid_n, TMEM_OK, NULL, "v2 has the same layout");
    FRESH(); put64(b + 8, UINT64_MAX); expect(b, valid_n, TMEM_E_CORRUPT, "tensor count", "huge tensor count");
    FRESH(); put64(b + 8, 1ull << 40); expect(b, valid_n, TMEM_E_CORRUPT, "tensor count", "2^40 tensors");
    FRESH(); put64(b + 16, UINT64_MAX); expect(b, valid_n, TMEM_E_CORRUPT, "metadata count", "huge kv count");
    FRESH(); put64(b + 16, 1000); expect(b, valid_n, TMEM_E_CORRUPT, "metadata count", "kv count > file");
    FRESH(); put64(b + 8, 3); expect(b, valid_n, TMEM_E_CORRUPT, NULL, "one tensor more than written");
    free(b);
    /* a count the file could hold but over the item limit (2^20) */
    size_t big = 34u << 20;
    uint8_t *z = calloc(1, big);
    REQUIRE(z);
    memcpy(z, valid, 24);
    put64(z + 8, (1u << 20) + 1);
    expect(z, big, TMEM_E_CORRUPT, "limit", "2^20+1 tensors");
    put64(z + 8, 0);
    put64(z + 16, (1u << 20) + 1);
    expect(z, big, TMEM_E_CORRUPT, "limit", "2^20+1 pairs");
    free(z);
}

static void test_metadata(void) {
    where w;
    REQUIRE(locate(&w));
    uint8_t *b = malloc(valid_n);
    REQUIRE(b);
    /* pair 0 general.alignment, 1 general.architecture, 2 t.aa, 3 t.ab, 4 t.flag, 5 t.toks, 6 t.nums */
    FRESH(); put64(b + w.kv_keylen[2], UINT64_MAX); expect(b, valid_n, TMEM_E_CORRUPT, "length", "key length 2^64-1");
    FRESH(); put64(b + w.kv_keylen[2], 70000); expect(b, valid_n, TMEM_E_CORRUPT, "length", "key length 70000");
    FRESH(); put64(b + w.kv_keylen[2], 0); expect(b, valid_n, TMEM_E_CORRUPT, "length", "empty key");
    FRESH(); put64(b + w.kv_value[1], UINT64_MAX); expect(b, valid_n, TMEM_E_PARSE, "truncated", "string length 2^64-1");
    FRESH(); put64(b + w.kv_value[1], valid_n); expect(b, valid_n, TMEM_E_PARSE, "truncated", "string past end");
    FRESH(); put32(b + w.kv_type[2], 13); expect(b, valid_n, TMEM_E_PARSE, "unknown value type", "value type 13");
    FRESH(); put32(b + w.kv_type[2], 0xFFFFFFFFu); expect(b, valid_n, TMEM_E_PARSE, "unknown value type", "value type -1");
    FRESH(); b[w.kv_value[4]] = 2; expect(b, valid_n, TMEM_E_PARSE, "bool", "bool byte 2");
    FRESH(); put32(b + w.kv_value[5], 99); expect(b, valid_n, TMEM_E_PARSE, "element type", "array elem type 99");
    FRESH(); put64(b + w.kv_value[5] + 4, UINT64_MAX); expect(b, valid_n, TMEM_E_CORRUPT, "cannot fit", "array count 2^64-1");
    FRESH(); put64(b + w.kv_value[6] + 4, 1ull << 62); expect(b, valid_n, TMEM_E_CORRUPT, "cannot fit", "u16 array count 2^62");
    FRESH(); put64(b + w.kv_value[5] + 12, 1ull << 40); expect(b, valid_n, TMEM_E_PARSE, "truncated", "array string length");
    /* general.alignment */
    FRESH(); put32(b + w.kv_value[0], 48); expect(b, valid_n, TMEM_E_CORRUPT, "power of two", "alignment 48");
    FRESH(); put32(b + w.kv_value[0], 0); expect(b, valid_n, TMEM_E_CORRUPT, "power of two", "alignment 0");
    FRESH(); put32(b + w.kv_type[0], TMEM_GGUF_INT32); expect(b, valid_n, TMEM_E_CORRUPT, "UINT32", "alignment INT32");
    FRESH(); put32(b + w.kv_value[0], 64); expect(b, valid_n, TMEM_E_CORRUPT, NULL, "alignment 64 moves the data");
    /* duplicate key: t.ab -> t.aa */
    FRESH(); b[w.kv_type[3] - 1] = 'a'; expect(b, valid_n, TMEM_E_CORRUPT, "duplicate metadata key", "duplicate key");
    free(b);
}

static void test_tensors(void) {
    where w;
    REQUIRE(locate(&w));
    uint8_t *b = malloc(valid_n);
    REQUIRE(b);
    FRESH(); put64(b + w.t_off[1], 4096); expect(b, valid_n, TMEM_E_CORRUPT, "past end of file", "offset out of file");
    FRESH(); put64(b + w.t_off[1], UINT64_MAX - 31); expect(b, valid_n, TMEM_E_CORRUPT, "past end", "offset wraps");
    FRESH(); put64(b + w.t_off[1], 33); expect(b, valid_n, TMEM_E_CORRUPT, "not a multiple", "misaligned offset");
    FRESH(); put64(b + w.t_off[1], 0); expect(b, valid_n, TMEM_E_CORRUPT, "overlap", "overlapping tensors");
    FRESH(); put64(b + w.t_off[0], 64); put64(b + w.t_off[1], 0); expect(b, valid_n, TMEM_OK, NULL, "swapped, disjoint");
    FRESH(); put32(b + w.t_type[0], 4); expect(b, valid_n, TMEM_E_UNSUPPORTED, "unknown ggml type", "type 4 (removed)");
    FRESH(); put32(b + w.t_type[0], 99); expect(b, valid_n, TMEM_E_UNSUPPORTED, "unknown ggml type", "type 99");
    FRESH(); put32(b + w.t_type[0], TMEM_GGML_Q4_0); expect(b, valid_n, TMEM_E_CORRUPT, "block size", "q4_0 with ne0 8");
    FRESH(); put64(b + w.t_dims[0], 0); expect(b, valid_n, TMEM_E_CORRUPT, "dimension", "zero dimension");
    FRESH(); put64(b + w.t_dims[0], 1ull << 63); expect(b, valid_n, TMEM_E_CORRUPT, "dimension", "dimension > INT64_MAX");
    FRESH(); put64(b + w.t_dims[0], 1ull << 62); put64(b + w.t_dims[0] + 8, 4);
    expect(b, valid_n, TMEM_E_CORRUPT, "element count overflows", "element count overflow");
    FRESH(); put64(b + w.t_dims[0], 1ull << 61); put64(b + w.t_dims[0] + 8, 2);
    expect(b, valid_n, TMEM_E_CORRUPT, "byte size overflows", "byte size overflow");
    FRESH(); put64(b + w.t_dims[0], 1ull << 40); expect(b, valid_n, TMEM_E_CORRUPT, "past end", "tensor too big for file");
    FRESH(); put32(b + w.t_rank[0], 5); expect(b, valid_n, TMEM_E_CORRUPT, "rank", "rank 5");
    FRESH(); put32(b + w.t_rank[0], 0); expect(b, valid_n, TMEM_E_CORRUPT, "rank", "rank 0");
    FRESH(); put64(b + w.t_name[0], 65); expect(b, valid_n, TMEM_E_CORRUPT, "length", "name 65 bytes");
    FRESH(); put64(b + w.t_name[0], 0); expect(b, valid_n, TMEM_E_CORRUPT, "length", "empty name");
    FRESH(); b[w.t_rank[1] - 1] = 'a'; expect(b, valid_n, TMEM_E_CORRUPT, "duplicate tensor name", "duplicate name");
    free(b);
#undef FRESH
}

/* Arrays of arrays nested 9 deep, written by hand. */
static void test_nesting(void) {
    for (uint32_t depth = 7; depth <= 9; depth++) {
        uint8_t b[256];
        size_t o = 0;
        put32(b + o, 0x46554747u); o += 4;
        put32(b + o, 3); o += 4;
        put64(b + o, 0); o += 8;
        put64(b + o, 1); o += 8;
        put64(b + o, 1); o += 8;
        b[o++] = 'n';
        put32(b + o, TMEM_GGUF_ARRAY); o += 4;
        for (uint32_t d = 0; d < depth; d++) { /* array of (array of ... ) one element each */
            put32(b + o, d + 1 < depth ? TMEM_GGUF_ARRAY : TMEM_GGUF_UINT8); o += 4;
            put64(b + o, 1); o += 8;
        }
        b[o++] = 42;
        expect(b, o, depth <= 8 ? TMEM_OK : TMEM_E_PARSE, depth <= 8 ? NULL : "nested", "nesting");
        if (depth == 8) { /* the nested element reads back as an array */
            tmem_gguf *g;
            REQUIRE_OK(tmem_gguf_open_memory(NULL, b, o, &g, NULL));
            tmem_gguf_value e;
            CHECK_OK(tmem_gguf_array_get(g, 0, 0, &e));
            CHECK(e.type == TMEM_GGUF_ARRAY && e.v.array.count == 1 && e.v.array.type == TMEM_GGUF_ARRAY);
            tmem_gguf_close(g);
        }
    }
}

/* Seeded random corruption: flips, and u64 fields set to extreme values. */
static void test_random_corruption(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(0x6755464Du));
    uint8_t *b = malloc(valid_n);
    REQUIRE(b);
    int ok = 0, bad = 0;
    for (int it = 0; it < 4000; it++) {
        memcpy(b, valid, valid_n);
        int edits = (int)tmem_rng_range(&r, 1, 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)tmem_rng_range(&r, 0, valid_n - 1);
            switch (tmem_rng_range(&r, 0, 2)) {
            case 0: b[at] ^= (uint8_t)(1u << tmem_rng_range(&r, 0, 7)); break;
            case 1: b[at] = (uint8_t)tmem_rng_next(&r); break;
            default:
                if (at + 8 <= valid_n) {
                    static const uint64_t vals[] = {0, 1, 0xFF, 1ull << 32, 1ull << 63, UINT64_MAX, 4096};
                    put64(b + at, vals[tmem_rng_range(&r, 0, 6)]);
                }
            }
        }
        size_t n = valid_n - (size_t)(tmem_rng_range(&r, 0, 3) == 0 ? tmem_rng_range(&r, 0, valid_n) : 0);
        uint8_t *copy = malloc(n ? n : 1);
        REQUIRE(copy);
        memcpy(copy, b, n);
        tmem_gguf *g;
        tmem_gguf_error e;
        tmem_status st = tmem_gguf_open_memory(NULL, copy, n, &g, &e);
        if (st == TMEM_OK) {
            (void)walk(g);
            tmem_gguf_close(g);
            ok++;
        } else {
            CHECK_MSG(st == TMEM_E_PARSE || st == TMEM_E_CORRUPT || st == TMEM_E_UNSUPPORTED, "iteration %d: %s", it,
                      tmem_status_name(st));
            CHECK(e.offset <= n && e.message[0]);
            bad++;
        }
        free(copy);
    }
    printf("random corruption: %d still valid, %d refused\n", ok, bad);
    CHECK(bad > 0);
    free(b);
}

int main(void) {
    if (!build_valid()) {
        printf("could not build the valid file\n");
        return 1;
    }
    RUN(test_every_prefix);
    RUN(test_header);
    RUN(test_metadata);
    RUN(test_tensors);
    RUN(test_nesting);
    RUN(test_random_corruption);
    free(valid);
    return tmem_test_finish();
}

/* Trace file format: write -> read round trip, a file cut at every length,
 * and hostile files (each field broken on purpose, then random flips). */
#include <stdlib.h>
#include <string.h>
#include "trace_fixture.h"

static uint8_t *encode(const tmem_trace_data *d, size_t *len) {
    tmem__text sb;
    tmem__text_init(&sb);
    tmem__trace_write_all(d, &sb);
    char *buf = NULL;
    if (tmem__text_take(&sb, &buf, len) != TMEM_OK) return NULL;
    return (uint8_t *)buf;
}

static bool same_event(const tmem_trace_event *a, const tmem_trace_event *b) {
    return a->time_ns == b->time_ns && a->size == b->size && a->offset == b->offset && a->thread == b->thread &&
           a->kind == b->kind && a->type == b->type && a->role == b->role && !strcmp(a->name, b->name);
}

static void test_round_trip(void) {
    tmem_trace_data *d = fx_session(40);
    REQUIRE(d);
    d->dropped = 17;
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/t.tmtrace", dir);
    CHECK_OK(tmem_trace_data_save(d, path));
    tmem_trace_data *r;
    REQUIRE_OK(tmem_trace_load(path, &r));
    tmem_trace_data_info a, b;
    CHECK_OK(tmem_trace_data_get_info(d, &a));
    CHECK_OK(tmem_trace_data_get_info(r, &b));
    CHECK(b.events == a.events && b.events > 100);
    CHECK(b.dropped == 17 && b.budget == (96u << 20) && b.complete);
    CHECK(b.type_count == 4 && b.thread_count == a.thread_count);
    for (uint64_t i = 0; i < a.events; i++) {
        tmem_trace_event x, y;
        CHECK_OK(tmem_trace_data_event(d, i, &x));
        CHECK_OK(tmem_trace_data_event(r, i, &y));
        CHECK_MSG(same_event(&x, &y), "event %llu differs", (unsigned long long)i);
    }
    tmem_trace_event e;
    CHECK_ST(tmem_trace_data_event(r, a.events, &e), TMEM_E_NOT_FOUND);
    CHECK(!strcmp(tmem_trace_data_type_name(r, FX_KV), "/memory/kv"));
    CHECK(!strcmp(tmem_trace_data_role_name(r, TMEM_ROLE_VISION_INTERMEDIATE), "vision_intermediate"));
    CHECK(tmem_trace_data_type_name(r, 9) == NULL && tmem_trace_data_type_name(r, -1) == NULL);
    CHECK(tmem_trace_data_role_name(r, 20) == NULL && tmem_trace_data_role_name(r, 99) == NULL);
    tmem_trace_data_destroy(r);
    /* Bad arguments and missing files. */
    CHECK_ST(tmem_trace_load(NULL, &r), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_load(path, NULL), TMEM_E_INVALID_ARG);
    snprintf(path, sizeof path, "%s/absent", dir);
    CHECK_ST(tmem_trace_load(path, &r), TMEM_E_IO);
    CHECK(r == NULL);
    CHECK_ST(tmem_trace_data_save(d, "/nonexistent-dir/x"), TMEM_E_IO);
    tmem_trace_data_destroy(d);
    remove(path);
    snprintf(path, sizeof path, "%s/t.tmtrace", dir);
    remove(path);
    remove(dir);
}

/* A streamed file cut by a crash: every whole record before the cut loads. */
static void test_truncated(void) {
    tmem_trace_data *d = fx_session(3);
    REQUIRE(d);
    size_t len;
    uint8_t *buf = encode(d, &len);
    REQUIRE(buf);
    uint64_t last_count = 0;
    for (size_t cut = 0; cut < len; cut++) {
        tmem_trace_data *r = NULL;
        tmem_status st = tmem_trace_load_memory(buf, cut, &r);
        if (cut < TMEM__TRACE_HEADER_SIZE) {
            CHECK_ST(st, TMEM_E_PARSE);
            CHECK(r == NULL);
            continue;
        }
        CHECK_MSG(st == TMEM_OK, "cut at %zu: %s", cut, tmem_status_name(st));
        if (!r) continue;
        CHECK(!r->complete);
        CHECK(r->count >= last_count && r->count <= d->count); /* monotone in the cut */
        last_count = r->count;
        tmem_trace_data_destroy(r);
    }
    CHECK(last_count == d->count); /* only the END record was missing at the end */
    tmem_trace_data *r;
    CHECK_OK(tmem_trace_load_memory(buf, len, &r));
    CHECK(r && r->complete && r->count == d->count);
    tmem_trace_data_destroy(r);
    free(buf);
    tmem_trace_data_destroy(d);
}

/* Build a file by hand: header + given records. */
typedef struct rawfile { uint8_t b[1024]; size_t n; } rawfile;
static void raw_header(rawfile *f, uint32_t version, uint32_t flags) {
    f->n = tmem__trace_encode_header(f->b);
    for (int i = 0; i < 4; i++) f->b[8 + i] = (uint8_t)(version >> (8 * i)), f->b[12 + i] = (uint8_t)(flags >> (8 * i));
}
static uint8_t *raw_event(rawfile *f, uint64_t t, uint16_t kind, int type, int role, const char *name) {
    tmem_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.time_ns = t, ev.kind = kind, ev.type = (int16_t)type, ev.role = role, ev.size = 64, ev.thread = 1;
    snprintf(ev.name, sizeof ev.name, "%s", name);
    uint8_t *at = f->b + f->n;
    f->n += tmem__trace_encode_event(at, &ev);
    return at;
}
static tmem_status raw_load(const rawfile *f) {
    tmem_trace_data *r = NULL;
    tmem_status st = tmem_trace_load_memory(f->b, f->n, &r);
    if (st != TMEM_OK) CHECK(r == NULL);
    tmem_trace_data_destroy(r);
    return st;
}

static void test_hostile(void) {
    rawfile f;
    raw_header(&f, 1, 0);
    raw_event(&f, 5, TMEM_TRACE_ALLOC, 0, 0, "ok");
    CHECK_OK(raw_load(&f));
    f.b[0] = 'X';
    CHECK_ST(raw_load(&f), TMEM_E_PARSE); /* magic */
    raw_header(&f, 2, 0);
    CHECK_ST(raw_load(&f), TMEM_E_PARSE); /* future version */
    raw_header(&f, 1, 1);
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT); /* unknown flags */

    struct { uint16_t kind; int type, role; const char *name; } bad[] = {
        {TMEM_TRACE_KIND_COUNT, 0, 0, "x"}, {200, 0, 0, "x"}, {TMEM_TRACE_ALLOC, 64, 0, "x"},
        {TMEM_TRACE_ALLOC, -2, 0, "x"}, {TMEM_TRACE_ALLOC, 0, TMEM_ROLE_MAX, "x"}, {TMEM_TRACE_ALLOC, 0, -5, "x"},
        {TMEM_TRACE_ALLOC, 0, 0, "tab\there"}, {TMEM_TRACE_ALLOC, 0, 0, "del\x7f"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        raw_header(&f, 1, 0);
        raw_event(&f, 5, bad[i].kind, bad[i].type, bad[i].role, bad[i].name);
        CHECK_MSG(raw_load(&f) == TMEM_E_CORRUPT, "bad event %zu accepted", i);
    }
    /* A NUL inside the name bytes. */
    raw_header(&f, 1, 0);
    uint8_t *e = raw_event(&f, 5, TMEM_TRACE_ALLOC, 0, 0, "abc");
    e[2 + 29 + 1] = 0;
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    /* A payload too short for an event; a name longer than the limit. */
    raw_header(&f, 1, 0);
    e = raw_event(&f, 5, TMEM_TRACE_ALLOC, 0, 0, "");
    e[1] = 28, f.n -= 1;
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    raw_header(&f, 1, 0);
    e = raw_event(&f, 5, TMEM_TRACE_ALLOC, 0, 0, "");
    e[1] = 29 + TMEM_TRACE_NAME_MAX;
    memset(f.b + f.n, 'a', TMEM_TRACE_NAME_MAX);
    f.n += TMEM_TRACE_NAME_MAX;
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    /* Time going backwards. */
    raw_header(&f, 1, 0);
    raw_event(&f, 50, TMEM_TRACE_ALLOC, 0, 0, "a");
    raw_event(&f, 49, TMEM_TRACE_FREE, 0, 0, "a");
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    /* Unknown record tag. */
    raw_header(&f, 1, 0);
    f.b[f.n++] = 9, f.b[f.n++] = 0;
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    /* Type records: index out of range, defined twice. */
    raw_header(&f, 1, 0);
    f.n += tmem__trace_encode_type(f.b + f.n, 63, 0, "/memory/last");
    CHECK_OK(raw_load(&f));
    f.n += tmem__trace_encode_type(f.b + f.n, 63, 0, "/memory/again");
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    raw_header(&f, 1, 0);
    f.n += tmem__trace_encode_type(f.b + f.n, 64, 0, "/memory/x");
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    raw_header(&f, 1, 0);
    f.n += tmem__trace_encode_role(f.b + f.n, TMEM_ROLE_MAX, "x");
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    /* END: wrong count, wrong size, bytes after it. */
    raw_header(&f, 1, 0);
    raw_event(&f, 1, TMEM_TRACE_MARK, -1, -1, "m");
    size_t at = f.n;
    f.n += tmem__trace_encode_end(f.b + f.n, 0, 0, 2);
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    f.n = at;
    f.n += tmem__trace_encode_end(f.b + f.n, 0, 0, 1);
    CHECK_OK(raw_load(&f));
    f.b[f.n++] = TMEM__REC_ROLE, f.b[f.n++] = 2, f.b[f.n++] = 0, f.b[f.n++] = 'w';
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
    f.n = at;
    f.n += tmem__trace_encode_end(f.b + f.n, 0, 0, 1);
    f.b[at + 1] = 23;
    f.n -= 1;
    CHECK_ST(raw_load(&f), TMEM_E_CORRUPT);
}

/* Random corruption: never a crash or a leak, and what loads is valid. */
static void test_random_flips(void) {
    tmem_trace_data *d = fx_session(8);
    REQUIRE(d);
    size_t len;
    uint8_t *orig = encode(d, &len);
    REQUIRE(orig);
    uint8_t *buf = malloc(len);
    tmem_rng rng;
    tmem_rng_init(&rng, tmem_test_seed(6));
    int ok = 0, refused = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, orig, len);
        int flips = (int)tmem_rng_range(&rng, 1, 4);
        for (int k = 0; k < flips; k++) buf[tmem_rng_range(&rng, 0, len - 1)] ^= (uint8_t)tmem_rng_range(&rng, 1, 255);
        size_t n = tmem_rng_range(&rng, 0, 3) ? len : tmem_rng_range(&rng, 0, len);
        tmem_trace_data *r = NULL;
        tmem_status st = tmem_trace_load_memory(buf, n, &r);
        if (st == TMEM_OK) {
            ok++;
            for (uint64_t i = 0; i < r->count; i++) {
                CHECK(tmem__trace_event_valid(&r->events[i]));
                if (i) CHECK(r->events[i].time_ns >= r->events[i - 1].time_ns);
            }
            tmem_trace_peak_info p; /* the analysis must cope with whatever loads */
            CHECK_OK(tmem_trace_peak(r, &p));
            tmem_trace_data_destroy(r);
        } else {
            refused++;
            CHECK(r == NULL);
            CHECK(st == TMEM_E_PARSE || st == TMEM_E_CORRUPT);
        }
    }
    printf("random flips: %d loaded, %d refused\n", ok, refused);
    CHECK(refused > 0 && ok > 0);
    free(buf);
    free(orig);
    tmem_trace_data_destroy(d);
}

int main(void) {
    RUN(test_round_trip);
    RUN(test_truncated);
    RUN(test_hostile);
    RUN(test_random_flips);
    return tmem_test_finish();
}

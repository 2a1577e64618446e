/* The tracer on a real context: ring wrap and drop counts, start/stop/mark
 * state errors, streaming to a file through heaps, and a context destroyed
 * while tracing. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "trace/trace_internal.h"

static tmem_context *make_ctx(void) {
    tmem_context_desc cd = {0};
    cd.budget = 256ull << 20;
    tmem_context *ctx = NULL;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return NULL;
    return ctx;
}

static void test_ring_wrap(void) {
    tmem_context *ctx = make_ctx();
    REQUIRE(ctx);
    tmem_trace_desc td = {0};
    td.capacity = 5; /* rounded up to 8 */
    CHECK(tmem__context_tracer(ctx) == NULL); /* never started: the hook's pointer is NULL */
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    CHECK(tmem__context_tracer(ctx) != NULL);
    char name[32];
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "m%d", i);
        CHECK_OK(tmem_trace_mark(ctx, name));
    }
    tmem_trace_info info;
    CHECK_OK(tmem_trace_get_info(ctx, &info));
    CHECK(info.on && info.capacity == 8 && info.recorded == 20 && info.dropped == 12);
    tmem_trace_data *d;
    REQUIRE_OK(tmem_trace_snapshot(ctx, &d));
    tmem_trace_data_info di;
    CHECK_OK(tmem_trace_data_get_info(d, &di));
    CHECK(di.events == 8 && di.dropped == 12 && di.budget == (256ull << 20) && di.thread_count == 1);
    for (uint64_t i = 0; i < di.events; i++) {
        tmem_trace_event ev;
        CHECK_OK(tmem_trace_data_event(d, i, &ev));
        snprintf(name, sizeof name, "m%d", (int)(12 + i));
        CHECK_MSG(!strcmp(ev.name, name), "slot %llu holds %s", (unsigned long long)i, ev.name);
        CHECK(ev.kind == TMEM_TRACE_MARK && ev.type == -1 && ev.role == -1 && ev.thread == 1);
        if (i) CHECK(ev.time_ns >= d->events[i - 1].time_ns);
    }
    tmem_trace_data_destroy(d);

    /* Names are bounded and control bytes replaced. */
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    longname[3] = '\n';
    CHECK_OK(tmem_trace_mark(ctx, longname));
    REQUIRE_OK(tmem_trace_snapshot(ctx, &d));
    const tmem_trace_event *last = &d->events[d->count - 1];
    CHECK(strlen(last->name) == TMEM_TRACE_NAME_MAX - 1 && last->name[3] == '?');
    CHECK(d->dropped == 13);
    tmem_trace_data_destroy(d);

    /* Stop keeps the ring for a snapshot; marks are refused while off. */
    CHECK_OK(tmem_trace_stop(ctx));
    CHECK(tmem__context_tracer(ctx) == NULL); /* stopped: back to the never-started path */
    CHECK_ST(tmem_trace_mark(ctx, "late"), TMEM_E_STATE);
    CHECK_ST(tmem_trace_stop(ctx), TMEM_E_STATE);
    REQUIRE_OK(tmem_trace_snapshot(ctx, &d));
    CHECK(d->count == 8);
    tmem_trace_data_destroy(d);
    /* A restart forgets the previous run. */
    td.capacity = 0;
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    CHECK_OK(tmem_trace_get_info(ctx, &info));
    CHECK(info.capacity == TMEM_TRACE_DEFAULT_CAPACITY && info.recorded == 0 && info.dropped == 0);
    REQUIRE_OK(tmem_trace_snapshot(ctx, &d));
    CHECK(d->count == 0);
    tmem_trace_data_destroy(d);
    CHECK_OK(tmem_trace_stop(ctx));
    tmem_context_destroy(ctx);
}

static void test_errors(void) {
    tmem_context *ctx = make_ctx();
    REQUIRE(ctx);
    tmem_trace_desc td = {0};
    tmem_trace_data *d = (tmem_trace_data *)1;
    tmem_trace_info info;
    CHECK_ST(tmem_trace_snapshot(ctx, &d), TMEM_E_STATE); /* never started */
    CHECK(d == NULL);
    CHECK_OK(tmem_trace_get_info(ctx, &info));
    CHECK(!info.on && info.recorded == 0);
    CHECK_ST(tmem_trace_mark(ctx, "x"), TMEM_E_STATE);
    CHECK_ST(tmem_trace_stop(ctx), TMEM_E_STATE);
    CHECK_ST(tmem_trace_start(NULL, &td), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_start(ctx, NULL), TMEM_E_INVALID_ARG);
    td.flags = 0x80;
    CHECK_ST(tmem_trace_start(ctx, &td), TMEM_E_INVALID_ARG);
    td.flags = 0;
    td.capacity = (1u << 24) + 1;
    CHECK_ST(tmem_trace_start(ctx, &td), TMEM_E_INVALID_ARG);
    td.capacity = 16;
    td.path = "/nonexistent-dir/trace.tmtrace";
    CHECK_ST(tmem_trace_start(ctx, &td), TMEM_E_IO);
    CHECK_OK(tmem_trace_get_info(ctx, &info));
    CHECK(!info.on);
    td.path = NULL;
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    CHECK_ST(tmem_trace_start(ctx, &td), TMEM_E_STATE);
    CHECK_ST(tmem_trace_mark(ctx, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_mark(NULL, "x"), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_get_info(ctx, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_snapshot(ctx, NULL), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_trace_stop(ctx));
    tmem_context_destroy(ctx);
}

/* Heap allocations streamed to a file, read back and analysed. */
static void test_file_stream(void) {
    tmem_context *ctx = make_ctx();
    REQUIRE(ctx);
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/heap.tmtrace", dir);
    tmem_type *act;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
    tmem_type_info ti;
    REQUIRE_OK(tmem_type_get_info(act, &ti));

    tmem_trace_desc td = {0};
    td.path = path;
    td.buffer_size = 4096; /* small: several flushes */
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_GENERAL;
    hd.type = act;
    hd.role = TMEM_ROLE_ACTIVATION;
    hd.size = 16u << 20;
    hd.name = "act-heap";
    tmem_heap *heap;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &heap));
    tmem_alloc_info ai[64];
    uint64_t live = 0, peak = 0;
    char name[32];
    for (int i = 0; i < 64; i++) {
        tmem_alloc_desc ad = {0};
        ad.size = 4096u * (uint64_t)(1 + i % 5);
        ad.role = i % 3 ? -1 : TMEM_ROLE_SCRATCH;
        snprintf(name, sizeof name, "t%d", i);
        ad.name = name;
        REQUIRE_OK(tmem_heap_alloc_ex(heap, &ad, &ai[i]));
        live += ad.size;
        if (live > peak) peak = live;
        if (i % 4 == 3) { /* free the one before */
            REQUIRE_OK(tmem_heap_free_offset(heap, ai[i - 1].offset));
            live -= ai[i - 1].size;
        }
        if (i == 40) CHECK_OK(tmem_trace_mark(ctx, "half"));
    }
    tmem_trace_data *d = (tmem_trace_data *)1;
    CHECK_ST(tmem_trace_snapshot(ctx, &d), TMEM_E_STATE); /* file only: no ring */
    tmem_trace_info info;
    CHECK_OK(tmem_trace_get_info(ctx, &info));
    CHECK(info.capacity == 0 && info.recorded >= 64 + 16 + 1 && info.file_errors == 0);
    CHECK(info.file_bytes >= TMEM__TRACE_HEADER_SIZE + info.recorded * 31); /* written + buffered */
    CHECK_OK(tmem_trace_stop(ctx));

    REQUIRE_OK(tmem_trace_load(path, &d));
    tmem_trace_data_info di;
    CHECK_OK(tmem_trace_data_get_info(d, &di));
    CHECK(di.complete && di.dropped == 0 && di.budget == (256ull << 20));
    CHECK(!strcmp(tmem_trace_data_type_name(d, (int32_t)ti.index), ti.name));
    CHECK(tmem_trace_data_role_name(d, TMEM_ROLE_ACTIVATION) != NULL);
    uint64_t allocs = 0, frees = 0, marks = 0, commits = 0;
    for (uint64_t i = 0; i < d->count; i++) {
        const tmem_trace_event *ev = &d->events[i];
        if (ev->kind == TMEM_TRACE_ALLOC && ev->type == (int16_t)ti.index) {
            snprintf(name, sizeof name, "t%llu", (unsigned long long)allocs);
            CHECK_MSG(!strcmp(ev->name, name), "alloc %llu named %s", (unsigned long long)allocs, ev->name);
            CHECK(ev->size == 4096u * (1 + allocs % 5));
            CHECK(ev->role == (allocs % 3 ? TMEM_ROLE_ACTIVATION : TMEM_ROLE_SCRATCH));
            allocs++;
        } else if (ev->kind == TMEM_TRACE_FREE && ev->size) {
            frees++;
        } else if (ev->kind == TMEM_TRACE_MARK) {
            marks++;
        } else if (ev->kind == TMEM_TRACE_COMMIT) {
            commits++;
        }
    }
    CHECK(allocs == 64 && frees == 16 && marks == 1 && commits >= 1);
    tmem_trace_peak_info p;
    REQUIRE_OK(tmem_trace_peak(d, &p));
    CHECK_MSG(p.peak_bytes == peak, "peak %llu, want %llu", (unsigned long long)p.peak_bytes, (unsigned long long)peak);
    CHECK(p.unmatched_frees == 0 && p.peak_committed >= peak);
    tmem_trace_data_destroy(d);
    tmem_heap_destroy(heap);

    /* A context destroyed while streaming still leaves a complete file;
     * tmem_trace_flush makes what was recorded readable before that. */
    CHECK_ST(tmem_trace_flush(ctx), TMEM_E_STATE);
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    CHECK_OK(tmem_trace_mark(ctx, "last words"));
    CHECK_OK(tmem_trace_flush(ctx));
    REQUIRE_OK(tmem_trace_load(path, &d)); /* cut before END: incomplete, but the mark is there */
    CHECK(!d->complete && d->count == 1 && !strcmp(d->events[0].name, "last words"));
    tmem_trace_data_destroy(d);
    tmem_context_destroy(ctx);
    REQUIRE_OK(tmem_trace_load(path, &d));
    CHECK(d->complete && d->count == 1 && !strcmp(d->events[0].name, "last words"));
    CHECK(tmem_trace_data_type_name(d, (int32_t)ti.index) && !strcmp(tmem_trace_data_type_name(d, (int32_t)ti.index), ti.name));
    tmem_trace_data_destroy(d);
    remove(path);
    remove(dir);
}

/* NO_COMMITS leaves commit/decommit out. */
static void test_no_commits(void) {
    tmem_context *ctx = make_ctx();
    REQUIRE(ctx);
    tmem_type *act;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
    tmem_trace_desc td = {0};
    td.flags = TMEM_TRACE_NO_COMMITS;
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    tmem_heap_desc hd = {0};
    hd.type = act;
    hd.role = TMEM_ROLE_ACTIVATION;
    hd.size = 1u << 20;
    tmem_heap *heap;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &heap));
    void *p;
    REQUIRE_OK(tmem_heap_alloc(heap, 100000, 0, &p));
    CHECK_OK(tmem_heap_free(heap, p));
    tmem_trace_data *d;
    REQUIRE_OK(tmem_trace_snapshot(ctx, &d));
    uint64_t allocs = 0;
    for (uint64_t i = 0; i < d->count; i++) {
        CHECK(d->events[i].kind != TMEM_TRACE_COMMIT && d->events[i].kind != TMEM_TRACE_DECOMMIT);
        allocs += d->events[i].kind == TMEM_TRACE_ALLOC;
    }
    CHECK(allocs == 1);
    tmem_trace_data_destroy(d);
    tmem_heap_destroy(heap);
    tmem_context_destroy(ctx); /* still on: destroy cleans the tracer up */
}

int main(void) {
    RUN(test_ring_wrap);
    RUN(test_errors);
    RUN(test_file_stream);
    RUN(test_no_commits);
    return tmem_test_finish();
}

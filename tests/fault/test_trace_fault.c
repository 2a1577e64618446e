/* Tracer under metadata allocation failure (SQLite's OOM loop, on the
 * context's allocator): fail allocation N of tmem_trace_start for N = 0, 1,
 * 2... until it succeeds, once and persistently. Every failure must be a
 * clean TMEM_E_NO_MEMORY with tracing still off, and the very next start,
 * with the allocator healthy, must work (LeakSanitizer checks the rest). */
#include <stdlib.h>
#include <string.h>
#include "harness.h"

static long fail_at = -1;     /* allocation index that fails; -1 = none */
static bool persistent;       /* keep failing after the first one */
static long allocs;

static void *test_alloc(size_t size, void *user) {
    (void)user;
    long i = allocs++;
    if (fail_at >= 0 && (i == fail_at || (persistent && i > fail_at))) return NULL;
    return malloc(size);
}
static void test_free(void *ptr, size_t size, void *user) {
    (void)size;
    (void)user;
    free(ptr);
}

static void sweep(bool persist, const char *path) {
    tmem_allocator a = {test_alloc, test_free, NULL};
    long n;
    for (n = 0; n < 64; n++) {
        tmem_context_desc cd = {0};
        cd.budget = 64ull << 20;
        cd.allocator = &a;
        tmem_context *ctx;
        fail_at = -1;
        REQUIRE_OK(tmem_context_create(&cd, &ctx));
        tmem_trace_desc td = {0};
        td.capacity = 64;
        td.path = path;
        allocs = 0, fail_at = n, persistent = persist;
        tmem_status st = tmem_trace_start(ctx, &td);
        fail_at = -1;
        if (st == TMEM_OK) {
            CHECK_OK(tmem_trace_mark(ctx, "ok"));
            CHECK_OK(tmem_trace_stop(ctx));
            tmem_context_destroy(ctx);
            break;
        }
        CHECK_MSG(st == TMEM_E_NO_MEMORY, "allocation %ld failed: got %s", n, tmem_status_name(st));
        tmem_trace_info info;
        CHECK_OK(tmem_trace_get_info(ctx, &info));
        CHECK(!info.on && info.recorded == 0);
        CHECK_ST(tmem_trace_mark(ctx, "off"), TMEM_E_STATE);
        CHECK_ST(tmem_trace_stop(ctx), TMEM_E_STATE);
        /* healthy again: it works, and records */
        REQUIRE_OK(tmem_trace_start(ctx, &td));
        CHECK_OK(tmem_trace_mark(ctx, "after"));
        tmem_trace_data *d;
        REQUIRE_OK(tmem_trace_snapshot(ctx, &d));
        tmem_trace_event ev;
        CHECK_OK(tmem_trace_data_event(d, 0, &ev));
        CHECK(!strcmp(ev.name, "after"));
        CHECK_ST(tmem_trace_data_event(d, 1, &ev), TMEM_E_NOT_FOUND);
        tmem_trace_data_destroy(d);
        CHECK_OK(tmem_trace_stop(ctx));
        tmem_context_destroy(ctx);
    }
    printf("%s: start succeeded once %ld allocations could succeed\n", persist ? "persistent" : "once", n);
    CHECK(n >= 3 && n < 64); /* tracer, owned-list slot, ring, file buffer */
}

static void test_oom_loop(void) {
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/t.tmtrace", dir);
    sweep(false, path);
    sweep(true, path);
    remove(path);
    remove(dir);
}

int main(void) {
    RUN(test_oom_loop);
    return tmem_test_finish();
}

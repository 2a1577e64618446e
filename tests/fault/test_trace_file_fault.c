/* OS fault sweep over the trace file path: start a file trace, emit events,
 * stop, load the file, export HTML and Chrome JSON (over 1 MiB, so it is
 * written in pieces) to files. Every injected failure (create, write, read,
 * open, close...) must end in a clean error, with no fd or mapping leaked,
 * no partial export left behind, no empty trace file left by a failed start,
 * and a trace cut by a write error still loadable as incomplete (or refused
 * with a clean status). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "os/os.h"
#include "trace/trace_internal.h"

#define EVENTS 9000 /* Chrome JSON of this many marks is over 1 MiB */

enum phase { PH_CONTEXT, PH_START, PH_EMIT, PH_STOP, PH_LOAD, PH_HTML, PH_JSON, PH_DONE };

typedef struct scen {
    tmem_context *ctx;
    tmem_trace_data *data;
    enum phase phase;
    char dir[256], trace[300], html[300], json[300];
} scen;

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static tmem_status scenario(void *u) {
    scen *s = u;
    s->phase = PH_CONTEXT;
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 20;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES; /* its OS probes are benign: the sweep is about files */
    tmem_status st = tmem_context_create(&cd, &s->ctx);
    if (st != TMEM_OK) return st;
    s->phase = PH_START;
    tmem_trace_desc td = {0};
    td.path = s->trace;
    td.buffer_size = 64u << 10; /* several buffered writes for EVENTS marks */
    if ((st = tmem_trace_start(s->ctx, &td)) != TMEM_OK) return st;
    s->phase = PH_EMIT;
    char name[32];
    for (int i = 0; i < EVENTS; i++) {
        snprintf(name, sizeof name, "step %d", i);
        if ((st = tmem_trace_mark(s->ctx, name)) != TMEM_OK) return st;
    }
    s->phase = PH_STOP;
    if ((st = tmem_trace_stop(s->ctx)) != TMEM_OK) return st;
    s->phase = PH_LOAD;
    if ((st = tmem_trace_load(s->trace, &s->data)) != TMEM_OK) return st;
    if (!s->data->complete || s->data->count != EVENTS) return TMEM_E_CORRUPT; /* a disarmed run must round-trip */
    s->phase = PH_HTML;
    tmem_report_desc rd = {0};
    rd.width = 320, rd.height = 200;
    if ((st = tmem_trace_export_file(s->data, TMEM_TRACE_FORMAT_HTML, &rd, s->html)) != TMEM_OK) return st;
    s->phase = PH_JSON;
    if ((st = tmem_trace_export_file(s->data, TMEM_TRACE_FORMAT_CHROME_JSON, NULL, s->json)) != TMEM_OK) return st;
    s->phase = PH_DONE;
    return TMEM_OK;
}

static bool check(void *u, tmem_status st) {
    scen *s = u;
    if (st == TMEM_OK) return exists(s->html) && exists(s->json);
    /* No half-written export, ever. */
    if (s->phase <= PH_HTML && exists(s->html)) return false;
    if (s->phase <= PH_JSON && exists(s->json)) return false;
    /* A start that failed left no (empty) trace file. */
    if (s->phase <= PH_START && exists(s->trace)) return false;
    if (s->phase == PH_STOP) {
        /* A write failed while streaming: the file keeps the whole buffers
         * written before; loading it (disarmed) gives a clean refusal or the
         * events read so far, never a complete-looking trace. */
        if (st != TMEM_E_IO || !exists(s->trace)) return false;
        tmem__os_fault_disarm();
        tmem_trace_data *d = NULL;
        tmem_status lst = tmem_trace_load(s->trace, &d);
        bool ok = lst == TMEM_OK ? !d->complete || d->count < EVENTS : lst == TMEM_E_CORRUPT || lst == TMEM_E_PARSE;
        tmem_trace_data_destroy(d);
        return ok;
    }
    return s->phase < PH_STOP || st == TMEM_E_IO || st == TMEM_E_NO_MEMORY;
}

static void cleanup(void *u) {
    scen *s = u;
    tmem_trace_data_destroy(s->data);
    s->data = NULL;
    tmem_context_destroy(s->ctx);
    s->ctx = NULL;
    unlink(s->trace);
    unlink(s->html);
    unlink(s->json);
}

static void test_sweep(void) {
    scen s = {0};
    REQUIRE(tmem_test_tmpdir(s.dir, sizeof s.dir));
    snprintf(s.trace, sizeof s.trace, "%s/t.tmtrace", s.dir);
    snprintf(s.html, sizeof s.html, "%s/r.html", s.dir);
    snprintf(s.json, sizeof s.json, "%s/r.json", s.dir);
    tmem_test_sweep_desc d = {0};
    d.label = "trace_file";
    d.scenario = scenario;
    d.cleanup = cleanup;
    d.check = check;
    d.user = &s;
    uint64_t n = tmem_test_fault_sweep_ex(&d);
    printf("swept %llu OS calls\n", (unsigned long long)n);
    /* create + >=2 stream writes, open + >=2 reads, create + write for HTML,
     * create + >=2 one-MiB pieces for JSON */
    CHECK(n >= 11);
    d.err = ENOSPC; /* a full disk: the same clean errors */
    CHECK(tmem_test_fault_sweep_ex(&d) == n);
    rmdir(s.dir);
}

/* A write refused by the OS (EIO, every time): the export reports
 * TMEM_E_IO and removes its file; a data save does the same. */
static void test_write_failure_removes_file(void) {
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/r.txt", dir);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_trace_desc td = {0};
    td.capacity = 64;
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    CHECK_OK(tmem_trace_mark(ctx, "x"));
    tmem_trace_data *snap = NULL;
    REQUIRE_OK(tmem_trace_snapshot(ctx, &snap));
    int64_t fds = tmem__os_live_fds();
    tmem__os_fault_arm(TMEM__OS_WRITE, 0, true, EIO);
    CHECK_ST(tmem_trace_export_file(snap, TMEM_TRACE_FORMAT_PEAK_TEXT, NULL, path), TMEM_E_IO);
    CHECK(tmem__os_fault_fired());
    CHECK(!exists(path));
    CHECK_ST(tmem_trace_data_save(snap, path), TMEM_E_IO);
    tmem__os_fault_disarm();
    CHECK(!exists(path));
    CHECK(tmem__os_live_fds() == fds);
    /* and healthy again */
    CHECK_OK(tmem_trace_data_save(snap, path));
    CHECK(exists(path));
    unlink(path);
    tmem_trace_data_destroy(snap);
    CHECK_OK(tmem_trace_stop(ctx));
    tmem_context_destroy(ctx);
    rmdir(dir);
}

int main(void) {
    RUN(test_sweep);
    RUN(test_write_failure_removes_file);
    return tmem_test_finish();
}

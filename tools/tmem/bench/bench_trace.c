/* tmem bench trace [--json] [--ops N]: what tracing costs.
 *
 * The same allocate/free loop on a general heap (a window of 64 live
 * blocks, sizes 256 B..16 KiB) runs with tracing never started (the
 * baseline), started then stopped, recording into the ring, and streaming to
 * a file; each is reported as ns per alloc+free and as a ratio to the
 * baseline measured in the same run. Also: the off-path hook alone (ns per
 * call of the library's trace hook with no tracer, through the testing API:
 * typedmem/testing.h), and how fast a full ring is exported.
 * Times are the thread's CPU time, not wall time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench/bench.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "typedmem/testing.h"
#include "typedmem/typedmem.h"

/* CPU time of this thread (user + system): on a shared, loaded machine the
 * wall clock mostly measures the other processes. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum { MODE_OFF, MODE_STOPPED, MODE_RING, MODE_FILE, MODE_COUNT };
static const char *const mode_names[MODE_COUNT] = {"off (never started)", "started, then stopped",
                                                   "ring (65536 events)", "file stream"};

/* ns per alloc+free pair, or < 0 on error. */
static double loop(tmem_context *ctx, tmem_heap *heap, uint64_t ops) {
    enum { WINDOW = 64 };
    tmem_alloc_info live[WINDOW];
    memset(live, 0, sizeof live);
    uint64_t x = 88172645463325252ull;
    tmem_alloc_desc ad = {0};
    ad.role = -1;
    ad.name = "bench.block";
    double t0 = now_s();
    for (uint64_t i = 0; i < ops; i++) {
        tmem_alloc_info *slot = &live[i % WINDOW];
        if (i >= WINDOW && tmem_heap_free_offset(heap, slot->offset) != TMEM_OK) return -1;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ad.size = 256u << (x % 7);
        if (tmem_heap_alloc_ex(heap, &ad, slot) != TMEM_OK) return -1;
    }
    double dt = now_s() - t0;
    for (uint64_t i = 0; i < WINDOW && i < ops; i++)
        if (tmem_heap_free_offset(heap, live[i].offset) != TMEM_OK) return -1;
    (void)ctx;
    return dt * 1e9 / (double)ops;
}

int tmem_bench_trace(int argc, char **argv, bool json) {
    uint64_t ops = 400000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--ops")) {
            if (!tmem_cli_value_u64("tmem bench trace", a, v, 1000, UINT64_MAX, &ops)) return 2;
            i++;
        } else if (strcmp(a, "--json")) {
            fprintf(stderr, "usage: tmem bench trace [--json] [--ops N]\n");
            return 2;
        }
    }
    char path[] = "/tmp/tmem-bench-traceXXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);

    double ns[MODE_COUNT] = {0};
    uint64_t recorded[MODE_COUNT] = {0}, file_bytes = 0;
    tmem_progress prog;
    tmem_progress_begin(&prog, "bench trace", MODE_COUNT * 3 + 2);
    int rc = 0;
    for (int rep = 0; rep < 3 && !rc; rep++) { /* best of 3, modes interleaved */
        for (int m = 0; m < MODE_COUNT && !rc; m++) {
            tmem_context_desc cd = {0};
            cd.budget = 1ull << 30;
            tmem_context *ctx;
            tmem_type *act;
            tmem_heap *heap = NULL;
            tmem_heap_desc hd = {0};
            if (tmem_context_create(&cd, &ctx) != TMEM_OK) { rc = 1; break; }
            if (tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act) != TMEM_OK) rc = 1;
            hd.type = act, hd.role = TMEM_ROLE_ACTIVATION, hd.size = 8u << 20, hd.flags = TMEM_HEAP_COMMIT_ALL;
            if (!rc && tmem_heap_create(ctx, &hd, &heap) != TMEM_OK) rc = 1;
            tmem_trace_desc td = {0};
            if (m == MODE_FILE) td.path = path;
            if (!rc && m != MODE_OFF && tmem_trace_start(ctx, &td) != TMEM_OK) rc = 1;
            if (!rc && m == MODE_STOPPED && tmem_trace_stop(ctx) != TMEM_OK) rc = 1;
            double v = rc ? -1 : loop(ctx, heap, ops);
            if (v < 0) rc = 1;
            else if (!ns[m] || v < ns[m]) ns[m] = v;
            tmem_trace_info info;
            if (!rc && tmem_trace_get_info(ctx, &info) == TMEM_OK) {
                recorded[m] = info.recorded;
                if (m == MODE_FILE) file_bytes = info.file_bytes;
            }
            if (!rc && (m == MODE_RING || m == MODE_FILE) && tmem_trace_stop(ctx) != TMEM_OK) rc = 1;
            tmem_heap_destroy(heap);
            tmem_context_destroy(ctx);
            tmem_progress_update(&prog, (uint64_t)(rep * MODE_COUNT + m + 1));
        }
    }

    /* The off path alone: the inline hook with no tracer, 20M calls. */
    double hook_ns = 0, export_html_s = 0, export_chrome_s = 0, snap_s = 0;
    size_t html_len = 0, chrome_len = 0;
    uint64_t snap_events = 0;
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    if (!rc && tmem_context_create(&cd, &ctx) == TMEM_OK) {
        enum { CALLS = 20000000 };
        tmem_type *act = NULL;
        if (tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act) != TMEM_OK) act = NULL;
        double t0 = now_s();
        tmem_testing_trace_hook(ctx, act, CALLS);
        hook_ns = (now_s() - t0) * 1e9 / CALLS;
        tmem_progress_update(&prog, MODE_COUNT * 3 + 1);
        /* A full ring: snapshot and export. */
        tmem_heap_desc hd = {0};
        tmem_heap *heap = NULL;
        hd.type = act, hd.role = TMEM_ROLE_ACTIVATION, hd.size = 8u << 20;
        tmem_trace_desc td = {0};
        tmem_trace_data *data = NULL;
        if (tmem_heap_create(ctx, &hd, &heap) == TMEM_OK && tmem_trace_start(ctx, &td) == TMEM_OK &&
            loop(ctx, heap, 40000) > 0) {
            double t1 = now_s();
            if (tmem_trace_snapshot(ctx, &data) == TMEM_OK) {
                snap_s = now_s() - t1;
                tmem_trace_data_info di;
                if (tmem_trace_data_get_info(data, &di) == TMEM_OK) snap_events = di.events;
                char *text = NULL;
                t1 = now_s();
                if (tmem_trace_export(data, TMEM_TRACE_FORMAT_HTML, NULL, &text, &html_len) ==
                    TMEM_OK)
                    export_html_s = now_s() - t1;
                tmem_trace_string_free(text);
                t1 = now_s();
                if (tmem_trace_export(data, TMEM_TRACE_FORMAT_CHROME_JSON, NULL, &text,
                                      &chrome_len) == TMEM_OK)
                    export_chrome_s = now_s() - t1;
                tmem_trace_string_free(text);
                tmem_trace_data_destroy(data);
            }
            if (tmem_trace_stop(ctx) != TMEM_OK) rc = 1;
        }
        tmem_heap_destroy(heap);
        tmem_context_destroy(ctx);
    }
    tmem_progress_end(&prog);
    remove(path);
    if (rc) {
        fprintf(stderr, "tmem bench trace: a heap or trace call failed\n");
        return 1;
    }
    if (json) {
        printf("{\"bench\":\"trace\",\"ops\":%llu,\"ns_per_op\":{\"off\":%.2f,\"stopped\":%.2f,"
               "\"ring\":%.2f,\"file\":%.2f},"
               "\"ratio_vs_off\":{\"stopped\":%.3f,\"ring\":%.3f,\"file\":%.3f},"
               "\"hook_off_ns\":%.3f,"
               "\"file_bytes_per_event\":%.1f,\"snapshot\":{\"events\":%llu,\"seconds\":%.4f},"
               "\"export\":{\"html_seconds\":%.4f,\"html_bytes\":%zu,\"chrome_seconds\":%.4f,"
               "\"chrome_bytes\":%zu}}\n",
               (unsigned long long)ops, ns[0], ns[1], ns[2], ns[3], ns[1] / ns[0], ns[2] / ns[0],
               ns[3] / ns[0], hook_ns,
               recorded[MODE_FILE] ? (double)file_bytes / (double)recorded[MODE_FILE] : 0.0,
               (unsigned long long)snap_events, snap_s, export_html_s, html_len, export_chrome_s,
               chrome_len);
        return 0;
    }
    printf("trace cost: %llu alloc+free pairs on a general heap, best of 3, same run "
           "(thread CPU time)\n\n",
           (unsigned long long)ops);
    printf("  %-24s %10s %10s %12s\n", "tracing", "ns/pair", "vs off", "events");
    for (int m = 0; m < MODE_COUNT; m++)
        printf("  %-24s %10.1f %9.3fx %12llu\n", mode_names[m], ns[m], ns[m] / ns[0], (unsigned long long)recorded[m]);
    printf("\n  off-path hook alone: %.2f ns per trace hook call (no tracer)\n", hook_ns);
    if (recorded[MODE_FILE])
        printf("  file stream: %.1f bytes per event\n",
               (double)file_bytes / (double)recorded[MODE_FILE]);
    printf("  full ring: snapshot of %llu events %.1f ms; HTML report %.1f ms (%zu KiB); "
           "Chrome JSON %.1f ms (%zu KiB)\n",
           (unsigned long long)snap_events, snap_s * 1e3, export_html_s * 1e3, html_len >> 10,
           export_chrome_s * 1e3, chrome_len >> 10);
    printf("\nreproduce: tmem bench trace --ops %llu%s\n", (unsigned long long)ops, "");
    return 0;
}

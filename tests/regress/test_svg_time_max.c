/* Regression: an event at time_ns = UINT64_MAX (found by libFuzzer's
 * trace_file target) made the SVG timeline convert a double past 2^64 to
 * uint64_t (UB, src/trace/export_svg.c). Every export of such a trace must
 * succeed (UBSan in `make test-asan` turns the old bug into a crash). The
 * same trace is fuzz/trace_file/corpus/time_max.tmtrace; `test_svg_time_max
 * PATH` writes it. */
#include <stdlib.h>
#include "../unit/trace_fixture.h"

static tmem_trace_data *time_max_trace(void) {
    tmem_trace_data *d;
    if (tmem__trace_data_new(&d) != TMEM_OK) return NULL;
    tmem__trace_data_set_type(d, 0, "/memory/kv", 0);
    tmem__trace_data_set_role(d, TMEM_ROLE_KV_CACHE, "kv_cache");
    /* evenly spread up to UINT64_MAX: no idle gap to squeeze, so the
     * display span itself is ~2^64 ns */
    enum { N = 24 };
    for (int i = 0; i < N; i++) {
        tmem_trace_event ev;
        memset(&ev, 0, sizeof ev);
        ev.time_ns = i == N - 1 ? UINT64_MAX : (uint64_t)i * (UINT64_MAX / (N - 1));
        ev.kind = i % 2 ? TMEM_TRACE_FREE : TMEM_TRACE_ALLOC;
        ev.type = 0;
        ev.role = TMEM_ROLE_KV_CACHE;
        ev.size = 4096u * (1u + (unsigned)(i % 5));
        ev.offset = (uint64_t)(i / 2) * 65536;
        snprintf(ev.name, sizeof ev.name, "b%d", i / 2);
        if (tmem__trace_data_push(d, &ev) != TMEM_OK) {
            tmem_trace_data_destroy(d);
            return NULL;
        }
    }
    return d;
}

static void test_exports(void) {
    tmem_trace_data *d = time_max_trace();
    REQUIRE(d);
    tmem_report_desc rd = {0};
    rd.width = 320, rd.height = 200;
    for (int f = 0; f < TMEM_TRACE_FORMAT_COUNT; f++) {
        char *text = NULL;
        size_t len = 0;
        CHECK_OK(tmem_trace_export(d, (tmem_trace_format)f, &rd, &text, &len));
        CHECK(text && strlen(text) == len);
        tmem_trace_string_free(text);
    }
    tmem_trace_data_destroy(d);
}

int main(int argc, char **argv) {
    if (argc == 2) { /* write the corpus file */
        tmem_trace_data *d = time_max_trace();
        tmem_status st = d ? tmem_trace_data_save(d, argv[1]) : TMEM_E_NO_MEMORY;
        tmem_trace_data_destroy(d);
        return st == TMEM_OK ? 0 : 1;
    }
    RUN(test_exports);
    return tmem_test_finish();
}

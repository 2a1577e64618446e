/* Fuzz the trace file reader (tmem_trace_load_memory), then every consumer
 * of what it accepts: peak analysis, all exporters, and a save/load round
 * trip that must give back the same events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "trace/trace_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tmem_trace_data *d = NULL;
    tmem_status st = tmem_trace_load_memory(data, size, &d);
    if (st != TMEM_OK) {
        if (d || (st != TMEM_E_PARSE && st != TMEM_E_CORRUPT && st != TMEM_E_NO_MEMORY)) abort();
        return 0;
    }
    for (uint64_t i = 0; i < d->count; i++)
        if (!tmem__trace_event_valid(&d->events[i]) || (i && d->events[i].time_ns < d->events[i - 1].time_ns)) abort();
    tmem_trace_peak_info peak;
    if (tmem_trace_peak(d, &peak) != TMEM_OK) abort();
    tmem_report_desc rd = {0};
    rd.width = 320, rd.height = 200; /* keep the SVG small: speed */
    for (int f = 0; f < TMEM_TRACE_FORMAT_COUNT; f++) {
        char *text = NULL;
        size_t len = 0;
        if (tmem_trace_export(d, (tmem_trace_format)f, &rd, &text, &len) != TMEM_OK || strlen(text) != len) abort();
        tmem_trace_string_free(text);
    }
    /* Round trip through the writer. */
    char *buf = NULL;
    size_t len = 0;
    tmem__text sb;
    tmem__text_init(&sb);
    tmem__trace_write_all(d, &sb);
    if (tmem__text_take(&sb, &buf, &len) != TMEM_OK) abort();
    tmem_trace_data *again = NULL;
    if (tmem_trace_load_memory(buf, len, &again) != TMEM_OK || again->count != d->count || !again->complete) abort();
    if (d->count && memcmp(again->events, d->events, d->count * sizeof *d->events) != 0) {
        /* names are compared as strings: bytes after the NUL are not kept */
        for (uint64_t i = 0; i < d->count; i++)
            if (again->events[i].time_ns != d->events[i].time_ns || strcmp(again->events[i].name, d->events[i].name)) abort();
    }
    tmem_trace_data_destroy(again);
    free(buf);
    tmem_trace_data_destroy(d);
    return 0;
}

/* Chrome / Perfetto trace JSON (the Trace Event Format's JSON Object form):
 *   - "M" metadata names the process and each thread;
 *   - "C" counter events: "in use by type", "in use by role" and "committed
 *     by type", one arg per series, re-emitted whenever a value changes, so
 *     chrome://tracing stacks them and ui.perfetto.dev shows a track per arg;
 *     "budget" is a counter too, drawn flat over the whole trace;
 *   - "i" instant events for budget denials, evictions, purges, aliasing,
 *     pressure changes, surface lock/unlock and user marks.
 * Timestamps are microseconds with nanosecond decimals. */
#include <string.h>
#include "trace/trace_internal.h"

enum { PID = 1 };

static void ts(tmem__text *sb, uint64_t ns) {
    tmem__text_printf(sb, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

/* One counter event whose args are values[i] for every i set in `shown`. */
static void counter(tmem__text *sb, const tmem_trace_data *d, const char *name, uint64_t ns, const uint64_t *values,
                    const bool *shown, uint32_t n, bool roles) {
    tmem__text_printf(sb, ",\n{\"ph\":\"C\",\"pid\":%d,\"tid\":0,\"name\":\"%s\",\"ts\":", PID, name);
    ts(sb, ns);
    tmem__text_puts(sb, ",\"args\":{");
    bool first = true;
    for (uint32_t i = 0; i < n; i++) {
        if (!shown[i]) continue;
        char tmp[32];
        const char *label = roles ? tmem__trace_role_label(d, i == TMEM_ROLE_MAX ? -1 : (int32_t)i, tmp, sizeof tmp)
                                  : tmem__trace_type_label(d, (int32_t)i, tmp, sizeof tmp);
        tmem__text_puts(sb, first ? "\"" : ",\"");
        tmem__text_json_escape(sb, label);
        tmem__text_printf(sb, "\":%llu", (unsigned long long)values[i]);
        first = false;
    }
    tmem__text_puts(sb, "}}");
}

static void instant(tmem__text *sb, const tmem_trace_data *d, const tmem_trace_event *ev) {
    static const char *const pressure[] = {"normal", "warning", "critical"};
    char tmp[32];
    bool global = ev->kind == TMEM_TRACE_BUDGET_DENIED || ev->kind == TMEM_TRACE_PRESSURE || ev->kind == TMEM_TRACE_MARK;
    tmem__text_printf(sb, ",\n{\"ph\":\"i\",\"s\":\"%s\",\"pid\":%d,\"tid\":%u,\"cat\":\"%s\",\"name\":\"", global ? "g" : "t",
                    PID, ev->thread, tmem_trace_kind_name(ev->kind));
    if (ev->kind == TMEM_TRACE_PRESSURE) {
        tmem__text_printf(sb, "pressure %s", ev->offset < 3 ? pressure[ev->offset] : "?");
    } else {
        tmem__text_puts(sb, tmem_trace_kind_name(ev->kind));
        if (ev->name[0]) {
            tmem__text_puts(sb, " ");
            tmem__text_json_escape(sb, ev->name);
        }
    }
    tmem__text_puts(sb, "\",\"ts\":");
    ts(sb, ev->time_ns);
    tmem__text_printf(sb, ",\"args\":{\"size\":%llu,\"offset\":%llu,\"type\":\"", (unsigned long long)ev->size,
                    (unsigned long long)ev->offset);
    tmem__text_json_escape(sb, tmem__trace_type_label(d, ev->type, tmp, sizeof tmp));
    tmem__text_puts(sb, "\",\"role\":\"");
    tmem__text_json_escape(sb, tmem__trace_role_label(d, ev->role, tmp, sizeof tmp));
    tmem__text_puts(sb, "\"}}");
}

tmem_status tmem__export_chrome(const tmem_trace_data *d, tmem__text *sb) {
    /* Which series exist: a stable set of args keeps the stacking steady. */
    bool type_shown[TMEM_TRACE_TYPE_MAX] = {0}, commit_shown[TMEM_TRACE_TYPE_MAX] = {0}, role_shown[TMEM_ROLE_MAX + 1] = {0};
    bool any_commit = false;
    for (uint64_t i = 0; i < d->count; i++) {
        const tmem_trace_event *ev = &d->events[i];
        if (ev->kind == TMEM_TRACE_ALLOC) {
            if (ev->type >= 0) type_shown[ev->type] = true;
            role_shown[ev->role >= 0 ? ev->role : TMEM_ROLE_MAX] = true;
        } else if (ev->kind == TMEM_TRACE_COMMIT && ev->type >= 0) {
            commit_shown[ev->type] = any_commit = true;
        }
    }
    uint64_t end = d->count ? d->events[d->count - 1].time_ns : 0;
    tmem__text_printf(sb, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"typedmem %d.%d.%d\",\"events\":%llu,"
                        "\"dropped\":%llu,\"budget\":%llu,\"complete\":%s},\n\"traceEvents\":[\n"
                        "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"typedmem\"}}",
                    TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH, (unsigned long long)d->count,
                    (unsigned long long)d->dropped, (unsigned long long)d->budget, d->complete ? "true" : "false", PID);
    for (uint32_t t = 1; t <= d->thread_count; t++)
        tmem__text_printf(sb, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"thread %u\"}}", PID, t, t);
    if (d->budget) {
        for (int k = 0; k < 2; k++) {
            tmem__text_printf(sb, ",\n{\"ph\":\"C\",\"pid\":%d,\"tid\":0,\"name\":\"budget\",\"ts\":", PID);
            ts(sb, k ? end : 0);
            tmem__text_printf(sb, ",\"args\":{\"bytes\":%llu}}", (unsigned long long)d->budget);
        }
    }
    tmem__replay r;
    tmem_status st = tmem__replay_init(&r, d);
    if (st != TMEM_OK) return st;
    while (tmem__replay_step(&r)) {
        const tmem_trace_event *ev = &d->events[r.next - 1];
        switch (ev->kind) {
        case TMEM_TRACE_ALLOC:
        case TMEM_TRACE_FREE:
        case TMEM_TRACE_RESET:
            counter(sb, d, "in use by type", ev->time_ns, r.type_in_use, type_shown, TMEM_TRACE_TYPE_MAX, false);
            counter(sb, d, "in use by role", ev->time_ns, r.role_in_use, role_shown, TMEM_ROLE_MAX + 1, true);
            break;
        case TMEM_TRACE_COMMIT:
        case TMEM_TRACE_DECOMMIT:
            if (any_commit) counter(sb, d, "committed by type", ev->time_ns, r.type_committed, commit_shown, TMEM_TRACE_TYPE_MAX, false);
            break;
        default:
            instant(sb, d, ev);
        }
    }
    bool failed = r.failed;
    tmem__replay_free(&r);
    tmem__text_puts(sb, "\n]}\n");
    return failed ? tmem__err(TMEM_E_NO_MEMORY) : TMEM_OK;
}

/* "What was alive at the peak" as plain text, and the summary JSON (peak,
 * contributors, per-kind counts; schema in docs/trace.md). */
#include <string.h>
#include "trace/trace_internal.h"

static void text_table(tmem__text *sb, const char *title, const tmem_trace_contributor *rows, uint32_t n, uint32_t top,
                       uint64_t total) {
    char a[32];
    tmem__text_printf(sb, "\n  by %s:\n", title);
    for (uint32_t i = 0; i < n && i < top; i++) {
        double pct = total ? 100.0 * (double)rows[i].bytes / (double)total : 0;
        tmem__text_printf(sb, "    %-40s %12s %5.1f%% %8u live\n", rows[i].label, tmem__fmt_bytes(rows[i].bytes, a, sizeof a), pct, rows[i].count);
    }
    if (!n) tmem__text_puts(sb, "    (nothing)\n");
}

void tmem__export_peak_text(const tmem_trace_data *d, const tmem_trace_peak_info *p, uint32_t top, tmem__text *sb) {
    char a[32], b[32], c[32];
    tmem__text_printf(sb, "trace: %llu events, %llu dropped, %.3f ms%s\n", (unsigned long long)d->count,
                    (unsigned long long)d->dropped, d->count ? d->events[d->count - 1].time_ns / 1e6 : 0.0,
                    d->complete ? "" : " (incomplete file)");
    tmem__text_printf(sb, "peak in use: %s at %.3f ms (event %llu), %llu allocations alive\n",
                    tmem__fmt_bytes(p->peak_bytes, a, sizeof a), p->peak_time_ns / 1e6, (unsigned long long)p->peak_event,
                    (unsigned long long)p->live_count);
    tmem__text_printf(sb, "peak committed: %s; budget: %s; budget denials: %llu; evicted: %s\n",
                    tmem__fmt_bytes(p->peak_committed, a, sizeof a), d->budget ? tmem__fmt_bytes(d->budget, b, sizeof b) : "unknown",
                    (unsigned long long)p->budget_denials, tmem__fmt_bytes(p->evicted_bytes, c, sizeof c));
    if (p->unmatched_frees)
        tmem__text_printf(sb, "note: %llu frees had no allocation in the trace (made before the start, or dropped)\n",
                        (unsigned long long)p->unmatched_frees);
    tmem__text_puts(sb, "alive at the peak:");
    text_table(sb, "role", p->by_role, p->by_role_count, top, p->peak_bytes);
    text_table(sb, "type", p->by_type, p->by_type_count, top, p->peak_bytes);
    text_table(sb, "name", p->by_name, p->by_name_count, top, p->peak_bytes);
}

static void json_rows(tmem__text *sb, const char *key, const tmem_trace_contributor *rows, uint32_t n, bool first) {
    tmem__text_printf(sb, "%s\"%s\":[", first ? "" : ",", key);
    for (uint32_t i = 0; i < n; i++) {
        tmem__text_puts(sb, i ? ",{\"label\":\"" : "{\"label\":\"");
        tmem__text_json_escape(sb, rows[i].label);
        tmem__text_printf(sb, "\",\"id\":%d,\"bytes\":%llu,\"count\":%u}", rows[i].id, (unsigned long long)rows[i].bytes, rows[i].count);
    }
    tmem__text_puts(sb, "]");
}

void tmem__export_summary_json(const tmem_trace_data *d, const tmem_trace_peak_info *p, tmem__text *sb) {
    uint64_t kinds[TMEM_TRACE_KIND_COUNT] = {0};
    for (uint64_t i = 0; i < d->count; i++) kinds[d->events[i].kind]++;
    tmem__text_printf(sb, "{\"version\":1,\"events\":%llu,\"dropped\":%llu,\"complete\":%s,\"duration_ns\":%llu,\"budget\":%llu,"
                        "\"peak\":{\"bytes\":%llu,\"time_ns\":%llu,\"event\":%llu,\"live\":%llu,\"committed\":%llu,"
                        "\"committed_time_ns\":%llu},\"unmatched_frees\":%llu,\"budget_denials\":%llu,\"evicted_bytes\":%llu,\"kinds\":{",
                    (unsigned long long)d->count, (unsigned long long)d->dropped, d->complete ? "true" : "false",
                    (unsigned long long)(d->count ? d->events[d->count - 1].time_ns : 0), (unsigned long long)d->budget,
                    (unsigned long long)p->peak_bytes, (unsigned long long)p->peak_time_ns, (unsigned long long)p->peak_event,
                    (unsigned long long)p->live_count, (unsigned long long)p->peak_committed,
                    (unsigned long long)p->peak_committed_time_ns, (unsigned long long)p->unmatched_frees,
                    (unsigned long long)p->budget_denials, (unsigned long long)p->evicted_bytes);
    for (uint32_t k = 0; k < TMEM_TRACE_KIND_COUNT; k++)
        tmem__text_printf(sb, "%s\"%s\":%llu", k ? "," : "", tmem_trace_kind_name(k), (unsigned long long)kinds[k]);
    tmem__text_puts(sb, "},\"types\":[");
    bool first = true;
    for (uint32_t t = 0; t < TMEM_TRACE_TYPE_MAX; t++) {
        if (!d->type_names[t]) continue;
        tmem__text_printf(sb, "%s{\"index\":%u,\"name\":\"", first ? "" : ",", t);
        tmem__text_json_escape(sb, d->type_names[t]);
        tmem__text_printf(sb, "\",\"budget\":%llu}", (unsigned long long)d->type_budgets[t]);
        first = false;
    }
    tmem__text_puts(sb, "],\"alive_at_peak\":{");
    json_rows(sb, "by_role", p->by_role, p->by_role_count, true);
    json_rows(sb, "by_type", p->by_type, p->by_type_count, false);
    json_rows(sb, "by_name", p->by_name, p->by_name_count, false);
    tmem__text_puts(sb, "}}\n");
}

/* Tracing for the whole session and the HTML report at its end, through the
 * trace layer's report API (the same one `tmem report` uses): the timeline,
 * what was alive at the peak, the prefill plan's picture, and two notes (the
 * prediction against what was committed, and the stats table). */
#include <stdlib.h>
#include <string.h>
#include "demo/demo_session.h"

tmem_status demo_step_trace(session *s) {
    if (!s->opt->trace_path) return TMEM_OK;
    tmem_trace_desc td = {0};
    td.path = s->opt->trace_path; /* streamed: no ring in the process, nothing to skew the footprint */
    tmem_status st = tmem_trace_start(s->ctx, &td);
    s->traced = st == TMEM_OK;
    return st;
}

static char *plan_svg(const demo_plan *p) {
    tmem_plan_svg_desc d = {0};
    d.title = "prefill activation arena: one plan for every layer (DeltaNet block, then attention block)";
    size_t len = 0;
    if (tmem_plan_svg(p->plan, &d, NULL, 0, &len) != TMEM_OK) return NULL;
    char *buf = malloc(len + 1);
    if (buf && tmem_plan_svg(p->plan, &d, buf, len + 1, &len) != TMEM_OK) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

/* Per role: the fit lines charged to it (summed: the recurrent state and its
 * snapshot are one role) against that role's in-use peak. */
static char *prediction_note(session *s) {
    size_t cap = 4096, n = 0;
    char *t = malloc(cap);
    if (!t) return NULL;
    n += (size_t)snprintf(t + n, cap - n, "%-20s %-20s %12s %12s   %s\n", "role", "type", "predicted", "in use peak",
                          "fit lines");
    uint64_t done = 0;
    for (uint32_t i = 0; i < s->fit.item_count && n < cap; i++) {
        const tmem_fit_item *it = &s->fit.items[i];
        if (done & (1ull << it->role)) continue;
        done |= 1ull << it->role;
        uint64_t predicted = 0;
        char lines[160] = "";
        size_t ln = 0;
        for (uint32_t j = i; j < s->fit.item_count; j++) {
            if (s->fit.items[j].role != it->role) continue;
            predicted += s->fit.items[j].bytes;
            if (ln < sizeof lines)
                ln += (size_t)snprintf(lines + ln, sizeof lines - ln, "%s%s", ln ? " + " : "", s->fit.items[j].what);
        }
        tmem_role_stats rs;
        char act[32] = "-";
        if (tmem_role_get_stats(s->ctx, it->role, &rs) == TMEM_OK)
            snprintf(act, sizeof act, "%8.1f MiB", demo_mib(rs.in_use.peak));
        n += (size_t)snprintf(t + n, cap - n, "%-20s %-20s %8.1f MiB %12s   %s%s\n", tmem_role_name(s->ctx, it->role),
                              it->type_name, demo_mib(predicted), act, lines, it->clean ? " (clean)" : "");
    }
    return t;
}

tmem_status demo_step_report(session *s) {
    if (!s->opt->trace_path || !s->traced) return TMEM_OK;
    s->traced = false;
    tmem_status st = tmem_trace_stop(s->ctx);
    if (st != TMEM_OK || !s->opt->report_path) return st;
    tmem_trace_data *data;
    if ((st = tmem_trace_load(s->opt->trace_path, &data)) != TMEM_OK) return st;
    size_t need = 0;
    DEMO_IGNORE(tmem_stats_table(s->ctx, NULL, 0, &need));
    char *table = malloc(need ? need : 1), *svg = s->own->prefill.plan ? plan_svg(&s->own->prefill) : NULL;
    char *pred = s->fit.item_count ? prediction_note(s) : NULL;
    if (table && tmem_stats_table(s->ctx, table, need, NULL) != TMEM_OK) table[0] = '\0';
    tmem_report_note notes[2] = {
        {"prediction (tmem_fit) and what the session used", pred ? pred : ""},
        {"accounting at the end of the session (tmem_stats_table)", table ? table : ""},
    };
    tmem_report_desc rd = {0};
    rd.title = "typedmem demo: a Qwen3.5-0.8B-shaped VLM session";
    rd.plan_svg = svg;
    rd.plan_caption = "Offsets the planner gave the prefill layer graph's buffers (time on x, offset on y); the arena "
                      "is bound once and reused by all 24 layers of every chunk.";
    rd.notes = notes;
    rd.note_count = 2;
    st = tmem_trace_export_file(data, TMEM_TRACE_FORMAT_HTML, &rd, s->opt->report_path);
    if (st == TMEM_OK && s->res) {
        s->res->report_written = true;
        snprintf(s->res->report, sizeof s->res->report, "%s", s->opt->report_path);
    }
    free(table);
    free(svg);
    free(pred);
    tmem_trace_data_destroy(data);
    return st;
}

/* Tracing for the whole session and the HTML report at its end, through the
 * trace layer's report API (the same one `tmem report` uses): the timeline,
 * what was alive at the peak, the prefill plan's picture, and two notes (the
 * prediction against what was committed, and the stats table). */
#include <stdlib.h>
#include <string.h>
#include "demo_session.h"

tmem_status demo_step_trace(session *s) {
    if (!s->opt->trace_path) return TMEM_OK;
    tmem_trace_desc td = {0};
    td.path = s->opt->trace_path; /* streamed: no ring in the process, nothing to skew the footprint */
    return tmem_trace_start(s->ctx, &td);
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

/* "what   role   predicted   actual" for each fit line. */
static char *prediction_note(session *s) {
    size_t cap = 4096, n = 0;
    char *t = malloc(cap);
    if (!t) return NULL;
    n += (size_t)snprintf(t + n, cap - n, "%-20s %-18s %12s %12s\n", "fit line", "type", "predicted", "in use peak");
    uint64_t seen = 0; /* a role with several lines: actual on its first */
    for (uint32_t i = 0; i < s->fit.item_count && n < cap; i++) {
        const tmem_fit_item *it = &s->fit.items[i];
        tmem_role_stats rs;
        char act[32] = "";
        if (!it->clean && !(seen & (1ull << it->role)) && tmem_role_get_stats(s->ctx, it->role, &rs) == TMEM_OK)
            snprintf(act, sizeof act, "%9.1f MiB", demo_mib(rs.in_use.peak));
        seen |= 1ull << it->role;
        n += (size_t)snprintf(t + n, cap - n, "%-20s %-18s %8.1f MiB %12s\n", it->what, it->type_name,
                              demo_mib(it->bytes), act);
    }
    return t;
}

tmem_status demo_step_report(session *s) {
    if (!s->opt->trace_path) return TMEM_OK;
    tmem_status st = tmem_trace_stop(s->ctx);
    if (st != TMEM_OK || !s->opt->report_path) return st;
    tmem_trace_data *data;
    if ((st = tmem_trace_load(s->opt->trace_path, &data)) != TMEM_OK) return st;
    size_t need = 0;
    DEMO_IGNORE(tmem_stats_table(s->ctx, NULL, 0, &need));
    char *table = malloc(need ? need : 1), *svg = plan_svg(&s->own->prefill), *pred = prediction_note(s);
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

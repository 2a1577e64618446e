/* The SVG timeline: in-use bytes stacked by type over time, the committed
 * total as a line, the budget as a dashed line, the in-use peak marked, and
 * ticks for budget denials (red) and user marks (grey).
 *
 * A trace can hold millions of events, so it is drawn in one column per
 * pixel. Each column shows the state at the event with the highest in-use
 * total inside it, so the peak is drawn exactly, never averaged away; columns
 * without events carry the state left by the previous one. */
#include <stdlib.h>
#include <string.h>
#include "trace/trace_internal.h"

const char *tmem__trace_color(uint32_t i) {
    static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
                                          "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1b9e77", "#7570b3"};
    return palette[i % (sizeof palette / sizeof palette[0])];
}

enum { LEFT = 78, RIGHT = 210, TOP = 34, BOTTOM = 46 };

/* Idle stretches (no event for more than a tenth of the trace, e.g. while
 * the weights are read) are drawn narrow, so the busy parts get the width;
 * each is marked on the chart with its real length. */
enum { MAX_GAPS = 16 };
typedef struct gap { uint64_t start, end; } gap;

typedef struct layout {
    uint32_t w, h, cols, plot_h;
    uint64_t t_end, y_max;
    gap gaps[MAX_GAPS];     /* sorted by start, disjoint */
    uint32_t ngaps;
    uint64_t gap_keep;      /* display length of each gap, ns */
    uint64_t d_end;         /* display length of the whole trace, ns */
} layout;

/* Real time -> display time (gaps squeezed to gap_keep). */
/* floor(a * b / d) in exact integer arithmetic (times near UINT64_MAX: a
 * double product could round past 2^64, and converting that back is UB).
 * Callers keep a <= d, so the result is <= b. d = 0 gives 0. */
static uint64_t scale_u64(uint64_t a, uint64_t b, uint64_t d) {
    __extension__ typedef unsigned __int128 u128;
    return d ? (uint64_t)((u128)a * b / d) : 0;
}

static uint64_t disp(const layout *l, uint64_t t) {
    uint64_t cut = 0;
    for (uint32_t i = 0; i < l->ngaps; i++) {
        const gap *g = &l->gaps[i];
        uint64_t len = g->end - g->start;
        if (t >= g->end) {
            cut += len - l->gap_keep;
        } else {
            if (t > g->start) cut += (t - g->start) - scale_u64(t - g->start, l->gap_keep, len);
            break;
        }
    }
    return t - cut;
}

static void find_gaps(layout *l, const tmem_trace_data *d) {
    l->ngaps = 0;
    l->gap_keep = 0;
    uint64_t thr = l->t_end / 10;
    for (uint64_t i = 1; thr && i < d->count; i++) {
        uint64_t a = d->events[i - 1].time_ns, b = d->events[i].time_ns;
        if (b - a <= thr) continue;
        if (l->ngaps == MAX_GAPS) { /* keep the longest: replace the shortest if this one is longer */
            uint32_t m = 0;
            for (uint32_t k = 1; k < MAX_GAPS; k++)
                if (l->gaps[k].end - l->gaps[k].start < l->gaps[m].end - l->gaps[m].start) m = k;
            if (l->gaps[m].end - l->gaps[m].start >= b - a) continue;
            memmove(&l->gaps[m], &l->gaps[m + 1], (MAX_GAPS - 1 - m) * sizeof l->gaps[0]);
            l->ngaps--;
        }
        l->gaps[l->ngaps++] = (gap){a, b}; /* found in time order: stays sorted */
    }
    /* Each gap keeps 1/40 of the busy time: visible, never dominant. */
    uint64_t idle = 0;
    for (uint32_t i = 0; i < l->ngaps; i++) idle += l->gaps[i].end - l->gaps[i].start;
    l->gap_keep = (l->t_end - idle) / 40;
    l->d_end = disp(l, l->t_end);
}

/* Display time -> real time (the inverse of disp), for the hover readout. */
static uint64_t undisp(const layout *l, uint64_t dt) {
    uint64_t cut = 0;
    for (uint32_t i = 0; i < l->ngaps; i++) {
        const gap *g = &l->gaps[i];
        uint64_t ds = g->start - cut, len = g->end - g->start;
        if (dt < ds) break;
        if (dt < ds + l->gap_keep) return g->start + scale_u64(dt - ds, len, l->gap_keep ? l->gap_keep : 1);
        cut += len - l->gap_keep;
    }
    return dt + cut;
}

static double xof(const layout *l, uint64_t t) { return LEFT + (double)disp(l, t) * l->cols / (double)(l->d_end ? l->d_end : 1); }
static double yof(const layout *l, uint64_t v) { return TOP + l->plot_h - (double)v * l->plot_h / (double)l->y_max; }
static uint32_t col_of(const layout *l, uint64_t t) {
    uint64_t c = l->d_end ? scale_u64(disp(l, t), l->cols - 1, l->d_end) : 0;
    return (uint32_t)(c < l->cols ? c : l->cols - 1);
}

/* A round step near range/5 in 1-2-5 decades. */
static uint64_t nice_decimal(uint64_t range) {
    uint64_t raw = range / 5 ? range / 5 : 1, p = 1;
    while (p <= raw / 10) p *= 10;
    uint64_t step = p;
    while (step < raw) step = step == p ? 2 * p : step == 2 * p ? 5 * p : (p *= 10);
    return step;
}

/* The smallest 1-2-5 decade value >= x (x >= 1). */
static uint64_t nice_at_least(uint64_t x) {
    uint64_t p = 1;
    while (p <= UINT64_MAX / 10 && p * 10 <= x) p *= 10;
    if (p >= x) return p;
    if (p <= UINT64_MAX / 2 && 2 * p >= x) return 2 * p;
    if (p <= UINT64_MAX / 5 && 5 * p >= x) return 5 * p;
    return p <= UINT64_MAX / 10 ? 10 * p : p;
}

/* Byte axis: a 1-2-5 step in the unit (B, KiB, MiB, GiB...) of the range, so
 * the labels read "16 MiB", "32 MiB" rather than "47.7 MiB". */
static uint64_t nice_bytes_step(uint64_t range, uint64_t *unit_out) {
    uint64_t unit = 1;
    while (unit < (1ull << 60) && range / (unit << 10) >= 2) unit <<= 10;
    *unit_out = unit;
    return nice_decimal(range / unit) * unit;
}

/* Time axis unit: the largest of ns, us, ms, s that keeps the range >= 2. */
typedef struct time_unit { uint64_t ns; const char *name; } time_unit;
static time_unit pick_time_unit(uint64_t range) {
    static const time_unit units[] = {{1000000000ull, "s"}, {1000000ull, "ms"}, {1000ull, "us"}, {1ull, "ns"}};
    for (size_t i = 0; i < 3; i++)
        if (range / units[i].ns >= 2) return units[i];
    return units[3];
}

/* Every label of the byte axis in the one unit of its step ("500 MiB",
 * "1000 MiB", "1500 MiB"), never a mix of "1000 MiB" and "1.46 GiB". */
static void axis_units(uint64_t bytes, uint64_t unit, char *buf, size_t cap) {
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    unsigned u = 0;
    for (uint64_t x = unit; x > 1 && u < 6; x >>= 10) u++;
    if (!bytes) snprintf(buf, cap, "0");
    else if (bytes % unit == 0) snprintf(buf, cap, "%llu %s", (unsigned long long)(bytes / unit), names[u]);
    else snprintf(buf, cap, "%.1f %s", (double)bytes / (double)unit, names[u]);
}

/* `decimals` digits after the point (enough for the tick step). */
static void time_label(uint64_t ns, time_unit u, int decimals, char *buf, size_t cap) {
    if (!ns) snprintf(buf, cap, "0 %s", u.name);
    else snprintf(buf, cap, "%.*f %s", decimals, (double)ns / (double)u.ns, u.name);
}

static int step_decimals(uint64_t step, time_unit u) {
    int dec = 0;
    for (uint64_t scale = u.ns; dec < 3 && step % scale; scale /= 10) dec++;
    return dec;
}

/* Label of series i: a type, or a role (index TMEM_ROLE_MAX = no role). */
static const char *series_label(const tmem_trace_data *d, bool by_role, uint32_t i, char *buf, size_t cap) {
    if (by_role) return tmem__trace_role_label(d, i == TMEM_ROLE_MAX ? -1 : (int32_t)i, buf, cap);
    return tmem__trace_type_label(d, (int32_t)i, buf, cap);
}

tmem_status tmem__export_svg(const tmem_trace_data *d, const tmem_report_desc *opt, const tmem_trace_peak_info *peak,
                             bool by_role, tmem__text *sb) {
    layout l = {0};
    l.w = opt && opt->width ? (opt->width < 300 ? 300 : opt->width) : 1100;
    l.h = opt && opt->height ? (opt->height < 200 ? 200 : opt->height) : 420;
    l.cols = l.w - LEFT - RIGHT;
    l.plot_h = l.h - TOP - BOTTOM;
    l.t_end = d->count ? d->events[d->count - 1].time_ns : 0;
    uint32_t span = by_role ? TMEM_ROLE_MAX + 1 : tmem__trace_type_span(d);
    find_gaps(&l, d);

    /* Columns: per-type in-use at the column's highest point, committed max. */
    uint64_t *vals = calloc((size_t)l.cols * (span ? span : 1), sizeof *vals);
    uint64_t *committed = calloc(l.cols, sizeof *committed);
    uint64_t *best = calloc(l.cols, sizeof *best);
    tmem__replay r;
    if (!vals || !committed || !best || tmem__replay_init(&r, d) != TMEM_OK) {
        free(vals), free(committed), free(best);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    int64_t cur = -1;
    bool have_best = false;
    uint64_t type_max[TMEM_TRACE_TYPE_MAX + TMEM_ROLE_MAX + 1] = {0}; /* per series */
    for (uint64_t i = 0; i < d->count; i++) {
        uint32_t c = col_of(&l, d->events[i].time_ns);
        if ((int64_t)c != cur) {
            for (int64_t k = cur + 1; k < (int64_t)c; k++) { /* gap: state before this event */
                memcpy(vals + (size_t)k * span, by_role ? r.role_in_use : r.type_in_use, span * sizeof *vals);
                committed[k] = r.committed;
                best[k] = r.in_use;
            }
            cur = c;
            have_best = false;
        }
        if (!tmem__replay_step(&r)) break;
        if (!have_best || r.in_use > best[c]) {
            memcpy(vals + (size_t)c * span, by_role ? r.role_in_use : r.type_in_use, span * sizeof *vals);
            best[c] = r.in_use;
            have_best = true;
        }
        if (r.committed > committed[c]) committed[c] = r.committed;
    }
    for (int64_t k = cur + 1; k < (int64_t)l.cols; k++) {
        memcpy(vals + (size_t)k * span, by_role ? r.role_in_use : r.type_in_use, span * sizeof *vals);
        committed[k] = r.committed;
    }
    bool failed = r.failed;
    tmem__replay_free(&r);
    if (failed) {
        free(vals), free(committed), free(best);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    for (uint32_t c = 0; c < l.cols; c++)
        for (uint32_t t = 0; t < span; t++)
            if (vals[(size_t)c * span + t] > type_max[t]) type_max[t] = vals[(size_t)c * span + t];

    /* Y range: the in-use peak, and committed/budget when they are not far
     * above it (else they are written as labels): the areas must stay readable. */
    uint64_t top = peak->peak_bytes;
    bool committed_on_scale = top == 0 || peak->peak_committed <= top * 2;
    if (committed_on_scale && peak->peak_committed > top) top = peak->peak_committed;
    bool budget_on_scale = d->budget && (top == 0 || d->budget <= top * 2);
    if (budget_on_scale && d->budget > top) top = d->budget;
    if (top == 0) top = 1024;
    uint64_t yunit;
    uint64_t step = nice_bytes_step(top, &yunit);
    if (tmem__mul_overflow(top / step + 1, step, &l.y_max)) l.y_max = UINT64_MAX; /* hostile sizes */
    time_unit tu = pick_time_unit(l.t_end);
    /* One round step for the whole axis, from the drawn (squeezed) length:
     * the smallest that keeps ticks ~70 px apart. Time runs at the same
     * scale in every busy stretch, so the ticks are evenly spaced in each;
     * only the gaps (grey bands with a break) are squeezed. */
    uint64_t tstep = nice_at_least(scale_u64(70, l.d_end, l.cols) + 1);
    int tdec = step_decimals(tstep, tu);

    tmem__text_printf(sb, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" class=\"tmem-timeline\" "
                        "width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" font-family=\"sans-serif\" font-size=\"12\">\n"
                        "<title>typedmem timeline: in-use bytes by %s</title>\n"
                        "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#ffffff\"/>\n",
                    by_role ? "tmem-timeline-role" : "tmem-timeline", l.w, l.h, l.w, l.h, by_role ? "role" : "memory type", l.w, l.h);
    char a[32], b[32];
    /* grid + axes */
    tmem__text_puts(sb, "<g class=\"axis\" stroke=\"#dddddd\">\n");
    for (uint64_t k = 0; k <= l.y_max / step; k++) { /* counted: v += step could wrap */
        uint64_t v = k * step;
        axis_units(v, yunit, a, sizeof a);
        tmem__text_printf(sb, "<line x1=\"%d\" x2=\"%u\" y1=\"%.1f\" y2=\"%.1f\"/><text x=\"%d\" y=\"%.1f\" fill=\"#444\" stroke=\"none\" text-anchor=\"end\">%s</text>\n",
                        LEFT, LEFT + l.cols, yof(&l, v), yof(&l, v), LEFT - 6, yof(&l, v) + 4, a);
    }
    /* Time ticks: 0 and round multiples of one step inside each busy stretch
     * (between gaps), so every label is a round time ("2 s", "4 s"); a gap's
     * squeezed stretch is marked by its band and break, not by an odd tick
     * at its edge. One too close to the previous is left out. Counted per
     * stretch, so hostile times cannot make the loop long. */
    double last_x = -1e9;
    for (uint32_t seg = 0; seg <= l.ngaps; seg++) {
        uint64_t s0 = seg ? l.gaps[seg - 1].end : 0, s1 = seg < l.ngaps ? l.gaps[seg].start : l.t_end;
        uint64_t first = s0 / tstep + (s0 % tstep != 0);
        for (uint64_t k = 0; k <= (s1 - s0) / tstep + 1; k++) {
            uint64_t t = k == 0 ? s0 : (first + k - 1) * tstep;
            if (t > s1 || (k && t == s0) || (k == 0 && seg)) continue;
            double x = xof(&l, t);
            if (x - last_x < 60) continue;
            last_x = x;
            time_label(t, tu, tdec, a, sizeof a);
            tmem__text_printf(sb, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%u\"/><text x=\"%.1f\" y=\"%u\" fill=\"#444\" stroke=\"none\" text-anchor=\"middle\">%s</text>\n",
                            x, x, TOP, TOP + l.plot_h, x, TOP + l.plot_h + 16, a);
        }
    }
    tmem__text_printf(sb, "</g>\n<text x=\"%d\" y=\"%u\" fill=\"#444\">time since trace start%s</text>\n", LEFT, l.h - 8,
                    l.ngaps ? " (grey bands: idle stretches drawn narrow)" : "");
    for (uint32_t g = 0; g < l.ngaps; g++) {
        double x0 = xof(&l, l.gaps[g].start), x1 = xof(&l, l.gaps[g].end);
        time_label(l.gaps[g].end - l.gaps[g].start, tu, 2, a, sizeof a);
        tmem__text_printf(sb, "<g class=\"gap\" data-ns=\"%llu\"><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%u\" fill=\"#eeeeee\"/>"
                            "<path d=\"M%.1f %u l4 -6 l4 12 l4 -6\" fill=\"none\" stroke=\"#888\"/></g>\n",
                        (unsigned long long)(l.gaps[g].end - l.gaps[g].start), x0, TOP, x1 - x0 > 1 ? x1 - x0 : 1, l.plot_h,
                        (x0 + x1) / 2 - 6, TOP + l.plot_h);
    }

    /* stacked areas, bottom to top in type order */
    uint32_t shown = 0;
    tmem__text_puts(sb, "<g class=\"series-group\">\n");
    for (uint32_t t = 0; t < span; t++) {
        if (!type_max[t]) continue;
        tmem__text_printf(sb, "<path class=\"series\" data-series=\"");
        tmem__text_xml_escape(sb, series_label(d, by_role, t, a, sizeof a));
        tmem__text_printf(sb, "\" data-max=\"%llu\" fill=\"%s\" fill-opacity=\"0.85\" stroke=\"none\" d=\"", (unsigned long long)type_max[t], tmem__trace_color(by_role ? t + 5 : t));
        for (uint32_t c = 0; c < l.cols; c++) { /* upper edge, left to right */
            uint64_t sum = 0;
            for (uint32_t u = 0; u <= t; u++) sum = tmem__add_sat(sum, vals[(size_t)c * span + u]);
            tmem__text_printf(sb, "%s%u %.1f", c ? "L" : "M", LEFT + c, yof(&l, sum));
        }
        for (uint32_t c = l.cols; c-- > 0;) { /* lower edge back */
            uint64_t sum = 0;
            for (uint32_t u = 0; u < t; u++) sum = tmem__add_sat(sum, vals[(size_t)c * span + u]);
            tmem__text_printf(sb, "L%u %.1f", LEFT + c, yof(&l, sum));
        }
        tmem__text_puts(sb, "Z\"><title>");
        tmem__text_xml_escape(sb, series_label(d, by_role, t, a, sizeof a));
        tmem__text_printf(sb, " (max %s)</title></path>\n", tmem__fmt_bytes(type_max[t], b, sizeof b));
        shown++;
    }
    tmem__text_puts(sb, "</g>\n");
    /* The gaps' lengths, over the areas: dark text on a white halo. */
    for (uint32_t g = 0; g < l.ngaps; g++) {
        double xm = (xof(&l, l.gaps[g].start) + xof(&l, l.gaps[g].end)) / 2 + 4;
        time_label(l.gaps[g].end - l.gaps[g].start, tu, 2, a, sizeof a);
        tmem__text_printf(sb, "<text class=\"gap-label\" x=\"%.1f\" y=\"%u\" fill=\"#333\" stroke=\"#fff\" stroke-width=\"3\" "
                            "paint-order=\"stroke\" font-size=\"10\" transform=\"rotate(-90 %.1f %u)\">idle %s</text>\n",
                        xm, TOP + l.plot_h - 6, xm, TOP + l.plot_h - 6, a);
    }
    if (peak->peak_committed && !committed_on_scale)
        tmem__text_printf(sb, "<text class=\"committed-off\" x=\"%d\" y=\"%d\" fill=\"#222\">committed: up to %s (above the scale)</text>\n",
                        LEFT + 4, TOP - 8, tmem__fmt_bytes(peak->peak_committed, b, sizeof b));
    if (peak->peak_committed && committed_on_scale) {
        tmem__text_puts(sb, "<path class=\"committed\" fill=\"none\" stroke=\"#222222\" stroke-width=\"1.5\" d=\"");
        for (uint32_t c = 0; c < l.cols; c++) tmem__text_printf(sb, "%s%u %.1f", c ? "L" : "M", LEFT + c, yof(&l, committed[c]));
        tmem__text_puts(sb, "\"><title>committed (all types)</title></path>\n");
    }
    if (d->budget) {
        tmem__fmt_bytes(d->budget, a, sizeof a);
        if (budget_on_scale)
            tmem__text_printf(sb, "<g class=\"budget\" data-bytes=\"%llu\"><line x1=\"%d\" x2=\"%u\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>"
                                "<text x=\"%u\" y=\"%.1f\" fill=\"#d62728\" text-anchor=\"end\">budget %s</text></g>\n",
                            (unsigned long long)d->budget, LEFT, LEFT + l.cols, yof(&l, d->budget), yof(&l, d->budget),
                            LEFT + l.cols - 4, yof(&l, d->budget) - 4, a);
        else
            tmem__text_printf(sb, "<g class=\"budget\" data-bytes=\"%llu\"><text x=\"%u\" y=\"%d\" fill=\"#d62728\" text-anchor=\"end\">budget %s (above the scale)</text></g>\n",
                            (unsigned long long)d->budget, LEFT + l.cols - 4, TOP - 8, a);
    }
    /* denials and marks */
    uint32_t marks = 0;
    double last_label_x = -1e9;
    for (uint64_t i = 0; i < d->count; i++) {
        const tmem_trace_event *ev = &d->events[i];
        double x = xof(&l, ev->time_ns);
        if (ev->kind == TMEM_TRACE_BUDGET_DENIED) {
            tmem__text_printf(sb, "<path class=\"denial\" fill=\"#d62728\" d=\"M%.1f %d l-5 -9 h10 z\"><title>budget denied: %s ", x, TOP, tmem__fmt_bytes(ev->size, a, sizeof a));
            tmem__text_xml_escape(sb, ev->name);
            tmem__text_puts(sb, "</title></path>\n");
        } else if (ev->kind == TMEM_TRACE_MARK && marks < 200) {
            tmem__text_printf(sb, "<g class=\"mark\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%u\" stroke=\"#888888\" stroke-dasharray=\"2 3\"/>", x, x, TOP, TOP + l.plot_h);
            /* Marks closer than a label's height fan out to the right, each
             * label joined to its line by a leader, so none hides another. */
            double lx = x - last_label_x >= 12 ? x : last_label_x + 12;
            if (marks < 64 && lx <= LEFT + l.cols) {
                last_label_x = lx;
                if (lx > x)
                    tmem__text_printf(sb, "<path class=\"leader\" d=\"M%.1f %d V%d H%.1f V%d\" fill=\"none\" stroke=\"#999\"/>",
                                    x, TOP, TOP - 5, lx, TOP + 2);
                tmem__text_printf(sb, "<text x=\"%.1f\" y=\"%d\" fill=\"#444\" stroke=\"#fff\" stroke-width=\"3\" "
                                    "paint-order=\"stroke\" font-size=\"10\" transform=\"rotate(-90 %.1f %d)\" "
                                    "text-anchor=\"end\">", lx + 3, TOP + 4, lx + 3, TOP + 4);
                tmem__text_xml_escape(sb, ev->name);
                tmem__text_puts(sb, "</text>");
            }
            tmem__text_puts(sb, "<title>");
            tmem__text_xml_escape(sb, ev->name);
            tmem__text_puts(sb, "</title></g>\n");
            marks++;
        }
    }
    if (peak->peak_bytes) {
        double x = xof(&l, peak->peak_time_ns), y = yof(&l, peak->peak_bytes);
        tmem__fmt_bytes(peak->peak_bytes, a, sizeof a);
        time_label(peak->peak_time_ns, tu, tdec + 1, b, sizeof b);
        bool left = x > LEFT + l.cols * 0.7;
        tmem__text_printf(sb, "<g class=\"peak\" data-bytes=\"%llu\" data-time-ns=\"%llu\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%u\" stroke=\"#000\" stroke-width=\"1\"/>"
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#000\"/><text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\" text-anchor=\"%s\">peak %s at %s</text></g>\n",
                        (unsigned long long)peak->peak_bytes, (unsigned long long)peak->peak_time_ns, x, x, y, TOP + l.plot_h, x, y,
                        left ? x - 8 : x + 8, y < TOP + 14 ? y + 14 : y - 6, left ? "end" : "start", a, b);
    }
    if (!d->count) tmem__text_printf(sb, "<text x=\"%u\" y=\"%u\" text-anchor=\"middle\" fill=\"#888\">no events</text>\n", LEFT + l.cols / 2, TOP + l.plot_h / 2);

    /* legend */
    uint32_t ly = TOP;
    tmem__text_printf(sb, "<g class=\"legend\" transform=\"translate(%u 0)\">\n", LEFT + l.cols + 16);
    for (uint32_t t = 0; t < span; t++) {
        if (!type_max[t]) continue;
        tmem__text_printf(sb, "<g class=\"legend-item\" data-series=\"");
        tmem__text_xml_escape(sb, series_label(d, by_role, t, a, sizeof a));
        tmem__text_printf(sb, "\"><rect x=\"0\" y=\"%u\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"18\" y=\"%u\">", ly, tmem__trace_color(by_role ? t + 5 : t), ly + 10);
        tmem__text_xml_escape(sb, series_label(d, by_role, t, a, sizeof a));
        tmem__text_puts(sb, "</text></g>\n");
        ly += 18;
    }
    if (peak->peak_committed && committed_on_scale) {
        tmem__text_printf(sb, "<g class=\"legend-item\"><line x1=\"0\" x2=\"12\" y1=\"%u\" y2=\"%u\" stroke=\"#222\" stroke-width=\"1.5\"/><text x=\"18\" y=\"%u\">committed</text></g>\n", ly + 6, ly + 6, ly + 10);
        ly += 18;
    }
    if (d->budget)
        tmem__text_printf(sb, "<g class=\"legend-item\"><line x1=\"0\" x2=\"12\" y1=\"%u\" y2=\"%u\" stroke=\"#d62728\" stroke-dasharray=\"4 2\" stroke-width=\"1.5\"/><text x=\"18\" y=\"%u\">budget</text></g>\n", ly + 6, ly + 6, ly + 10);
    tmem__text_puts(sb, "</g>\n");

    /* Per-column values of the drawn series, read by the HTML report's
     * hover readout (plain data: the SVG alone ignores it). */
    tmem__text_printf(sb, "<g class=\"hover-data\" data-left=\"%d\" data-top=\"%d\" data-height=\"%u\" data-peak-col=\"%d\" data-series=\"",
                    LEFT, TOP, l.plot_h, peak->peak_bytes ? (int)col_of(&l, peak->peak_time_ns) : -1);
    bool first = true;
    for (uint32_t t = 0; t < span; t++) {
        if (!type_max[t]) continue;
        if (!first) tmem__text_puts(sb, "|");
        first = false;
        const char *label = series_label(d, by_role, t, a, sizeof a);
        for (const char *c = label; *c; c++) { /* '|' separates names */
            char one[2] = {*c == '|' ? '/' : *c, 0};
            tmem__text_xml_escape(sb, one);
        }
    }
    tmem__text_puts(sb, "\" data-times=\"");
    for (uint32_t c = 0; c < l.cols; c++)
        tmem__text_printf(sb, "%s%.3f", c ? "," : "", undisp(&l, scale_u64(c, l.d_end, l.cols - 1)) / 1e6);
    tmem__text_puts(sb, "\" data-values=\"");
    for (uint32_t c = 0; c < l.cols; c++) {
        first = true;
        if (c) tmem__text_puts(sb, ";");
        for (uint32_t t = 0; t < span; t++) {
            if (!type_max[t]) continue;
            tmem__text_printf(sb, first ? "%llu" : ",%llu", (unsigned long long)vals[(size_t)c * span + t]);
            first = false;
        }
    }
    tmem__text_puts(sb, "\"/>\n</svg>\n");
    (void)shown;
    free(vals), free(committed), free(best);
    return TMEM_OK;
}

/*
 * The picture people use to judge a plan: time on x, offset on y (0 at the
 * bottom), one rectangle per buffer with a <title> tooltip, the lower bound
 * as a dashed line and the arena as a solid one. Standalone SVG 1.1, so it
 * opens in a browser or embeds in an HTML report as it is.
 */
#include "plan_internal.h"
#include <stdlib.h>

/* "34.0 MiB" for a byte count (offsets here are bytes); small values as they are. */
static const char *human(uint64_t v, char *buf, size_t cap) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (v < 1024) {
        snprintf(buf, cap, "%llu", (unsigned long long)v);
        return buf;
    }
    double x = (double)v;
    unsigned u = 0;
    while (x >= 1024.0 && u < 6) x /= 1024.0, u++;
    snprintf(buf, cap, "%.*f %s", x < 10 ? 2 : x < 100 ? 1 : 0, x, unit[u]);
    return buf;
}

void tmem__plan_svg_text(const tmem_plan *pl, const tmem_plan_svg_desc *d, tmem__text *s) {
    uint32_t w = d && d->width ? d->width : 960, h = d && d->height ? d->height : 540;
    const double ml = 130, mr = 20, mt = 40, mb = 40; /* margins: axis labels */
    double W = w + ml + mr, H = h + mt + mb;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (uint32_t i = 0; i < pl->n; i++) {
        if (pl->items[i].start < t0) t0 = pl->items[i].start;
        if (pl->items[i].end > t1) t1 = pl->items[i].end;
    }
    if (pl->n == 0) t0 = 0, t1 = 1;
    double span = (double)t1 - (double)t0, top = (double)(pl->info.arena ? pl->info.arena : 1);
    double lbv = (double)pl->info.lower_bound;
    if (lbv > top) top = lbv;
#define X(t) (ml + ((double)(t) - (double)t0) / span * w)
#define Y(o) (mt + h - (double)(o) / top * h)
    tmem__text_printf(s,
                      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
                      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
                      W, H, W, H);
    tmem__text_printf(s, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", W, H);
    if (d && d->title) {
        tmem__text_printf(s, "<text x=\"%.1f\" y=\"22\" font-size=\"15\">", ml);
        tmem__text_xml_escape(s, d->title);
        tmem__text_printf(s, "</text>\n");
    }
    /* axes */
    tmem__text_printf(s, "<g stroke=\"#444\" fill=\"none\"><path d=\"M%.1f %.1f V%.1f H%.1f\"/></g>\n", ml, mt, mt + h,
                      ml + w);
    tmem__text_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time</text>\n", ml + w / 2, H - 8);
    tmem__text_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%lld</text>\n", ml,
                      mt + h + 16, (long long)t0);
    tmem__text_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%lld</text>\n", ml + w,
                      mt + h + 16, (long long)t1);
    tmem__text_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>\n", ml - 6, mt + h);
    /* buffers: hue from the index so neighbours differ */
    tmem__text_printf(s, "<g stroke=\"#222\" stroke-width=\"0.3\">\n");
    for (uint32_t i = 0; i < pl->n; i++) {
        const tmem__plan_item *it = &pl->items[i];
        double x = X(it->start), x2 = X(it->end), y = Y(it->offset + it->size), y2 = Y(it->offset);
        unsigned hue = (i * 137u) % 360u;
        tmem__text_printf(
            s,
            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"hsl(%u,60%%,70%%)\"><title>",
            x, y, x2 - x > 0.2 ? x2 - x : 0.2, y2 - y > 0.2 ? y2 - y : 0.2, hue);
        tmem__text_xml_escape(s, pl->ids + it->id);
        tmem__text_printf(s, ": size %llu, [%lld, %lld), offset %llu</title></rect>\n", (unsigned long long)it->size,
                          (long long)it->start, (long long)it->end, (unsigned long long)it->offset);
    }
    tmem__text_printf(s, "</g>\n");
    /* lower bound and arena */
    /* labels in units people read (34.0 MiB), the exact count in the tooltip */
    char a[32];
    tmem__text_printf(
        s,
        "<path d=\"M%.1f %.2f H%.1f\" stroke=\"#c00\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n"
        "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\" fill=\"#c00\">LB %s<title>lower bound %llu</title></text>\n",
        ml, Y(lbv), ml + w, ml - 6, Y(lbv) + 14, human(pl->info.lower_bound, a, sizeof a),
        (unsigned long long)pl->info.lower_bound); /* below the line: arena sits above */
    tmem__text_printf(
        s,
        "<path d=\"M%.1f %.2f H%.1f\" stroke=\"#06c\" stroke-width=\"1\"/>\n"
        "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\" fill=\"#06c\">arena %s<title>arena %llu</title></text>\n",
        ml, Y(pl->info.arena), ml + w, ml - 6, Y(pl->info.arena) - 4,
        human(pl->info.arena, a, sizeof a), (unsigned long long)pl->info.arena);
    tmem__text_printf(s, "</svg>\n");
#undef X
#undef Y
}

tmem_status tmem_plan_svg(const tmem_plan *pl, const tmem_plan_svg_desc *d, char *buf, size_t cap,
                          size_t *len) {
    if (len) *len = 0;
    if (!pl || !len || (!buf && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__text s;
    tmem__text_init_fixed(&s, buf, cap);
    tmem__plan_svg_text(pl, d, &s);
    if (s.failed) return tmem__err(TMEM_E_NO_MEMORY);
    *len = s.len;
    TMEM__IGNORE(tmem__text_finish(&s, NULL)); /* clipped is fine: *len says */
    return TMEM_OK;
}

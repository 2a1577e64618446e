/* The HTML report: one self-contained file (inline CSS, inline SVG, a few
 * lines of inline script, a Content-Security-Policy that forbids any network
 * fetch) with the summary cards, the SVG timeline, "what was alive at the
 * peak", the plan picture given by the caller, event counts and notes.
 *
 * No script but ours can run, by construction: everything we write from
 * data is escaped text or our own SVG; the caller's plan picture goes in as
 * an <img> with a data: URL (an SVG image runs no script and loads nothing);
 * the CSP allows exactly one inline script, named by its SHA-256. */
#include <ctype.h>
#include <string.h>
#include "trace/trace_internal.h"

static const char css[] =
    "body{font-family:-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px;color:#222;background:#fafafa;max-width:1240px}"
    "h1{margin:0 0 4px;font-size:24px}h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid #ddd;padding-bottom:4px}"
    ".sub{color:#666;margin:0 0 16px}.cards{display:flex;flex-wrap:wrap;gap:10px}"
    ".card{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:10px 14px;min-width:140px}"
    ".card .v{font-size:20px;font-weight:600}.card .k{color:#666;font-size:12px}"
    ".panel{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:10px;overflow-x:auto}"
    ".tables{display:flex;flex-wrap:wrap;gap:16px}.tables table{flex:1 1 360px}"
    "table{border-collapse:collapse;font-size:13px;background:#fff}th,td{padding:3px 8px;text-align:left;border-bottom:1px solid #eee}"
    "td:first-child{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.bar{height:8px;background:#4e79a7;border-radius:2px}"
    ".sw{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}"
    "pre{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:10px;overflow-x:auto;font-size:12px}"
    ".hint{color:#888;font-size:12px}footer{margin-top:32px;color:#888;font-size:12px}"
    "svg.tmem-timeline{max-width:100%;height:auto;display:block}"; /* narrow windows: scale, do not cut */

/* Legend click hides/shows a series; hovering a timeline shows the time and
 * the bytes of each series under the pointer (from g.hover-data). At load
 * the readout is drawn once at the peak column and hidden again, so the
 * browser test exercises it (data-hover-ok); data-report-ready proves the
 * whole script ran. */
static const char script[] =
    "(function(){var NS='http://www.w3.org/2000/svg';"
    "function fmt(b){var u=['B','KiB','MiB','GiB','TiB','PiB'],i=0;while(b>=1024&&i<5){b/=1024;i++;}"
    "return (i?b.toFixed(b<10?2:1):b)+' '+u[i];}"
    "function el(n,a){var e=document.createElementNS(NS,n);for(var k in a)e.setAttribute(k,a[k]);return e;}"
    "document.querySelectorAll('svg.tmem-timeline').forEach(function(s){"
    "s.querySelectorAll('.legend-item[data-series]').forEach(function(item){item.style.cursor='pointer';"
    "item.addEventListener('click',function(){var n=item.getAttribute('data-series');"
    "s.querySelectorAll('path.series').forEach(function(p){if(p.getAttribute('data-series')===n){"
    "var h=p.style.display==='none';p.style.display=h?'':'none';item.style.opacity=h?'1':'0.35';}});});});"
    "var d=s.querySelector('g.hover-data');if(!d)return;"
    "var names=d.getAttribute('data-series').split('|'),cols=d.getAttribute('data-values').split(';'),"
    "times=d.getAttribute('data-times').split(','),left=+d.getAttribute('data-left'),top=+d.getAttribute('data-top'),"
    "hgt=+d.getAttribute('data-height'),W=+s.getAttribute('width');"
    "var g=el('g',{'class':'hover',visibility:'hidden','pointer-events':'none'}),"
    "line=el('line',{y1:top,y2:top+hgt,stroke:'#333'}),box=el('rect',{fill:'#fff',stroke:'#999','fill-opacity':'0.95'}),"
    "txt=el('text',{'font-size':'11'});g.appendChild(line);g.appendChild(box);g.appendChild(txt);s.appendChild(g);"
    "function show(c){if(!(c>=0&&c<cols.length)){g.setAttribute('visibility','hidden');return false;}"
    "var x=left+c+0.5,v=cols[c]?cols[c].split(','):[],tot=0,rows=[];"
    "for(var i=v.length-1;i>=0;i--){var n=+v[i];tot+=n;if(n>0)rows.push(names[i]+': '+fmt(n));}"
    "rows.unshift(times[c]+' ms  \u2014  in use '+fmt(tot));"
    "line.setAttribute('x1',x);line.setAttribute('x2',x);while(txt.firstChild)txt.removeChild(txt.firstChild);"
    "rows.forEach(function(r,i){var t=el('tspan',{x:0,dy:i?'1.25em':'0'});t.textContent=r;txt.appendChild(t);});"
    "g.setAttribute('visibility','visible');var bb=txt.getBBox(),bx=x+10;if(bx+bb.width+10>W)bx=x-10-bb.width;"
    "txt.setAttribute('transform','translate('+bx+','+(top+16)+')');"
    "box.setAttribute('x',bx-5);box.setAttribute('y',top+4);box.setAttribute('width',bb.width+10);box.setAttribute('height',bb.height+8);"
    "return bb.width>0;}"
    "s.addEventListener('mousemove',function(e){var p=s.createSVGPoint();p.x=e.clientX;p.y=e.clientY;"
    "var q=p.matrixTransform(s.getScreenCTM().inverse());show(Math.floor(q.x-left));});"
    "s.addEventListener('mouseleave',function(){g.setAttribute('visibility','hidden');});"
    "if(show(+d.getAttribute('data-peak-col')))s.setAttribute('data-hover-ok','1');g.setAttribute('visibility','hidden');});"
    "var im=document.getElementById('tmem-plan-img');"
    "function ok(){if(im.naturalWidth>0)im.setAttribute('data-plan-loaded','1');}"
    "if(im){if(im.complete)ok();else im.addEventListener('load',ok);}"
    "document.body.setAttribute('data-report-ready','1');})();";

static const char *skip_space(const char *s) {
    while (isspace((unsigned char)*s)) s++;
    return s;
}

/* The plan picture: one <svg> element, after an optional prolog, comments
 * and doctype. Only its shape is checked: it is shown as an image, where
 * nothing in it can run. Returns the element's bounds or false. */
static bool plan_svg_bounds(const char *svg, const char **begin, size_t *len) {
    const char *s = skip_space(svg);
    for (;;) {
        const char *end = NULL;
        if (!strncmp(s, "<?", 2)) end = strstr(s, "?>");
        else if (!strncmp(s, "<!--", 4)) end = strstr(s, "-->");
        else if (!strncasecmp(s, "<!DOCTYPE", 9)) end = strchr(s, '>');
        else break;
        if (!end) return false;
        s = skip_space(end + (end[0] == '-' ? 3 : end[0] == '?' ? 2 : 1));
    }
    if (strncmp(s, "<svg", 4) || !(isspace((unsigned char)s[4]) || s[4] == '>')) return false;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n < 10 || strncmp(s + n - 6, "</svg>", 6)) return false;
    *begin = s;
    *len = n;
    return true;
}

/* 'sha256-<base64>' of the inline script, for the CSP. */
static void script_hash(tmem__text *sb) {
    unsigned char h[32];
    tmem__sha256(script, sizeof script - 1, h);
    tmem__text_puts(sb, "'sha256-");
    tmem__trace_base64(sb, h, sizeof h);
    tmem__text_puts(sb, "'");
}

static void card(tmem__text *sb, const char *key, const char *value) {
    tmem__text_puts(sb, "<div class=\"card\"><div class=\"v\">");
    tmem__text_xml_escape(sb, value);
    tmem__text_puts(sb, "</div><div class=\"k\">");
    tmem__text_xml_escape(sb, key);
    tmem__text_puts(sb, "</div></div>\n");
}

/* swatch: -1 none, else the colour offset of the matching timeline. */
static void table(tmem__text *sb, const char *what, const char *id, const tmem_trace_contributor *rows, uint32_t n,
                  uint32_t top, uint64_t total, int swatch) {
    char a[32];
    tmem__text_printf(sb, "<table id=\"%s\"><thead><tr><th>%s</th><th>bytes</th><th>share</th><th></th><th>live</th></tr></thead><tbody>\n", id, what);
    for (uint32_t i = 0; i < n && i < top; i++) {
        double pct = total ? 100.0 * (double)rows[i].bytes / (double)total : 0;
        tmem__text_puts(sb, "<tr><td>");
        if (swatch >= 0 && rows[i].id >= 0)
            tmem__text_printf(sb, "<span class=\"sw\" style=\"background:%s\"></span>", tmem__trace_color((uint32_t)(rows[i].id + swatch)));
        tmem__text_xml_escape(sb, rows[i].label);
        tmem__text_printf(sb, "</td><td class=\"n\">%s</td><td class=\"n\">%.1f%%</td><td style=\"width:120px\"><div class=\"bar\" style=\"width:%.1f%%\"></div></td><td class=\"n\">%u</td></tr>\n",
                        tmem__fmt_bytes(rows[i].bytes, a, sizeof a), pct, pct, rows[i].count);
    }
    if (!n) tmem__text_puts(sb, "<tr><td colspan=\"5\">nothing alive</td></tr>\n");
    tmem__text_puts(sb, "</tbody></table>\n");
}

/* Budget denials, evictions, purges, pressure changes and marks, in order
 * (the first 200): what a reader looks for after the peak. */
static void notable(tmem__text *sb, const tmem_trace_data *d) {
    static const char *const level[] = {"normal", "warning", "critical"};
    uint32_t shown = 0;
    uint64_t total = 0;
    char a[32], b[32];
    for (uint64_t i = 0; i < d->count; i++) {
        const tmem_trace_event *ev = &d->events[i];
        uint16_t k = ev->kind;
        if (k != TMEM_TRACE_BUDGET_DENIED && k != TMEM_TRACE_EVICT && k != TMEM_TRACE_PURGE && k != TMEM_TRACE_PRESSURE &&
            k != TMEM_TRACE_MARK)
            continue;
        if (total++ >= 200) continue;
        if (!shown++)
            tmem__text_puts(sb, "<h3>Notable events</h3>\n<table id=\"tmem-notable\"><thead><tr><th>time</th><th>event</th>"
                              "<th>type</th><th>role</th><th>bytes</th><th>name</th></tr></thead><tbody>\n");
        tmem__text_printf(sb, "<tr class=\"ev-%s\"><td class=\"n\">%.3f ms</td><td>%s</td><td>", tmem_trace_kind_name(k),
                        ev->time_ns / 1e6, tmem_trace_kind_name(k));
        /* marks and pressure belong to no type or role: a dash, not "none none" */
        if (ev->type < 0) tmem__text_puts(sb, "&mdash;");
        else tmem__text_xml_escape(sb, tmem__trace_type_label(d, ev->type, a, sizeof a));
        tmem__text_puts(sb, "</td><td>");
        if (ev->role < 0) tmem__text_puts(sb, "&mdash;");
        else tmem__text_xml_escape(sb, tmem__trace_role_label(d, ev->role, b, sizeof b));
        tmem__text_printf(sb, "</td><td class=\"n\">%s</td><td>", k == TMEM_TRACE_PRESSURE || k == TMEM_TRACE_MARK ? "" : tmem__fmt_bytes(ev->size, a, sizeof a));
        if (k == TMEM_TRACE_PRESSURE) tmem__text_puts(sb, ev->offset < 3 ? level[ev->offset] : "?");
        else tmem__text_xml_escape(sb, ev->name);
        tmem__text_puts(sb, "</td></tr>\n");
    }
    if (shown) tmem__text_puts(sb, "</tbody></table>\n");
    if (total > shown) tmem__text_printf(sb, "<p class=\"hint\">%llu more not shown.</p>\n", (unsigned long long)(total - shown));
}

tmem_status tmem__export_html_check(const tmem_report_desc *opt) {
    const char *plan;
    size_t plan_len;
    if (opt && opt->plan_svg && !plan_svg_bounds(opt->plan_svg, &plan, &plan_len)) return tmem__err(TMEM_E_INVALID_ARG);
    if (opt && opt->note_count && !opt->notes) return tmem__err(TMEM_E_INVALID_ARG);
    return TMEM_OK;
}

tmem_status tmem__export_html(const tmem_trace_data *d, const tmem_report_desc *opt, const tmem_trace_peak_info *p,
                              tmem__text *sb) {
    const char *plan = NULL;
    size_t plan_len = 0;
    tmem_status st = tmem__export_html_check(opt);
    if (st != TMEM_OK) return st;
    if (opt && opt->plan_svg) (void)plan_svg_bounds(opt->plan_svg, &plan, &plan_len);
    const char *title = opt && opt->title ? opt->title : "typedmem memory report";
    uint32_t top = opt && opt->top ? (opt->top > TMEM_TRACE_TOP_MAX ? TMEM_TRACE_TOP_MAX : opt->top) : 10;
    char a[32], b[64];

    tmem__text_puts(sb, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
                      "script-src ");
    script_hash(sb);
    tmem__text_puts(sb, "; img-src data:; base-uri 'none'; form-action 'none'\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width\">\n<title>");
    tmem__text_xml_escape(sb, title);
    tmem__text_printf(sb, "</title>\n<style>%s</style></head>\n<body>\n<header><h1>", css);
    tmem__text_xml_escape(sb, title);
    tmem__text_printf(sb, "</h1><p class=\"sub\">typedmem %d.%d.%d &middot; %llu events &middot; %.3f ms traced%s</p></header>\n",
                    TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH, (unsigned long long)d->count,
                    d->count ? d->events[d->count - 1].time_ns / 1e6 : 0.0,
                    d->complete ? "" : " &middot; <b>incomplete trace file</b>");

    tmem__text_puts(sb, "<section class=\"cards\" id=\"tmem-summary\">\n");
    card(sb, "peak in use", tmem__fmt_bytes(p->peak_bytes, a, sizeof a));
    snprintf(b, sizeof b, "%.3f ms", p->peak_time_ns / 1e6);
    card(sb, "peak reached at", b);
    card(sb, "peak committed", tmem__fmt_bytes(p->peak_committed, a, sizeof a));
    card(sb, "budget", d->budget ? tmem__fmt_bytes(d->budget, a, sizeof a) : "unknown");
    snprintf(b, sizeof b, "%llu", (unsigned long long)p->live_count);
    card(sb, "allocations alive at peak", b);
    snprintf(b, sizeof b, "%llu", (unsigned long long)p->budget_denials);
    card(sb, "budget denials", b);
    card(sb, "evicted", tmem__fmt_bytes(p->evicted_bytes, a, sizeof a));
    snprintf(b, sizeof b, "%llu", (unsigned long long)d->dropped);
    card(sb, "events dropped (ring)", b);
    tmem__text_puts(sb, "</section>\n");

    tmem__text_puts(sb, "<section id=\"tmem-timeline-section\"><h2>Timeline: in-use bytes by memory type</h2><div class=\"panel\">\n");
    if ((st = tmem__export_svg(d, opt, p, false, sb)) != TMEM_OK) return st;
    tmem__text_puts(sb, "</div><p class=\"hint\">Stacked areas: bytes in live allocations per type. Black line: committed "
                      "bytes. Dashed red: the budget. Red triangles: budget denials; grey: marks. Click a legend entry "
                      "to hide its series; hover for the values at a time.</p></section>\n");

    tmem__text_puts(sb, "<section id=\"tmem-plan-section\"><h2>Plan</h2>\n");
    if (plan) {
        tmem__text_puts(sb, "<div class=\"panel\" id=\"tmem-plan\">\n<img id=\"tmem-plan-img\" alt=\"plan picture\" "
                          "style=\"max-width:100%;height:auto\" src=\"data:image/svg+xml;base64,");
        tmem__trace_base64(sb, plan, plan_len);
        tmem__text_puts(sb, "\">\n</div>\n");
        if (opt->plan_caption) {
            tmem__text_puts(sb, "<p class=\"hint\">");
            tmem__text_xml_escape(sb, opt->plan_caption);
            tmem__text_puts(sb, "</p>\n");
        }
    } else {
        tmem__text_puts(sb, "<p class=\"hint\">No plan picture was given (tmem report --plan FILE.svg).</p>\n");
    }
    tmem__text_puts(sb, "</section>\n");

    tmem__fmt_bytes(p->peak_bytes, a, sizeof a);
    tmem__text_printf(sb, "<section id=\"tmem-peak-section\"><h2>What was alive at the peak (%s at %.3f ms)</h2>\n<div class=\"tables\">\n",
                    a, p->peak_time_ns / 1e6);
    table(sb, "role", "tmem-peak-role", p->by_role, p->by_role_count, top, p->peak_bytes, 5);
    table(sb, "type", "tmem-peak-type", p->by_type, p->by_type_count, top, p->peak_bytes, 0);
    table(sb, "name", "tmem-peak-name", p->by_name, p->by_name_count, top, p->peak_bytes, -1);
    tmem__text_puts(sb, "</div>\n");
    if (p->unmatched_frees)
        tmem__text_printf(sb, "<p class=\"hint\">%llu frees had no allocation in the trace (allocated before the trace "
                            "started, or dropped by the ring).</p>\n", (unsigned long long)p->unmatched_frees);
    tmem__text_puts(sb, "</section>\n");
    tmem__text_puts(sb, "<section id=\"tmem-timeline-role-section\"><h2>Timeline: in-use bytes by role</h2><div class=\"panel\">\n");
    if ((st = tmem__export_svg(d, opt, p, true, sb)) != TMEM_OK) return st;
    tmem__text_puts(sb, "</div></section>\n");

    uint64_t kinds[TMEM_TRACE_KIND_COUNT] = {0};
    for (uint64_t i = 0; i < d->count; i++) kinds[d->events[i].kind]++;
    tmem__text_puts(sb, "<section id=\"tmem-events-section\"><h2>Events</h2>\n<table id=\"tmem-kinds\"><thead><tr><th>kind</th><th>count</th></tr></thead><tbody>\n");
    for (uint32_t k = 0; k < TMEM_TRACE_KIND_COUNT; k++)
        tmem__text_printf(sb, "<tr><td>%s</td><td class=\"n\">%llu</td></tr>\n", tmem_trace_kind_name(k), (unsigned long long)kinds[k]);
    tmem__text_puts(sb, "</tbody></table>\n");
    notable(sb, d);
    tmem__text_puts(sb, "</section>\n");

    for (uint32_t i = 0; opt && i < opt->note_count; i++) {
        tmem__text_puts(sb, "<section class=\"note\"><h2>");
        tmem__text_xml_escape(sb, opt->notes[i].title ? opt->notes[i].title : "Note");
        tmem__text_puts(sb, "</h2><pre>");
        tmem__text_xml_escape(sb, opt->notes[i].text ? opt->notes[i].text : "");
        tmem__text_puts(sb, "</pre></section>\n");
    }
    tmem__text_printf(sb, "<footer>Generated by typedmem %d.%d.%d. The same trace as Chrome/Perfetto JSON: "
                        "<code>tmem report TRACE --chrome out.json</code>, then open it in ui.perfetto.dev or chrome://tracing.</footer>\n"
                        "<script>%s</script>\n</body></html>\n",
                    TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH, script);
    return TMEM_OK;
}

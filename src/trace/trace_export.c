/* tmem_trace_export: one entry point for every text format. */
#include <stdlib.h>
#include "trace/trace_internal.h"

tmem_status tmem_trace_export(const tmem_trace_data *d, tmem_trace_format format, const tmem_report_desc *opt, char **out,
                              size_t *out_len) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (!d || !out || (unsigned)format >= TMEM_TRACE_FORMAT_COUNT) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_trace_peak_info *peak = malloc(sizeof *peak);
    if (!peak) return tmem__err(TMEM_E_NO_MEMORY);
    tmem_status st = format == TMEM_TRACE_FORMAT_CHROME_JSON ? TMEM_OK : tmem_trace_peak(d, peak);
    tmem__strbuf sb;
    tmem__sb_init(&sb);
    if (st == TMEM_OK) {
        uint32_t top = opt && opt->top ? (opt->top > TMEM_TRACE_TOP_MAX ? TMEM_TRACE_TOP_MAX : opt->top) : 10;
        switch (format) {
        case TMEM_TRACE_FORMAT_CHROME_JSON: st = tmem__export_chrome(d, &sb); break;
        case TMEM_TRACE_FORMAT_SVG: st = tmem__export_svg(d, opt, peak, false, &sb); break;
        case TMEM_TRACE_FORMAT_SVG_ROLES: st = tmem__export_svg(d, opt, peak, true, &sb); break;
        case TMEM_TRACE_FORMAT_PEAK_TEXT: tmem__export_peak_text(d, peak, top, &sb); break;
        case TMEM_TRACE_FORMAT_SUMMARY_JSON: tmem__export_summary_json(d, peak, &sb); break;
        case TMEM_TRACE_FORMAT_HTML: st = tmem__export_html(d, opt, peak, &sb); break;
        default: st = tmem__err(TMEM_E_INVALID_ARG);
        }
    }
    free(peak);
    if (st != TMEM_OK) {
        tmem__sb_free(&sb);
        return st;
    }
    return tmem__sb_take(&sb, out, out_len);
}

tmem_status tmem_trace_export_file(const tmem_trace_data *d, tmem_trace_format format, const tmem_report_desc *opt,
                                   const char *path) {
    if (!path) return tmem__err(TMEM_E_INVALID_ARG);
    char *text;
    size_t len;
    tmem_status st = tmem_trace_export(d, format, opt, &text, &len);
    if (st != TMEM_OK) return st;
    FILE *f = fopen(path, "wb");
    if (!f) st = tmem__err(TMEM_E_IO);
    else {
        if (fwrite(text, 1, len, f) != len) st = tmem__err(TMEM_E_IO);
        if (fclose(f) != 0 && st == TMEM_OK) st = tmem__err(TMEM_E_IO);
    }
    free(text);
    return st;
}

void tmem_trace_string_free(char *text) { free(text); }

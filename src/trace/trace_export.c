/* tmem_trace_export: one entry point for every text format. */
#include <stdlib.h>
#include "trace/trace_internal.h"

/* Run the exporter of `format` into sb (a string, or a file sink). */
static tmem_status run(const tmem_trace_data *d, tmem_trace_format format,
                       const tmem_report_desc *opt, tmem__text *sb) {
    if (!d || (unsigned)format >= TMEM_TRACE_FORMAT_COUNT) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_trace_peak_info *peak = malloc(sizeof *peak);
    if (!peak) return tmem__err(TMEM_E_NO_MEMORY);
    tmem_status st = format == TMEM_TRACE_FORMAT_CHROME_JSON ? TMEM_OK : tmem_trace_peak(d, peak);
    if (st == TMEM_OK) {
        uint32_t top = opt && opt->top ? (opt->top > TMEM_TRACE_TOP_MAX ? TMEM_TRACE_TOP_MAX : opt->top) : 10;
        switch (format) {
        case TMEM_TRACE_FORMAT_CHROME_JSON: st = tmem__export_chrome(d, sb); break;
        case TMEM_TRACE_FORMAT_SVG: st = tmem__export_svg(d, opt, peak, false, sb); break;
        case TMEM_TRACE_FORMAT_SVG_ROLES: st = tmem__export_svg(d, opt, peak, true, sb); break;
        case TMEM_TRACE_FORMAT_PEAK_TEXT: tmem__export_peak_text(d, peak, top, sb); break;
        case TMEM_TRACE_FORMAT_SUMMARY_JSON: tmem__export_summary_json(d, peak, sb); break;
        case TMEM_TRACE_FORMAT_HTML: st = tmem__export_html(d, opt, peak, sb); break;
        default: st = tmem__err(TMEM_E_INVALID_ARG);
        }
    }
    free(peak);
    return st;
}

tmem_status tmem_trace_export(const tmem_trace_data *d, tmem_trace_format format,
                              const tmem_report_desc *opt, char **out, size_t *out_len) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (!out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__text sb;
    tmem__text_init(&sb);
    tmem_status st = run(d, format, opt, &sb);
    if (st != TMEM_OK) {
        tmem__text_free(&sb);
        return st;
    }
    return tmem__text_take(&sb, out, out_len);
}

/* Streams: a big trace's Chrome JSON never sits whole in memory. */
tmem_status tmem_trace_export_file(const tmem_trace_data *d, tmem_trace_format format, const tmem_report_desc *opt,
                                   const char *path) {
    if (!path || !d || (unsigned)format >= TMEM_TRACE_FORMAT_COUNT) return tmem__err(TMEM_E_INVALID_ARG);
    if (format == TMEM_TRACE_FORMAT_HTML) { /* refuse bad options before creating the file */
        tmem_status st = tmem__export_html_check(opt);
        if (st != TMEM_OK) return st;
    }
    tmem__os_afile af;
    tmem_status cst = tmem__os_afile_create(path, &af, NULL);
    if (cst != TMEM_OK) return tmem__err(cst == TMEM_E_INVALID_ARG ? cst : TMEM_E_IO);
    tmem__text sb;
    tmem__trace_text_fd(&sb, af.fd);
    tmem_status st = run(d, format, opt, &sb);
    if (st == TMEM_OK) {
        tmem__text_drain(&sb);
        if (sb.failed) st = tmem__err(sb.sink_failed ? TMEM_E_IO : TMEM_E_NO_MEMORY);
    }
    tmem__text_free(&sb);
    return tmem__trace_file_finish(&af, st);
}

void tmem_trace_string_free(char *text) { free(text); }

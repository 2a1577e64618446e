/*
 * Writing plans out: CSV (the input format plus `alignment` and `offset`,
 * readable back as fixed buffers) and a JSON summary. Both go through a small
 * sink that writes either to a FILE or into a caller's buffer (snprintf
 * style: clipped, but the full length is counted).
 */
#include "plan_internal.h"
#include <stdarg.h>
#include <string.h>

void tmem__plan_printf(tmem__plan_sink *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (s->f) {
        if (vfprintf(s->f, fmt, ap) < 0) s->failed = true;
    } else {
        size_t room = s->len < s->cap ? s->cap - s->len : 0;
        int k = vsnprintf(room ? s->buf + s->len : NULL, room, fmt, ap);
        if (k < 0) s->failed = true;
        else s->len += (size_t)k;
    }
    va_end(ap);
}

/* XML/JSON-safe text: escapes <>&"' and control bytes. */
void tmem__plan_put_escaped(tmem__plan_sink *s, const char *t) {
    for (; *t; t++) {
        unsigned char ch = (unsigned char)*t;
        switch (ch) {
        case '<': tmem__plan_printf(s, "&lt;"); break;
        case '>': tmem__plan_printf(s, "&gt;"); break;
        case '&': tmem__plan_printf(s, "&amp;"); break;
        case '"': tmem__plan_printf(s, "&quot;"); break;
        case '\'': tmem__plan_printf(s, "&#39;"); break;
        default:
            if (ch < 32 || ch == 127) tmem__plan_printf(s, "?");
            else tmem__plan_printf(s, "%c", ch);
        }
    }
}

static void put_json_string(tmem__plan_sink *s, const char *t) {
    tmem__plan_printf(s, "\"");
    for (; *t; t++) {
        unsigned char ch = (unsigned char)*t;
        if (ch == '"' || ch == '\\') tmem__plan_printf(s, "\\%c", ch);
        else if (ch < 32) tmem__plan_printf(s, "\\u%04x", ch);
        else tmem__plan_printf(s, "%c", ch);
    }
    tmem__plan_printf(s, "\"");
}

tmem_status tmem_plan_write_csv(const tmem_plan *pl, FILE *f) {
    if (!pl || !f) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__plan_sink s = {.f = f};
    tmem__plan_printf(&s, "id,lower,upper,size,alignment,offset\n");
    for (uint32_t i = 0; i < pl->n && !s.failed; i++) {
        const tmem__plan_item *it = &pl->items[i];
        /* ids never contain commas or newlines when they came from CSV; ids
         * given through the API might: replace them to keep the file valid. */
        for (const char *c = pl->ids + it->id; *c; c++)
            tmem__plan_printf(&s, "%c", (*c == ',' || *c == '\n' || *c == '\r') ? '_' : *c);
        tmem__plan_printf(&s, ",%lld,%lld,%llu,%llu,%llu\n", (long long)it->start, (long long)it->end,
                          (unsigned long long)it->size, (unsigned long long)it->align, (unsigned long long)it->offset);
    }
    return s.failed ? tmem__err(TMEM_E_IO) : TMEM_OK;
}

tmem_status tmem_plan_write_json(const tmem_plan *pl, FILE *f) {
    if (!pl || !f) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__plan_sink s = {.f = f};
    const tmem_plan_info *in = &pl->info;
    double ratio = in->lower_bound ? (double)in->arena / (double)in->lower_bound : 1.0;
    tmem__plan_printf(&s,
                      "{\"version\":1,\"buffers\":%u,\"parts\":%u,\"lower_bound\":%llu,\"arena\":%llu,"
                      "\"ratio\":%.6f,\"sum_sizes\":%llu,\"heuristic_arena\":%llu,\"optimal\":%s,"
                      "\"nodes\":%llu,\"seconds\":%.6f,\"method\":",
                      in->buffers, in->parts, (unsigned long long)in->lower_bound, (unsigned long long)in->arena, ratio,
                      (unsigned long long)in->sum_sizes, (unsigned long long)in->heuristic_arena,
                      in->optimal ? "true" : "false", (unsigned long long)in->nodes, in->seconds);
    put_json_string(&s, in->method ? in->method : "");
    tmem__plan_printf(&s, "}\n");
    return s.failed ? tmem__err(TMEM_E_IO) : TMEM_OK;
}

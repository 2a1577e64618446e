/*
 * Writing plans out: CSV (the input format plus `alignment` and `offset`,
 * readable back as fixed buffers) and a JSON summary, through the one text
 * builder (base/text.h) with a FILE sink.
 */
#include "plan_internal.h"
#include <stdarg.h>
#include <string.h>

static bool file_sink(void *f, const char *data, size_t len) {
    return fwrite(data, 1, len, f) == len;
}

void tmem__plan_text_file(tmem__text *t, FILE *f) { tmem__text_init_sink(t, file_sink, f); }

tmem_status tmem__plan_text_close(tmem__text *t) {
    tmem__text_drain(t);
    bool failed = t->failed;
    tmem__text_free(t);
    return failed ? tmem__err(TMEM_E_IO) : TMEM_OK;
}

tmem_status tmem_plan_write_csv(const tmem_plan *pl, FILE *f) {
    if (!pl || !f) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__text s;
    tmem__plan_text_file(&s, f);
    tmem__text_printf(&s, "id,lower,upper,size,alignment,offset\n");
    for (uint32_t i = 0; i < pl->n && !s.failed; i++) {
        const tmem__plan_item *it = &pl->items[i];
        /* ids never contain commas or newlines when they came from CSV; ids
         * given through the API might: replace them to keep the file valid. */
        for (const char *c = pl->ids + it->id; *c; c++) {
            char ch = (*c == ',' || *c == '\n' || *c == '\r') ? '_' : *c;
            tmem__text_putn(&s, &ch, 1);
        }
        tmem__text_printf(&s, ",%lld,%lld,%llu,%llu,%llu\n", (long long)it->start,
                          (long long)it->end, (unsigned long long)it->size,
                          (unsigned long long)it->align, (unsigned long long)it->offset);
    }
    return tmem__plan_text_close(&s);
}

tmem_status tmem_plan_write_json(const tmem_plan *pl, FILE *f) {
    if (!pl || !f) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__text s;
    tmem__plan_text_file(&s, f);
    const tmem_plan_info *in = &pl->info;
    double ratio = in->lower_bound ? (double)in->arena / (double)in->lower_bound : 1.0;
    tmem__text_printf(&s,
                      "{\"version\":1,\"buffers\":%u,\"parts\":%u,\"lower_bound\":%llu,\"arena\":%llu,"
                      "\"ratio\":%.6f,\"sum_sizes\":%llu,\"heuristic_arena\":%llu,\"optimal\":%s,"
                      "\"nodes\":%llu,\"seconds\":%.6f,\"method\":",
                      in->buffers, in->parts, (unsigned long long)in->lower_bound, (unsigned long long)in->arena, ratio,
                      (unsigned long long)in->sum_sizes, (unsigned long long)in->heuristic_arena,
                      in->optimal ? "true" : "false", (unsigned long long)in->nodes, in->seconds);
    tmem__text_json_string(&s, in->method ? in->method : "");
    tmem__text_printf(&s, "}\n");
    return tmem__plan_text_close(&s);
}

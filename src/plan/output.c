/*
 * Plans as text: CSV (the input format plus `alignment` and `offset`,
 * readable back as fixed buffers) and a JSON summary, into the one text
 * builder (base/text.h). Writing them to a FILE is src/io/'s job (plan_io.h):
 * the planner makes no OS call but its probe thread's.
 */
#include "plan_internal.h"
#include <string.h>

void tmem__plan_csv_text(const tmem_plan *pl, tmem__text *s) {
    tmem__text_printf(s, "id,lower,upper,size,alignment,offset\n");
    for (uint32_t i = 0; i < pl->n && !s->failed; i++) {
        const tmem__plan_item *it = &pl->items[i];
        /* ids never contain commas or newlines when they came from CSV; ids
         * given through the API might: replace them to keep the file valid. */
        for (const char *c = pl->ids + it->id; *c; c++) {
            char ch = (*c == ',' || *c == '\n' || *c == '\r') ? '_' : *c;
            tmem__text_putn(s, &ch, 1);
        }
        tmem__text_printf(s, ",%lld,%lld,%llu,%llu,%llu\n", (long long)it->start, (long long)it->end,
                          (unsigned long long)it->size, (unsigned long long)it->align,
                          (unsigned long long)it->offset);
    }
}

void tmem__plan_json_text(const tmem_plan *pl, tmem__text *s) {
    const tmem_plan_info *in = &pl->info;
    double ratio = in->lower_bound ? (double)in->arena / (double)in->lower_bound : 1.0;
    tmem__text_printf(s,
                      "{\"version\":1,\"buffers\":%u,\"parts\":%u,\"lower_bound\":%llu,\"arena\":%llu,"
                      "\"ratio\":%.6f,\"sum_sizes\":%llu,\"heuristic_arena\":%llu,\"optimal\":%s,"
                      "\"nodes\":%llu,\"seconds\":%.6f,\"method\":",
                      in->buffers, in->parts, (unsigned long long)in->lower_bound, (unsigned long long)in->arena, ratio,
                      (unsigned long long)in->sum_sizes, (unsigned long long)in->heuristic_arena,
                      in->optimal ? "true" : "false", (unsigned long long)in->nodes, in->seconds);
    tmem__text_json_string(s, in->method ? in->method : "");
    tmem__text_printf(s, "}\n");
}

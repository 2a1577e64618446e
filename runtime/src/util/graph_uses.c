/* graph_uses.c: the use record behind the forward pass's markers
 * (graph_acts.h). Only the runtime's testing copy calls the markers; the
 * log itself is plain data any test can read. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "util/graph_acts.h"

static const char *const slot_names[TMRT_SLOT_COUNT] = {"prefill_attn", "decode_attn", "prefill_delta",
                                                       "decode_delta", "vision"};

const char *tmrt__slot_name(tmrt_graph_slot s) { return (unsigned)s < TMRT_SLOT_COUNT ? slot_names[s] : "?"; }

void tmrt__use_log_init(tmrt_use_log *log) {
    memset(log, 0, sizeof *log);
    for (int s = 0; s < TMRT_SLOT_COUNT; s++)
        for (int i = 0; i < TMEM_MODEL_BUF_COUNT; i++) log->first[s][i] = UINT32_MAX;
}

static void violation(tmrt_use_log *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(tmrt_use_log *log, const char *fmt, ...) {
    if (log->violations < TMRT_USE_REPORTS) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(log->report[log->violations], sizeof log->report[0], fmt, ap);
        va_end(ap);
    }
    log->violations++;
}

void tmrt__use_begin(tmrt_acts *g) {
    tmrt_use_log *log = g->log;
    if (!log) return;
    log->clock = 0;
    log->op = TMEM_MODEL_OP_LAYER_IN;
    log->graph[g->slot] = g->graph;
    log->ran[g->slot] = true;
}

void tmrt__use_op(tmrt_acts *g, tmem_model_op op) {
    tmrt_use_log *log = g->log;
    if (!log) return;
    uint32_t step = (unsigned)op < TMEM_MODEL_OP_COUNT ? g->graph.op_step[op] : TMEM_MODEL_STEP_NONE;
    log->op = op;
    if (step == TMEM_MODEL_STEP_NONE) {
        const char *name = tmem_model_op_name(op);
        violation(log, "%s: op %s is not in the table", tmrt__slot_name(g->slot), name ? name : "?");
        return;
    }
    if (step > log->clock) log->clock = step;
}

float *tmrt__use_buf(tmrt_acts *g, tmem_model_buf_id id) {
    if ((unsigned)id >= TMEM_MODEL_BUF_COUNT) return NULL;
    tmrt_use_log *log = g->log;
    if (!log) return g->buf[id];
    int32_t i = g->graph.buf_index[id];
    uint32_t t = log->clock;
    log->uses++;
    if (i < 0) {
        violation(log, "%s: buffer %s is not in the table (step %u, op %s)", tmrt__slot_name(g->slot),
                  tmem_model_buf_name(id), t, tmem_model_op_name(log->op));
        return g->buf[id];
    }
    const tmem_model_buffer *b = &g->graph.bufs[i];
    if (t < b->start || t >= b->end)
        violation(log, "%s: buffer %s used at step %u (op %s), outside its lifetime [%u,%u)",
                  tmrt__slot_name(g->slot), b->name, t, tmem_model_op_name(log->op), b->start, b->end);
    uint32_t *first = &log->first[g->slot][id], *last = &log->last[g->slot][id];
    if (t < *first) *first = t;
    if (t > *last) *last = t;
    return g->buf[id];
}

void tmrt__use_log_print(const tmrt_use_log *log, void *file) {
    FILE *f = file;
    for (int s = 0; s < TMRT_SLOT_COUNT; s++) {
        if (!log->ran[s]) continue;
        const tmem_model_graph *g = &log->graph[s];
        fprintf(f, "%s: %u buffers, %u steps\n", slot_names[s], g->buf_count, g->step_count);
        for (uint32_t i = 0; i < g->buf_count; i++) {
            const tmem_model_buffer *b = &g->bufs[i];
            if (log->first[s][b->id] == UINT32_MAX)
                fprintf(f, "  %-14s [%2u,%2u)  unused\n", b->name, b->start, b->end);
            else
                fprintf(f, "  %-14s [%2u,%2u)  used %u..%u\n", b->name, b->start, b->end, log->first[s][b->id],
                        log->last[s][b->id]);
        }
    }
}

/* graph_acts.h: the buffers of one layer graph as the forward pass sees
 * them, indexed by the library's buffer id (model.h: tmem_model_buf_id), and
 * the table (tmem_model_graph) they were laid out from.
 *
 * The forward code reads a buffer with TMRT_ACT(g, ID) after TMRT_OP(g, OP)
 * names the op it runs (the op's step is the table's, tmem_model_graph::
 * op_step); TMRT_GRAPH_BEGIN(g) starts a layer. In the runtime's testing copy
 * (typedmem_runtime_testing, built with TMRT_TRACK_USES=1: what the tests
 * link) these record, into the log attached to g, at which step each buffer
 * is used and every use outside the table's lifetime [start, end); in every
 * other build they compile to the plain array access and nothing.
 *
 * The step of a use is the op clock: the largest step of the ops begun so far
 * in this layer. An op run later than the table says is recorded at the step
 * it really ran in; an op run earlier moves the clock, so the ops after it are
 * recorded late. Either way, a buffer the planner may already have given to
 * another is caught (tests/runtime/test_graph_lifetimes.c).
 *
 * Markers run on the thread that dispatches an op (never inside pool tasks):
 * an op's tasks get the pointers the markers handed out. */
#ifndef TMRT_GRAPH_ACTS_H
#define TMRT_GRAPH_ACTS_H

#include <stdbool.h>
#include <stdint.h>
#include <typedmem/model.h>

/* Which graph of a run a set of buffers is (the log keeps one record each). */
typedef enum tmrt_graph_slot {
    TMRT_SLOT_PREFILL_ATTN = 0,
    TMRT_SLOT_DECODE_ATTN,
    TMRT_SLOT_PREFILL_DELTA,
    TMRT_SLOT_DECODE_DELTA,
    TMRT_SLOT_VISION,
    TMRT_SLOT_COUNT
} tmrt_graph_slot;

typedef struct tmrt_use_log tmrt_use_log;

/* One layer graph's buffers: buf[id] points into the planned arena (typed) or
 * its own malloc (naive); NULL for a buffer the graph lacks. */
typedef struct tmrt_acts {
    float *buf[TMEM_MODEL_BUF_COUNT];
    tmem_model_graph graph;        /* the table the buffers were laid out from */
    tmrt_graph_slot slot;
    tmrt_use_log *log;             /* testing copy: where uses go; NULL = not recorded */
} tmrt_acts;

#define TMRT_USE_REPORTS 8

/* What a run did with its buffers (testing copy). tmrt__use_log_init first. */
struct tmrt_use_log {
    uint32_t clock;                /* the current layer's op clock */
    tmem_model_op op;              /* the op running */
    uint32_t first[TMRT_SLOT_COUNT][TMEM_MODEL_BUF_COUNT]; /* UINT32_MAX: never used */
    uint32_t last[TMRT_SLOT_COUNT][TMEM_MODEL_BUF_COUNT];
    tmem_model_graph graph[TMRT_SLOT_COUNT]; /* the table each slot last ran with */
    bool ran[TMRT_SLOT_COUNT];
    uint64_t uses;                 /* uses recorded */
    uint32_t violations;           /* uses outside the table's lifetimes, unknown ops or buffers */
    char report[TMRT_USE_REPORTS][200]; /* the first violations, one line each */
};

void tmrt__use_log_init(tmrt_use_log *log);
const char *tmrt__slot_name(tmrt_graph_slot s);
/* Lines of the log's record, for a test's output: one per used buffer. */
void tmrt__use_log_print(const tmrt_use_log *log, void *file);

/* The markers' work (util/graph_uses.c). */
void tmrt__use_begin(tmrt_acts *g);
void tmrt__use_op(tmrt_acts *g, tmem_model_op op);
float *tmrt__use_buf(tmrt_acts *g, tmem_model_buf_id id);

#if TMRT_TRACK_USES
#define TMRT_GRAPH_BEGIN(g) tmrt__use_begin(g)
#define TMRT_OP(g, OP) tmrt__use_op((g), TMEM_MODEL_OP_##OP)
#define TMRT_ACT(g, ID) tmrt__use_buf((g), TMEM_MODEL_BUF_##ID)
#else
#define TMRT_GRAPH_BEGIN(g) ((void)(g))
#define TMRT_OP(g, OP) ((void)(g))
#define TMRT_ACT(g, ID) ((g)->buf[TMEM_MODEL_BUF_##ID])
#endif

#endif /* TMRT_GRAPH_ACTS_H */

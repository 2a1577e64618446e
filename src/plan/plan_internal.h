/*
 * Internal contract of the lifetime planner (src/plan). Nothing here is
 * public. The planner is pure computation: it uses the C library's malloc and
 * never a typedmem context; it includes only src/base/ and, for the exact
 * search's second thread, src/os/ (regress/layering). What layers above may
 * use is plan/internal.h (the text forms of a plan). Plans bound to heaps
 * live above both, in src/bind/; plan files are read and written in src/io/.
 *
 * Data flow:  problem (buffers as given, int64 times)
 *          -> inst (times compressed to "sections": elementary intervals
 *             between consecutive distinct time points; NO_ALIAS buffers span
 *             every section)
 *          -> greedy portfolio / exact search on the inst or on its parts
 *          -> offsets in problem order -> validator -> tmem_plan.
 */
#ifndef TMEM_PLAN_INTERNAL_H
#define TMEM_PLAN_INTERNAL_H

#include <stdatomic.h>
#include <stdio.h>
#include "plan/internal.h"

/* ---- problem.c ---- */
typedef struct tmem__plan_item {
    uint64_t size, align, offset;   /* align >= 1; offset meaningful if FIXED */
    int64_t start, end;
    uint32_t flags;
    uint32_t id;                    /* offset of the NUL-terminated id in ids */
} tmem__plan_item;

struct tmem_plan_problem {
    tmem__plan_item *items;
    uint32_t n;
    size_t cap;
    char *ids;                      /* id pool */
    size_t ids_len, ids_cap;
    uint32_t *hash;                 /* open addressing: index+1, 0 = empty */
    uint32_t hash_cap;              /* power of two */
    uint64_t sum;                   /* sum of sizes (overflow-checked) */
};

/* An instance with compressed time, the solvers' input. One allocation. */
typedef struct tmem__plan_inst {
    uint32_t n, nsec;
    uint64_t *size, *align, *fixed; /* fixed = TMEM_OFFSET_NONE when free */
    uint32_t *lo, *hi;              /* section range [lo, hi), lo < hi */
    uint64_t *len;                  /* lifetime length in the input's units */
    uint32_t *orig;                 /* index in the parent (problem or inst) */
    uint64_t step;                  /* gcd of sizes, alignments, fixed offsets */
    void *block_;
} tmem__plan_inst;

const char *tmem__plan_problem_id(const tmem_plan_problem *p, uint32_t i);
tmem_status tmem__plan_inst_from_problem(const tmem_plan_problem *p, tmem__plan_inst *out);
tmem_status tmem__plan_inst_alloc(tmem__plan_inst *inst, uint32_t n, uint32_t nsec);
void tmem__plan_inst_free(tmem__plan_inst *inst);
uint64_t tmem__plan_gcd(uint64_t a, uint64_t b);

/* ---- bound.c ---- */
/* Max over sections of the summed sizes alive there, and the highest fixed
 * top: a lower bound on any arena. Returns false on allocation failure. */
bool tmem__plan_inst_lower_bound(const tmem__plan_inst *inst, uint64_t *out);

/* ---- overlap.c ---- */
/* For each buffer, the other buffers alive in at least one common section
 * (CSR: adj[start[i] .. start[i+1])). `budget` caps the total number of pairs
 * (both directions); TMEM_E_LIMIT when exceeded. */
typedef struct tmem__plan_adj {
    uint32_t *start, *adj;
    uint64_t pairs;
} tmem__plan_adj;
tmem_status tmem__plan_adj_build(const tmem__plan_inst *inst, uint64_t budget, tmem__plan_adj *out);
void tmem__plan_adj_free(tmem__plan_adj *adj);

/* ---- greedy.c ---- */
/* Run the portfolio of greedy orders; writes the best offsets (inst order)
 * and returns its arena in *arena, its order's name in *name. `adj` may be
 * NULL (too many overlaps): then a time-order sweep with best-fit over the
 * live set is used. `fast` runs a reduced portfolio. */
tmem_status tmem__plan_greedy(const tmem__plan_inst *inst, const tmem__plan_adj *adj, bool fast,
                              uint64_t *offsets, uint64_t *arena, const char **name);

/* ---- search.c ---- */
typedef enum tmem__plan_search_result {
    TMEM__PLAN_FOUND,       /* offsets written, arena <= capacity */
    TMEM__PLAN_NONE,        /* proved: no plan within capacity */
    TMEM__PLAN_STOPPED      /* node/time limit hit, or out of memory */
} tmem__plan_search_result;

/* The search's limits. The default is a work budget in nodes, so the same
 * input gives the same plan on a busy machine or an idle one; a wall-clock
 * limit needs the caller's clock (the planner has none of its own). */
typedef struct tmem__plan_limits {
    double deadline;        /* wall mode: seconds of `clock`; 0 = none */
    uint64_t nodes_left;    /* stop once nodes reaches it; 0 = unlimited */
    uint64_t nodes;         /* nodes visited (incremented) */
    bool oom;               /* set when the search ran out of memory */
    atomic_int *stop;       /* another thread asks to stop; may be NULL */
    uint64_t (*clock_ns)(void *user); /* wall mode only; NULL = work mode */
    void *clock_user;
} tmem__plan_limits;

/* Where the search stands in the unit its budget is counted in: seconds of
 * the caller's clock (wall mode) or nodes visited (work mode). */
double tmem__plan_now(const tmem__plan_limits *lim);

/* Decision search: offsets (inst order) with every top <= capacity. */
tmem__plan_search_result tmem__plan_search(const tmem__plan_inst *inst, const tmem__plan_adj *adj,
                                           uint64_t capacity, tmem__plan_limits *lim, uint64_t *offsets);

/* ---- decompose.c ---- */
/* Split at section boundaries no buffer spans. parts[k] get orig = index in
 * `inst`; *nparts set. One part when the instance does not split. */
tmem_status tmem__plan_decompose(const tmem__plan_inst *inst, tmem__plan_inst **parts, uint32_t *nparts);
void tmem__plan_parts_free(tmem__plan_inst *parts, uint32_t nparts);

/* ---- solve.c ---- */
struct tmem_plan {
    uint32_t n;
    tmem__plan_item *items;         /* copy of the problem's, offset = planned */
    char *ids;
    tmem_plan_info info;
    uint64_t max_align;
    char method[32];
};
/* Arena of offsets over an inst (max offset + size). */
uint64_t tmem__plan_arena(const tmem__plan_inst *inst, const uint64_t *offsets);

#endif

/*
 * tmem_plan_solve: the driver. Greedy portfolio first; then, where the best
 * greedy arena is above what the problem may allow, the exact search on each
 * independent time part, as decision problems at decreasing capacities
 * (probe the lower bound first, then a bisection between the best proved
 * infeasible capacity and the best plan found, then a walk down from the
 * best plan: see descend). Every plan is checked by the independent
 * validator before it is returned.
 */
#include "plan_internal.h"
#include "os/os.h"
#include <stdlib.h>
#include <string.h>

/* Adjacency lists bigger than this (entries, both directions) are not built:
 * the greedy then sweeps in time order and the exact search is skipped. */
#define PLAN_ADJ_BUDGET ((uint64_t)1 << 25)
/* The greedy portfolio sorts each buffer's placed neighbours: past this many
 * pair entries the time sweep (one member, no sorting) is faster. */
#ifndef PLAN_GREEDY_ADJ_BUDGET
#define PLAN_GREEDY_ADJ_BUDGET ((uint64_t)1 << 25)
#endif

double tmem__plan_now(const tmem__plan_limits *lim) {
    if (!lim->clock_ns) return (double)lim->nodes;
    return (double)lim->clock_ns(lim->clock_user) * 1e-9;
}

/* The smallest slice worth a probe: a millisecond, or one node. */
static double min_slice(const tmem__plan_limits *lim) { return lim->clock_ns ? 0.001 : 1.0; }

uint64_t tmem__plan_arena(const tmem__plan_inst *inst, const uint64_t *offsets) {
    uint64_t a = 0;
    for (uint32_t i = 0; i < inst->n; i++)
        if (offsets[i] + inst->size[i] > a) a = offsets[i] + inst->size[i];
    return a;
}

typedef struct part_job {
    tmem__plan_inst *inst;
    uint64_t *off;          /* current best offsets of the part */
    uint64_t lb, ub, proved;/* proved: every capacity below is infeasible */
} part_job;

static uint64_t round_down(uint64_t x, uint64_t step) { return x / step * step; }
static uint64_t round_up(uint64_t x, uint64_t step) { return (x + step - 1) / step * step; }

/* One decision probe with its own deadline slice and, when `nodes` > 0, its
 * own node budget. */
static tmem__plan_search_result probe_n(const part_job *j, const tmem__plan_adj *adj, uint64_t cap,
                                        tmem__plan_limits *lim, double slice_end, uint64_t nodes, uint64_t *tmp) {
    tmem__plan_limits l = *lim;
    if (slice_end > 0 && lim->clock_ns && (l.deadline <= 0 || slice_end < l.deadline)) l.deadline = slice_end;
    if (slice_end > 0 && !lim->clock_ns && (!l.nodes_left || (uint64_t)slice_end < l.nodes_left))
        l.nodes_left = (uint64_t)slice_end;   /* work mode: the slice is a node count */
    if (nodes && (!l.nodes_left || l.nodes + nodes < l.nodes_left)) l.nodes_left = l.nodes + nodes;
    tmem__plan_search_result r = tmem__plan_search(j->inst, adj, cap, &l, tmp);
    lim->nodes = l.nodes;
    lim->oom |= l.oom;
    return r;
}

static tmem__plan_search_result probe(const part_job *j, const tmem__plan_adj *adj, uint64_t cap,
                                      tmem__plan_limits *lim, double slice_end, uint64_t *tmp) {
    return probe_n(j, adj, cap, lim, slice_end, 0, tmp);
}

static void take(part_job *j, const uint64_t *tmp) {
    uint64_t a = tmem__plan_arena(j->inst, tmp);
    if (a < j->ub) {
        j->ub = a;
        memcpy(j->off, tmp, (size_t)j->inst->n * sizeof *tmp);
    }
}

/* Capacities that ran out of the current node budget: the search is
 * deterministic, so probing one again with the same budget is wasted. */
typedef struct tried_set {
    uint64_t cap[64];
    uint32_t n;
} tried_set;

static bool tried_has(const tried_set *t, uint64_t cap) {
    for (uint32_t i = 0; i < t->n; i++)
        if (t->cap[i] == cap) return true;
    return false;
}

static void tried_add(tried_set *t, uint64_t cap) {
    if (t->n < sizeof t->cap / sizeof t->cap[0]) t->cap[t->n++] = cap;
}

#ifndef DESCEND_FRAC
#define DESCEND_FRAC 0.5  /* bisection: at most half of the time left per probe */
#endif
#ifndef BISECT_NODES
#define BISECT_NODES 100  /* bisection: nodes per buffer per probe */
#endif
#ifndef DESCEND_NODES
#define DESCEND_NODES 100 /* first walk round: nodes per buffer per probe */
#endif
#ifndef DESCEND_DIV
#define DESCEND_DIV 4     /* probe a quarter of the gap below the best plan: near it plans come fast */
#endif
#ifndef WALK_DEPTH
#define WALK_DEPTH 4      /* capacities per walk round at first */
#endif

/* One probe of the walk: takes a plan, records a proof. */
typedef enum walk_res { WALK_FOUND, WALK_NONE, WALK_BUDGET, WALK_STOP } walk_res;

static walk_res walk_probe(part_job *j, const tmem__plan_adj *adj, uint64_t cap, tmem__plan_limits *lim,
                           double part_end, uint64_t budget, uint64_t *tmp) {
    uint64_t step = j->inst->step ? j->inst->step : 1;
    double now = tmem__plan_now(lim);
    if ((part_end > 0 && part_end - now <= min_slice(lim)) || (lim->nodes_left && lim->nodes >= lim->nodes_left) ||
        (lim->stop && atomic_load(lim->stop)))
        return WALK_STOP;   /* the part's time, the node limit or the other thread */
    tmem__plan_search_result r = probe_n(j, adj, cap, lim, part_end, budget, tmp);
    if (r == TMEM__PLAN_FOUND) {
        take(j, tmp);
        return WALK_FOUND;
    }
    if (r == TMEM__PLAN_NONE) {
        if (cap + step > j->proved) j->proved = cap + step;
        return WALK_NONE;
    }
    return lim->oom ? WALK_STOP : WALK_BUDGET;
}

/* Minimise between `lo0` (and what is proved infeasible) and the best plan.
 * First a bisection with one node budget per probe: a probe that runs out of
 * it counts as "infeasible for now". Where that leaves a gap, retrying the
 * same capacities with more nodes wastes the time: the cost of a probe is
 * erratic from one capacity to the next (on MiniMalloc's D, 1031168 takes
 * 17k nodes while 1032192 takes more than 350k), so the search then walks
 * down from just below the best plan one capacity at a time, `depth`
 * capacities per round with the round's node budget, both growing every
 * round; after a plan the walk gallops (jumps twice as far each time). */
static void descend(part_job *j, const tmem__plan_adj *adj, uint64_t lo0, tmem__plan_limits *lim, double part_end,
                    uint64_t *tmp) {
    uint64_t step = j->inst->step ? j->inst->step : 1;
    uint64_t budget = (uint64_t)j->inst->n * BISECT_NODES + 1000;
    tried_set tried;
    tried.n = 0;
    uint64_t lo = j->proved > lo0 ? j->proved : lo0;
    while (lo < j->ub) {
        double now = tmem__plan_now(lim), left = part_end > 0 ? part_end - now : 0;
        if (part_end > 0 && left <= min_slice(lim)) return;
        if (lim->nodes_left && lim->nodes >= lim->nodes_left) return;
        if (lim->stop && atomic_load(lim->stop)) return;
        uint64_t d = (j->ub - lo) / DESCEND_DIV;
        if (d < step) d = step;   /* always strictly below the best plan */
        uint64_t cap = round_down(j->ub - d, step);
        if (cap < lo) cap = lo;
        if (cap >= j->ub) break;
        tmem__plan_search_result r =
            probe_n(j, adj, cap, lim, part_end > 0 ? now + left * DESCEND_FRAC : 0, budget, tmp);
        if (r == TMEM__PLAN_FOUND) {
            take(j, tmp);
        } else if (r == TMEM__PLAN_NONE) {
            if (cap + step > j->proved) j->proved = cap + step;
            lo = cap + step;
        } else {
            if (lim->oom) return;
            tried_add(&tried, cap);
            lo = cap + step;
        }
    }
    uint32_t depth = WALK_DEPTH;
    if (budget != (uint64_t)j->inst->n * DESCEND_NODES + 1000) {
        budget = (uint64_t)j->inst->n * DESCEND_NODES + 1000;
        tried.n = 0;
    }
    /* older: capacities that ran out of a smaller budget. Each round first
     * walks the capacities not tried yet (the window grows), then retries
     * the older ones with the round's larger budget. */
    tried_set older;
    older.n = 0;
    while (!lim->oom) {
        lo = j->proved > lo0 ? j->proved : lo0;
        if (j->ub <= lo) return;
        uint64_t jump = step, cap = j->ub - step;
        for (uint32_t k = 0; k < depth && cap >= lo && cap < j->ub;) {
            if (tried_has(&tried, cap) || tried_has(&older, cap)) {
                if (cap < lo + step) break;
                cap -= step;
                continue;
            }
            walk_res r = walk_probe(j, adj, cap, lim, part_end, budget, tmp);
            if (r == WALK_FOUND) {
                k = 0;
                if (jump <= UINT64_MAX / 2) jump *= 2;
                cap = j->ub - lo > jump ? round_down(j->ub - jump, step) : j->ub - step;
                continue;
            }
            if (r == WALK_NONE) break;   /* everything below is infeasible too */
            if (r == WALK_STOP) return;
            tried_add(&tried, cap);
            k++;
            if (jump > step) {
                jump = step;           /* the jump stalled: walk from the top */
                cap = j->ub - step;
            } else {
                if (cap < lo + step) break;
                cap -= step;
            }
        }
        /* the older capacities, highest first, with this round's budget */
        for (uint32_t k = 0; k < depth;) {
            lo = j->proved > lo0 ? j->proved : lo0;
            uint64_t best = 0;
            uint32_t at = older.n;
            for (uint32_t i = 0; i < older.n; i++)
                if (older.cap[i] >= lo && older.cap[i] < j->ub && !tried_has(&tried, older.cap[i]) &&
                    older.cap[i] >= best) {
                    best = older.cap[i];
                    at = i;
                }
            if (at == older.n) break;
            older.cap[at] = older.cap[--older.n];
            walk_res r = walk_probe(j, adj, best, lim, part_end, budget, tmp);
            if (r == WALK_FOUND || r == WALK_NONE) continue;
            if (r == WALK_STOP) return;
            tried_add(&tried, best);
            k++;
        }
        for (uint32_t i = 0; i < tried.n; i++)
            if (!tried_has(&older, tried.cap[i])) tried_add(&older, tried.cap[i]);
        tried.n = 0;
        if (depth < (1u << 20)) depth *= 2;
        if (budget < UINT64_MAX / 4) budget += budget / 2;
    }
}

#ifndef GOAL_FRAC
#define GOAL_FRAC 0.3
#endif
/* Under a work budget the goal thread's nodes are its own (the search above
 * it keeps the whole budget), so it can have more: most instances reach the
 * lower bound there (MiniMalloc's E needs ~224k nodes of a 400k budget). */
#ifndef GOAL_WORK_FRAC
#define GOAL_WORK_FRAC 0.6
#endif
#ifndef QUICK_NODES
#define QUICK_NODES 25000.0  /* the quick look at the goal: ~50 ms of search */
#endif

/* The lower-bound probe on a second thread (see tmem_plan_desc::threads). */
typedef struct goal_job {
    const tmem__plan_inst *inst;
    const tmem__plan_adj *adj;
    uint64_t cap;
    tmem__plan_limits lim;
    uint64_t *out;
    tmem__plan_search_result res;
    atomic_int *found;
} goal_job;

static void *goal_thread(void *arg) {
    goal_job *g = arg;
    g->res = tmem__plan_search(g->inst, g->adj, g->cap, &g->lim, g->out);
    if (g->res == TMEM__PLAN_FOUND) atomic_store(g->found, 1);
    return NULL;
}

/* Minimise (or decide, when `decide`) one part down to `goal`. */
static tmem_status solve_part(part_job *j, uint64_t goal, bool decide, uint32_t threads, tmem__plan_limits *lim,
                              double part_end) {
    if (j->ub <= goal) return TMEM_OK;
    tmem__plan_adj adj;
    tmem_status st = tmem__plan_adj_build(j->inst, PLAN_ADJ_BUDGET, &adj);
    if (st == TMEM_E_LIMIT) return TMEM_OK;   /* too dense for the exact search */
    if (st) return st;
    uint64_t *tmp = malloc(((size_t)j->inst->n + 1) * 2 * sizeof *tmp);
    if (!tmp) {
        tmem__plan_adj_free(&adj);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    uint64_t step = j->inst->step ? j->inst->step : 1;
    /* Heights are multiples of step. Minimising, no height below the lower
     * bound exists: round it up. Deciding, the capacity is a hard limit:
     * round it down. */
    uint64_t goal_cap = decide ? round_down(goal, step) : round_up(goal > j->lb ? goal : j->lb, step);
    if (decide && goal_cap < j->lb) {
        j->proved = goal + 1;   /* below the lower bound: proved infeasible */
        free(tmp);
        tmem__plan_adj_free(&adj);
        return TMEM_OK;
    }
    if (j->proved < j->lb) j->proved = j->lb;
    if (!decide && threads > 1 && part_end > 0 && j->inst->n >= 16 && goal_cap + step < j->ub) {
        /* A short look at the goal first, on this thread alone: most real
         * graphs reach it within milliseconds, and a thread costs more. */
        double now = tmem__plan_now(lim), left = part_end - now, most = lim->clock_ns ? 0.05 : QUICK_NODES;
        double quick = left * 0.1 < most ? left * 0.1 : most;
        tmem__plan_search_result r = probe(j, &adj, goal_cap, lim, now + quick, tmp);
        if (r != TMEM__PLAN_STOPPED || lim->oom) {
            if (r == TMEM__PLAN_FOUND) take(j, tmp);
            else if (r == TMEM__PLAN_NONE && goal_cap + step > j->proved) j->proved = goal_cap + step;
            if (r == TMEM__PLAN_FOUND || lim->oom) {
                free(tmp);
                tmem__plan_adj_free(&adj);
                return TMEM_OK;
            }
        }
    }
    if (!decide && threads > 1 && part_end > 0 && j->inst->n >= 16 && goal_cap + step < j->ub &&
        j->proved <= goal_cap) {
        /* Two threads: one probes the goal (for 30% of the time), the other
         * searches above it; whichever reaches the goal stops both. */
        atomic_int found;
        atomic_init(&found, 0);
        goal_job g = {j->inst, &adj, goal_cap, *lim, tmp + j->inst->n + 1, TMEM__PLAN_STOPPED, &found};
        g.lim.nodes = 0;
        g.lim.stop = &found;
        /* The goal gets the first 30% of the time: the instances whose
         * optimum is the goal reach it well within that (MiniMalloc's A-K:
         * under 0.3 s of 3.3 s), and where it is out of reach (D, J) the
         * walk above it then has the machine to itself (on a loaded 2-core
         * machine the two threads compete for CPU). */
        double now = tmem__plan_now(lim);
        double goal_share = (part_end - now) * (lim->clock_ns ? GOAL_FRAC : GOAL_WORK_FRAC);
        if (lim->clock_ns) {
            g.lim.deadline = now + goal_share;
        } else {
            /* Work mode: the goal thread counts its own nodes from 0; the
             * search above it keeps the part's whole budget. Neither result
             * depends on how the two threads are scheduled: when the goal is
             * reached its plan wins, whatever the other thread had found. */
            g.lim.deadline = 0;
            g.lim.nodes_left = goal_share >= 1 ? (uint64_t)goal_share : 1;
        }
        /* The planner's one OS use: a thread (os.h, so fault injection
         * reaches it). When none can be started, the search goes on below
         * on this thread alone, as with threads = 1. */
        tmem__os_thread th;
        if (tmem__os_thread_create(&th, goal_thread, &g) == TMEM_OK) {
            tmem__plan_limits l = *lim;
            l.stop = &found;
            descend(j, &adj, goal_cap + step, &l, part_end, tmp);
            /* nothing left above the goal: let the goal probe use the rest */
            tmem__os_thread_join(th);
            /* When the goal was reached, the other thread stopped wherever
             * it was: count only the goal's nodes then, so the budget left
             * for later parts (and info.nodes) does not depend on timing. */
            uint64_t before = lim->nodes;
            lim->nodes = l.nodes + g.lim.nodes;
            if (!lim->clock_ns && g.res == TMEM__PLAN_FOUND) lim->nodes = before + g.lim.nodes;
            lim->oom |= l.oom | g.lim.oom;
            if (g.res == TMEM__PLAN_FOUND) take(j, g.out);
            else if (g.res == TMEM__PLAN_NONE && goal_cap + step > j->proved) j->proved = goal_cap + step;
            free(tmp);
            tmem__plan_adj_free(&adj);
            return TMEM_OK;
        }
    }
    /* One thread: the goal itself first (usually the lower bound), done if
     * it fits; then the binary search above it. */
    {
        double now = tmem__plan_now(lim), left = part_end > 0 ? part_end - now : 0;
        double share = decide ? 1.0 : lim->clock_ns ? 0.4 : GOAL_WORK_FRAC;
        tmem__plan_search_result r = probe(j, &adj, goal_cap, lim, part_end > 0 ? now + left * share : 0, tmp);
        if (r == TMEM__PLAN_FOUND) take(j, tmp);
        else if (r == TMEM__PLAN_NONE && goal_cap + step > j->proved) j->proved = goal_cap + step;
    }
    if (!decide) descend(j, &adj, goal_cap, lim, part_end, tmp);
    free(tmp);
    tmem__plan_adj_free(&adj);
    return TMEM_OK;
}

/* Parts above this many buffers get the greedy plan only under the
 * default budget (pangu_2.6B's 18,692 buffers: ~2.5 ms a node). */
#define PLAN_EXACT_DEFAULT_MAX 4096u

/* A node costs about O(n) (propagation over the buffers alive with the
 * placed one): the default budget shrinks with n past a few hundred
 * buffers so a large graph's search stays in the seconds. */
static uint64_t default_nodes(uint32_t n) {
    uint64_t by_work = TMEM_PLAN_DEFAULT_WORK / (n ? n : 1);
    uint64_t nodes = by_work < TMEM_PLAN_DEFAULT_NODES ? by_work : TMEM_PLAN_DEFAULT_NODES;
    return nodes < 10000 ? 10000 : nodes;
}

static tmem_status make_plan(const tmem_plan_problem *p, const uint64_t *offsets, tmem_plan **out) {
    tmem_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return tmem__err(TMEM_E_NO_MEMORY);
    pl->items = malloc(((size_t)p->n + 1) * sizeof *pl->items);
    pl->ids = malloc(p->ids_len + 1);
    if (!pl->items || !pl->ids) {
        tmem_plan_destroy(pl);
        return tmem__err(TMEM_E_NO_MEMORY);
    }
    memcpy(pl->items, p->items, (size_t)p->n * sizeof *pl->items);
    memcpy(pl->ids, p->ids, p->ids_len);
    pl->n = p->n;
    pl->max_align = 1;
    for (uint32_t i = 0; i < p->n; i++) {
        pl->items[i].offset = offsets[i];
        if (pl->items[i].align > pl->max_align) pl->max_align = pl->items[i].align;
    }
    *out = pl;
    return TMEM_OK;
}

tmem_status tmem_plan_solve(const tmem_plan_problem *p, const tmem_plan_desc *desc, tmem_plan **out) {
    if (out) *out = NULL;
    if (!p || !out || p->n == 0) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_plan_desc d = desc ? *desc : (tmem_plan_desc){0};
    bool decide = d.mode == TMEM_PLAN_DECIDE;
    if (decide && d.capacity == 0) return tmem__err(TMEM_E_INVALID_ARG);
    if (d.mode != TMEM_PLAN_MINIMIZE && !decide) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__plan_limits lim = {0, 0, 0, false, NULL, NULL, NULL};
    bool wall = d.time_limit_s > 0;
    if (wall && !d.clock_ns) return tmem__err(TMEM_E_INVALID_ARG);
    if (wall) {
        lim.clock_ns = d.clock_ns;
        lim.clock_user = d.clock_user;
        lim.deadline = tmem__plan_now(&lim) + d.time_limit_s;
        lim.nodes_left = d.node_limit == UINT64_MAX ? 0 : d.node_limit;
    }
    bool default_budget = !wall && d.node_limit == 0;
    if (!wall) {
        lim.nodes_left = d.node_limit == 0 ? default_nodes(p->n) : d.node_limit == UINT64_MAX ? 0 : d.node_limit;
    }
    uint64_t t0_ns = d.clock_ns ? d.clock_ns(d.clock_user) : 0;

    tmem__plan_inst inst;
    tmem_status st = tmem__plan_inst_from_problem(p, &inst);
    if (st) return st;
    uint32_t n = inst.n, nparts = 0;
    uint64_t *off = malloc((size_t)n * sizeof *off), lb = 0, greedy_arena = 0;
    tmem__plan_inst *parts = NULL;
    part_job *jobs = NULL;
    const char *gname = "greedy";
    if (!off || !tmem__plan_inst_lower_bound(&inst, &lb)) {
        st = tmem__err(TMEM_E_NO_MEMORY);
        goto out;
    }
    {
        tmem__plan_adj adj;
        tmem_status ast = tmem__plan_adj_build(&inst, PLAN_GREEDY_ADJ_BUDGET, &adj);
        if (ast && ast != TMEM_E_LIMIT) {
            st = ast;
            goto out;
        }
        bool fast = (d.flags & TMEM_PLAN_HEURISTIC_ONLY) && n > 5000;
        st = tmem__plan_greedy(&inst, ast ? NULL : &adj, fast, off, &greedy_arena, &gname);
        if (!ast) tmem__plan_adj_free(&adj);
        if (st) goto out;
    }
    uint64_t target = decide ? d.capacity : lb;
    uint64_t arena = greedy_arena;
    bool optimal = arena == lb;
    const char *method = gname;
    if (arena > target && !(d.flags & TMEM_PLAN_HEURISTIC_ONLY)) {
        if (d.flags & TMEM_PLAN_NO_DECOMPOSE) {
            parts = calloc(1, sizeof *parts);
            if (!parts || tmem__plan_inst_alloc(&parts[0], n, inst.nsec)) {
                free(parts);
                parts = NULL;
                st = tmem__err(TMEM_E_NO_MEMORY);
                goto out;
            }
            nparts = 1;
            memcpy(parts[0].block_, inst.block_, (size_t)n * 4 * sizeof(uint64_t) + (size_t)n * 3 * sizeof(uint32_t));
            parts[0].step = inst.step;
        } else if ((st = tmem__plan_decompose(&inst, &parts, &nparts))) {
            goto out;
        }
        jobs = calloc(nparts, sizeof *jobs);
        if (!jobs) {
            st = tmem__err(TMEM_E_NO_MEMORY);
            goto out;
        }
        uint64_t need_n = 0;
        for (uint32_t k = 0; k < nparts; k++) {
            part_job *j = &jobs[k];
            j->inst = &parts[k];
            j->off = malloc(((size_t)parts[k].n + 1) * sizeof *j->off);
            if (!j->off || !tmem__plan_inst_lower_bound(j->inst, &j->lb)) {
                st = tmem__err(TMEM_E_NO_MEMORY);
                goto out;
            }
            for (uint32_t i = 0; i < parts[k].n; i++) j->off[i] = off[parts[k].orig[i]];
            j->ub = tmem__plan_arena(j->inst, j->off);
            j->proved = j->lb;
            if (j->ub > target) need_n += parts[k].n;
        }
        /* Parts in order of decreasing arena: the worst first; each later
         * part only needs to come down to what the earlier ones reached. */
        uint64_t floor = target;
        for (;;) {
            part_job *j = NULL;
            for (uint32_t k = 0; k < nparts; k++)
                if (jobs[k].ub > floor && jobs[k].off && (!j || jobs[k].ub > j->ub)) j = &jobs[k];
            if (!j) break;
            if (default_budget && j->inst->n > PLAN_EXACT_DEFAULT_MAX) {
                /* Too big for the default budget to matter (a node costs
                 * O(n) or more): keep the greedy plan of this part. */
                if (!decide && j->ub > floor) floor = j->ub;
                for (uint32_t i = 0; i < j->inst->n; i++) off[j->inst->orig[i]] = j->off[i];
                need_n -= need_n >= j->inst->n ? j->inst->n : need_n;
                free(j->off);
                j->off = NULL;
                if (decide && j->ub > target) break;
                continue;
            }
            /* Each part gets its share of what is left (time or nodes),
             * in proportion to its buffers. */
            double now = tmem__plan_now(&lim), end = 0, limit_end = wall ? lim.deadline : (double)lim.nodes_left;
            double share = (double)j->inst->n / (double)(need_n ? need_n : 1);
            if (limit_end > 0) end = now + (limit_end - now) * share;
            if ((st = solve_part(j, floor, decide, d.threads, &lim, end))) goto out;
            need_n -= need_n >= j->inst->n ? j->inst->n : need_n;
            if (!decide && j->ub > floor) floor = j->ub;
            /* mark done: copy back and stop considering it */
            for (uint32_t i = 0; i < j->inst->n; i++) off[j->inst->orig[i]] = j->off[i];
            free(j->off);
            j->off = NULL;
            if (decide && j->ub > target) break;
        }
        arena = tmem__plan_arena(&inst, off);
        optimal = arena == lb;
        if (!optimal && !decide) {
            /* optimal if every part as high as the arena proved it minimal */
            optimal = true;
            for (uint32_t k = 0; k < nparts; k++)
                if (jobs[k].ub == arena && jobs[k].proved < arena) optimal = false;
        }
        if (arena < greedy_arena) method = "exact";
    }
    if (decide && arena > d.capacity) {
        bool proved = false;
        for (uint32_t k = 0; k < nparts; k++)
            if (jobs[k].ub > d.capacity && jobs[k].proved > d.capacity) proved = true;
        if (lb > d.capacity) proved = true;
        st = proved ? tmem__err(TMEM_E_INFEASIBLE) : tmem__err(TMEM_E_LIMIT);
        goto out;
    }
    if (!decide && d.capacity && arena > d.capacity) {
        st = lb > d.capacity ? tmem__err(TMEM_E_INFEASIBLE) : tmem__err(TMEM_E_LIMIT);
        goto out;
    }
    tmem_plan_violation why;
    if (tmem_plan_validate(p, off, decide ? d.capacity : 0, &why) != TMEM_OK) {
        st = tmem__err(TMEM_E_CORRUPT);
        goto out;
    }
    if ((st = make_plan(p, off, out))) goto out;
    tmem_plan *pl = *out;
    pl->info.buffers = n;
    pl->info.parts = nparts ? nparts : 1;
    pl->info.arena = arena;
    pl->info.lower_bound = lb;
    pl->info.sum_sizes = p->sum;
    pl->info.heuristic_arena = greedy_arena;
    pl->info.optimal = optimal;
    pl->info.nodes = lim.nodes;
    snprintf(pl->method, sizeof pl->method, "%s", method);
    pl->info.method = pl->method;
    pl->info.seconds = d.clock_ns ? (double)(d.clock_ns(d.clock_user) - t0_ns) * 1e-9 : 0;
out:
    if (jobs)
        for (uint32_t k = 0; k < nparts; k++) free(jobs[k].off);
    free(jobs);
    tmem__plan_parts_free(parts, nparts);
    tmem__plan_inst_free(&inst);
    free(off);
    return st;
}

void tmem_plan_destroy(tmem_plan *pl) {
    if (!pl) return;
    free(pl->items);
    free(pl->ids);
    free(pl);
}

tmem_status tmem_plan_get_info(const tmem_plan *pl, tmem_plan_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!pl || !out) return tmem__err(TMEM_E_INVALID_ARG);
    *out = pl->info;
    return TMEM_OK;
}

uint64_t tmem_plan_offset(const tmem_plan *pl, uint32_t i) {
    if (!pl || i >= pl->n) return TMEM_OFFSET_NONE;
    return pl->items[i].offset;
}

tmem_status tmem_plan_get_buffer(const tmem_plan *pl, uint32_t i, tmem_plan_buffer *out) {
    if (out) {
        memset(out, 0, sizeof *out);
        out->offset = TMEM_OFFSET_NONE;
    }
    if (!pl || !out) return tmem__err(TMEM_E_INVALID_ARG);
    if (i >= pl->n) return tmem__err(TMEM_E_NOT_FOUND);
    const tmem__plan_item *it = &pl->items[i];
    *out = (tmem_plan_buffer){pl->ids + it->id, it->size, it->align, it->start, it->end, it->offset, it->flags};
    return TMEM_OK;
}

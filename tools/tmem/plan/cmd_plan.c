/* tmem plan FILE.csv [--capacity N] [--nodes N] [--time-limit S] [--heuristic]
 *                    [--out plan.csv] [--json] [--svg plan.svg]
 * Loads a problem in MiniMalloc's CSV format, plans it and prints buffers,
 * lower bound, arena, ratio, whether the arena is proved optimal, and time. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/out.h"
#include "commands.h"
#include "cli/progress.h"
#include "typedmem/plan_io.h"

/* The planner has no clock: the tool lends it one, for --time-limit and
 * for the time it reports. */
static uint64_t monotonic_ns(void *user) {
    (void)user;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* With a time limit the exact search can run for all of it: on a terminal,
 * show a bar of the time spent against the limit while a thread solves. */
typedef struct solve_job {
    const tmem_plan_problem *problem;
    const tmem_plan_desc *desc;
    tmem_plan *plan;
    tmem_status status;
    atomic_bool done;
} solve_job;

static void *solve_thread(void *arg) {
    solve_job *job = arg;
    job->status = tmem_plan_solve(job->problem, job->desc, &job->plan);
    atomic_store(&job->done, true);
    return NULL;
}

static tmem_status solve_with_progress(const tmem_plan_problem *p, const tmem_plan_desc *d, tmem_plan **out) {
    pthread_t th;
    solve_job job = {.problem = p, .desc = d};
    atomic_init(&job.done, false);
    if (d->time_limit_s <= 0 || !tmem_progress_enabled() || pthread_create(&th, NULL, solve_thread, &job) != 0)
        return tmem_plan_solve(p, d, out);
    double limit_ms = d->time_limit_s * 1e3;
    tmem_progress prog;
    tmem_progress_begin(&prog, "planning (ms)", (uint64_t)limit_ms);
    struct timespec t0, t, nap = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!atomic_load(&job.done)) {
        nanosleep(&nap, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t);
        double ms = (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
        tmem_progress_update(&prog, (uint64_t)(limit_ms > 0 && ms > limit_ms ? limit_ms : ms));
    }
    pthread_join(th, NULL);
    tmem_progress_end(&prog);
    *out = job.plan;
    return job.status;
}

int tmem_cmd_plan(int argc, char **argv) {
    const char *file = NULL, *out_csv = NULL, *svg = NULL;
    bool json = false, heuristic = false, have_capacity = false, have_limit = false;
    uint64_t capacity = 0;
    double limit = 0;
    uint64_t nodes = 0;
    tmem_plan_desc d = {0};
    d.threads = 2;
    d.clock_ns = monotonic_ns;
    tmem_cli_opt opts[] = {
        TMEM_CLI_U64("--capacity", "N", "decision mode: any plan with arena <= N bytes (else minimise)", &capacity,
                     1, 0),
        TMEM_CLI_U64("--nodes", "N", "work budget of the exact search in nodes (default: 400000, fewer past "
                     "500 buffers; the same input gives the same plan on any machine)", &nodes, 1, 0),
        TMEM_CLI_SECONDS("--time-limit", "also stop the exact search after S seconds (default: none; the plan "
                         "then depends on the machine's speed and load)", &limit, 0, 86400),
        TMEM_CLI_U32("--threads", "N", "exact-search threads when minimising (default 2)", &d.threads, 1, 64),
        TMEM_CLI_FLAG("--heuristic", "greedy portfolio only", &heuristic),
        TMEM_CLI_STR("--out", "FILE", "write the plan as CSV (id,lower,upper,size,alignment,offset)", &out_csv),
        TMEM_CLI_FLAG("--json", "print a JSON summary instead of text", &json),
        TMEM_CLI_STR("--svg", "FILE", "draw the plan (time x offset) as SVG", &svg),
    };
    opts[0].seen = &have_capacity;
    opts[2].seen = &have_limit;
    const char **pos[] = {&file};
    tmem_cli cli = {"tmem plan", "FILE.csv [options]",
                    "Plan buffer offsets for a MiniMalloc-format CSV (id,lower,upper,size[,alignment]);\n"
                    "FILE '-' reads standard input. Prints lower bound, arena, ratio, optimality, time.",
                    opts, TMEM_CLI_COUNT(opts), pos, 1, 1,
                    "exit status: 0 planned, 3 infeasible or out of time, 2 usage error, 1 other error"};
    int rc = tmem_cli_parse(&cli, argc, argv);
    if (rc != TMEM_CLI_CONTINUE) return rc;
    { /* the outputs may not be the input (or a directory, device, fifo): refused before solving */
        const char *in[] = {file}, *outs[] = {out_csv, svg};
        for (size_t i = 0; i < 2; i++) {
            tmem_out_error oe;
            if (outs[i] && tmem_out_check(outs[i], in, 1, &oe) != TMEM_OK) {
                fprintf(stderr, "tmem plan: %s\n", oe.message);
                return 2;
            }
        }
    }
    if (have_capacity) {
        d.mode = TMEM_PLAN_DECIDE;
        d.capacity = capacity;
    }
    d.node_limit = nodes;
    if (have_limit && limit > 0) d.time_limit_s = limit;
    if (heuristic) d.flags |= TMEM_PLAN_HEURISTIC_ONLY;
    tmem_plan_problem *p;
    tmem_plan_error err;
    tmem_status st;
    if (!strcmp(file, "-")) { /* standard input: read it whole, then the same parser */
        size_t len = 0;
        char *text = tmem_cli_slurp(file, &len);
        memset(&err, 0, sizeof err);
        if (!text) {
            fprintf(stderr, "tmem plan: cannot read standard input: %s\n", strerror(errno));
            return 1;
        }
        st = tmem_plan_problem_parse_csv(text, len, &p, &err);
        free(text);
        file = "<stdin>";
    } else {
        st = tmem_plan_problem_load_csv(file, &p, &err);
    }
    if (st) {
        if (err.line)
            fprintf(stderr, "%s:%llu: %s%s%s\n", file, (unsigned long long)err.line, err.field[0] ? err.field : "",
                    err.field[0] ? ": " : "", err.message);
        else
            fprintf(stderr, "%s: %s (%s)\n", file, err.message[0] ? err.message : tmem_strerror(st),
                    tmem_status_name(st));
        return 1;
    }
    tmem_plan *plan;
    st = solve_with_progress(p, &d, &plan);
    if (st) {
        uint64_t lb = 0;
        if (tmem_plan_problem_lower_bound(p, &lb)) lb = 0;
        fprintf(stderr, "tmem plan: %s: %s (lower bound %llu)\n", file, tmem_strerror(st), (unsigned long long)lb);
        tmem_plan_problem_destroy(p);
        return st == TMEM_E_INFEASIBLE || st == TMEM_E_LIMIT ? 3 : 1;
    }
    rc = 0;
    tmem_plan_info in;
    if (tmem_plan_get_info(plan, &in)) rc = 1;
    if (json) {
        if (tmem_plan_write_json(plan, stdout)) rc = 1;
    } else {
        printf("file        %s\n", file);
        printf("buffers     %u (%u independent part%s)\n", in.buffers, in.parts, in.parts == 1 ? "" : "s");
        printf("sum sizes   %llu\n", (unsigned long long)in.sum_sizes);
        printf("lower bound %llu\n", (unsigned long long)in.lower_bound);
        printf("arena       %llu\n", (unsigned long long)in.arena);
        printf("ratio       %.6f x lower bound\n", in.lower_bound ? (double)in.arena / (double)in.lower_bound : 1.0);
        printf("optimal     %s\n", in.optimal ? "yes (proved)" : "not proved");
        printf("greedy      %llu\n", (unsigned long long)in.heuristic_arena);
        printf("method      %s, %llu search nodes\n", in.method, (unsigned long long)in.nodes);
        printf("time        %.3f ms\n", in.seconds * 1e3);
    }
    const char *inputs[] = {file};
    if (out_csv) {
        tmem_out_file *of = NULL;
        FILE *f = tool_out_open("plan", out_csv, inputs, 1, &of);
        bool ok = f && tmem_plan_write_csv(plan, f) == TMEM_OK;
        if (f && !ok) fprintf(stderr, "tmem plan: cannot write %s: write failed\n", out_csv);
        if (!tool_out_close("plan", of, ok)) rc = 1;
    }
    if (svg) {
        tmem_out_file *of = NULL;
        FILE *f = tool_out_open("plan", svg, inputs, 1, &of);
        tmem_plan_svg_desc sd = {0};
        sd.title = file;
        bool ok = f && tmem_plan_write_svg(plan, &sd, f) == TMEM_OK;
        if (f && !ok) fprintf(stderr, "tmem plan: cannot write %s: write failed\n", svg);
        if (!tool_out_close("plan", of, ok)) rc = 1;
    }
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(p);
    return rc;
}

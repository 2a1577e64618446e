/* tmem plan FILE.csv [--capacity N] [--time-limit S] [--heuristic]
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
#include "commands.h"
#include "progress.h"
#include "typedmem/plan.h"

/* The exact search can run for its whole time limit: on a terminal, show a
 * bar of the time spent against the limit while a thread solves. */
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
    if (!tmem_progress_enabled() || pthread_create(&th, NULL, solve_thread, &job) != 0) return tmem_plan_solve(p, d, out);
    double limit_ms = d->time_limit_s < 0 ? 0 : (d->time_limit_s == 0 ? 2000 : d->time_limit_s * 1e3);
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

static int usage(void) {
    fprintf(stderr,
            "usage: tmem plan FILE.csv [--capacity N] [--time-limit S] [--threads N] [--heuristic]\n"
            "                 [--out plan.csv] [--json] [--svg plan.svg]\n"
            "  --capacity N    decision mode: any plan with arena <= N (else minimise)\n"
            "  --time-limit S  seconds for the exact search (default 2; 0 = none)\n"
            "  --threads N     exact-search threads when minimising (default 2)\n"
            "  --heuristic     greedy portfolio only\n"
            "  --out F         write the plan as CSV (id,lower,upper,size,alignment,offset)\n"
            "  --json          print a JSON summary instead of text\n"
            "  --svg F         draw the plan (time x offset) as SVG\n");
    return 2;
}

static bool parse_num(const char *s, unsigned long long *out) {
    char *end;
    errno = 0;
    if (!s || *s == '-' || !*s) return false;
    *out = strtoull(s, &end, 10);
    return !errno && *end == 0;
}

int tmem_cmd_plan(int argc, char **argv) {
    const char *file = NULL, *out_csv = NULL, *svg = NULL;
    bool json = false;
    tmem_plan_desc d = {0};
    d.threads = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--capacity") && i + 1 < argc) {
            unsigned long long v;
            if (!parse_num(argv[++i], &v) || v == 0) {
                fprintf(stderr, "tmem plan: --capacity wants a positive integer\n");
                return 2;
            }
            d.mode = TMEM_PLAN_DECIDE;
            d.capacity = v;
        } else if (!strcmp(a, "--time-limit") && i + 1 < argc) {
            char *end;
            double v = strtod(argv[++i], &end);
            if (*end || v < 0) {
                fprintf(stderr, "tmem plan: --time-limit wants seconds >= 0\n");
                return 2;
            }
            d.time_limit_s = v == 0 ? -1 : v;
        } else if (!strcmp(a, "--threads") && i + 1 < argc) {
            unsigned long long v;
            if (!parse_num(argv[++i], &v) || v > 64) {
                fprintf(stderr, "tmem plan: --threads wants 1..64\n");
                return 2;
            }
            d.threads = (uint32_t)v;
        } else if (!strcmp(a, "--heuristic")) {
            d.flags |= TMEM_PLAN_HEURISTIC_ONLY;
        } else if (!strcmp(a, "--out") && i + 1 < argc) {
            out_csv = argv[++i];
        } else if (!strcmp(a, "--svg") && i + 1 < argc) {
            svg = argv[++i];
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        } else if (a[0] == '-' || file) {
            fprintf(stderr, "tmem plan: unexpected argument '%s'\n", a);
            return usage();
        } else {
            file = a;
        }
    }
    if (!file) return usage();
    tmem_plan_problem *p;
    tmem_plan_error err;
    tmem_status st = tmem_plan_problem_load_csv(file, &p, &err);
    if (st) {
        if (err.line)
            fprintf(stderr, "%s:%llu: %s%s%s\n", file, (unsigned long long)err.line, err.field[0] ? err.field : "",
                    err.field[0] ? ": " : "", err.message);
        else
            fprintf(stderr, "%s: %s (%s)\n", file, err.message[0] ? err.message : tmem_strerror(st), tmem_status_name(st));
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
    int rc = 0;
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
    if (out_csv) {
        FILE *f = fopen(out_csv, "w");
        if (!f || tmem_plan_write_csv(plan, f)) {
            fprintf(stderr, "tmem plan: cannot write %s\n", out_csv);
            rc = 1;
        }
        if (f && fclose(f)) rc = 1;
    }
    if (svg) {
        FILE *f = fopen(svg, "w");
        tmem_plan_svg_desc sd = {0};
        sd.title = file;
        if (!f || tmem_plan_write_svg(plan, &sd, f)) {
            fprintf(stderr, "tmem plan: cannot write %s\n", svg);
            rc = 1;
        }
        if (f && fclose(f)) rc = 1;
    }
    tmem_plan_destroy(plan);
    tmem_plan_problem_destroy(p);
    return rc;
}

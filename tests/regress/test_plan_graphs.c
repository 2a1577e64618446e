/* Regression on the shared benchmark data: every real model graph planned
 * within 1.001x of its lower bound (in fact at it), no worse than TFLite's
 * greedy-by-size, and a few MiniMalloc challenging instances solved at their
 * proved optimum. Properties, not recorded numbers: the arena is compared
 * with the lower bound computed in the same run. */
#include "harness.h"
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void check_plan(const tmem_plan_problem *p, const tmem_plan *pl) {
    uint32_t n = tmem_plan_problem_count(p);
    uint64_t *off = malloc(n * sizeof *off);
    for (uint32_t i = 0; i < n; i++) off[i] = tmem_plan_offset(pl, i);
    CHECK_OK(tmem_plan_validate(p, off, 0, NULL));
    free(off);
}

static void test_real_graphs(void) {
    char dir[1024];
    if (!tmem_test_shared_path("bench/graphs", dir, sizeof dir)) tmem_test_skip("../shared/bench/graphs absent");
    DIR *d = opendir(dir);
    REQUIRE(d);
    char *names[64];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 64;) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".csv")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    CHECK(n >= 10);
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        tmem_plan_problem *p;
        tmem_plan_error err;
        CHECK_OK(tmem_plan_problem_load_csv(path, &p, &err));
        if (!p) continue;
        tmem_plan *pl;
        tmem_plan_desc desc = {0};
        CHECK_OK(tmem_plan_solve(p, &desc, &pl));
        if (pl) {
            tmem_plan_info in;
            CHECK_OK(tmem_plan_get_info(pl, &in));
            printf("%-42s n=%5u lb=%11llu arena=%11llu ratio=%.6f greedy=%.6f %s %.1f ms\n", names[i], in.buffers,
                   (unsigned long long)in.lower_bound, (unsigned long long)in.arena,
                   (double)in.arena / (double)in.lower_bound, (double)in.heuristic_arena / (double)in.lower_bound,
                   in.optimal ? "optimal" : "", in.seconds * 1e3);
            CHECK_MSG((double)in.arena <= 1.001 * (double)in.lower_bound, "%s: arena %.6f x LB", names[i],
                      (double)in.arena / (double)in.lower_bound);
            CHECK(in.arena <= in.heuristic_arena && in.arena >= in.lower_bound);
            check_plan(p, pl);
            tmem_plan_destroy(pl);
        }
        tmem_plan_problem_destroy(p);
        free(names[i]);
    }
}

static void test_challenging_subset(void) {
    /* C, G and K: MiniMalloc's challenging suite, optimum = lower bound */
    static const char *const files[] = {"C.1048576.csv", "G.1048576.csv", "K.1048576.csv"};
    for (size_t i = 0; i < 3; i++) {
        char rel[128], path[1024];
        snprintf(rel, sizeof rel, "bench/minimalloc/challenging/%s", files[i]);
        if (!tmem_test_shared_path(rel, path, sizeof path)) tmem_test_skip("../shared/bench/minimalloc absent");
        tmem_plan_problem *p;
        REQUIRE_OK(tmem_plan_problem_load_csv(path, &p, NULL));
        tmem_plan *pl;
        tmem_plan_desc desc = {0};
        desc.threads = i == 1 ? 2 : 0;   /* G with the goal probe on a second thread */
        CHECK_OK(tmem_plan_solve(p, &desc, &pl));
        if (pl) {
            tmem_plan_info in;
            CHECK_OK(tmem_plan_get_info(pl, &in));
            printf("%s: lb=%llu arena=%llu greedy=%llu nodes=%llu %.3f s\n", files[i],
                   (unsigned long long)in.lower_bound, (unsigned long long)in.arena,
                   (unsigned long long)in.heuristic_arena, (unsigned long long)in.nodes, in.seconds);
            CHECK_MSG(in.arena == in.lower_bound && in.optimal, "%s: arena %llu lb %llu", files[i],
                      (unsigned long long)in.arena, (unsigned long long)in.lower_bound);
            CHECK(in.heuristic_arena > in.arena);   /* the exact search did the work */
            check_plan(p, pl);
            tmem_plan_destroy(pl);
        }
        /* decision mode at the published capacity */
        desc.mode = TMEM_PLAN_DECIDE;
        desc.capacity = 1048576;
        CHECK_OK(tmem_plan_solve(p, &desc, &pl));
        tmem_plan_destroy(pl);
        tmem_plan_problem_destroy(p);
    }
}

/* The best plans found for MiniMalloc's D and J (below the best heights
 * known before, 1031168 and 1035264), stored in docs/plan_best/: still the
 * same buffers as the instance, and valid. */
static void test_stored_best_plans(void) {
    static const struct { const char *inst, *plan; uint64_t height; } best[] = {
        {"D.1048576.csv", "D.1024000.csv", 1024000},
        {"J.1048576.csv", "J.1029120.csv", 1029120},
    };
    const char *src = getenv("TMEM_SOURCE_DIR");
    for (size_t i = 0; i < 2; i++) {
        char rel[128], ipath[1024], ppath[1024];
        snprintf(rel, sizeof rel, "bench/minimalloc/challenging/%s", best[i].inst);
        if (!src || !tmem_test_shared_path(rel, ipath, sizeof ipath))
            tmem_test_skip("../shared/bench/minimalloc or TMEM_SOURCE_DIR absent");
        snprintf(ppath, sizeof ppath, "%s/docs/plan_best/%s", src, best[i].plan);
        tmem_plan_problem *inst, *plan;
        REQUIRE_OK(tmem_plan_problem_load_csv(ipath, &inst, NULL));
        REQUIRE_OK(tmem_plan_problem_load_csv(ppath, &plan, NULL));
        uint32_t n = tmem_plan_problem_count(inst);
        CHECK(tmem_plan_problem_count(plan) == n);
        uint64_t *off = calloc(n, sizeof *off), height = 0;
        for (uint32_t k = 0; k < n && k < tmem_plan_problem_count(plan); k++) {
            tmem_plan_buffer a, b;
            CHECK_OK(tmem_plan_problem_get(inst, k, &a));
            CHECK_OK(tmem_plan_problem_get(plan, k, &b));
            CHECK(strcmp(a.id, b.id) == 0 && a.start == b.start && a.end == b.end && a.size == b.size);
            CHECK(b.flags & TMEM_PLAN_BUFFER_FIXED);
            off[k] = b.offset;
            if (b.offset + b.size > height) height = b.offset + b.size;
        }
        CHECK(height == best[i].height);
        CHECK_OK(tmem_plan_validate(inst, off, best[i].height, NULL));
        free(off);
        tmem_plan_problem_destroy(plan);
        tmem_plan_problem_destroy(inst);
    }
}

int main(void) {
    RUN(test_stored_best_plans);
    RUN(test_real_graphs);
    RUN(test_challenging_subset);
    return tmem_test_finish();
}

/* The planner on hand-made problems: lower bound, alignment, fixed and
 * no-alias buffers, decision mode, the validator's verdicts, and the JSON /
 * SVG outputs. Every returned plan is re-validated here. */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

static tmem_plan_problem *build(const tmem_plan_buffer *b, int n) {
    tmem_plan_problem *p;
    if (tmem_plan_problem_create(&p)) return NULL;
    for (int i = 0; i < n; i++)
        if (tmem_plan_problem_add(p, &b[i], NULL)) {
            tmem_plan_problem_destroy(p);
            return NULL;
        }
    return p;
}

static void revalidate(const tmem_plan_problem *p, const tmem_plan *pl, uint64_t cap) {
    uint32_t n = tmem_plan_problem_count(p);
    uint64_t *off = malloc(n * sizeof *off);
    for (uint32_t i = 0; i < n; i++) off[i] = tmem_plan_offset(pl, i);
    tmem_plan_violation why;
    CHECK_OK(tmem_plan_validate(p, off, cap, &why));
    free(off);
}

static void test_chain_reuses_memory(void) {
    /* a chain of activations: each lives two steps; optimum = two buffers */
    tmem_plan_buffer b[8];
    for (int i = 0; i < 8; i++) b[i] = (tmem_plan_buffer){.size = 1000, .start = i, .end = i + 2};
    tmem_plan_problem *p = build(b, 8);
    REQUIRE(p);
    tmem_plan *pl;
    REQUIRE_OK(tmem_plan_solve(p, NULL, &pl));
    tmem_plan_info in;
    CHECK_OK(tmem_plan_get_info(pl, &in));
    CHECK(in.lower_bound == 2000 && in.arena == 2000 && in.optimal && in.sum_sizes == 8000 && in.buffers == 8);
    revalidate(p, pl, 2000);
    tmem_plan_buffer got;
    CHECK_OK(tmem_plan_get_buffer(pl, 3, &got));
    CHECK(strcmp(got.id, "b3") == 0 && got.offset == tmem_plan_offset(pl, 3));
    CHECK_ST(tmem_plan_get_buffer(pl, 8, &got), TMEM_E_NOT_FOUND);
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
}

static void test_alignment_respected(void) {
    tmem_plan_buffer b[] = {
        {.id = "a", .size = 10, .start = 0, .end = 4},
        {.id = "b", .size = 100, .alignment = 64, .start = 1, .end = 3},
        {.id = "c", .size = 7, .alignment = 8, .start = 2, .end = 5},
    };
    tmem_plan_problem *p = build(b, 3);
    REQUIRE(p);
    tmem_plan *pl;
    REQUIRE_OK(tmem_plan_solve(p, NULL, &pl));
    CHECK(tmem_plan_offset(pl, 1) % 64 == 0);
    CHECK(tmem_plan_offset(pl, 2) % 8 == 0);
    revalidate(p, pl, 0);
    tmem_plan_info in;
    CHECK_OK(tmem_plan_get_info(pl, &in));
    CHECK(in.arena >= in.lower_bound && in.optimal);
    tmem_heap_desc hd;
    CHECK_OK(tmem_plan_heap_desc(pl, &hd));
    CHECK(hd.kind == TMEM_HEAP_PLACEMENT && hd.size >= in.arena && hd.size % 64 == 0);
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
}

static void test_fixed_and_no_alias(void) {
    tmem_plan_buffer b[] = {
        {.id = "pinned", .size = 64, .start = 5, .end = 6, .flags = TMEM_PLAN_BUFFER_NO_ALIAS},
        {.id = "fixed", .size = 32, .start = 0, .end = 10, .offset = 96, .flags = TMEM_PLAN_BUFFER_FIXED},
        {.id = "x", .size = 32, .start = 0, .end = 3},
        {.id = "y", .size = 32, .start = 3, .end = 6},
        {.id = "z", .size = 16, .start = 6, .end = 10},
    };
    tmem_plan_problem *p = build(b, 5);
    REQUIRE(p);
    uint64_t lb;
    CHECK_OK(tmem_plan_problem_lower_bound(p, &lb));
    CHECK(lb == 128);   /* the fixed top (96+32); the live sum is 64+32+32 = 128 too */
    tmem_plan *pl;
    REQUIRE_OK(tmem_plan_solve(p, NULL, &pl));
    CHECK(tmem_plan_offset(pl, 1) == 96);
    revalidate(p, pl, 0);
    /* "pinned" is alive for the whole plan: nothing may share its bytes */
    uint64_t po = tmem_plan_offset(pl, 0);
    for (uint32_t i = 1; i < 5; i++) {
        uint64_t o = tmem_plan_offset(pl, i);
        CHECK(o + b[i].size <= po || po + 64 <= o);
    }
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
}

static void test_decision_mode(void) {
    tmem_plan_buffer b[] = {
        {.size = 5, .start = 0, .end = 2}, {.size = 5, .start = 1, .end = 3},
        {.size = 4, .start = 2, .end = 4}, {.size = 6, .start = 0, .end = 1},
    };
    tmem_plan_problem *p = build(b, 4);
    REQUIRE(p);
    tmem_plan_desc d = {0};
    d.mode = TMEM_PLAN_DECIDE;
    d.capacity = 10;  /* below the lower bound (11 at time 0) */
    tmem_plan *pl = (tmem_plan *)1;
    CHECK_ST(tmem_plan_solve(p, &d, &pl), TMEM_E_INFEASIBLE);
    CHECK(pl == NULL);
    d.capacity = 11;
    REQUIRE_OK(tmem_plan_solve(p, &d, &pl));
    revalidate(p, pl, 11);
    tmem_plan_destroy(pl);
    /* minimising with a capacity that cannot be met */
    d.mode = TMEM_PLAN_MINIMIZE;
    d.capacity = 10;
    CHECK_ST(tmem_plan_solve(p, &d, &pl), TMEM_E_INFEASIBLE);
    tmem_plan_problem_destroy(p);
}

static void test_validator_catches(void) {
    tmem_plan_buffer b[] = {
        {.size = 8, .start = 0, .end = 4},
        {.size = 8, .alignment = 8, .start = 3, .end = 5},
        {.size = 8, .start = 4, .end = 6, .offset = 0, .flags = TMEM_PLAN_BUFFER_FIXED},
    };
    tmem_plan_problem *p = build(b, 3);
    REQUIRE(p);
    tmem_plan_violation why;
    uint64_t ok[] = {0, 8, 0};
    CHECK_OK(tmem_plan_validate(p, ok, 16, &why));
    uint64_t overlap[] = {0, 0, 8};   /* 0 and 1 alive at 3 share bytes */
    CHECK_ST(tmem_plan_validate(p, overlap, 0, &why), TMEM_E_STATE);   /* fixed moved first */
    uint64_t overlap2[] = {4, 8, 0};
    CHECK_ST(tmem_plan_validate(p, overlap2, 0, &why), TMEM_E_OVERLAP);
    CHECK(why.a == 0 && why.b == 1);
    uint64_t mis[] = {0, 12, 0};
    CHECK_ST(tmem_plan_validate(p, mis, 0, &why), TMEM_E_ALIGNMENT);
    CHECK(why.a == 1);
    CHECK_ST(tmem_plan_validate(p, ok, 15, &why), TMEM_E_FULL);
    uint64_t big[] = {UINT64_MAX - 3, 8, 0};
    CHECK_ST(tmem_plan_validate(p, big, 0, &why), TMEM_E_OVERFLOW);
    /* touching lifetimes [0,4) and [4,6) may share bytes */
    uint64_t share[] = {0, 8, 0};
    CHECK_OK(tmem_plan_validate(p, share, 0, NULL));
    tmem_plan_problem_destroy(p);
}

static void test_outputs(void) {
    tmem_plan_buffer b[] = {
        {.id = "<weird & 'id'>", .size = 300, .start = 0, .end = 3},
        {.id = "w", .size = 200, .start = 2, .end = 5},
    };
    tmem_plan_problem *p = build(b, 2);
    REQUIRE(p);
    tmem_plan *pl;
    REQUIRE_OK(tmem_plan_solve(p, NULL, &pl));
    size_t need = 0;
    tmem_plan_svg_desc sd = {.title = "t<1>"};
    CHECK_OK(tmem_plan_svg(pl, &sd, NULL, 0, &need));
    CHECK(need > 200);
    char *svg = malloc(need + 1);
    size_t got = 0;
    CHECK_OK(tmem_plan_svg(pl, &sd, svg, need + 1, &got));
    CHECK(strncmp(svg, "<?xml", 5) == 0 && strstr(svg, "<svg") && strstr(svg, "</svg>"));
    CHECK(strstr(svg, "&lt;weird &amp; &#39;id&#39;&gt;") != NULL);   /* escaped tooltip */
    CHECK(strstr(svg, "t&lt;1&gt;") != NULL);
    CHECK(strstr(svg, "stroke-dasharray") != NULL);                  /* the LB line */
    CHECK(strstr(svg, "<title>") != NULL);
    /* clipped output still NUL-terminated, full length reported */
    char small[16];
    CHECK_OK(tmem_plan_svg(pl, &sd, small, sizeof small, &got));
    CHECK(got > sizeof small && strlen(small) == sizeof small - 1);
    free(svg);
    FILE *f = tmpfile();
    REQUIRE(f);
    CHECK_OK(tmem_plan_write_json(pl, f));
    CHECK_OK(tmem_plan_write_svg(pl, NULL, f));
    long len = ftell(f);
    CHECK(len > 100);
    rewind(f);
    char head[700] = {0};
    CHECK(fread(head, 1, sizeof head - 1, f) > 0);
    CHECK(strncmp(head, "{\"version\":1,\"buffers\":2,", 25) == 0);
    CHECK(strstr(head, "\"lower_bound\":500") && strstr(head, "\"arena\":500") && strstr(head, "\"optimal\":true"));
    fclose(f);
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
}

static void test_heuristic_only_large(void) {
    /* 20,000 buffers in heuristic mode: valid, within 25% of the bound */
    tmem_plan_problem *p;
    REQUIRE_OK(tmem_plan_problem_create(&p));
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(99));
    for (int i = 0; i < 20000; i++) {
        tmem_plan_buffer b = {0};
        b.size = tmem_rng_range(&r, 1, 64) * 256;
        b.start = i / 4;
        b.end = b.start + (int64_t)tmem_rng_range(&r, 1, 40);
        REQUIRE_OK(tmem_plan_problem_add(p, &b, NULL));
    }
    tmem_plan_desc d = {0};
    d.flags = TMEM_PLAN_HEURISTIC_ONLY;
    tmem_plan *pl;
    REQUIRE_OK(tmem_plan_solve(p, &d, &pl));
    tmem_plan_info in;
    CHECK_OK(tmem_plan_get_info(pl, &in));
    CHECK(in.arena >= in.lower_bound && (double)in.arena <= 1.25 * (double)in.lower_bound);
    CHECK(in.nodes == 0);
    revalidate(p, pl, 0);
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
}

int main(void) {
    RUN(test_chain_reuses_memory);
    RUN(test_alignment_respected);
    RUN(test_fixed_and_no_alias);
    RUN(test_decision_mode);
    RUN(test_validator_catches);
    RUN(test_outputs);
    RUN(test_heuristic_only_large);
    return tmem_test_finish();
}

/* CSV problems: both header spellings, optional columns, blank/comment
 * lines, CRLF, and the round trip through tmem_plan_write_csv. */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

static tmem_plan_problem *parse(const char *text) {
    tmem_plan_problem *p = NULL;
    tmem_plan_error err;
    tmem_status st = tmem_plan_problem_parse_csv(text, strlen(text), &p, &err);
    if (st) fprintf(stderr, "parse: line %llu field '%s': %s\n", (unsigned long long)err.line, err.field, err.message);
    return p;
}

static void test_minimalloc_header(void) {
    tmem_plan_problem *p = parse("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n");
    REQUIRE(p);
    CHECK(tmem_plan_problem_count(p) == 5);
    tmem_plan_buffer b;
    CHECK_OK(tmem_plan_problem_get(p, 3, &b));
    CHECK(strcmp(b.id, "b4") == 0 && b.start == 9 && b.end == 21 && b.size == 4 && b.alignment == 1 && b.flags == 0);
    uint64_t lb;
    CHECK_OK(tmem_plan_problem_lower_bound(p, &lb));
    CHECK(lb == 12);
    CHECK_ST(tmem_plan_problem_get(p, 5, &b), TMEM_E_NOT_FOUND);
    tmem_plan_problem_destroy(p);
}

static void test_legacy_header_end_exclusive(void) {
    /* buffer,start,end,size: end stays exclusive (documented) */
    tmem_plan_problem *p = parse("buffer,start,end,size\r\nx,0,2,10\r\ny,2,4,10\r\n");
    REQUIRE(p);
    uint64_t lb;
    CHECK_OK(tmem_plan_problem_lower_bound(p, &lb));
    CHECK(lb == 10); /* x ends where y starts: they may share bytes */
    tmem_plan_problem_destroy(p);
}

static void test_optional_columns_any_order(void) {
    tmem_plan_problem *p = parse("# comment line\n\nsize,offset,alignment,upper,hint,lower,id\n"
                                 "100,,64,5,7,0,a\n"
                                 "50,128,64,5,x,1,b\n"
                                 "  30 , , , 9 , , -3 , c \n");
    REQUIRE(p);
    tmem_plan_buffer b;
    CHECK_OK(tmem_plan_problem_get(p, 0, &b));
    CHECK(b.alignment == 64 && !(b.flags & TMEM_PLAN_BUFFER_FIXED));
    CHECK_OK(tmem_plan_problem_get(p, 1, &b));
    CHECK((b.flags & TMEM_PLAN_BUFFER_FIXED) && b.offset == 128);
    CHECK_OK(tmem_plan_problem_get(p, 2, &b));
    CHECK(strcmp(b.id, "c") == 0 && b.start == -3 && b.end == 9 && b.size == 30 && b.alignment == 1);
    tmem_plan_problem_destroy(p);
}

static void test_round_trip(void) {
    tmem_plan_problem *p = parse("id,lower,upper,size,alignment\na,0,4,100,16\nb,1,3,60,1\nc,3,6,80,8\nd,4,8,20,4\n");
    REQUIRE(p);
    tmem_plan *pl;
    REQUIRE_OK(tmem_plan_solve(p, NULL, &pl));
    FILE *f = tmpfile();
    REQUIRE(f);
    CHECK_OK(tmem_plan_write_csv(pl, f));
    long len = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)len + 1);
    CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    tmem_plan_problem *q = NULL;
    CHECK_OK(tmem_plan_problem_parse_csv(buf, (size_t)len, &q, NULL));
    if (q) {
        /* read back: every buffer is fixed at its planned offset, and the
         * fixed plan is valid and solves to the same arena */
        CHECK(tmem_plan_problem_count(q) == 4);
        uint64_t off[4];
        for (uint32_t i = 0; i < 4; i++) {
            tmem_plan_buffer b;
            CHECK_OK(tmem_plan_problem_get(q, i, &b));
            CHECK(b.flags & TMEM_PLAN_BUFFER_FIXED);
            CHECK(b.offset == tmem_plan_offset(pl, i));
            off[i] = b.offset;
        }
        CHECK_OK(tmem_plan_validate(q, off, 0, NULL));
        tmem_plan *pq;
        CHECK_OK(tmem_plan_solve(q, NULL, &pq));
        tmem_plan_info a, b;
        if (pq) {
            CHECK_OK(tmem_plan_get_info(pl, &a));
            CHECK_OK(tmem_plan_get_info(pq, &b));
            CHECK(a.arena == b.arena);
        }
        tmem_plan_destroy(pq);
        tmem_plan_problem_destroy(q);
    }
    free(buf);
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
}

static void test_load_shared_files(void) {
    char path[1024];
    if (!tmem_test_shared_path("bench/minimalloc/examples/input.12.csv", path, sizeof path)) {
        tmem_test_skip_part("../shared/bench/minimalloc/examples absent");
        return;
    }
    tmem_plan_problem *p;
    tmem_plan_error err;
    REQUIRE_OK(tmem_plan_problem_load_csv(path, &p, &err));
    CHECK(tmem_plan_problem_count(p) == 5);
    tmem_plan_desc d = {0};
    d.mode = TMEM_PLAN_DECIDE;
    d.capacity = 12;
    tmem_plan *pl;
    CHECK_OK(tmem_plan_solve(p, &d, &pl));
    tmem_plan_destroy(pl);
    tmem_plan_problem_destroy(p);
    CHECK_ST(tmem_plan_problem_load_csv("/nonexistent/x.csv", &p, &err), TMEM_E_IO);
    CHECK(p == NULL && strlen(err.message) > 0);
}

int main(void) {
    RUN(test_minimalloc_header);
    RUN(test_legacy_header_end_exclusive);
    RUN(test_optional_columns_any_order);
    RUN(test_round_trip);
    RUN(test_load_shared_files);
    return tmem_test_finish();
}

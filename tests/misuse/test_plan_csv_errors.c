/* Bad CSV input: every rejection names the line and the field, returns
 * TMEM_E_PARSE (or TMEM_E_IO), leaves *out NULL, and never crashes. */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

static void expect(const char *text, uint64_t line, const char *field, const char *needle) {
    tmem_plan_problem *p = (tmem_plan_problem *)1;
    tmem_plan_error err;
    tmem_status st = tmem_plan_problem_parse_csv(text, strlen(text), &p, &err);
    CHECK_MSG(st == TMEM_E_PARSE, "'%s': %s", text, tmem_status_name(st));
    CHECK(p == NULL);
    CHECK_MSG(err.line == line, "'%s': line %llu, want %llu (%s)", text, (unsigned long long)err.line,
              (unsigned long long)line, err.message);
    CHECK_MSG(strcmp(err.field, field) == 0, "'%s': field '%s', want '%s'", text, err.field, field);
    CHECK_MSG(strstr(err.message, needle) != NULL, "'%s': message '%s' lacks '%s'", text, err.message, needle);
    if (st == TMEM_OK) tmem_plan_problem_destroy(p);
}

static void test_errors_name_line_and_field(void) {
    expect("", 0, "", "empty");
    expect("\n\n# only comments\n", 0, "", "empty");
    expect("id,lower,upper,size\n", 0, "", "no buffers");
    expect("id,lower,size\n0,1,2\n", 1, "", "upper");
    expect("id,lower,upper,size\na,0,x3,4\n", 2, "upper", "not a 64-bit integer");
    expect("id,lower,upper,size\na,0,3,-4\n", 2, "size", "negative");
    expect("id,lower,upper,size\na,0,3,0\n", 2, "size", "> 0");
    expect("id,lower,upper,size\na,0,3,4\nb,5,5,4\n", 3, "upper", "end 5 <= start 5");
    expect("buffer,start,end,size\na,7,3,4\n", 2, "end", "exclusive");
    expect("id,lower,upper,size\na,0,3,4\na,1,2,4\n", 3, "id", "duplicate id 'a'");
    expect("id,lower,upper,size\n,0,3,4\n", 2, "id", "empty id");
    expect("id,lower,upper,size\na,0,3\n", 2, "", "3 fields");
    expect("id,lower,upper,size\na,0,3,4,5\n", 2, "", "more fields");
    expect("id,lower,upper,size\na,0,3,18446744073709551616\n", 2, "size", "unsigned");
    expect("id,lower,upper,size\na,-9223372036854775809,3,4\n", 2, "lower", "64-bit");
    expect("id,lower,upper,size\na,0,3,18446744073709551615\nb,0,3,2\n", 3, "size", "overflow");
    expect("id,lower,upper,size,alignment\na,0,3,4,3\n", 2, "alignment", "power of two");
    expect("id,lower,upper,size,offset,alignment\na,0,3,4,5,4\n", 2, "offset", "multiple");
    expect("id,lower,upper,size,offset\na,0,3,4,18446744073709551615\n", 2, "offset", "overflow");
    expect("id,id,upper,size\n", 1, "id", "twice");
    expect("id,lower,upper,size\na,0,3,4\nb,0,3,4 4\n", 3, "size", "not an unsigned");
}

static void test_nul_and_binary(void) {
    const char text[] = "id,lower,upper,size\na\0b,0,3,4\n";
    tmem_plan_problem *p;
    tmem_plan_error err;
    CHECK_ST(tmem_plan_problem_parse_csv(text, sizeof text - 1, &p, &err), TMEM_E_PARSE);
    CHECK(p == NULL && err.line == 2);
    unsigned char junk[512];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 131 + 7);
    CHECK_ST(tmem_plan_problem_parse_csv((const char *)junk, sizeof junk, &p, &err), TMEM_E_PARSE);
    CHECK(p == NULL);
}

static void test_bad_arguments(void) {
    tmem_plan_problem *p;
    CHECK_ST(tmem_plan_problem_parse_csv(NULL, 3, &p, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_plan_problem_parse_csv("x", 1, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_plan_problem_load_csv(NULL, &p, NULL), TMEM_E_INVALID_ARG);
    char dir[256];
    if (tmem_test_tmpdir(dir, sizeof dir)) {
        /* a directory is not a readable file */
        tmem_plan_error err;
        tmem_status st = tmem_plan_problem_load_csv(dir, &p, &err);
        CHECK(st == TMEM_E_IO || st == TMEM_E_PARSE);
        CHECK(p == NULL);
        (void)!remove(dir);
    }
}

static void test_api_misuse(void) {
    tmem_plan_problem *p;
    REQUIRE_OK(tmem_plan_problem_create(&p));
    tmem_plan_buffer b = {0};
    b.size = 8;
    b.start = 0;
    b.end = 1;
    CHECK_OK(tmem_plan_problem_add(p, &b, NULL));   /* id NULL -> "b0" */
    tmem_plan_buffer c = b;
    c.id = "b0";
    CHECK_ST(tmem_plan_problem_add(p, &c, NULL), TMEM_E_EXISTS);
    c.id = "z";
    c.size = 0;
    CHECK_ST(tmem_plan_problem_add(p, &c, NULL), TMEM_E_INVALID_ARG);
    c.size = 8;
    c.end = c.start;
    CHECK_ST(tmem_plan_problem_add(p, &c, NULL), TMEM_E_INVALID_ARG);
    c.end = 2;
    c.alignment = 12;
    CHECK_ST(tmem_plan_problem_add(p, &c, NULL), TMEM_E_ALIGNMENT);
    c.alignment = 16;
    c.flags = TMEM_PLAN_BUFFER_FIXED;
    c.offset = 8;
    CHECK_ST(tmem_plan_problem_add(p, &c, NULL), TMEM_E_INVALID_ARG);
    c.flags = 1u << 7;
    CHECK_ST(tmem_plan_problem_add(p, &c, NULL), TMEM_E_INVALID_ARG);
    c.flags = 0;
    c.size = UINT64_MAX;
    CHECK_ST(tmem_plan_problem_add(p, &c, NULL), TMEM_E_OVERFLOW);
    CHECK(tmem_plan_problem_count(p) == 1);   /* unchanged by every failure */
    tmem_plan *pl = (tmem_plan *)1;
    tmem_plan_desc d = {0};
    d.mode = TMEM_PLAN_DECIDE;  /* without a capacity */
    CHECK_ST(tmem_plan_solve(p, &d, &pl), TMEM_E_INVALID_ARG);
    CHECK(pl == NULL);
    d.mode = (tmem_plan_mode)7;
    CHECK_ST(tmem_plan_solve(p, &d, &pl), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_plan_solve(NULL, NULL, &pl), TMEM_E_INVALID_ARG);
    tmem_plan_problem *empty;
    REQUIRE_OK(tmem_plan_problem_create(&empty));
    CHECK_ST(tmem_plan_solve(empty, NULL, &pl), TMEM_E_INVALID_ARG);
    tmem_plan_problem_destroy(empty);
    CHECK(tmem_plan_offset(NULL, 0) == TMEM_OFFSET_NONE);
    tmem_plan_info in;
    CHECK_ST(tmem_plan_get_info(NULL, &in), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_plan_write_csv(NULL, stdout), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_plan_svg(NULL, NULL, NULL, 0, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_plan_validate(NULL, NULL, 0, NULL), TMEM_E_INVALID_ARG);
    tmem_plan_destroy(NULL);
    tmem_plan_problem_destroy(NULL);
    tmem_plan_problem_destroy(p);
}

int main(void) {
    RUN(test_errors_name_line_and_field);
    RUN(test_nul_and_binary);
    RUN(test_bad_arguments);
    RUN(test_api_misuse);
    return tmem_test_finish();
}

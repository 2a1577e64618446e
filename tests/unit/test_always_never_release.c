/* The release side of TMEM_ALWAYS / TMEM_NEVER (see test_always_never.c): with
 * TMEM_DEBUG 0 they are the plain expression, so a defensive branch still
 * runs and nothing aborts. */
#include "harness.h"
#undef TMEM_DEBUG
#define TMEM_DEBUG 0
#include "base/base.h"

static int volatile_one = 1, volatile_zero = 0;

static void test_release_build_is_the_expression(void) {
    int taken = 0;
    if (TMEM_NEVER(volatile_one)) taken++;   /* the belief is wrong: branch runs */
    if (!TMEM_ALWAYS(volatile_zero)) taken++;
    CHECK(taken == 2);
    CHECK(TMEM_ALWAYS(volatile_one) == 1 && TMEM_NEVER(volatile_zero) == 0);
}

int main(void) {
    RUN(test_release_build_is_the_expression);
    return tmem_test_finish();
}

/* The tests always run against a library with the OS fault-injection hooks
 * and internal asserts, whatever the build type: Release compiles them out
 * of typedmem itself, and the tests then link typedmem_testing, which has
 * them (CMakeLists.txt). An armed fault must make the next OS call fail;
 * without the hooks it would succeed and this test fails (it never skips). */
#include <errno.h>
#include "harness.h"
#include "os/os.h"

static void test_armed_fault_fires(void) {
    CHECK_MSG(TMEM_FAULT_INJECTION == 1, "tests compiled without TMEM_FAULT_INJECTION");
    CHECK_MSG(TMEM_DEBUG >= 2, "tests compiled with TMEM_DEBUG %d", TMEM_DEBUG);
    tmem__os_fault_arm(TMEM__OS_ANY, 0, false, ENOMEM);
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.budget = 16ull << 20;
    tmem_status st = tmem_context_create(&cd, &ctx);
    bool fired = tmem__os_fault_fired();
    tmem__os_fault_disarm();
    tmem_context_destroy(ctx);
    CHECK_MSG(fired && st != TMEM_OK, "an armed fault did not fire (status %s): hooks compiled out?",
              tmem_status_name(st));
    /* and disarmed, the same call works */
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_armed_fault_fires);
    return tmem_test_finish();
}

/* TMEM_ALWAYS / TMEM_NEVER with SQLite's meaning (src/base/base.h): in a
 * debug or testing build (TMEM_DEBUG >= 1, as every test is compiled) a
 * broken belief aborts; otherwise they are the expression. The release side
 * is checked by compiling this file's twin with TMEM_DEBUG 0
 * (test_always_never_release.c). */
#include "harness.h"
#include "base/base.h"
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int volatile_one = 1, volatile_zero = 0;

/* Run f in a child; true when it died of SIGABRT. */
static bool aborts(void (*f)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr); /* the expected assert message */
        f();
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return false;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void never_true(void) {
    if (TMEM_NEVER(volatile_one)) _exit(1);
}
static void always_false(void) {
    if (!TMEM_ALWAYS(volatile_zero)) _exit(1);
}
static void beliefs_hold(void) {
    if (TMEM_NEVER(volatile_zero) || !TMEM_ALWAYS(volatile_one)) _exit(1);
}

static void test_debug_build_asserts(void) {
    CHECK(TMEM_DEBUG >= 1);
    CHECK(TMEM_ALWAYS(volatile_one) == 1);
    CHECK(TMEM_NEVER(volatile_zero) == 0);
    CHECK(aborts(never_true));
    CHECK(aborts(always_false));
    CHECK(!aborts(beliefs_hold));
}

int main(void) {
    RUN(test_debug_build_asserts);
    return tmem_test_finish();
}

/* The OS layer's threads, locks, shared libraries and environment (os.h):
 * the wrappers the rest of the library uses instead of pthreads, dlopen,
 * getenv and sysconf (regress/os_calls_only_in_os keeps it so). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "os/os.h"

typedef struct shared {
    tmem__os_mutex m;
    tmem__os_cond c;
    int stage;
    atomic_bool held_elsewhere;
} shared;

static void *holder(void *arg) {
    shared *s = arg;
    tmem__os_mutex_lock(&s->m);
    atomic_store(&s->held_elsewhere, true);
    while (s->stage == 0) tmem__os_cond_wait(&s->c, &s->m); /* released while waiting */
    s->stage = 2;
    tmem__os_cond_broadcast(&s->c);
    tmem__os_mutex_unlock(&s->m);
    return NULL;
}

static void test_mutex_cond_thread(void) {
    shared s = {0};
    REQUIRE_OK(tmem__os_mutex_init(&s.m, 0));
    REQUIRE_OK(tmem__os_cond_init(&s.c));
    CHECK(tmem__os_mutex_trylock(&s.m));
    tmem__os_mutex_unlock(&s.m);
    tmem__os_thread t;
    REQUIRE_OK(tmem__os_thread_create(&t, holder, &s));
    while (!atomic_load(&s.held_elsewhere)) {
    }
    /* the holder waits on the condition: the lock is free again, then we
     * wake it and wait for its answer */
    tmem__os_mutex_lock(&s.m);
    s.stage = 1;
    tmem__os_cond_broadcast(&s.c);
    while (s.stage != 2) tmem__os_cond_wait(&s.c, &s.m);
    tmem__os_mutex_unlock(&s.m);
    tmem__os_thread_join(t);
    CHECK(s.stage == 2);
    tmem__os_cond_destroy(&s.c);
    tmem__os_mutex_destroy(&s.m);
}

static void *try_once(void *arg) {
    tmem__os_mutex *m = arg;
    bool got = tmem__os_mutex_trylock(m);
    if (got) tmem__os_mutex_unlock(m);
    return got ? arg : NULL;
}

static void test_recursive_and_trylock(void) {
    tmem__os_mutex m;
    REQUIRE_OK(tmem__os_mutex_init(&m, TMEM__OS_MUTEX_RECURSIVE));
    tmem__os_mutex_lock(&m);
    CHECK(tmem__os_mutex_trylock(&m)); /* the owner again */
    tmem__os_mutex_unlock(&m);
    /* held here: another thread's trylock says busy */
    pthread_t t; /* the test's own thread, to read try_once's answer */
    void *res = &m;
    REQUIRE(pthread_create(&t, NULL, try_once, &m) == 0);
    pthread_join(t, &res);
    CHECK(res == NULL);
    tmem__os_mutex_unlock(&m);
    REQUIRE(pthread_create(&t, NULL, try_once, &m) == 0);
    pthread_join(t, &res);
    CHECK(res == &m);
    tmem__os_mutex_destroy(&m);
    CHECK_ST(tmem__os_mutex_init(&m, 0x80), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_mutex_init(NULL, 0), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_cond_init(NULL), TMEM_E_INVALID_ARG);
}

static void *nothing(void *arg) { return arg; }

static void test_thread_create_injected(void) {
    tmem__os_thread t = {0};
    tmem__os_fault_arm(TMEM__OS_THREAD_CREATE, 0, false, EAGAIN);
    CHECK_ST(tmem__os_thread_create(&t, nothing, NULL), TMEM_E_NO_MEMORY);
    CHECK(tmem__os_fault_fired());
    tmem__os_fault_disarm();
    REQUIRE_OK(tmem__os_thread_create(&t, nothing, NULL));
    tmem__os_thread_join(t);
    CHECK_ST(tmem__os_thread_create(NULL, nothing, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_thread_create(&t, NULL, NULL), TMEM_E_INVALID_ARG);
}

static void test_libraries(void) {
    void *lib = (void *)1;
    CHECK_ST(tmem__os_lib_open("libtmem-no-such-library.so.7", &lib), TMEM_E_NOT_FOUND);
    CHECK(lib == NULL);
    CHECK_ST(tmem__os_lib_open(NULL, &lib), TMEM_E_INVALID_ARG);
    size_t before = tmem__os_lib_count();
    CHECK(before > 0); /* this program at least */
    REQUIRE_OK(tmem__os_lib_open("libm.so.6", &lib));
    CHECK(tmem__os_lib_symbol(lib, "cos") != NULL);
    CHECK(tmem__os_lib_symbol(lib, "tmem_no_such_symbol") == NULL);
    CHECK(tmem__os_lib_symbol(NULL, "cos") == NULL);
    tmem__os_lib_pin_since(tmem__os_lib_count()); /* nothing new: nothing pinned */
    tmem__os_lib_close(lib);
    tmem__os_lib_close(NULL);
    /* injected: the "driver absent" path on any machine */
    tmem__os_fault_arm(TMEM__OS_LIB_OPEN, 0, false, ENOENT);
    CHECK(tmem__os_lib_open("libm.so.6", &lib) != TMEM_OK);
    CHECK(tmem__os_fault_fired() && lib == NULL);
    tmem__os_fault_disarm();
}

static void test_environment_and_memory(void) {
    REQUIRE(setenv("TMEM_TEST_OS_ENV", "42", 1) == 0);
    const char *v = tmem__os_getenv("TMEM_TEST_OS_ENV");
    CHECK(v && !strcmp(v, "42"));
    REQUIRE(unsetenv("TMEM_TEST_OS_ENV") == 0);
    CHECK(tmem__os_getenv("TMEM_TEST_OS_ENV") == NULL);
    CHECK(tmem__os_getenv(NULL) == NULL);
    tmem_system_limits lim;
    REQUIRE_OK(tmem_system_limits_read(&lim));
    uint64_t phys = tmem__os_physical_bytes();
    CHECK(phys > 0);
    CHECK_MSG(!lim.mem_total || (phys >= lim.mem_total / 2 && phys <= lim.mem_total * 2),
              "sysconf %llu vs MemTotal %llu", (unsigned long long)phys, (unsigned long long)lim.mem_total);
}

int main(void) {
    RUN(test_mutex_cond_thread);
    RUN(test_recursive_and_trylock);
    RUN(test_thread_create_injected);
    RUN(test_libraries);
    RUN(test_environment_and_memory);
    return tmem_test_finish();
}

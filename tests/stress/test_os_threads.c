/* The OS layer under threads (TSan): live counters are exact with
 * concurrent map/unmap/memfd/close, and a persistent fault armed on one
 * thread never leaks into the others. */
#include "harness.h"
#include "os/os.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

enum { THREADS = 4, ROUNDS = 400 };

typedef struct worker {
    int index;
    bool faulty;        /* arms a persistent fault on itself */
    unsigned ok, failed;
    unsigned wrong;     /* unexpected results */
} worker;

static atomic_int g_go;

static void *run(void *arg) {
    worker *w = arg;
    size_t pg = tmem__os_page_size();
    while (!atomic_load(&g_go)) {}
    if (w->faulty) tmem__os_fault_arm(TMEM__OS_ANY, 0, true, ENOMEM);
    for (int i = 0; i < ROUNDS; i++) {
        void *p = NULL;
        tmem_status st = tmem__os_map_anon(4 * pg, 0, &p, NULL);
        if (st == TMEM_OK) {
            ((volatile char *)p)[0] = (char)i;
            if (tmem__os_unmap(p, 4 * pg) != TMEM_OK) w->wrong++;
            w->ok++;
        } else {
            w->failed++;
            if (!w->faulty || st != TMEM_E_NO_MEMORY || p != NULL) w->wrong++;
        }
        int fd = -1;
        st = tmem__os_memfd_create("stress", pg, &fd);
        if (st == TMEM_OK) {
            if (tmem__os_close(fd) != TMEM_OK) w->wrong++;
        } else if (st != TMEM_E_UNSUPPORTED && !w->faulty) {
            w->wrong++;
        }
    }
    if (w->faulty) {
        if (!tmem__os_fault_fired()) w->wrong++;
        tmem__os_fault_disarm();
    }
    return NULL;
}

static void test_threads(void) {
    int64_t m0 = tmem__os_live_mappings(), f0 = tmem__os_live_fds();
    pthread_t t[THREADS];
    worker w[THREADS] = {{0}};
    for (int i = 0; i < THREADS; i++) {
        w[i].index = i;
        w[i].faulty = i == 0;
        REQUIRE(pthread_create(&t[i], NULL, run, &w[i]) == 0);
    }
    atomic_store(&g_go, 1);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        CHECK_MSG(w[i].wrong == 0, "thread %d: %u unexpected results", i, w[i].wrong);
        if (w[i].faulty) CHECK(w[i].ok == 0 && w[i].failed == ROUNDS);
        else CHECK(w[i].ok == ROUNDS && w[i].failed == 0);
    }
    CHECK(tmem__os_live_mappings() == m0);
    CHECK(tmem__os_live_fds() == f0);
    CHECK(!tmem__os_fault_fired()); /* the main thread never armed */
}

int main(void) {
#if !TMEM_FAULT_INJECTION
    printf("fault injection compiled out: skipped\n");
    return 0;
#endif
    RUN(test_threads);
    return tmem_test_finish();
}

/* Child processes of the benches: this binary as `tmem bench <args...>`
 * (one result line back, so each variant's memory peak is its own
 * process's), and any program run with its Private_Dirty sampled while it
 * runs (the runtime's own runs, the llama.cpp peer's tools). */
#include <poll.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench/bench.h"
#include "typedmem/typedmem.h"

bool tmem_bench_child(char *const *args, char *out, size_t cap) {
    int pfd[2];
    if (cap < 2 || pipe(pfd) != 0) return false;
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]), close(pfd[1]);
        return false;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]), close(pfd[1]);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(pfd[1]);
    size_t n = 0;
    ssize_t got;
    while (n + 1 < cap && (got = read(pfd[0], out + n, cap - 1 - n)) > 0) n += (size_t)got;
    close(pfd[0]);
    int status;
    waitpid(pid, &status, 0);
    out[n] = 0;
    return n > 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool tmem_bench_sampled(char *const *argv, bool with_stderr, char *out, size_t cap,
                        tmem_bench_sample *r) {
    int pfd[2];
    *r = (tmem_bench_sample){0};
    if (cap < 2 || pipe(pfd) != 0) return false;
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]), close(pfd[1]);
        return false;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        if (with_stderr) dup2(pfd[1], 2);
        close(pfd[0]), close(pfd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t n = 0;
    for (;;) {
        struct pollfd p = {pfd[0], POLLIN, 0};
        int ready = poll(&p, 1, TMEM_BENCH_SAMPLE_MS);
        tmem_footprint fp;
        if (tmem_footprint_read_pid(pid, &fp) == TMEM_OK && (double)fp.private_dirty > r->peak_dirty)
            r->peak_dirty = (double)fp.private_dirty;
        if (ready <= 0) continue;
        char spill[4096]; /* past the buffer: keep draining, the child must not block */
        bool room = n + 1 < cap;
        ssize_t got = room ? read(pfd[0], out + n, cap - 1 - n) : read(pfd[0], spill, sizeof spill);
        if (got <= 0) break;
        if (room) n += (size_t)got;
    }
    close(pfd[0]);
    out[n] = 0;
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) return false;
    r->wall_s = now_s() - t0;
    r->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

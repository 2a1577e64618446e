/* Run this binary as `tmem bench <args...>` in a fresh child process and
 * read what it prints (one result line), so each variant's memory peak is
 * its own process's. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench/bench.h"

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

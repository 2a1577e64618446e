/* model_cache.c: see model_cache.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "model_cache.h"

static bool cache_dir(char *buf, size_t cap) {
    const char *d = getenv("TMEM_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (d && *d) n = snprintf(buf, cap, "%s", d);
    else if (x && *x) n = snprintf(buf, cap, "%s/tmem", x);
    else if (h && *h) n = snprintf(buf, cap, "%s/.cache/tmem", h);
    else return false;
    return n > 0 && (size_t)n < cap;
}

static bool mkdirs(const char *path) {
    char tmp[1024];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return false;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) && errno != EEXIST) return false;
            *p = '/';
        }
    return !mkdir(tmp, 0755) || errno == EEXIST;
}

bool tmem_model_cache_path(const char *preset, const char *dtype, char *buf, size_t cap) {
    char dir[900];
    if (!cache_dir(dir, sizeof dir)) return false;
    int n = snprintf(buf, cap, "%s/%s-%s-random.gguf", dir, preset, dtype);
    return n > 0 && (size_t)n < cap;
}

bool tmem_self_exe(char *buf, size_t cap) {
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0) return false;
    buf[n] = 0;
    return true;
}

bool tmem_model_cache_ensure(const char *preset, const char *dtype, char *buf, size_t cap) {
    char dir[900], exe[1024], tmp[1100];
    struct stat st;
    if (!tmem_model_cache_path(preset, dtype, buf, cap) || !cache_dir(dir, sizeof dir)) {
        fprintf(stderr, "tmem: no cache directory (set TMEM_CACHE_DIR or HOME)\n");
        return false;
    }
    if (stat(buf, &st) == 0 && st.st_size > 0) return true;
    if (!mkdirs(dir) || !tmem_self_exe(exe, sizeof exe)) {
        fprintf(stderr, "tmem: cannot create %s\n", dir);
        return false;
    }
    snprintf(tmp, sizeof tmp, "%s.part", buf);
    printf("generating %s once (random weights, cached for next time)...\n", buf);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl(exe, exe, "gen", "--preset", preset, "--dtype", dtype, tmp, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    bool ok = pid >= 0 && waitpid(pid, &status, 0) >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    /* write the pages back now: a freshly written file's page-cache pages are
     * dirty until writeback, and the kernel counts dirty file pages mapped by
     * one process as its Private_Dirty, which would inflate the first run */
    int fd = ok ? open(tmp, O_RDONLY) : -1;
    if (fd >= 0) {
        ok = fsync(fd) == 0;
        close(fd);
    }
    if (!ok || rename(tmp, buf) != 0) {
        fprintf(stderr, "tmem: tmem gen --preset %s --dtype %s failed\n", preset, dtype);
        unlink(tmp);
        return false;
    }
    return true;
}

/* model_cache.c: see model_cache.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "run/model_cache.h"

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

/* fsync a freshly written file: its page-cache pages are dirty until
 * writeback, and the kernel counts dirty file pages mapped by one process as
 * its Private_Dirty, which would inflate the first run */
static bool flush_file(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return false;
    bool ok = fsync(fd) == 0;
    close(fd);
    return ok;
}

/* `tmem gen --preset P --dtype D TEXT [--mmproj MMPROJ]` into .part files,
 * flushed, then renamed into place. */
static bool gen_cached(const char *preset, const char *dtype, const char *text,
                       const char *mmproj) {
    char dir[900], exe[1024], tmp[1100], tmp_mm[1100];
    if (!cache_dir(dir, sizeof dir) || !mkdirs(dir) || !tmem_self_exe(exe, sizeof exe)) {
        fprintf(stderr, "tmem: cannot create the cache directory %s\n", dir);
        return false;
    }
    snprintf(tmp, sizeof tmp, "%s.part", text);
    snprintf(tmp_mm, sizeof tmp_mm, "%s.part", mmproj ? mmproj : "");
    printf("generating %s%s%s once (random weights, cached for next time)...\n", text,
           mmproj ? " and " : "", mmproj ? mmproj : "");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (mmproj)
            execl(exe, exe, "gen", "--preset", preset, "--dtype", dtype, tmp, "--mmproj", tmp_mm,
                  (char *)NULL);
        else
            execl(exe, exe, "gen", "--preset", preset, "--dtype", dtype, tmp, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    bool ok = pid >= 0 && waitpid(pid, &status, 0) >= 0 && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0;
    ok = ok && flush_file(tmp) && (!mmproj || flush_file(tmp_mm));
    ok = ok && (!mmproj || rename(tmp_mm, mmproj) == 0) && rename(tmp, text) == 0;
    if (!ok) {
        fprintf(stderr, "tmem: tmem gen --preset %s --dtype %s%s failed\n", preset, dtype,
                mmproj ? " --mmproj" : "");
        unlink(tmp);
        if (mmproj) unlink(tmp_mm);
    }
    return ok;
}

static bool cached(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

bool tmem_model_cache_ensure(const char *preset, const char *dtype, char *buf, size_t cap) {
    if (!tmem_model_cache_path(preset, dtype, buf, cap)) {
        fprintf(stderr, "tmem: no cache directory (set TMEM_CACHE_DIR or HOME)\n");
        return false;
    }
    return cached(buf) || gen_cached(preset, dtype, buf, NULL);
}

bool tmem_model_cache_ensure_vision(const char *preset, const char *dtype, char *text,
                                    size_t text_cap, char *mmproj, size_t mmproj_cap) {
    if (!tmem_model_cache_path(preset, dtype, text, text_cap)) {
        fprintf(stderr, "tmem: no cache directory (set TMEM_CACHE_DIR or HOME)\n");
        return false;
    }
    int stem = (int)(strlen(text) - strlen(".gguf"));
    int n = snprintf(mmproj, mmproj_cap, "%.*s.mmproj.gguf", stem, text);
    if (n <= 0 || (size_t)n >= mmproj_cap) return false;
    /* a missing tower regenerates the pair (same seed: the same text bytes) */
    return (cached(text) && cached(mmproj)) || gen_cached(preset, dtype, text, mmproj);
}

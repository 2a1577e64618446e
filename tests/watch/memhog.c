/* memhog: programs of known footprint for tmem watch's tests.
 *
 *   memhog dirty MIB HOLD_MS      dirty exactly MIB MiB of anonymous memory
 *   memhog file PATH HOLD_MS      map PATH read-only and read every page (clean)
 *   memhog memfd MIB HOLD_MS      fill a memfd of MIB MiB, mapped twice
 *   memhog limit                  print TMEM_LIMIT as typedmem's limit discovery sees it
 *
 * Each holds its memory HOLD_MS milliseconds, then exits 0. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "typedmem/typedmem.h"

static void hold(const char *ms) {
    long v = atol(ms);
    struct timespec t = {v / 1000, (v % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static int dirty(size_t mib, const char *ms) {
    size_t n = mib << 20;
    unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    for (size_t i = 0; i < n; i += 4096) p[i] = (unsigned char)(i >> 12 | 1);
    hold(ms);
    return 0;
}

static int file(const char *path, const char *ms) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return 1;
    const volatile unsigned char *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return 1;
    unsigned sum = 0;
    for (off_t i = 0; i < st.st_size; i += 4096) sum += p[i];
    hold(ms);
    return sum == 0xFFFFFFFFu; /* keeps the reads */
}

static int memfd(size_t mib, const char *ms) {
    size_t n = mib << 20;
    int fd = memfd_create("memhog", 0);
    if (fd < 0 || ftruncate(fd, (off_t)n) != 0) return 1;
    unsigned char *a = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    unsigned char *b = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
    if (a == MAP_FAILED || b == MAP_FAILED) return 1;
    unsigned sum = 0;
    for (size_t i = 0; i < n; i += 4096) a[i] = 1;
    for (size_t i = 0; i < n; i += 4096) sum += b[i];
    hold(ms);
    return sum == 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "dirty")) return dirty((size_t)atol(argv[2]), argv[3]);
    if (argc == 4 && !strcmp(argv[1], "file")) return file(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "memfd")) return memfd((size_t)atol(argv[2]), argv[3]);
    if (argc == 2 && !strcmp(argv[1], "limit")) {
        tmem_system_limits l;
        if (tmem_system_limits_read(&l) != TMEM_OK) return 1;
        printf("env_limit=%llu effective=%llu\n", (unsigned long long)l.env_limit,
               (unsigned long long)l.effective);
        return 0;
    }
    fprintf(stderr, "usage: memhog dirty|file|memfd ARG HOLD_MS | memhog limit\n");
    return 2;
}

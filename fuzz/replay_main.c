/*
 * Corpus replay driver: runs every file of a fuzz corpus through a target's
 * LLVMFuzzerTestOneInput, so `make test` (gcc, no libFuzzer) covers the seed
 * corpus and every saved crash. Usage: replay <dir-or-file>...
 *
 * Exit status: 0 when at least one input ran and the target returned 0 for
 * each; 1 otherwise (an empty or missing corpus is a failure, so a broken
 * setup cannot pass silently). Crashes show up as the sanitizer's report.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path, unsigned *count) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        return 1;
    }
    /* Copy into an exact-size buffer so ASan catches reads past the end, as
     * libFuzzer does. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) { free(buf); return 1; }
    memcpy(exact, buf, len);
    free(buf);
    int rc = LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    (*count)++;
    if (rc != 0) fprintf(stderr, "replay: %s returned %d\n", path, rc);
    return rc != 0;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, unsigned *count) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int failed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            char **nn = realloc(names, nc * sizeof *nn);
            if (!nn) { failed = 1; break; }
            names = nn;
            cap = nc;
        }
        size_t need = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(need);
        if (!names[n]) { failed = 1; break; }
        snprintf(names[n], need, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names); /* stable order for logs */
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) failed |= run_file(names[i], count);
        free(names[i]);
    }
    free(names);
    return failed;
}

int main(int argc, char **argv) {
    unsigned count = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            failed = 1;
        } else if (S_ISDIR(st.st_mode)) {
            failed |= run_dir(argv[i], &count);
        } else {
            failed |= run_file(argv[i], &count);
        }
    }
    printf("replayed %u inputs, %s\n", count, failed ? "FAILED" : "ok");
    return failed || count == 0;
}

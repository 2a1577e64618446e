/* What tests/gpu/test_vulkan.c and test_cuda.c share: a heap holding one
 * allocation with its device span, and a second process that imports an
 * exported fd (argv: --import-child FD SIZE OFFSET; the fd crosses exec). */
#ifndef TMEM_GPU_TEST_UTIL_H
#define TMEM_GPU_TEST_UTIL_H

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "typedmem/gpu.h"

/* A type, or NULL with the reason printed. */
static inline tmem_type *gpu_type(tmem_context *ctx, const char *name, tmem_placement pl, uint64_t reserve,
                                  uint64_t budget, uint32_t flags) {
    tmem_type_desc td = {0};
    td.name = name;
    td.placement = pl;
    td.reserve = reserve;
    td.budget = budget;
    td.flags = flags;
    tmem_type *t = NULL;
    tmem_status st = tmem_type_create(ctx, &td, &t);
    if (st != TMEM_OK) printf("type %s: %s\n", name, tmem_status_name(st));
    return t;
}

/* A heap of heap_size over `type` with one allocation of `size` bytes. */
static inline tmem_status gpu_one_alloc(tmem_context *ctx, tmem_type *type, uint64_t heap_size, uint64_t size,
                                        tmem_heap **heap, tmem_alloc_info *ai, tmem_device_span *span) {
    tmem_heap_desc hd = {0};
    hd.type = type;
    hd.size = heap_size;
    tmem_status st = tmem_heap_create(ctx, &hd, heap);
    if (st != TMEM_OK) return st;
    tmem_alloc_desc ad = {0};
    ad.size = size;
    st = tmem_heap_alloc_ex(*heap, &ad, ai);
    if (st == TMEM_OK) st = tmem_heap_device_span(*heap, ai->offset, size, span);
    return st;
}

/* Run this test binary again as the importer; its exit code, -1 if it did
 * not run. The fd is closed here. */
static inline int gpu_spawn_importer(const char *name, int fd, uint64_t size, uint64_t offset) {
    (void)fcntl(fd, F_SETFD, 0); /* inherited by the child */
    char a1[32], a2[32], a3[32];
    snprintf(a1, sizeof a1, "%d", fd);
    snprintf(a2, sizeof a2, "%llu", (unsigned long long)size);
    snprintf(a3, sizeof a3, "%llu", (unsigned long long)offset);
    char *argv[] = {(char *)name, (char *)"--import-child", a1, a2, a3, NULL};
    extern char **environ;
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    close(fd);
    if (rc != 0) return -1;
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

/* In the child: main() hands its arguments here. */
static inline bool gpu_is_import_child(int argc, char **argv, int *fd, uint64_t *size, uint64_t *offset) {
    if (argc != 5 || strcmp(argv[1], "--import-child") != 0) return false;
    *fd = atoi(argv[2]);
    *size = strtoull(argv[3], NULL, 10);
    *offset = strtoull(argv[4], NULL, 10);
    return true;
}

#endif

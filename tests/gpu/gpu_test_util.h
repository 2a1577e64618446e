/* What tests/gpu/test_vulkan.c and test_cuda.c share: a heap holding one
 * allocation with its device span, and a second process that imports an
 * exported fd (argv: --import-child FD SIZE OFFSET; the fd crosses exec);
 * the heap counters the vision encoder's test and bench hold flat. */
#ifndef TMEM_GPU_TEST_UTIL_H
#define TMEM_GPU_TEST_UTIL_H

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "typedmem/gpu.h"
#include "typedmem/trace.h"

/* Committed bytes and allocations made, summed over every type of ctx. */
typedef struct gpu_counters {
    uint64_t committed, allocs;
} gpu_counters;
static inline gpu_counters gpu_heap_counters(tmem_context *ctx) {
    gpu_counters c = {0, 0};
    for (uint32_t i = 0; i < tmem_type_count(ctx); i++) {
        tmem_type *t;
        tmem_type_stats ts;
        if (tmem_type_at(ctx, i, &t) == TMEM_OK && tmem_type_get_stats(t, &ts) == TMEM_OK)
            c.committed += ts.committed.current, c.allocs += ts.alloc_count;
    }
    return c;
}

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

/* A fresh context (1 GiB budget, no default types) with a gpu of `desc`.
 * TMEM_E_UNSUPPORTED, nothing left open, and "SKIP part: <lacking>" printed
 * when the device lacks what `desc` asks for; any other failure returned. */
static inline tmem_status gpu_attach_fresh(const tmem_gpu_desc *desc, const char *lacking,
                                           tmem_context **ctx, tmem_gpu **gpu) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    *gpu = NULL;
    tmem_status st = tmem_context_create(&cd, ctx);
    if (st != TMEM_OK) return st;
    st = tmem_gpu_attach(*ctx, desc, gpu);
    if (st == TMEM_E_UNSUPPORTED) printf("SKIP part: %s\n", lacking);
    if (st != TMEM_OK) {
        tmem_context_destroy(*ctx);
        *ctx = NULL;
    }
    return st;
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

/* Device bytes per role on a real backend: one role allocating in `dev` (a
 * device type) and in a host type counts both in in_use and only the device
 * part in device_in_use; a trace of it shows the device part by role. */
static inline void gpu_check_role_device_bytes(tmem_context *ctx, tmem_type *dev) {
    tmem_type *host = gpu_type(ctx, "/memory/role-host", TMEM_PLACEMENT_HOST, 4u << 20, 0, 0);
    REQUIRE(host);
    tmem_heap *hd, *hh;
    tmem_alloc_info ad, ah;
    tmem_device_span span;
    tmem_role_stats r0, r1, r2;
    REQUIRE_OK(tmem_role_get_stats(ctx, TMEM_ROLE_ACTIVATION, &r0));
    tmem_trace_desc td = {0};
    td.capacity = 256;
    REQUIRE_OK(tmem_trace_start(ctx, &td));
    tmem_heap_desc hdesc = {0};
    hdesc.type = dev;
    hdesc.size = 2u << 20;
    REQUIRE_OK(tmem_heap_create(ctx, &hdesc, &hd));
    hdesc.type = host;
    hdesc.size = 1u << 20;
    REQUIRE_OK(tmem_heap_create(ctx, &hdesc, &hh));
    tmem_alloc_desc a = {0};
    a.role = TMEM_ROLE_ACTIVATION;
    a.size = 1u << 20;
    REQUIRE_OK(tmem_heap_alloc_ex(hd, &a, &ad));
    CHECK_OK(tmem_heap_device_span(hd, ad.offset, a.size, &span)); /* real device memory */
    a.size = 100000;
    REQUIRE_OK(tmem_heap_alloc_ex(hh, &a, &ah));
    REQUIRE_OK(tmem_role_get_stats(ctx, TMEM_ROLE_ACTIVATION, &r1));
    CHECK(r1.in_use.current - r0.in_use.current == (1u << 20) + 100000);
    CHECK(r1.device_in_use.current - r0.device_in_use.current == 1u << 20);
    CHECK(r1.device_live_count - r0.device_live_count == 1 && r1.live_count - r0.live_count == 2);
    CHECK_OK(tmem_context_check(ctx));
    tmem_trace_data *snap = NULL;
    CHECK_OK(tmem_trace_snapshot(ctx, &snap));
    CHECK_OK(tmem_trace_stop(ctx));
    tmem_trace_peak_info p;
    if (snap && tmem_trace_peak(snap, &p) == TMEM_OK) {
        CHECK(p.peak_bytes == (1u << 20) + 100000 && p.device_peak_bytes == 1u << 20);
        CHECK(p.device_by_role_count == 1 && p.device_by_role[0].id == TMEM_ROLE_ACTIVATION);
        CHECK(p.device_by_role[0].bytes == 1u << 20);
    } else {
        CHECK_MSG(0, "no trace peak");
    }
    tmem_trace_data_destroy(snap);
    CHECK_OK(tmem_heap_free_offset(hd, ad.offset));
    REQUIRE_OK(tmem_role_get_stats(ctx, TMEM_ROLE_ACTIVATION, &r2));
    CHECK(r2.device_in_use.current == r0.device_in_use.current);
    CHECK(r2.in_use.current - r0.in_use.current == 100000);
    tmem_heap_destroy(hd);
    tmem_heap_destroy(hh);
}

#endif

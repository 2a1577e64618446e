/* Accounted vs OS-measured footprint: after touching committed memory, each
 * pool's resident bytes equal its committed bytes, and the process's
 * Private_Dirty grows by what the context accounts, within one page per pool
 * (plus the test's own stack and stdio). Clean file pages likewise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "core/core.h"
#include "os/os.h"

#define MiB (1ull << 20)
#define NPOOLS 4

static int64_t dirty_delta(const tmem_footprint *a, const tmem_footprint *b) {
    return (int64_t)b->private_dirty - (int64_t)a->private_dirty;
}

static void test_dirty(void) {
    tmem_footprint f0, f1, f2;
    if (tmem_footprint_read(&f0) == TMEM_E_UNSUPPORTED) {
        printf("skipped: no smaps_rollup on this system\n");
        return;
    }
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 256 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *t[NPOOLS];
    uint64_t sizes[NPOOLS] = {3 * MiB, 17 * MiB + 4096, 40 * MiB, 1 * MiB + 12288};
    const char *names[NPOOLS] = {"/memory/a", "/memory/b", "/memory/c", "/memory/d"};
    for (int i = 0; i < NPOOLS; i++) {
        tmem_type_desc td = {0};
        td.name = names[i];
        td.reserve = 64 * MiB;
        REQUIRE_OK(tmem_type_create(ctx, &td, &t[i]));
        /* Warm the metadata (bitmap leaves) so the measurement sees only pages. */
        REQUIRE_OK(tmem__pool_commit(t[i], 0, 1));
        tmem__pool_decommit(t[i], 0, 4096);
    }
    uint64_t page = tmem__os_page_size();
    REQUIRE_OK(tmem_footprint_read(&f1));
    for (int i = 0; i < NPOOLS; i++) {
        REQUIRE_OK(tmem__pool_commit(t[i], 0, sizes[i]));
        memset(tmem__pool_ptr(t[i], 0), i + 1, sizes[i]); /* touch every byte */
    }
    REQUIRE_OK(tmem_footprint_read(&f2));
    uint64_t acc_dirty, acc_clean;
    CHECK_OK(tmem_context_accounted(ctx, &acc_dirty, &acc_clean));
    uint64_t want = 0;
    for (int i = 0; i < NPOOLS; i++) {
        uint64_t res = 0;
        tmem_type_stats s;
        CHECK_OK(tmem__pool_residency(t[i], 0, 64 * MiB, &res));
        CHECK_OK(tmem_type_get_stats(t[i], &s));
        CHECK_MSG(res == s.committed.current, "pool %d: resident %llu, committed %llu", i, (unsigned long long)res,
                  (unsigned long long)s.committed.current);
        uint64_t rounded = (sizes[i] + page - 1) / page * page;
        CHECK(s.committed.current == rounded);
        want += rounded;
    }
    CHECK(acc_dirty == want && acc_clean == 0);
    int64_t os = dirty_delta(&f1, &f2);
    int64_t diff = os - (int64_t)acc_dirty;
    printf("private dirty: accounted %llu, OS delta %lld, diff %lld bytes (tolerance %llu)\n", (unsigned long long)acc_dirty, (long long)os,
           (long long)diff, (unsigned long long)((NPOOLS + 2) * page));
    CHECK_MSG(llabs(diff) <= (long long)((NPOOLS + 2) * page), "diff %lld", (long long)diff);
    /* Decommit half of each pool: both sides drop by the same amount. */
    uint64_t dropped = 0;
    for (int i = 0; i < NPOOLS; i++) {
        uint64_t half = sizes[i] / 2 / page * page;
        tmem_type_stats before, after;
        CHECK_OK(tmem_type_get_stats(t[i], &before));
        tmem__pool_decommit(t[i], 0, half);
        CHECK_OK(tmem_type_get_stats(t[i], &after));
        CHECK(before.committed.current - after.committed.current == half);
        dropped += half;
    }
    tmem_footprint f3;
    REQUIRE_OK(tmem_footprint_read(&f3));
    int64_t os_drop = -dirty_delta(&f2, &f3);
    printf("after decommit: accounted drop %llu, OS drop %lld\n", (unsigned long long)dropped, (long long)os_drop);
    CHECK_MSG(llabs(os_drop - (int64_t)dropped) <= (long long)((NPOOLS + 2) * page), "drop diff %lld", (long long)(os_drop - (int64_t)dropped));
    tmem_context_destroy(ctx);
}

/* Clean file pages charged to a FILE type match what smaps counts as clean. */
static void test_clean(void) {
    tmem_footprint f0, f1;
    if (tmem_footprint_read(&f0) == TMEM_E_UNSUPPORTED) return;
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/weights.bin", dir);
    const uint64_t size = 8 * MiB;
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    char block[4096];
    for (uint64_t off = 0; off < size; off += sizeof block) {
        memset(block, (int)(off >> 12), sizeof block);
        fwrite(block, 1, sizeof block, f);
    }
    /* Written pages sit dirty in the page cache until written back; a model
     * file on disk is clean, so flush it first. */
    fflush(f);
    CHECK(fsync(fileno(f)) == 0);
    fclose(f);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 64 * MiB;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *w;
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_WEIGHTS, &w));
    int fd;
    uint64_t fsize;
    REQUIRE_OK(tmem__os_file_open(path, &fd, &fsize));
    CHECK(fsize == size);
    void *map;
    REQUIRE_OK(tmem__os_map_fd(fd, 0, size, false, false, &map));
    CHECK_OK(tmem__type_charge(w, size, true));
    REQUIRE_OK(tmem_footprint_read(&f0));
    volatile const unsigned char *p = map;
    unsigned sum = 0;
    for (uint64_t off = 0; off < size; off += 4096) sum += p[off];
    CHECK(sum > 0);
    REQUIRE_OK(tmem_footprint_read(&f1));
    uint64_t d, c;
    CHECK_OK(tmem_context_accounted(ctx, &d, &c));
    int64_t os = (int64_t)(f1.private_clean + f1.shared_clean) - (int64_t)(f0.private_clean + f0.shared_clean);
    printf("clean: accounted %llu, OS delta %lld\n", (unsigned long long)c, (long long)os);
    CHECK(c == size && d == 0);
    CHECK_MSG(llabs(os - (int64_t)c) <= 2 * 4096, "clean diff %lld", (long long)(os - (int64_t)c));
    tmem__type_uncharge(w, size, true);
    CHECK_OK(tmem__os_unmap(map, size));
    CHECK_OK(tmem__os_close(fd));
    tmem_context_destroy(ctx);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    RUN(test_dirty);
    RUN(test_clean);
    return tmem_test_finish();
}

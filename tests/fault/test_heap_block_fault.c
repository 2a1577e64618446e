/* OS fault sweep over BLOCK heaps: every commit an allocation makes can
 * fail (and decommits never are, see os_fault.c). Each injected failure must
 * end in a clean error with the heap, the type's accounting and the context
 * consistent, no mapping leaked; disarmed, the scenario succeeds. */
#include <string.h>
#include "harness.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

typedef struct fixture {
    tmem_context *ctx;
    tmem_type *type;
    tmem_heap *heap;
    void *p[6];
} fixture;

static uint64_t type_committed(const fixture *f) {
    tmem_type_stats s;
    return tmem_type_get_stats(f->type, &s) == TMEM_OK ? s.committed.current : ~0ull;
}

static bool check_clean(void *user, tmem_status st) {
    fixture *f = user;
    if (st == TMEM_OK) return true;
    tmem_heap_info hi;
    if (!f->heap) return type_committed(f) == 0 && tmem_context_check(f->ctx) == TMEM_OK;
    if (tmem_heap_get_info(f->heap, &hi) != TMEM_OK) return false;
    uint64_t held = 0;
    for (int i = 0; i < 6; i++) held += f->p[i] != NULL;
    return hi.live_count == held && hi.committed == held * hi.block_stride && type_committed(f) == hi.committed &&
           tmem_heap_check(f->heap) == TMEM_OK && tmem_context_check(f->ctx) == TMEM_OK;
}

static void cleanup(void *user) {
    fixture *f = user;
    tmem_heap_destroy(f->heap); /* frees what the scenario still held */
    f->heap = NULL;
    memset(f->p, 0, sizeof f->p);
}

/* create, allocate six blocks, free three, allocate them again, free all */
static tmem_status scen_blocks(void *user) {
    fixture *f = user;
    tmem_heap_desc hd = {.kind = TMEM_HEAP_BLOCK, .type = f->type, .size = 1 * MiB, .block_size = 40 * KiB};
    tmem_status st = tmem_heap_create(f->ctx, &hd, &f->heap);
    if (st != TMEM_OK) return st;
    for (int i = 0; i < 6; i++) {
        if ((st = tmem_heap_alloc(f->heap, 40 * KiB, 0, &f->p[i])) != TMEM_OK) return st;
        memset(f->p[i], i, 40 * KiB);
    }
    for (int i = 0; i < 6; i += 2) {
        if ((st = tmem_heap_free(f->heap, f->p[i])) != TMEM_OK) return st;
        f->p[i] = NULL;
    }
    for (int i = 0; i < 6; i += 2)
        if ((st = tmem_heap_alloc(f->heap, 40 * KiB, 0, &f->p[i])) != TMEM_OK) return st;
    for (int i = 0; i < 6; i++) {
        if ((st = tmem_heap_free(f->heap, f->p[i])) != TMEM_OK) return st;
        f->p[i] = NULL;
    }
    return type_committed(f) == 0 ? TMEM_OK : TMEM_E_CORRUPT;
}

int main(void) {
    fixture f;
    memset(&f, 0, sizeof f);
    tmem_context_desc cd = {.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES | TMEM_CONTEXT_DEBUG};
    if (tmem_context_create(&cd, &f.ctx) != TMEM_OK) return 1;
    tmem_type_desc td = {.name = "/memory/blocks", .reserve = 16 * MiB};
    if (tmem_type_create(f.ctx, &td, &f.type) != TMEM_OK) return 1;
    tmem_test_sweep_desc d = {.label = "block_heap", .scenario = scen_blocks, .cleanup = cleanup,
                              .check = check_clean, .user = &f};
    uint64_t n = tmem_test_fault_sweep_ex(&d);
    CHECK_MSG(n >= 9, "%llu OS calls swept, want one per commit at least", (unsigned long long)n);
    tmem_context_destroy(f.ctx);
    return tmem_test_finish();
}

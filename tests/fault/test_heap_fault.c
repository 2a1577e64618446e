/* OS fault sweeps over the heap paths that reach the OS: create (carve,
 * COMMIT_ALL), allocations that commit new chunks, frees that decommit, and
 * purgeable transitions (MADV_FREE / MADV_DONTNEED advice). Every injected
 * failure must end in a clean error, the heap and the type's accounting as
 * before, tmem_heap_check/tmem_context_check passing, no mapping leaked. */
#include <string.h>
#include "harness.h"
#include "os/os.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

typedef struct fixture {
    tmem_context *ctx;
    tmem_type *type;
    tmem_heap *heap;  /* lives across runs */
    tmem_heap *made;  /* what a scenario made */
    void *p[8];
    uint64_t committed0, used0;
} fixture;

static uint64_t type_committed(const fixture *f) {
    tmem_type_stats s;
    return tmem_type_get_stats(f->type, &s) == TMEM_OK ? s.committed.current : ~0ull;
}

static bool check_clean(void *user, tmem_status st) {
    fixture *f = user;
    if (st == TMEM_OK) return true;
    tmem_heap_info hi;
    if (tmem_heap_get_info(f->heap, &hi) != TMEM_OK) return false;
    return f->made == NULL && hi.used == f->used0 && hi.purgeable == TMEM_PURGEABLE_NON_VOLATILE &&
           tmem_heap_check(f->heap) == TMEM_OK && tmem_context_check(f->ctx) == TMEM_OK &&
           type_committed(f) == hi.committed;
}

static void cleanup(void *user) {
    fixture *f = user;
    for (int i = 0; i < 8; i++) {
        if (f->p[i]) {
            tmem_status st = tmem_heap_free(f->heap, f->p[i]);
            (void)st;
            f->p[i] = NULL;
        }
    }
    tmem_heap_destroy(f->made);
    f->made = NULL;
}

static tmem_status scen_create(void *user) {
    fixture *f = user;
    tmem_heap_desc hd = {0};
    hd.type = f->type;
    hd.size = 4 * MiB;
    hd.flags = TMEM_HEAP_COMMIT_ALL;
    return tmem_heap_create(f->ctx, &hd, &f->made);
}

/* Allocations spanning fresh chunks, then frees that give them back (the
 * budget is tight, so decommit is immediate). On failure, undo this run. */
static tmem_status scen_alloc(void *user) {
    fixture *f = user;
    tmem_status st = TMEM_OK;
    for (int i = 0; i < 8 && st == TMEM_OK; i++) {
        st = tmem_heap_alloc(f->heap, 200 * KiB, 4096, &f->p[i]);
        if (st == TMEM_OK) memset(f->p[i], i, 200 * KiB);
    }
    for (int i = 0; i < 8; i++) {
        if (!f->p[i]) continue;
        tmem_status fs = tmem_heap_free(f->heap, f->p[i]);
        f->p[i] = NULL;
        if (st == TMEM_OK) st = fs;
    }
    return st;
}

/* NON_VOLATILE -> VOLATILE -> NON_VOLATILE -> EMPTY -> NON_VOLATILE with a
 * live allocation; a failed transition leaves the heap NON_VOLATILE. */
static tmem_status scen_purgeable(void *user) {
    fixture *f = user;
    tmem_status st = tmem_heap_alloc(f->heap, 300 * KiB, 16, &f->p[0]);
    if (st != TMEM_OK) return st;
    memset(f->p[0], 7, 300 * KiB);
    bool lost;
    if ((st = tmem_heap_set_purgeable(f->heap, TMEM_PURGEABLE_VOLATILE, NULL, NULL)) != TMEM_OK) goto out;
    if ((st = tmem_heap_set_purgeable(f->heap, TMEM_PURGEABLE_NON_VOLATILE, NULL, &lost)) != TMEM_OK) goto out;
    if (((unsigned char *)f->p[0])[1000] != 7 && !lost) return TMEM_E_CORRUPT;
    if ((st = tmem_heap_set_purgeable(f->heap, TMEM_PURGEABLE_EMPTY, NULL, NULL)) != TMEM_OK) goto out;
    st = tmem_heap_set_purgeable(f->heap, TMEM_PURGEABLE_NON_VOLATILE, NULL, &lost);
    if (st == TMEM_OK && !lost) return TMEM_E_CORRUPT;
out:
    if (st != TMEM_OK) {
        /* a failed transition changed nothing: the heap is still NON_VOLATILE */
        tmem_heap_info hi;
        if (tmem_heap_get_info(f->heap, &hi) != TMEM_OK || hi.purgeable != TMEM_PURGEABLE_NON_VOLATILE) return TMEM_E_CORRUPT;
    }
    tmem_status fs = tmem_heap_free(f->heap, f->p[0]);
    f->p[0] = NULL;
    return st != TMEM_OK ? st : fs;
}

static void sweep(const char *label, tmem_status (*scen)(void *), fixture *f) {
    tmem_test_sweep_desc d;
    memset(&d, 0, sizeof d);
    d.label = label;
    d.scenario = scen;
    d.cleanup = cleanup;
    d.check = check_clean;
    d.user = f;
    CHECK_MSG(tmem_test_fault_sweep_ex(&d) > 0, "%s: no OS call swept", label);
}

int main(void) {
    fixture f;
    memset(&f, 0, sizeof f);
    tmem_context_desc cd = {0};
    cd.budget = 256 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES | TMEM_CONTEXT_DEBUG;
    if (tmem_context_create(&cd, &f.ctx) != TMEM_OK) return 1;
    tmem_type_desc td = {0};
    td.name = "/memory/fault";
    td.reserve = 64 * MiB;
    td.budget = 6 * MiB; /* tight: freed chunks are decommitted at once */
    if (tmem_type_create(f.ctx, &td, &f.type) != TMEM_OK) return 1;
    tmem_heap_desc hd = {0};
    hd.type = f.type;
    hd.size = 16 * MiB;
    if (tmem_heap_create(f.ctx, &hd, &f.heap) != TMEM_OK) return 1;
    sweep("heap_create_commit_all", scen_create, &f);
    sweep("heap_alloc_commit_decommit", scen_alloc, &f);
    sweep("heap_purgeable", scen_purgeable, &f);
    tmem_context_destroy(f.ctx);
    return tmem_test_finish();
}

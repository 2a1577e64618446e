/* Fault sweeps over the KV cache. OS faults: every injectable OS call made
 * by creating a cache and by appending, forking, copying on write and
 * taking snapshots is failed in turn (once and persistently). Metadata
 * faults: the context's allocator fails its n-th call, n = 0, 1, 2, ...,
 * during each operation (SQLite's OOM loop). Each must end in a clean error
 * with the cache unchanged and consistent, and nothing leaked; the
 * sequence's kernel view (tmem_kv_seq_block_ptrs) is the one it had before a
 * failed operation, and its block table resolved after a successful one. */
#include <stdlib.h>
#include "kv_test_util.h"

/* ---- the whole life of a small hybrid cache ---- */

typedef struct life { tmem_context *ctx; } life;

static tmem_status life_run(void *u) {
    life *l = u;
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    tmem_status st = tmem_context_create(&cd, &l->ctx);
    if (st != TMEM_OK) return st;
    tmem_kv_cache_desc d = kvt_desc(true, NULL);
    d.kv_pool_bytes = d.state_pool_bytes = d.snapshot_budget = 4ull << 20;
    tmem_kv_cache *c;
    tmem_kv_seq s, f;
    void *k;
    if ((st = tmem_kv_cache_create(l->ctx, &d, &c)) != TMEM_OK) return st;
    if ((st = tmem_kv_seq_create(c, &s)) != TMEM_OK) return st;
    if ((st = tmem_kv_seq_append(c, s, 10)) != TMEM_OK) return st;
    if ((st = tmem_kv_snapshot_take(c, s, NULL)) != TMEM_OK) return st;
    if ((st = tmem_kv_seq_fork(c, s, &f)) != TMEM_OK) return st;
    if ((st = tmem_kv_seq_kv(c, f, 0, 9, TMEM_KV_WRITE, &k, NULL)) != TMEM_OK) return st;
    return tmem_kv_cache_check(c);
}

static void life_cleanup(void *u) {
    life *l = u;
    tmem_context_destroy(l->ctx); /* destroys the cache with it */
    l->ctx = NULL;
}

static void test_lifecycle_sweep(void) {
    life l = {0};
    CHECK(tmem_test_fault_sweep("kv lifecycle", life_run, life_cleanup, &l) > 0);
}

/* ---- single operations on a live cache: state unchanged on failure ---- */

typedef struct op {
    kvt_fix fx;
    tmem_kv_seq s;       /* 6 tokens, a snapshot at 6, shared with `sib` */
    tmem_kv_seq sib;
    tmem_kv_seq made;    /* what the scenario created */
    int which;
    tmem_kv_cache_stats before;
    void *view[16];      /* s's view before the operation */
    uint32_t nview;
} op;

/* s's view: tmem_kv_seq_block_ptrs, checked against the table id by id. */
static bool view_of(tmem_kv_cache *c, tmem_kv_seq s, void **view, uint32_t *n) {
    const uint32_t *ids;
    uint32_t m;
    if (tmem_kv_seq_block_ptrs(c, s, view, 16, n) != TMEM_OK || tmem_kv_seq_blocks(c, s, &ids, &m) != TMEM_OK ||
        m != *n)
        return false;
    for (uint32_t i = 0; i < m; i++)
        if (view[i] != tmem_kv_block_ptr(c, ids[i])) return false;
    return true;
}

static tmem_status op_run(void *u) {
    op *o = u;
    tmem_kv_cache *c = o->fx.c;
    void *k;
    if (tmem_kv_cache_get_stats(c, &o->before) != TMEM_OK || !view_of(c, o->s, o->view, &o->nview))
        return TMEM_E_CORRUPT;
    switch (o->which) {
    case 0: return tmem_kv_seq_append(c, o->s, 30);                    /* 8 new blocks */
    case 1: return tmem_kv_seq_kv(c, o->s, 1, 5, TMEM_KV_WRITE, &k, NULL); /* CoW of a shared block */
    case 2: return tmem_kv_seq_fork(c, o->s, &o->made);                 /* a state slot */
    case 3: return tmem_kv_snapshot_take(c, o->sib, NULL);              /* a snapshot slot */
    default: return tmem_kv_seq_create(c, &o->made);
    }
}

/* On failure nothing moved; in every case the invariants hold. */
static bool op_check(void *u, tmem_status st) {
    op *o = u;
    tmem_kv_cache_stats now;
    void *view[16];
    uint32_t nview;
    if (tmem_kv_cache_check(o->fx.c) != TMEM_OK || tmem_kv_cache_get_stats(o->fx.c, &now) != TMEM_OK ||
        !view_of(o->fx.c, o->s, view, &nview))
        return false;
    if (st == TMEM_OK) return true;
    if (nview != o->nview || memcmp(view, o->view, nview * sizeof *view)) return false; /* the view as it was */
    tmem_kv_seq_info si;
    if (tmem_kv_seq_get_info(o->fx.c, o->s, &si) != TMEM_OK || si.tokens != 6) return false;
    return now.blocks_used == o->before.blocks_used && now.blocks_shared == o->before.blocks_shared &&
           now.sequences == o->before.sequences && now.snapshots == o->before.snapshots &&
           now.cow_copies == o->before.cow_copies && o->made == TMEM_KV_SEQ_NONE;
}

/* Put the cache back as it was before the scenario. */
static void op_cleanup(void *u) {
    op *o = u;
    tmem_kv_cache *c = o->fx.c;
    tmem_kv_seq_info si;
    if (o->made != TMEM_KV_SEQ_NONE) CHECK_OK(tmem_kv_seq_free(c, o->made));
    o->made = TMEM_KV_SEQ_NONE;
    if (tmem_kv_seq_get_info(c, o->s, &si) == TMEM_OK && si.tokens > 6) CHECK_OK(tmem_kv_seq_truncate(c, o->s, 6));
    if (o->which == 1) { /* re-share s's blocks: fork anew */
        CHECK_OK(tmem_kv_seq_free(c, o->sib));
        CHECK_OK(tmem_kv_seq_fork(c, o->s, &o->sib));
    }
    if (o->which == 3) {
        tmem_kv_snap sn;
        if (tmem_kv_snapshot_find(c, o->sib, 6, &sn) == TMEM_OK) CHECK_OK(tmem_kv_snapshot_drop(c, sn));
    }
}

static void test_op_sweeps(void) {
    static const char *names[] = {"kv append", "kv copy-on-write", "kv fork", "kv snapshot", "kv seq create"};
    for (int w = 0; w < 5; w++) {
        op o = {0};
        REQUIRE(kvt_open(&o.fx, true, NULL, 0, 0));
        REQUIRE_OK(tmem_kv_seq_create(o.fx.c, &o.s));
        REQUIRE_OK(tmem_kv_seq_append(o.fx.c, o.s, 6));
        REQUIRE_OK(tmem_kv_snapshot_take(o.fx.c, o.s, NULL));
        REQUIRE_OK(tmem_kv_seq_fork(o.fx.c, o.s, &o.sib));
        o.which = w;
        tmem_test_sweep_desc sd = {0};
        sd.label = names[w];
        sd.scenario = op_run;
        sd.cleanup = op_cleanup;
        sd.check = op_check;
        sd.user = &o;
        CHECK_MSG(tmem_test_fault_sweep_ex(&sd) > 0, "%s made no OS call", names[w]);
        kvt_close(&o.fx);
    }
}

/* ---- metadata allocation failures ---- */

static int64_t oom_countdown = -1; /* < 0: disarmed */
static bool oom_fired;

static void *oom_alloc(size_t size, void *user) {
    (void)user;
    if (oom_countdown == 0) {
        oom_fired = true;
        return NULL;
    }
    if (oom_countdown > 0) oom_countdown--;
    return malloc(size);
}

static void oom_free(void *p, size_t size, void *user) {
    (void)size;
    (void)user;
    free(p);
}

static void test_metadata_oom(void) {
    static const tmem_allocator al = {oom_alloc, oom_free, NULL};
    static const char *names[] = {"cache create", "seq create", "append 200", "fork", "snapshot", "admit", "stats"};
    for (int w = 0; w < 7; w++) {
        int64_t n = 0;
        for (;; n++) {
            tmem_context_desc cd = {0};
            cd.budget = 1ull << 30;
            cd.allocator = &al;
            tmem_context *ctx;
            oom_countdown = -1;
            REQUIRE_OK(tmem_context_create(&cd, &ctx));
            tmem_kv_cache_desc d = kvt_desc(true, NULL);
            d.kv_pool_bytes = d.state_pool_bytes = d.snapshot_budget = 8ull << 20;
            tmem_kv_cache *c = NULL;
            tmem_kv_seq s = TMEM_KV_SEQ_NONE, f = TMEM_KV_SEQ_NONE;
            if (w) {
                REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &c));
                REQUIRE_OK(tmem_kv_seq_create(c, &s));
                REQUIRE_OK(tmem_kv_seq_append(c, s, 5));
            }
            tmem_kv_cache_stats before = {0}, after;
            if (c) REQUIRE_OK(tmem_kv_cache_get_stats(c, &before));
            tmem_kv_request rq = {0};
            rq.context_tokens = 64;
            tmem_kv_cache_stats st;
            oom_fired = false;
            oom_countdown = n;
            tmem_status r;
            switch (w) {
            case 0: r = tmem_kv_cache_create(ctx, &d, &c); break;
            case 1: r = tmem_kv_seq_create(c, &f); break;
            case 2: r = tmem_kv_seq_append(c, s, 200); break; /* table growth, block ids */
            case 3: r = tmem_kv_seq_fork(c, s, &f); break;
            case 4: r = tmem_kv_snapshot_take(c, s, NULL); break;
            case 5: r = tmem_kv_admit(c, &rq, NULL); break;
            default: r = tmem_kv_cache_get_stats(c, &st); break;
            }
            oom_countdown = -1;
            bool fired = oom_fired;
            if (fired) {
                CHECK_MSG(r == TMEM_E_NO_MEMORY, "%s, failing alloc %lld: %s", names[w], (long long)n, tmem_status_name(r));
                if (w == 0) CHECK(c == NULL);
                if (w == 1 || w == 3) CHECK(f == TMEM_KV_SEQ_NONE);
                if (c) {
                    CHECK_OK(tmem_kv_cache_check(c));
                    CHECK_OK(tmem_kv_cache_get_stats(c, &after));
                    CHECK(after.blocks_used == before.blocks_used && after.sequences == before.sequences &&
                          after.snapshots == before.snapshots && after.state_bytes == before.state_bytes);
                }
            } else {
                CHECK_OK(r);
            }
            if (c) CHECK_OK(tmem_kv_cache_check(c));
            tmem_context_destroy(ctx); /* the cache goes with it */
            if (!fired) break;
        }
        printf("   %s: %lld metadata allocations failed in turn\n", names[w], (long long)n);
        CHECK(w == 1 ? n == 0 : n > 0); /* a sequence needs no metadata allocation: slots are preallocated */
    }
}

int main(void) {
    RUN(test_lifecycle_sweep);
    RUN(test_op_sweeps);
    RUN(test_metadata_oom);
    return tmem_test_finish();
}

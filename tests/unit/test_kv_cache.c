/* Paged KV cache: blocks, addressing, fork / copy-on-write, truncate,
 * rollback, recurrent state, snapshots with LRU. */
#include "kv_test_util.h"

static void test_append_and_address(void) {
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, false, NULL, 0, 0));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq s;
    CHECK_OK(tmem_kv_seq_create(c, &s));
    CHECK(s != TMEM_KV_SEQ_NONE);
    CHECK_OK(tmem_kv_seq_append(c, s, 10)); /* 3 blocks of 4 */
    CHECK_OK(tmem_kv_seq_append(c, s, 2));  /* still 3 */
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, s, &si));
    CHECK(si.status == TMEM_KV_SEQ_LIVE && si.tokens == 12 && si.blocks == 3 && si.shared_blocks == 0);
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.block_bytes == KVT_BLOCK_BYTES && st.blocks_used == 3);
    CHECK(st.kv_bytes_allocated == 3 * KVT_BLOCK_BYTES && st.kv_bytes_used == 12 * KVT_TOKEN_BYTES);
    /* every (layer, token) row is distinct: stamp all, read all back */
    for (uint32_t l = 0; l < 2; l++)
        for (uint32_t t = 0; t < 12; t++) CHECK_OK(kvt_write(c, s, l, t, 1000 * l + t + 1));
    for (uint32_t l = 0; l < 2; l++)
        for (uint32_t t = 0; t < 12; t++) CHECK(kvt_read(c, s, l, t) == 1000 * l + t + 1);
    /* rows sit where the documented layout says */
    const uint32_t *ids;
    uint32_t n;
    CHECK_OK(tmem_kv_seq_blocks(c, s, &ids, &n));
    CHECK(n == 3);
    void *k, *v;
    CHECK_OK(tmem_kv_seq_kv(c, s, 1, 6, 0, &k, &v));
    uint8_t *blk = tmem_kv_block_ptr(c, ids[1]);
    CHECK(blk && (uint8_t *)k == blk + 1 * 2 * 4 * 256 + 2 * 256);
    CHECK((uint8_t *)v == (uint8_t *)k + 4 * 256);
    CHECK(((uintptr_t)blk & 63) == 0);
    /* the blocks are charged to the KV type */
    tmem_type *kvt;
    CHECK_OK(tmem_type_find(fx.ctx, "/memory/kv", &kvt));
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(kvt, &ts));
    CHECK(ts.committed.current == 3 * KVT_BLOCK_BYTES);
    CHECK_OK(tmem_kv_cache_check(c));
    CHECK_OK(tmem_kv_seq_free(c, s));
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.blocks_used == 0 && st.sequences == 0);
    kvt_close(&fx);
}

/* The kernel's view (tmem_kv_seq_block_ptrs): the block table resolved,
 * address for address what tmem_kv_block_ptr gives; rows found through it
 * where tmem_kv_seq_kv puts them; appends extend it without moving a block;
 * a copy-on-write replaces the writer's block only; truncation shortens it;
 * a small array gets TMEM_E_FULL with the count and is left as it was. */
static bool view_matches(tmem_kv_cache *c, tmem_kv_seq s, void **view, uint32_t n) {
    const uint32_t *ids;
    uint32_t m;
    if (tmem_kv_seq_blocks(c, s, &ids, &m) != TMEM_OK || m != n) return false;
    for (uint32_t i = 0; i < n; i++)
        if (view[i] != tmem_kv_block_ptr(c, ids[i])) return false;
    return true;
}

static void test_block_ptrs(void) {
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, false, NULL, 0, 0));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq s, f;
    void *view[8], *before[8], *sentinel = (void *)&fx;
    uint32_t n = 99;
    CHECK_OK(tmem_kv_seq_create(c, &s));
    CHECK_OK(tmem_kv_seq_block_ptrs(c, s, NULL, 0, &n)); /* no blocks yet */
    CHECK(n == 0);
    CHECK_OK(tmem_kv_seq_append(c, s, 10)); /* 3 blocks of 4 */
    CHECK_OK(tmem_kv_seq_block_ptrs(c, s, view, 8, &n));
    CHECK(n == 3 && view_matches(c, s, view, n));
    for (uint32_t l = 0; l < 2; l++) /* every row where tmem_kv_seq_kv says, by the documented layout */
        for (uint32_t t = 0; t < 10; t++) {
            void *k, *v;
            CHECK_OK(tmem_kv_seq_kv(c, s, l, t, 0, &k, &v));
            uint8_t *row = (uint8_t *)view[t / 4] + ((size_t)l * 2 * 4 + t % 4) * 256;
            CHECK(k == row && v == row + 4 * 256);
        }
    /* too small: FULL with the count, the array untouched */
    for (int i = 0; i < 8; i++) before[i] = sentinel;
    CHECK_ST(tmem_kv_seq_block_ptrs(c, s, before, 2, &n), TMEM_E_FULL);
    CHECK(n == 3 && before[0] == sentinel && before[1] == sentinel);
    CHECK_ST(tmem_kv_seq_block_ptrs(c, s, NULL, 0, &n), TMEM_E_FULL); /* the count alone */
    CHECK(n == 3);
    /* an append adds blocks at the end and moves none */
    memcpy(before, view, sizeof view);
    CHECK_OK(tmem_kv_seq_append(c, s, 9));
    CHECK_OK(tmem_kv_seq_block_ptrs(c, s, view, 8, &n));
    CHECK(n == 5 && !memcmp(before, view, 3 * sizeof *view) && view_matches(c, s, view, n));
    /* fork: both views name the same blocks; a write to the fork's block 1
     * copies it: the fork's view changes there, the source's does not */
    CHECK_OK(tmem_kv_seq_fork(c, s, &f));
    void *fv[8];
    CHECK_OK(tmem_kv_seq_block_ptrs(c, f, fv, 8, &n));
    CHECK(n == 5 && !memcmp(fv, view, 5 * sizeof *view));
    CHECK_OK(kvt_write(c, f, 0, 5, 7));
    CHECK_OK(tmem_kv_seq_block_ptrs(c, f, fv, 8, &n));
    CHECK(fv[1] != view[1] && fv[0] == view[0] && fv[2] == view[2] && view_matches(c, f, fv, n));
    CHECK_OK(tmem_kv_seq_block_ptrs(c, s, before, 8, &n));
    CHECK(n == 5 && !memcmp(before, view, 5 * sizeof *view));
    /* truncation shortens the view */
    CHECK_OK(tmem_kv_seq_truncate(c, s, 4));
    CHECK_OK(tmem_kv_seq_block_ptrs(c, s, view, 8, &n));
    CHECK(n == 1 && view[0] == before[0]);
    /* a freed handle: NOT_FOUND, count 0, the array untouched */
    CHECK_OK(tmem_kv_seq_free(c, f));
    fv[0] = sentinel;
    CHECK_ST(tmem_kv_seq_block_ptrs(c, f, fv, 8, &n), TMEM_E_NOT_FOUND);
    CHECK(n == 0 && fv[0] == sentinel);
    CHECK_OK(tmem_kv_seq_free(c, s));
    kvt_close(&fx);
}

static void test_fork_cow(void) {
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, false, NULL, 0, 0));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq p, ch;
    CHECK_OK(tmem_kv_seq_create(c, &p));
    CHECK_OK(tmem_kv_seq_append(c, p, 10)); /* blocks: [0..3] [4..7] [8,9 | partial] */
    for (uint32_t t = 0; t < 10; t++) CHECK_OK(kvt_write(c, p, 0, t, 100 + t));
    CHECK_OK(tmem_kv_seq_fork(c, p, &ch));
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.blocks_used == 3 && st.blocks_shared == 3 && st.block_refs == 6);
    CHECK(st.kv_bytes_used == 10 * KVT_TOKEN_BYTES && st.kv_bytes_logical == 20 * KVT_TOKEN_BYTES);
    /* reads share memory */
    void *kp, *kc;
    CHECK_OK(tmem_kv_seq_kv(c, p, 0, 5, 0, &kp, NULL));
    CHECK_OK(tmem_kv_seq_kv(c, ch, 0, 5, 0, &kc, NULL));
    CHECK(kp == kc);
    for (uint32_t t = 0; t < 10; t++) CHECK(kvt_read(c, ch, 0, t) == 100 + t);
    /* a child write copies block 1 only */
    CHECK_OK(kvt_write(c, ch, 0, 5, 7));
    CHECK(kvt_read(c, ch, 0, 5) == 7 && kvt_read(c, p, 0, 5) == 105);
    CHECK(kvt_read(c, ch, 0, 4) == 104 && kvt_read(c, ch, 0, 7) == 107); /* copied with it */
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.cow_copies == 1 && st.blocks_used == 4 && st.blocks_shared == 2);
    /* the parent appending into the shared partial block copies it too */
    CHECK_OK(tmem_kv_seq_append(c, p, 1));
    CHECK_OK(kvt_write(c, p, 0, 10, 110));
    CHECK_OK(tmem_kv_seq_append(c, ch, 1));
    CHECK_OK(kvt_write(c, ch, 0, 10, 210));
    CHECK(kvt_read(c, p, 0, 10) == 110 && kvt_read(c, ch, 0, 10) == 210);
    CHECK(kvt_read(c, p, 0, 9) == 109 && kvt_read(c, ch, 0, 9) == 109);
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.cow_copies == 2 && st.blocks_shared == 1);
    /* a write into an unshared block never copies */
    CHECK_OK(kvt_write(c, p, 1, 9, 1));
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.cow_copies == 2);
    /* freeing the parent leaves the child whole */
    CHECK_OK(tmem_kv_seq_free(c, p));
    for (uint32_t t = 0; t < 10; t++) CHECK(kvt_read(c, ch, 0, t) == (t == 5 ? 7u : 100 + t));
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.blocks_shared == 0 && st.blocks_used == 3);
    kvt_close(&fx);
}

static void test_truncate_rollback(void) {
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, true, NULL, 0, 0));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq s;
    CHECK_OK(tmem_kv_seq_create(c, &s));
    /* fresh state is zero */
    void *conv, *ssm;
    CHECK_OK(tmem_kv_seq_state(c, s, 1, &conv, &ssm));
    CHECK(((uint8_t *)conv)[0] == 0 && ((uint8_t *)ssm)[8191] == 0);
    CHECK((uint8_t *)ssm == (uint8_t *)conv + 1536);
    CHECK_OK(tmem_kv_seq_append(c, s, 8));
    for (uint32_t t = 0; t < 8; t++) CHECK_OK(kvt_write(c, s, 0, t, t + 1));
    memset(ssm, 0x11, 8192);
    tmem_kv_snap snap;
    CHECK_OK(tmem_kv_snapshot_take(c, s, &snap));
    CHECK(snap != TMEM_KV_SNAP_NONE);
    /* run on: tokens 8..13, state changes */
    CHECK_OK(tmem_kv_seq_append(c, s, 6));
    memset(ssm, 0x22, 8192);
    tmem_kv_snap snap14;
    CHECK_OK(tmem_kv_snapshot_take(c, s, &snap14));
    /* rollback to a position without a snapshot: refused, nothing changed */
    CHECK_ST(tmem_kv_seq_rollback(c, s, 5), TMEM_E_NOT_FOUND);
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, s, &si));
    CHECK(si.tokens == 14 && si.blocks == 4 && si.snapshots == 2);
    /* rollback to 8 restores the state and drops the later snapshot */
    CHECK_OK(tmem_kv_seq_rollback(c, s, 8));
    CHECK_OK(tmem_kv_seq_state(c, s, 1, NULL, &ssm));
    CHECK(((uint8_t *)ssm)[0] == 0x11 && ((uint8_t *)ssm)[8191] == 0x11);
    CHECK_OK(tmem_kv_seq_get_info(c, s, &si));
    CHECK(si.tokens == 8 && si.blocks == 2 && si.snapshots == 1);
    CHECK_ST(tmem_kv_snapshot_drop(c, snap14), TMEM_E_NOT_FOUND);
    for (uint32_t t = 0; t < 8; t++) CHECK(kvt_read(c, s, 0, t) == t + 1);
    /* truncate: KV only, the state stays */
    memset(ssm, 0x33, 8192);
    CHECK_OK(tmem_kv_seq_truncate(c, s, 3));
    CHECK_OK(tmem_kv_seq_get_info(c, s, &si));
    CHECK(si.tokens == 3 && si.blocks == 1 && si.snapshots == 0); /* the snapshot at 8 is past the end */
    CHECK(((uint8_t *)ssm)[0] == 0x33);
    CHECK_ST(tmem_kv_seq_kv(c, s, 0, 3, 0, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK(kvt_read(c, s, 0, 2) == 3);
    CHECK_ST(tmem_kv_seq_truncate(c, s, 4), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_kv_seq_rollback(c, s, 3)); /* same length, no snapshot: no-op */
    CHECK_OK(tmem_kv_seq_truncate(c, s, 0));
    CHECK_OK(tmem_kv_seq_get_info(c, s, &si));
    CHECK(si.tokens == 0 && si.blocks == 0);
    CHECK_OK(tmem_kv_cache_check(c));
    CHECK(fx.ev.seq_evicted == 0 && fx.ev.snap_dropped == 0); /* explicit drops are not evictions */
    kvt_close(&fx);
}

static void test_fork_at_snapshot(void) {
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, true, NULL, 0, 0));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq s, f, g;
    void *ssm, *fssm;
    CHECK_OK(tmem_kv_seq_create(c, &s));
    CHECK_OK(tmem_kv_seq_append(c, s, 6)); /* a shared prefix of 6 tokens */
    for (uint32_t t = 0; t < 6; t++) CHECK_OK(kvt_write(c, s, 1, t, 50 + t));
    CHECK_OK(tmem_kv_seq_state(c, s, 0, NULL, &ssm));
    memset(ssm, 0x5A, 8192);
    CHECK_OK(tmem_kv_snapshot_take(c, s, NULL));
    CHECK_OK(tmem_kv_seq_append(c, s, 5));
    memset(ssm, 0x6B, 8192);
    /* fork at 6: KV prefix shared, state from the snapshot */
    CHECK_OK(tmem_kv_seq_fork_at(c, s, 6, &f));
    CHECK_OK(tmem_kv_seq_state(c, f, 0, NULL, &fssm));
    CHECK(fssm != ssm && ((uint8_t *)fssm)[0] == 0x5A && ((uint8_t *)fssm)[8191] == 0x5A);
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, f, &si));
    CHECK(si.tokens == 6 && si.blocks == 2 && si.shared_blocks == 2 && si.snapshots == 0);
    for (uint32_t t = 0; t < 6; t++) CHECK(kvt_read(c, f, 1, t) == 50 + t);
    /* no snapshot at 3 */
    CHECK_ST(tmem_kv_seq_fork_at(c, s, 3, &g), TMEM_E_NOT_FOUND);
    CHECK(g == TMEM_KV_SEQ_NONE);
    CHECK_ST(tmem_kv_seq_fork_at(c, s, 12, &g), TMEM_E_INVALID_ARG);
    /* plain fork copies the current state; writes to it stay private */
    CHECK_OK(tmem_kv_seq_fork(c, s, &g));
    void *gssm;
    CHECK_OK(tmem_kv_seq_state(c, g, 0, NULL, &gssm));
    CHECK(((uint8_t *)gssm)[0] == 0x6B);
    memset(gssm, 0x01, 8192);
    CHECK(((uint8_t *)ssm)[0] == 0x6B);
    CHECK_OK(tmem_kv_cache_check(c));
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.sequences == 3 && st.state_bytes == 3ull * KVT_STATE_SLOT && st.snapshots == 1);
    kvt_close(&fx);
}

static void test_snapshot_lru(void) {
    tmem_kv_cache_desc d = kvt_desc(true, NULL);
    d.snapshot_budget = 3ull * KVT_STATE_SLOT; /* room for three */
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, true, &d, 0, 0));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq s;
    tmem_kv_snap sn[5];
    CHECK_OK(tmem_kv_seq_create(c, &s));
    for (int i = 0; i < 3; i++) {
        CHECK_OK(tmem_kv_seq_append(c, s, 1));
        CHECK_OK(tmem_kv_snapshot_take(c, s, &sn[i])); /* at 1, 2, 3 */
    }
    CHECK(fx.ev.snap_dropped == 0);
    /* use the oldest (rollback target lookup touches it when restored) */
    tmem_kv_snap found;
    CHECK_OK(tmem_kv_snapshot_find(c, s, 1, &found));
    CHECK(found == sn[0]);
    /* re-taking at the same position refreshes, does not add */
    CHECK_OK(tmem_kv_seq_truncate(c, s, 3));
    tmem_kv_snap again;
    CHECK_OK(tmem_kv_snapshot_take(c, s, &again));
    CHECK(again == sn[2] && fx.ev.snap_dropped == 0);
    /* touch snapshot 1 by forking from it: it becomes most recent */
    tmem_kv_seq f;
    CHECK_OK(tmem_kv_seq_fork_at(c, s, 1, &f));
    CHECK_OK(tmem_kv_seq_free(c, f));
    /* a fourth snapshot evicts the least recently used: the one at 2 */
    CHECK_OK(tmem_kv_seq_append(c, s, 1));
    CHECK_OK(tmem_kv_snapshot_take(c, s, &sn[3]));
    CHECK(fx.ev.snap_dropped == 1 && fx.ev.last_snap == sn[1] && fx.ev.last_reason == TMEM_KV_REASON_SNAPSHOT_BUDGET);
    CHECK(fx.ev.last_seq == s && fx.ev.bytes == KVT_STATE_SLOT);
    CHECK_ST(tmem_kv_snapshot_find(c, s, 2, &found), TMEM_E_NOT_FOUND);
    CHECK_OK(tmem_kv_snapshot_find(c, s, 1, &found));
    /* then the one at 3 */
    CHECK_OK(tmem_kv_seq_append(c, s, 1));
    CHECK_OK(tmem_kv_snapshot_take(c, s, &sn[4]));
    CHECK(fx.ev.snap_dropped == 2 && fx.ev.last_snap == sn[2]);
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.snapshots == 3 && st.snapshot_bytes == 3ull * KVT_STATE_SLOT && st.snaps_dropped == 2);
    /* the snapshot type is charged */
    tmem_type *t;
    CHECK_OK(tmem_type_find(fx.ctx, "/memory/snapshots", &t));
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(t, &ts));
    CHECK(ts.committed.current == 3ull * KVT_STATE_SLOT); /* dropped ones were decommitted */
    kvt_close(&fx);
}

/* The snapshot type is created when absent, with the budget asked for. */
static void test_snapshot_type_created(void) {
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.placement = TMEM_PLACEMENT_HOST;
    td.lifetime = TMEM_LIFETIME_GROWING;
    td.reserve = 64ull << 20;
    tmem_type *kv, *state, *snap;
    td.name = "/memory/kv";
    REQUIRE_OK(tmem_type_create(ctx, &td, &kv));
    td.name = "/memory/state";
    REQUIRE_OK(tmem_type_create(ctx, &td, &state));
    kvt_events ev = {0};
    tmem_kv_cache_desc d = kvt_desc(true, &ev);
    d.snapshot_budget = 1ull << 20;
    tmem_kv_cache *c;
    REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &c));
    CHECK_OK(tmem_type_find(ctx, "/memory/snapshots", &snap));
    tmem_type_info ti;
    CHECK_OK(tmem_type_get_info(snap, &ti));
    CHECK(ti.budget == 1ull << 20);
    tmem_kv_cache_destroy(c);
    /* a context destroyed with a live cache cleans it up (LeakSanitizer) */
    REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &c));
    tmem_kv_seq s;
    CHECK_OK(tmem_kv_seq_create(c, &s));
    CHECK_OK(tmem_kv_seq_append(c, s, 9));
    CHECK_OK(tmem_kv_snapshot_take(c, s, NULL));
    tmem_context_destroy(ctx);
}

/* A pure recurrent model (no attention KV) and a dense one (no state). */
static void test_one_sided(void) {
    tmem_context *ctx = kvt_context(0, 0, 0, 0);
    REQUIRE(ctx);
    kvt_events ev = {0};
    tmem_kv_cache_desc d = kvt_desc(true, &ev);
    d.kv = (tmem_kv_layout){0};
    tmem_kv_cache *c;
    REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &c));
    tmem_kv_seq s;
    CHECK_OK(tmem_kv_seq_create(c, &s));
    CHECK_OK(tmem_kv_seq_append(c, s, 100));
    CHECK_ST(tmem_kv_seq_kv(c, s, 0, 0, 0, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_kv_snapshot_take(c, s, NULL));
    CHECK_OK(tmem_kv_seq_append(c, s, 1));
    CHECK_OK(tmem_kv_seq_rollback(c, s, 100));
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.blocks_used == 0 && st.state_bytes == KVT_STATE_SLOT);
    CHECK_OK(tmem_kv_cache_check(c));
    tmem_kv_cache_destroy(c);
    d = kvt_desc(false, &ev);
    REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &c));
    CHECK_OK(tmem_kv_seq_create(c, &s));
    CHECK_ST(tmem_kv_seq_state(c, s, 0, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_snapshot_take(c, s, NULL), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_kv_seq_append(c, s, 5));
    CHECK_OK(tmem_kv_seq_rollback(c, s, 2)); /* no state: plain truncate */
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, s, &si));
    CHECK(si.tokens == 2);
    tmem_kv_cache_destroy(c);
    tmem_context_destroy(ctx);
}

/* With the core's builtin types: the roles' types, /memory/snapshots made. */
static void test_default_types(void) {
    tmem_context_desc cd = {0};
    cd.budget = 256ull << 20;
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_kv_cache_desc d = kvt_desc(true, NULL);
    d.kv_pool_bytes = d.state_pool_bytes = 0; /* the defaults: the types' reserves */
    tmem_kv_cache *c;
    REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &c));
    tmem_kv_seq s;
    CHECK_OK(tmem_kv_seq_create(c, &s));
    CHECK_OK(tmem_kv_seq_append(c, s, 40));
    CHECK_OK(tmem_kv_snapshot_take(c, s, NULL));
    tmem_type *kv, *state, *snap;
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, &kv));
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_RECURRENT_STATE, &state));
    REQUIRE_OK(tmem_type_find(ctx, "/memory/snapshots", &snap));
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(kv, &ts));
    CHECK(ts.committed.current == 10 * KVT_BLOCK_BYTES);
    CHECK_OK(tmem_type_get_stats(state, &ts));
    CHECK(ts.committed.current == KVT_STATE_SLOT);
    CHECK_OK(tmem_type_get_stats(snap, &ts));
    CHECK(ts.committed.current == KVT_STATE_SLOT);
    /* the KV_CACHE role is charged for the blocks it holds */
    tmem_role_stats rs;
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_KV_CACHE, &rs));
    CHECK(rs.in_use.current == 10 * KVT_BLOCK_BYTES && rs.live_count == 10);
    /* a second cache on the same types needs its own ranges: the first took them */
    tmem_kv_cache *c2;
    CHECK_ST(tmem_kv_cache_create(ctx, &d, &c2), TMEM_E_FULL);
    CHECK_OK(tmem_kv_cache_check(c));
    tmem_kv_cache_destroy(c);
    CHECK_OK(tmem_type_get_stats(kv, &ts));
    CHECK(ts.committed.current == 0);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_default_types);
    RUN(test_append_and_address);
    RUN(test_block_ptrs);
    RUN(test_fork_cow);
    RUN(test_truncate_rollback);
    RUN(test_fork_at_snapshot);
    RUN(test_snapshot_lru);
    RUN(test_snapshot_type_created);
    RUN(test_one_sided);
    return tmem_test_finish();
}

/* Bad input to the KV cache: NULLs, malformed / stale / freed handles,
 * out-of-range layers and tokens, bad flags and layouts, appends past the
 * limits. Every call returns its documented error and changes nothing. */
#include "kv_test_util.h"

static void test_create_errors(void) {
    tmem_context *ctx = kvt_context(0, 0, 0, 0);
    REQUIRE(ctx);
    tmem_kv_cache_desc d = kvt_desc(true, NULL);
    tmem_kv_cache *c = (tmem_kv_cache *)1;
    CHECK_ST(tmem_kv_cache_create(NULL, &d, &c), TMEM_E_INVALID_ARG);
    CHECK(c == NULL);
    CHECK_ST(tmem_kv_cache_create(ctx, NULL, &c), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_cache_create(ctx, &d, NULL), TMEM_E_INVALID_ARG);
    tmem_kv_cache_desc bad = d;
    bad.flags = 1u << 20;
    CHECK_ST(tmem_kv_cache_create(ctx, &bad, &c), TMEM_E_INVALID_ARG);
    bad = d;
    bad.kv.layers = 0;
    bad.recurrent.layers = 0;
    CHECK_ST(tmem_kv_cache_create(ctx, &bad, &c), TMEM_E_INVALID_ARG);
    bad = d;
    bad.kv.dtype = TMEM_KV_DTYPE_Q8_0; /* head_dim 32 is fine for q8_0 ... */
    CHECK_OK(tmem_kv_cache_create(ctx, &bad, &c));
    tmem_kv_cache_destroy(c);
    bad.kv.head_dim = 33; /* ... 33 is not */
    CHECK_ST(tmem_kv_cache_create(ctx, &bad, &c), TMEM_E_INVALID_ARG);
    CHECK(c == NULL);
    bad = d;
    bad.kv.kv_heads = 0;
    CHECK_ST(tmem_kv_cache_create(ctx, &bad, &c), TMEM_E_INVALID_ARG);
    bad = d;
    bad.recurrent.key_dim = 0;
    CHECK_ST(tmem_kv_cache_create(ctx, &bad, &c), TMEM_E_INVALID_ARG);
    bad = d;
    bad.max_tokens = 0x80000000u;
    CHECK_ST(tmem_kv_cache_create(ctx, &bad, &c), TMEM_E_INVALID_ARG);
    /* a type from another context */
    tmem_context *other = kvt_context(0, 0, 0, 0);
    REQUIRE(other);
    tmem_type *ot;
    REQUIRE_OK(tmem_type_find(other, "/memory/kv", &ot));
    bad = d;
    bad.kv_type = ot;
    CHECK_ST(tmem_kv_cache_create(ctx, &bad, &c), TMEM_E_INVALID_ARG);
    tmem_context_destroy(other);
    /* no KV type at all */
    tmem_context_desc cd = {0};
    cd.budget = 1ull << 30;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_context *bare;
    REQUIRE_OK(tmem_context_create(&cd, &bare));
    CHECK_ST(tmem_kv_cache_create(bare, &d, &c), TMEM_E_NOT_FOUND);
    tmem_context_destroy(bare);
    tmem_kv_cache_destroy(NULL);
    tmem_context_destroy(ctx);
}

static void test_handle_errors(void) {
    tmem_context *ctx = kvt_context(0, 0, 0, 0);
    REQUIRE(ctx);
    tmem_kv_cache_desc d = kvt_desc(true, NULL);
    d.max_sequences = 2;
    d.max_tokens = 100;
    tmem_kv_cache *c;
    REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &c));
    tmem_kv_seq s, t, u;
    CHECK_OK(tmem_kv_seq_create(c, &s));
    CHECK_OK(tmem_kv_seq_create(c, &t));
    CHECK_ST(tmem_kv_seq_create(c, &u), TMEM_E_FULL);
    CHECK(u == TMEM_KV_SEQ_NONE);
    CHECK_ST(tmem_kv_seq_fork(c, s, &u), TMEM_E_FULL);
    CHECK_ST(tmem_kv_seq_create(NULL, &u), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_create(c, NULL), TMEM_E_INVALID_ARG);
    /* malformed handles */
    tmem_kv_seq bogus[] = {0, 3, (1ull << 32) | 3, (1ull << 32) | 0, 0xFFFFFFFFFFFFFFFFull, 1 /* gen 0 */};
    for (size_t i = 0; i < sizeof bogus / sizeof bogus[0]; i++) {
        CHECK_ST(tmem_kv_seq_append(c, bogus[i], 1), TMEM_E_INVALID_ARG);
        /* TMEM_KV_SEQ_NONE (0) names no sequence: freeing it is a no-op */
        CHECK_ST(tmem_kv_seq_free(c, bogus[i]), bogus[i] ? TMEM_E_INVALID_ARG : TMEM_OK);
        CHECK_ST(tmem_kv_seq_kv(c, bogus[i], 0, 0, 0, NULL, NULL), TMEM_E_INVALID_ARG);
    }
    /* a future generation of a real slot: not ours */
    tmem_kv_seq future = s + (1ull << 32);
    CHECK_ST(tmem_kv_seq_append(c, future, 1), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_kv_seq_free(c, future), TMEM_E_NOT_FOUND);
    /* limits */
    CHECK_ST(tmem_kv_seq_append(c, s, 0), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_append(c, s, 101), TMEM_E_OVERFLOW);
    CHECK_OK(tmem_kv_seq_append(c, s, 100));
    CHECK_ST(tmem_kv_seq_append(c, s, 1), TMEM_E_OVERFLOW);
    CHECK_ST(tmem_kv_seq_append(c, s, UINT32_MAX), TMEM_E_OVERFLOW);
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, s, &si));
    CHECK(si.tokens == 100 && si.blocks == 25);
    void *k = (void *)1, *v = (void *)1;
    CHECK_ST(tmem_kv_seq_kv(c, s, 2, 0, 0, &k, &v), TMEM_E_INVALID_ARG); /* layer */
    CHECK(k == NULL && v == NULL);
    CHECK_ST(tmem_kv_seq_kv(c, s, 0, 100, 0, &k, &v), TMEM_E_INVALID_ARG); /* token */
    CHECK_ST(tmem_kv_seq_kv(c, s, 0, 0, 0x10, &k, &v), TMEM_E_INVALID_ARG); /* flags */
    CHECK_ST(tmem_kv_seq_state(c, s, 2, &k, &v), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_truncate(c, s, 101), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_rollback(c, s, 101), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_fork_at(c, s, 101, &u), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_fork_at(c, s, 50, NULL), TMEM_E_INVALID_ARG);
    const uint32_t *ids;
    uint32_t n;
    CHECK_ST(tmem_kv_seq_blocks(c, s, NULL, &n), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_blocks(c, s, &ids, NULL), TMEM_E_INVALID_ARG);
    CHECK(tmem_kv_block_ptr(c, 1u << 30) == NULL);
    void *view[4];
    CHECK_ST(tmem_kv_seq_block_ptrs(NULL, s, view, 4, &n), TMEM_E_INVALID_ARG);
    CHECK(n == 0);
    CHECK_ST(tmem_kv_seq_block_ptrs(c, s, view, 4, NULL), TMEM_E_INVALID_ARG);
    n = 7;
    CHECK_ST(tmem_kv_seq_block_ptrs(c, s, NULL, 4, &n), TMEM_E_INVALID_ARG); /* no array for 4 */
    CHECK(n == 0);
    CHECK_ST(tmem_kv_seq_block_ptrs(c, TMEM_KV_SEQ_NONE, view, 4, &n), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_block_ptrs(c, s, view, 4, &n), TMEM_E_FULL); /* 25 blocks */
    CHECK(n == 25);
    CHECK(tmem_kv_block_ptr(NULL, 0) == NULL);
    CHECK_ST(tmem_kv_seq_get_info(c, s, NULL), TMEM_E_INVALID_ARG);
    /* snapshots */
    CHECK_OK(tmem_kv_snapshot_drop(c, TMEM_KV_SNAP_NONE)); /* no snapshot: a no-op */
    CHECK_ST(tmem_kv_snapshot_drop(c, 12345), TMEM_E_NOT_FOUND);
    tmem_kv_snap sn;
    CHECK_OK(tmem_kv_snapshot_take(c, s, &sn));
    CHECK_OK(tmem_kv_snapshot_drop(c, sn));
    CHECK_ST(tmem_kv_snapshot_drop(c, sn), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_kv_snapshot_find(c, s, 100, &sn), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_kv_snapshot_find(c, s, 100, NULL), TMEM_E_INVALID_ARG);
    /* admission input */
    tmem_kv_request rq = {0};
    tmem_kv_admission ad;
    CHECK_ST(tmem_kv_admit(c, &rq, &ad), TMEM_E_INVALID_ARG); /* 0 tokens */
    CHECK_ST(tmem_kv_admit(c, NULL, &ad), TMEM_E_INVALID_ARG);
    rq.context_tokens = 50;
    rq.seq = s;
    CHECK_ST(tmem_kv_admit(c, &rq, &ad), TMEM_E_INVALID_ARG); /* below its length */
    rq.context_tokens = 101;
    CHECK_ST(tmem_kv_admit(c, &rq, &ad), TMEM_E_OVERFLOW);
    /* double free and use after free */
    CHECK_OK(tmem_kv_seq_free(c, t));
    CHECK_ST(tmem_kv_seq_free(c, t), TMEM_E_DOUBLE_FREE);
    CHECK_ST(tmem_kv_seq_append(c, t, 1), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_kv_seq_pin(c, t, true), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_kv_seq_get_info(c, t, &si), TMEM_E_NOT_FOUND);
    /* the slot is reused under a new generation; the old handle stays dead */
    CHECK_OK(tmem_kv_seq_create(c, &u));
    CHECK(u != t && (uint32_t)u == (uint32_t)t);
    CHECK_ST(tmem_kv_seq_free(c, t), TMEM_E_DOUBLE_FREE);
    CHECK_ST(tmem_kv_seq_append(c, t, 1), TMEM_E_NOT_FOUND);
    CHECK_OK(tmem_kv_seq_append(c, u, 1));
    /* NULL cache everywhere */
    CHECK_ST(tmem_kv_seq_free(NULL, s), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_append(NULL, s, 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_truncate(NULL, s, 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_rollback(NULL, s, 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_kv(NULL, s, 0, 0, 0, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_state(NULL, s, 0, NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_pin(NULL, s, true), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_seq_touch(NULL, s), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_snapshot_take(NULL, s, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_admit(NULL, &rq, &ad), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_cache_reclaim(NULL, 1, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_cache_get_stats(NULL, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_kv_cache_check(NULL), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_kv_cache_check(c));
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.sequences == 2 && st.blocks_used == 26);
    tmem_kv_cache_destroy(c);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_create_errors);
    RUN(test_handle_errors);
    return tmem_test_finish();
}

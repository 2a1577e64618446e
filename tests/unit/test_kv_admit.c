/* Admission and eviction under tight budgets: the policy's order, the
 * callbacks, evicted handles answering a clean error, pinned and requesting
 * sequences spared, the prefill-chunk suggestion and the context reclaim
 * hook. */
#include "kv_test_util.h"

static tmem_kv_seq make_seq(tmem_kv_cache *c, uint32_t tokens) {
    tmem_kv_seq s = TMEM_KV_SEQ_NONE;
    if (tmem_kv_seq_create(c, &s) != TMEM_OK) return TMEM_KV_SEQ_NONE;
    if (tokens && tmem_kv_seq_append(c, s, tokens) != TMEM_OK) return TMEM_KV_SEQ_NONE;
    return s;
}

static void test_admit_evicts_lru(void) {
    tmem_kv_cache_desc d = kvt_desc(false, NULL);
    d.kv_pool_bytes = 1ull << 20;
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, false, &d, 0, 12 * KVT_BLOCK_BYTES));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq a = make_seq(c, 16), b = make_seq(c, 16), cc = make_seq(c, 16);
    REQUIRE(a && b && cc); /* 12 blocks: the budget */
    tmem_kv_seq x;
    CHECK_OK(tmem_kv_seq_create(c, &x));
    /* over the budget: append runs the policy itself and evicts the LRU (a) */
    CHECK_OK(tmem_kv_seq_append(c, x, 1));
    CHECK(fx.ev.seq_evicted == 1 && fx.ev.last_seq == a && fx.ev.last_reason == TMEM_KV_REASON_RECLAIM);
    CHECK_OK(tmem_kv_seq_free(c, x));
    CHECK_OK(tmem_kv_cache_check(c));

    /* a request that fits after evicting the least recently used (b) */
    CHECK_OK(tmem_kv_seq_touch(c, cc));
    tmem_kv_request rq = {0};
    rq.context_tokens = 8;
    tmem_kv_admission ad;
    a = make_seq(c, 12); /* fills the room a left: 11 blocks in use + 1 free */
    REQUIRE(a);
    CHECK_OK(tmem_kv_admit(c, &rq, &ad));
    CHECK(ad.admitted && ad.kv_bytes == 2 * KVT_BLOCK_BYTES && ad.sequences_evicted == 1);
    CHECK(ad.freed_bytes == 4 * KVT_BLOCK_BYTES && ad.prefill_chunk == 8);
    CHECK(fx.ev.seq_evicted == 2 && fx.ev.last_seq == b && fx.ev.last_reason == TMEM_KV_REASON_ADMISSION);
    /* b's handle now answers a clean error */
    void *k;
    tmem_kv_seq_info si;
    CHECK_ST(tmem_kv_seq_append(c, b, 1), TMEM_E_STATE);
    CHECK_ST(tmem_kv_seq_kv(c, b, 0, 0, 0, &k, NULL), TMEM_E_STATE);
    CHECK(k == NULL);
    CHECK_ST(tmem_kv_seq_fork(c, b, &x), TMEM_E_STATE);
    CHECK_ST(tmem_kv_snapshot_take(c, b, NULL), TMEM_E_STATE);
    void *view[4] = {NULL};
    uint32_t nv = 9;
    CHECK_ST(tmem_kv_seq_block_ptrs(c, b, view, 4, &nv), TMEM_E_STATE); /* an evicted sequence has no view */
    CHECK(nv == 0 && view[0] == NULL);
    CHECK_OK(tmem_kv_seq_get_info(c, b, &si));
    CHECK(si.status == TMEM_KV_SEQ_EVICTED && si.tokens == 0);
    CHECK_OK(tmem_kv_cache_check(c));
    CHECK_OK(tmem_kv_seq_free(c, b));
    CHECK_ST(tmem_kv_seq_free(c, b), TMEM_E_DOUBLE_FREE);
    CHECK_ST(tmem_kv_seq_append(c, b, 1), TMEM_E_NOT_FOUND);
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.sequences == 2 && st.evicted == 1 && st.seqs_evicted == 2); /* the first a is still an evicted handle */
    kvt_close(&fx);
}

static void test_admit_spares_pinned_and_requester(void) {
    tmem_kv_cache_desc d = kvt_desc(false, NULL);
    d.kv_pool_bytes = 1ull << 20;
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, false, &d, 0, 12 * KVT_BLOCK_BYTES));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq a = make_seq(c, 16), b = make_seq(c, 16), r = make_seq(c, 8);
    REQUIRE(a && b && r); /* 10 blocks */
    CHECK_OK(tmem_kv_seq_pin(c, a, true));
    CHECK_OK(tmem_kv_seq_touch(c, b));
    CHECK_OK(tmem_kv_seq_touch(c, a));
    /* r (least recently used of all) grows to 24 tokens: 4 more blocks, 2 free.
     * r is the requester and a is pinned: b goes, although it is newer. */
    tmem_kv_request rq = {0};
    rq.seq = r;
    rq.context_tokens = 24;
    tmem_kv_admission ad;
    CHECK_OK(tmem_kv_admit(c, &rq, &ad));
    CHECK(ad.admitted && ad.sequences_evicted == 1 && fx.ev.last_seq == b);
    CHECK_OK(tmem_kv_seq_append(c, r, 16));
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, a, &si));
    CHECK(si.status == TMEM_KV_SEQ_LIVE && si.pinned && si.tokens == 16);
    /* nothing else may go: a request that needs more is refused, and
     * nothing is evicted for it */
    int before = fx.ev.seq_evicted;
    rq.context_tokens = 40;
    CHECK_ST(tmem_kv_admit(c, &rq, &ad), TMEM_E_BUDGET);
    CHECK(!ad.admitted && ad.prefill_chunk == 0 && fx.ev.seq_evicted == before);
    /* an append past the budget with only pinned others fails whole */
    CHECK_ST(tmem_kv_seq_append(c, r, 16), TMEM_E_BUDGET);
    CHECK_OK(tmem_kv_seq_get_info(c, r, &si));
    CHECK(si.tokens == 24 && si.blocks == 6);
    CHECK(fx.ev.seq_evicted == before);
    /* an impossible request evicts nothing even when victims exist */
    CHECK_OK(tmem_kv_seq_pin(c, a, false));
    rq.seq = TMEM_KV_SEQ_NONE;
    rq.context_tokens = 1000;
    CHECK_ST(tmem_kv_admit(c, &rq, &ad), TMEM_E_BUDGET);
    CHECK(fx.ev.seq_evicted == before);
    kvt_close(&fx);
}

/* Evicting one of two sequences that share every block gives nothing back:
 * the policy passes over them (LRU though they are) for one that frees. */
static void test_admit_skips_useless_evictions(void) {
    tmem_kv_cache_desc d = kvt_desc(false, NULL);
    d.kv_pool_bytes = 1ull << 20;
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, false, &d, 0, 12 * KVT_BLOCK_BYTES));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq a = make_seq(c, 16), b, cc, dd;
    REQUIRE(a);
    REQUIRE_OK(tmem_kv_seq_fork(c, a, &b)); /* 4 shared blocks */
    cc = make_seq(c, 16);
    dd = make_seq(c, 12);
    REQUIRE(cc && dd); /* 11 blocks in use */
    CHECK_OK(tmem_kv_seq_touch(c, b));
    CHECK_OK(tmem_kv_seq_touch(c, cc));
    CHECK_OK(tmem_kv_seq_touch(c, dd)); /* LRU order: a, b, cc, dd */
    tmem_kv_request rq = {0};
    rq.context_tokens = 8; /* 2 blocks, 1 free */
    tmem_kv_admission ad;
    CHECK_OK(tmem_kv_admit(c, &rq, &ad));
    CHECK(ad.sequences_evicted == 1 && fx.ev.last_seq == cc && ad.freed_bytes == 4 * KVT_BLOCK_BYTES);
    /* the same through the reactive path (an append over the budget) */
    tmem_kv_seq e = make_seq(c, 16); /* 11 - 4 + 4 = 11 blocks */
    REQUIRE(e);
    CHECK_OK(tmem_kv_seq_touch(c, dd));
    CHECK_OK(tmem_kv_seq_touch(c, e));
    CHECK_OK(tmem_kv_seq_append(c, dd, 8)); /* +2 blocks, 1 free: dd is LRU-protected, a and b give nothing */
    CHECK(fx.ev.seq_evicted == 2 && fx.ev.last_seq == e);
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, a, &si));
    CHECK(si.status == TMEM_KV_SEQ_LIVE);
    /* once nothing else is left, a and b go together */
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    CHECK(st.blocks_used == 9);
    rq.context_tokens = 16; /* 4 blocks, 3 free */
    CHECK_OK(tmem_kv_seq_pin(c, dd, true));
    CHECK_OK(tmem_kv_admit(c, &rq, &ad));
    CHECK(ad.sequences_evicted == 2 && ad.freed_bytes == 4 * KVT_BLOCK_BYTES);
    kvt_close(&fx);
}

/* The carved KV range is full (no budget involved): dropping snapshots
 * would not help, so the policy goes straight to a sequence. */
static void test_range_full(void) {
    tmem_kv_cache_desc d = kvt_desc(true, NULL);
    d.kv_pool_bytes = 8 * KVT_BLOCK_BYTES;
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, true, &d, 0, 0));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq a = make_seq(c, 16), b = make_seq(c, 16), x;
    REQUIRE(a && b);
    CHECK_OK(tmem_kv_snapshot_take(c, b, NULL));
    CHECK_OK(tmem_kv_seq_touch(c, b));
    x = make_seq(c, 0);
    REQUIRE(x);
    CHECK_OK(tmem_kv_seq_append(c, x, 4));
    CHECK(fx.ev.snap_dropped == 0 && fx.ev.seq_evicted == 1 && fx.ev.last_seq == a);
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, b, &si));
    CHECK(si.snapshots == 1);
    /* everything else pinned: the range stays full, a clean TMEM_E_FULL */
    CHECK_OK(tmem_kv_seq_pin(c, b, true));
    CHECK_OK(tmem_kv_seq_append(c, x, 12));
    CHECK_ST(tmem_kv_seq_append(c, x, 1), TMEM_E_FULL);
    CHECK_OK(tmem_kv_seq_get_info(c, x, &si));
    CHECK(si.tokens == 16);
    kvt_close(&fx);
}

static void test_admit_snapshots_first(void) {
    /* the context budget binds: snapshots go before sequences */
    uint64_t budget = 4ull << 20;
    tmem_kv_cache_desc d = kvt_desc(true, NULL);
    d.kv_pool_bytes = d.state_pool_bytes = 4ull << 20;
    d.snapshot_budget = 4ull << 20;
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, true, &d, budget, 0));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq a = make_seq(c, 8), b = make_seq(c, 8);
    REQUIRE(a && b);
    for (uint32_t i = 0; i < 4; i++) {
        CHECK_OK(tmem_kv_seq_append(c, a, 1));
        CHECK_OK(tmem_kv_snapshot_take(c, a, NULL));
    }
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(fx.ctx, &bi));
    /* ask for what is free plus two snapshots' worth, as "other" bytes */
    tmem_kv_request rq = {0};
    rq.context_tokens = 4;
    rq.extra_bytes = bi.available + 2ull * KVT_STATE_SLOT - KVT_BLOCK_BYTES - KVT_STATE_SLOT;
    tmem_kv_admission ad;
    CHECK_OK(tmem_kv_admit(c, &rq, &ad));
    CHECK(ad.admitted && ad.snapshots_dropped == 2 && ad.sequences_evicted == 0);
    CHECK(fx.ev.snap_dropped == 2 && fx.ev.seq_evicted == 0 && fx.ev.last_reason == TMEM_KV_REASON_ADMISSION);
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, a, &si));
    CHECK(si.snapshots == 2);
    /* the two oldest went: positions 9 and 10 */
    tmem_kv_snap sn;
    CHECK_ST(tmem_kv_snapshot_find(c, a, 9, &sn), TMEM_E_NOT_FOUND);
    CHECK_ST(tmem_kv_snapshot_find(c, a, 10, &sn), TMEM_E_NOT_FOUND);
    CHECK_OK(tmem_kv_snapshot_find(c, a, 11, &sn));
    kvt_close(&fx);
}

static void test_prefill_chunk(void) {
    uint64_t budget = 768ull << 10;
    tmem_kv_cache_desc d = kvt_desc(false, NULL);
    d.kv_pool_bytes = 2ull << 20;
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, false, &d, budget, 0));
    tmem_kv_cache *c = fx.c;
    d.on_evict = kvt_on_evict; /* for the caches made again below */
    d.user = &fx.ev;
    tmem_kv_seq old = make_seq(c, 64); /* 64 KiB an eviction could give back */
    REQUIRE(old);
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(fx.ctx, &bi));
    /* 256 tokens of KV (256 KiB) + 4 KiB of activations per chunk token */
    tmem_kv_request rq = {0};
    rq.context_tokens = 256;
    rq.prefill_chunk = 256;
    rq.activation_bytes_per_token = 4096;
    uint64_t kv = 256ull * KVT_TOKEN_BYTES;
    /* CHUNK_FIRST: the answer is the largest chunk that fits now */
    tmem_kv_admission ad;
    uint32_t want_now = (uint32_t)((bi.available - kv) / 4096);
    REQUIRE(want_now < 256 && want_now > 16);
    tmem_kv_cache_destroy(c);
    d.flags = TMEM_KV_POLICY_CHUNK_FIRST;
    REQUIRE_OK(tmem_kv_cache_create(fx.ctx, &d, &fx.c));
    c = fx.c;
    old = make_seq(c, 64);
    REQUIRE(old);
    CHECK_OK(tmem_kv_admit(c, &rq, &ad));
    CHECK(ad.admitted && ad.sequences_evicted == 0);
    CHECK_MSG(ad.prefill_chunk == want_now, "chunk %u want %u", ad.prefill_chunk, want_now);
    CHECK(ad.other_bytes == (uint64_t)ad.prefill_chunk * 4096 && ad.kv_bytes == kv);
    CHECK(fx.ev.seq_evicted == 0);
    tmem_kv_cache_destroy(c);
    /* default order: evict first, then shrink the chunk */
    d.flags = 0;
    REQUIRE_OK(tmem_kv_cache_create(fx.ctx, &d, &fx.c));
    c = fx.c;
    old = make_seq(c, 64);
    REQUIRE(old);
    CHECK_OK(tmem_kv_admit(c, &rq, &ad));
    CHECK(ad.admitted && ad.sequences_evicted == 1 && fx.ev.seq_evicted == 1 && fx.ev.last_seq == old);
    CHECK(ad.prefill_chunk == want_now + 16); /* the 64 KiB freed = 16 more chunk tokens */
    tmem_kv_cache_destroy(c);
    /* NO_EVICT and nothing fits even at chunk 1: refused */
    d.flags = TMEM_KV_POLICY_NO_EVICT;
    REQUIRE_OK(tmem_kv_cache_create(fx.ctx, &d, &fx.c));
    c = fx.c;
    rq.context_tokens = 4096; /* 4 MiB of KV */
    CHECK_ST(tmem_kv_admit(c, &rq, &ad), TMEM_E_BUDGET);
    CHECK(!ad.admitted && ad.kv_bytes == 4096ull * KVT_TOKEN_BYTES);
    kvt_close(&fx);
}

/* A caller-supplied estimate is used instead of the built-in one. */
static uint64_t est_calls;
static uint64_t estimate(const tmem_kv_request *r, uint32_t chunk, void *user) {
    (void)r;
    est_calls++;
    return (uint64_t)chunk * *(uint64_t *)user;
}

static void test_estimate_fn(void) {
    tmem_kv_cache_desc d = kvt_desc(false, NULL);
    d.kv_pool_bytes = 1ull << 20;
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, false, &d, 1ull << 20, 0));
    tmem_kv_cache *c = fx.c;
    uint64_t per = 1ull << 30;
    tmem_kv_request rq = {0};
    rq.context_tokens = 16;
    rq.image_width = 1;
    rq.image_height = 1;
    rq.estimate = estimate;
    rq.estimate_user = &per;
    tmem_kv_admission ad;
    CHECK_ST(tmem_kv_admit(c, &rq, &ad), TMEM_E_BUDGET);
    CHECK(est_calls > 1);
    per = 1024;
    CHECK_OK(tmem_kv_admit(c, &rq, &ad));
    CHECK(ad.prefill_chunk == 16 && ad.other_bytes == 16 * 1024);
    /* without an estimate: an image counts w x h x 3 */
    rq.estimate = NULL;
    rq.image_width = 100;
    rq.image_height = 100;
    CHECK_OK(tmem_kv_admit(c, &rq, &ad));
    CHECK(ad.other_bytes == 30000);
    rq.image_width = rq.image_height = 4096; /* 48 MiB > 1 MiB */
    CHECK_ST(tmem_kv_admit(c, &rq, &ad), TMEM_E_BUDGET);
    kvt_close(&fx);
}

/* A budget hit in another type evicts through the cache's reclaim step. */
static void test_context_reclaim_hook(void) {
    uint64_t budget = 1ull << 20;
    tmem_context *ctx = kvt_context(budget, 0, 0, 0);
    REQUIRE(ctx);
    tmem_type_desc td = {0};
    td.name = "/memory/activations";
    td.placement = TMEM_PLACEMENT_HOST;
    td.lifetime = TMEM_LIFETIME_TRANSIENT;
    td.reserve = 8ull << 20;
    tmem_type *act;
    REQUIRE_OK(tmem_type_create(ctx, &td, &act));
    tmem_heap_desc hd = {0};
    hd.kind = TMEM_HEAP_GENERAL;
    hd.type = act;
    hd.role = TMEM_ROLE_ACTIVATION;
    hd.size = 4ull << 20;
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &h));
    kvt_events ev = {0};
    tmem_kv_cache_desc d = kvt_desc(false, &ev);
    d.kv_pool_bytes = 1ull << 20;
    tmem_kv_cache *c;
    REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &c));
    tmem_kv_seq a = make_seq(c, 64), b = make_seq(c, 64); /* 128 KiB */
    REQUIRE(a && b);
    CHECK_OK(tmem_kv_seq_pin(c, b, true));
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    /* an activation buffer that only fits once a's 64 KiB are back */
    void *p = NULL;
    uint64_t want = bi.available + 32768;
    CHECK_OK(tmem_heap_alloc(h, want, 64, &p));
    CHECK(ev.seq_evicted == 1 && ev.last_seq == a && ev.last_reason == TMEM_KV_REASON_RECLAIM);
    tmem_kv_seq_info si;
    CHECK_OK(tmem_kv_seq_get_info(c, a, &si));
    CHECK(si.status == TMEM_KV_SEQ_EVICTED);
    CHECK_OK(tmem_kv_seq_get_info(c, b, &si));
    CHECK(si.status == TMEM_KV_SEQ_LIVE); /* pinned */
    if (p) CHECK_OK(tmem_heap_free(h, p));
    /* destroyed caches are no longer asked */
    tmem_kv_cache_destroy(c);
    CHECK_ST(tmem_heap_alloc(h, 2ull << 20, 64, &p), TMEM_E_BUDGET);
    tmem_heap_destroy(h);
    tmem_context_destroy(ctx);
}

static void test_manual_reclaim(void) {
    tmem_kv_cache_desc d = kvt_desc(true, NULL);
    kvt_fix fx;
    REQUIRE(kvt_open(&fx, true, &d, 0, 0));
    tmem_kv_cache *c = fx.c;
    tmem_kv_seq a = make_seq(c, 8), b = make_seq(c, 8);
    REQUIRE(a && b);
    CHECK_OK(tmem_kv_snapshot_take(c, b, NULL));
    uint64_t freed;
    /* one snapshot is enough for a few bytes */
    CHECK_OK(tmem_kv_cache_reclaim(c, 1, &freed));
    CHECK(freed == KVT_STATE_SLOT && fx.ev.snap_dropped == 1 && fx.ev.seq_evicted == 0);
    /* then whole sequences, LRU first */
    CHECK_OK(tmem_kv_cache_reclaim(c, 1, &freed));
    CHECK(fx.ev.seq_evicted == 1 && fx.ev.last_seq == a);
    CHECK(freed == 2 * KVT_BLOCK_BYTES + KVT_STATE_SLOT);
    CHECK_ST(tmem_kv_cache_reclaim(c, 1ull << 40, &freed), TMEM_E_BUDGET);
    CHECK(fx.ev.seq_evicted == 2 && freed == 2 * KVT_BLOCK_BYTES + KVT_STATE_SLOT);
    kvt_close(&fx);
}

int main(void) {
    RUN(test_admit_evicts_lru);
    RUN(test_admit_spares_pinned_and_requester);
    RUN(test_admit_skips_useless_evictions);
    RUN(test_range_full);
    RUN(test_admit_snapshots_first);
    RUN(test_prefill_chunk);
    RUN(test_estimate_fn);
    RUN(test_context_reclaim_hook);
    RUN(test_manual_reclaim);
    return tmem_test_finish();
}

/* Regression (tmem demo --bookkeeping --quick --budget-mib 600): a budget slightly too
 * small let the context's reclaim evict the one sequence being generated
 * between two appends, so the next tmem_kv_seq_append answered TMEM_E_STATE
 * (a stale handle) instead of saying the budget was too small. The pattern
 * that keeps the caller's sequence: pin it while it is worked on. Then the
 * allocation that does not fit fails with TMEM_E_BUDGET, nothing is evicted,
 * and the sequence keeps appending; unpinned, the eviction is reported
 * through the callback and the handle answers TMEM_E_STATE (kv.h). */
#include "kv_test_util.h"

typedef struct fixture {
    tmem_context *ctx;
    tmem_heap *act;
    tmem_kv_cache *kv;
    kvt_events ev;
} fixture;

static bool open_fixture(fixture *f) {
    memset(f, 0, sizeof *f);
    f->ctx = kvt_context(1ull << 20, 0, 0, 0);
    if (!f->ctx) return false;
    tmem_type_desc td = {0};
    td.name = "/memory/activations";
    td.placement = TMEM_PLACEMENT_HOST;
    td.lifetime = TMEM_LIFETIME_TRANSIENT;
    td.reserve = 8ull << 20;
    tmem_type *t;
    if (tmem_type_create(f->ctx, &td, &t) != TMEM_OK) return false;
    tmem_heap_desc hd = {0};
    hd.type = t;
    hd.role = TMEM_ROLE_ACTIVATION;
    hd.size = 4ull << 20;
    if (tmem_heap_create(f->ctx, &hd, &f->act) != TMEM_OK) return false;
    tmem_kv_cache_desc d = kvt_desc(false, &f->ev);
    d.kv_pool_bytes = 1ull << 20;
    return tmem_kv_cache_create(f->ctx, &d, &f->kv) == TMEM_OK;
}

static void close_fixture(fixture *f) {
    tmem_kv_cache_destroy(f->kv);
    tmem_heap_destroy(f->act);
    tmem_context_destroy(f->ctx);
}

/* Generation steps: append a chunk, then a step's activations that need
 * more than the budget has left. */
static void run(bool pinned) {
    fixture f;
    REQUIRE(open_fixture(&f));
    tmem_kv_seq s;
    REQUIRE_OK(tmem_kv_seq_create(f.kv, &s));
    if (pinned) REQUIRE_OK(tmem_kv_seq_pin(f.kv, s, true));
    REQUIRE_OK(tmem_kv_seq_append(f.kv, s, 64)); /* 64 KiB of KV */
    tmem_budget_info bi;
    REQUIRE_OK(tmem_context_budget(f.ctx, &bi));
    void *p = NULL;
    tmem_status st = tmem_heap_alloc(f.act, bi.available + 32768, 64, &p);
    if (pinned) {
        CHECK_ST(st, TMEM_E_BUDGET); /* the honest answer: the budget is too small */
        CHECK(p == NULL && f.ev.seq_evicted == 0);
        CHECK_OK(tmem_kv_seq_append(f.kv, s, 4)); /* the sequence is intact */
        tmem_kv_seq_info si;
        CHECK_OK(tmem_kv_seq_get_info(f.kv, s, &si));
        CHECK(si.status == TMEM_KV_SEQ_LIVE && si.tokens == 68);
    } else {
        CHECK_OK(st); /* reclaim evicted the sequence to make room... */
        CHECK(f.ev.seq_evicted == 1 && f.ev.last_seq == s && f.ev.last_reason == TMEM_KV_REASON_RECLAIM);
        CHECK_ST(tmem_kv_seq_append(f.kv, s, 4), TMEM_E_STATE); /* ...and said so through the callback */
        if (p) CHECK_OK(tmem_heap_free(f.act, p));
    }
    CHECK_OK(tmem_kv_cache_check(f.kv));
    close_fixture(&f);
}

static void test_pinned_sequence_survives(void) { run(true); }
static void test_unpinned_sequence_evicted_and_reported(void) { run(false); }

int main(void) {
    RUN(test_pinned_sequence_survives);
    RUN(test_unpinned_sequence_evicted_and_reported);
    return tmem_test_finish();
}

/* Shared set-up for the KV tests: a context with explicit /memory/kv,
 * /memory/state and /memory/snapshots types (budgets chosen per test) and a
 * small hybrid layout whose blocks are exactly one 4 KiB page. */
#ifndef TMEM_KV_TEST_UTIL_H
#define TMEM_KV_TEST_UTIL_H

#include <string.h>
#include "harness.h"
#include "typedmem/kv.h"

/* 2 layers x (K,V) x 2 heads x 32 x f32 = 1 KiB per token; 4 tokens a block. */
#define KVT_TOKEN_BYTES 1024u
#define KVT_BLOCK_TOKENS 4u
#define KVT_BLOCK_BYTES (KVT_TOKEN_BYTES * KVT_BLOCK_TOKENS)
/* 2 layers x (3 x 128 conv + 2 x 32 x 32 state) x f32 = 19,456 B */
#define KVT_STATE_BYTES 19456u
/* what a state slot or snapshot commits: rounded up to 4 KiB pool pages */
#define KVT_STATE_SLOT 20480u

typedef struct kvt_events {
    int seq_evicted, snap_dropped;
    tmem_kv_seq last_seq;
    tmem_kv_snap last_snap;
    tmem_kv_evict_reason last_reason;
    uint64_t bytes;
} kvt_events;

static inline void kvt_on_evict(tmem_kv_cache *c, const tmem_kv_event *ev, void *user) {
    (void)c;
    kvt_events *e = user;
    if (ev->kind == TMEM_KV_EVENT_SEQ_EVICTED) e->seq_evicted++;
    else e->snap_dropped++;
    e->last_seq = ev->seq;
    e->last_snap = ev->snap;
    e->last_reason = ev->reason;
    e->bytes += ev->bytes;
}

static inline tmem_kv_layout kvt_kv_layout(void) {
    return (tmem_kv_layout){2, 2, 32, TMEM_KV_DTYPE_F32, KVT_BLOCK_TOKENS};
}

static inline tmem_recurrent_layout kvt_rec_layout(void) {
    return (tmem_recurrent_layout){2, 1, 2, 32, 32, 4, 0, TMEM_KV_DTYPE_F32};
}

/* Context with budget ctx_budget (0 = 1 GiB) and the three types. */
static inline tmem_context *kvt_context(uint64_t ctx_budget, uint64_t kv_budget, uint64_t state_budget, uint64_t snap_budget) {
    tmem_context_desc cd = {0};
    cd.budget = ctx_budget ? ctx_budget : (1ull << 30);
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_context *ctx = NULL;
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return NULL;
    const char *names[3] = {"/memory/kv", "/memory/state", "/memory/snapshots"};
    uint64_t budgets[3] = {kv_budget, state_budget, snap_budget};
    for (int i = 0; i < 3; i++) {
        tmem_type_desc td = {0};
        td.name = names[i];
        td.placement = TMEM_PLACEMENT_HOST;
        td.lifetime = TMEM_LIFETIME_GROWING;
        td.budget = budgets[i];
        td.reserve = 64ull << 20;
        tmem_type *t;
        if (tmem_type_create(ctx, &td, &t) != TMEM_OK) {
            tmem_context_destroy(ctx);
            return NULL;
        }
    }
    return ctx;
}

static inline tmem_kv_cache_desc kvt_desc(bool recurrent, kvt_events *ev) {
    tmem_kv_cache_desc d = {0};
    d.kv = kvt_kv_layout();
    if (recurrent) d.recurrent = kvt_rec_layout();
    d.kv_pool_bytes = 16ull << 20;
    d.state_pool_bytes = 16ull << 20;
    d.snapshot_budget = 0;
    d.on_evict = ev ? kvt_on_evict : NULL;
    d.user = ev;
    return d;
}

/* A context (kvt_context budgets) with a cache whose events go to ev. */
typedef struct kvt_fix {
    tmem_context *ctx;
    tmem_kv_cache *c;
    kvt_events ev;
} kvt_fix;

/* d NULL = kvt_desc(recurrent); on_evict/user are set to record into f->ev. */
static inline bool kvt_open(kvt_fix *f, bool recurrent, const tmem_kv_cache_desc *d, uint64_t ctx_budget, uint64_t kv_budget) {
    memset(f, 0, sizeof *f);
    f->ctx = kvt_context(ctx_budget, kv_budget, 0, 0);
    if (!f->ctx) return false;
    tmem_kv_cache_desc dd = d ? *d : kvt_desc(recurrent, NULL);
    dd.on_evict = kvt_on_evict;
    dd.user = &f->ev;
    if (tmem_kv_cache_create(f->ctx, &dd, &f->c) != TMEM_OK) {
        tmem_context_destroy(f->ctx);
        return false;
    }
    return true;
}

/* Check the invariants, then destroy the cache and the context. */
static inline void kvt_close(kvt_fix *f) {
    CHECK_OK(tmem_kv_cache_check(f->c));
    tmem_kv_cache_destroy(f->c);
    tmem_context_destroy(f->ctx);
}

/* A row is 2 heads x 32 x f32 = 64 words. Stamp / read a K and V row of (seq, layer, token). */
static inline tmem_status kvt_write(tmem_kv_cache *c, tmem_kv_seq s, uint32_t layer, uint32_t tok, uint32_t val) {
    void *k, *v;
    tmem_status st = tmem_kv_seq_kv(c, s, layer, tok, TMEM_KV_WRITE, &k, &v);
    if (st != TMEM_OK) return st;
    uint32_t nv = ~val;
    for (uint32_t i = 0; i < 64; i++) {
        memcpy((uint32_t *)k + i, &val, 4);
        memcpy((uint32_t *)v + i, &nv, 4);
    }
    return TMEM_OK;
}

/* The value stamped in the row, or 0xFFFFFFFF if K and V disagree / rows torn. */
static inline uint32_t kvt_read(tmem_kv_cache *c, tmem_kv_seq s, uint32_t layer, uint32_t tok) {
    void *k, *v;
    if (tmem_kv_seq_kv(c, s, layer, tok, 0, &k, &v) != TMEM_OK) return 0xFFFFFFFEu;
    uint32_t a, b;
    memcpy(&a, k, 4);
    for (uint32_t i = 0; i < 64; i++) {
        uint32_t x, y;
        memcpy(&x, (uint32_t *)k + i, 4);
        memcpy(&y, (uint32_t *)v + i, 4);
        if (x != a || y != ~a) return 0xFFFFFFFFu;
    }
    (void)b;
    return a;
}

#endif

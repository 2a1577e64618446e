/* Property test: random appends, truncates, forks (also at snapshots),
 * writes, state changes, snapshots and rollbacks against a shadow model.
 * Writes after a fork never show through to the other sequence; every
 * known row and every state reads back what the shadow says; the cache's
 * invariant walker passes after every step. A second run does the same
 * under a KV budget too small for the load: appends and copies on write
 * evict least-recently-used sequences through the policy, and the shadow
 * learns of each one from the callback only — never the sequence being
 * worked on, never a pinned one; evicted handles answer TMEM_E_STATE and
 * the survivors' rows stay intact. Seed printed; TMEM_SEED replays. */
#include <stdlib.h>
#include "kv_test_util.h"

#define MAXS 24
#define MAXT 64
#define LAYERS 2
#define MAXSNAP 8

typedef struct shadow {
    tmem_kv_seq h;
    bool live;
    uint32_t tokens;
    uint32_t val[LAYERS][MAXT]; /* 0 = never written (contents undefined) */
    uint8_t stamp;              /* every byte of the recurrent state */
    uint32_t nsnap;
    uint32_t snap_pos[MAXSNAP];
    uint8_t snap_stamp[MAXSNAP];
    bool pinned;
    bool evicted;               /* reported by the callback, not yet freed */
} shadow;

static tmem_kv_seq current;     /* the sequence the step works on */
static int evictions;

static shadow sh[MAXS];
static uint32_t next_val = 1;

static shadow *by_handle(tmem_kv_seq h) {
    for (int i = 0; i < MAXS; i++)
        if (sh[i].live && sh[i].h == h) return &sh[i];
    return NULL;
}

static void snap_forget(shadow *s, uint32_t pos) {
    for (uint32_t i = 0; i < s->nsnap; i++)
        if (s->snap_pos[i] == pos) {
            s->snap_pos[i] = s->snap_pos[s->nsnap - 1];
            s->snap_stamp[i] = s->snap_stamp[s->nsnap - 1];
            s->nsnap--;
            return;
        }
}

static int snap_index(const shadow *s, uint32_t pos) {
    for (uint32_t i = 0; i < s->nsnap; i++)
        if (s->snap_pos[i] == pos) return (int)i;
    return -1;
}

/* LRU drops under the snapshot budget come back through the callback. */
static int drops;
static void on_evict(tmem_kv_cache *c, const tmem_kv_event *ev, void *user) {
    (void)c;
    bool pressure = user != NULL;
    shadow *s = by_handle(ev->seq);
    CHECK(s != NULL && !s->evicted);
    if (!s) return;
    if (ev->kind == TMEM_KV_EVENT_SNAPSHOT_DROPPED) {
        snap_forget(s, (uint32_t)ev->tokens);
        drops++;
        return;
    }
    CHECK(pressure); /* no budget pressure on KV in the first run */
    CHECK(ev->seq != current && !s->pinned);
    CHECK(ev->tokens == s->tokens);
    s->evicted = true; /* its snapshots went with it */
    s->nsnap = 0;
    evictions++;
}

static int free_slot(void) {
    for (int i = 0; i < MAXS; i++)
        if (!sh[i].live) return i;
    return -1;
}

static int pick_live(tmem_rng *r) {
    int n = 0, idx[MAXS];
    for (int i = 0; i < MAXS; i++)
        if (sh[i].live && !sh[i].evicted) idx[n++] = i;
    return n ? idx[tmem_rng_range(r, 0, (uint64_t)n - 1)] : -1;
}

static bool verify(tmem_kv_cache *c, const shadow *s) {
    bool ok = true;
    for (uint32_t l = 0; l < LAYERS; l++)
        for (uint32_t t = 0; t < s->tokens; t++)
            if (s->val[l][t] && kvt_read(c, s->h, l, t) != s->val[l][t]) {
                CHECK_MSG(0, "seq %llx layer %u token %u: read %u want %u", (unsigned long long)s->h, l, t,
                          kvt_read(c, s->h, l, t), s->val[l][t]);
                ok = false;
            }
    void *conv, *ssm;
    for (uint32_t l = 0; l < LAYERS; l++) {
        if (tmem_kv_seq_state(c, s->h, l, &conv, &ssm) != TMEM_OK) return false;
        const uint8_t *p = conv;
        if (p[0] != s->stamp || p[KVT_STATE_BYTES / LAYERS - 1] != s->stamp) {
            CHECK_MSG(0, "seq %llx state layer %u: %u want %u", (unsigned long long)s->h, l, p[0], s->stamp);
            ok = false;
        }
    }
    tmem_kv_seq_info si;
    if (tmem_kv_seq_get_info(c, s->h, &si) != TMEM_OK || si.tokens != s->tokens || si.snapshots != s->nsnap) {
        CHECK_MSG(0, "seq info: tokens %u/%u snaps %u/%u", si.tokens, s->tokens, si.snapshots, s->nsnap);
        ok = false;
    }
    return ok;
}

static void set_stamp(tmem_kv_cache *c, shadow *s, uint8_t v) {
    void *conv;
    for (uint32_t l = 0; l < LAYERS; l++) {
        CHECK_OK(tmem_kv_seq_state(c, s->h, l, &conv, NULL));
        memset(conv, v, KVT_STATE_BYTES / LAYERS);
    }
    s->stamp = v;
}

/* An evicted sequence answers TMEM_E_STATE, then is freed. */
static void reap_evicted(tmem_kv_cache *c) {
    for (int k = 0; k < MAXS; k++) {
        if (!sh[k].live || !sh[k].evicted) continue;
        tmem_kv_seq_info si;
        CHECK_ST(tmem_kv_seq_append(c, sh[k].h, 1), TMEM_E_STATE);
        CHECK_ST(tmem_kv_seq_kv(c, sh[k].h, 0, 0, 0, NULL, NULL), TMEM_E_STATE);
        CHECK_OK(tmem_kv_seq_get_info(c, sh[k].h, &si));
        CHECK(si.status == TMEM_KV_SEQ_EVICTED);
        CHECK_OK(tmem_kv_seq_free(c, sh[k].h));
        sh[k].live = sh[k].evicted = false;
    }
}

/* A budget refusal is only acceptable under pressure. */
static bool refused(tmem_status st, bool pressure) {
    if (st == TMEM_OK) return false;
    CHECK_MSG(pressure && st == TMEM_E_BUDGET, "%s", tmem_status_name(st));
    return true;
}

static void run_shadow(bool pressure) {
    uint64_t seed = tmem_test_seed(pressure ? 0x70u : 0x6b76u);
    tmem_rng r;
    tmem_rng_init(&r, seed);
    memset(sh, 0, sizeof sh);
    drops = evictions = 0;
    /* under pressure the KV type holds 40 blocks: 24 sequences want more */
    tmem_context *ctx = kvt_context(0, pressure ? 40ull * KVT_BLOCK_BYTES : 0, 0, 0);
    REQUIRE(ctx);
    tmem_kv_cache_desc d = kvt_desc(true, NULL);
    d.on_evict = on_evict;
    d.user = pressure ? (void *)1 : NULL;
    d.snapshot_budget = 6ull * KVT_STATE_SLOT;
    tmem_kv_cache *c;
    REQUIRE_OK(tmem_kv_cache_create(ctx, &d, &c));
    uint64_t forks = 0, writes = 0, rollbacks = 0;
    for (int step = 0; step < 20000; step++) {
        reap_evicted(c);
        current = TMEM_KV_SEQ_NONE;
        int op = (int)tmem_rng_range(&r, 0, 99);
        int i = pick_live(&r);
        if (i < 0 || op < 8) { /* create */
            int j = free_slot();
            if (j < 0) continue;
            memset(&sh[j], 0, sizeof sh[j]);
            REQUIRE_OK(tmem_kv_seq_create(c, &sh[j].h));
            sh[j].live = true;
            continue;
        }
        shadow *s = &sh[i];
        current = s->h;
        if (pressure && op == 99) { /* pin or unpin: pinned ones are never evicted */
            s->pinned = !s->pinned;
            CHECK_OK(tmem_kv_seq_pin(c, s->h, s->pinned));
        } else if (op < 14) { /* free */
            CHECK_OK(tmem_kv_seq_free(c, s->h));
            CHECK_ST(tmem_kv_seq_free(c, s->h), TMEM_E_DOUBLE_FREE);
            s->live = false;
        } else if (op < 30) { /* append */
            uint32_t n = (uint32_t)tmem_rng_range(&r, 1, 9);
            if (s->tokens + n > MAXT) continue;
            if (refused(tmem_kv_seq_append(c, s->h, n), pressure)) continue; /* all or nothing */
            for (uint32_t l = 0; l < LAYERS; l++)
                for (uint32_t t = s->tokens; t < s->tokens + n; t++) s->val[l][t] = 0;
            s->tokens += n;
        } else if (op < 36) { /* truncate */
            uint32_t n = (uint32_t)tmem_rng_range(&r, 0, s->tokens);
            CHECK_OK(tmem_kv_seq_truncate(c, s->h, n));
            s->tokens = n;
            for (uint32_t k = 0; k < s->nsnap;)
                if (s->snap_pos[k] > n) snap_forget(s, s->snap_pos[k]); else k++;
        } else if (op < 46) { /* fork, or fork at a snapshot */
            int j = free_slot();
            if (j < 0) continue;
            shadow *f = &sh[j];
            memset(f, 0, sizeof *f);
            uint32_t at = s->tokens;
            if (s->nsnap && tmem_rng_range(&r, 0, 1)) at = s->snap_pos[tmem_rng_range(&r, 0, s->nsnap - 1)];
            int sk = snap_index(s, at); /* a snapshot at `at` wins over the current state */
            uint8_t stamp = sk >= 0 ? s->snap_stamp[sk] : s->stamp;
            CHECK_OK(tmem_kv_seq_fork_at(c, s->h, at, &f->h));
            f->live = true;
            f->tokens = at;
            f->stamp = stamp;
            memcpy(f->val, s->val, sizeof f->val);
            for (uint32_t l = 0; l < LAYERS; l++)
                for (uint32_t t = at; t < MAXT; t++) f->val[l][t] = 0;
            forks++;
        } else if (op < 72) { /* write a row */
            if (!s->tokens) continue;
            uint32_t l = (uint32_t)tmem_rng_range(&r, 0, LAYERS - 1);
            uint32_t t = (uint32_t)tmem_rng_range(&r, 0, s->tokens - 1);
            uint32_t v = next_val++;
            if (refused(kvt_write(c, s->h, l, t, v), pressure)) continue; /* a copy-on-write refused */
            s->val[l][t] = v;
            writes++;
        } else if (op < 80) { /* the recurrent layers run: new state */
            set_stamp(c, s, (uint8_t)tmem_rng_range(&r, 1, 255));
        } else if (op < 88) { /* snapshot here */
            tmem_kv_snap sn;
            CHECK_OK(tmem_kv_snapshot_take(c, s->h, &sn));
            int k = snap_index(s, s->tokens);
            if (k >= 0) s->snap_stamp[k] = s->stamp;
            else if (s->nsnap < MAXSNAP) {
                s->snap_pos[s->nsnap] = s->tokens;
                s->snap_stamp[s->nsnap++] = s->stamp;
            } else {
                CHECK_OK(tmem_kv_snapshot_drop(c, sn));
            }
        } else if (op < 96) { /* rollback */
            uint32_t to = (uint32_t)tmem_rng_range(&r, 0, s->tokens);
            int k = snap_index(s, to);
            if (k < 0 && to != s->tokens) {
                CHECK_ST(tmem_kv_seq_rollback(c, s->h, to), TMEM_E_NOT_FOUND);
            } else {
                CHECK_OK(tmem_kv_seq_rollback(c, s->h, to));
                if (k >= 0) s->stamp = s->snap_stamp[k];
                s->tokens = to;
                for (uint32_t q = 0; q < s->nsnap;)
                    if (s->snap_pos[q] > to) snap_forget(s, s->snap_pos[q]); else q++;
                rollbacks++;
            }
        } else { /* verify one */
            (void)verify(c, s);
        }
        tmem_status cs = tmem_kv_cache_check(c);
        CHECK_MSG(cs == TMEM_OK, "check failed at step %d (seed %llu)", step, (unsigned long long)seed);
        if (cs != TMEM_OK || tmem_test_failures) break;
        if (step % 64 == 0)
            for (int k = 0; k < MAXS; k++)
                if (sh[k].live && !sh[k].evicted && !verify(c, &sh[k])) break;
    }
    reap_evicted(c);
    for (int k = 0; k < MAXS; k++)
        if (sh[k].live) CHECK(verify(c, &sh[k]));
    tmem_kv_cache_stats st;
    CHECK_OK(tmem_kv_cache_get_stats(c, &st));
    printf("forks %llu writes %llu rollbacks %llu cow copies %llu snapshot drops %d evictions %d\n",
           (unsigned long long)forks, (unsigned long long)writes, (unsigned long long)rollbacks,
           (unsigned long long)st.cow_copies, drops, evictions);
    /* the run exercised what it claims */
    CHECK(forks > 100 && st.cow_copies > 50 && rollbacks > 20);
    CHECK(pressure ? evictions > 20 : evictions == 0);
    tmem_kv_cache_destroy(c);
    tmem_context_destroy(ctx);
}

static void test_shadow(void) { run_shadow(false); }
static void test_shadow_under_pressure(void) { run_shadow(true); }

int main(void) {
    RUN(test_shadow);
    RUN(test_shadow_under_pressure);
    return tmem_test_finish();
}

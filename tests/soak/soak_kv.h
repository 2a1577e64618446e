/* soak_kv.h: the library-level KV worker of the soak (tests/soak/test_soak.c).
 *
 * One thread drives a tmem_kv_cache of its own, in the soak's one context,
 * with what the runtime session does not offer: many unpinned sequences,
 * forks (copy-on-write), snapshots and rollbacks, frees. Every K row it
 * writes carries a tag (lineage << 32 | token) and every snapshot a state
 * pattern, so it can tell a corrupted sequence from an evicted one. The
 * context's reclaim (a runtime session hitting the budget) and the cache's
 * own admission evict its sequences and drop its snapshots; each eviction
 * must come through the callback before the worker meets it as TMEM_E_STATE
 * or TMEM_E_NOT_FOUND, and the callback count must equal the cache's own
 * counters at the end. Header-only: one soak executable. */
#ifndef TMEM_SOAK_KV_H
#define TMEM_SOAK_KV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "harness.h"
#include "typedmem/typedmem.h"

#define SOAK_KV_SEQS 12     /* records the worker keeps */
#define SOAK_KV_TOKENS 192  /* max_tokens per sequence */
#define SOAK_KV_EVENTS 4096 /* events remembered for the checks (older ones age out) */

typedef struct soak_kv_record {
    tmem_kv_seq seq;
    uint32_t len;
    uint64_t tag[SOAK_KV_TOKENS]; /* expected first 8 bytes of each K row (layer 0) */
    uint64_t state_pattern;       /* expected first 8 bytes of layer 0's ssm state */
    tmem_kv_snap snap;            /* 0: none */
    uint32_t snap_len;
    uint64_t snap_pattern; /* expected first 8 bytes of layer 0's ssm state */
} soak_kv_record;

typedef struct soak_kv {
    tmem_kv_cache *cache;
    /* written by the callback (any thread, inside the cache lock) */
    pthread_mutex_t events_lock; /* never held across a cache call */
    tmem_kv_event events[SOAK_KV_EVENTS];
    uint64_t n_events, n_seq_events, n_snap_events;
    /* the worker's own figures */
    soak_kv_record rec[SOAK_KV_SEQS];
    uint64_t ops, forks, cow_writes, snapshots, rollbacks, verified_rows, met_evicted, met_dropped;
    uint64_t budget_refusals, next_lineage;
    atomic_uint_fast64_t *progress;
    atomic_int *stop;
    atomic_uint_fast64_t failures;
} soak_kv;

static void soak_kv_on_evict(tmem_kv_cache *cache, const tmem_kv_event *ev, void *user) {
    (void)cache;
    soak_kv *w = user;
    pthread_mutex_lock(&w->events_lock);
    w->events[w->n_events % SOAK_KV_EVENTS] = *ev;
    w->n_events++;
    if (ev->kind == TMEM_KV_EVENT_SEQ_EVICTED)
        w->n_seq_events++;
    else
        w->n_snap_events++;
    pthread_mutex_unlock(&w->events_lock);
}

/* Was this sequence (snap 0) or snapshot reported by the callback? */
static bool soak_kv_reported(soak_kv *w, tmem_kv_event_kind kind, tmem_kv_seq seq,
                             tmem_kv_snap snap) {
    bool found = false;
    pthread_mutex_lock(&w->events_lock);
    uint64_t n = w->n_events < SOAK_KV_EVENTS ? w->n_events : SOAK_KV_EVENTS;
    for (uint64_t i = 0; i < n && !found; i++) {
        const tmem_kv_event *e = &w->events[i];
        found = e->kind == kind && e->seq == seq &&
                (kind == TMEM_KV_EVENT_SEQ_EVICTED || e->snap == snap);
    }
    pthread_mutex_unlock(&w->events_lock);
    return found;
}

#define SOAK_FAIL(w, ...)                                                                          \
    do {                                                                                           \
        fprintf(stderr, "soak kv: " __VA_ARGS__);                                                  \
        fputc('\n', stderr);                                                                       \
        atomic_fetch_add(&(w)->failures, 1);                                                       \
    } while (0)

/* A status from a call on a recorded sequence: OK goes on; an eviction must
 * have been reported (then the record is freed); a refusal is counted. */
static bool soak_kv_status(soak_kv *w, soak_kv_record *r, tmem_status st, const char *what) {
    if (st == TMEM_OK) return true;
    if (st == TMEM_E_STATE) {
        if (!soak_kv_reported(w, TMEM_KV_EVENT_SEQ_EVICTED, r->seq, 0))
            SOAK_FAIL(w, "%s: sequence %llu evicted without a callback", what,
                      (unsigned long long)r->seq);
        w->met_evicted++;
        if (tmem_kv_seq_free(w->cache, r->seq) != TMEM_OK)
            SOAK_FAIL(w, "free of an evicted sequence");
        r->seq = TMEM_KV_SEQ_NONE;
        return false;
    }
    if (st == TMEM_E_BUDGET || st == TMEM_E_FULL || st == TMEM_E_NO_MEMORY) {
        w->budget_refusals++;
        return false;
    }
    SOAK_FAIL(w, "%s: %s", what, tmem_status_name(st));
    return false;
}

/* Writes (or checks) tags of tokens [from, to) of layer 0, pinned so no
 * other thread's reclaim moves the rows under us. */
static bool soak_kv_rows(soak_kv *w, soak_kv_record *r, uint32_t from, uint32_t to, bool write) {
    if (!soak_kv_status(w, r, tmem_kv_seq_pin(w->cache, r->seq, true), "pin")) return false;
    bool ok = true;
    for (uint32_t t = from; t < to && ok; t++) {
        void *k;
        tmem_status st =
            tmem_kv_seq_kv(w->cache, r->seq, 0, t, write ? TMEM_KV_WRITE : 0, &k, NULL);
        if (st != TMEM_OK) {
            ok = false;
            if (st == TMEM_E_BUDGET || st == TMEM_E_NO_MEMORY)
                w->budget_refusals++; /* copy-on-write refused */
            else
                SOAK_FAIL(w, "kv rows of a pinned sequence: %s", tmem_status_name(st));
            break;
        }
        if (write) {
            memcpy(k, &r->tag[t], 8);
            w->cow_writes++;
        } else {
            uint64_t got;
            memcpy(&got, k, 8);
            if (got != r->tag[t])
                SOAK_FAIL(w, "sequence %llu token %u: tag %016llx, want %016llx",
                          (unsigned long long)r->seq, t, (unsigned long long)got,
                          (unsigned long long)r->tag[t]);
            w->verified_rows++;
        }
    }
    if (tmem_kv_seq_pin(w->cache, r->seq, false) != TMEM_OK) SOAK_FAIL(w, "unpin");
    if (!ok && write) {
        /* rows the refusal left unwritten no longer hold their tags: drop it */
        if (tmem_kv_seq_free(w->cache, r->seq) != TMEM_OK) SOAK_FAIL(w, "seq_free");
        r->seq = TMEM_KV_SEQ_NONE;
    }
    return ok;
}

static bool soak_kv_state(soak_kv *w, soak_kv_record *r, uint64_t *pattern, bool write) {
    if (!soak_kv_status(w, r, tmem_kv_seq_pin(w->cache, r->seq, true), "pin")) return false;
    void *ssm;
    tmem_status st = tmem_kv_seq_state(w->cache, r->seq, 0, NULL, &ssm);
    if (st == TMEM_OK) {
        if (write)
            memcpy(ssm, pattern, 8);
        else
            memcpy(pattern, ssm, 8);
    } else {
        SOAK_FAIL(w, "state of a pinned sequence: %s", tmem_status_name(st));
    }
    if (tmem_kv_seq_pin(w->cache, r->seq, false) != TMEM_OK) SOAK_FAIL(w, "unpin");
    return st == TMEM_OK;
}

static void soak_kv_grow(soak_kv *w, soak_kv_record *r, uint32_t n, uint64_t lineage) {
    if (r->len + n > SOAK_KV_TOKENS) n = SOAK_KV_TOKENS - r->len;
    if (!n || !soak_kv_status(w, r, tmem_kv_seq_append(w->cache, r->seq, n), "append")) return;
    for (uint32_t t = r->len; t < r->len + n; t++) r->tag[t] = lineage << 32 | t;
    uint32_t from = r->len;
    r->len += n;
    if (!soak_kv_rows(w, r, from, r->len, true)) return;
    /* the state moves on with the tokens, as a forward pass would move it */
    uint64_t pattern = lineage << 32 | r->len;
    if (soak_kv_state(w, r, &pattern, true)) r->state_pattern = pattern;
}

static soak_kv_record *soak_kv_free_slot(soak_kv *w) {
    for (int i = 0; i < SOAK_KV_SEQS; i++)
        if (w->rec[i].seq == TMEM_KV_SEQ_NONE) return &w->rec[i];
    return NULL;
}

static void soak_kv_op(soak_kv *w, tmem_rng *rng) {
    soak_kv_record *r = &w->rec[tmem_rng_range(rng, 0, SOAK_KV_SEQS - 1)];
    uint64_t op = tmem_rng_range(rng, 0, 9);
    if (r->seq == TMEM_KV_SEQ_NONE) {
        tmem_status st = tmem_kv_seq_create(w->cache, &r->seq);
        if (st != TMEM_OK) {
            r->seq = TMEM_KV_SEQ_NONE;
            if (st == TMEM_E_BUDGET || st == TMEM_E_FULL)
                w->budget_refusals++;
            else
                SOAK_FAIL(w, "seq_create: %s", tmem_status_name(st));
            return;
        }
        r->len = 0;
        r->snap = 0;
        /* a new sequence's recurrent slot is zeroed (kv.h); if the first grow
         * is refused, a snapshot taken next must expect zeros, not the
         * pattern of the sequence this record held before */
        r->state_pattern = 0;
        soak_kv_grow(w, r, (uint32_t)tmem_rng_range(rng, 8, 64), ++w->next_lineage);
    } else if (op < 3) {
        soak_kv_grow(w, r, (uint32_t)tmem_rng_range(rng, 1, 32), ++w->next_lineage);
    } else if (op < 5) {
        soak_kv_record *c = soak_kv_free_slot(w);
        if (!c) return;
        tmem_kv_seq child;
        if (!soak_kv_status(w, r, tmem_kv_seq_fork(w->cache, r->seq, &child), "fork")) return;
        w->forks++;
        *c = *r;
        c->seq = child;
        c->snap = 0; /* snapshots stay with the parent */
        /* rewrite the child's first token: a copy-on-write that the parent
         * must not see, then grow the child */
        c->tag[0] = ++w->next_lineage << 32;
        if (c->len) (void)soak_kv_rows(w, c, 0, 1, true); /* empty if its append was refused */
        if (c->seq != TMEM_KV_SEQ_NONE)
            soak_kv_grow(w, c, (uint32_t)tmem_rng_range(rng, 1, 16), w->next_lineage);
    } else if (op < 6) {
        tmem_kv_snap snap;
        if (!soak_kv_status(w, r, tmem_kv_snapshot_take(w->cache, r->seq, &snap), "snapshot"))
            return;
        w->snapshots++;
        r->snap = snap;
        r->snap_len = r->len;
        r->snap_pattern = r->state_pattern;
    } else if (op < 7) {
        if (!r->snap || r->snap_len > r->len) return;
        tmem_status st = tmem_kv_seq_rollback(w->cache, r->seq, r->snap_len);
        if (st == TMEM_E_NOT_FOUND) {
            if (!soak_kv_reported(w, TMEM_KV_EVENT_SNAPSHOT_DROPPED, r->seq, r->snap))
                SOAK_FAIL(w, "snapshot %llu gone without a callback", (unsigned long long)r->snap);
            w->met_dropped++;
            r->snap = 0;
            return;
        }
        if (!soak_kv_status(w, r, st, "rollback")) return;
        w->rollbacks++;
        r->len = r->snap_len;
        r->state_pattern = r->snap_pattern;
        uint64_t got = 0;
        if (soak_kv_state(w, r, &got, false) && got != r->snap_pattern)
            SOAK_FAIL(w, "rollback restored state %016llx, want %016llx", (unsigned long long)got,
                      (unsigned long long)r->snap_pattern);
    } else if (op < 9) {
        (void)soak_kv_rows(w, r, 0, r->len, false);
    } else {
        if (tmem_kv_seq_free(w->cache, r->seq) != TMEM_OK) SOAK_FAIL(w, "seq_free");
        r->seq = TMEM_KV_SEQ_NONE;
    }
}

static void *soak_kv_main(void *arg) {
    soak_kv *w = arg;
    tmem_rng rng;
    tmem_rng_init(&rng, 0x50a4u);
    while (!atomic_load(w->stop)) {
        soak_kv_op(w, &rng);
        w->ops++;
        atomic_fetch_add(w->progress, 1);
    }
    /* a last full check of every sequence still held */
    for (int i = 0; i < SOAK_KV_SEQS; i++)
        if (w->rec[i].seq != TMEM_KV_SEQ_NONE)
            (void)soak_kv_rows(w, &w->rec[i], 0, w->rec[i].len, false);
    return NULL;
}

#endif

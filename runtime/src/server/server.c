/* server.c: several sessions on one model, one budget and one run
 * (tmemrt/server.h). The sessions are attached to one runner session
 * (session/session.c): it holds the only activation arena, scratch, pool
 * and batch logits; each step runs one prefill chunk through it and then
 * every generating session's next token as one batch (session/batch.c). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "rt_internal.h"
#include "tmemrt/server.h"

typedef struct slot {
    tmrt_session *s;                /* NULL: free */
    uint32_t gen;                   /* id = gen << 8 | (index + 1) */
    tmrt_server_state state;
    tmrt_server_finish finish;
    tmem_status status;
    int32_t *pending;               /* tokens to evaluate (malloc) */
    uint32_t n_pending, pending_done;
    uint32_t n_predict, n_generated, n_prompt;
    tmrt_sampler sampler;
    int32_t stop[TMRT_SERVER_MAX_STOP];
    uint32_t n_stop;
    int32_t *out;                   /* generated, not yet read (malloc, n_predict) */
    uint32_t n_out, out_read;
    int32_t carry;                  /* sampled, not evaluated: goes before the next request */
    bool has_carry;
    bool in_use;                    /* a call is working on it: the reclaim step leaves it */
    uint64_t last_use;
} slot;

struct tmrt_server {
    tmrt_model *model;
    tmem_context *ctx;
    tmrt_session *runner;
    tmrt_session_desc sdesc;
    uint32_t max_sessions, max_batch, chunk, n_ctx, flags;
    char dir[900];
    bool have_dir, reclaim_added;
    slot slots[TMRT_SERVER_MAX_SESSIONS];
    uint32_t next_prefill;          /* round robin */
    uint64_t clock;
    atomic_int pressure;            /* set by the pressure callback */
    tmrt_server_stats st;
};

static slot *find(tmrt_server *srv, uint32_t id) {
    uint32_t i = (id & 0xFFu) - 1;
    if (!srv || !id || i >= srv->max_sessions) return NULL;
    slot *sl = &srv->slots[i];
    return sl->s && sl->gen == id >> 8 ? sl : NULL;
}

static uint32_t slot_id(const tmrt_server *srv, const slot *sl) {
    return sl->gen << 8 | (uint32_t)(sl - srv->slots + 1);
}

static void file_path(const tmrt_server *srv, const slot *sl, char *out, size_t cap) {
    snprintf(out, cap, "%s/session-%u.tmrt", srv->dir, (unsigned)(sl - srv->slots));
}

static uint64_t committed(tmem_context *ctx) {
    tmem_budget_info bi;
    return tmem_context_budget(ctx, &bi) == TMEM_OK ? bi.committed - bi.committed_clean : 0;
}

/* Suspend one idle slot; its freed bytes into *freed. */
static tmem_status suspend_slot(tmrt_server *srv, slot *sl, uint64_t *freed, tmrt_error *err) {
    if (!srv->have_dir) return tmrt__fail(err, TMEM_E_UNSUPPORTED, "server: no suspend directory");
    if (sl->state != TMRT_SERVER_IDLE || sl->in_use || tmrt_session_suspended(sl->s))
        return tmrt__fail(err, TMEM_E_STATE, "server: the conversation is busy or suspended");
    char path[1024];
    file_path(srv, sl, path, sizeof path);
    uint64_t before = committed(srv->ctx);
    sl->in_use = true;
    tmem_status st = tmrt_session_suspend(sl->s, path, err);
    sl->in_use = false;
    if (st) {
        srv->st.suspend_failures++;
        return st;
    }
    uint64_t after = committed(srv->ctx);
    if (freed) *freed += before > after ? before - after : 0;
    srv->st.suspends++;
    struct stat fs;
    if (stat(path, &fs) == 0) srv->st.suspend_bytes += (uint64_t)fs.st_size;
    return TMEM_OK;
}

/* Least recently used idle, in-memory slot; NULL when none. */
static slot *lru_idle(tmrt_server *srv) {
    slot *best = NULL;
    for (uint32_t i = 0; i < srv->max_sessions; i++) {
        slot *sl = &srv->slots[i];
        if (!sl->s || sl->in_use || sl->state != TMRT_SERVER_IDLE || tmrt_session_suspended(sl->s)) continue;
        if (!best || sl->last_use < best->last_use) best = sl;
    }
    return best;
}

static uint64_t reclaim(tmrt_server *srv, uint64_t bytes) {
    uint64_t freed = 0;
    slot *sl;
    while (freed < bytes && (sl = lru_idle(srv)) != NULL)
        if (suspend_slot(srv, sl, &freed, NULL)) break;
    return freed;
}

/* The context's reclaim step: a commit that would cross a budget. */
static uint64_t on_reclaim(tmem_context *ctx, tmem_type *type, uint64_t needed, void *user) {
    (void)ctx;
    (void)type;
    return reclaim(user, needed);
}

static void on_pressure(tmem_context *ctx, tmem_pressure level, void *user) {
    (void)ctx;
    tmrt_server *srv = user;
    if (level >= TMEM_PRESSURE_WARNING) atomic_store(&srv->pressure, 1);
}

tmem_status tmrt_server_create(tmrt_model *m, const tmrt_server_desc *d, tmrt_server **out, tmrt_error *err) {
    if (out) *out = NULL;
    if (!m || !d || !out || d->max_sessions > TMRT_SERVER_MAX_SESSIONS || d->max_batch > TMRT_SERVER_MAX_SESSIONS ||
        (d->flags & ~(uint32_t)(TMRT_SERVER_SUSPEND_ON_PRESSURE | TMRT_SERVER_NO_RECLAIM)))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: bad arguments");
    if (d->suspend_dir && strlen(d->suspend_dir) >= 900)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: suspend directory path too long");
    tmrt_server *srv = calloc(1, sizeof *srv);
    if (!srv) return tmrt__fail(err, TMEM_E_NO_MEMORY, "server: no memory");
    srv->model = m;
    srv->ctx = m->ctx;
    srv->max_sessions = d->max_sessions ? d->max_sessions : 4;
    srv->max_batch = d->max_batch ? d->max_batch : srv->max_sessions;
    if (srv->max_batch > srv->max_sessions) srv->max_batch = srv->max_sessions;
    srv->flags = d->flags;
    srv->sdesc = d->session;
    srv->sdesc.budget = 0;
    srv->sdesc.flags = 0;
    srv->sdesc.on_evict = NULL;
    srv->sdesc.evict_user = NULL;
    if (d->suspend_dir) {
        snprintf(srv->dir, sizeof srv->dir, "%s", d->suspend_dir);
        srv->have_dir = true;
    }
    tmem_status st = tmrt__session_create_ex(m, &srv->sdesc, NULL, srv->max_batch, &srv->runner, err);
    if (st) {
        free(srv);
        return st;
    }
    tmrt_session_info ri;
    (void)!tmrt_session_get_info(srv->runner, &ri);
    srv->chunk = ri.chunk;
    srv->n_ctx = ri.n_ctx;
    srv->sdesc.n_ctx = ri.n_ctx;
    if (!(d->flags & TMRT_SERVER_NO_RECLAIM)) {
        if ((st = tmem_context_add_reclaim(srv->ctx, 50, on_reclaim, srv))) {
            tmrt_session_destroy(srv->runner);
            free(srv);
            return tmrt__fail(err, st, "server: reclaim step: %s", tmem_strerror(st));
        }
        srv->reclaim_added = true;
    }
    if ((d->flags & TMRT_SERVER_SUSPEND_ON_PRESSURE) &&
        (st = tmem_context_set_pressure_callback(srv->ctx, on_pressure, srv))) {
        tmrt_server_destroy(srv);
        return tmrt__fail(err, st, "server: pressure callback: %s", tmem_strerror(st));
    }
    *out = srv;
    return TMEM_OK;
}

static void slot_clear_request(slot *sl) {
    free(sl->pending);
    free(sl->out);
    sl->pending = sl->out = NULL;
    sl->n_pending = sl->pending_done = sl->n_out = sl->out_read = 0;
}

static void slot_free(tmrt_server *srv, slot *sl) {
    char path[1024];
    if (tmrt_session_suspended(sl->s)) {
        file_path(srv, sl, path, sizeof path);
        (void)remove(path);
    }
    tmrt_session_destroy(sl->s);
    sl->s = NULL;
    slot_clear_request(sl);
    sl->state = TMRT_SERVER_IDLE;
}

void tmrt_server_destroy(tmrt_server *srv) {
    if (!srv) return;
    if (srv->reclaim_added) (void)!tmem_context_remove_reclaim(srv->ctx, on_reclaim, srv);
    if (srv->flags & TMRT_SERVER_SUSPEND_ON_PRESSURE) (void)!tmem_context_set_pressure_callback(srv->ctx, NULL, NULL);
    for (uint32_t i = 0; i < srv->max_sessions; i++)
        if (srv->slots[i].s) slot_free(srv, &srv->slots[i]);
    tmrt_session_destroy(srv->runner);
    free(srv);
}

tmem_status tmrt_server_open(tmrt_server *srv, uint32_t *id, tmrt_error *err) {
    if (id) *id = 0;
    if (!srv || !id) return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: bad arguments");
    slot *sl = NULL;
    for (uint32_t i = 0; i < srv->max_sessions && !sl; i++)
        if (!srv->slots[i].s) sl = &srv->slots[i];
    if (!sl) return tmrt__fail(err, TMEM_E_FULL, "server: all %u sessions are open", srv->max_sessions);
    tmrt_session *s;
    tmem_status st = tmrt__session_create_ex(srv->model, &srv->sdesc, srv->runner, 0, &s, err);
    if (st) return st;
    uint32_t gen = (sl->gen + 1) & 0xFFFFFFu;
    memset(sl, 0, sizeof *sl);
    sl->gen = gen ? gen : 1;
    sl->s = s;
    sl->last_use = ++srv->clock;
    *id = slot_id(srv, sl);
    return TMEM_OK;
}

void tmrt_server_close(tmrt_server *srv, uint32_t id) {
    slot *sl = find(srv, id);
    if (sl && !sl->in_use) slot_free(srv, sl);
}

static tmem_status resume_slot(tmrt_server *srv, slot *sl, tmrt_error *err) {
    char path[1024];
    file_path(srv, sl, path, sizeof path);
    sl->in_use = true;
    tmem_status st = tmrt_session_resume(sl->s, path, err);
    sl->in_use = false;
    if (!st) srv->st.resumes++;
    return st;
}

tmem_status tmrt_server_submit(tmrt_server *srv, uint32_t id, const tmrt_server_request *rq, tmrt_error *err) {
    slot *sl = find(srv, id);
    if (!sl || !rq || (rq->n_tokens && !rq->tokens) || rq->n_stop > TMRT_SERVER_MAX_STOP)
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: bad request");
    if (sl->state != TMRT_SERVER_IDLE) return tmrt__fail(err, TMEM_E_STATE, "server: a request is running");
    uint32_t n_vocab = srv->model->hp.n_vocab;
    for (uint32_t i = 0; i < rq->n_tokens; i++)
        if (rq->tokens[i] < 0 || (uint32_t)rq->tokens[i] >= n_vocab)
            return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: token %u (id %d) outside the vocabulary", i,
                              rq->tokens[i]);
    uint64_t n_new = (uint64_t)rq->n_tokens + sl->has_carry;
    if (!n_new && !rq->n_predict) return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: empty request");
    if (tmrt_session_suspended(sl->s)) {
        tmem_status st = resume_slot(srv, sl, err);
        if (st) return st;
    }
    if (!n_new && !tmrt_session_logits(sl->s))
        return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: nothing to evaluate and no logits to go on from");
    tmrt_session_info si;
    (void)!tmrt_session_get_info(sl->s, &si);
    if (si.n_past + n_new + rq->n_predict > srv->n_ctx)
        return tmrt__fail(err, TMEM_E_FULL, "server: %u + %llu tokens and %u to generate pass the context of %u",
                          si.n_past, (unsigned long long)n_new, rq->n_predict, srv->n_ctx);
    int32_t *pending = n_new ? malloc(n_new * sizeof *pending) : NULL;
    int32_t *out = rq->n_predict ? malloc((size_t)rq->n_predict * sizeof *out) : NULL;
    if ((n_new && !pending) || (rq->n_predict && !out)) {
        free(pending);
        free(out);
        return tmrt__fail(err, TMEM_E_NO_MEMORY, "server: no memory for the request");
    }
    slot_clear_request(sl);
    if (sl->has_carry) pending[0] = sl->carry;
    if (rq->n_tokens) memcpy(pending + sl->has_carry, rq->tokens, (size_t)rq->n_tokens * sizeof *pending);
    sl->has_carry = false;
    sl->pending = pending;
    sl->n_pending = (uint32_t)n_new;
    sl->out = out;
    sl->n_predict = rq->n_predict;
    sl->n_generated = 0;
    sl->n_prompt = (uint32_t)n_new;
    tmrt_sampler_init(&sl->sampler, &rq->sampler);
    memcpy(sl->stop, rq->stop, sizeof sl->stop);
    sl->n_stop = rq->n_stop;
    sl->finish = TMRT_SERVER_RUNNING;
    sl->status = TMEM_OK;
    sl->state = n_new ? TMRT_SERVER_PREFILL : TMRT_SERVER_DECODE;
    sl->last_use = ++srv->clock;
    return TMEM_OK;
}

static void finish(slot *sl, tmrt_server_finish why, tmem_status st) {
    sl->state = TMRT_SERVER_IDLE;
    sl->finish = why;
    sl->status = st;
    free(sl->pending);
    sl->pending = NULL;
    sl->n_pending = sl->pending_done = 0;
}

void tmrt_server_cancel(tmrt_server *srv, uint32_t id) {
    slot *sl = find(srv, id);
    if (sl && sl->state != TMRT_SERVER_IDLE) finish(sl, TMRT_SERVER_CANCELLED, TMEM_OK);
}

/* One chunk of one prefilling slot, round robin. */
static uint32_t prefill_one(tmrt_server *srv) {
    for (uint32_t k = 0; k < srv->max_sessions; k++) {
        uint32_t i = (srv->next_prefill + k) % srv->max_sessions;
        slot *sl = &srv->slots[i];
        if (!sl->s || sl->state != TMRT_SERVER_PREFILL) continue;
        srv->next_prefill = (i + 1) % srv->max_sessions;
        uint32_t left = sl->n_pending - sl->pending_done, n = left < srv->chunk ? left : srv->chunk;
        bool last = n == left;
        tmrt_batch b = {0};
        b.tokens = sl->pending + sl->pending_done;
        b.n_tokens = n;
        b.logits = last ? TMRT_LOGITS_LAST : TMRT_LOGITS_NONE;
        sl->in_use = true;
        tmem_status st = tmrt_session_eval(sl->s, &b, NULL, NULL, NULL);
        sl->in_use = false;
        sl->last_use = ++srv->clock;
        if (st) {
            finish(sl, TMRT_SERVER_ERROR, st);
            return n;
        }
        sl->pending_done += n;
        srv->st.prefill_tokens += n;
        if (last) {
            free(sl->pending);
            sl->pending = NULL;
            sl->n_pending = sl->pending_done = 0;
            if (sl->n_predict) sl->state = TMRT_SERVER_DECODE;
            else finish(sl, TMRT_SERVER_LENGTH, TMEM_OK);
        }
        return n;
    }
    return 0;
}

static bool is_stop(const slot *sl, int32_t tok) {
    for (uint32_t i = 0; i < sl->n_stop; i++)
        if (sl->stop[i] == tok) return true;
    return false;
}

/* Sample every generating slot's next token; those that go on form one batch. */
static uint32_t decode_all(tmrt_server *srv) {
    tmrt_session *batch[TMRT_SERVER_MAX_SESSIONS];
    slot *owners[TMRT_SERVER_MAX_SESSIONS];
    int32_t toks[TMRT_SERVER_MAX_SESSIONS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < srv->max_sessions && n < srv->max_batch; i++) {
        slot *sl = &srv->slots[i];
        if (!sl->s || sl->state != TMRT_SERVER_DECODE) continue;
        int32_t tok;
        tmem_status st = tmrt_session_sample(sl->s, &sl->sampler, &tok);
        if (st) {
            finish(sl, TMRT_SERVER_ERROR, st);
            continue;
        }
        sl->out[sl->n_out++] = tok;
        sl->n_generated++;
        sl->last_use = ++srv->clock;
        tmrt_session_info si;
        (void)!tmrt_session_get_info(sl->s, &si);
        bool stop = is_stop(sl, tok);
        if (stop || sl->n_generated == sl->n_predict || si.n_past + 1 > srv->n_ctx) {
            sl->carry = tok; /* evaluated before the next request's tokens */
            sl->has_carry = true;
            finish(sl, stop ? TMRT_SERVER_STOP : TMRT_SERVER_LENGTH, TMEM_OK);
            continue;
        }
        batch[n] = sl->s;
        owners[n] = sl;
        toks[n++] = tok;
    }
    if (!n) return 0;
    for (uint32_t i = 0; i < n; i++) owners[i]->in_use = true;
    tmem_status st = tmrt__session_decode_batch(srv->runner, batch, toks, n, NULL);
    for (uint32_t i = 0; i < n; i++) owners[i]->in_use = false;
    if (st) {
        for (uint32_t i = 0; i < n; i++) finish(owners[i], TMRT_SERVER_ERROR, st);
        return 0;
    }
    srv->st.decode_tokens += n;
    srv->st.batched_steps++;
    return n;
}

tmem_status tmrt_server_step(tmrt_server *srv, tmrt_server_step_info *info, tmrt_error *err) {
    if (!srv || !info) return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: bad arguments");
    memset(info, 0, sizeof *info);
    if (atomic_exchange(&srv->pressure, 0)) {
        uint64_t before = srv->st.suspends;
        (void)reclaim(srv, UINT64_MAX);
        info->suspended = (uint32_t)(srv->st.suspends - before);
    }
    srv->st.steps++;
    info->prefill_tokens = prefill_one(srv);
    info->decode_rows = decode_all(srv);
    info->idle = true;
    for (uint32_t i = 0; i < srv->max_sessions; i++)
        if (srv->slots[i].s && srv->slots[i].state != TMRT_SERVER_IDLE) info->idle = false;
    return TMEM_OK;
}

tmem_status tmrt_server_read(tmrt_server *srv, uint32_t id, int32_t *tokens, uint32_t cap, uint32_t *n,
                             tmrt_server_slot_info *info) {
    if (n) *n = 0;
    slot *sl = find(srv, id);
    if (!sl || !n || (cap && !tokens)) return TMEM_E_INVALID_ARG;
    uint32_t k = sl->n_out - sl->out_read;
    if (k > cap) k = cap;
    if (k) memcpy(tokens, sl->out + sl->out_read, (size_t)k * sizeof *tokens);
    sl->out_read += k;
    *n = k;
    if (info) {
        tmrt_session_info si;
        (void)!tmrt_session_get_info(sl->s, &si);
        info->state = sl->state;
        info->finish = sl->finish;
        info->status = sl->status;
        info->suspended = tmrt_session_suspended(sl->s);
        info->n_past = si.n_past;
        info->n_generated = sl->n_generated;
        info->n_prompt = sl->n_prompt;
    }
    return TMEM_OK;
}

tmem_status tmrt_server_suspend(tmrt_server *srv, uint32_t id, tmrt_error *err) {
    slot *sl = find(srv, id);
    if (!sl) return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: unknown conversation");
    return suspend_slot(srv, sl, NULL, err);
}

tmem_status tmrt_server_resume(tmrt_server *srv, uint32_t id, tmrt_error *err) {
    slot *sl = find(srv, id);
    if (!sl) return tmrt__fail(err, TMEM_E_INVALID_ARG, "server: unknown conversation");
    if (!tmrt_session_suspended(sl->s)) return tmrt__fail(err, TMEM_E_STATE, "server: not suspended");
    return resume_slot(srv, sl, err);
}

tmem_status tmrt_server_reclaim(tmrt_server *srv, uint64_t bytes, uint64_t *freed) {
    if (freed) *freed = 0;
    if (!srv) return TMEM_E_INVALID_ARG;
    uint64_t f = reclaim(srv, bytes);
    if (freed) *freed = f;
    return TMEM_OK;
}

tmem_status tmrt_server_get_stats(const tmrt_server *srv, tmrt_server_stats *out) {
    if (!srv || !out) return TMEM_E_INVALID_ARG;
    *out = srv->st;
    out->sessions = out->active = out->suspended = out->busy = 0;
    for (uint32_t i = 0; i < srv->max_sessions; i++) {
        const slot *sl = &srv->slots[i];
        if (!sl->s) continue;
        out->sessions++;
        if (tmrt_session_suspended(sl->s)) out->suspended++;
        else out->active++;
        if (sl->state != TMRT_SERVER_IDLE) out->busy++;
    }
    out->max_sessions = srv->max_sessions;
    out->max_batch = srv->max_batch;
    out->chunk = srv->chunk;
    out->n_ctx = srv->n_ctx;
    return TMEM_OK;
}

tmrt_model *tmrt_server_model(const tmrt_server *srv) { return srv ? srv->model : NULL; }

const float *tmrt_server_logits(tmrt_server *srv, uint32_t id) {
    slot *sl = find(srv, id);
    return sl ? tmrt_session_logits(sl->s) : NULL;
}

/*
 * Budgets and reclaim.
 *
 * Every commit and every external charge is checked against its type's
 * budget and the context's budget under the context lock (committed plus
 * bytes reserved by commits whose OS calls are in flight, unlocked). When it would
 * cross one, the lock is dropped and the reclaim steps run in order:
 *   user steps with priority < 0, then volatile heaps are purged (priority 0,
 *   lowest type reclaim_priority first), then user steps with priority >= 0
 *   (ties: oldest first),
 * stopping as soon as the request fits. Then the check runs again under the
 * lock; if it still does not fit the request fails with TMEM_E_BUDGET and
 * nothing was changed. Rounds repeat (at most four) while steps report
 * progress, because another thread may take what a round freed.
 *
 * No lock is held while a user step runs, so a step may free typedmem memory
 * (a KV cache evicting blocks). A step can be called from any thread that
 * commits, including one that is inside the step owner's own code: steps must
 * not block on locks that the committing code may hold (use trylock and
 * return 0). A commit made from inside a step does not start another reclaim;
 * it fits or fails. tmem_context_remove_reclaim waits until the step is no
 * longer running on other threads, so its `user` may be freed afterwards.
 */
#include <string.h>
#include "core/core.h"

/* Reclaim frames of this thread: which contexts it is reclaiming for, and
 * which step it is inside. Lets a commit made from a step skip reclaim, lets
 * decommits made by a step count as reclaimed bytes, and lets
 * remove_reclaim called from a step not wait for itself. */
typedef struct reclaim_frame {
    const tmem_context *ctx;
    uint32_t seq; /* step being run, UINT32_MAX when none */
    struct reclaim_frame *prev;
} reclaim_frame;
static _Thread_local reclaim_frame *tls_frames;

bool tmem__reclaim_active(const tmem_context *ctx) {
    for (reclaim_frame *f = tls_frames; f; f = f->prev)
        if (f->ctx == ctx) return true;
    return false;
}

static uint32_t own_runs(const tmem_context *ctx, uint32_t seq) {
    uint32_t n = 0;
    for (reclaim_frame *f = tls_frames; f; f = f->prev)
        if (f->ctx == ctx && f->seq == seq) n++;
    return n;
}

/* ---- counters (lock held) ---- */

static bool add_fits(uint64_t have, uint64_t add, uint64_t limit) {
    uint64_t sum;
    return !tmem__add_overflow(have, add, &sum) && sum <= limit;
}

/* What the context budget counts: committed bytes that are not clean file
 * mappings (a phone's footprint limit and a cgroup's OOM killer count dirty
 * memory; clean pages are dropped and re-read instead). */
static uint64_t dirty_locked(const tmem_context *ctx) { return ctx->committed - ctx->committed_clean; }

/* Committed plus reserved (admitted, OS work in flight): what a budget holds. */
static uint64_t held(uint64_t committed, uint64_t reserved) {
    uint64_t sum;
    return tmem__add_overflow(committed, reserved, &sum) ? UINT64_MAX : sum;
}

static bool fits_locked(const tmem_context *ctx, const tmem_type *type, uint64_t bytes) {
    if (type && type->budget && !add_fits(held(type->committed, type->reserved), bytes, type->budget)) return false;
    return add_fits(held(dirty_locked(ctx), ctx->reserved), bytes, ctx->budget);
}

void tmem__budget_reserve_locked(tmem_type *type, uint64_t bytes) {
    type->reserved += bytes;
    type->ctx->reserved += bytes;
}

void tmem__budget_unreserve_locked(tmem_type *type, uint64_t bytes) {
    tmem__assert(type->reserved >= bytes && type->ctx->reserved >= bytes);
    type->reserved -= bytes;
    type->ctx->reserved -= bytes;
}

static void stat_add(uint64_t *cur, uint64_t *peak, uint64_t *total, uint64_t bytes) {
    *cur += bytes;
    if (*cur > *peak) *peak = *cur;
    *total += bytes;
}

void tmem__budget_charge_locked(tmem_type *type, uint64_t bytes, bool clean, bool pool) {
    tmem_context *ctx = type->ctx;
    stat_add(&type->committed, &type->committed_peak, &type->committed_total, bytes);
    if (!pool) {
        if (clean) type->charged_clean += bytes;
        else type->charged_dirty += bytes;
    }
    if (clean && !pool) ctx->committed_clean += bytes;
    stat_add(&ctx->committed, &ctx->committed_peak, &ctx->committed_total, bytes);
    tmem__pressure_update_locked(ctx);
}

void tmem__budget_uncharge_locked(tmem_type *type, uint64_t bytes, bool clean, bool pool) {
    tmem_context *ctx = type->ctx;
    tmem__assert(type->committed >= bytes && ctx->committed >= bytes);
    type->committed -= bytes;
    if (!pool) {
        if (clean) type->charged_clean -= bytes;
        else type->charged_dirty -= bytes;
    }
    if (clean && !pool) ctx->committed_clean -= bytes;
    ctx->committed -= bytes;
    if (tmem__reclaim_active(ctx)) {
        atomic_fetch_add_explicit(&type->reclaimed, bytes, memory_order_relaxed);
        atomic_fetch_add_explicit(&ctx->reclaimed, bytes, memory_order_relaxed);
    }
    tmem__pressure_update_locked(ctx);
}

/* ---- reclaim ---- */

typedef struct fit_probe {
    tmem_type *type;
    tmem__need_fn need;
    void *arg;
} fit_probe;

static bool probe_fits(tmem_context *ctx, void *arg) {
    const fit_probe *fp = arg;
    tmem__context_lock(ctx);
    bool ok = fp->need ? fits_locked(ctx, fp->type, fp->need(fp->type, fp->arg)) : dirty_locked(ctx) <= ctx->budget;
    tmem__context_unlock(ctx);
    return ok;
}

/* Reclaim from the members' purge hooks (volatile heaps), lowest type
 * reclaim priority first. trylock: if the registry is busy (another thread
 * purging, or walking it for stats), skip rather than wait, so a committing
 * thread never blocks on a member. */
static int64_t member_priority(const tmem__member *m) {
    return m->ops->purge ? m->ops->type(m->object)->reclaim_priority : INT64_MAX;
}

static uint64_t purge_members(tmem_context *ctx, fit_probe *fp) {
    if (!tmem__os_mutex_trylock(&ctx->members_lock)) return 0;
    uint64_t got = 0;
    int64_t done = INT64_MIN; /* priorities <= done are purged */
    for (;;) {
        int64_t next = INT64_MAX;
        for (size_t i = 0; i < ctx->nmembers; i++) {
            int64_t pr = member_priority(&ctx->members[i]);
            if (pr > done && pr < next) next = pr;
        }
        if (next == INT64_MAX) break;
        for (size_t i = 0; i < ctx->nmembers; i++) {
            const tmem__member *m = &ctx->members[i];
            if (member_priority(m) == next) got += m->ops->purge(m->object);
        }
        done = next;
        if (got && probe_fits(ctx, fp)) break;
    }
    tmem__os_mutex_unlock(&ctx->members_lock);
    return got;
}

/* Next live step after (prio, seq) in run order; lock held. */
static tmem__reclaim_step *next_step(tmem_context *ctx, int64_t prio, int64_t seq) {
    for (uint32_t i = 0; i < ctx->nsteps; i++) {
        tmem__reclaim_step *s = &ctx->steps[i];
        if (s->removed) continue;
        if (s->priority > prio || (s->priority == prio && (int64_t)s->seq > seq)) return s;
    }
    return NULL;
}

static tmem__reclaim_step *step_by_seq(tmem_context *ctx, uint32_t seq) {
    for (uint32_t i = 0; i < ctx->nsteps; i++)
        if (ctx->steps[i].seq == seq) return &ctx->steps[i];
    return NULL;
}

static uint64_t run_steps(tmem_context *ctx, tmem_type *type, uint64_t needed, fit_probe *fp, reclaim_frame *frame) {
    uint64_t got = 0;
    bool purged = false;
    int64_t cur_prio = INT64_MIN, cur_seq = -1;
    for (;;) {
        tmem__context_lock(ctx);
        tmem__reclaim_step *s = next_step(ctx, cur_prio, cur_seq);
        if (!purged && (!s || s->priority >= 0)) {
            tmem__context_unlock(ctx);
            purged = true;
            uint64_t n = purge_members(ctx, fp);
            got += n;
            if (n && probe_fits(ctx, fp)) break;
            continue;
        }
        if (!s) {
            tmem__context_unlock(ctx);
            break;
        }
        s->running++;
        tmem_reclaim_fn fn = s->fn;
        void *user = s->user;
        cur_prio = s->priority;
        cur_seq = s->seq;
        frame->seq = s->seq;
        tmem__context_unlock(ctx);

        uint64_t n = fn(ctx, type, needed > got ? needed - got : 1, user);

        tmem__context_lock(ctx);
        frame->seq = UINT32_MAX;
        tmem__reclaim_step *back = step_by_seq(ctx, (uint32_t)cur_seq);
        /* Absent when the step removed itself from inside its own run
         * (tmem_context_remove_reclaim erases it then): a legal path. */
        if (back) {
            back->running--;
            if (back->removed) tmem__os_cond_broadcast(&ctx->reclaim_cond);
        }
        tmem__context_unlock(ctx);
        got += n;
        if (probe_fits(ctx, fp)) break;
    }
    return got;
}

static uint64_t reclaim(tmem_context *ctx, tmem_type *type, uint64_t needed, fit_probe *fp) {
    reclaim_frame frame = {ctx, UINT32_MAX, tls_frames};
    tls_frames = &frame;
    uint64_t got = run_steps(ctx, type, needed, fp, &frame);
    tls_frames = frame.prev;
    return got;
}

/* How far over, and whose budget: the type's when its own budget is
 * crossed (only its memory helps), else NULL (any type's memory helps). */
static uint64_t shortfall_locked(const tmem_context *ctx, tmem_type *type, uint64_t bytes, tmem_type **who) {
    uint64_t over = 0, sum;
    *who = NULL;
    if (type && type->budget) {
        sum = tmem__add_overflow(held(type->committed, type->reserved), bytes, &sum) ? UINT64_MAX : sum;
        if (sum > type->budget) {
            over = sum - type->budget;
            *who = type;
        }
    }
    sum = tmem__add_overflow(held(dirty_locked(ctx), ctx->reserved), bytes, &sum) ? UINT64_MAX : sum;
    if (sum > ctx->budget && sum - ctx->budget > over) over = sum - ctx->budget;
    return over;
}

tmem_status tmem__budget_admit(tmem_type *type, tmem__need_fn need, void *arg, uint64_t *out_bytes) {
    tmem_context *ctx = type->ctx;
    fit_probe fp = {type, need, arg};
    *out_bytes = 0;
    uint64_t prev_over = UINT64_MAX;
    tmem__context_lock(ctx);
    for (unsigned round = 0;; round++) {
        uint64_t bytes = need(type, arg);
        if (!bytes || fits_locked(ctx, type, bytes)) {
            *out_bytes = bytes;
            return TMEM_OK; /* lock held */
        }
        tmem_type *who;
        uint64_t over = shortfall_locked(ctx, type, bytes, &who);
        /* Reclaim needs the lock fully released: not from inside a step, not
         * when the caller holds the context lock itself. Another round only
         * when the last one got closer (another thread may have taken what
         * it freed). */
        bool can = round < 4 && over < prev_over && ctx->lock_depth == 1 && !tmem__reclaim_active(ctx);
        prev_over = over;
        if (!can) {
            ctx->denials++;
            type->denials++;
            tmem__context_unlock(ctx);
            tmem__trace(ctx, TMEM__TRACE_BUDGET_DENIED, type, -1, bytes, TMEM_OFFSET_NONE, NULL);
            return tmem__err(TMEM_E_BUDGET);
        }
        tmem__context_unlock(ctx);
        uint64_t got = reclaim(ctx, who, over, &fp);
        tmem__context_lock(ctx);
        if (!got) round = 4; /* nothing more to gain: deny unless it fits now */
    }
}

static uint64_t const_need(tmem_type *type, void *arg) {
    (void)type;
    return *(const uint64_t *)arg;
}

/* A clean charge (a read-only file mapping) counts against its type's own
 * budget only; nothing is reclaimed for it. */
static tmem_status admit_clean(tmem_type *type, uint64_t bytes) {
    tmem_context *ctx = type->ctx;
    tmem__context_lock(ctx);
    if (type->budget && !add_fits(held(type->committed, type->reserved), bytes, type->budget)) {
        ctx->denials++;
        type->denials++;
        tmem__context_unlock(ctx);
        tmem__trace(ctx, TMEM__TRACE_BUDGET_DENIED, type, -1, bytes, TMEM_OFFSET_NONE, NULL);
        return tmem__err(TMEM_E_BUDGET);
    }
    return TMEM_OK; /* lock held */
}

tmem_status tmem__type_charge(tmem_type *type, uint64_t bytes, bool clean) {
    if (!tmem__type_valid(type)) return tmem__err(TMEM_E_INVALID_ARG);
    if (!bytes) return TMEM_OK;
    uint64_t got;
    tmem_status st = clean ? admit_clean(type, bytes) : tmem__budget_admit(type, const_need, &bytes, &got);
    if (st != TMEM_OK) return st;
    tmem__budget_charge_locked(type, bytes, clean, false);
    tmem__context_unlock(type->ctx);
    tmem__pressure_notify(type->ctx);
    tmem__trace(type->ctx, TMEM__TRACE_COMMIT, type, -1, bytes, TMEM_OFFSET_NONE, clean ? "charge clean" : "charge");
    return TMEM_OK;
}

void tmem__type_uncharge(tmem_type *type, uint64_t bytes, bool clean) {
    if (!tmem__type_valid(type) || !bytes) return;
    tmem_context *ctx = type->ctx;
    tmem__context_lock(ctx);
    uint64_t have = clean ? type->charged_clean : type->charged_dirty;
    /* More than was charged: a caller bug the tests reach on purpose; clamp
     * (a plain check: TMEM_NEVER would assert in debug builds). */
    if (bytes > have) bytes = have;
    if (bytes) tmem__budget_uncharge_locked(type, bytes, clean, false);
    tmem__context_unlock(ctx);
    if (bytes) {
        tmem__pressure_notify(ctx);
        tmem__trace(ctx, TMEM__TRACE_DECOMMIT, type, -1, bytes, TMEM_OFFSET_NONE,
                    clean ? "uncharge clean" : "uncharge");
    }
}

/* ---- public budget calls ---- */

tmem_status tmem_context_budget(tmem_context *ctx, tmem_budget_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!tmem__context_valid(ctx) || !out) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    out->budget = ctx->budget;
    out->committed = ctx->committed;
    out->committed_clean = ctx->committed_clean;
    out->peak_committed = ctx->committed_peak;
    out->available = dirty_locked(ctx) < ctx->budget ? ctx->budget - dirty_locked(ctx) : 0;
    tmem__context_unlock(ctx);
    out->pressure = tmem__pressure_level(ctx);
    return TMEM_OK;
}

bool tmem__budget_has_room(tmem_type *type, uint64_t bytes) {
    tmem_context *ctx = type->ctx;
    if (tmem__pressure_level(ctx) != TMEM_PRESSURE_NORMAL) return false;
    tmem__context_lock(ctx);
    uint64_t dirty = dirty_locked(ctx);
    bool room = dirty < ctx->budget && ctx->budget - dirty >= bytes;
    if (room && type->budget)
        room = type->committed < type->budget && type->budget - type->committed >= bytes;
    tmem__context_unlock(ctx);
    return room;
}

tmem_status tmem_context_set_budget(tmem_context *ctx, uint64_t budget) {
    if (!tmem__context_valid(ctx) || !budget) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    ctx->budget = budget;
    tmem__pressure_update_locked(ctx);
    uint64_t over = dirty_locked(ctx) > budget ? dirty_locked(ctx) - budget : 0;
    bool can = ctx->lock_depth == 1 && !tmem__reclaim_active(ctx);
    tmem__context_unlock(ctx);
    tmem__pressure_notify(ctx);
    if (over && can) {
        fit_probe fp = {NULL, NULL, NULL};
        (void)reclaim(ctx, NULL, over, &fp);
        tmem__pressure_notify(ctx);
    }
    return TMEM_OK;
}

tmem_status tmem_context_add_reclaim(tmem_context *ctx, int32_t priority, tmem_reclaim_fn fn, void *user) {
    if (!tmem__context_valid(ctx) || !fn) return tmem__err(TMEM_E_INVALID_ARG);
    tmem_status st = TMEM_OK;
    tmem__context_lock(ctx);
    if (ctx->nsteps == TMEM__MAX_RECLAIM) {
        st = tmem__err(TMEM_E_FULL);
    } else {
        uint32_t i = ctx->nsteps;
        while (i > 0 && ctx->steps[i - 1].priority > priority) i--; /* stable: after equal priorities */
        memmove(&ctx->steps[i + 1], &ctx->steps[i], (ctx->nsteps - i) * sizeof ctx->steps[0]);
        ctx->steps[i] = (tmem__reclaim_step){priority, ctx->next_seq++, fn, user, 0, false};
        ctx->nsteps++;
    }
    tmem__context_unlock(ctx);
    return st;
}

tmem_status tmem_context_remove_reclaim(tmem_context *ctx, tmem_reclaim_fn fn, void *user) {
    if (!tmem__context_valid(ctx) || !fn) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    tmem__reclaim_step *s = NULL;
    for (uint32_t i = 0; i < ctx->nsteps; i++)
        if (!ctx->steps[i].removed && ctx->steps[i].fn == fn && ctx->steps[i].user == user) {
            s = &ctx->steps[i];
            break;
        }
    if (!s) {
        tmem__context_unlock(ctx);
        return tmem__err(TMEM_E_NOT_FOUND);
    }
    s->removed = true; /* no new runs from now on */
    uint32_t seq = s->seq, own = own_runs(ctx, seq);
    /* Wait for runs on other threads; a wait needs the lock held exactly once. */
    if (ctx->lock_depth == 1) {
        while ((s = step_by_seq(ctx, seq)) && s->running > own) {
            ctx->lock_depth = 0;
            tmem__os_cond_wait(&ctx->reclaim_cond, &ctx->lock);
            ctx->lock_depth = 1;
        }
    }
    /* Erase only when nobody (but our own frames, which look it up by seq and
     * tolerate its absence) is inside it. */
    s = step_by_seq(ctx, seq);
    if (s) {
        uint32_t i = (uint32_t)(s - ctx->steps);
        memmove(&ctx->steps[i], &ctx->steps[i + 1], (ctx->nsteps - i - 1) * sizeof ctx->steps[0]);
        ctx->nsteps--;
    }
    tmem__context_unlock(ctx);
    return TMEM_OK;
}

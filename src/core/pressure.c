/*
 * Pressure levels: NORMAL below warning_fraction of the context budget,
 * WARNING from there, CRITICAL from critical_fraction. The OS's own signals
 * (PSI, cgroup memory.events), read by tmem_context_poll_os_pressure, and a
 * GPU driver's budget (tmem_gpu_poll_pressure) can raise the level; the
 * effective level is the highest of the three.
 *
 * The callback runs on the thread whose call changed the level, with no lock
 * held. Calls are serialised by a flag rather than a lock: a thread that finds
 * another one notifying leaves the work to it, and the notifier loops until
 * the level it last reported is the current one. So the callback never runs
 * twice at once, never reports a stale level last, and a callback that
 * commits memory (changing the level again) does not deadlock.
 */
#include "core/core.h"
#include "os/os.h"

const char *const tmem__pressure_names[3] = {"normal", "warning", "critical"};

void tmem__pressure_update_locked(tmem_context *ctx) {
    int lvl = TMEM_PRESSURE_NORMAL;
    if (ctx->budget && ctx->budget != UINT64_MAX) {
        double b = (double)ctx->budget, c = (double)ctx->committed;
        if (c >= b * ctx->critical_fraction) lvl = TMEM_PRESSURE_CRITICAL;
        else if (c >= b * ctx->warning_fraction) lvl = TMEM_PRESSURE_WARNING;
    }
    atomic_store_explicit(&ctx->level_budget, lvl, memory_order_relaxed);
}

tmem_pressure tmem__pressure_level(const tmem_context *ctx) {
    int a = atomic_load_explicit(&((tmem_context *)ctx)->level_budget, memory_order_relaxed);
    int b = atomic_load_explicit(&((tmem_context *)ctx)->level_os, memory_order_relaxed);
    int d = atomic_load_explicit(&((tmem_context *)ctx)->level_device, memory_order_relaxed);
    int m = a > b ? a : b;
    return (tmem_pressure)(m > d ? m : d);
}

void tmem__pressure_notify(tmem_context *ctx) {
    for (;;) {
        /* Fast path: nothing changed since the last report. last_notified is
         * only written by the thread holding `notifying`; the acquire on the
         * flag makes a stale read here merely a wasted loop. */
        if (atomic_exchange_explicit(&ctx->notifying, 1, memory_order_acquire)) return;
        int lvl = (int)tmem__pressure_level(ctx);
        if (lvl == ctx->last_notified) {
            atomic_store_explicit(&ctx->notifying, 0, memory_order_release);
            /* A change that raced with the release would have been dropped by
             * its thread (flag was set): look once more. */
            if ((int)tmem__pressure_level(ctx) == lvl) return;
            continue;
        }
        ctx->last_notified = lvl;
        tmem__context_lock(ctx);
        tmem_pressure_fn fn = ctx->pressure_fn;
        void *user = ctx->pressure_user;
        tmem__context_unlock(ctx);
        tmem__trace(ctx, TMEM__TRACE_PRESSURE, NULL, -1, 0, (uint64_t)lvl, tmem__pressure_names[lvl]);
        if (fn) fn(ctx, (tmem_pressure)lvl, user);
        atomic_store_explicit(&ctx->notifying, 0, memory_order_release);
    }
}

void tmem__pressure_set_device(tmem_context *ctx, tmem_pressure level) {
    atomic_store_explicit(&ctx->level_device, (int)level, memory_order_relaxed);
    tmem__pressure_notify(ctx);
}

void tmem__pressure_fractions(tmem_context *ctx, float *warning, float *critical) {
    tmem__context_lock(ctx);
    *warning = ctx->warning_fraction;
    *critical = ctx->critical_fraction;
    tmem__context_unlock(ctx);
}

tmem_status tmem_context_set_pressure_callback(tmem_context *ctx, tmem_pressure_fn fn, void *user) {
    if (!tmem__context_valid(ctx)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__context_lock(ctx);
    ctx->pressure_fn = fn;
    ctx->pressure_user = user;
    tmem__context_unlock(ctx);
    return TMEM_OK;
}

tmem_status tmem_context_poll_os_pressure(tmem_context *ctx, tmem_pressure *level) {
    if (level) *level = TMEM_PRESSURE_NORMAL;
    if (!tmem__context_valid(ctx)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__os_pressure_info pi;
    tmem_status st = tmem__os_pressure(&pi);
    if (st != TMEM_OK) {
        if (level) *level = tmem__pressure_level(ctx);
        return st;
    }
    int lvl = TMEM_PRESSURE_NORMAL;
    if (pi.has_psi) {
        if (pi.psi_some_avg10_x100 >= 4000) lvl = TMEM_PRESSURE_CRITICAL;
        else if (pi.psi_some_avg10_x100 >= 1000) lvl = TMEM_PRESSURE_WARNING;
    }
    tmem__context_lock(ctx);
    if (pi.has_events) {
        /* The first poll only learns the baseline: old events are history. */
        if (ctx->events_seen && pi.events_high > ctx->last_events_high) lvl = TMEM_PRESSURE_CRITICAL;
        ctx->last_events_high = pi.events_high;
        ctx->events_seen = true;
    }
    atomic_store_explicit(&ctx->level_os, lvl, memory_order_relaxed);
    tmem__context_unlock(ctx);
    tmem__pressure_notify(ctx);
    if (level) *level = tmem__pressure_level(ctx);
    return TMEM_OK;
}

/*
 * Stats as JSON (docs/stats.schema.json, documented in docs/stats.md) and as a
 * human table. Both walk the same counters; neither allocates.
 */
#include <stdio.h>
#include <string.h>
#include "core/core.h"
#include "backend/backend.h"

#define TMEM__STATS_VERSION 1

static const char *const heap_kind_names[] = {"general", "linear", "placement"};
static const char *const purgeable_names[] = {"keep_current", "non_volatile", "volatile", "empty"};
static const char *const flag_names[] = {"populate", "locked", "huge_pages", "contiguous", "host_cached"};

static void json_stat(tmem__tb *sb, const char *key, tmem_stat s) {
    tmem__tb_printf(sb, "\"%s\":{\"current\":%llu,\"peak\":%llu,\"total\":%llu}", key, (unsigned long long)s.current,
                    (unsigned long long)s.peak, (unsigned long long)s.total);
}

/* A limit: null when there is none. */
static void json_limit(tmem__tb *sb, const char *key, uint64_t v, uint64_t none) {
    if (v == none) tmem__tb_printf(sb, "\"%s\":null", key);
    else tmem__tb_printf(sb, "\"%s\":%llu", key, (unsigned long long)v);
}

static void json_context(tmem__tb *sb, tmem_context *ctx) {
    tmem__context_lock(ctx);
    uint64_t budget = ctx->budget, cur = ctx->committed, peak = ctx->committed_peak, total = ctx->committed_total;
    uint64_t counted = ctx->committed - ctx->committed_clean; /* what the budget counts */
    uint64_t denials = ctx->denials;
    float wf = ctx->warning_fraction, cf = ctx->critical_fraction;
    tmem__context_unlock(ctx);
    uint64_t dirty = 0, clean = 0;
    TMEM__IGNORE(tmem_context_accounted(ctx, &dirty, &clean));
    tmem__tb_printf(sb, "\"context\":{");
    json_limit(sb, "budget", budget, UINT64_MAX);
    tmem__tb_printf(sb, ",");
    json_stat(sb, "committed", (tmem_stat){cur, peak, total});
    tmem__tb_printf(sb, ",\"available\":%llu,\"pressure\":\"%s\",\"warning_fraction\":%.4g,\"critical_fraction\":%.4g",
                    (unsigned long long)(counted < budget ? budget - counted : 0), tmem__pressure_names[tmem__pressure_level(ctx)], (double)wf, (double)cf);
    tmem__tb_printf(sb, ",\"budget_denials\":%llu,\"reclaimed\":%llu,\"dirty\":%llu,\"clean\":%llu}", (unsigned long long)denials,
                    (unsigned long long)atomic_load_explicit(&ctx->reclaimed, memory_order_relaxed), (unsigned long long)dirty,
                    (unsigned long long)clean);
}

/* Device types: the memory type and heap their backend drew from, with the
 * driver's budget (docs/backend.md). Host types have no "device" key. */
static void json_device(tmem__tb *sb, const tmem_type *t) {
    const tmem__pool *p = &t->pool;
    tmem_device_memory_info mi;
    memset(&mi, 0, sizeof mi);
    if (!p->backend || !p->backend->memory_info || p->backend->memory_info(p->backend, &p->region, &mi) != TMEM_OK) return;
    tmem__tb_printf(sb, ",\"device\":{\"backend\":");
    tmem__tb_json_string(sb, mi.backend);
    tmem__tb_printf(sb, ",\"name\":");
    tmem__tb_json_string(sb, mi.device);
    tmem__tb_printf(sb, ",\"memory_type\":%u,\"property_flags\":%u,\"heap\":%u,\"heap_size\":%llu,\"heap_budget\":%llu,"
                        "\"heap_usage\":%llu,\"backend_bytes\":%llu,\"budget_from_driver\":%s}",
                    mi.memory_type, mi.property_flags, mi.heap_index, (unsigned long long)mi.heap_size,
                    (unsigned long long)mi.budget, (unsigned long long)mi.usage, (unsigned long long)mi.backend_bytes,
                    mi.budget_from_driver ? "true" : "false");
}

static void json_type(tmem__tb *sb, const tmem_type *t) {
    tmem_type_stats s;
    tmem__type_stats_read(t, &s);
    tmem__context_lock(t->ctx);
    uint64_t budget = t->budget;
    tmem__context_unlock(t->ctx);
    tmem__tb_printf(sb, "{\"index\":%u,\"name\":", t->index);
    tmem__tb_json_string(sb, t->name);
    tmem__tb_printf(sb, ",\"placement\":\"%s\",\"lifetime\":\"%s\",\"flags\":[", tmem__placement_names[t->placement], tmem__lifetime_names[t->lifetime]);
    bool first = true;
    for (unsigned b = 0; b < 5; b++)
        if (t->flags & (1u << b)) {
            tmem__tb_printf(sb, "%s\"%s\"", first ? "" : ",", flag_names[b]);
            first = false;
        }
    tmem__tb_printf(sb, "],\"reclaim_priority\":%d,\"granule\":%llu,", t->reclaim_priority, (unsigned long long)t->pool.region.granule);
    json_limit(sb, "budget", budget, 0);
    tmem__tb_printf(sb, ",\"reserved\":%llu,", (unsigned long long)s.reserved);
    json_stat(sb, "committed", s.committed);
    tmem__tb_printf(sb, ",");
    json_stat(sb, "in_use", s.in_use);
    tmem__tb_printf(sb, ",\"alloc_count\":%llu,\"free_count\":%llu,\"live_count\":%llu,\"dirty\":%llu,\"clean\":%llu,\"budget_denials\":%llu,\"reclaimed\":%llu",
                    (unsigned long long)s.alloc_count, (unsigned long long)s.free_count, (unsigned long long)s.live_count,
                    (unsigned long long)s.dirty, (unsigned long long)s.clean, (unsigned long long)s.budget_denials,
                    (unsigned long long)s.reclaimed);
    json_device(sb, t);
    tmem__tb_printf(sb, "}");
}

static void json_role(tmem__tb *sb, tmem_context *ctx, tmem_role r, const char *name, bool *first) {
    tmem_role_stats s;
    TMEM__IGNORE(tmem_role_get_stats(ctx, r, &s));
    tmem_type *t = NULL;
    TMEM__IGNORE(tmem_role_get_type(ctx, r, &t));
    tmem__tb_printf(sb, "%s{\"role\":%d,\"name\":", *first ? "" : ",", (int)r);
    *first = false;
    tmem__tb_json_string(sb, name);
    tmem__tb_printf(sb, ",\"type\":");
    if (t) tmem__tb_json_string(sb, t->name);
    else tmem__tb_printf(sb, "null");
    tmem__tb_printf(sb, ",");
    json_stat(sb, "in_use", s.in_use);
    tmem__tb_printf(sb, ",\"alloc_count\":%llu,\"live_count\":%llu,", (unsigned long long)s.alloc_count,
                    (unsigned long long)s.live_count);
    json_stat(sb, "device_in_use", s.device_in_use);
    tmem__tb_printf(sb, ",\"device_live_count\":%llu}", (unsigned long long)s.device_live_count);
}

static void json_heaps(tmem__tb *sb, tmem_context *ctx) {
    tmem__tb_printf(sb, "\"heaps\":[");
    pthread_mutex_lock(&ctx->heaps_lock);
    bool first = true;
    for (size_t i = 0; i < ctx->nheaps; i++) {
        tmem_heap_info hi;
        if (tmem_heap_get_info(ctx->heaps[i], &hi) != TMEM_OK) continue;
        const tmem_type *t = tmem__heap_type(ctx->heaps[i]);
        tmem__tb_printf(sb, "%s{\"type\":", first ? "" : ",");
        first = false;
        tmem__tb_json_string(sb, t ? t->name : "");
        tmem__tb_printf(sb, ",\"kind\":\"%s\",\"size\":%llu,\"used\":%llu,\"committed\":%llu,\"peak_used\":%llu,\"largest_free\":%llu,\"live_count\":%llu,\"purgeable\":\"%s\"}",
                        (unsigned)hi.kind < 3 ? heap_kind_names[hi.kind] : "unknown", (unsigned long long)hi.size,
                        (unsigned long long)hi.used, (unsigned long long)hi.committed, (unsigned long long)hi.peak_used,
                        (unsigned long long)hi.largest_free, (unsigned long long)hi.live_count,
                        (unsigned)hi.purgeable < 4 ? purgeable_names[hi.purgeable] : "unknown");
    }
    pthread_mutex_unlock(&ctx->heaps_lock);
    tmem__tb_printf(sb, "]");
}

tmem_status tmem_stats_json(tmem_context *ctx, char *buf, size_t cap, size_t *needed) {
    if (needed) *needed = 0;
    if (!tmem__context_valid(ctx) || (!buf && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__tb sb = {buf, cap, 0};
    tmem__tb_printf(&sb, "{\"schema\":\"typedmem-stats\",\"version\":%d,\"library\":\"%d.%d.%d\",", TMEM__STATS_VERSION,
                    TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH);
    json_context(&sb, ctx);
    tmem__tb_printf(&sb, ",\"types\":[");
    uint32_t n = tmem_type_count(ctx);
    for (uint32_t i = 0; i < n; i++) {
        tmem_type *t;
        if (tmem_type_at(ctx, i, &t) != TMEM_OK) break;
        if (i) tmem__tb_printf(&sb, ",");
        json_type(&sb, t);
    }
    tmem__tb_printf(&sb, "],\"roles\":[");
    bool first = true;
    for (unsigned r = 0; r < TMEM_ROLE_MAX; r++) {
        const char *name = tmem_role_name(ctx, (tmem_role)r);
        if (name) json_role(&sb, ctx, (tmem_role)r, name, &first);
    }
    tmem__tb_printf(&sb, "],");
    json_heaps(&sb, ctx);
    tmem__tb_printf(&sb, "}\n");
    return tmem__tb_finish(&sb, needed);
}

/* ---- the human table ---- */

/* Bytes in a short human unit: "0", "12.0K", "3.50M", "1.25G". */
static void human(char *out, size_t cap, uint64_t v) {
    static const char units[] = "KMGTP";
    if (v < 1024) {
        snprintf(out, cap, "%llu", (unsigned long long)v);
        return;
    }
    double d = (double)v;
    int u = -1;
    while (d >= 1024.0 && u < 4) {
        d /= 1024.0;
        u++;
    }
    snprintf(out, cap, d < 10 ? "%.2f%c" : d < 100 ? "%.1f%c" : "%.0f%c", d, units[u]);
}

tmem_status tmem_stats_table(tmem_context *ctx, char *buf, size_t cap, size_t *needed) {
    if (needed) *needed = 0;
    if (!tmem__context_valid(ctx) || (!buf && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__tb sb = {buf, cap, 0};
    char a[16], b[16], c[16], d[16], e[16], f[16];
    tmem_budget_info bi;
    TMEM__IGNORE(tmem_context_budget(ctx, &bi));
    if (bi.budget == UINT64_MAX) snprintf(a, sizeof a, "none");
    else human(a, sizeof a, bi.budget);
    human(b, sizeof b, bi.committed);
    human(c, sizeof c, bi.peak_committed);
    tmem__tb_printf(&sb, "budget %s  committed %s  peak %s  pressure %s\n\n", a, b, c, tmem__pressure_names[bi.pressure]);
    tmem__tb_printf(&sb, "%-22s %-11s %-10s %8s %8s %8s %8s %8s %8s %6s %5s\n", "type", "placement", "lifetime", "budget", "reserved",
                    "commit", "peak", "in use", "clean", "live", "deny");
    uint32_t n = tmem_type_count(ctx);
    for (uint32_t i = 0; i < n; i++) {
        tmem_type *t;
        tmem_type_info ti;
        tmem_type_stats s;
        if (tmem_type_at(ctx, i, &t) != TMEM_OK || tmem_type_get_info(t, &ti) != TMEM_OK) break;
        tmem__type_stats_read(t, &s);
        if (ti.budget) human(a, sizeof a, ti.budget);
        else snprintf(a, sizeof a, "-");
        human(b, sizeof b, s.reserved);
        human(c, sizeof c, s.committed.current);
        human(d, sizeof d, s.committed.peak);
        human(e, sizeof e, s.in_use.current);
        human(f, sizeof f, s.clean);
        tmem__tb_printf(&sb, "%-22.22s %-11s %-10s %8s %8s %8s %8s %8s %8s %6llu %5llu\n", ti.name, tmem__placement_names[ti.placement],
                        tmem__lifetime_names[ti.lifetime], a, b, c, d, e, f, (unsigned long long)s.live_count,
                        (unsigned long long)s.budget_denials);
    }
    tmem__tb_printf(&sb, "\n%-22s %-22s %8s %8s %8s %8s %8s\n", "role", "type", "in use", "peak", "device", "allocs",
                    "live");
    for (unsigned r = 0; r < TMEM_ROLE_MAX; r++) {
        const char *name = tmem_role_name(ctx, (tmem_role)r);
        if (!name) continue;
        tmem_role_stats s;
        tmem_type *t = NULL;
        TMEM__IGNORE(tmem_role_get_stats(ctx, (tmem_role)r, &s));
        TMEM__IGNORE(tmem_role_get_type(ctx, (tmem_role)r, &t));
        human(a, sizeof a, s.in_use.current);
        human(b, sizeof b, s.in_use.peak);
        human(c, sizeof c, s.device_in_use.current); /* the part in device types */
        tmem__tb_printf(&sb, "%-22.22s %-22.22s %8s %8s %8s %8llu %8llu\n", name, t ? t->name : "-", a, b, c,
                        (unsigned long long)s.alloc_count, (unsigned long long)s.live_count);
    }
    return tmem__tb_finish(&sb, needed);
}

/*
 * Stats as JSON (docs/stats.schema.json, documented in docs/stats.md). A
 * layer above core, heap and the device spans: it reads the context's
 * counters, each type, role and heap through their own functions, and never
 * allocates (one pass fills the caller's buffer and sizes it).
 */
#include <string.h>
#include "stats/stats_internal.h"
#include "typedmem/device.h"

#define TMEM__STATS_VERSION 1

static const char *const heap_kind_names[] = {"general", "linear", "placement", "block"};
static const char *const purgeable_names[] = {"keep_current", "non_volatile", "volatile", "empty"};
static const char *const flag_names[] = {"populate", "locked", "huge_pages", "contiguous",
                                         "host_cached"};

static unsigned long long ull(uint64_t v) { return (unsigned long long)v; }

static void json_stat(tmem__text *t, const char *key, tmem_stat s) {
    tmem__text_printf(t, "\"%s\":{\"current\":%llu,\"peak\":%llu,\"total\":%llu}", key,
                      ull(s.current), ull(s.peak), ull(s.total));
}

/* A limit: null when there is none. */
static void json_limit(tmem__text *t, const char *key, uint64_t v, uint64_t none) {
    if (v == none) tmem__text_printf(t, "\"%s\":null", key);
    else tmem__text_printf(t, "\"%s\":%llu", key, ull(v));
}

static void json_context(tmem__text *t, tmem_context *ctx) {
    tmem__context_counters c;
    tmem__context_counters_read(ctx, &c);
    uint64_t counted = c.committed - c.committed_clean; /* what the budget counts */
    uint64_t dirty = 0, clean = 0;
    TMEM__IGNORE(tmem_context_accounted(ctx, &dirty, &clean));
    tmem__text_printf(t, "\"context\":{");
    json_limit(t, "budget", c.budget, UINT64_MAX);
    tmem__text_printf(t, ",");
    json_stat(t, "committed", (tmem_stat){c.committed, c.committed_peak, c.committed_total});
    tmem__text_printf(t, ",\"available\":%llu,\"pressure\":\"%s\"",
                      ull(counted < c.budget ? c.budget - counted : 0),
                      tmem__pressure_names[c.pressure]);
    tmem__text_printf(t, ",\"warning_fraction\":%.4g,\"critical_fraction\":%.4g",
                      (double)c.warning_fraction, (double)c.critical_fraction);
    tmem__text_printf(t, ",\"budget_denials\":%llu,\"reclaimed\":%llu", ull(c.denials),
                      ull(c.reclaimed));
    tmem__text_printf(t, ",\"dirty\":%llu,\"clean\":%llu}", ull(dirty), ull(clean));
}

/* Device types: the memory type and heap their backend drew from, with the
 * driver's budget (docs/backend.md). Host types have no "device" key. */
static void json_device(tmem__text *t, const tmem_type *type) {
    tmem_device_memory_info mi;
    if (tmem_type_device_info(type, &mi) != TMEM_OK) return;
    tmem__text_printf(t, ",\"device\":{\"backend\":");
    tmem__text_json_string(t, mi.backend);
    tmem__text_printf(t, ",\"name\":");
    tmem__text_json_string(t, mi.device);
    tmem__text_printf(t, ",\"memory_type\":%u,\"property_flags\":%u,\"heap\":%u",
                      mi.memory_type, mi.property_flags, mi.heap_index);
    tmem__text_printf(t, ",\"heap_size\":%llu,\"heap_budget\":%llu,\"heap_usage\":%llu",
                      ull(mi.heap_size), ull(mi.budget), ull(mi.usage));
    tmem__text_printf(t, ",\"backend_bytes\":%llu,\"budget_from_driver\":%s}",
                      ull(mi.backend_bytes), mi.budget_from_driver ? "true" : "false");
}

static void json_type(tmem__text *t, const tmem_type *type) {
    tmem_type_info ti;
    tmem_type_stats s;
    if (tmem_type_get_info(type, &ti) != TMEM_OK || tmem_type_get_stats(type, &s) != TMEM_OK)
        return;
    tmem__text_printf(t, "{\"index\":%u,\"name\":", ti.index);
    tmem__text_json_string(t, ti.name);
    tmem__text_printf(t, ",\"placement\":\"%s\",\"lifetime\":\"%s\",\"flags\":[",
                      tmem_placement_name(ti.placement), tmem_lifetime_name(ti.lifetime));
    bool first = true;
    for (unsigned b = 0; b < sizeof flag_names / sizeof *flag_names; b++)
        if (ti.flags & (1u << b)) {
            tmem__text_printf(t, "%s\"%s\"", first ? "" : ",", flag_names[b]);
            first = false;
        }
    tmem__text_printf(t, "],\"reclaim_priority\":%d,\"granule\":%llu,", ti.reclaim_priority,
                      ull(tmem__pool_granule(type)));
    json_limit(t, "budget", ti.budget, 0);
    tmem__text_printf(t, ",\"reserved\":%llu,", ull(s.reserved));
    json_stat(t, "committed", s.committed);
    tmem__text_printf(t, ",");
    json_stat(t, "in_use", s.in_use);
    tmem__text_printf(t, ",\"alloc_count\":%llu,\"free_count\":%llu,\"live_count\":%llu",
                      ull(s.alloc_count), ull(s.free_count), ull(s.live_count));
    tmem__text_printf(t, ",\"dirty\":%llu,\"clean\":%llu,\"budget_denials\":%llu", ull(s.dirty),
                      ull(s.clean), ull(s.budget_denials));
    tmem__text_printf(t, ",\"reclaimed\":%llu", ull(s.reclaimed));
    json_device(t, type);
    tmem__text_printf(t, "}");
}

static void json_role(tmem__text *t, tmem_context *ctx, tmem_role r, const char *name,
                      bool *first) {
    tmem_role_stats s;
    TMEM__IGNORE(tmem_role_get_stats(ctx, r, &s));
    tmem_type *type = NULL;
    tmem_type_info ti;
    TMEM__IGNORE(tmem_role_get_type(ctx, r, &type));
    tmem__text_printf(t, "%s{\"role\":%d,\"name\":", *first ? "" : ",", (int)r);
    *first = false;
    tmem__text_json_string(t, name);
    tmem__text_printf(t, ",\"type\":");
    if (type && tmem_type_get_info(type, &ti) == TMEM_OK) tmem__text_json_string(t, ti.name);
    else tmem__text_printf(t, "null");
    tmem__text_printf(t, ",");
    json_stat(t, "in_use", s.in_use);
    tmem__text_printf(t, ",\"alloc_count\":%llu,\"live_count\":%llu}", ull(s.alloc_count),
                      ull(s.live_count));
}

typedef struct heap_walk {
    tmem__text *t;
    bool first;
} heap_walk;

static void json_heap(void *object, void *arg) {
    heap_walk *w = arg;
    tmem__text *t = w->t;
    tmem_heap *heap = object;
    tmem_heap_info hi;
    if (tmem_heap_get_info(heap, &hi) != TMEM_OK) return;
    const tmem_type *type = tmem__heap_type(heap);
    tmem_type_info ti;
    if (!type || tmem_type_get_info(type, &ti) != TMEM_OK) ti.name[0] = '\0';
    tmem__text_printf(t, "%s{\"type\":", w->first ? "" : ",");
    w->first = false;
    tmem__text_json_string(t, ti.name);
    const char *kind = (unsigned)hi.kind < 4 ? heap_kind_names[hi.kind] : "unknown";
    tmem__text_printf(t, ",\"kind\":\"%s\",\"size\":%llu,\"used\":%llu,\"committed\":%llu", kind,
                      ull(hi.size), ull(hi.used), ull(hi.committed));
    tmem__text_printf(t, ",\"peak_used\":%llu,\"largest_free\":%llu,\"live_count\":%llu",
                      ull(hi.peak_used), ull(hi.largest_free), ull(hi.live_count));
    const char *purge = (unsigned)hi.purgeable < 4 ? purgeable_names[hi.purgeable] : "unknown";
    tmem__text_printf(t, ",\"purgeable\":\"%s\"}", purge);
}

tmem_status tmem_stats_json(tmem_context *ctx, char *buf, size_t cap, size_t *needed) {
    if (needed) *needed = 0;
    if (!tmem__context_valid(ctx) || (!buf && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__text t;
    tmem__text_init_fixed(&t, buf, cap);
    tmem__text_printf(&t, "{\"schema\":\"typedmem-stats\",\"version\":%d,\"library\":\"%d.%d.%d\",",
                      TMEM__STATS_VERSION, TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR,
                      TMEM_VERSION_PATCH);
    json_context(&t, ctx);
    tmem__text_printf(&t, ",\"types\":[");
    uint32_t n = tmem_type_count(ctx);
    for (uint32_t i = 0; i < n; i++) {
        tmem_type *type;
        if (tmem_type_at(ctx, i, &type) != TMEM_OK) break;
        if (i) tmem__text_printf(&t, ",");
        json_type(&t, type);
    }
    tmem__text_printf(&t, "],\"roles\":[");
    bool first = true;
    for (unsigned r = 0; r < TMEM_ROLE_MAX; r++) {
        const char *name = tmem_role_name(ctx, (tmem_role)r);
        if (name) json_role(&t, ctx, (tmem_role)r, name, &first);
    }
    tmem__text_printf(&t, "],\"heaps\":[");
    heap_walk w = {&t, true};
    tmem__context_each_member(ctx, &tmem__heap_member_ops, json_heap, &w);
    tmem__text_printf(&t, "]}\n");
    return tmem__text_finish(&t, needed);
}

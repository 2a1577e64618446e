/* Stats as a human table: one row per type, then one per role. Same buffer
 * contract as the JSON (stats_json.c); never allocates. */
#include <stdio.h>
#include "stats/stats_internal.h"

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

static void type_rows(tmem__text *t, tmem_context *ctx) {
    char a[16], b[16], c[16], d[16], e[16], f[16];
    tmem__text_printf(t, "%-22s %-11s %-10s %8s %8s %8s %8s %8s %8s %6s %5s\n", "type",
                      "placement", "lifetime", "budget", "reserved", "commit", "peak", "in use",
                      "clean", "live", "deny");
    uint32_t n = tmem_type_count(ctx);
    for (uint32_t i = 0; i < n; i++) {
        tmem_type *type;
        tmem_type_info ti;
        tmem_type_stats s;
        if (tmem_type_at(ctx, i, &type) != TMEM_OK) break;
        if (tmem_type_get_info(type, &ti) != TMEM_OK) break;
        if (tmem_type_get_stats(type, &s) != TMEM_OK) break;
        if (ti.budget) human(a, sizeof a, ti.budget);
        else snprintf(a, sizeof a, "-");
        human(b, sizeof b, s.reserved);
        human(c, sizeof c, s.committed.current);
        human(d, sizeof d, s.committed.peak);
        human(e, sizeof e, s.in_use.current);
        human(f, sizeof f, s.clean);
        tmem__text_printf(t, "%-22.22s %-11s %-10s %8s %8s %8s %8s %8s %8s %6llu %5llu\n",
                          ti.name, tmem_placement_name(ti.placement),
                          tmem_lifetime_name(ti.lifetime), a, b, c, d, e, f,
                          (unsigned long long)s.live_count, (unsigned long long)s.budget_denials);
    }
}

static void role_rows(tmem__text *t, tmem_context *ctx) {
    char a[16], b[16];
    tmem__text_printf(t, "\n%-22s %-22s %8s %8s %8s %8s\n", "role", "type", "in use", "peak",
                      "allocs", "live");
    for (unsigned r = 0; r < TMEM_ROLE_MAX; r++) {
        const char *name = tmem_role_name(ctx, (tmem_role)r);
        if (!name) continue;
        tmem_role_stats s;
        tmem_type *type = NULL;
        tmem_type_info ti;
        TMEM__IGNORE(tmem_role_get_stats(ctx, (tmem_role)r, &s));
        TMEM__IGNORE(tmem_role_get_type(ctx, (tmem_role)r, &type));
        const char *type_name = type && tmem_type_get_info(type, &ti) == TMEM_OK ? ti.name : "-";
        human(a, sizeof a, s.in_use.current);
        human(b, sizeof b, s.in_use.peak);
        tmem__text_printf(t, "%-22.22s %-22.22s %8s %8s %8llu %8llu\n", name, type_name, a, b,
                          (unsigned long long)s.alloc_count, (unsigned long long)s.live_count);
    }
}

tmem_status tmem_stats_table(tmem_context *ctx, char *buf, size_t cap, size_t *needed) {
    if (needed) *needed = 0;
    if (!tmem__context_valid(ctx) || (!buf && cap)) return tmem__err(TMEM_E_INVALID_ARG);
    tmem__text t;
    tmem__text_init_fixed(&t, buf, cap);
    char a[16], b[16], c[16];
    tmem_budget_info bi;
    TMEM__IGNORE(tmem_context_budget(ctx, &bi));
    if (bi.budget == UINT64_MAX) snprintf(a, sizeof a, "none");
    else human(a, sizeof a, bi.budget);
    human(b, sizeof b, bi.committed);
    human(c, sizeof c, bi.peak_committed);
    tmem__text_printf(&t, "budget %s  committed %s  peak %s  pressure %s\n\n", a, b, c,
                      tmem__pressure_names[bi.pressure]);
    type_rows(&t, ctx);
    role_rows(&t, ctx);
    return tmem__text_finish(&t, needed);
}

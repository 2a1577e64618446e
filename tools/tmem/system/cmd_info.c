/* tmem info [--json]: what typedmem finds on this machine -- limits, OS
 * features -- and the memory types a default context creates. */
#include "system/info_gpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "commands.h"
#include "typedmem/typedmem.h"


static void human(char *out, size_t cap, uint64_t v) {
    if (v == 0) snprintf(out, cap, "-");
    else if (v >= (1ull << 30)) snprintf(out, cap, "%.2f GiB", (double)v / (double)(1ull << 30));
    else if (v >= (1ull << 20)) snprintf(out, cap, "%.1f MiB", (double)v / (double)(1ull << 20));
    else if (v >= 1024) snprintf(out, cap, "%.1f KiB", (double)v / 1024.0);
    else snprintf(out, cap, "%llu B", (unsigned long long)v);
}

static const char *yn(bool b) { return b ? "yes" : "no"; }

/* The roles the policy maps to t: JSON strings ("a","b") or a plain list
 * (a, b). Role names from a config are [a-z0-9_], safe to quote as is. */
static void print_roles(tmem_context *ctx, const tmem_type *t, bool json) {
    bool first = true;
    for (int r = 0; r < TMEM_ROLE_MAX; r++) {
        tmem_type *rt;
        if (tmem_role_get_type(ctx, (tmem_role)r, &rt) != TMEM_OK || rt != t) continue;
        const char *name = tmem_role_name(ctx, (tmem_role)r);
        printf(json ? "%s\"%s\"" : "%s%s", first ? "" : json ? "," : ", ", name);
        first = false;
    }
}

static void print_json(tmem_context *ctx, const tmem_system_limits *lim, bool have_lim, const tmem_system_info *si) {
    printf("{\"version\":\"%d.%d.%d\",", TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH);
    if (have_lim)
        printf("\"limits\":{\"cgroup_max\":%llu,\"cgroup_high\":%llu,\"cgroup_current\":%llu,"
               "\"mem_total\":%llu,\"mem_available\":%llu,\"effective\":%llu},",
               (unsigned long long)lim->cgroup_max, (unsigned long long)lim->cgroup_high,
               (unsigned long long)lim->cgroup_current, (unsigned long long)lim->mem_total,
               (unsigned long long)lim->mem_available, (unsigned long long)lim->effective);
    else
        printf("\"limits\":null,");
    printf("\"system\":{\"page_size\":%llu,\"huge_page_size\":%llu,\"huge_pages_free\":%llu,"
           "\"memfd\":%s,\"memfd_seals\":%s,\"seal_future_write\":%s,\"thp\":%s,"
           "\"madv_free\":%s,\"madv_cold\":%s,\"madv_pageout\":%s,\"psi\":%s,\"cgroup_v2\":%s},",
           (unsigned long long)si->page_size, (unsigned long long)si->huge_page_size,
           (unsigned long long)si->huge_pages_free, si->memfd ? "true" : "false",
           si->memfd_seals ? "true" : "false", si->seal_future_write ? "true" : "false",
           si->thp ? "true" : "false", si->madv_free ? "true" : "false",
           si->madv_cold ? "true" : "false", si->madv_pageout ? "true" : "false",
           si->psi ? "true" : "false", si->cgroup_v2 ? "true" : "false");
    tmem_budget_info bi;
    printf("\"budget\":%llu,\"config\":",
           tmem_context_budget(ctx, &bi) == TMEM_OK ? (unsigned long long)bi.budget : 0ull);
    const char *cfg = getenv("TMEM_CONFIG");
    if (cfg && *cfg) {
        printf("\"");
        for (const char *c = cfg; *c; c++)
            printf(*c == '"' || *c == '\\' ? "\\%c" : (unsigned char)*c < 0x20 ? "?" : "%c", *c);
        printf("\",");
    } else {
        printf("null,");
    }
    printf("\"types\":[");
    for (uint32_t i = 0; i < tmem_type_count(ctx); i++) {
        tmem_type *t;
        tmem_type_info ti;
        if (tmem_type_at(ctx, i, &t) != TMEM_OK || tmem_type_get_info(t, &ti) != TMEM_OK) break;
        printf("%s{\"name\":\"%s\",\"placement\":\"%s\",\"lifetime\":\"%s\",\"flags\":%u,"
               "\"reserve\":%llu,\"budget\":%llu,\"reclaim_priority\":%d,\"roles\":[",
               i ? "," : "", ti.name, tmem_placement_name(ti.placement),
               tmem_lifetime_name(ti.lifetime), ti.flags, (unsigned long long)ti.reserve,
               (unsigned long long)ti.budget, ti.reclaim_priority);
        print_roles(ctx, t, true);
        printf("]}");
    }
    printf("],\"gpus\":");
    tmem_info_gpu(true);
    printf("}\n");
}

static void print_text(tmem_context *ctx, const tmem_system_limits *lim, bool have_lim, const tmem_system_info *si) {
    char a[32], b[32], c[32];
    printf("typedmem %d.%d.%d\n\nlimits\n", TMEM_VERSION_MAJOR, TMEM_VERSION_MINOR, TMEM_VERSION_PATCH);
    if (have_lim) {
        human(a, sizeof a, lim->cgroup_max);
        human(b, sizeof b, lim->cgroup_high);
        human(c, sizeof c, lim->cgroup_current);
        printf("  cgroup memory.max       %s\n  cgroup memory.high      %s\n  cgroup memory.current   %s\n", a, b, c);
        human(a, sizeof a, lim->mem_total);
        human(b, sizeof b, lim->mem_available);
        human(c, sizeof c, lim->effective);
        printf("  MemTotal                %s\n  MemAvailable            %s\n  default budget          %s\n", a, b, c);
    } else {
        printf("  (not available on this system)\n");
    }
    human(a, sizeof a, si->page_size);
    human(b, sizeof b, si->huge_page_size);
    printf("\nsystem\n  page size               %s\n  huge page size          %s (%llu free hugetlb pages)\n", a, b,
           (unsigned long long)si->huge_pages_free);
    printf("  transparent huge pages  %s\n"
           "  memfd                   %s\n"
           "  memfd seals             %s\n"
           "  F_SEAL_FUTURE_WRITE     %s\n",
           yn(si->thp), yn(si->memfd), yn(si->memfd_seals), yn(si->seal_future_write));
    printf("  MADV_FREE / COLD / PAGEOUT  %s / %s / %s\n  PSI (/proc/pressure)    %s\n  cgroup v2 memory        %s\n",
           yn(si->madv_free), yn(si->madv_cold), yn(si->madv_pageout), yn(si->psi), yn(si->cgroup_v2));
    const char *cfg = getenv("TMEM_CONFIG");
    tmem_budget_info bi;
    if (tmem_context_budget(ctx, &bi) == TMEM_OK) human(a, sizeof a, bi.budget);
    else snprintf(a, sizeof a, "?");
    printf("\ncontext (%s)\n  budget                  %s\n", cfg && *cfg ? cfg : "defaults; TMEM_CONFIG not set", a);
    printf("\ntypes\n  %-22s %-12s %-11s %-11s %-11s %4s  %s\n", "name", "placement", "lifetime", "reserve", "budget",
           "prio", "roles");
    for (uint32_t i = 0; i < tmem_type_count(ctx); i++) {
        tmem_type *t;
        tmem_type_info ti;
        if (tmem_type_at(ctx, i, &t) != TMEM_OK || tmem_type_get_info(t, &ti) != TMEM_OK) break;
        human(a, sizeof a, ti.reserve);
        human(b, sizeof b, ti.budget);
        printf("  %-22s %-12s %-11s %-11s %-11s %4d  ", ti.name, tmem_placement_name(ti.placement),
               tmem_lifetime_name(ti.lifetime), a, ti.budget ? b : "none", ti.reclaim_priority);
        print_roles(ctx, t, false);
        printf("\n");
    }
}

int tmem_cmd_info(int argc, char **argv) {
    bool json = false;
    const tmem_cli_opt opts[] = {TMEM_CLI_FLAG("--json", "print one JSON object instead of the tables", &json)};
    tmem_cli cli = {"tmem info", "[--json]",
                    "Limits (cgroup, MemAvailable), OS features, and the memory types, budgets and role policy\n"
                    "of a context as TMEM_CONFIG (if set) would set it up.",
                    opts, TMEM_CLI_COUNT(opts), NULL, 0, 0, NULL};
    int rc = tmem_cli_parse(&cli, argc, argv);
    if (rc != TMEM_CLI_CONTINUE) return rc;
    tmem_system_limits lim;
    bool have_lim = tmem_system_limits_read(&lim) == TMEM_OK;
    tmem_system_info si;
    tmem_status st = tmem_system_info_read(&si);
    if (st != TMEM_OK) {
        fprintf(stderr, "tmem info: %s\n", tmem_strerror(st));
        return 1;
    }
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.flags = TMEM_CONTEXT_READ_ENV; /* show what TMEM_CONFIG would set up */
    if (tmem_cli_context_create("tmem info", &cd, &ctx) != TMEM_OK) return 1;
    if (json) print_json(ctx, &lim, have_lim, &si);
    else {
        print_text(ctx, &lim, have_lim, &si);
        tmem_info_gpu(false);
    }
    tmem_context_destroy(ctx);
    return 0;
}

/* Types: creation rules, lookup, info, budgets, placements and backends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "core/core.h"
#include "fake_device.h"

#define MiB (1ull << 20)

static tmem_context *make_ctx(uint64_t budget) {
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.budget = budget;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    return tmem_context_create(&cd, &ctx) == TMEM_OK ? ctx : NULL;
}

static void test_create_rules(void) {
    tmem_context *ctx = make_ctx(64 * MiB);
    REQUIRE(ctx);
    tmem_type_desc td = {0};
    tmem_type *t = (tmem_type *)1;
    const char *bad_names[] = {NULL, "", "kv", "/memory/", "/mem/kv", "/memory/a b", "/memory/tab\t", "/memory/q\"uote", "/memory/back\\slash",
                               "/memory/0123456789012345678901234567890123456789012345678901234567"};
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
        td.name = bad_names[i];
        CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_INVALID_ARG);
        CHECK(t == NULL);
    }
    char longest[64];
    memset(longest, 'n', sizeof longest);
    memcpy(longest, "/memory/", 8);
    longest[63] = '\0'; /* 63 bytes: the longest allowed */
    td.name = longest;
    CHECK_OK(tmem_type_create(ctx, &td, &t));
    td.name = "/memory/x";
    td.placement = TMEM_PLACEMENT_COUNT;
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_INVALID_ARG);
    td.placement = TMEM_PLACEMENT_HOST;
    td.lifetime = TMEM_LIFETIME_COUNT;
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_INVALID_ARG);
    td.lifetime = TMEM_LIFETIME_TRANSIENT;
    td.flags = 1u << 7;
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_INVALID_ARG);
    td.flags = 0;
    td.placement = TMEM_PLACEMENT_DEVICE;
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_UNSUPPORTED);
    td.placement = TMEM_PLACEMENT_DEVICE_HOST_VISIBLE;
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_UNSUPPORTED);
    td.placement = TMEM_PLACEMENT_HOST;
    td.reserve = UINT64_MAX;
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_OVERFLOW);
    td.reserve = 0;
    CHECK_OK(tmem_type_create(ctx, &td, &t));
    tmem_type *dup;
    CHECK_ST(tmem_type_create(ctx, &td, &dup), TMEM_E_EXISTS);
    CHECK(tmem_type_count(ctx) == 2);
    /* Up to 64 types. */
    char name[64];
    for (int i = 2; i < 64; i++) {
        snprintf(name, sizeof name, "/memory/t%d", i);
        td.name = name;
        td.reserve = 1 * MiB;
        CHECK_OK(tmem_type_create(ctx, &td, &t));
    }
    td.name = "/memory/one-too-many";
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_FULL);
    CHECK(tmem_type_count(ctx) == 64);
    for (uint32_t i = 0; i < 64; i++) {
        CHECK_OK(tmem_type_at(ctx, i, &t));
        tmem_type_info ti;
        CHECK_OK(tmem_type_get_info(t, &ti));
        CHECK(ti.index == i && tmem__type_index(t) == i);
    }
    CHECK_ST(tmem_type_at(ctx, 64, &t), TMEM_E_NOT_FOUND);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

static void test_info_and_defaults(void) {
    tmem_context *ctx = make_ctx(48 * MiB);
    REQUIRE(ctx);
    tmem_type_desc td = {0};
    td.name = "/memory/kv2";
    td.lifetime = TMEM_LIFETIME_GROWING;
    td.reclaim_priority = -3;
    tmem_type *a, *b, *c, *f;
    CHECK_OK(tmem_type_create(ctx, &td, &a));
    td.name = "/memory/budgeted";
    td.budget = 3 * MiB + 5;
    CHECK_OK(tmem_type_create(ctx, &td, &b));
    td.name = "/memory/reserved";
    td.reserve = 2 * MiB;
    CHECK_OK(tmem_type_create(ctx, &td, &c));
    tmem_type_info ti;
    CHECK_OK(tmem_type_get_info(a, &ti));
    CHECK(!strcmp(ti.name, "/memory/kv2") && ti.lifetime == TMEM_LIFETIME_GROWING && ti.reclaim_priority == -3);
    CHECK(ti.reserve == 48 * MiB && ti.budget == 0); /* reserve defaults to the context budget */
    CHECK_OK(tmem_type_get_info(b, &ti));
    CHECK(ti.budget == 3 * MiB + 5 && ti.reserve >= 3 * MiB + 5 && ti.reserve % tmem__pool_granule(b) == 0);
    CHECK_OK(tmem_type_get_info(c, &ti));
    CHECK(ti.reserve == 2 * MiB && ti.budget == 3 * MiB + 5);
    CHECK_OK(tmem_type_find(ctx, "/memory/budgeted", &f));
    CHECK(f == b);
    CHECK_ST(tmem_type_find(ctx, "/memory/nope", &f), TMEM_E_NOT_FOUND);
    CHECK(f == NULL);
    CHECK_OK(tmem_type_set_budget(b, 0));
    CHECK_OK(tmem_type_get_info(b, &ti));
    CHECK(ti.budget == 0);
    CHECK(tmem__type_context(a) == ctx && tmem__type_placement(a) == TMEM_PLACEMENT_HOST);
    tmem_context_destroy(ctx);
}

/* Huge-page types commit in huge-page granules when the size is known. */
static void test_huge_pages(void) {
    tmem_context *ctx = make_ctx(256 * MiB);
    REQUIRE(ctx);
    tmem_type_desc td = {0};
    td.name = "/memory/huge";
    td.flags = TMEM_TYPE_HUGE_PAGES;
    td.reserve = 16 * MiB;
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    tmem_system_info si;
    CHECK_OK(tmem_system_info_read(&si));
    uint64_t g = tmem__pool_granule(t);
    if (si.huge_page_size) CHECK(g == si.huge_page_size);
    CHECK(((uintptr_t)tmem__pool_ptr(t, 0) % g) == 0);
    CHECK_OK(tmem__pool_commit(t, 100, 1));
    tmem_type_stats s;
    CHECK_OK(tmem_type_get_stats(t, &s));
    CHECK(s.committed.current == g);
    memset(tmem__pool_ptr(t, 0), 7, g);
    tmem_context_destroy(ctx);
}

/* FILE and HOST_SHARED: bytes mapped or created outside the pool are
 * charged to the type (clean for files). The context budget counts dirty
 * bytes only: clean file maps are held to their type's own budget. */
static void test_external_charges(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 32 * MiB;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *w, *img;
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_WEIGHTS, &w));
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_IMAGE, &img));
    CHECK_OK(tmem__type_charge(w, 20 * MiB, true));
    CHECK_OK(tmem__type_charge(img, 4 * MiB, false));
    /* 4 MiB dirty of 32: 28 more fit, the 20 MiB clean do not count */
    CHECK_ST(tmem__type_charge(img, 29 * MiB, false), TMEM_E_BUDGET);
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.committed == 24 * MiB && bi.committed_clean == 20 * MiB && bi.available == 28 * MiB);
    /* a clean map past the context budget is fine; past its type's own, refused */
    CHECK_OK(tmem__type_charge(w, 40 * MiB, true));
    tmem__type_uncharge(w, 40 * MiB, true);
    CHECK_OK(tmem_type_set_budget(w, 30 * MiB));
    CHECK_ST(tmem__type_charge(w, 11 * MiB, true), TMEM_E_BUDGET);
    tmem_type_stats s;
    CHECK_OK(tmem_type_get_stats(w, &s));
    CHECK(s.clean == 20 * MiB && s.dirty == 0 && s.committed.current == 20 * MiB);
    CHECK_OK(tmem_type_get_stats(img, &s));
    CHECK(s.clean == 0 && s.dirty == 4 * MiB && s.budget_denials == 1);
    uint64_t d, c;
    CHECK_OK(tmem_context_accounted(ctx, &d, &c));
    CHECK(d == 4 * MiB && c == 20 * MiB);
    CHECK_OK(tmem_context_check(ctx));
    tmem__type_uncharge(w, 20 * MiB, true);
    tmem__type_uncharge(img, 4 * MiB, false);
    CHECK_OK(tmem_context_accounted(ctx, &d, &c));
    CHECK(d == 0 && c == 0);
    tmem_context_destroy(ctx);
}

/* ---- the fake device backend (fake_device.h) ---- */

static void test_device_backend(void) {
    tmem_context *ctx = make_ctx(64 * MiB);
    REQUIRE(ctx);
    fake_dev d = fake_dev_make();
    d.be.user = &d;
    CHECK(tmem__context_backend(ctx, TMEM_PLACEMENT_DEVICE) == NULL);
    CHECK_OK(tmem__context_set_backend(ctx, TMEM_PLACEMENT_DEVICE, &d.be));
    tmem_type_desc td = {0};
    td.name = "/memory/vram";
    td.placement = TMEM_PLACEMENT_DEVICE;
    td.reserve = 8 * MiB;
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    CHECK(d.reserves == 1);
    CHECK(tmem__pool_granule(t) == 64 << 10);
    CHECK(tmem__pool_ptr(t, 0) == NULL); /* no host view */
    uint64_t off;
    CHECK_OK(tmem__pool_carve(t, 1 * MiB, 0, &off));
    CHECK_OK(tmem__pool_commit(t, off, 100 << 10));
    CHECK(d.committed == 128 << 10 && d.commits == 1);
    uint64_t res;
    CHECK_ST(tmem__pool_residency(t, 0, 1 * MiB, &res), TMEM_E_UNSUPPORTED);
    /* Device bytes count against budgets but are not process dirty memory. */
    uint64_t dirty, clean;
    CHECK_OK(tmem_context_accounted(ctx, &dirty, &clean));
    CHECK(dirty == 0);
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.committed == 128 << 10);
    tmem__pool_uncarve(t, off, 1 * MiB);
    CHECK(d.committed == 0 && d.decommits == 1);
    /* Unregistering affects only later types. */
    CHECK_OK(tmem__context_set_backend(ctx, TMEM_PLACEMENT_DEVICE, NULL));
    td.name = "/memory/vram2";
    CHECK_ST(tmem_type_create(ctx, &td, &t), TMEM_E_UNSUPPORTED);
    fake_dev broken = d;
    broken.be.commit = NULL;
    CHECK_ST(tmem__context_set_backend(ctx, TMEM_PLACEMENT_DEVICE, &broken.be), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
    CHECK(d.releases == 1);
}

/* Device bytes per role: a role allocating in a host type and in a device
 * type (the fake backend) counts both in in_use and only the device part in
 * device_in_use; stats JSON carries the same figures. */
static void test_device_bytes_per_role(void) {
    tmem_context *ctx = make_ctx(64 * MiB);
    REQUIRE(ctx);
    fake_dev d = fake_dev_make();
    d.be.user = &d;
    REQUIRE_OK(tmem__context_set_backend(ctx, TMEM_PLACEMENT_DEVICE, &d.be));
    tmem_type_desc td = {0};
    td.name = "/memory/vram";
    td.placement = TMEM_PLACEMENT_DEVICE;
    td.reserve = 8 * MiB;
    tmem_type *vram, *host;
    REQUIRE_OK(tmem_type_create(ctx, &td, &vram));
    td.name = "/memory/host";
    td.placement = TMEM_PLACEMENT_HOST;
    REQUIRE_OK(tmem_type_create(ctx, &td, &host));
    tmem_heap *hv, *hh;
    tmem_heap_desc hd = {0};
    hd.type = vram;
    hd.size = 4 * MiB;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &hv));
    hd.type = host;
    REQUIRE_OK(tmem_heap_create(ctx, &hd, &hh));
    tmem_alloc_desc ad = {0};
    ad.role = TMEM_ROLE_ACTIVATION;
    tmem_alloc_info a1, a2, a3;
    ad.size = 300000;
    REQUIRE_OK(tmem_heap_alloc_ex(hv, &ad, &a1));
    ad.size = 5000;
    REQUIRE_OK(tmem_heap_alloc_ex(hh, &ad, &a2));
    ad.size = 70000;
    ad.role = TMEM_ROLE_KV_CACHE;
    REQUIRE_OK(tmem_heap_alloc_ex(hv, &ad, &a3));
    tmem_role_stats rs;
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_ACTIVATION, &rs));
    CHECK(rs.in_use.current == 305000 && rs.live_count == 2);
    CHECK(rs.device_in_use.current == 300000 && rs.device_in_use.peak == 300000 &&
          rs.device_live_count == 1);
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_KV_CACHE, &rs));
    CHECK(rs.device_in_use.current == 70000 && rs.in_use.current == 70000);
    CHECK_OK(tmem_context_check(ctx));
    size_t need = 0;
    CHECK_OK(tmem_stats_json(ctx, NULL, 0, &need)); /* sizing call */
    char *js = malloc(need);
    REQUIRE(js);
    REQUIRE_OK(tmem_stats_json(ctx, js, need, NULL));
    CHECK(strstr(js, "\"name\":\"activation\",\"type\":") != NULL);
    const char *act = strstr(js, "\"name\":\"activation\"");
    REQUIRE(act);
    const char *want = "\"device_in_use\":{\"current\":300000,\"peak\":300000,\"total\":300000}";
    const char *got = strstr(act, "\"device_in_use\"");
    CHECK(got && !strncmp(got, want, strlen(want)));
    free(js);
    /* Freeing the device allocation drops the device part, keeps its peak. */
    CHECK_OK(tmem_heap_free_offset(hv, a1.offset));
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_ACTIVATION, &rs));
    CHECK(rs.in_use.current == 5000 && rs.device_in_use.current == 0 &&
          rs.device_in_use.peak == 300000);
    CHECK(rs.device_live_count == 0 && rs.live_count == 1);
    CHECK_OK(tmem_context_check(ctx));
    (void)a2;
    tmem_heap_destroy(hv);
    tmem_heap_destroy(hh);
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_KV_CACHE, &rs));
    CHECK(rs.device_in_use.current == 0 && rs.device_live_count == 0); /* heap destroy frees */
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_create_rules);
    RUN(test_info_and_defaults);
    RUN(test_huge_pages);
    RUN(test_external_charges);
    RUN(test_device_backend);
    RUN(test_device_bytes_per_role);
    return tmem_test_finish();
}

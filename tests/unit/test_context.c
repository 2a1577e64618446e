/* Context: create/destroy, defaults, role policy, owned objects, allocator. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "core/internal.h"

static const char *const default_names[] = {
    "/memory/weights", "/memory/kv", "/memory/state", "/memory/activations",
    "/memory/scratch", "/memory/images", "/memory/vision", "/memory/tokens",
};

static void test_create_defaults(void) {
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 20;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    CHECK(tmem_type_count(ctx) == 8);
    for (unsigned i = 0; i < 8; i++) {
        tmem_type *t = NULL;
        CHECK_OK(tmem_type_find(ctx, default_names[i], &t));
        tmem_type_info ti;
        CHECK_OK(tmem_type_get_info(t, &ti));
        CHECK(!strcmp(ti.name, default_names[i]));
        CHECK(ti.reserve >= cd.budget); /* each may grow to the whole budget */
        tmem_type *byrole = NULL;
        CHECK_OK(tmem_role_get_type(ctx, (tmem_role)(TMEM_ROLE_BUILTIN_FIRST + i), &byrole));
        CHECK(byrole == t);
        CHECK(tmem_role_name(ctx, (tmem_role)(TMEM_ROLE_BUILTIN_FIRST + i)) != NULL);
    }
    tmem_type *w, *kv, *img;
    CHECK_OK(tmem_type_find(ctx, "/memory/weights", &w));
    CHECK_OK(tmem_type_find(ctx, "/memory/kv", &kv));
    CHECK_OK(tmem_type_find(ctx, "/memory/images", &img));
    tmem_type_info ti;
    CHECK_OK(tmem_type_get_info(w, &ti));
    CHECK(ti.placement == TMEM_PLACEMENT_FILE && ti.lifetime == TMEM_LIFETIME_PERSISTENT);
    CHECK_OK(tmem_type_get_info(kv, &ti));
    CHECK(ti.placement == TMEM_PLACEMENT_HOST && ti.lifetime == TMEM_LIFETIME_GROWING);
    CHECK_OK(tmem_type_get_info(img, &ti));
    CHECK(ti.placement == TMEM_PLACEMENT_HOST_SHARED && ti.lifetime == TMEM_LIFETIME_SHARED);
    /* Transient types are reclaimed before KV, KV before state. */
    tmem_type *act, *st;
    tmem_type_info ia, ik, is;
    CHECK_OK(tmem_type_find(ctx, "/memory/activations", &act));
    CHECK_OK(tmem_type_find(ctx, "/memory/state", &st));
    CHECK_OK(tmem_type_get_info(act, &ia));
    CHECK_OK(tmem_type_get_info(kv, &ik));
    CHECK_OK(tmem_type_get_info(st, &is));
    CHECK(ia.reclaim_priority < ik.reclaim_priority && ik.reclaim_priority < is.reclaim_priority);

    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.budget == cd.budget && bi.committed == 0 && bi.available == cd.budget && bi.pressure == TMEM_PRESSURE_NORMAL);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
    tmem_context_destroy(NULL);
}

static void test_no_defaults_and_discovered_budget(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    CHECK(tmem_type_count(ctx) == 0);
    tmem_type *t;
    CHECK_ST(tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, &t), TMEM_E_NOT_FOUND);
    CHECK(t == NULL);
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    tmem_system_limits lim;
    /* MemAvailable moves between two reads; a cgroup limit does not. */
    if (tmem_system_limits_read(&lim) == TMEM_OK && lim.effective) {
        if (lim.cgroup_max || lim.cgroup_high) CHECK(bi.budget == lim.effective);
        else CHECK_MSG(bi.budget > lim.effective / 10 * 9 && bi.budget < lim.effective / 10 * 11, "budget %llu, MemAvailable %llu",
                       (unsigned long long)bi.budget, (unsigned long long)lim.effective);
    }
    CHECK(bi.budget > 0);
    tmem_context_destroy(ctx);
    /* NULL desc = all defaults. */
    REQUIRE_OK(tmem_context_create(NULL, &ctx));
    CHECK(tmem_type_count(ctx) == 8);
    tmem_context_destroy(ctx);
}

static void test_bad_desc(void) {
    tmem_context *ctx = (tmem_context *)1;
    tmem_context_desc cd = {0};
    CHECK_ST(tmem_context_create(&cd, NULL), TMEM_E_INVALID_ARG);
    cd.warning_fraction = 0.9f;
    cd.critical_fraction = 0.5f;
    CHECK_ST(tmem_context_create(&cd, &ctx), TMEM_E_INVALID_ARG);
    CHECK(ctx == NULL);
    cd.warning_fraction = 1.5f;
    cd.critical_fraction = 0;
    CHECK_ST(tmem_context_create(&cd, &ctx), TMEM_E_INVALID_ARG);
    cd.warning_fraction = -0.1f;
    CHECK_ST(tmem_context_create(&cd, &ctx), TMEM_E_INVALID_ARG);
    cd.warning_fraction = 0;
    cd.flags = 1u << 20;
    CHECK_ST(tmem_context_create(&cd, &ctx), TMEM_E_INVALID_ARG);
}

static void test_roles(void) {
    tmem_context *ctx, *other;
    tmem_context_desc cd = {0};
    cd.budget = 32ull << 20;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    REQUIRE_OK(tmem_context_create(&cd, &other));
    tmem_type *scratch, *foreign;
    CHECK_OK(tmem_type_find(ctx, "/memory/scratch", &scratch));
    CHECK_OK(tmem_type_find(other, "/memory/scratch", &foreign));
    /* Override the policy: activations into scratch. */
    CHECK_OK(tmem_role_set_type(ctx, TMEM_ROLE_ACTIVATION, scratch));
    tmem_type *t;
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &t));
    CHECK(t == scratch);
    CHECK_ST(tmem_role_set_type(ctx, TMEM_ROLE_ACTIVATION, foreign), TMEM_E_FOREIGN);
    CHECK_ST(tmem_role_set_type(ctx, (tmem_role)TMEM_ROLE_USER_FIRST, scratch), TMEM_E_INVALID_ARG); /* undefined */
    CHECK(tmem_role_name(ctx, (tmem_role)TMEM_ROLE_USER_FIRST) == NULL);
    CHECK_OK(tmem_role_define(ctx, (tmem_role)TMEM_ROLE_USER_FIRST, "lora", scratch));
    CHECK(!strcmp(tmem_role_name(ctx, (tmem_role)TMEM_ROLE_USER_FIRST), "lora"));
    CHECK_OK(tmem_role_get_type(ctx, (tmem_role)TMEM_ROLE_USER_FIRST, &t));
    CHECK(t == scratch);
    CHECK_ST(tmem_role_define(ctx, (tmem_role)TMEM_ROLE_USER_FIRST, "lora2", scratch), TMEM_E_EXISTS);
    CHECK_ST(tmem_role_define(ctx, (tmem_role)(TMEM_ROLE_USER_FIRST + 1), "lora", scratch), TMEM_E_EXISTS);
    CHECK_ST(tmem_role_define(ctx, (tmem_role)(TMEM_ROLE_USER_FIRST + 1), "weights", scratch), TMEM_E_EXISTS);
    CHECK_ST(tmem_role_define(ctx, TMEM_ROLE_KV_CACHE, "x", scratch), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_define(ctx, (tmem_role)TMEM_ROLE_MAX, "x", scratch), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_role_define(ctx, (tmem_role)(TMEM_ROLE_USER_FIRST + 2), "adapter", foreign), TMEM_E_FOREIGN);
    CHECK_OK(tmem_role_define(ctx, (tmem_role)(TMEM_ROLE_USER_FIRST + 2), "unmapped", NULL));
    CHECK_ST(tmem_role_get_type(ctx, (tmem_role)(TMEM_ROLE_USER_FIRST + 2), &t), TMEM_E_NOT_FOUND);
    CHECK(!strcmp(tmem_role_name(NULL, TMEM_ROLE_KV_CACHE), "kv_cache"));
    tmem_context_destroy(other);
    tmem_context_destroy(ctx);
}

/* Owned objects are destroyed newest first at context destroy. */
static int destroy_log[8];
static int destroy_n;
static void record_destroy(void *obj) { destroy_log[destroy_n++] = *(int *)obj; }

static void test_owned_order(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 16ull << 20;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    static int ids[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++) CHECK_OK(tmem__context_add_owned(ctx, &ids[i], record_destroy));
    tmem__context_remove_owned(ctx, &ids[1]);
    CHECK_ST(tmem__context_add_owned(ctx, NULL, record_destroy), TMEM_E_INVALID_ARG);
    destroy_n = 0;
    tmem_context_destroy(ctx);
    CHECK(destroy_n == 3);
    CHECK(destroy_log[0] == 4 && destroy_log[1] == 3 && destroy_log[2] == 1);
}

/* A counting allocator: every metadata byte goes through it and comes back. */
typedef struct counting { size_t live_bytes, live_blocks, calls; } counting;
static void *c_alloc(size_t size, void *user) {
    counting *c = user;
    c->live_bytes += size;
    c->live_blocks++;
    c->calls++;
    return malloc(size);
}
static void c_free(void *p, size_t size, void *user) {
    counting *c = user;
    c->live_bytes -= size;
    c->live_blocks--;
    free(p);
}

static void test_allocator(void) {
    counting c = {0};
    tmem_allocator al = {c_alloc, c_free, &c};
    tmem_context_desc cd = {0};
    cd.budget = 16ull << 20;
    cd.allocator = &al;
    tmem_context *ctx;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    CHECK(c.calls > 8); /* context + 8 types with their pools */
    tmem_type *kv;
    CHECK_OK(tmem_type_find(ctx, "/memory/kv", &kv));
    CHECK_OK(tmem__pool_commit(kv, 0, 1 << 20));
    tmem_context_destroy(ctx);
    CHECK_MSG(c.live_bytes == 0 && c.live_blocks == 0, "leaked %zu bytes in %zu blocks", c.live_bytes, c.live_blocks);
}

/* An allocator that fails the Nth call: creation fails cleanly, no leaks. */
typedef struct failing { counting c; long fail_at; } failing;
static void *f_alloc(size_t size, void *user) {
    failing *f = user;
    if (f->fail_at-- == 0) return NULL;
    return c_alloc(size, &f->c);
}
static void f_free(void *p, size_t size, void *user) { c_free(p, size, &((failing *)user)->c); }

static void test_allocator_failures(void) {
    int failures = 0, successes = 0;
    for (long n = 0; n < 200; n++) {
        failing f = {{0, 0, 0}, n};
        tmem_allocator al = {f_alloc, f_free, &f};
        tmem_context_desc cd = {0};
        cd.budget = 16ull << 20;
        cd.allocator = &al;
        tmem_context *ctx = NULL;
        tmem_status st = tmem_context_create(&cd, &ctx);
        if (st == TMEM_OK) {
            successes++;
            tmem_context_destroy(ctx);
            CHECK(f.c.live_blocks == 0);
            break;
        }
        failures++;
        CHECK_ST(st, TMEM_E_NO_MEMORY);
        CHECK(ctx == NULL);
        CHECK_MSG(f.c.live_blocks == 0, "fail_at %ld leaked %zu blocks", n, f.c.live_blocks);
    }
    CHECK(failures > 8 && successes == 1);
}

static void test_tracer_pointer(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 16ull << 20;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES | TMEM_CONTEXT_DEBUG;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    CHECK(tmem__context_debug(ctx));
    CHECK(tmem__context_tracer(ctx) == NULL);
    tmem_context_destroy(ctx);
}

/* Config at creation: desc.config_path, then TMEM_CONFIG with READ_ENV. */
static void test_config_at_create(void) {
    char dir[256], good[300], env[300], bad[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(good, sizeof good, "%s/good.conf", dir);
    snprintf(env, sizeof env, "%s/env.conf", dir);
    snprintf(bad, sizeof bad, "%s/bad.conf", dir);
    FILE *f = fopen(good, "w");
    REQUIRE(f);
    fputs("budget = 96MiB\n[type /memory/frames]\nplacement = host_shared\nlifetime = shared\nbudget = 8MiB\n[role image]\ntype = /memory/frames\n", f);
    fclose(f);
    f = fopen(env, "w");
    REQUIRE(f);
    fputs("[type /memory/draft]\nlifetime = growing\nreserve = 4MiB\n", f);
    fclose(f);
    f = fopen(bad, "w");
    REQUIRE(f);
    fputs("[type /memory/x]\nbudjet = 1\n", f);
    fclose(f);

    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 64ull << 20;
    cd.config_path = good;
    cd.flags = TMEM_CONTEXT_READ_ENV;
    setenv("TMEM_CONFIG", env, 1);
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *frames, *img, *draft;
    CHECK_OK(tmem_type_find(ctx, "/memory/frames", &frames));
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_IMAGE, &img));
    CHECK(img == frames);
    CHECK_OK(tmem_type_find(ctx, "/memory/draft", &draft));
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.budget == 96ull << 20); /* the file's budget wins over the desc's */
    CHECK(tmem_type_count(ctx) == 10);
    tmem_context_destroy(ctx);
    /* A bad file fails creation cleanly. */
    unsetenv("TMEM_CONFIG");
    cd.config_path = bad;
    ctx = (tmem_context *)1;
    CHECK_ST(tmem_context_create(&cd, &ctx), TMEM_E_PARSE);
    CHECK(ctx == NULL);
    setenv("TMEM_CONFIG", bad, 1);
    cd.config_path = NULL;
    CHECK_ST(tmem_context_create(&cd, &ctx), TMEM_E_PARSE);
    unsetenv("TMEM_CONFIG");
    remove(good);
    remove(env);
    remove(bad);
    rmdir(dir);
}

int main(void) {
    RUN(test_config_at_create);
    RUN(test_create_defaults);
    RUN(test_no_defaults_and_discovered_budget);
    RUN(test_bad_desc);
    RUN(test_roles);
    RUN(test_owned_order);
    RUN(test_allocator);
    RUN(test_allocator_failures);
    RUN(test_tracer_pointer);
    return tmem_test_finish();
}

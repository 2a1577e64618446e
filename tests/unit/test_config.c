/* Config files: the documented format end to end (types, budgets, roles),
 * sizes and units, comments, file and TMEM_CONFIG loading, and an OS fault
 * sweep over loading a file. Error paths: tests/misuse/test_config_errors.c. */
#include "harness.h"
#include "os/os.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S(lit) lit, sizeof(lit) - 1

static tmem_context *bare_ctx(void) {
    tmem_context_desc d = {0};
    d.budget = 1ull << 30;
    d.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_context *ctx = NULL;
    return tmem_context_create(&d, &ctx) == TMEM_OK ? ctx : NULL;
}

static tmem_context *default_ctx(void) {
    tmem_context_desc d = {0};
    d.budget = 1ull << 30;
    tmem_context *ctx = NULL;
    return tmem_context_create(&d, &ctx) == TMEM_OK ? ctx : NULL;
}

static bool info_of(tmem_context *ctx, const char *name, tmem_type_info *info) {
    tmem_type *t;
    return tmem_type_find(ctx, name, &t) == TMEM_OK && tmem_type_get_info(t, info) == TMEM_OK;
}

static const char k_example[] =
    "# typedmem config: an on-device VLM session\n"
    "budget = 768MiB\n"
    "\n"
    "[type /memory/kv]\n"
    "placement = host        # anonymous private memory\n"
    "lifetime = growing\n"
    "flags = none\n"
    "reserve = 512MiB\n"
    "budget = 384MiB\n"
    "reclaim_priority = 40\n"
    "\n"
    "[type /memory/act]\n"
    "placement = host\n"
    "lifetime = transient\n"
    "flags = huge_pages\n"
    "budget = 64MiB\n"
    "reclaim_priority = -5\n"
    "\n"
    "[type /memory/frames]\n"
    "placement = host_shared\n"
    "lifetime = shared\n"
    "budget = 32M\n"
    "\n"
    "[role kv_cache]\n"
    "type = /memory/kv\n"
    "[role activation]\n"
    "type = /memory/act\n"
    "[role image]\n"
    "type = /memory/frames\n"
    "[role draft_kv]       # a user role\n"
    "id = 17\n"
    "type = /memory/kv\n";

static void test_example(void) {
    tmem_context *ctx = bare_ctx();
    REQUIRE(ctx);
    tmem_config_error err = {7, "stale"};
    CHECK_OK(tmem_config_load_string(ctx, S(k_example), &err));
    CHECK(err.line == 0 && err.message[0] == '\0');
    CHECK(tmem_type_count(ctx) == 3);

    tmem_type_info kv, act, fr;
    REQUIRE(info_of(ctx, "/memory/kv", &kv));
    CHECK(kv.placement == TMEM_PLACEMENT_HOST && kv.lifetime == TMEM_LIFETIME_GROWING);
    CHECK(kv.flags == 0);
    CHECK(kv.reserve >= 512ull << 20);
    CHECK(kv.budget == 384ull << 20);
    CHECK(kv.reclaim_priority == 40);
    REQUIRE(info_of(ctx, "/memory/act", &act));
    CHECK(act.lifetime == TMEM_LIFETIME_TRANSIENT && act.flags == TMEM_TYPE_HUGE_PAGES);
    CHECK(act.budget == 64ull << 20 && act.reclaim_priority == -5);
    REQUIRE(info_of(ctx, "/memory/frames", &fr));
    CHECK(fr.placement == TMEM_PLACEMENT_HOST_SHARED && fr.lifetime == TMEM_LIFETIME_SHARED && fr.budget == 32ull << 20);

    tmem_budget_info b;
    CHECK_OK(tmem_context_budget(ctx, &b));
    CHECK(b.budget == 768ull << 20);

    tmem_type *t, *kvt;
    REQUIRE_OK(tmem_type_find(ctx, "/memory/kv", &kvt));
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, &t));
    CHECK(t == kvt);
    CHECK_OK(tmem_role_get_type(ctx, (tmem_role)17, &t));
    CHECK(t == kvt);
    CHECK(tmem_role_name(ctx, (tmem_role)17) && strcmp(tmem_role_name(ctx, (tmem_role)17), "draft_kv") == 0);
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_IMAGE, &t));
    tmem_type *frt;
    REQUIRE_OK(tmem_type_find(ctx, "/memory/frames", &frt));
    CHECK(t == frt);
    CHECK_OK(tmem_context_check(ctx));

    /* loading the same file again: the types exist now and the file restates
     * them, so only budgets/roles are (re)applied; the user role exists */
    CHECK_OK(tmem_config_load_string(ctx, S(k_example), &err));
    CHECK(tmem_type_count(ctx) == 3);
    tmem_context_destroy(ctx);
}

/* With the default types a config tunes budgets and remaps roles. */
static void test_tune_defaults(void) {
    tmem_context *ctx = default_ctx();
    REQUIRE(ctx);
    uint32_t n0 = tmem_type_count(ctx);
    tmem_type_info kv0;
    REQUIRE(info_of(ctx, "/memory/kv", &kv0));
    static const char text[] = "[type /memory/kv]\n"
                               "placement = host       # restating the current value is fine\n"
                               "budget = 256MiB\n"
                               "[type /memory/kv2]\n"
                               "lifetime = growing\n"
                               "[role kv_cache]\n"
                               "type = /memory/kv2\n";
    tmem_config_error err;
    CHECK_OK(tmem_config_load_string(ctx, S(text), &err));
    CHECK_MSG(err.message[0] == '\0', "%s", err.message);
    tmem_type_info kv;
    REQUIRE(info_of(ctx, "/memory/kv", &kv));
    CHECK(kv.budget == 256ull << 20);
    CHECK(kv.placement == kv0.placement && kv.reserve == kv0.reserve);
    CHECK(tmem_type_count(ctx) == n0 + 1);
    tmem_type *t, *kv2;
    REQUIRE_OK(tmem_type_find(ctx, "/memory/kv2", &kv2));
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, &t));
    CHECK(t == kv2);
    tmem_context_destroy(ctx);
}

static void test_sizes_and_syntax(void) {
    static const struct { const char *value; uint64_t bytes; } sizes[] = {
        {"4096", 4096},
        {"4096B", 4096},
        {"64K", 64ull << 10},
        {"64 KiB", 64ull << 10},
        {"3GiB", 3ull << 30},
        {"3gib", 3ull << 30},
        {"1536MiB", 1536ull << 20},
        {"2T", 2ull << 40},
        {"16777215TiB", 16777215ull << 40}, /* the largest TiB count that fits */
        {"18446744073709551615", UINT64_MAX},
    };
    /* A type's budget carries the sizes: the context budget is bounded by the
     * process's memory limit (test_budget_above_limit). */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        tmem_context *ctx = bare_ctx();
        REQUIRE(ctx);
        char text[160];
        int n = snprintf(text, sizeof text,
                         "[type /memory/x]\nreserve = 1MiB\n  budget\t=  %s   # trailing comment\r\n",
                         sizes[i].value);
        tmem_config_error err;
        CHECK_OK(tmem_config_load_string(ctx, text, (size_t)n, &err));
        tmem_type_info x;
        CHECK(info_of(ctx, "/memory/x", &x));
        CHECK_MSG(x.budget == sizes[i].bytes, "%s -> %llu", sizes[i].value,
                  (unsigned long long)x.budget);
        tmem_context_destroy(ctx);
    }
    /* empty, only comments, no final newline, blank lines with spaces */
    tmem_context *ctx = bare_ctx();
    REQUIRE(ctx);
    tmem_config_error err;
    CHECK_OK(tmem_config_load_string(ctx, "", 0, &err));
    CHECK_OK(tmem_config_load_string(ctx, NULL, 0, &err));
    CHECK_OK(tmem_config_load_string(ctx, S("# nothing\n   \n\t\n# more"), &err));
    CHECK_OK(tmem_config_load_string(ctx, S("[type /memory/x]"), &err)); /* all defaults */
    tmem_type_info x;
    REQUIRE(info_of(ctx, "/memory/x", &x));
    CHECK(x.placement == TMEM_PLACEMENT_HOST && x.lifetime == TMEM_LIFETIME_PERSISTENT && x.flags == 0 && x.budget == 0);
    /* len bounds the text: the second line is not read */
    CHECK_OK(tmem_config_load_string(ctx, "[type /memory/y]\n[oops", 17, &err));
    CHECK(info_of(ctx, "/memory/y", &x));
    /* flags list with spaces and repeats */
    CHECK_OK(tmem_config_load_string(ctx, S("[type /memory/z]\nflags = huge_pages , huge_pages\n"), &err));
    CHECK(info_of(ctx, "/memory/z", &x) && x.flags == TMEM_TYPE_HUGE_PAGES);
    tmem_context_destroy(ctx);
}

/* The apply phase: the file's context budget is in force when populated
 * types are charged; a refusal by the OS or a backend hits the risky types
 * first, so the usual failure leaves nothing behind and the budget restored. */
static tmem_context *small_ctx(void) {
    tmem_context_desc d = {0};
    d.budget = 1u << 20;
    d.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_context *ctx = NULL;
    return tmem_context_create(&d, &ctx) == TMEM_OK ? ctx : NULL;
}

static void test_apply_phase(void) {
    tmem_context *ctx = small_ctx();
    REQUIRE(ctx);
    static const char grow[] = "budget = 64MiB\n[type /memory/pop]\nflags = populate\nbudget = 8MiB\n";
    tmem_config_error err;
    CHECK_OK(tmem_config_load_string(ctx, S(grow), &err));
    CHECK_MSG(err.message[0] == '\0', "%s", err.message);
    tmem_type *t;
    REQUIRE_OK(tmem_type_find(ctx, "/memory/pop", &t));
    tmem_type_stats ts;
    CHECK_OK(tmem_type_get_stats(t, &ts));
    CHECK(ts.committed.current == 8u << 20); /* populated at creation */
    tmem_context_destroy(ctx);

    /* populate over the (unchanged) context budget: TMEM_E_BUDGET on the
     * type's line; the plain type declared before it was not created */
    ctx = small_ctx();
    REQUIRE(ctx);
    static const char over[] = "[type /memory/plain]\n"
                               "[type /memory/big]\nflags = populate\nreserve = 8MiB\n"
                               "[role scratch]\ntype = /memory/plain\n";
    CHECK_ST(tmem_config_load_string(ctx, S(over), &err), TMEM_E_BUDGET);
    CHECK_MSG(err.line == 2 && strstr(err.message, "/memory/big") && strstr(err.message, "nothing was changed"), "%s", err.message);
    CHECK(tmem_type_count(ctx) == 0);
    CHECK_ST(tmem_role_get_type(ctx, TMEM_ROLE_SCRATCH, &t), TMEM_E_NOT_FOUND);

    /* device placement without a backend, with a budget change: refused,
     * nothing created, the budget put back */
    static const char dev[] = "budget = 2GiB\n[type /memory/host]\n[type /memory/gpu]\nplacement = device\nbudget = 1GiB\n";
    CHECK_ST(tmem_config_load_string(ctx, S(dev), &err), TMEM_E_UNSUPPORTED);
    CHECK(err.line == 3);
    CHECK(tmem_type_count(ctx) == 0);
    tmem_budget_info b;
    CHECK_OK(tmem_context_budget(ctx, &b));
    CHECK(b.budget == 1u << 20);
    tmem_context_destroy(ctx);
}

static bool write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(text, 1, strlen(text), f) == strlen(text);
    return fclose(f) == 0 && ok;
}

/* A context budget above the process's memory limit (here the TMEM_LIMIT a
 * supervisor grants) is refused with its line, and nothing changes: the
 * fuzzer's 3.3 GiB finding (fuzz/config/corpus/regress-budget-above-limit-oom). */
static void test_budget_above_limit(void) {
    REQUIRE(setenv("TMEM_LIMIT", "67108864", 1) == 0);
    tmem_context *ctx = bare_ctx();
    REQUIRE(ctx);
    static const char over[] = "# granted 64 MiB\nbudget = 65MiB\n[type /memory/p]\nplacement = pinned\n"
                               "reserve = 1MiB\n";
    tmem_config_error err;
    CHECK_ST(tmem_config_load_string(ctx, over, sizeof over - 1, &err), TMEM_E_BUDGET);
    CHECK(err.line == 2);
    CHECK_MSG(strstr(err.message, "line 2: budget 68157440 bytes is above this process's memory limit "
                                  "of 67108864 bytes") == err.message, "%s", err.message);
    tmem_budget_info b;
    CHECK_OK(tmem_context_budget(ctx, &b));
    CHECK(b.budget == 1ull << 30);
    CHECK(tmem_type_count(ctx) == 0);
    static const char at[] = "budget = 64MiB\n";
    CHECK_OK(tmem_config_load_string(ctx, at, sizeof at - 1, &err));
    CHECK_OK(tmem_context_budget(ctx, &b));
    CHECK(b.budget == 64ull << 20);
    tmem_context_destroy(ctx);
    REQUIRE(unsetenv("TMEM_LIMIT") == 0);
}

static void test_file_and_env(void) {
    char dir[256], path[300], empty[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/tmem.conf", dir);
    snprintf(empty, sizeof empty, "%s/empty.conf", dir);
    REQUIRE(write_file(path, k_example));
    REQUIRE(write_file(empty, ""));
    int64_t m0 = tmem__os_live_mappings(), f0 = tmem__os_live_fds();

    tmem_context *ctx = bare_ctx();
    REQUIRE(ctx);
    tmem_config_error err;
    CHECK_OK(tmem_config_load(ctx, path, &err));
    CHECK(tmem_type_count(ctx) == 3);
    CHECK_OK(tmem_config_load(ctx, empty, &err));
    char missing[320];
    snprintf(missing, sizeof missing, "%s/nope.conf", dir);
    CHECK_ST(tmem_config_load(ctx, missing, &err), TMEM_E_IO);
    CHECK(err.line == 0 && strstr(err.message, "nope.conf") != NULL);
    CHECK_ST(tmem_config_load(ctx, dir, &err), TMEM_E_IO);
    CHECK_ST(tmem_config_load(ctx, NULL, &err), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_config_load(NULL, path, &err), TMEM_E_INVALID_ARG);
    tmem_context_destroy(ctx);
    tmem_context *c2 = NULL;
    CHECK(tmem__os_live_mappings() == m0 && tmem__os_live_fds() == f0);

    /* desc.config_path */
    tmem_context_desc d = {0};
    d.budget = 1ull << 30;
    d.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    d.config_path = path;
    CHECK_OK(tmem_context_create(&d, &c2));
    if (c2) CHECK(tmem_type_count(c2) == 3);
    tmem_context_destroy(c2);

    /* TMEM_CONFIG with TMEM_CONTEXT_READ_ENV; ignored without the flag */
    d.config_path = NULL;
    setenv("TMEM_CONFIG", path, 1);
    CHECK_OK(tmem_context_create(&d, &c2));
    if (c2) CHECK(tmem_type_count(c2) == 0);
    tmem_context_destroy(c2);
    d.flags |= TMEM_CONTEXT_READ_ENV;
    CHECK_OK(tmem_context_create(&d, &c2));
    if (c2) CHECK(tmem_type_count(c2) == 3);
    tmem_context_destroy(c2);
    /* a bad file named by TMEM_CONFIG fails creation with TMEM_E_PARSE */
    REQUIRE(write_file(empty, "budget = lots\n"));
    setenv("TMEM_CONFIG", empty, 1);
    c2 = (tmem_context *)1;
    CHECK_ST(tmem_context_create(&d, &c2), TMEM_E_PARSE);
    CHECK(c2 == NULL);
    setenv("TMEM_CONFIG", "", 1);
    CHECK_OK(tmem_context_create(&d, &c2));
    tmem_context_destroy(c2);
    unsetenv("TMEM_CONFIG");
    CHECK(tmem__os_live_mappings() == m0 && tmem__os_live_fds() == f0);

    unlink(path);
    unlink(empty);
    rmdir(dir);
}

/* OS fault sweep over creating a context and loading a config file. */
typedef struct sweep_state {
    const char *path;
    tmem_context *ctx;
} sweep_state;

static tmem_status sweep_scenario(void *u) {
    sweep_state *s = u;
    tmem_context_desc d = {0};
    d.budget = 1ull << 30;
    d.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_status st = tmem_context_create(&d, &s->ctx);
    if (st != TMEM_OK) return st;
    tmem_config_error err;
    return tmem_config_load(s->ctx, s->path, &err);
}

static void sweep_cleanup(void *u) {
    sweep_state *s = u;
    tmem_context_destroy(s->ctx);
    s->ctx = NULL;
}

static void test_fault_sweep(void) {
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/sweep.conf", dir);
    REQUIRE(write_file(path, k_example));
    sweep_state s = {path, NULL};
    uint64_t n = tmem_test_fault_sweep("config_load", sweep_scenario, sweep_cleanup, &s);
    CHECK(n >= 2); /* at least open + map of the file */
    unlink(path);
    rmdir(dir);
}

int main(void) {
    RUN(test_example);
    RUN(test_tune_defaults);
    RUN(test_sizes_and_syntax);
    RUN(test_apply_phase);
    RUN(test_budget_above_limit);
    RUN(test_file_and_env);
    RUN(test_fault_sweep);
    return tmem_test_finish();
}

/* Every config error names the right line with a precise message, returns
 * the documented status, and leaves the context exactly as it was. */
#include "harness.h"

#include <string.h>

typedef struct bad_case {
    const char *text;
    uint32_t line;
    const char *needle; /* must appear in the message */
} bad_case;

static const bad_case k_cases[] = {
    /* syntax */
    {"budget = 1GiB\n[type /memory/kv]\nplacement = host\n\n\n\nbudjet = 1MiB\n", 7, "unknown key 'budjet' in [type /memory/kv]"},
    {"budget 1GiB\n", 1, "expected 'key = value'"},
    {"\n\n= 5\n", 3, "missing key"},
    {"budget =   # nothing\n", 1, "missing value for 'budget'"},
    {"[type /memory/kv\n", 1, "closing ']'"},
    {"\n[type /memory/kv] budget = 1\n", 2, "text after ']'"},
    {"[pool /memory/kv]\n", 1, "unknown section '[pool /memory/kv]'"},
    {"[type]\n", 1, "[type] needs a name"},
    {"[role]\n", 1, "[role] needs a name"},
    {"[type memory/kv]\n", 1, "bad type name 'memory/kv'"},
    {"[type /memory/]\n", 1, "bad type name"},
    {"[type /memory/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n", 1, "bad type name"},
    {"[role KV]\ntype = /memory/kv\n", 1, "bad role name 'KV'"},
    {"# ok\nfoo = 1\n", 2, "unknown key 'foo' at top level"},
    {"budget = 1GiB\nbudget = 2GiB\n", 2, "duplicate key 'budget' (first set on line 1)"},
    {"[type /memory/a]\n[type /memory/b]\n[type /memory/a]\n", 3, "declared twice (first on line 1)"},
    {"[type /memory/a]\nlifetime = growing\nlifetime = growing\n", 3, "duplicate key 'lifetime'"},
    {"[role kv_cache]\ntype = /memory/kv\n[role kv_cache]\n", 3, "role kv_cache declared twice"},
    {"abc\0def\n", 1, "NUL byte"},
    /* values */
    {"budget = lots\n", 1, "budget 'lots': a size must start with a digit"},
    {"budget = 3 XB\n", 1, "unknown size unit"},
    {"budget = -5MiB\n", 1, "no sign"},
    {"budget = 0x10\n", 1, "no hex"},
    {"budget = 1.5GiB\n", 1, "whole numbers"},
    {"budget = 18446744073709551616\n", 1, "overflows"},
    {"budget = 16777216TiB\n", 1, "overflows"},
    {"budget = -1\n", 1, "start with a digit"},
    {"budget = 0KiB\n", 1, "context budget must be above 0"},
    {"[type /memory/a]\nplacement = gpu\n", 2, "unknown placement 'gpu'"},
    {"[type /memory/a]\nlifetime = forever\n", 2, "unknown lifetime 'forever'"},
    {"[type /memory/a]\nflags = populate,lockd\n", 2, "unknown flag 'lockd'"},
    {"[type /memory/a]\nflags = populate,,locked\n", 2, "unknown flag ''"},
    {"[type /memory/a]\nreserve = 1Q\n", 2, "reserve '1Q'"},
    {"[type /memory/a]\nreclaim_priority = high\n", 2, "reclaim_priority 'high'"},
    {"[type /memory/a]\nreclaim_priority = 2147483648\n", 2, "not a 32-bit integer"},
    {"[type /memory/a]\nreclaim_priority = -2147483649\n", 2, "not a 32-bit integer"},
    {"[role r]\nid = 5\n", 2, "out of range"},
    {"[role r]\nid = 32\n", 2, "out of range"},
    {"[role r]\ntype = kv\n", 2, "bad type name 'kv' in [role r]"},
    {"[role r]\ncolour = red\n", 2, "unknown key 'colour' in [role r]"},
    /* whole-file and context rules */
    {"budget = 1GiB\n[role kv_cache]\n", 2, "[role kv_cache] needs 'type"},
    {"[type /memory/a]\nflags = populate\n", 1, "give it a 'reserve' or 'budget'"},
    {"[type /memory/p]\nplacement = pinned\n", 1, "give it a 'reserve' or 'budget'"},
    {"[role kv_cache]\ntype = /memory/nowhere\n", 2, "unknown type /memory/nowhere"},
    {"[type /memory/a]\n[role mystery]\ntype = /memory/a\n", 2, "unknown role 'mystery'"},
    {"[type /memory/a]\n[role u1]\nid = 20\ntype = /memory/a\n[role u2]\nid = 20\ntype = /memory/a\n", 6,
     "role id 20 already used by [role u1] on line 2"},
    {"[type /memory/a]\n[role u1]\nid = 21\ntype = /memory/a\n", 3, "role id 21 is already role 'predefined'"},
    {"[type /memory/a]\n[role predefined]\nid = 22\ntype = /memory/a\n", 3, "already has id 21"},
    {"[type /memory/kv]\nplacement = file\n", 2, "exists with placement host"},
    {"[type /memory/kv]\nlifetime = transient\n", 2, "exists with lifetime growing"},
    {"[type /memory/kv]\nreclaim_priority = 1234\n", 2, "exists with reclaim_priority"},
    {"[type /memory/kv]\nflags = locked\n", 2, "exists with other flags"},
    {"[type /memory/kv]\nbudget = 1MiB\nreserve = 12345\n", 3, "exists with reserve"},
};

/* What a config could change, to prove a failed load changed nothing. */
typedef struct snapshot {
    uint32_t ntypes;
    uint64_t budget, kv_budget;
    tmem_type *roles[TMEM_ROLE_MAX];
    const char *role_names[TMEM_ROLE_MAX];
} snapshot;

static void snap(tmem_context *ctx, snapshot *s) {
    memset(s, 0, sizeof *s);
    s->ntypes = tmem_type_count(ctx);
    tmem_budget_info b;
    if (tmem_context_budget(ctx, &b) == TMEM_OK) s->budget = b.budget;
    tmem_type *kv;
    tmem_type_info info;
    if (tmem_type_find(ctx, "/memory/kv", &kv) == TMEM_OK && tmem_type_get_info(kv, &info) == TMEM_OK)
        s->kv_budget = info.budget;
    for (int r = 0; r < TMEM_ROLE_MAX; r++) {
        if (tmem_role_get_type(ctx, (tmem_role)r, &s->roles[r]) != TMEM_OK) s->roles[r] = NULL;
        s->role_names[r] = tmem_role_name(ctx, (tmem_role)r);
    }
}

static bool same(const snapshot *a, const snapshot *b) {
    if (a->ntypes != b->ntypes || a->budget != b->budget || a->kv_budget != b->kv_budget) return false;
    for (int r = 0; r < TMEM_ROLE_MAX; r++) {
        if (a->roles[r] != b->roles[r]) return false;
        if ((a->role_names[r] == NULL) != (b->role_names[r] == NULL)) return false;
        if (a->role_names[r] && strcmp(a->role_names[r], b->role_names[r]) != 0) return false;
    }
    return true;
}

static tmem_context *make_ctx(void) {
    tmem_context_desc d = {0};
    d.budget = 1ull << 30;
    tmem_context *ctx = NULL;
    if (tmem_context_create(&d, &ctx) != TMEM_OK) return NULL;
    tmem_type *kv;
    if (tmem_type_find(ctx, "/memory/kv", &kv) != TMEM_OK || tmem_role_define(ctx, (tmem_role)21, "predefined", kv) != TMEM_OK) {
        tmem_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

static size_t case_len(const bad_case *c) {
    /* texts may hold a NUL: measure up to the final newline */
    if (strstr(c->needle, "NUL")) return 8;
    return strlen(c->text);
}

static void test_each_error(void) {
    tmem_context *ctx = make_ctx();
    REQUIRE(ctx);
    /* the fixture assumes the default kv type: host, growing */
    tmem_type *kv;
    tmem_type_info info;
    REQUIRE_OK(tmem_type_find(ctx, "/memory/kv", &kv));
    REQUIRE_OK(tmem_type_get_info(kv, &info));
    REQUIRE(info.placement == TMEM_PLACEMENT_HOST && info.lifetime == TMEM_LIFETIME_GROWING);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        const bad_case *c = &k_cases[i];
        snapshot before, after;
        snap(ctx, &before);
        tmem_config_error err;
        memset(&err, 0x55, sizeof err);
        tmem_status st = tmem_config_load_string(ctx, c->text, case_len(c), &err);
        snap(ctx, &after);
        CHECK_MSG(st == TMEM_E_PARSE, "case %zu: %s", i, tmem_status_name(st));
        CHECK_MSG(err.line == c->line, "case %zu: line %u, want %u (%s)", i, (unsigned)err.line, (unsigned)c->line, err.message);
        CHECK_MSG(memchr(err.message, '\0', sizeof err.message) != NULL, "case %zu: message not terminated", i);
        CHECK_MSG(strstr(err.message, c->needle) != NULL, "case %zu: message '%s' lacks '%s'", i, err.message, c->needle);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "line %u: ", (unsigned)c->line);
        CHECK_MSG(strncmp(err.message, prefix, strlen(prefix)) == 0, "case %zu: message '%s' does not start with '%s'", i,
                  err.message, prefix);
        CHECK_MSG(same(&before, &after), "case %zu changed the context", i);
    }
    tmem_config_error first;
    CHECK_ST(tmem_config_load_string(ctx, k_cases[0].text, strlen(k_cases[0].text), &first), TMEM_E_PARSE);
    printf("   %zu bad configs rejected, e.g. \"%s\"\n", sizeof k_cases / sizeof k_cases[0], first.message);
    tmem_context_destroy(ctx);
}

/* An error late in a file that already declared valid types and budgets
 * must not apply any of them. */
static void test_all_or_nothing(void) {
    tmem_context *ctx = make_ctx();
    REQUIRE(ctx);
    static const char text[] = "budget = 2GiB\n"
                               "[type /memory/new1]\nbudget = 1MiB\n"
                               "[type /memory/kv]\nbudget = 5MiB\n"
                               "[role kv_cache]\ntype = /memory/new1\n"
                               "[type /memory/new2]\nlifetime = sometimes\n";
    snapshot before, after;
    snap(ctx, &before);
    tmem_config_error err;
    CHECK_ST(tmem_config_load_string(ctx, text, sizeof text - 1, &err), TMEM_E_PARSE);
    CHECK(err.line == 9);
    snap(ctx, &after);
    CHECK(same(&before, &after));
    tmem_type *t;
    CHECK_ST(tmem_type_find(ctx, "/memory/new1", &t), TMEM_E_NOT_FOUND);
    tmem_context_destroy(ctx);
}

static void test_too_many_types(void) {
    tmem_context *ctx = make_ctx();
    REQUIRE(ctx);
    uint32_t have = tmem_type_count(ctx);
    char text[8192];
    size_t n = 0;
    for (uint32_t i = 0; i + have <= 64; i++) n += (size_t)snprintf(text + n, sizeof text - n, "[type /memory/t%u]\n", (unsigned)i);
    snapshot before, after;
    snap(ctx, &before);
    tmem_config_error err;
    CHECK_ST(tmem_config_load_string(ctx, text, n, &err), TMEM_E_PARSE);
    CHECK(err.line == 0 && strstr(err.message, "limit of 64") != NULL);
    snap(ctx, &after);
    CHECK(same(&before, &after));
    /* and 65 sections is caught by the parser on its line */
    n = 0;
    for (uint32_t i = 0; i < 65; i++) n += (size_t)snprintf(text + n, sizeof text - n, "[type /memory/u%u]\n", (unsigned)i);
    CHECK_ST(tmem_config_load_string(ctx, text, n, &err), TMEM_E_PARSE);
    CHECK(err.line == 65);
    tmem_context_destroy(ctx);
}

static void test_bad_args_and_limits(void) {
    tmem_context *ctx = make_ctx();
    REQUIRE(ctx);
    tmem_config_error err;
    CHECK_ST(tmem_config_load_string(NULL, "x", 1, &err), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_config_load_string(ctx, NULL, 5, &err), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_config_load_string(ctx, "budget = x", 10, NULL), TMEM_E_PARSE); /* err may be NULL */
    /* a line over 1024 bytes */
    char big[2100];
    memset(big, ' ', sizeof big);
    memcpy(big, "budget = 1\n", 11);
    big[sizeof big - 1] = '\n';
    CHECK_ST(tmem_config_load_string(ctx, big, sizeof big, &err), TMEM_E_PARSE);
    CHECK(err.line == 2 && strstr(err.message, "longer than") != NULL);
    /* non-printable bytes are not echoed raw */
    static const char ctl[] = "[type /memory/a]\n\x01\x02\x1b[31m = 1\n";
    CHECK_ST(tmem_config_load_string(ctx, ctl, sizeof ctl - 1, &err), TMEM_E_PARSE);
    for (const char *p = err.message; *p; p++) CHECK(*p >= ' ' && *p <= '~');
    /* a very long key is cut in the message, which stays terminated */
    char longkey[600];
    memset(longkey, 'k', sizeof longkey);
    memcpy(longkey + 500, " = 1\n", 5);
    CHECK_ST(tmem_config_load_string(ctx, longkey, 505, &err), TMEM_E_PARSE);
    CHECK(strlen(err.message) < sizeof err.message && strstr(err.message, "...") != NULL);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_each_error);
    RUN(test_all_or_nothing);
    RUN(test_too_many_types);
    RUN(test_bad_args_and_limits);
    return tmem_test_finish();
}

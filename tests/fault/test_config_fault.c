/* tmem_config_load is all or nothing. A config creating several types and
 * pools (one populated), changing an existing type's budget, the context
 * budget and builtin and user roles, loaded
 *  - with every OS call failing in turn (once and persistently), and
 *  - with every line in turn made the failing one (a bad value there),
 * must fail cleanly and leave the context's types, budgets, roles and
 * accounting exactly as before; disarmed and intact it must load. */
#include <stdio.h>
#include <string.h>
#include "harness.h"

#define MiB (1ull << 20)

static const char *const k_lines[] = {
    "budget = 900MiB",
    "[type /memory/cfg_pop]",
    "flags = populate",
    "reserve = 1MiB",
    "[type /memory/cfg_a]",
    "lifetime = growing",
    "reserve = 8MiB",
    "budget = 4MiB",
    "[type /memory/cfg_b]",
    "placement = host_shared",
    "reserve = 2MiB",
    "[type /memory/old]",
    "budget = 3MiB",
    "[role kv_cache]",
    "type = /memory/cfg_a",
    "[role draft_kv]",
    "id = 17",
    "type = /memory/cfg_b",
};
#define NLINES (sizeof k_lines / sizeof k_lines[0])

/* The config text, line `bad` (1-based; 0 = none) replaced by a bad one. */
static size_t config_text(char *buf, size_t cap, uint32_t bad) {
    size_t n = 0;
    for (uint32_t i = 0; i < NLINES; i++) {
        const char *l = i + 1 == bad ? (k_lines[i][0] == '[' ? "[type nowhere]" : "reserve = lots") : k_lines[i];
        n += (size_t)snprintf(buf + n, cap - n, "%s\n", l);
    }
    return n;
}

/* Everything a load may change, as the public API reads it. */
typedef struct snapshot {
    uint32_t ntypes;
    char names[16][64];
    uint64_t budget[16], reserve[16], committed[16];
    tmem_type *role_type[TMEM_ROLE_MAX];
    const char *role_name[TMEM_ROLE_MAX];
    uint64_t ctx_budget, ctx_committed;
} snapshot;

static void snap(tmem_context *ctx, snapshot *s) {
    memset(s, 0, sizeof *s);
    s->ntypes = tmem_type_count(ctx);
    for (uint32_t i = 0; i < s->ntypes && i < 16; i++) {
        tmem_type *t;
        tmem_type_info ti;
        tmem_type_stats ts;
        if (tmem_type_at(ctx, i, &t) != TMEM_OK || tmem_type_get_info(t, &ti) != TMEM_OK ||
            tmem_type_get_stats(t, &ts) != TMEM_OK)
            continue;
        memcpy(s->names[i], ti.name, sizeof s->names[i]);
        s->budget[i] = ti.budget;
        s->reserve[i] = ti.reserve;
        s->committed[i] = ts.committed.current;
    }
    for (int r = 1; r < TMEM_ROLE_MAX; r++) {
        if (tmem_role_get_type(ctx, (tmem_role)r, &s->role_type[r]) != TMEM_OK) s->role_type[r] = NULL;
        s->role_name[r] = tmem_role_name(ctx, (tmem_role)r);
    }
    tmem_budget_info b;
    if (tmem_context_budget(ctx, &b) == TMEM_OK) {
        s->ctx_budget = b.budget;
        s->ctx_committed = b.committed;
    }
}

static bool same(const snapshot *a, const snapshot *b) {
    if (a->ntypes != b->ntypes || a->ctx_budget != b->ctx_budget || a->ctx_committed != b->ctx_committed) return false;
    for (uint32_t i = 0; i < a->ntypes && i < 16; i++)
        if (strcmp(a->names[i], b->names[i]) || a->budget[i] != b->budget[i] || a->reserve[i] != b->reserve[i] ||
            a->committed[i] != b->committed[i])
            return false;
    for (int r = 1; r < TMEM_ROLE_MAX; r++) {
        if (a->role_type[r] != b->role_type[r]) return false;
        if ((a->role_name[r] == NULL) != (b->role_name[r] == NULL)) return false;
        if (a->role_name[r] && strcmp(a->role_name[r], b->role_name[r])) return false;
    }
    return true;
}

typedef struct fixture {
    tmem_context *ctx;
    char text[2048];
    size_t len;
    snapshot before;
    tmem_config_error err;
    uint32_t header_lines[4];
    int failures;
} fixture;

static tmem_context *fresh_context(void) {
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {.budget = 512 * MiB};
    if (tmem_context_create(&cd, &ctx) != TMEM_OK) return NULL;
    tmem_type *old;
    tmem_type_desc td = {.name = "/memory/old", .reserve = 4 * MiB, .budget = 1 * MiB};
    if (tmem_type_create(ctx, &td, &old) != TMEM_OK) {
        tmem_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

static tmem_status scen_load(void *user) {
    fixture *f = user;
    return tmem_config_load_string(f->ctx, f->text, f->len, &f->err);
}

static bool check_unchanged(void *user, tmem_status st) {
    fixture *f = user;
    if (st == TMEM_OK) return true;
    snapshot now;
    snap(f->ctx, &now);
    bool line_ok = false; /* an OS refusal names the [type] line that failed */
    for (int i = 0; i < 4; i++) line_ok |= f->err.line == f->header_lines[i];
    if (!line_ok) printf("   failed at line %u: %s\n", (unsigned)f->err.line, f->err.message);
    return same(&f->before, &now) && line_ok && tmem_context_check(f->ctx) == TMEM_OK;
}

/* After a successful load: a fresh context, so the next run starts from the
 * same state (the user role cannot be undefined through the API). */
static void reset(void *user) {
    fixture *f = user;
    tmem_type *t;
    if (tmem_type_find(f->ctx, "/memory/cfg_a", &t) != TMEM_OK) return; /* the load failed: state unchanged */
    tmem_context_destroy(f->ctx);
    f->ctx = fresh_context();
    snap(f->ctx, &f->before);
}

static void test_os_faults(void) {
    fixture f;
    memset(&f, 0, sizeof f);
    REQUIRE((f.ctx = fresh_context()) != NULL);
    f.len = config_text(f.text, sizeof f.text, 0);
    f.header_lines[0] = 2; /* cfg_pop */
    f.header_lines[1] = 5; /* cfg_a */
    f.header_lines[2] = 9; /* cfg_b */
    f.header_lines[3] = 0; /* the context budget (whole-load) */
    snap(f.ctx, &f.before);
    tmem_test_sweep_desc d = {.label = "config_load", .scenario = scen_load, .cleanup = reset,
                              .check = check_unchanged, .user = &f};
    uint64_t n = tmem_test_fault_sweep_ex(&d);
    CHECK_MSG(n >= 3, "%llu OS calls swept; the three pools need at least one each", (unsigned long long)n);
    tmem_context_destroy(f.ctx);
}

/* Each line in turn is the bad one: a clean TMEM_E_PARSE naming it, nothing
 * changed; the intact text then loads and does what it says. */
static void test_each_line(void) {
    for (uint32_t bad = 1; bad <= NLINES; bad++) {
        tmem_context *ctx = fresh_context();
        REQUIRE(ctx);
        char text[2048];
        size_t len = config_text(text, sizeof text, bad);
        snapshot before, after;
        snap(ctx, &before);
        tmem_config_error err;
        CHECK_ST(tmem_config_load_string(ctx, text, len, &err), TMEM_E_PARSE);
        CHECK_MSG(err.line == bad, "bad line %u, error names line %u (%s)", (unsigned)bad, (unsigned)err.line,
                  err.message);
        snap(ctx, &after);
        CHECK_MSG(same(&before, &after), "bad line %u changed the context", (unsigned)bad);
        tmem_context_destroy(ctx);
    }
    tmem_context *ctx = fresh_context();
    REQUIRE(ctx);
    char text[2048];
    size_t len = config_text(text, sizeof text, 0);
    tmem_config_error err;
    REQUIRE_OK(tmem_config_load_string(ctx, text, len, &err));
    tmem_type *a, *b, *kv, *draft, *old;
    REQUIRE_OK(tmem_type_find(ctx, "/memory/cfg_a", &a));
    REQUIRE_OK(tmem_type_find(ctx, "/memory/cfg_b", &b));
    REQUIRE_OK(tmem_type_find(ctx, "/memory/old", &old));
    REQUIRE_OK(tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, &kv));
    REQUIRE_OK(tmem_role_get_type(ctx, (tmem_role)17, &draft));
    CHECK(kv == a && draft == b);
    tmem_type_info ti;
    REQUIRE_OK(tmem_type_get_info(old, &ti));
    CHECK(ti.budget == 3 * MiB);
    tmem_context_destroy(ctx);
}

/* An apply-time refusal after some types exist: the populated type is over
 * the budget the same file sets, so it fails after the context budget
 * changed; everything goes back. */
static void test_apply_refusal(void) {
    tmem_context *ctx = fresh_context();
    REQUIRE(ctx);
    const char *text = "budget = 700MiB\n[type /memory/ok]\nreserve = 4MiB\n[type /memory/ok2]\nreserve = 4MiB\n"
                       "[type /memory/big]\nflags = populate\nreserve = 800MiB\n[role kv_cache]\ntype = /memory/ok\n";
    snapshot before, after;
    snap(ctx, &before);
    tmem_config_error err;
    tmem_status st = tmem_config_load_string(ctx, text, strlen(text), &err);
    CHECK_MSG(st == TMEM_E_BUDGET, "got %s (%s)", tmem_status_name(st), err.message);
    CHECK(err.line == 6);
    snap(ctx, &after);
    CHECK(same(&before, &after));
    tmem_type *t;
    CHECK_ST(tmem_type_find(ctx, "/memory/ok", &t), TMEM_E_NOT_FOUND);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

/* tmem_type_destroy: only a type nothing uses. */
static void test_type_destroy(void) {
    tmem_context *ctx = fresh_context();
    REQUIRE(ctx);
    CHECK_OK(tmem_type_destroy(NULL));
    tmem_type *a, *b, *c;
    REQUIRE_OK(tmem_type_create(ctx, &(tmem_type_desc){.name = "/memory/x", .reserve = 4 * MiB}, &a));
    REQUIRE_OK(tmem_type_create(ctx, &(tmem_type_desc){.name = "/memory/y", .reserve = 4 * MiB}, &b));
    REQUIRE_OK(tmem_type_create(ctx, &(tmem_type_desc){.name = "/memory/z", .reserve = 1 * MiB,
                                                       .flags = TMEM_TYPE_POPULATE}, &c));
    uint32_t n = tmem_type_count(ctx);
    tmem_heap *h;
    REQUIRE_OK(tmem_heap_create(ctx, &(tmem_heap_desc){.type = a, .size = 1 * MiB}, &h));
    CHECK_ST(tmem_type_destroy(a), TMEM_E_STATE); /* a heap over its pool */
    tmem_heap_destroy(h);
    REQUIRE_OK(tmem_role_set_type(ctx, TMEM_ROLE_SCRATCH, b));
    CHECK_ST(tmem_type_destroy(b), TMEM_E_STATE); /* a role maps to it */
    CHECK(tmem_type_count(ctx) == n);
    tmem_budget_info bi0, bi1;
    REQUIRE_OK(tmem_context_budget(ctx, &bi0));
    CHECK_OK(tmem_type_destroy(a)); /* in the middle: the later ones move down */
    CHECK(tmem_type_count(ctx) == n - 1);
    tmem_type *at;
    tmem_type_info ti;
    REQUIRE_OK(tmem_type_at(ctx, n - 2, &at));
    REQUIRE_OK(tmem_type_get_info(at, &ti));
    CHECK(at == b || at == c);
    CHECK(ti.index == n - 2);
    CHECK_ST(tmem_type_find(ctx, "/memory/x", &at), TMEM_E_NOT_FOUND);
    CHECK_OK(tmem_type_destroy(c)); /* populated: its charge goes back */
    REQUIRE_OK(tmem_context_budget(ctx, &bi1));
    CHECK(bi1.committed + 1 * MiB == bi0.committed);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_type_destroy);
    RUN(test_each_line);
    RUN(test_apply_refusal);
    RUN(test_os_faults); /* the sweep runs each fault once and persistently */
    return tmem_test_finish();
}

/* Stats: JSON well-formed, valid against docs/stats.schema.json, and equal to
 * the counters; the table; buffer contract; per-role accounting. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "core/core.h"
#include "json_mini.h"

#define MiB (1ull << 20)

static char *stats_json(tmem_context *ctx, size_t *len) {
    size_t need = 0;
    if (tmem_stats_json(ctx, NULL, 0, &need) != TMEM_OK || need < 2) return NULL;
    char *buf = malloc(need);
    size_t need2 = 0;
    if (tmem_stats_json(ctx, buf, need, &need2) != TMEM_OK || need2 != need) {
        free(buf);
        return NULL;
    }
    *len = need - 1;
    return buf;
}

static jv *load_schema(void) {
    const char *src = getenv("TMEM_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/stats.schema.json", src ? src : ".");
    size_t n;
    char *text = read_file_all(path, &n);
    if (!text) return NULL;
    jv *s = json_parse(text, n);
    free(text);
    return s;
}

static const jv *find_by_name(const jv *arr, const char *name) {
    for (size_t i = 0; arr && i < arr->n; i++) {
        const jv *nm = jv_get(arr->items[i], "name");
        if (nm && nm->kind == JV_STR && !strcmp(nm->str, name)) return arr->items[i];
    }
    return NULL;
}

static void check_stat(const jv *o, const char *key, tmem_stat want) {
    const jv *s = jv_get(o, key);
    CHECK(s != NULL);
    CHECK(jv_num(jv_get(s, "current")) == (double)want.current);
    CHECK(jv_num(jv_get(s, "peak")) == (double)want.peak);
    CHECK(jv_num(jv_get(s, "total")) == (double)want.total);
}

static void test_json_matches_counters(void) {
    jv *schema = load_schema();
    REQUIRE(schema);
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 64 * MiB;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *kv, *act, *w;
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_KV_CACHE, &kv));
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_ACTIVATION, &act));
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_WEIGHTS, &w));
    CHECK_OK(tmem_type_set_budget(act, 8 * MiB));
    CHECK_OK(tmem__pool_commit(kv, 0, 3 * MiB));
    CHECK_OK(tmem__pool_commit(act, 0, 5 * MiB));
    tmem__pool_decommit(act, 0, 2 * MiB);
    CHECK_ST(tmem__pool_commit(act, 8 * MiB, 6 * MiB), TMEM_E_BUDGET);
    CHECK_OK(tmem__type_charge(w, 10 * MiB, true));
    /* What heaps report for live allocations. */
    tmem__account_alloc(kv, TMEM_ROLE_KV_CACHE, 1000);
    tmem__account_alloc(kv, TMEM_ROLE_KV_CACHE, 2000);
    tmem__account_alloc(act, TMEM_ROLE_ACTIVATION, 4096);
    tmem__account_alloc(act, TMEM_ROLE_SCRATCH, 512); /* a role outside its default type */
    tmem__account_alloc(act, -1, 64);                  /* no role */
    tmem__account_free(kv, TMEM_ROLE_KV_CACHE, 1000);
    CHECK_OK(tmem_role_define(ctx, (tmem_role)TMEM_ROLE_USER_FIRST, "lo\"ra\\x", NULL));

    size_t len;
    char *text = stats_json(ctx, &len);
    REQUIRE(text);
    CHECK(strlen(text) == len);
    jv *doc = json_parse(text, len);
    CHECK_MSG(doc != NULL, "malformed JSON: %.200s", text);
    if (!doc) {
        free(text);
        jv_free(schema);
        tmem_context_destroy(ctx);
        return;
    }
    char why[256] = "";
    CHECK_MSG(json_validate(doc, schema, schema, "$", why, sizeof why), "schema: %s", why);
    CHECK(jv_num(jv_get(doc, "version")) == 1);

    const jv *c = jv_get(doc, "context");
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(jv_num(jv_get(c, "budget")) == (double)bi.budget);
    CHECK(jv_num(jv_get(jv_get(c, "committed"), "current")) == (double)bi.committed);
    CHECK(bi.committed == 16 * MiB);
    CHECK(jv_num(jv_get(c, "available")) == (double)bi.available);
    CHECK(jv_num(jv_get(c, "budget_denials")) == 1);
    CHECK(jv_num(jv_get(c, "clean")) == 10 * MiB && jv_num(jv_get(c, "dirty")) == 6 * MiB);

    const jv *types = jv_get(doc, "types");
    CHECK(types && types->n == tmem_type_count(ctx));
    for (uint32_t i = 0; i < tmem_type_count(ctx); i++) {
        tmem_type *t;
        tmem_type_info ti;
        tmem_type_stats s;
        CHECK_OK(tmem_type_at(ctx, i, &t));
        CHECK_OK(tmem_type_get_info(t, &ti));
        CHECK_OK(tmem_type_get_stats(t, &s));
        const jv *o = find_by_name(types, ti.name);
        REQUIRE(o);
        CHECK(jv_num(jv_get(o, "index")) == ti.index);
        CHECK(jv_num(jv_get(o, "reserved")) == (double)s.reserved);
        check_stat(o, "committed", s.committed);
        check_stat(o, "in_use", s.in_use);
        CHECK(jv_num(jv_get(o, "alloc_count")) == (double)s.alloc_count);
        CHECK(jv_num(jv_get(o, "live_count")) == (double)s.live_count);
        CHECK(jv_num(jv_get(o, "dirty")) == (double)s.dirty);
        CHECK(jv_num(jv_get(o, "clean")) == (double)s.clean);
        CHECK(jv_num(jv_get(o, "budget_denials")) == (double)s.budget_denials);
        if (ti.budget) CHECK(jv_num(jv_get(o, "budget")) == (double)ti.budget);
        else CHECK(jv_get(o, "budget") && jv_get(o, "budget")->kind == JV_NULL);
    }
    const jv *ao = find_by_name(types, "/memory/activations");
    tmem_type_stats as;
    CHECK_OK(tmem_type_get_stats(act, &as));
    CHECK(as.committed.current == 3 * MiB && as.committed.peak == 5 * MiB && as.committed.total == 5 * MiB);
    CHECK(as.in_use.current == 4096 + 512 + 64 && as.live_count == 3 && as.budget_denials == 1);
    CHECK(jv_num(jv_get(ao, "budget")) == 8 * MiB);

    const jv *roles = jv_get(doc, "roles");
    CHECK(roles && roles->n == TMEM_ROLE_BUILTIN_COUNT + 1);
    const jv *kvr = find_by_name(roles, "kv_cache");
    REQUIRE(kvr);
    CHECK(!strcmp(jv_get(kvr, "type")->str, "/memory/kv"));
    check_stat(kvr, "in_use", (tmem_stat){2000, 3000, 3000});
    CHECK(jv_num(jv_get(kvr, "live_count")) == 1 && jv_num(jv_get(kvr, "alloc_count")) == 2);
    check_stat(kvr, "device_in_use", (tmem_stat){0, 0, 0}); /* host types only here */
    CHECK(jv_num(jv_get(kvr, "device_live_count")) == 0);
    const jv *sr = find_by_name(roles, "scratch");
    CHECK(sr && jv_num(jv_get(jv_get(sr, "in_use"), "current")) == 512);
    const jv *ur = NULL;
    for (size_t i = 0; i < roles->n; i++)
        if (jv_num(jv_get(roles->items[i], "role")) == TMEM_ROLE_USER_FIRST) ur = roles->items[i];
    CHECK(ur && jv_get(ur, "type")->kind == JV_NULL);
    CHECK(jv_get(doc, "heaps") && jv_get(doc, "heaps")->kind == JV_ARR);
    jv_free(doc);
    free(text);

    /* The schema check is not vacuous: a broken document fails it. */
    const char *bad = "{\"schema\":\"typedmem-stats\",\"version\":2,\"library\":\"x\",\"context\":{"
                      "},\"types\":[],\"roles\":[],\"heaps\":[]}";
    jv *bd = json_parse(bad, strlen(bad));
    CHECK(bd && !json_validate(bd, schema, schema, "$", why, sizeof why));
    jv_free(bd);
    jv_free(schema);
    tmem_context_destroy(ctx);
}

static void test_buffer_contract(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 16 * MiB;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    size_t need = 0, need2 = 0;
    CHECK_OK(tmem_stats_json(ctx, NULL, 0, &need));
    CHECK(need > 100);
    char small[32];
    CHECK_ST(tmem_stats_json(ctx, small, sizeof small, &need2), TMEM_E_FULL);
    CHECK(need2 == need && strlen(small) == sizeof small - 1 && !strncmp(small, "{\"schema\"", 9));
    CHECK_ST(tmem_stats_json(ctx, NULL, 10, &need2), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_stats_json(NULL, small, sizeof small, &need2), TMEM_E_INVALID_ARG);
    char *buf = malloc(need);
    CHECK_OK(tmem_stats_json(ctx, buf, need, NULL));
    CHECK(strlen(buf) == need - 1);
    free(buf);
    /* Table: same contract, one row per type and per role. */
    CHECK_OK(tmem_stats_table(ctx, NULL, 0, &need));
    buf = malloc(need);
    CHECK_OK(tmem_stats_table(ctx, buf, need, NULL));
    CHECK(strstr(buf, "/memory/weights") && strstr(buf, "/memory/tokens") && strstr(buf, "kv_cache") && strstr(buf, "budget 16.0M"));
    CHECK_ST(tmem_stats_table(ctx, small, sizeof small, NULL), TMEM_E_FULL);
    CHECK(strlen(small) == sizeof small - 1);
    free(buf);
    tmem_context_destroy(ctx);
}

static void test_role_stats_and_check(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 16 * MiB;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type *t;
    CHECK_OK(tmem_role_get_type(ctx, TMEM_ROLE_IMAGE, &t));
    tmem_role_stats rs;
    for (int i = 0; i < 10; i++) tmem__account_alloc(t, TMEM_ROLE_IMAGE, 100);
    for (int i = 0; i < 4; i++) tmem__account_free(t, TMEM_ROLE_IMAGE, 100);
    CHECK_OK(tmem_role_get_stats(ctx, TMEM_ROLE_IMAGE, &rs));
    CHECK(rs.in_use.current == 600 && rs.in_use.peak == 1000 && rs.in_use.total == 1000 &&
          rs.alloc_count == 10 && rs.live_count == 6);
    CHECK_ST(tmem_role_get_stats(ctx, (tmem_role)TMEM_ROLE_MAX, &rs), TMEM_E_INVALID_ARG);
    CHECK_OK(tmem_context_check(ctx));
    /* Corrupt a counter: the walk notices. */
    t->committed += 4096;
    t->ctx->committed += 4096;
    CHECK_ST(tmem_context_check(ctx), TMEM_E_CORRUPT);
    t->committed -= 4096;
    t->ctx->committed -= 4096;
    CHECK_OK(tmem_context_check(ctx));
    /* Role bytes exceeding their types' bytes are caught too. */
    atomic_fetch_add(&ctx->roles[TMEM_ROLE_IMAGE].bytes_in, 1u << 30);
    CHECK_ST(tmem_context_check(ctx), TMEM_E_CORRUPT);
    atomic_fetch_add(&ctx->roles[TMEM_ROLE_IMAGE].bytes_out, 1u << 30);
    /* So is a role's device part exceeding the role (and the device types). */
    atomic_fetch_add(&ctx->roles_device[TMEM_ROLE_IMAGE].bytes_in, 1u << 20);
    CHECK_ST(tmem_context_check(ctx), TMEM_E_CORRUPT);
    atomic_fetch_add(&ctx->roles_device[TMEM_ROLE_IMAGE].bytes_out, 1u << 20);
    CHECK_OK(tmem_context_check(ctx));
    for (int i = 0; i < 6; i++) tmem__account_free(t, TMEM_ROLE_IMAGE, 100);
    CHECK_OK(tmem_context_check(ctx));
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_json_matches_counters);
    RUN(test_buffer_contract);
    RUN(test_role_stats_and_check);
    return tmem_test_finish();
}

/* Fault sweep over a core scenario that makes every OS call the core uses:
 * reserve (types), commit with populate, mlock, commit/decommit, advise,
 * residency, pressure, and release at destroy. Each injected failure must end
 * in a clean error with the context consistent and nothing leaked. */
#include <errno.h>
#include <string.h>
#include "harness.h"
#include "core/core.h"
#include "os/os.h"

#define MiB (1ull << 20)

typedef struct scen {
    tmem_context *ctx;
} scen;

static tmem_status scenario(void *u) {
    scen *s = u;
    tmem_context_desc cd = {0};
    cd.budget = 64 * MiB;
    tmem_status st = tmem_context_create(&cd, &s->ctx);
    if (st != TMEM_OK) return st;
    tmem_type_desc td = {0};
    tmem_type *pop, *lk, *kv;
    td.name = "/memory/pop";
    td.flags = TMEM_TYPE_POPULATE;
    td.reserve = 256 << 10;
    if ((st = tmem_type_create(s->ctx, &td, &pop)) != TMEM_OK) return st;
    td.name = "/memory/locked";
    td.flags = TMEM_TYPE_LOCKED;
    td.reserve = 64 << 10;
    if ((st = tmem_type_create(s->ctx, &td, &lk)) != TMEM_OK) return st;
    if ((st = tmem__pool_commit(lk, 0, 16 << 10)) != TMEM_OK) return st;
    if ((st = tmem_role_get_type(s->ctx, TMEM_ROLE_KV_CACHE, &kv)) != TMEM_OK) return st;
    if ((st = tmem__pool_commit(kv, 0, 1 * MiB)) != TMEM_OK) return st;
    memset(tmem__pool_ptr(kv, 0), 0x5a, 1 * MiB);
    tmem__pool_decommit(kv, 256 << 10, 256 << 10);
    if ((st = tmem__pool_commit(kv, 0, 2 * MiB)) != TMEM_OK) return st;
    if ((st = tmem__pool_advise(kv, 0, 128 << 10, TMEM__ADVICE_EMPTY)) != TMEM_OK) return st;
    if ((st = tmem__pool_advise(kv, 128 << 10, 128 << 10, TMEM__ADVICE_VOLATILE)) != TMEM_OK) return st;
    uint64_t res;
    if ((st = tmem__pool_residency(kv, 0, 2 * MiB, &res)) != TMEM_OK) return st;
    if ((st = tmem__type_charge(kv, 64 << 10, false)) != TMEM_OK) return st;
    tmem__type_uncharge(kv, 64 << 10, false);
    tmem_pressure lvl;
    st = tmem_context_poll_os_pressure(s->ctx, &lvl);
    if (st != TMEM_OK && st != TMEM_E_UNSUPPORTED) return st;
    return tmem_context_check(s->ctx);
}

/* After any failure the context that exists is consistent, and the budget
 * equals what its pools hold. */
static bool check(void *u, tmem_status st) {
    (void)st;
    scen *s = u;
    if (!s->ctx) return true;
    if (tmem_context_check(s->ctx) != TMEM_OK) return false;
    tmem_budget_info bi;
    if (tmem_context_budget(s->ctx, &bi) != TMEM_OK || bi.committed > bi.budget) return false;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < tmem_type_count(s->ctx); i++) {
        tmem_type *t;
        if (tmem_type_at(s->ctx, i, &t) != TMEM_OK) return false;
        sum += tmem__pool_committed_bytes(t);
    }
    return sum == bi.committed;
}

static void cleanup(void *u) {
    scen *s = u;
    tmem_context_destroy(s->ctx);
    s->ctx = NULL;
}

static void test_sweep(void) {
    scen s = {0};
    tmem_test_sweep_desc d = {0};
    d.label = "core";
    d.scenario = scenario;
    d.cleanup = cleanup;
    d.check = check;
    d.user = &s;
    uint64_t n = tmem_test_fault_sweep_ex(&d);
    printf("swept %llu OS calls\n", (unsigned long long)n);
    CHECK(n >= 12); /* 10 reserves, populate, lock, commits, advice, residency, pressure */
    /* Same sweep with EPERM: mlock refusals must read as PERMISSION, others
     * as clean errors too. */
    d.err = EPERM;
    CHECK(tmem_test_fault_sweep_ex(&d) == n);
}

/* Limits discovery is best effort (fenced benign): with every OS call
 * failing, a context without default types is still created, and gets a
 * budget (the discovered one, or none). */
static void test_discovery_is_benign(void) {
    tmem__os_fault_arm(TMEM__OS_ANY, 0, true, ENOMEM);
    tmem_context *ctx = NULL;
    tmem_context_desc cd = {0};
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    tmem_status st = tmem_context_create(&cd, &ctx);
    bool fired = tmem__os_fault_fired();
    tmem__os_fault_disarm();
    CHECK_OK(st);
    CHECK(!fired);
    tmem_budget_info bi;
    CHECK_OK(tmem_context_budget(ctx, &bi));
    CHECK(bi.budget > 0);
    /* With defaults, the reserves fail cleanly. */
    tmem_context_destroy(ctx);
    tmem__os_fault_arm(TMEM__OS_ANY, 0, true, ENOMEM);
    ctx = (tmem_context *)1;
    cd.flags = 0;
    st = tmem_context_create(&cd, &ctx);
    tmem__os_fault_disarm();
    CHECK_ST(st, TMEM_E_NO_MEMORY);
    CHECK(ctx == NULL);
}

/* A decommit the OS refuses leaves the pages committed and charged. */
static void test_decommit_failure(void) {
    tmem_context *ctx;
    tmem_context_desc cd = {0};
    cd.budget = 16 * MiB;
    cd.flags = TMEM_CONTEXT_NO_DEFAULT_TYPES;
    REQUIRE_OK(tmem_context_create(&cd, &ctx));
    tmem_type_desc td = {0};
    td.name = "/memory/d";
    td.reserve = 4 * MiB;
    tmem_type *t;
    REQUIRE_OK(tmem_type_create(ctx, &td, &t));
    REQUIRE_OK(tmem__pool_commit(t, 0, 1 * MiB));
    tmem__os_fault_arm(TMEM__OS_DECOMMIT, 0, true, EINVAL);
    tmem__pool_decommit(t, 0, 1 * MiB);
    bool fired = tmem__os_fault_fired();
    tmem__os_fault_disarm();
    CHECK(fired);
    tmem_type_stats s;
    CHECK_OK(tmem_type_get_stats(t, &s));
    CHECK(s.committed.current == 1 * MiB);
    CHECK_OK(tmem_context_check(ctx));
    tmem__pool_decommit(t, 0, 1 * MiB);
    CHECK_OK(tmem_type_get_stats(t, &s));
    CHECK(s.committed.current == 0);
    tmem_context_destroy(ctx);
}

int main(void) {
    RUN(test_decommit_failure);
    RUN(test_sweep);
    RUN(test_discovery_is_benign);
    return tmem_test_finish();
}

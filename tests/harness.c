#include "harness.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "os/os.h"

int tmem_test_failures;
int tmem_test_checks;

void tmem_test_fail(const char *file, int line, const char *expr, const char *detail) {
    tmem_test_failures++;
    fprintf(stderr, "FAIL %s:%d: %s%s%s\n", file, line, expr, detail ? " -- " : "", detail ? detail : "");
}

static const char *skipped_part;

void tmem_test_skip_part(const char *why) {
    printf("SKIP part: %s\n", why);
    if (!skipped_part) skipped_part = why;
}

int tmem_test_finish(void) {
    int passed = tmem_test_checks - tmem_test_failures;
    printf("%d passed, %d failed\n", passed, tmem_test_failures);
    if (tmem_test_failures) return 1;
    if (skipped_part) {
        printf("SKIP: %s (the rest passed)\n", skipped_part);
        return TMEM_TEST_SKIP;
    }
    return 0;
}

void tmem_test_skip(const char *why) {
    /* A failure already seen outranks the skip: report it. */
    if (tmem_test_failures) exit(tmem_test_finish());
    printf("SKIP: %s\n", why);
    fflush(stdout);
    exit(TMEM_TEST_SKIP);
}

uint64_t tmem_test_seed(uint64_t fallback) {
    const char *e = getenv("TMEM_SEED");
    uint64_t seed = e && *e ? strtoull(e, NULL, 0) : fallback;
    printf("seed %llu (replay with TMEM_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    return seed;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void tmem_rng_init(tmem_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tmem_rng_next(tmem_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return result;
}

uint64_t tmem_rng_range(tmem_rng *r, uint64_t lo, uint64_t hi) {
    if (hi <= lo) return lo;
    uint64_t span = hi - lo + 1;
    return span ? lo + tmem_rng_next(r) % span : tmem_rng_next(r);
}

bool tmem_test_shared_path(const char *rel, char *buf, size_t cap) {
    const char *dir = getenv("TMEM_SHARED_DIR");
    if (!dir) dir = "../shared";
    int n = snprintf(buf, cap, "%s/%s", dir, rel);
    return n > 0 && (size_t)n < cap && access(buf, R_OK) == 0;
}

bool tmem_test_tmpdir(char *buf, size_t cap) {
    const char *base = getenv("TMPDIR");
    int n = snprintf(buf, cap, "%s/tmemtestXXXXXX", base && *base ? base : "/tmp");
    return n > 0 && (size_t)n < cap && mkdtemp(buf) != NULL;
}

/* ---- fault sweep (see harness.h) ---- */

static bool sweep_leak_free(const char *label, const char *phase, uint64_t i, int64_t maps0, int64_t fds0) {
    int64_t maps = tmem__os_live_mappings(), fds = tmem__os_live_fds();
    CHECK_MSG(maps == maps0 && fds == fds0, "%s: %s call %llu: live mappings %lld (baseline %lld), fds %lld (baseline %lld)",
              label, phase, (unsigned long long)i, (long long)maps, (long long)maps0, (long long)fds, (long long)fds0);
    return maps == maps0 && fds == fds0;
}

static tmem_status sweep_run_disarmed(tmem_test_sweep_desc *d, uint64_t *calls) {
    tmem__os_fault_disarm();
    tmem__os_fault_reset_count();
    tmem_status st = d->scenario(d->user);
    *calls = tmem__os_fault_calls();
    return st;
}

uint64_t tmem_test_fault_sweep_ex(tmem_test_sweep_desc *d) {
    const char *label = d->label ? d->label : "sweep";
    int err = d->err ? d->err : ENOMEM;
    int64_t maps0 = tmem__os_live_mappings(), fds0 = tmem__os_live_fds();
    d->recovered = 0;
    d->calls = 0;

    uint64_t n = 0;
    tmem_status st = sweep_run_disarmed(d, &n);
    CHECK_MSG(st == TMEM_OK, "%s: disarmed run failed with %s", label, tmem_status_name(st));
    if (d->check) CHECK_MSG(d->check(d->user, st), "%s: check failed after the disarmed run", label);
    if (d->cleanup) d->cleanup(d->user);
    if (st != TMEM_OK || !sweep_leak_free(label, "disarmed", 0, maps0, fds0)) return 0;
    CHECK_MSG(n > 0, "%s: the scenario made no injectable OS call", label);
    d->calls = n;

    for (int mode = 0; mode < 2; mode++) {
        bool persistent = mode == 1;
        const char *phase = persistent ? "persistent" : "once";
        for (uint64_t i = 0; i < n; i++) {
            tmem__os_fault_reset_count();
            tmem__os_fault_arm(TMEM__OS_ANY, i, persistent, err);
            st = d->scenario(d->user);
            bool fired = tmem__os_fault_fired();
            tmem__os_fault_disarm();
            if (d->verbose)
                printf("   %s %s fault at call %llu/%llu -> %s%s\n", label, phase, (unsigned long long)i,
                       (unsigned long long)n, tmem_status_name(st), fired ? "" : " (not fired)");
            CHECK_MSG(fired, "%s: %s fault at call %llu never fired (scenario made fewer calls than the disarmed run: not deterministic?)",
                      label, phase, (unsigned long long)i);
            CHECK_MSG(strcmp(tmem_status_name(st), "TMEM_E_UNKNOWN") != 0, "%s: %s fault at call %llu: status %d is not a tmem_status",
                      label, phase, (unsigned long long)i, (int)st);
            if (st == TMEM_OK && fired) {
                if (d->allow_recovery) d->recovered++;
                else CHECK_MSG(st != TMEM_OK, "%s: %s fault at call %llu was swallowed: scenario returned TMEM_OK (fence tolerated calls as benign)",
                               label, phase, (unsigned long long)i);
            }
            if (d->check) CHECK_MSG(d->check(d->user, st), "%s: %s fault at call %llu: check failed after %s", label, phase,
                                    (unsigned long long)i, tmem_status_name(st));
            if (d->cleanup) d->cleanup(d->user);
            (void)sweep_leak_free(label, phase, i, maps0, fds0);
        }
    }

    uint64_t again = 0;
    st = sweep_run_disarmed(d, &again);
    CHECK_MSG(st == TMEM_OK, "%s: run after the sweep failed with %s", label, tmem_status_name(st));
    if (d->check) CHECK_MSG(d->check(d->user, st), "%s: check failed after the final run", label);
    if (d->cleanup) d->cleanup(d->user);
    (void)sweep_leak_free(label, "final", again, maps0, fds0);
    printf("   sweep %s: %llu OS calls x 2 modes, %llu recovered\n", label, (unsigned long long)n,
           (unsigned long long)d->recovered);
    return n;
}

uint64_t tmem_test_fault_sweep(const char *label, tmem_status (*scenario)(void *user), void (*cleanup)(void *user), void *user) {
    tmem_test_sweep_desc d = {0};
    d.label = label;
    d.scenario = scenario;
    d.cleanup = cleanup;
    d.user = user;
    return tmem_test_fault_sweep_ex(&d);
}

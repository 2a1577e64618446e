#include "harness.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tmem_test_failures;
int tmem_test_checks;

void tmem_test_fail(const char *file, int line, const char *expr, const char *detail) {
    tmem_test_failures++;
    fprintf(stderr, "FAIL %s:%d: %s%s%s\n", file, line, expr, detail ? " -- " : "", detail ? detail : "");
}

int tmem_test_finish(void) {
    int passed = tmem_test_checks - tmem_test_failures;
    printf("%d passed, %d failed\n", passed, tmem_test_failures);
    return tmem_test_failures ? 1 : 0;
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

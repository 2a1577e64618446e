/*
 * Minimal test harness: CHECK macros that count and report, a fixed-seed RNG
 * whose seed is printed (TMEM_SEED replays), and helpers to find shared data.
 * Each test file is one process; main() calls the cases and returns
 * tmem_test_finish().
 */
#ifndef TMEM_TEST_HARNESS_H
#define TMEM_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include "typedmem/typedmem.h"

extern int tmem_test_failures;
extern int tmem_test_checks;

void tmem_test_fail(const char *file, int line, const char *expr, const char *detail);

#define CHECK(cond) do { tmem_test_checks++; if (!(cond)) tmem_test_fail(__FILE__, __LINE__, #cond, NULL); } while (0)
#define CHECK_MSG(cond, ...) do { tmem_test_checks++; if (!(cond)) { char m_[256]; snprintf(m_, sizeof m_, __VA_ARGS__); tmem_test_fail(__FILE__, __LINE__, #cond, m_); } } while (0)
/* Expect a status. */
#define CHECK_ST(expr, want) do { tmem_status s_ = (expr); tmem_test_checks++; if (s_ != (want)) { char m_[160]; snprintf(m_, sizeof m_, "got %s, want %s", tmem_status_name(s_), tmem_status_name(want)); tmem_test_fail(__FILE__, __LINE__, #expr, m_); } } while (0)
#define CHECK_OK(expr) CHECK_ST(expr, TMEM_OK)
/* Fatal variant: stop the test case (return from the function). */
#define REQUIRE(cond) do { tmem_test_checks++; if (!(cond)) { tmem_test_fail(__FILE__, __LINE__, #cond, "required"); return; } } while (0)
#define REQUIRE_OK(expr) do { tmem_status s_ = (expr); tmem_test_checks++; if (s_ != TMEM_OK) { tmem_test_fail(__FILE__, __LINE__, #expr, tmem_status_name(s_)); return; } } while (0)

/* Run a case: prints its name. */
#define RUN(fn) do { printf("-- %s\n", #fn); fflush(stdout); fn(); } while (0)

/* Print "N passed, N failed" and return the exit code. */
int tmem_test_finish(void);

/* Seeded RNG (splitmix64 seeding xoshiro256**). tmem_test_seed() returns
 * TMEM_SEED from the environment or `fallback`, and prints it. */
typedef struct tmem_rng { uint64_t s[4]; } tmem_rng;
uint64_t tmem_test_seed(uint64_t fallback);
void tmem_rng_init(tmem_rng *r, uint64_t seed);
uint64_t tmem_rng_next(tmem_rng *r);
/* Uniform in [lo, hi]. */
uint64_t tmem_rng_range(tmem_rng *r, uint64_t lo, uint64_t hi);

/* Path of a file in ../shared (TMEM_SHARED_DIR) into buf; false if absent. */
bool tmem_test_shared_path(const char *rel, char *buf, size_t cap);
/* A fresh temporary directory for this test (removed by the caller). */
bool tmem_test_tmpdir(char *buf, size_t cap);

#endif

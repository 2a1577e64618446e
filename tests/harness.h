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
#define CHECK_MSG(cond, ...) do { tmem_test_checks++; if (!(cond)) { char m_[1024]; snprintf(m_, sizeof m_, __VA_ARGS__); tmem_test_fail(__FILE__, __LINE__, #cond, m_); } } while (0)
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

/* Exit code CTest reads as "skipped" (SKIP_RETURN_CODE of every test). */
#define TMEM_TEST_SKIP 77
/* The test cannot run here (data or a tool absent): print why, exit 77 so
 * CTest reports a skip, never a silent pass. Failures seen before win. */
void tmem_test_skip(const char *why);
/* One case cannot run here: the others go on, and tmem_test_finish() then
 * reports the test as skipped (77) unless something failed. */
void tmem_test_skip_part(const char *why);

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


/* ---- OS fault-injection sweep (SQLite's OOM loop) ----
 *
 * Usage:
 *   typedef struct { tmem_context *ctx; } my_state;
 *   static tmem_status scenario(void *u) {      // the operation under test
 *       my_state *s = u;                          // keep what it creates in *u
 *       return tmem_context_create(&desc, &s->ctx);
 *   }
 *   static void cleanup(void *u) {              // undo it, success or not
 *       my_state *s = u; tmem_context_destroy(s->ctx); s->ctx = NULL;
 *   }
 *   my_state s = {0};
 *   CHECK(tmem_test_fault_sweep("context_create", scenario, cleanup, &s) > 0);
 *
 * What it does:
 *  1. records tmem__os_live_mappings()/tmem__os_live_fds() as the baseline;
 *  2. runs the scenario disarmed: it must return TMEM_OK; n = the number of
 *     injectable OS calls it made (tmem__os_fault_calls());
 *  3. for mode in {once, persistent}, for i in 0..n-1: arms TMEM__OS_ANY with
 *     countdown i and errno ENOMEM, runs the scenario, and requires
 *       - the fault fired (else the scenario is not deterministic),
 *       - a clean error: a status from TMEM_STATUS_LIST other than TMEM_OK,
 *       - desc.check(user, status) true when given (state unchanged, the
 *         tmem_context_check() walk passes, ...),
 *     then disarms, runs cleanup and requires the live mapping/fd counts to be
 *     back at the baseline (LeakSanitizer covers heap leaks at exit);
 *  4. runs the scenario disarmed once more: TMEM_OK again, then cleanup.
 *
 * "Clean error or OK only when tolerated": a call whose failure the code
 * legitimately survives (a hint such as WILLNEED or THP advice, an optional
 * probe) must be fenced with tmem__os_benign_begin()/end() in the library;
 * fenced calls are neither counted nor failed, so a sweep never sees them.
 * Any other fault that ends in TMEM_OK is reported as swallowed — unless the
 * sweep sets allow_recovery (the code has a real fallback, e.g. huge pages ->
 * normal pages), in which case TMEM_OK is accepted, counted in `recovered`
 * and check() must still pass. Teardown calls (release, unmap, close,
 * decommit, unlock) are never failed by a TMEM__OS_ANY arm (see
 * src/os/os_fault.c), so rollbacks can always run.
 *
 * Faults are per thread: OS calls the scenario makes on other threads are not
 * counted or failed. Returns n (the calls swept); failures are reported
 * through CHECK like any other check. */
typedef struct tmem_test_sweep_desc {
    const char *label;
    tmem_status (*scenario)(void *user);
    void (*cleanup)(void *user);              /* may be NULL */
    bool (*check)(void *user, tmem_status st); /* may be NULL; runs before cleanup */
    void *user;
    int err;                 /* errno to inject; 0 = ENOMEM */
    bool allow_recovery;     /* accept TMEM_OK after a fired fault */
    bool verbose;            /* print one line per run */
    uint64_t recovered;      /* out: runs that ended in TMEM_OK after a fault */
    uint64_t calls;          /* out: n */
} tmem_test_sweep_desc;

uint64_t tmem_test_fault_sweep(const char *label, tmem_status (*scenario)(void *user), void (*cleanup)(void *user), void *user);
uint64_t tmem_test_fault_sweep_ex(tmem_test_sweep_desc *desc);

#endif

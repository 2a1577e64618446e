/* Peak analysis: "what was alive at the peak", on a hand-made trace whose
 * answer follows from its definition, on the fixture session, and on random
 * alloc/free sequences against a brute-force replay. */
#include <stdlib.h>
#include <string.h>
#include "trace_fixture.h"

static void test_small(void) {
    fx_builder b = {NULL, 0, true};
    REQUIRE_OK(tmem__trace_data_new(&b.d));
    tmem__trace_data_set_type(b.d, 0, "/memory/a", 0);
    tmem__trace_data_set_type(b.d, 1, "/memory/b", 0);
    tmem__trace_data_set_role(b.d, TMEM_ROLE_ACTIVATION, "activation");
    fx_ev(&b, TMEM_TRACE_ALLOC, 0, TMEM_ROLE_ACTIVATION, 100, 0, "x");    /* 100 */
    fx_ev(&b, TMEM_TRACE_ALLOC, 1, TMEM_ROLE_WEIGHTS, 200, 0, "w");       /* 300: same offset, other type */
    fx_ev(&b, TMEM_TRACE_ALLOC, 0, TMEM_ROLE_ACTIVATION, 30, 128, "x");   /* 330 <- peak */
    fx_ev(&b, TMEM_TRACE_FREE, 0, TMEM_ROLE_SCRATCH, 999, 0, "x");        /* frees 100 (the ALLOC's size and role) */
    fx_ev(&b, TMEM_TRACE_ALLOC, 0, TMEM_ROLE_ACTIVATION, 120, 0, "y");    /* 350 <- new peak */
    fx_ev(&b, TMEM_TRACE_FREE, 0, -1, 5, 4096, "never allocated");        /* unmatched */
    fx_ev(&b, TMEM_TRACE_COMMIT, 0, -1, 8192, 0, NULL);
    fx_ev(&b, TMEM_TRACE_COMMIT, 1, -1, 4096, 0, NULL);
    fx_ev(&b, TMEM_TRACE_DECOMMIT, 0, -1, 4096, 0, NULL);
    fx_ev(&b, TMEM_TRACE_BUDGET_DENIED, 0, -1, 1 << 20, 0, "big");
    fx_ev(&b, TMEM_TRACE_EVICT, 1, -1, 77, 0, NULL);
    fx_ev(&b, TMEM_TRACE_EVICT, 1, -1, 23, 0, NULL);
    REQUIRE(b.ok);
    tmem_trace_peak_info p;
    REQUIRE_OK(tmem_trace_peak(b.d, &p));
    CHECK(p.peak_bytes == 350 && p.peak_event == 4);
    CHECK(p.peak_time_ns == b.d->events[4].time_ns);
    CHECK(p.live_count == 3);
    CHECK(p.unmatched_frees == 1);
    CHECK(p.peak_committed == 12288);
    CHECK(p.peak_committed_time_ns == b.d->events[7].time_ns);
    CHECK(p.budget_denials == 1 && p.evicted_bytes == 100);
    /* by type: b (200) then a (150) */
    REQUIRE(p.by_type_count == 2);
    CHECK(!strcmp(p.by_type[0].label, "/memory/b") && p.by_type[0].bytes == 200 && p.by_type[0].count == 1 && p.by_type[0].id == 1);
    CHECK(!strcmp(p.by_type[1].label, "/memory/a") && p.by_type[1].bytes == 150 && p.by_type[1].count == 2);
    /* by role: weights is unnamed in this trace -> "role#<its id>" */
    REQUIRE(p.by_role_count == 2);
    CHECK(!strcmp(p.by_role[0].label, "role#1") && p.by_role[0].bytes == 200);
    CHECK(!strcmp(p.by_role[1].label, "activation") && p.by_role[1].bytes == 150 && p.by_role[1].count == 2);
    /* by name: w 200, y 120, x 30 */
    REQUIRE(p.by_name_count == 3);
    CHECK(!strcmp(p.by_name[0].label, "w") && p.by_name[0].bytes == 200);
    CHECK(!strcmp(p.by_name[1].label, "y") && p.by_name[1].bytes == 120);
    CHECK(!strcmp(p.by_name[2].label, "x") && p.by_name[2].bytes == 30 && p.by_name[2].id == -1);
    /* A reset of type 0's [0, 200) frees x@128 and y@0, not w (type 1). */
    fx_ev(&b, TMEM_TRACE_RESET, 0, -1, 200, 0, "heap");
    fx_ev(&b, TMEM_TRACE_ALLOC, 1, TMEM_ROLE_WEIGHTS, 100, 64, "w2");    /* 300 */
    fx_ev(&b, TMEM_TRACE_ALLOC, 0, TMEM_ROLE_ACTIVATION, 70, 4096, "z"); /* 370 <- peak, live: w, w2, z */
    REQUIRE_OK(tmem_trace_peak(b.d, &p));
    CHECK(p.peak_bytes == 370 && p.live_count == 3 && p.peak_event == b.d->count - 1);
    CHECK(p.by_type_count == 2 && p.by_type[0].bytes == 300 && p.by_type[1].bytes == 70);
    CHECK_ST(tmem_trace_peak(NULL, &p), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem_trace_peak(b.d, NULL), TMEM_E_INVALID_ARG);
    tmem_trace_data_destroy(b.d);
}

static void test_empty(void) {
    tmem_trace_data *d;
    REQUIRE_OK(tmem__trace_data_new(&d));
    tmem_trace_peak_info p;
    CHECK_OK(tmem_trace_peak(d, &p));
    CHECK(p.peak_bytes == 0 && p.live_count == 0 && p.by_name_count == 0);
    tmem_trace_data_destroy(d);
}

static void test_session(void) {
    tmem_trace_data *d = fx_session(20);
    REQUIRE(d);
    tmem_trace_peak_info p;
    REQUIRE_OK(tmem_trace_peak(d, &p));
    uint64_t ev, sum = 0;
    uint64_t want = fx_brute_peak(d, &ev, &sum);
    CHECK(p.peak_bytes == want && p.peak_event == ev);
    uint64_t by_role = 0, by_type = 0;
    for (uint32_t i = 0; i < p.by_role_count; i++) by_role += p.by_role[i].bytes;
    for (uint32_t i = 0; i < p.by_type_count; i++) by_type += p.by_type[i].bytes;
    CHECK(by_role == want && by_type == want && sum == want);
    for (uint32_t i = 1; i < p.by_name_count; i++) CHECK(p.by_name[i - 1].bytes >= p.by_name[i].bytes);
    tmem_trace_data_destroy(d);
}

/* Random sequences with offset reuse and lost frees, against brute force. */
static void test_random(void) {
    tmem_rng rng;
    tmem_rng_init(&rng, tmem_test_seed(66));
    for (int iter = 0; iter < 200; iter++) {
        fx_builder b = {NULL, 0, true};
        REQUIRE_OK(tmem__trace_data_new(&b.d));
        uint32_t n = (uint32_t)tmem_rng_range(&rng, 1, 400);
        for (uint32_t i = 0; i < n; i++) {
            int type = (int)tmem_rng_range(&rng, 0, 3) - 1;
            uint64_t off = tmem_rng_range(&rng, 0, 40) * 64;
            uint64_t pick = tmem_rng_range(&rng, 0, 40);
            tmem_trace_kind k = pick == 0 ? TMEM_TRACE_RESET : pick < 27 ? TMEM_TRACE_ALLOC : TMEM_TRACE_FREE;
            uint64_t size = k == TMEM_TRACE_RESET ? tmem_rng_range(&rng, 1, 20) * 64 : tmem_rng_range(&rng, 1, 1000);
            fx_ev(&b, k, type, (int)tmem_rng_range(&rng, 0, 9) - 1, size, off, "r");
        }
        REQUIRE(b.ok);
        tmem_trace_peak_info p;
        REQUIRE_OK(tmem_trace_peak(b.d, &p));
        uint64_t ev, sum = 0, want = fx_brute_peak(b.d, &ev, &sum);
        CHECK_MSG(p.peak_bytes == want, "iter %d: %llu vs %llu", iter, (unsigned long long)p.peak_bytes, (unsigned long long)want);
        if (want) {
            CHECK(p.peak_event == ev);
            uint64_t s = 0;
            for (uint32_t i = 0; i < p.by_role_count; i++) s += p.by_role[i].bytes;
            CHECK(s == want);
        }
        tmem_trace_data_destroy(b.d);
    }
}

int main(void) {
    RUN(test_small);
    RUN(test_empty);
    RUN(test_session);
    RUN(test_random);
    return tmem_test_finish();
}

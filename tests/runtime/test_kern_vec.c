/* test_kern_vec: the f32 vector primitives (SIMD where the CPU has it)
 * against their scalar references for every n in 0..70 (tails) and a few
 * long vectors, aliasing where the contract allows it. Tolerances: dot
 * 1e-6 * sum |a b| (reassociation); rmsnorm 2e-6 + 1e-8 n relative (the
 * scalar sum of squares drifts on long vectors); exp-based ops 2e-6 (silu)
 * and 3e-6 (softmax) relative. Fixed seed. */
#include "kern_test_util.h"

static int64_t lengths[80];
static int n_lengths;

static void setup_lengths(void) {
    for (int64_t n = 0; n <= 70; n++) lengths[n_lengths++] = n;
    const int64_t extra[] = {255, 256, 1023, 1024, 4097, 151936};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) lengths[n_lengths++] = extra[i];
}

static bool close_rel(float got, float want, double rel, double abs_tol) {
    return fabs((double)got - want) <= rel * fabs((double)want) + abs_tol;
}

static void test_all(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(0x7665637431ull));
    const int64_t cap = 151936 + 8;
    float *a = kern_test_alloc(cap * 4), *b = kern_test_alloc(cap * 4);
    float *w = kern_test_alloc(cap * 4);
    float *y1 = kern_test_alloc(cap * 4), *y2 = kern_test_alloc(cap * 4);
    for (int li = 0; li < n_lengths; li++) {
        const int64_t n = lengths[li];
        /* offset by one float: unaligned starts */
        float *pa = a + 1, *pb = b + 1, *pw = w + 1, *p1 = y1 + 1, *p2 = y2 + 1;
        kern_test_fill(&r, pa, n, 2.0f);
        kern_test_fill(&r, pb, n, 2.0f);
        kern_test_fill(&r, pw, n, 1.0f);
        double mag = 0.0;
        for (int64_t i = 0; i < n; i++) mag += fabs((double)pa[i] * pb[i]);

        CHECK_MSG(fabs((double)tmrt__kern_dot(pa, pb, n) - tmrt__kern_dot_ref(pa, pb, n)) <= 1e-6 * mag,
                  "dot n=%lld", (long long)n);

        memcpy(p1, pb, (size_t)n * 4);
        memcpy(p2, pb, (size_t)n * 4);
        tmrt__kern_axpy(p1, 0.37f, pa, n);
        tmrt__kern_axpy_ref(p2, 0.37f, pa, n);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !close_rel(p1[i], p2[i], 1e-6, 1e-6);
        CHECK_MSG(bad == 0, "axpy n=%lld", (long long)n);

        memcpy(p1, pa, (size_t)n * 4);
        tmrt__kern_scale(p1, -1.5f, n);
        bad = 0;
        for (int64_t i = 0; i < n; i++) bad += p1[i] != pa[i] * -1.5f;
        CHECK_MSG(bad == 0, "scale n=%lld", (long long)n);

        const double norm_tol = 2e-6 + 1e-8 * (double)n;
        for (int variant = 0; variant < 3; variant++) {
            const float *wt = variant == 1 ? NULL : pw;
            const float off = variant == 2 ? 1.0f : 0.0f;
            tmrt__kern_rmsnorm_offset(p1, pa, wt, off, n, 1e-6f);
            tmrt__kern_rmsnorm_offset_ref(p2, pa, wt, off, n, 1e-6f);
            bad = 0;
            for (int64_t i = 0; i < n; i++) bad += !close_rel(p1[i], p2[i], norm_tol, 1e-7);
            CHECK_MSG(bad == 0, "rmsnorm variant %d n=%lld: %d off", variant, (long long)n, bad);
        }
        /* in place (out == x) */
        memcpy(p1, pa, (size_t)n * 4);
        tmrt__kern_rmsnorm(p1, p1, pw, n, 1e-6f);
        tmrt__kern_rmsnorm_ref(p2, pa, pw, n, 1e-6f);
        bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !close_rel(p1[i], p2[i], norm_tol, 1e-7);
        CHECK_MSG(bad == 0, "rmsnorm in place n=%lld", (long long)n);

        /* silu: gates over a wide range, in place on gate */
        for (int64_t i = 0; i < n; i++) pa[i] *= 20.0f;
        tmrt__kern_silu_mul_ref(p2, pa, pb, n);
        memcpy(p1, pa, (size_t)n * 4);
        tmrt__kern_silu_mul(p1, p1, pb, n);
        bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !close_rel(p1[i], p2[i], 2e-6, 1e-30);
        CHECK_MSG(bad == 0, "silu_mul n=%lld: %d off", (long long)n, bad);
        /* silu alone, in place */
        tmrt__kern_silu_ref(p2, pa, n);
        memcpy(p1, pa, (size_t)n * 4);
        tmrt__kern_silu(p1, p1, n);
        bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !close_rel(p1[i], p2[i], 2e-6, 1e-30);
        CHECK_MSG(bad == 0, "silu n=%lld: %d off", (long long)n, bad);

        /* one online-softmax block: exp(x - m) and its sum, m the running max */
        float mx = 0.0f;
        for (int64_t i = 0; i < n; i++) mx = pa[i] > mx ? pa[i] : mx;
        memcpy(p1, pa, (size_t)n * 4);
        memcpy(p2, pa, (size_t)n * 4);
        float es1 = tmrt__kern_exp_sub_sum(p1, mx, n), es2 = tmrt__kern_exp_sub_sum_ref(p2, mx, n);
        bad = 0;
        double es = 0.0; /* the sum in double: both f32 sums are within their rounding of it */
        for (int64_t i = 0; i < n; i++) {
            bad += !close_rel(p1[i], p2[i], 3e-6, 1e-30);
            es += p2[i];
        }
        CHECK_MSG(bad == 0, "exp_sub_sum n=%lld: %d off", (long long)n, bad);
        CHECK_MSG(close_rel(es1, (float)es, 1e-5 + 1e-7 * (double)n, 1e-30) &&
                      close_rel(es2, (float)es, 1e-5 + 1e-7 * (double)n, 1e-30),
                  "exp_sub_sum n=%lld: sums %g %g vs %g", (long long)n, es1, es2, es);

        memcpy(p1, pa, (size_t)n * 4);
        memcpy(p2, pa, (size_t)n * 4);
        if (n > 3) p1[3] = p2[3] = -INFINITY; /* a masked position */
        float m1 = tmrt__kern_softmax(p1, n), m2 = tmrt__kern_softmax_ref(p2, n);
        CHECK(m1 == m2);
        bad = 0;
        double total = 0.0;
        for (int64_t i = 0; i < n; i++) {
            bad += !close_rel(p1[i], p2[i], 3e-6, 1e-30);
            total += p1[i];
        }
        CHECK_MSG(bad == 0, "softmax n=%lld: %d off", (long long)n, bad);
        if (n > 0) CHECK(fabs(total - 1.0) < 1e-4);
        if (n > 3) CHECK(p1[3] == 0.0f);
    }
    CHECK(tmrt__kern_softmax(a, 0) == -INFINITY);
    CHECK(tmrt__kern_exp_sub_sum(a, 0.0f, 0) == 0.0f);
    free(a);
    free(b);
    free(w);
    free(y1);
    free(y2);
}

int main(void) {
    setup_lengths();
    RUN(test_all);
    return tmem_test_finish();
}

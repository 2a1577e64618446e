/* The library's one half/bfloat16 conversion (base/half.h). IEEE half <->
 * float: every half value round-trips; float -> half rounds to nearest even
 * (checked against a double-precision search of the two neighbours),
 * overflow goes to infinity, NaN stays NaN. bfloat16: every value
 * round-trips; narrowing rounds to nearest even on the dropped 16 bits and
 * keeps a NaN quiet. (tests/runtime/test_half_twins: the runtime's copy
 * gives the same bits.) */
#include "harness.h"
#include "base/half.h"
#include <math.h>
#include <string.h>

static void test_roundtrip_all(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tmem__f16_to_f32((uint16_t)h);
        bool nan = ((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF);
        if (nan) {
            if (!isnan(f)) bad++;
            if (!isnan(tmem__f16_to_f32(tmem__f32_to_f16(f)))) bad++;
            continue;
        }
        if (tmem__f32_to_f16(f) != h) bad++;
    }
    CHECK_MSG(bad == 0, "%d half values failed to round-trip", bad);
    CHECK(tmem__f16_to_f32(0x3C00) == 1.0f);
    CHECK(tmem__f16_to_f32(0xC000) == -2.0f);
    CHECK(tmem__f16_to_f32(0x7BFF) == 65504.0f);
    CHECK(tmem__f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    CHECK(isinf(tmem__f16_to_f32(0x7C00)));
}

/* The nearest half by brute force over the neighbours (ties to even). */
static uint16_t reference(float f) {
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (a >= 65520.0) return sign | 0x7C00; /* rounds past the largest finite */
    uint16_t best = 0;
    double best_err = INFINITY;
    for (uint32_t h = 0; h < 0x7C00; h++) {
        double v = tmem__f16_to_f32((uint16_t)h);
        double e = fabs(v - a);
        if (e < best_err || (e == best_err && !(h & 1))) best_err = e, best = (uint16_t)h;
    }
    return sign | best;
}

static void test_rounding(void) {
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(16));
    int bad = 0;
    for (int i = 0; i < 300; i++) {
        /* Mix of magnitudes: subnormal, normal, near-overflow, exact ties. */
        float f;
        uint32_t kind = (uint32_t)tmem_rng_range(&r, 0, 3);
        if (kind == 0) {
            f = ldexpf((float)tmem_rng_range(&r, 0, 1u << 20), -44); /* subnormal range */
        } else if (kind == 1) {
            uint32_t h = (uint32_t)tmem_rng_range(&r, 0, 0x7BFE);
            f = (float)(((double)tmem__f16_to_f32((uint16_t)h) + tmem__f16_to_f32((uint16_t)(h + 1))) / 2.0);
        } else {
            uint32_t bits = (uint32_t)tmem_rng_next(&r) & 0x7FFFFFFFu;
            memcpy(&f, &bits, sizeof f);
            if (isnan(f) || fabsf(f) > 70000.0f) f = (float)tmem_rng_range(&r, 0, 70000) / 3.0f;
        }
        if (tmem_rng_range(&r, 0, 1)) f = -f;
        if (tmem__f32_to_f16(f) != reference(f)) bad++;
    }
    CHECK_MSG(bad == 0, "%d values rounded differently from the reference", bad);
    CHECK(tmem__f32_to_f16(1e9f) == 0x7C00);
    CHECK(tmem__f32_to_f16(-1e9f) == 0xFC00);
    CHECK(tmem__f32_to_f16(65519.0f) == 0x7BFF);
    CHECK(tmem__f32_to_f16(65520.0f) == 0x7C00);
    CHECK(tmem__f32_to_f16(1e-10f) == 0);
    CHECK(isnan(tmem__f16_to_f32(tmem__f32_to_f16(NAN))));
}

static void test_bf16(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tmem__bf16_to_f32((uint16_t)h);
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        if (u != h << 16) bad++; /* widening is the top half, exactly */
        bool nan = ((h >> 7) & 0xFF) == 0xFF && (h & 0x7F);
        if (!nan && tmem__f32_to_bf16(f) != h) bad++;
        if (nan && tmem__f32_to_bf16(f) != (h | 0x40u)) bad++; /* quiet, payload kept */
    }
    CHECK_MSG(bad == 0, "%d bfloat16 values failed", bad);
    CHECK(tmem__f32_to_bf16(1.0f) == 0x3F80);
    CHECK(tmem__f32_to_bf16(ldexpf(1.0f, 0) + ldexpf(1.0f, -8)) == 0x3F80); /* a tie: to even */
    CHECK(tmem__f32_to_bf16(ldexpf(1.0f, 0) + ldexpf(1.0f, -7) + ldexpf(1.0f, -8)) == 0x3F82); /* tie up */
    CHECK(tmem__f32_to_bf16(3.4e38f) == 0x7F80);                              /* rounds to inf */
    CHECK(isnan(tmem__bf16_to_f32(tmem__f32_to_bf16(NAN))));
}

int main(void) {
    RUN(test_roundtrip_all);
    RUN(test_rounding);
    RUN(test_bf16);
    return tmem_test_finish();
}

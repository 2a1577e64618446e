/* The two half/bfloat16 conversions, bit for bit: the library's (base/half.h:
 * surfaces, ggml rows) and the runtime's inline copy (kern/kern_half.h: the
 * kernels, KV rows; the runtime may not include the library's internals).
 * Every one of the 65536 halves and 65536 bfloat16s widened, and round-tripped
 * (identity but for NaN, which stays a NaN of the same bits in both), and
 * millions of floats narrowed: every sign and exponent with every kept
 * mantissa and the dropped bits at the rounding edges, plus random patterns. */
#include <math.h>
#include <string.h>
#include "harness.h"
#include "base/half.h"
#include "kern/kern_half.h"

typedef union word {
    float f;
    uint32_t u;
} word;

static uint32_t bits(float f) { return ((word){.f = f}).u; }
static float from_bits(uint32_t u) { return ((word){.u = u}).f; }

static void test_all_halves(void) {
    int wide = 0, trip = 0, nan_bits = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = tmem__f16_to_f32((uint16_t)h), b = kern_f16_to_f32((uint16_t)h);
        if (bits(a) != bits(b)) wide++;
        bool nan = ((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF);
        uint16_t ra = tmem__f32_to_f16(a), rb = kern_f32_to_f16(b);
        if (ra != rb) nan_bits++;
        if (nan ? !(isnan(tmem__f16_to_f32(ra)) && (ra | 0x200u) == ra) : ra != h) trip++;
    }
    CHECK_MSG(wide == 0, "%d halves widen differently", wide);
    CHECK_MSG(trip == 0, "%d halves fail the round trip", trip);
    CHECK_MSG(nan_bits == 0, "%d halves narrow back differently", nan_bits);
}

static void test_all_bf16(void) {
    int wide = 0, trip = 0, twin = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = tmem__bf16_to_f32((uint16_t)h), b = kern_bf16_to_f32((uint16_t)h);
        if (bits(a) != bits(b)) wide++;
        uint16_t ra = tmem__f32_to_bf16(a), rb = kern_f32_to_bf16(b);
        if (ra != rb) twin++;
        bool nan = ((h >> 7) & 0xFF) == 0xFF && (h & 0x7F);
        if (nan ? !(isnan(tmem__bf16_to_f32(ra)) && (ra | 0x40u) == ra) : ra != h) trip++;
    }
    CHECK_MSG(wide == 0, "%d bfloat16s widen differently", wide);
    CHECK_MSG(trip == 0, "%d bfloat16s fail the round trip", trip);
    CHECK_MSG(twin == 0, "%d bfloat16s narrow back differently", twin);
}

/* Narrowing the same float both ways; `bad` counts differences. */
static void narrow_both(uint32_t u, uint64_t *n, uint64_t *bad16, uint64_t *badbf) {
    float f = from_bits(u);
    (*n)++;
    if (tmem__f32_to_f16(f) != kern_f32_to_f16(f)) (*bad16)++;
    if (tmem__f32_to_bf16(f) != kern_f32_to_bf16(f)) (*badbf)++;
}

static void test_narrowing(void) {
    /* dropped bits of a half (13) and of a bfloat16 (16) at the rounding edges */
    static const uint32_t low13[] = {0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF};
    static const uint32_t low16[] = {0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    uint64_t n = 0, bad16 = 0, badbf = 0;
    for (uint32_t se = 0; se < 512; se++) {           /* every sign and exponent */
        for (uint32_t m = 0; m < 1024; m++)           /* every kept half mantissa */
            for (size_t k = 0; k < sizeof low13 / sizeof *low13; k++)
                narrow_both(se << 23 | m << 13 | low13[k], &n, &bad16, &badbf);
        for (uint32_t m = 0; m < 128; m++)            /* every kept bfloat16 mantissa */
            for (size_t k = 0; k < sizeof low16 / sizeof *low16; k++)
                narrow_both(se << 23 | m << 16 | low16[k], &n, &bad16, &badbf);
    }
    tmem_rng r;
    tmem_rng_init(&r, tmem_test_seed(65536));
    for (int i = 0; i < 1 << 20; i++) narrow_both((uint32_t)tmem_rng_next(&r), &n, &bad16, &badbf);
    CHECK_MSG(bad16 == 0, "%llu of %llu floats narrow to different halves", (unsigned long long)bad16,
              (unsigned long long)n);
    CHECK_MSG(badbf == 0, "%llu of %llu floats narrow to different bfloat16s", (unsigned long long)badbf,
              (unsigned long long)n);
    CHECK(n > 4000000);
}

int main(void) {
    RUN(test_all_halves);
    RUN(test_all_bf16);
    RUN(test_narrowing);
    return tmem_test_finish();
}

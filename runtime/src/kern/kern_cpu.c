/* kern_cpu.c: which SIMD paths this CPU runs. Asked per call (a few
 * nanoseconds: libgcc caches cpuid at start-up), so there is no state of
 * ours to initialise or to race on. */
#include "kern_impl.h"

bool tmrt__kern_have_avx2(void) { return tmrt__kern__have_avx2(); }

bool tmrt__kern__have_avx2(void) {
#if defined(__x86_64__) && TMRT_HAVE_AVX2
    /* clang 14's __builtin_cpu_supports knows no "f16c"; every CPU with
     * AVX2 has F16C (Haswell, Excavator and later), so clang builds rely on
     * that rather than run cpuid (a VM exit) on every call. */
#if defined(__clang__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
#endif
#else
    return false;
#endif
}

/* kern_cpu.c: which SIMD paths this CPU runs. Asked per call (a few
 * nanoseconds: libgcc caches cpuid at start-up), so there is no state of
 * ours to initialise or to race on. */
#include "kern_impl.h"

bool kern__have_avx2(void) {
#if defined(__x86_64__) && TMRT_HAVE_AVX2
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
#else
    return false;
#endif
}

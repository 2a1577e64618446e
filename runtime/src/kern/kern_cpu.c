/* kern_cpu.c: which SIMD paths this CPU runs. Asked per call (a few
 * nanoseconds: libgcc caches cpuid at start-up), so there is no state of
 * ours to initialise or to race on. */
#include "kern_impl.h"
#if defined(__aarch64__)
#include <sys/auxv.h>
/* the bits from the kernel's uapi <asm/hwcap.h>, for older headers */
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1ul << 10)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1ul << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1ul << 13)
#endif
#endif

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

unsigned tmrt__kern__cpu_features(void) {
#if defined(__aarch64__) && TMRT_HAVE_NEON
    /* glibc and bionic keep AT_HWCAP/AT_HWCAP2 at hand: no syscall */
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    unsigned f = KERN_CPU_NEON;
    if (hw & HWCAP_ASIMDHP) f |= KERN_CPU_FP16;
    if (hw & HWCAP_ASIMDDP) f |= KERN_CPU_DOTPROD;
    if (hw2 & HWCAP2_I8MM) f |= KERN_CPU_I8MM;
    return f;
#else
    return 0;
#endif
}

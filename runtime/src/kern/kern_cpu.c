/* kern_cpu.c: which SIMD paths this CPU runs. Asked per call (a few
 * nanoseconds: libgcc caches cpuid at start-up), so there is no state of
 * ours to initialise or to race on.
 *
 * TMRT_KERN_ISA caps the matmul's instruction set, so that every path can be
 * measured (and tested) on a machine that has the wider ones: "avx2" keeps
 * the AVX2 tiles where AVX-512 would run, "scalar" runs the scalar tiles
 * (the oracle). Unset, or any other value: the widest the CPU has. Read on
 * each matmul call (a scan of the environment, well under a microsecond). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "typedmem/model.h"

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
bool tmrt__kern__have_avx512(void) {
#if defined(__x86_64__) && TMRT_HAVE_AVX2 && TMRT_HAVE_AVX512
    return tmrt__kern__have_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni");
#else
    return false;
#endif
}

kern_isa tmrt__kern__isa(void) {
    const char *cap = getenv("TMRT_KERN_ISA");
    bool scalar = cap && !strcmp(cap, "scalar"), avx2 = cap && !strcmp(cap, "avx2");
#if TMRT_HAVE_NEON
    if (!scalar) return KERN_ISA_NEON; /* every aarch64 CPU has Advanced SIMD */
#endif
    if (scalar || !tmrt__kern__have_avx2()) return KERN_ISA_SCALAR;
    if (!avx2 && tmrt__kern__have_avx512()) return KERN_ISA_AVX512;
    return KERN_ISA_AVX2;
}

kern_tile_fn tmrt__kern__tile_for(uint32_t type, kern_isa isa, const char **name) {
    kern_tile_fn f = NULL;
    *name = "scalar";
#if TMRT_HAVE_AVX2
#if TMRT_HAVE_AVX512
    if (isa == KERN_ISA_AVX512 && (f = tmrt__kern__tile_avx512(type)) != NULL) {
        *name = tmrt__kern__traits(type)->xform == KERN_X_F32 ? "avx512" : "avx512-vnni";
        return f;
    }
#endif
    if (isa >= KERN_ISA_AVX2 && (f = tmrt__kern__tile_avx2(type)) != NULL) {
        *name = "avx2";
        return f;
    }
#elif TMRT_HAVE_NEON
    const unsigned features = tmrt__kern__cpu_features();
    if (isa == KERN_ISA_NEON && (f = tmrt__kern__tile_neon(type, features)) != NULL) {
        const bool quant = tmrt__kern__traits(type)->xform != KERN_X_F32;
        *name = quant && (features & KERN_CPU_DOTPROD) ? "neon-dotprod" : "neon";
        return f;
    }
#else
    (void)type, (void)isa;
#endif
    return tmrt__kern__tile_scalar;
}

size_t tmrt__kern_paths(char *buf, size_t cap) {
    static const struct { uint32_t type; const char *name; } types[] = {
        {TMEM_GGML_F32, "F32"}, {TMEM_GGML_F16, "F16"}, {TMEM_GGML_BF16, "BF16"},
        {TMEM_GGML_Q8_0, "Q8_0"}, {TMEM_GGML_Q4_K, "Q4_K"}, {TMEM_GGML_Q6_K, "Q6_K"}};
    kern_isa isa = tmrt__kern__isa();
    size_t at = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const char *path;
        (void)tmrt__kern__tile_for(types[i].type, isa, &path);
        int n = snprintf(buf + (at < cap ? at : cap), at < cap ? cap - at : 0, "%s%s %s", i ? ", " : "",
                         types[i].name, path);
        if (n > 0) at += (size_t)n;
    }
#if TMRT_HAVE_NEON
    const char *vec = "neon (x quantisation scalar)";
#else
    const char *vec = isa >= KERN_ISA_AVX2 ? "avx2" : "scalar";
#endif
    int n = snprintf(buf + (at < cap ? at : cap), at < cap ? cap - at : 0, "; x quantisation and vector ops %s",
                     vec);
    if (n > 0) at += (size_t)n;
    return at;
}

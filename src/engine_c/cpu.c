/*
 * CPU feature probe, SGEMM kernel selection and the engine's thread count.
 *
 * Features: cpuid + xgetbv, probed once and cached (a benign race: every thread computes
 * the same value). A feature is reported only when the OS also saves its register state:
 *   AVX2/FMA  need OSXSAVE and XCR0 bits 1,2 (XMM, YMM);
 *   AVX-512F  needs in addition XCR0 bits 5,6,7 (opmask, ZMM_Hi256, Hi16_ZMM).
 * On non-x86 targets (or compilers without <cpuid.h>) no feature is reported and the
 * portable C micro-kernel is used.
 *
 * SGEMM kernel: the best the CPU supports ("avx512" > "avx2" > "generic"), unless the
 * environment variable MANTISSA_EMBED_GEMM_KERNEL=generic|avx2|avx512 asks for a lower
 * one (read at first use; a kernel the CPU lacks is clamped to the best available one;
 * an unknown value is ignored). me_set_gemm_kernel() changes it at run time (tests).
 *
 * Threads: default = number of processors available to the process (OpenMP's
 * omp_get_num_procs, which honours the affinity mask; sysconf(_SC_NPROCESSORS_ONLN)
 * without OpenMP), overridden by MANTISSA_EMBED_NUM_THREADS=<n >= 1> read at first use;
 * me_set_num_threads(n) sets it explicitly.
 */
#define _POSIX_C_SOURCE 200809L
#include "engine.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if !defined(ME_NO_X86) && (defined(__x86_64__) || defined(__i386__)) && \
    (defined(__GNUC__) || defined(__clang__))
#define ME_X86 1
#include <cpuid.h>
#else
#define ME_X86 0
#endif

/* ----------------------------------------------------------------- features */
static int g_features = -1; /* -1: not probed yet */

#if ME_X86
static unsigned long long me_xgetbv0(void) {
    unsigned int eax, edx;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0)); /* xgetbv */
    return ((unsigned long long)edx << 32) | eax;
}
#endif

static int me_probe_features(void) {
    int f = 0;
#if ME_X86
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    int osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1, fma = (ecx >> 12) & 1;
    if (!osxsave || !avx) return 0;
    unsigned long long xcr0 = me_xgetbv0();
    int ymm_ok = (xcr0 & 0x6) == 0x6;
    int zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0;
    if (!ymm_ok) return 0;
    if (fma) f |= ME_CPU_FMA;
    if ((ecx >> 29) & 1) f |= ME_CPU_F16C;
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, eax, ebx, ecx, edx);
        int max_sub = (int)eax;
        int avx512f = zmm_ok && ((ebx >> 16) & 1);
        if ((ebx >> 5) & 1) f |= ME_CPU_AVX2;
        if (avx512f) f |= ME_CPU_AVX512F;
        if (avx512f && ((ebx >> 31) & 1)) f |= ME_CPU_AVX512VL;
        if (avx512f && ((ebx >> 30) & 1)) f |= ME_CPU_AVX512BW;
        if (avx512f && ((ecx >> 11) & 1)) f |= ME_CPU_AVX512VNNI;
        if (avx512f && max_sub >= 1) {
            __cpuid_count(7, 1, eax, ebx, ecx, edx);
            if ((eax >> 5) & 1) f |= ME_CPU_AVX512BF16;
        }
    }
#endif
    return f;
}

int me_cpu_features(void) {
    int f = __atomic_load_n(&g_features, __ATOMIC_ACQUIRE);
    if (f < 0) {
        f = me_probe_features();
        __atomic_store_n(&g_features, f, __ATOMIC_RELEASE);
    }
    return f;
}

/* ----------------------------------------------------------- kernel choice */
/* Kernel ids: 0 generic, 1 avx2 (needs AVX2+FMA), 2 avx512 (needs AVX-512F+FMA). */
static const char *const g_kernel_names[3] = {"generic", "avx2", "avx512"};
static int g_kernel = -1; /* -1: not chosen yet */

static int me_best_kernel(void) {
    int f = me_cpu_features();
    if ((f & ME_CPU_AVX512F) && (f & ME_CPU_FMA)) return 2;
    if ((f & ME_CPU_AVX2) && (f & ME_CPU_FMA)) return 1;
    return 0;
}

static int me_kernel_id(const char *name) {
    if (name == NULL) return -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(name, g_kernel_names[i]) == 0) return i;
    return -1;
}

/* The kernel id in use (0 generic, 1 avx2, 2 avx512); used by gemm.c. */
int me_gemm_kernel_id(void) {
    int k = __atomic_load_n(&g_kernel, __ATOMIC_ACQUIRE);
    if (k < 0) {
        k = me_best_kernel();
        int want = me_kernel_id(getenv("MANTISSA_EMBED_GEMM_KERNEL"));
        if (want >= 0 && want < k) k = want;
        __atomic_store_n(&g_kernel, k, __ATOMIC_RELEASE);
    }
    return k;
}

const char *me_gemm_kernel_name(void) { return g_kernel_names[me_gemm_kernel_id()]; }

int me_set_gemm_kernel(const char *name) {
    int want = me_kernel_id(name);
    if (want < 0) return -1;
    if (want > me_best_kernel()) return -2;
    __atomic_store_n(&g_kernel, want, __ATOMIC_RELEASE);
    return 0;
}

/* ------------------------------------------------------------------ threads */
static int g_num_threads = 0; /* 0: not initialised yet */

static int me_default_threads(void) {
    const char *env = getenv("MANTISSA_EMBED_NUM_THREADS");
    if (env != NULL && *env != '\0') {
        char *end = NULL;
        long v = strtol(env, &end, 10);
        while (end != NULL && (*end == ' ' || *end == '\t' || *end == '\n')) end++;
        if (end != NULL && *end == '\0' && v >= 1 && v <= 4096) return (int)v;
    }
    long n;
#ifdef _OPENMP
    n = omp_get_num_procs();
#else
    n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    return n < 1 ? 1 : (int)n;
}

void me_set_num_threads(int n) {
    __atomic_store_n(&g_num_threads, n < 1 ? 1 : n, __ATOMIC_RELEASE);
}

int me_get_num_threads(void) {
    int n = __atomic_load_n(&g_num_threads, __ATOMIC_ACQUIRE);
    if (n < 1) {
        int d = me_default_threads();
        int expected = 0;
        /* first use wins; a concurrent me_set_num_threads is not overwritten */
        if (!__atomic_compare_exchange_n(&g_num_threads, &expected, d, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            d = expected;
        n = d;
    }
    return n;
}

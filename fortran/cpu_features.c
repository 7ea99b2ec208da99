/* CPU feature detection for the run-time choice of the SIMD target (fortran/simd_dispatch.f90).
 *
 * frb_cpu_level() returns the highest target this CPU (and its operating system, which must save
 * the wider registers) supports: 0 baseline, 1 x86-64-v3 (AVX2, FMA, BMI2), 2 x86-64-v4
 * (AVX-512 F, VL, BW, DQ, CD); always 0 on other architectures. The numbers are those of the
 * cpu_target_* codes of numbers_table. GCC's and Clang's __builtin_cpu_supports read CPUID and
 * XGETBV once (__builtin_cpu_init). */

int frb_cpu_level(void);

int frb_cpu_level(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
    /* the micro-architecture levels by name (GCC 12) */
    if (__builtin_cpu_supports("x86-64-v4")) return 2;
    if (__builtin_cpu_supports("x86-64-v3")) return 1;
#else
    /* the features of the levels that compiled code of these kernels can use */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
        && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2")) {
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
            && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")
            && __builtin_cpu_supports("avx512cd"))
            return 2;
        return 1;
    }
#endif
#endif
    return 0;
}

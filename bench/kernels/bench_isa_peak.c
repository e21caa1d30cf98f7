/* Peak arithmetic rate of one core: AVX-512 FP32 FMA (vfmadd231ps) against
 * AVX512-BF16 dot products (vdpbf16ps), twelve independent accumulator
 * chains each so that throughput, not latency, is measured. The ratio is
 * the ceiling of a compute-bound BF16 kernel's speed-up over FP32 on this
 * core (a vdpbf16ps does 32 multiply-adds, an FMA 16).
 *
 *   build/bench/kernels/bench_isa_peak [iterations]
 *
 * A benchmark, never run by ctest. */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECL(i) __m512 a##i = _mm512_set1_ps(1e-9f * (float)i);
#define KEEP(i) __asm__ volatile("" : "+v"(a##i));
#define SUM(i) s += _mm512_reduce_add_ps(a##i);

__attribute__((target("avx512f"))) static double fma_rate(long n) {
    CHAINS(DECL)
    const __m512 x = _mm512_set1_ps(0.5f), y = _mm512_set1_ps(0.25f);
    const double t0 = now_s();
    for (long k = 0; k < n; k++) {
#define FMA(i) a##i = _mm512_fmadd_ps(a##i, x, y);
        CHAINS(FMA)
        CHAINS(KEEP)
    }
    const double t = now_s() - t0;
    float s = 0;
    CHAINS(SUM)
    if (s == 1234.5f) printf(" ");
    return 12.0 * (double)n * 32.0 / t / 1e9; /* 16 lanes x 2 flops */
}

__attribute__((target("avx512f,avx512bf16"))) static double bf16_rate(long n) {
    CHAINS(DECL)
    const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f00), y = (__m512bh)_mm512_set1_epi16(0x3e80);
    const double t0 = now_s();
    for (long k = 0; k < n; k++) {
#define DP(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
        CHAINS(DP)
        CHAINS(KEEP)
    }
    const double t = now_s() - t0;
    float s = 0;
    CHAINS(SUM)
    if (s == 1234.5f) printf(" ");
    return 12.0 * (double)n * 64.0 / t / 1e9; /* 16 lanes x 2 pairs x 2 flops */
}

int main(int argc, char **argv) {
    const long n = argc > 1 ? atol(argv[1]) : 20000000L;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) {
        printf("no AVX-512 on this CPU\n");
        return 0;
    }
    double f = 0, b = 0;
    for (int r = 0; r < 3; r++) { /* best of three */
        const double fr = fma_rate(n);
        if (fr > f) f = fr;
        if (__builtin_cpu_supports("avx512bf16")) {
            const double br = bf16_rate(n);
            if (br > b) b = br;
        }
    }
    printf("one core: fp32 FMA %.1f GFLOP/s", f);
    if (b > 0) printf(", bf16 dot %.1f GFLOP/s, ratio %.2f", b, b / f);
    else printf(", no AVX512-BF16");
    printf("\n");
    return 0;
}

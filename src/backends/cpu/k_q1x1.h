/* Private to the INT8 1x1 kernels on NHWC images with vpdpbusd (k_q1x1.c,
 * k_qseproj.c): their inner-loop helpers. */
#ifndef PR_BACKENDS_CPU_K_Q1X1_H
#define PR_BACKENDS_CPU_K_Q1X1_H

#include <stdint.h>
#include <string.h>

#include "backends/cpu/vec.h"

#ifdef PR_CPU_X86
#include <immintrin.h>

#define Q1_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))
#define Q1_INLINE static inline __attribute__((always_inline)) Q1_VNNI

/* a + dot(b u8, w s8) per lane: vpdpbusd in a one-instruction asm, whose
 * plain in-out operand GCC 12 allocates without the copies (and stack
 * stores) it makes around the intrinsic's in a loop of 16 sums. */
Q1_INLINE __m512i q1_dp(__m512i a, __m512i b, __m512i w) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(a) : "v"(b), "v"(w));
    return a;
}

/* The 4 bytes of input channels 4k.. of a pixel as a dword (IC is a
 * multiple of 4; an int8 src biased by 128). */
Q1_INLINE __m512i q1_x4(const uint8_t *px, int64_t k, uint32_t flip) {
    uint32_t d;
    memcpy(&d, px + 4 * k, 4);
    return _mm512_set1_epi32((int)(d ^ flip));
}

#endif

#endif

/* Private to the INT8 1x1 kernels on NHWC images with vpdpbusd (k_q1x1.c,
 * k_qseproj.c, k_qstem.c): their inner-loop helpers. */
#ifndef PR_BACKENDS_CPU_K_Q1X1_H
#define PR_BACKENDS_CPU_K_Q1X1_H

#include <stdint.h>
#include <string.h>

#include "backends/cpu/k_qact.h"
#include "backends/cpu/k_qfc.h"
#include "backends/cpu/vec.h"
#include "ir/act.h"

#ifdef PR_CPU_X86
#include <immintrin.h>

#define Q1_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))
#define Q1_INLINE static inline __attribute__((always_inline)) Q1_VNNI

/* q1_epv's HardSwish as oneDNN 2.6's post-op computes it (x * relu6(x +
 * 3) * (1/6)), for kernels that replace dnnl.qconv (k_qamx.c); q1x1's own
 * (qfc's pv_act: x * clamp(x / 6 + 1/2, 0, 1)) stays as it was. Neither
 * matches every oneDNN kernel bit for bit: one unit on ~1e-5 of the values
 * either way (test_cpu_qamx counts them). */
#define PR_ACT_HARD_SWISH_DNNL (-2)

/* a + dot(b u8, w s8) per lane: vpdpbusd in a one-instruction asm, whose
 * plain in-out operand GCC 12 allocates without the copies (and stack
 * stores) it makes around the intrinsic's in a loop of 16 sums. */
Q1_INLINE __m512i q1_dp(__m512i a, __m512i b, __m512i w) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(a) : "v"(b), "v"(w));
    return a;
}

/* n bytes of an int8 src biased by 128 (x ^ 0x80) into t (q1x1's and the
 * SE projection's int8 inputs, flipped once so each dword is a broadcast load). */
Q1_VNNI void pr_q1_flip(const uint8_t *x, uint8_t *t, int64_t n);

/* The 4 bytes of input channels 4k.. of a pixel as a dword (IC is a
 * multiple of 4; an int8 src biased by 128). */
Q1_INLINE __m512i q1_x4(const uint8_t *px, int64_t k, uint32_t flip) {
    uint32_t d;
    memcpy(&d, px + 4 * k, 4);
    return _mm512_set1_epi32((int)(d ^ flip));
}

/* The epilogue's constants, made once per call (locals, so that the
 * byte stores cannot alias them and force reloads). */
typedef struct q1_c {
    const float *sc, *bi;
    const int32_t *comp;
    const __m512i *wq;
    int64_t IC, OC, ICq;
    uint32_t flip;
    bool u8;
    __m512 aa, ab, a2a, a2b, inv, lo, hi;
    bool pairs24; /* OC 24 with sc, bi, comp, wq in qfc_state.g24's layout (q1_rows24) */
    bool tail8;   /* OC 16 k + 8: the last 8 channels as pixel pairs (qfc_state.t8) */
} q1_c;

/* The epilogue of 16 int32 sums (bi, sc: their B / s and output scales,
 * per lane): int32 in the byte range, or (SAT: the state's bound keeps
 * every value within +-2^30) int32 that the saturating packs / conversions
 * of the caller clamp to the same bytes.
 * qfc_out's operations (pv_act's for the act; min/max where it
 * compares and blends: the same for the finite values here, the sums and
 * the scales being finite), no NaN lanes to clear. Folded (1 / y_scale in
 * the scales) unless HardSwish or Swish (q1x1_supports' acts). */
Q1_INLINE __m512i q1_epv(const q1_c *c, __m512i acc, __m512 bi, __m512 sc, int AK, bool A2,
                         bool SAT) {
    __m512 r = _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(acc), bi), sc);
    if (AK == PR_ACT_RELU) r = _mm512_max_ps(_mm512_setzero_ps(), r);
    if (AK == PR_ACT_CLIP) r = _mm512_min_ps(_mm512_max_ps(r, c->aa), c->ab);
    if (AK == PR_ACT_CLIP_HI) r = _mm512_min_ps(r, c->ab); /* pr_qfc_act_sat */
    if (AK == PR_ACT_HARD_SWISH) {
        __m512 v = _mm512_add_ps(_mm512_mul_ps(r, PV_C(1.0f / 6.0f)), PV_C(0.5f));
        v = _mm512_max_ps(_mm512_min_ps(v, PV_C(1.0f)), _mm512_setzero_ps());
        r = _mm512_mul_ps(r, v);
    }
    if (AK == PR_ACT_HARD_SWISH_DNNL) { /* oneDNN 2.6's eltwise injector */
        __m512 v = _mm512_add_ps(r, PV_C(3.0f));
        v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), PV_C(6.0f));
        r = _mm512_mul_ps(_mm512_mul_ps(v, r), PV_C(1.0f / 6.0f));
    }
    if (AK == PR_ACT_SWISH) r = qa_swish(r); /* the late epilogue's (k_qact.h) */
    if (A2) r = _mm512_fmadd_ps(r, c->a2a, c->a2b);
    if (AK == PR_ACT_HARD_SWISH || AK == PR_ACT_HARD_SWISH_DNNL || AK == PR_ACT_SWISH)
        r = _mm512_mul_ps(r, c->inv);
    if (!SAT) r = _mm512_min_ps(_mm512_max_ps(r, c->lo), c->hi);
    return _mm512_cvt_roundps_epi32(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* q1_epv with an int8/uint8 residual (zf: its values as floats, zs: its
 * scale) between the act and act2, the late epilogue's order (k_qact.c:
 * act2(act(x) + z_scale * Z) * inv): Swish (unfolded), where dnnl.qconv
 * runs that late pass (YOLOv8n's bottlenecks). */
Q1_INLINE __m512i q1_epvz(const q1_c *c, __m512i acc, __m512 bi, __m512 sc, bool A2, __m512 zf,
                          __m512 zs) {
    __m512 r = qa_swish(_mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(acc), bi), sc));
    r = _mm512_fmadd_ps(zf, zs, r);
    if (A2) r = _mm512_fmadd_ps(r, c->a2a, c->a2b);
    r = _mm512_mul_ps(r, c->inv);
    r = _mm512_min_ps(_mm512_max_ps(r, c->lo), c->hi);
    return _mm512_cvt_roundps_epi32(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* No act, a residual, folded scales (sc and zsf hold 1 / y_scale): oneDNN's
 * sum post-op as dnnl.qconv sets it (scale z_scale / y_scale). */
Q1_INLINE __m512i q1_epvzf(const q1_c *c, __m512i acc, __m512 bi, __m512 sc, __m512 zf,
                           __m512 zsf) {
    __m512 r = _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(acc), bi), sc);
    r = _mm512_fmadd_ps(zf, zsf, r);
    r = _mm512_min_ps(_mm512_max_ps(r, c->lo), c->hi);
    return _mm512_cvt_roundps_epi32(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

#endif

#endif

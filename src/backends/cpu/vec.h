/* Shared inline helpers of the CPU backend's own elementwise and
 * data-movement kernels (k_eltwise.c, k_binary.c, k_move.c).
 *
 * Two flavours of everything:
 *   ps_*  portable scalar C (any CPU); math through libm.
 *   pv_*  AVX-512 (F/BW/VL/DQ + F16C + FMA), 16 floats per __m512, compiled
 *         with function-level targeting (PR_AVX512) so that the rest of the
 *         build keeps the baseline ISA. Only call them from functions that
 *         carry PR_AVX512 themselves, and only after pr_cpu_features_get()
 *         said the CPU has these features (pr_cpu_use_avx512()).
 *
 * Storage dtypes are float32, bfloat16 and float16; values are computed in
 * float32. Stores round to nearest even (bf16: NaN stays a quiet NaN; f16:
 * overflow gives inf), as pr_f32_to_bf16 / pr_f32_to_f16 do.
 *
 * The pv_ math functions are polynomial approximations with a relative error
 * of about 1e-6 or better over the whole float range (checked against libm
 * by tests/unit/test_cpu_eltwise.c); NaN propagates, +-inf give the limits.
 * The helpers are always_inline: called with constant dtype arguments from a
 * kernel, the dtype switches fold away. */
#ifndef PR_BACKENDS_CPU_VEC_H
#define PR_BACKENDS_CPU_VEC_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "core/dtype.h"
#include "ir/act.h"

#define PR_INLINE static inline __attribute__((always_inline))

/* Float activation dtypes our kernels take. */
static inline bool pr_cpu_float_dt(pr_dtype dt) {
    return dt == PRECIS_FLOAT32 || dt == PRECIS_BFLOAT16 || dt == PRECIS_FLOAT16;
}

/* Below this many elements a kernel stays on the calling thread. */
#define PR_CPU_PAR_MIN 32768

/* ------------------------------------------------------------------ scalar */

PR_INLINE float ps_load(const void *p, int64_t i, pr_dtype dt) {
    switch (dt) {
    case PRECIS_BFLOAT16: return pr_bf16_to_f32(((const uint16_t *)p)[i]);
    case PRECIS_FLOAT16: return pr_f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

PR_INLINE void ps_store(void *p, int64_t i, pr_dtype dt, float v) {
    switch (dt) {
    case PRECIS_BFLOAT16: ((uint16_t *)p)[i] = pr_f32_to_bf16(v); break;
    case PRECIS_FLOAT16: ((uint16_t *)p)[i] = pr_f32_to_f16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

PR_INLINE float ps_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
/* log(1 + exp(x)) without overflow */
PR_INLINE float ps_softplus(float x) { return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
/* 0.5 x (1 + erf(x / sqrt 2)), with erfc so that the negative side keeps
 * its relative precision */
PR_INLINE float ps_gelu(float x) { return 0.5f * x * erfcf(-x * 0.70710678118654752f); }
/* 0.5 x (1 + tanh(z)) == x sigmoid(2 z) */
PR_INLINE float ps_gelu_tanh(float x) {
    float z = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x / (1.0f + expf(-2.0f * z));
}
PR_INLINE float ps_mish(float x) { return x * tanhf(ps_softplus(x)); }

/* INT8: v rounded half to even (nearbyintf in the default rounding mode)
 * and saturated to [lo, hi]; NaN gives 0. The ref's float -> int8/uint8
 * conversion (QuantizeLinear, the int8 ops' outputs). */
PR_INLINE float ps_q8_round(float v, float lo, float hi) {
    if (isnan(v)) return 0.0f;
    v = nearbyintf(v);
    return v < lo ? lo : v > hi ? hi : v;
}

/* Element i of an int8 (u8 false) or uint8 array as float. */
PR_INLINE float ps_q8_load(const void *p, int64_t i, bool u8) {
    return u8 ? (float)((const uint8_t *)p)[i] : (float)((const int8_t *)p)[i];
}

/* ------------------------------------------------------------------ AVX-512 */
#if defined(__x86_64__) || defined(__i386__)
#define PR_CPU_X86 1
#include <immintrin.h>

#define PR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c,fma")))
#define PR_VINLINE PR_INLINE PR_AVX512

/* Whether the AVX-512 kernels may run (features present and not capped). */
static inline bool pr_cpu_use_avx512(void) {
    const pr_cpu_features *f = pr_cpu_features_get();
    return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->f16c && f->fma;
}

/* Whether an own AVX-512 VNNI int8 kernel may run: the features present and
 * its A/B switch (environment variable off_env) not "0". */
static inline bool pr_cpu_use_vnni(const char *off_env) {
    const char *env = getenv(off_env);
    if (env && !strcmp(env, "0")) return false;
    return pr_cpu_use_avx512() && pr_cpu_features_get()->avx512_vnni;
}

/* Mask of the first n (< 16) lanes. */
PR_VINLINE __mmask16 pv_tail(int64_t n) { return (__mmask16)((1u << n) - 1u); }

PR_VINLINE __m512 pv_bf16_to_f32(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

PR_VINLINE __m256i pv_f32_to_bf16(__m512 v) {
    __m512i b = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(b, _mm512_set1_epi32(0x400000)));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}

PR_VINLINE __m512 pv_load(const void *p, int64_t i, pr_dtype dt) {
    switch (dt) {
    case PRECIS_BFLOAT16:
        return pv_bf16_to_f32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
    case PRECIS_FLOAT16:
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
    default: return _mm512_loadu_ps((const float *)p + i);
    }
}

/* Lanes outside m read as 0 (and touch no memory). */
PR_VINLINE __m512 pv_load_m(const void *p, int64_t i, pr_dtype dt, __mmask16 m) {
    switch (dt) {
    case PRECIS_BFLOAT16:
        return pv_bf16_to_f32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i));
    case PRECIS_FLOAT16:
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i));
    default: return _mm512_maskz_loadu_ps(m, (const float *)p + i);
    }
}

PR_VINLINE void pv_store(void *p, int64_t i, pr_dtype dt, __m512 v) {
    switch (dt) {
    case PRECIS_BFLOAT16:
        _mm256_storeu_si256((__m256i *)((uint16_t *)p + i), pv_f32_to_bf16(v));
        break;
    case PRECIS_FLOAT16:
        _mm256_storeu_si256((__m256i *)((uint16_t *)p + i),
                            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        break;
    default: _mm512_storeu_ps((float *)p + i, v); break;
    }
}

PR_VINLINE void pv_store_m(void *p, int64_t i, pr_dtype dt, __m512 v, __mmask16 m) {
    switch (dt) {
    case PRECIS_BFLOAT16: _mm256_mask_storeu_epi16((uint16_t *)p + i, m, pv_f32_to_bf16(v)); break;
    case PRECIS_FLOAT16:
        _mm256_mask_storeu_epi16((uint16_t *)p + i, m,
                                 _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        break;
    default: _mm512_mask_storeu_ps((float *)p + i, m, v); break;
    }
}

#define PV_C(c) _mm512_set1_ps((float)(c))

/* INT8 helpers. 16 int8 (u8 false) / uint8 bytes as floats, unscaled. */
PR_VINLINE __m512 pv_q8_to_f32(__m128i b, bool u8) {
    return _mm512_cvtepi32_ps(u8 ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b));
}
PR_VINLINE __m512 pv_q8_load(const void *p, int64_t i, bool u8) {
    return pv_q8_to_f32(_mm_loadu_si128((const __m128i *)((const uint8_t *)p + i)), u8);
}
/* Lanes outside m read as 0 (and touch no memory). */
PR_VINLINE __m512 pv_q8_load_m(const void *p, int64_t i, bool u8, __mmask16 m) {
    return pv_q8_to_f32(_mm_maskz_loadu_epi8(m, (const uint8_t *)p + i), u8);
}

/* ps_q8_round on 16 lanes (lo, hi: the type's limits, integers, so that
 * clamping before rounding gives the same): int32 lanes. The conversion
 * rounds half to even by its embedded rounding mode (no MXCSR dependence). */
PR_VINLINE __m512i pv_q8_round(__m512 v, __m512 lo, __m512 hi) {
    __mmask16 ord = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi); /* NaN lanes: lo, zeroed next */
    return _mm512_maskz_cvt_roundps_epi32(ord, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* pv_q8_round for a truncating byte store (pv_q8_store, pv_q8_store_m) only:
 * one op less. The operand order lets a NaN lane through both clamps (vmaxps
 * / vminps return the second operand on NaN) into the conversion, whose
 * 0x80000000 ("integer indefinite") has the low byte 0: the same bytes as
 * pv_q8_round's zeroed NaN lanes. */
PR_VINLINE __m512i pv_q8_round_lo8(__m512 v, __m512 lo, __m512 hi) {
    v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
    return _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* Stores 16 int32 lanes (already in the byte type's range) as bytes. */
PR_VINLINE void pv_q8_store(void *p, int64_t i, __m512i v) {
    _mm_storeu_si128((__m128i *)((uint8_t *)p + i), _mm512_cvtepi32_epi8(v));
}
PR_VINLINE void pv_q8_store_m(void *p, int64_t i, __m512i v, __mmask16 m) {
    _mm512_mask_cvtepi32_storeu_epi8((uint8_t *)p + i, m, v);
}

/* exp: n = round(x log2 e), r = x - n ln2 (two-part ln2), Cephes' degree-6
 * polynomial on [-ln2/2, ln2/2], scaled by 2^n with vscalefps (exact for
 * overflow to inf and gradual underflow). */
PR_VINLINE __m512 pv_exp(__m512 x) {
    /* operand order keeps NaN (vmaxps/vminps return the second on NaN) */
    x = _mm512_min_ps(PV_C(88.8f), _mm512_max_ps(PV_C(-104.0f), x));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, PV_C(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, PV_C(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, PV_C(-2.12194440e-4f), r);
    __m512 p = PV_C(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, PV_C(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, PV_C(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, PV_C(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, PV_C(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, PV_C(5.0000001201e-1f));
    __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, PV_C(1.0f)));
    return _mm512_scalef_ps(y, n);
}

PR_VINLINE __m512 pv_neg(__m512 x) {
    return _mm512_castsi512_ps(
        _mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)));
}

/* 1 / (1 + exp(-x)) */
PR_VINLINE __m512 pv_sigmoid(__m512 x) {
    return _mm512_div_ps(PV_C(1.0f), _mm512_add_ps(PV_C(1.0f), pv_exp(pv_neg(x))));
}

/* Copy the sign of s onto the non-negative a. */
PR_VINLINE __m512 pv_with_sign(__m512 a, __m512 s) {
    __m512i sign = _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32((int)0x80000000u));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), sign));
}

/* tanh: Cephes' odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1)
 * above (no cancellation there: tanh >= 0.55). */
PR_VINLINE __m512 pv_tanh(__m512 x) {
    __m512 ax = _mm512_abs_ps(x);
    __m512 e = pv_exp(_mm512_add_ps(ax, ax));
    __m512 big = _mm512_fnmadd_ps(
        PV_C(2.0f), _mm512_div_ps(PV_C(1.0f), _mm512_add_ps(e, PV_C(1.0f))), PV_C(1.0f));
    __m512 z = _mm512_mul_ps(x, x);
    __m512 p = PV_C(-5.70498872745e-3f);
    p = _mm512_fmadd_ps(p, z, PV_C(2.06390887954e-2f));
    p = _mm512_fmadd_ps(p, z, PV_C(-5.37397155531e-2f));
    p = _mm512_fmadd_ps(p, z, PV_C(1.33314422036e-1f));
    p = _mm512_fmadd_ps(p, z, PV_C(-3.33332819422e-1f));
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), ax, ax);
    __mmask16 lt = _mm512_cmp_ps_mask(ax, PV_C(0.625f), _CMP_LT_OQ);
    return pv_with_sign(_mm512_mask_mov_ps(big, lt, small), x); /* odd; tanh(-0) = -0 */
}

/* erf on |x| < 0.5: its Taylor series to x^13 (relative error < 1e-8). */
PR_VINLINE __m512 pv_erf_small(__m512 x) {
    __m512 z = _mm512_mul_ps(x, x);
    __m512 p = PV_C(1.2055332981789664e-4);
    p = _mm512_fmadd_ps(p, z, PV_C(-8.5483270234508520e-4));
    p = _mm512_fmadd_ps(p, z, PV_C(5.2239776254421878e-3));
    p = _mm512_fmadd_ps(p, z, PV_C(-2.6866170645131252e-2));
    p = _mm512_fmadd_ps(p, z, PV_C(1.1283791670955126e-1));
    p = _mm512_fmadd_ps(p, z, PV_C(-3.7612638903183754e-1));
    p = _mm512_fmadd_ps(p, z, PV_C(1.1283791670955126));
    return _mm512_mul_ps(p, x);
}

/* erfc(a) for a >= 0.5, given a^2 = hi + lo exactly (hi = a*a rounded):
 * erfc(a) = exp(-a^2) G(a) with G = erfc(a) exp(a^2) a degree-8 polynomial
 * in s, an affine map to [-1, 1] of t = 1 / (1 + 0.3275911 a) over
 * a in [0.5, 10] (relative error 1.5e-8, fitted by iteratively reweighted
 * least squares); exp(-lo) ~ 1 - lo keeps the relative precision where a^2
 * is large. Past a = 10 the result underflows (0 is returned). */
PR_VINLINE __m512 pv_erfc_core(__m512 a, __m512 hi, __m512 lo) {
    __m512 t = _mm512_div_ps(PV_C(1.0f), _mm512_fmadd_ps(a, PV_C(0.3275911f), PV_C(1.0f)));
    __m512 s = _mm512_fmsub_ps(t, PV_C(3.198008733253164), PV_C(1.7479128385163218));
    __m512 g = PV_C(-1.3960500376407337e-05);
    g = _mm512_fmadd_ps(g, s, PV_C(-3.4467282716721392e-05));
    g = _mm512_fmadd_ps(g, s, PV_C(2.9623339227018153e-04));
    g = _mm512_fmadd_ps(g, s, PV_C(2.8320314573120065e-03));
    g = _mm512_fmadd_ps(g, s, PV_C(1.3401577049384786e-02));
    g = _mm512_fmadd_ps(g, s, PV_C(4.4512383731543120e-02));
    g = _mm512_fmadd_ps(g, s, PV_C(1.1381372511313059e-01));
    g = _mm512_fmadd_ps(g, s, PV_C(2.3246473278487864e-01));
    g = _mm512_fmadd_ps(g, s, PV_C(2.0841809755037266e-01));
    __m512 e = pv_exp(pv_neg(hi));
    e = _mm512_fnmadd_ps(e, lo, e);
    /* a^2 > 100: 0 (also keeps lo = inf - inf out of the result) */
    __mmask16 under = _mm512_cmp_ps_mask(hi, PV_C(100.0f), _CMP_GT_OQ);
    return _mm512_maskz_mul_ps((__mmask16)~under, g, e);
}

/* erfc(a), a >= 0.5 */
PR_VINLINE __m512 pv_erfc_pos(__m512 a) {
    __m512 hi = _mm512_mul_ps(a, a);
    return pv_erfc_core(a, hi, _mm512_fmsub_ps(a, a, hi));
}

PR_VINLINE __m512 pv_erf(__m512 x) {
    __m512 ax = _mm512_abs_ps(x);
    __m512 big = pv_with_sign(_mm512_sub_ps(PV_C(1.0f), pv_erfc_pos(ax)), x);
    __mmask16 lt = _mm512_cmp_ps_mask(ax, PV_C(0.5f), _CMP_LT_OQ);
    return _mm512_mask_mov_ps(big, lt, pv_erf_small(x));
}

/* 0.5 x (1 + erf(u)), u = x / sqrt 2: 1 + erf(u) = erfc(-u) for u <= -0.5
 * keeps the negative tail relatively accurate; u^2 = x^2 / 2 is formed from
 * x (exactly split) so that the rounding of u does not enter exp(-u^2). */
PR_VINLINE __m512 pv_gelu(__m512 x) {
    __m512 u = _mm512_mul_ps(x, PV_C(0.70710678118654752f));
    __m512 au = _mm512_abs_ps(u);
    __m512 x2 = _mm512_mul_ps(x, x);
    __m512 hi = _mm512_mul_ps(x2, PV_C(0.5f));
    __m512 lo = _mm512_mul_ps(_mm512_fmsub_ps(x, x, x2), PV_C(0.5f));
    __m512 c = pv_erfc_core(au, hi, lo);
    __mmask16 neg = _mm512_cmp_ps_mask(u, PV_C(0.0f), _CMP_LT_OQ);
    __m512 h = _mm512_mask_mov_ps(_mm512_sub_ps(PV_C(2.0f), c), neg, c); /* 1 + erf(u) */
    __mmask16 lt = _mm512_cmp_ps_mask(au, PV_C(0.5f), _CMP_LT_OQ);
    h = _mm512_mask_mov_ps(h, lt, _mm512_add_ps(PV_C(1.0f), pv_erf_small(u)));
    return _mm512_mul_ps(_mm512_mul_ps(PV_C(0.5f), x), h);
}

/* x sigmoid(2 z), z = sqrt(2/pi) (x + 0.044715 x^3) */
PR_VINLINE __m512 pv_gelu_tanh(__m512 x) {
    __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    __m512 z = _mm512_mul_ps(PV_C(0.79788456080286536f), _mm512_fmadd_ps(x3, PV_C(0.044715f), x));
    __m512 e = pv_exp(_mm512_mul_ps(z, PV_C(-2.0f)));
    return _mm512_div_ps(x, _mm512_add_ps(PV_C(1.0f), e));
}

/* Natural log: x = m 2^e with m in [sqrt(1/2), sqrt 2) via vgetmantps /
 * vgetexpps (denormals included), Cephes' logf polynomial in m - 1. */
PR_VINLINE __m512 pv_log(__m512 x) {
    __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_p5_1, _MM_MANT_SIGN_zero); /* [0.5, 1) */
    __m512 e = _mm512_add_ps(_mm512_getexp_ps(x), PV_C(1.0f));
    __mmask16 lt = _mm512_cmp_ps_mask(m, PV_C(0.707106781186547524f), _CMP_LT_OQ);
    e = _mm512_mask_sub_ps(e, lt, e, PV_C(1.0f));
    __m512 f = _mm512_sub_ps(_mm512_mask_add_ps(m, lt, m, m), PV_C(1.0f));
    __m512 z = _mm512_mul_ps(f, f);
    __m512 p = PV_C(7.0376836292e-2f);
    p = _mm512_fmadd_ps(p, f, PV_C(-1.1514610310e-1f));
    p = _mm512_fmadd_ps(p, f, PV_C(1.1676998740e-1f));
    p = _mm512_fmadd_ps(p, f, PV_C(-1.2420140846e-1f));
    p = _mm512_fmadd_ps(p, f, PV_C(1.4249322787e-1f));
    p = _mm512_fmadd_ps(p, f, PV_C(-1.6668057665e-1f));
    p = _mm512_fmadd_ps(p, f, PV_C(2.0000714765e-1f));
    p = _mm512_fmadd_ps(p, f, PV_C(-2.4999993993e-1f));
    p = _mm512_fmadd_ps(p, f, PV_C(3.3333331174e-1f));
    __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, f), z);
    y = _mm512_fmadd_ps(e, PV_C(-2.12194440e-4f), y);
    y = _mm512_fnmadd_ps(z, PV_C(0.5f), y);
    __m512 r = _mm512_add_ps(f, y);
    r = _mm512_fmadd_ps(e, PV_C(0.693359375f), r);
    /* log(0) = -inf, log(<0) = NaN, log(inf) = inf, NaN stays */
    __mmask16 zero = _mm512_cmp_ps_mask(x, PV_C(0.0f), _CMP_EQ_OQ);
    __mmask16 negv = _mm512_cmp_ps_mask(x, PV_C(0.0f), _CMP_LT_OQ);
    __mmask16 inf = _mm512_cmp_ps_mask(x, PV_C(INFINITY), _CMP_EQ_OQ);
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_mov_ps(r, zero, PV_C(-INFINITY));
    r = _mm512_mask_mov_ps(r, negv | nan, PV_C(NAN));
    r = _mm512_mask_mov_ps(r, inf, PV_C(INFINITY));
    return r;
}

/* log(1 + t) for t >= 0: log(u) t / (u - 1) with u = 1 + t corrects the
 * rounding of u (t when u rounds to 1). */
PR_VINLINE __m512 pv_log1p_pos(__m512 t) {
    __m512 u = _mm512_add_ps(PV_C(1.0f), t);
    __m512 d = _mm512_sub_ps(u, PV_C(1.0f));
    __m512 r = _mm512_mul_ps(pv_log(u), _mm512_div_ps(t, d));
    __mmask16 same = _mm512_cmp_ps_mask(d, PV_C(0.0f), _CMP_EQ_OQ);
    return _mm512_mask_mov_ps(r, same, t);
}

/* max(x, 0) + log1p(exp(-|x|)) */
PR_VINLINE __m512 pv_softplus(__m512 x) {
    __m512 t = pv_exp(pv_neg(_mm512_abs_ps(x)));
    return _mm512_add_ps(_mm512_max_ps(PV_C(0.0f), x), pv_log1p_pos(t));
}

/* x tanh(softplus(x)) = x n / (n + 2), n = e^x (e^x + 2); x itself above 30 */
PR_VINLINE __m512 pv_mish(__m512 x) {
    __m512 e = pv_exp(x);
    __m512 n = _mm512_mul_ps(e, _mm512_add_ps(e, PV_C(2.0f)));
    __m512 r = _mm512_mul_ps(x, _mm512_div_ps(n, _mm512_add_ps(n, PV_C(2.0f))));
    __mmask16 big = _mm512_cmp_ps_mask(x, PV_C(30.0f), _CMP_GT_OQ);
    return _mm512_mask_mov_ps(r, big, x);
}

/* In-register 16x16 transpose of 32-bit lanes: v[i] holds row i on entry,
 * column i on return (unpack, in-lane shuffle, two 128-bit lane shuffles). */
PR_VINLINE void pv_tr16(__m512 v[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    /* u[4g + c], lane L: column 4L + c, rows 4g..4g+3 */
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {
        __m512 a0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);      /* cols c, 8+c: rows 0-7 */
        __m512 a1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);      /* cols 4+c, 12+c */
        __m512 b0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88); /* rows 8-15 */
        __m512 b1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
        v[c] = _mm512_shuffle_f32x4(a0, b0, 0x88);
        v[8 + c] = _mm512_shuffle_f32x4(a0, b0, 0xDD);
        v[4 + c] = _mm512_shuffle_f32x4(a1, b1, 0x88);
        v[12 + c] = _mm512_shuffle_f32x4(a1, b1, 0xDD);
    }
}

/* The activation a (ir/act.h) on 16 lanes. Relu, LeakyRelu, Clip,
 * HardSigmoid, HardSwish and Affine give pr_act_apply's results bit for bit
 * (no fused multiply-add; NaN passes where it does there); Sigmoid, Tanh,
 * Gelu, GeluTanh and Swish are within the pv_ functions' ~1e-6. */
PR_VINLINE __m512 pv_act(const pr_act *a, __m512 x) {
    const __m512 zero = _mm512_setzero_ps(), one = PV_C(1.0f);
    switch (a->kind) {
    case PR_ACT_RELU: return _mm512_max_ps(zero, x); /* NaN and -0 pass as in ref */
    case PR_ACT_LEAKY_RELU:
        return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), x, PV_C(a->alpha));
    case PR_ACT_CLIP: {
        __mmask16 lt = _mm512_cmp_ps_mask(x, PV_C(a->alpha), _CMP_LT_OQ);
        __mmask16 gt = _mm512_cmp_ps_mask(x, PV_C(a->beta), _CMP_GT_OQ);
        return _mm512_mask_mov_ps(_mm512_mask_mov_ps(x, gt, PV_C(a->beta)), lt, PV_C(a->alpha));
    }
    case PR_ACT_SIGMOID: return pv_sigmoid(x);
    case PR_ACT_HARD_SIGMOID:
    case PR_ACT_HARD_SWISH: {
        bool hs = a->kind == PR_ACT_HARD_SWISH;
        __m512 v = _mm512_add_ps(_mm512_mul_ps(x, PV_C(hs ? 1.0f / 6.0f : a->alpha)),
                                 PV_C(hs ? 0.5f : a->beta));
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, one, _CMP_GT_OQ), one);
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
        return hs ? _mm512_mul_ps(x, v) : v;
    }
    case PR_ACT_TANH: return pv_tanh(x);
    case PR_ACT_GELU: return pv_gelu(x);
    case PR_ACT_GELU_TANH: return pv_gelu_tanh(x);
    case PR_ACT_SWISH: return _mm512_div_ps(x, _mm512_add_ps(one, pv_exp(pv_neg(x))));
    case PR_ACT_AFFINE: return _mm512_add_ps(_mm512_mul_ps(x, PV_C(a->alpha)), PV_C(a->beta));
    default: return x;
    }
}

#endif /* x86 */

#endif

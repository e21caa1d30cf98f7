/* Our own vectorized CPU kernels for normalization, Softmax, attention,
 * pooling and Resize (k_softmax.c, k_attention.c, k_norm.c, k_pool.c with
 * k_qpool.c, k_resize.c). float32, bfloat16 and float16 activations; arithmetic in
 * float32 (statistics partly in double). Each impl has an AVX-512 version
 * (f, bw, vl, dq + f16c, fma) and a portable scalar fallback, picked in
 * prepare() from pr_cpu_features_get().
 *
 *   pr_cpu_impl_softmax    Softmax, LogSoftmax (all opsets), plain tensors
 *   pr_cpu_impl_layernorm  LayerNormalization (Mean / InvStdDev outputs too)
 *   pr_cpu_impl_instnorm   InstanceNormalization, plain or NHWC
 *   pr_cpu_impl_pool       MaxPool, AveragePool (2-D), GlobalAveragePool,
 *                          GlobalMaxPool; plain or NHWC; int8 MaxPool and
 *                          QPool (INT8 average pools; k_qpool.c)
 *   pr_cpu_impl_resize     Resize / Upsample over H, W of a rank-4 tensor:
 *                          nearest, linear, cubic (no antialias, no
 *                          tf_crop_and_resize); plain or NHWC
 *   pr_cpu_impl_attention  Attention (k_attention.c), plain tensors
 *
 * The section under PR_KN_INTERNAL holds helpers shared by those files
 * only (dtype loads/stores, exp); nothing else should
 * define it. */
#ifndef PR_BACKENDS_CPU_KERNELS_NORM_H
#define PR_BACKENDS_CPU_KERNELS_NORM_H

#include "backends/cpu/cpu.h"

extern const pr_cpu_impl pr_cpu_impl_softmax;
extern const pr_cpu_impl pr_cpu_impl_layernorm;
extern const pr_cpu_impl pr_cpu_impl_instnorm;
extern const pr_cpu_impl pr_cpu_impl_pool;
extern const pr_cpu_impl pr_cpu_impl_resize;
/* Attention (k_attention.c): softmax(scale * Q K' + M) V for plain
 * float32/bfloat16/float16 operands (each its own dtype), any broadcasting
 * of ops.inc; computed in float32, one query-row block per task. */
extern const pr_cpu_impl pr_cpu_impl_attention;

#ifdef PR_KN_INTERNAL

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"

#define KN_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c,fma")))

/* Work below this many elements runs on one thread. */
#define KN_PAR_MIN 32768

static inline bool kn_have_avx512(void) {
    const pr_cpu_features *f = pr_cpu_features_get();
    return f && f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->f16c && f->fma;
}

static inline bool kn_act_dtype(pr_dtype dt) {
    return dt == PRECIS_FLOAT32 || dt == PRECIS_BFLOAT16 || dt == PRECIS_FLOAT16;
}

/* Threads for `work` elements spread over `tasks` independent tasks. */
static inline int kn_threads(int nt, int64_t work, int64_t tasks) {
    if (nt < 1 || work < KN_PAR_MIN) return 1;
    if (tasks < nt) return tasks < 1 ? 1 : (int)tasks;
    return nt;
}

/* Floats per thread slice rounded up to whole cache lines. */
static inline size_t kn_pad16(int64_t n) { return (size_t)((n + 15) & ~(int64_t)15); }

/* ------------------------------------------------------------ scalar */

static inline float kn_ld1(const void *p, pr_dtype dt, int64_t i) {
    if (dt == PRECIS_FLOAT32) return ((const float *)p)[i];
    if (dt == PRECIS_BFLOAT16) return pr_bf16_to_f32(((const uint16_t *)p)[i]);
    return pr_f16_to_f32(((const uint16_t *)p)[i]);
}

static inline void kn_st1(void *p, pr_dtype dt, int64_t i, float v) {
    if (dt == PRECIS_FLOAT32)
        ((float *)p)[i] = v;
    else if (dt == PRECIS_BFLOAT16)
        ((uint16_t *)p)[i] = pr_f32_to_bf16(v);
    else
        ((uint16_t *)p)[i] = pr_f32_to_f16(v);
}

/* A small float parameter tensor (any float dtype incl. float64) as float. */
static inline float kn_ldparam(const void *p, pr_dtype dt, int64_t i) {
    if (dt == PRECIS_FLOAT64) return (float)((const double *)p)[i];
    return kn_ld1(p, dt, i);
}

/* ------------------------------------------------------------ AVX-512 */

KN_AVX512 static inline __m512 kn_bf16x16_to_ps(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Round to nearest even; NaN stays a quiet NaN (as pr_f32_to_bf16). */
KN_AVX512 static inline __m256i kn_ps_to_bf16x16(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

/* 16 elements at index i of a float32/bfloat16/float16 array. */
KN_AVX512 static inline __m512 kn_ld16(const void *p, pr_dtype dt, int64_t i) {
    if (dt == PRECIS_FLOAT32) return _mm512_loadu_ps((const float *)p + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i));
    return dt == PRECIS_BFLOAT16 ? kn_bf16x16_to_ps(h) : _mm512_cvtph_ps(h);
}

/* Masked: lanes off the mask read nothing and are 0. */
KN_AVX512 static inline __m512 kn_ld16z(const void *p, pr_dtype dt, int64_t i, __mmask16 m) {
    if (dt == PRECIS_FLOAT32) return _mm512_maskz_loadu_ps(m, (const float *)p + i);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i);
    return dt == PRECIS_BFLOAT16 ? kn_bf16x16_to_ps(h) : _mm512_cvtph_ps(h);
}

/* Masked, lanes off the mask get `fill`. */
KN_AVX512 static inline __m512 kn_ld16f(const void *p, pr_dtype dt, int64_t i, __mmask16 m,
                                        __m512 fill) {
    return _mm512_mask_blend_ps(m, fill, kn_ld16z(p, dt, i, m));
}

KN_AVX512 static inline void kn_st16(void *p, pr_dtype dt, int64_t i, __m512 v) {
    if (dt == PRECIS_FLOAT32)
        _mm512_storeu_ps((float *)p + i, v);
    else if (dt == PRECIS_BFLOAT16)
        _mm256_storeu_si256((__m256i *)((uint16_t *)p + i), kn_ps_to_bf16x16(v));
    else
        _mm256_storeu_si256((__m256i *)((uint16_t *)p + i),
                            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

KN_AVX512 static inline void kn_st16m(void *p, pr_dtype dt, int64_t i, __m512 v, __mmask16 m) {
    if (dt == PRECIS_FLOAT32)
        _mm512_mask_storeu_ps((float *)p + i, m, v);
    else if (dt == PRECIS_BFLOAT16)
        _mm256_mask_storeu_epi16((uint16_t *)p + i, m, kn_ps_to_bf16x16(v));
    else
        _mm256_mask_storeu_epi16((uint16_t *)p + i, m,
                                 _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

static inline __mmask16 kn_tail(int64_t n) { return (__mmask16)((1u << n) - 1u); }

/* exp(x), ~1 ulp over the float range (Cephes polynomial, 2^n by scalef so
 * that results below FLT_MIN come out denormal / 0). */
KN_AVX512 static inline __m512 kn_exp16(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.7228f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

/* n elements of src (dtype dt) into float dst, and back. */
KN_AVX512 static inline void kn_to_f32_512(const void *src, pr_dtype dt, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, kn_ld16(src, dt, i));
    if (i < n) _mm512_mask_storeu_ps(dst + i, kn_tail(n - i), kn_ld16z(src, dt, i, kn_tail(n - i)));
}

KN_AVX512 static inline void kn_from_f32_512(const float *src, pr_dtype dt, void *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) kn_st16(dst, dt, i, _mm512_loadu_ps(src + i));
    if (i < n) kn_st16m(dst, dt, i, _mm512_maskz_loadu_ps(kn_tail(n - i), src + i), kn_tail(n - i));
}

/* Per-channel reductions over pixels [0, P) of an NHWC image slice (pixel
 * stride C): acc[c] (C floats, initialised by the caller) += x (KN_SUM),
 * += (x - mean[c])^2 (KN_SQ), or = max(acc, x) (KN_MAX). The pixels are
 * read contiguously; acc stays in L1. */
enum { KN_SUM, KN_SQ, KN_MAX };

static inline void kn_nhwc_acc_scalar(const void *x, pr_dtype dt, int64_t P, int64_t C, int mode,
                                      const float *mean, float *acc) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t c = 0; c < C; c++) {
            const float v = kn_ld1(x, dt, p * C + c);
            if (mode == KN_SUM) {
                acc[c] += v;
            } else if (mode == KN_SQ) {
                const float d = v - mean[c];
                acc[c] += d * d;
            } else {
                acc[c] = v > acc[c] ? v : acc[c];
            }
        }
}

KN_AVX512 static inline void kn_nhwc_acc_512(const void *x, pr_dtype dt, int64_t P, int64_t C,
                                             int mode, const float *mean, float *acc) {
    const int64_t Cv = C & ~(int64_t)15;
    const __mmask16 tm = kn_tail(C & 15);
    for (int64_t p = 0; p < P; p++) {
        const int64_t o = p * C;
        int64_t c = 0;
        for (; c < Cv; c += 16) {
            __m512 v = kn_ld16(x, dt, o + c), a = _mm512_loadu_ps(acc + c);
            if (mode == KN_SUM) {
                a = _mm512_add_ps(a, v);
            } else if (mode == KN_SQ) {
                __m512 d = _mm512_sub_ps(v, _mm512_loadu_ps(mean + c));
                a = _mm512_fmadd_ps(d, d, a);
            } else {
                a = _mm512_max_ps(a, v);
            }
            _mm512_storeu_ps(acc + c, a);
        }
        if (c < C) {
            __m512 v = kn_ld16z(x, dt, o + c, tm), a = _mm512_maskz_loadu_ps(tm, acc + c);
            if (mode == KN_SUM) {
                a = _mm512_add_ps(a, v);
            } else if (mode == KN_SQ) {
                __m512 d = _mm512_sub_ps(v, _mm512_maskz_loadu_ps(tm, mean + c));
                a = _mm512_fmadd_ps(d, d, a);
            } else {
                a = _mm512_max_ps(a, v);
            }
            _mm512_mask_storeu_ps(acc + c, tm, a);
        }
    }
}

/* Pixels per task of the NHWC reductions (float partial sums stay exact
 * enough over this many terms). */
#define KN_NHWC_CHUNK 512

#endif /* PR_KN_INTERNAL */

#endif

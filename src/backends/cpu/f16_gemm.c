/* FP16-in/out, float32-compute GEMM (see f16_gemm.h). */
#define _GNU_SOURCE /* syscall() for arch_prctl (AMX permission) */
#include "backends/cpu/f16_gemm.h"

#include <immintrin.h>
#include <omp.h>
#include <pthread.h>
#include <string.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/dtype.h"

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define T2 __attribute__((target("avx2,fma,f16c")))
#define TAMX                                                                                       \
    __attribute__((target("amx-tile,amx-bf16,avx512bf16,avx512f,avx512bw,avx512vl,avx2,fma,"       \
                          "f16c")))
#define AINL inline __attribute__((always_inline))

#define NR PR_F16_NR
#define KCB 256        /* K block */
#define KCS (KCB + 16) /* row stride of packed float32 A (off a 4 KiB multiple) */
#define NCMAX 512      /* columns per tile */

/* Rows of the register (AMX: tile) block and of a tile, per ISA. */
#define MR_512 14
#define MR_2 6
#define MR_S 4
#define MR_AMX 32 /* 2 x 2 tiles of 16 x 16 */
static int isa_mr(pr_f16_isa isa) {
    return isa == PR_F16_ISA_AMX      ? MR_AMX
           : isa == PR_F16_ISA_AVX512 ? MR_512
           : isa == PR_F16_ISA_AVX2   ? MR_2
                                      : MR_S;
}
static int isa_mc(pr_f16_isa isa) { return isa == PR_F16_ISA_AMX ? 128 : isa_mr(isa) * 8; }
#define MC_MAX 128

/* Linux hands out AMX tile state only after a per-process request. */
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static bool amx_ok;
static void amx_request(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    amx_ok = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
#endif
}

pr_f16_isa pr_f16_isa_best(void) {
    const pr_cpu_features *f = pr_cpu_features_get();
    if (f->avx512f && f->avx512bw && f->avx512vl && f->avx2 && f->fma && f->f16c) {
        if (f->amx_tile && f->amx_bf16 && f->avx512_bf16) {
            pthread_once(&amx_once, amx_request);
            if (amx_ok) return PR_F16_ISA_AMX;
        }
        return PR_F16_ISA_AVX512;
    }
    if (f->avx2 && f->fma && f->f16c) return PR_F16_ISA_AVX2;
    return PR_F16_ISA_SCALAR;
}

const char *pr_f16_isa_name(pr_f16_isa isa) {
    switch (isa) {
    case PR_F16_ISA_AMX: return "amx"; /* bf16x3 products */
    case PR_F16_ISA_AVX512: return "avx512";
    case PR_F16_ISA_AVX2: return "avx2";
    default: return "scalar";
    }
}

/* ------------------------------------------------------------ conversions */

T512 static void cvt_in_512(const uint16_t *s, float *d, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm512_storeu_ps(d + j, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + j))));
    if (j < n) {
        __mmask16 m = (__mmask16)((1u << (n - j)) - 1);
        _mm512_mask_storeu_ps(d + j, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, s + j)));
    }
}
T2 static void cvt_in_2(const uint16_t *s, float *d, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(d + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + j))));
    for (; j < n; j++) d[j] = pr_f16_to_f32(s[j]);
}
T512 static void cvt_out_512(const float *s, uint16_t *d, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm256_storeu_si256((__m256i *)(d + j),
                            _mm512_cvtps_ph(_mm512_loadu_ps(s + j), _MM_FROUND_TO_NEAREST_INT));
    if (j < n) {
        __mmask16 m = (__mmask16)((1u << (n - j)) - 1);
        _mm256_mask_storeu_epi16(
            d + j, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, s + j), _MM_FROUND_TO_NEAREST_INT));
    }
}
T2 static void cvt_out_2(const float *s, uint16_t *d, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm_storeu_si128((__m128i *)(d + j),
                         _mm256_cvtps_ph(_mm256_loadu_ps(s + j), _MM_FROUND_TO_NEAREST_INT));
    for (; j < n; j++) d[j] = pr_f32_to_f16(s[j]);
}

void pr_f16_to_f32_n(pr_f16_isa isa, const uint16_t *src, float *dst, int64_t n) {
    if (isa >= PR_F16_ISA_AVX512) cvt_in_512(src, dst, n);
    else if (isa == PR_F16_ISA_AVX2) cvt_in_2(src, dst, n);
    else
        for (int64_t j = 0; j < n; j++) dst[j] = pr_f16_to_f32(src[j]);
}

void pr_f32_to_f16_n(pr_f16_isa isa, const float *src, uint16_t *dst, int64_t n) {
    if (isa >= PR_F16_ISA_AVX512) cvt_out_512(src, dst, n);
    else if (isa == PR_F16_ISA_AVX2) cvt_out_2(src, dst, n);
    else
        for (int64_t j = 0; j < n; j++) dst[j] = pr_f32_to_f16(src[j]);
}

/* ------------------------------------------------------------ vector math */
/* expf: Cephes polynomial on [-ln2/2, ln2/2], relative error ~1e-7; inputs
 * clamped to [-87.3, 88.3]. erf: Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7). */

#define EXP_C1 0.693359375f
#define EXP_C2 -2.12194440e-4f
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f
#define ERF_P 0.3275911f
#define ERF_A1 0.254829592f
#define ERF_A2 -0.284496736f
#define ERF_A3 1.421413741f
#define ERF_A4 -1.453152027f
#define ERF_A5 1.061405429f

#define S16(v) _mm512_set1_ps(v)
T512 static AINL __m512 exp512(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, S16(-87.3f)), S16(88.3f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, S16(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, S16(EXP_C1), x);
    r = _mm512_fnmadd_ps(n, S16(EXP_C2), r);
    __m512 p = S16(EXP_P0);
    p = _mm512_fmadd_ps(p, r, S16(EXP_P1));
    p = _mm512_fmadd_ps(p, r, S16(EXP_P2));
    p = _mm512_fmadd_ps(p, r, S16(EXP_P3));
    p = _mm512_fmadd_ps(p, r, S16(EXP_P4));
    p = _mm512_fmadd_ps(p, r, S16(EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, S16(1.0f)));
    return _mm512_scalef_ps(p, n);
}
T512 static AINL __m512 sigmoid512(__m512 x) {
    return _mm512_div_ps(S16(1.0f),
                         _mm512_add_ps(S16(1.0f), exp512(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}
T512 static AINL __m512 tanh512(__m512 x) {
    __m512 s = sigmoid512(_mm512_add_ps(x, x));
    return _mm512_fmsub_ps(s, S16(2.0f), S16(1.0f));
}
T512 static AINL __m512 erf512(__m512 x) {
    __m512 ax = _mm512_abs_ps(x);
    __m512 t = _mm512_div_ps(S16(1.0f), _mm512_fmadd_ps(ax, S16(ERF_P), S16(1.0f)));
    __m512 p = S16(ERF_A5);
    p = _mm512_fmadd_ps(p, t, S16(ERF_A4));
    p = _mm512_fmadd_ps(p, t, S16(ERF_A3));
    p = _mm512_fmadd_ps(p, t, S16(ERF_A2));
    p = _mm512_fmadd_ps(p, t, S16(ERF_A1));
    p = _mm512_mul_ps(p, t);
    __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(ax, ax)));
    __m512 y = _mm512_fnmadd_ps(p, e, S16(1.0f));
    /* copy the sign of x */
    return _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(y),
        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
}
T512 static AINL __m512 clamp512(__m512 v, float lo, float hi) {
    return _mm512_min_ps(_mm512_max_ps(v, S16(lo)), S16(hi));
}
T512 static AINL __m512 act512(const pr_act *a, __m512 x) {
    switch (a->kind) {
    case PR_ACT_NONE: return x;
    case PR_ACT_RELU: return _mm512_max_ps(x, _mm512_setzero_ps());
    case PR_ACT_LEAKY_RELU: {
        __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
        return _mm512_mask_mul_ps(x, neg, x, S16(a->alpha));
    }
    case PR_ACT_CLIP: {
        /* x < lo ? lo : (x > hi ? hi : x), NaN passes through */
        __mmask16 lt = _mm512_cmp_ps_mask(x, S16(a->alpha), _CMP_LT_OQ);
        __mmask16 gt = _mm512_cmp_ps_mask(x, S16(a->beta), _CMP_GT_OQ);
        x = _mm512_mask_mov_ps(x, gt, S16(a->beta));
        return _mm512_mask_mov_ps(x, lt, S16(a->alpha));
    }
    case PR_ACT_SIGMOID: return sigmoid512(x);
    case PR_ACT_HARD_SIGMOID:
        return clamp512(_mm512_fmadd_ps(x, S16(a->alpha), S16(a->beta)), 0.0f, 1.0f);
    case PR_ACT_HARD_SWISH:
        return _mm512_mul_ps(x,
                             clamp512(_mm512_fmadd_ps(x, S16(1.0f / 6.0f), S16(0.5f)), 0.0f, 1.0f));
    case PR_ACT_TANH: return tanh512(x);
    case PR_ACT_GELU:
        return _mm512_mul_ps(
            _mm512_mul_ps(S16(0.5f), x),
            _mm512_add_ps(S16(1.0f), erf512(_mm512_mul_ps(x, S16(0.70710678118654752f)))));
    case PR_ACT_GELU_TANH: {
        __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
        __m512 u = _mm512_mul_ps(S16(0.79788456080286536f), _mm512_fmadd_ps(x3, S16(0.044715f), x));
        return _mm512_mul_ps(_mm512_mul_ps(S16(0.5f), x), _mm512_add_ps(S16(1.0f), tanh512(u)));
    }
    case PR_ACT_SWISH: return _mm512_mul_ps(x, sigmoid512(x));
    case PR_ACT_AFFINE: return _mm512_fmadd_ps(x, S16(a->alpha), S16(a->beta));
    default: return x;
    }
}

#define S8(v) _mm256_set1_ps(v)
T2 static AINL __m256 exp256(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, S8(-87.3f)), S8(88.3f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, S8(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, S8(EXP_C1), x);
    r = _mm256_fnmadd_ps(n, S8(EXP_C2), r);
    __m256 p = S8(EXP_P0);
    p = _mm256_fmadd_ps(p, r, S8(EXP_P1));
    p = _mm256_fmadd_ps(p, r, S8(EXP_P2));
    p = _mm256_fmadd_ps(p, r, S8(EXP_P3));
    p = _mm256_fmadd_ps(p, r, S8(EXP_P4));
    p = _mm256_fmadd_ps(p, r, S8(EXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, S8(1.0f)));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
T2 static AINL __m256 sigmoid256(__m256 x) {
    return _mm256_div_ps(S8(1.0f),
                         _mm256_add_ps(S8(1.0f), exp256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
T2 static AINL __m256 tanh256(__m256 x) {
    __m256 s = sigmoid256(_mm256_add_ps(x, x));
    return _mm256_fmsub_ps(s, S8(2.0f), S8(1.0f));
}
T2 static AINL __m256 erf256(__m256 x) {
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    __m256 ax = _mm256_andnot_ps(sign, x);
    __m256 t = _mm256_div_ps(S8(1.0f), _mm256_fmadd_ps(ax, S8(ERF_P), S8(1.0f)));
    __m256 p = S8(ERF_A5);
    p = _mm256_fmadd_ps(p, t, S8(ERF_A4));
    p = _mm256_fmadd_ps(p, t, S8(ERF_A3));
    p = _mm256_fmadd_ps(p, t, S8(ERF_A2));
    p = _mm256_fmadd_ps(p, t, S8(ERF_A1));
    p = _mm256_mul_ps(p, t);
    __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(ax, ax)));
    __m256 y = _mm256_fnmadd_ps(p, e, S8(1.0f));
    return _mm256_or_ps(y, _mm256_and_ps(x, sign));
}
T2 static AINL __m256 clamp256(__m256 v, float lo, float hi) {
    return _mm256_min_ps(_mm256_max_ps(v, S8(lo)), S8(hi));
}
T2 static AINL __m256 act256(const pr_act *a, __m256 x) {
    switch (a->kind) {
    case PR_ACT_NONE: return x;
    case PR_ACT_RELU: return _mm256_max_ps(x, _mm256_setzero_ps());
    case PR_ACT_LEAKY_RELU: {
        __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
        return _mm256_blendv_ps(x, _mm256_mul_ps(x, S8(a->alpha)), neg);
    }
    case PR_ACT_CLIP: {
        __m256 lt = _mm256_cmp_ps(x, S8(a->alpha), _CMP_LT_OQ);
        __m256 gt = _mm256_cmp_ps(x, S8(a->beta), _CMP_GT_OQ);
        x = _mm256_blendv_ps(x, S8(a->beta), gt);
        return _mm256_blendv_ps(x, S8(a->alpha), lt);
    }
    case PR_ACT_SIGMOID: return sigmoid256(x);
    case PR_ACT_HARD_SIGMOID:
        return clamp256(_mm256_fmadd_ps(x, S8(a->alpha), S8(a->beta)), 0.0f, 1.0f);
    case PR_ACT_HARD_SWISH:
        return _mm256_mul_ps(x,
                             clamp256(_mm256_fmadd_ps(x, S8(1.0f / 6.0f), S8(0.5f)), 0.0f, 1.0f));
    case PR_ACT_TANH: return tanh256(x);
    case PR_ACT_GELU:
        return _mm256_mul_ps(
            _mm256_mul_ps(S8(0.5f), x),
            _mm256_add_ps(S8(1.0f), erf256(_mm256_mul_ps(x, S8(0.70710678118654752f)))));
    case PR_ACT_GELU_TANH: {
        __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
        __m256 u = _mm256_mul_ps(S8(0.79788456080286536f), _mm256_fmadd_ps(x3, S8(0.044715f), x));
        return _mm256_mul_ps(_mm256_mul_ps(S8(0.5f), x), _mm256_add_ps(S8(1.0f), tanh256(u)));
    }
    case PR_ACT_SWISH: return _mm256_mul_ps(x, sigmoid256(x));
    case PR_ACT_AFFINE: return _mm256_fmadd_ps(x, S8(a->alpha), S8(a->beta));
    default: return x;
    }
}

/* ------------------------------------------------------------ epilogue */

T512 static void epi_512(const pr_f16_epi *e, const float *acc, int64_t n, int64_t col0,
                         const uint16_t *z, uint16_t *out) {
    const __m512 va = S16(e->alpha), vc = S16(e->bias_c);
    const bool sa = e->alpha != 1.0f, sc = e->bias_c != 0.0f;
    const float *b = e->bias ? e->bias + col0 : NULL;
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, acc + j);
        if (sa) v = _mm512_mul_ps(v, va);
        if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + j));
        if (sc) v = _mm512_add_ps(v, vc);
        v = act512(&e->act, v);
        if (z) v = _mm512_add_ps(v, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, z + j)));
        v = act512(&e->act2, v);
        _mm256_mask_storeu_epi16(out + j, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
}

T2 static void epi_2(const pr_f16_epi *e, const float *acc, int64_t n, int64_t col0,
                     const uint16_t *z, uint16_t *out) {
    const __m256 va = S8(e->alpha), vc = S8(e->bias_c);
    const bool sa = e->alpha != 1.0f, sc = e->bias_c != 0.0f;
    const float *b = e->bias ? e->bias + col0 : NULL;
    for (int64_t j = 0; j < n; j += 8) {
        int64_t r = n - j < 8 ? n - j : 8;
        float ta[8] = {0}, tb[8] = {0};
        uint16_t tz[8] = {0}, to[8];
        const float *pa = acc + j, *pb = b ? b + j : NULL;
        const uint16_t *pz = z ? z + j : NULL;
        uint16_t *po = out + j;
        if (r < 8) {
            memcpy(ta, pa, (size_t)r * 4);
            pa = ta;
            if (pb) {
                memcpy(tb, pb, (size_t)r * 4);
                pb = tb;
            }
            if (pz) {
                memcpy(tz, pz, (size_t)r * 2);
                pz = tz;
            }
            po = to;
        }
        __m256 v = _mm256_loadu_ps(pa);
        if (sa) v = _mm256_mul_ps(v, va);
        if (pb) v = _mm256_add_ps(v, _mm256_loadu_ps(pb));
        if (sc) v = _mm256_add_ps(v, vc);
        v = act256(&e->act, v);
        if (pz) v = _mm256_add_ps(v, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pz)));
        v = act256(&e->act2, v);
        _mm_storeu_si128((__m128i *)po, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        if (r < 8) memcpy(out + j, to, (size_t)r * 2);
    }
}

static void epi_s(const pr_f16_epi *e, const float *acc, int64_t n, int64_t col0, const uint16_t *z,
                  uint16_t *out) {
    for (int64_t j = 0; j < n; j++) {
        float v = e->alpha * acc[j] + e->bias_c;
        if (e->bias) v += e->bias[col0 + j];
        v = pr_act_apply(&e->act, v);
        if (z) v += pr_f16_to_f32(z[j]);
        v = pr_act_apply(&e->act2, v);
        out[j] = pr_f32_to_f16(v);
    }
}

void pr_f16_epilogue_row(pr_f16_isa isa, const pr_f16_epi *e, const float *acc, int64_t n,
                         int64_t col0, const uint16_t *z, uint16_t *out) {
    if (isa >= PR_F16_ISA_AVX512) epi_512(e, acc, n, col0, z, out);
    else if (isa == PR_F16_ISA_AVX2) epi_2(e, acc, n, col0, z, out);
    else epi_s(e, acc, n, col0, z, out);
}

/* ------------------------------------------------------------ micro-kernels */
/* C[mr x NR] (f32, row stride ldc) (+)= A[mr x kc] (row stride KCS) x
 * B[kc x NR] (row stride NR). */
typedef void (*kern_fn)(int64_t kc, const float *A, const float *B, float *C, int64_t ldc,
                        int first);

T512 static AINL void k512(const int mr, int64_t kc, const float *restrict A,
                           const float *restrict B, float *restrict C, int64_t ldc, int first) {
    __m512 c0[MR_512], c1[MR_512];
#pragma GCC unroll 14
    for (int i = 0; i < mr; i++) {
        if (first) {
            c0[i] = _mm512_setzero_ps();
            c1[i] = _mm512_setzero_ps();
        } else {
            c0[i] = _mm512_load_ps(C + i * ldc);
            c1[i] = _mm512_load_ps(C + i * ldc + 16);
        }
    }
    for (int64_t k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_load_ps(B + k * NR), b1 = _mm512_load_ps(B + k * NR + 16);
#pragma GCC unroll 14
        for (int i = 0; i < mr; i++) {
            const __m512 a = _mm512_set1_ps(A[i * KCS + k]);
            c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
        }
    }
#pragma GCC unroll 14
    for (int i = 0; i < mr; i++) {
        _mm512_store_ps(C + i * ldc, c0[i]);
        _mm512_store_ps(C + i * ldc + 16, c1[i]);
    }
}

/* AVX2: the 32-column panel as two 16-column halves. */
T2 static AINL void k2(const int mr, int64_t kc, const float *restrict A, const float *restrict B,
                       float *restrict C, int64_t ldc, int first) {
    for (int h = 0; h < 2; h++) {
        __m256 c0[MR_2], c1[MR_2];
        const float *Bh = B + h * 16;
        float *Ch = C + h * 16;
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            if (first) {
                c0[i] = _mm256_setzero_ps();
                c1[i] = _mm256_setzero_ps();
            } else {
                c0[i] = _mm256_load_ps(Ch + i * ldc);
                c1[i] = _mm256_load_ps(Ch + i * ldc + 8);
            }
        }
        for (int64_t k = 0; k < kc; k++) {
            const __m256 b0 = _mm256_load_ps(Bh + k * NR), b1 = _mm256_load_ps(Bh + k * NR + 8);
#pragma GCC unroll 6
            for (int i = 0; i < mr; i++) {
                const __m256 a = _mm256_broadcast_ss(A + i * KCS + k);
                c0[i] = _mm256_fmadd_ps(a, b0, c0[i]);
                c1[i] = _mm256_fmadd_ps(a, b1, c1[i]);
            }
        }
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            _mm256_store_ps(Ch + i * ldc, c0[i]);
            _mm256_store_ps(Ch + i * ldc + 8, c1[i]);
        }
    }
}

static inline void ks(const int mr, int64_t kc, const float *restrict A, const float *restrict B,
                      float *restrict C, int64_t ldc, int first) {
    float acc[MR_S][NR];
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < NR; j++) acc[i][j] = first ? 0.0f : C[i * ldc + j];
    for (int64_t k = 0; k < kc; k++)
        for (int i = 0; i < mr; i++) {
            const float a = A[i * KCS + k];
            for (int j = 0; j < NR; j++) acc[i][j] += a * B[k * NR + j];
        }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < NR; j++) C[i * ldc + j] = acc[i][j];
}

#define KDEF512(m)                                                                                 \
    T512 static void k512_##m(int64_t kc, const float *A, const float *B, float *C, int64_t ldc,   \
                              int first) {                                                         \
        k512(m, kc, A, B, C, ldc, first);                                                          \
    }
KDEF512(1)
KDEF512(2)
KDEF512(3)
KDEF512(4)
KDEF512(5)
KDEF512(6)
KDEF512(7)
KDEF512(8)
KDEF512(9)
KDEF512(10)
KDEF512(11)
KDEF512(12)
KDEF512(13)
KDEF512(14)
static const kern_fn kern512[MR_512 + 1] = {NULL,    k512_1,  k512_2,  k512_3,  k512_4,
                                            k512_5,  k512_6,  k512_7,  k512_8,  k512_9,
                                            k512_10, k512_11, k512_12, k512_13, k512_14};

#define KDEF2(m)                                                                                   \
    T2 static void k2_##m(int64_t kc, const float *A, const float *B, float *C, int64_t ldc,       \
                          int first) {                                                             \
        k2(m, kc, A, B, C, ldc, first);                                                            \
    }
KDEF2(1)
KDEF2(2)
KDEF2(3)
KDEF2(4)
KDEF2(5)
KDEF2(6)
static const kern_fn kern2[MR_2 + 1] = {NULL, k2_1, k2_2, k2_3, k2_4, k2_5, k2_6};

#define KDEFS(m)                                                                                   \
    static void ks_##m(int64_t kc, const float *A, const float *B, float *C, int64_t ldc,          \
                       int first) {                                                                \
        ks(m, kc, A, B, C, ldc, first);                                                            \
    }
KDEFS(1)
KDEFS(2)
KDEFS(3)
KDEFS(4)
static const kern_fn kerns[MR_S + 1] = {NULL, ks_1, ks_2, ks_3, ks_4};

static const kern_fn *isa_kernels(pr_f16_isa isa) {
    return isa >= PR_F16_ISA_AVX512 ? kern512 : isa == PR_F16_ISA_AVX2 ? kern2 : kerns;
}

/* ------------------------------------------------------------ AMX */
/* AMX-BF16 computes bf16 x bf16 products exactly and sums them in float32.
 * Each operand x is split into bf16 parts x = h + l (h = bf16(x), l =
 * bf16(x - h)); an f16 value splits exactly (11 significant bits <= 8 + 8),
 * a float32 weight keeps 16 of its 24 bits (relative error <= 2^-17). Then
 *   a * b ~ ah*bh + ah*bl + al*bh      (al*bl <= 2^-18 |a b| is dropped)
 * three bf16 tile products per K step, each at 1024 flops/cycle/core.
 *
 * Packed B (per 32-column panel; K padded to Kp, a multiple of 32): the
 * high parts of columns 0-15, of columns 16-31, then the low parts of the
 * same; each a tile-B ("VNNI") block of Kp/2 rows of 16 column pairs:
 * element (k, n) at row k/2, position 2*n + k%2. Packed A: high and low
 * parts as bf16 rows of the K block (row stride KCB). */

static uint16_t bf16_hi(float x) { return pr_f32_to_bf16(x); }
static uint16_t bf16_lo(float x, uint16_t hi) {
    float h = pr_bf16_to_f32(hi);
    return x == h ? 0 : pr_f32_to_bf16(x - h);
}

/* Element (k, j) of panel `pan` (j < 32): high and low parts. */
static void amx_put_b(uint16_t *pan, int64_t Kp, int64_t k, int64_t j, float v) {
    const uint16_t h = bf16_hi(v), l = bf16_lo(v, h);
    const int64_t q = j / 16, off = (k / 2) * 32 + (j % 16) * 2 + (k % 2);
    pan[q * Kp * 16 + off] = h;
    pan[Kp * 32 + q * Kp * 16 + off] = l;
}

/* Rows of f16 (stride lds) into bf16 high/low parts (stride ldd), columns
 * [kc, kcp) zeroed (kcp a multiple of 32). An f16 value splits exactly:
 * the high part has 8 of its 11 significant bits, the rest at most 3. */
/* x rounded to bf16 (to nearest even), as float32. For values from f16
 * (no NaN payload only in the low bits) x - result is exact in bf16. */
TAMX static AINL __m512 bf16_rne(__m512 x, __m512i mhi) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd));
    return _mm512_castsi512_ps(_mm512_and_si512(r, mhi));
}

TAMX static void amx_split(const uint16_t *src, int64_t lds, int64_t rows, int64_t kc, int64_t kcp,
                           uint16_t *hi, uint16_t *lo, int64_t ldd) {
    const __m512i mhi = _mm512_set1_epi32((int)0xffff0000u);
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *sr = src + r * lds;
        for (int64_t k = 0; k < kcp; k += 32) {
            const int64_t left = kc - k;
            const __mmask32 m = left >= 32  ? (__mmask32)0xffffffffu
                                : left <= 0 ? (__mmask32)0
                                            : (__mmask32)((1u << left) - 1);
            const __m512i xh = _mm512_maskz_loadu_epi16(m, sr + k);
            const __m512 x0 = _mm512_cvtph_ps(_mm512_castsi512_si256(xh));
            const __m512 x1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(xh, 1));
            const __m512 h0 = bf16_rne(x0, mhi), h1 = bf16_rne(x1, mhi);
            /* exact; 0 where x == h (also for infinities) */
            const __m512 d0 = _mm512_maskz_sub_ps(_mm512_cmp_ps_mask(x0, h0, _CMP_NEQ_UQ), x0, h0);
            const __m512 d1 = _mm512_maskz_sub_ps(_mm512_cmp_ps_mask(x1, h1, _CMP_NEQ_UQ), x1, h1);
            /* both are exact in bf16: the conversions do not round */
            _mm512_storeu_si512(hi + r * ldd + k, (__m512i)_mm512_cvtne2ps_pbh(h1, h0));
            _mm512_storeu_si512(lo + r * ldd + k, (__m512i)_mm512_cvtne2ps_pbh(d1, d0));
        }
    }
}

typedef struct __attribute__((aligned(64))) amx_cfg {
    uint8_t palette, start_row, rsv[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;
/* tiles 0-3: C (2 x 2), 4-5: A rows 0-15 / 16-31, 6-7: B columns 0-15 / 16-31 */
static const amx_cfg amx_config = {
    1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

#define CBARRIER() __asm__ volatile("" ::: "memory")

TAMX static void amx_begin(void) {
    CBARRIER();
    _tile_loadconfig(&amx_config);
}
TAMX static void amx_end(void) { _tile_release(); }

/* C[32 x 32] (f32, stride ldc floats) (+)= A x B over kcp (multiple of 32)
 * columns: Ah/Al rows at stride KCB, Bp the panel at the block's first row. */
TAMX static void kamx(int64_t kcp, const uint16_t *Ah, const uint16_t *Al, const uint16_t *Bp,
                      int64_t Kp, float *C, int64_t ldc, int first) {
    const long sa = KCB * 2, sc = (long)ldc * 4;
    const uint16_t *Bh0 = Bp, *Bh1 = Bp + Kp * 16, *Bl0 = Bp + Kp * 32, *Bl1 = Bp + Kp * 48;
    CBARRIER();
    if (first) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, C, sc);
        _tile_loadd(1, C + 16, sc);
        _tile_loadd(2, C + 16 * ldc, sc);
        _tile_loadd(3, C + 16 * ldc + 16, sc);
    }
    for (int64_t k = 0; k < kcp; k += 32) {
        _tile_loadd(4, Ah + k, sa);
        _tile_loadd(5, Ah + 16 * KCB + k, sa);
        _tile_loadd(6, Bl0 + k * 16, 64);
        _tile_loadd(7, Bl1 + k * 16, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        _tile_loadd(6, Bh0 + k * 16, 64);
        _tile_loadd(7, Bh1 + k * 16, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        _tile_loadd(4, Al + k, sa);
        _tile_loadd(5, Al + 16 * KCB + k, sa);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, C, sc);
    _tile_stored(1, C + 16, sc);
    _tile_stored(2, C + 16 * ldc, sc);
    _tile_stored(3, C + 16 * ldc + 16, sc);
}

/* The same for 16 rows (a last row block of at most 16 rows). */
TAMX static void kamx16(int64_t kcp, const uint16_t *Ah, const uint16_t *Al, const uint16_t *Bp,
                        int64_t Kp, float *C, int64_t ldc, int first) {
    const long sa = KCB * 2, sc = (long)ldc * 4;
    const uint16_t *Bh0 = Bp, *Bh1 = Bp + Kp * 16, *Bl0 = Bp + Kp * 32, *Bl1 = Bp + Kp * 48;
    CBARRIER();
    if (first) {
        _tile_zero(0);
        _tile_zero(1);
    } else {
        _tile_loadd(0, C, sc);
        _tile_loadd(1, C + 16, sc);
    }
    for (int64_t k = 0; k < kcp; k += 32) {
        _tile_loadd(4, Ah + k, sa);
        _tile_loadd(6, Bl0 + k * 16, 64);
        _tile_loadd(7, Bl1 + k * 16, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(6, Bh0 + k * 16, 64);
        _tile_loadd(7, Bh1 + k * 16, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, Al + k, sa);
        _tile_dpbf16ps(0, 5, 6);
        _tile_dpbf16ps(1, 5, 7);
    }
    _tile_stored(0, C, sc);
    _tile_stored(1, C + 16, sc);
}

void pr_f16_amx_begin(void) { amx_begin(); }
void pr_f16_amx_end(void) { amx_end(); }

void pr_f16_amx_split(const uint16_t *src, int64_t lds, int64_t rows, int64_t n, int64_t np,
                      uint16_t *hi, uint16_t *lo, int64_t ldd) {
    amx_split(src, lds, rows, n, np, hi, lo, ldd);
}

TAMX void pr_f16_amx_block(const uint16_t *hi, const uint16_t *lo, const int64_t *aoff,
                           int64_t nsteps, int64_t arow, int nrt, const float *panel, int64_t Kp,
                           float *C, int64_t ldc) {
    const long sa = (long)arow * 2, sc = (long)ldc * 4;
    const uint16_t *bp = (const uint16_t *)panel;
    const uint16_t *Bh0 = bp, *Bh1 = bp + Kp * 16, *Bl0 = bp + Kp * 32, *Bl1 = bp + Kp * 48;
    CBARRIER();
    _tile_zero(0);
    _tile_zero(1);
    if (nrt == 2) {
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t st = 0; st < nsteps; st++) {
            const uint16_t *ah = hi + aoff[st], *al = lo + aoff[st];
            const int64_t k = st * 32;
            _tile_loadd(4, ah, sa);
            _tile_loadd(5, ah + 16 * arow, sa);
            _tile_loadd(6, Bl0 + k * 16, 64);
            _tile_loadd(7, Bl1 + k * 16, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
            _tile_loadd(6, Bh0 + k * 16, 64);
            _tile_loadd(7, Bh1 + k * 16, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
            _tile_loadd(4, al, sa);
            _tile_loadd(5, al + 16 * arow, sa);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(2, C + 16 * ldc, sc);
        _tile_stored(3, C + 16 * ldc + 16, sc);
    } else {
        for (int64_t st = 0; st < nsteps; st++) {
            const uint16_t *ah = hi + aoff[st], *al = lo + aoff[st];
            const int64_t k = st * 32;
            _tile_loadd(4, ah, sa);
            _tile_loadd(6, Bl0 + k * 16, 64);
            _tile_loadd(7, Bl1 + k * 16, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_loadd(6, Bh0 + k * 16, 64);
            _tile_loadd(7, Bh1 + k * 16, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_loadd(5, al, sa);
            _tile_dpbf16ps(0, 5, 6);
            _tile_dpbf16ps(1, 5, 7);
        }
    }
    _tile_stored(0, C, sc);
    _tile_stored(1, C + 16, sc);
}

/* ------------------------------------------------------------ packing */

void pr_f16_pack_b_f32(pr_f16_isa isa, const float *src, int64_t rs, int64_t cs, int64_t K,
                       int64_t N, float *dst) {
    const int64_t np = (N + NR - 1) / NR;
    if (isa == PR_F16_ISA_AMX) {
        const int64_t Kp = (K + 31) / 32 * 32;
        memset(dst, 0, pr_f16_bpack_floats(isa, K, N) * sizeof(float));
        for (int64_t p = 0; p < np; p++) {
            uint16_t *pan = (uint16_t *)(dst + pr_f16_bpack_panel(isa, K, p));
            const int64_t n0 = p * NR, nn = N - n0 < NR ? N - n0 : NR;
            for (int64_t k = 0; k < K; k++)
                for (int64_t j = 0; j < nn; j++)
                    amx_put_b(pan, Kp, k, j, src[k * rs + (n0 + j) * cs]);
        }
        return;
    }
    for (int64_t p = 0; p < np; p++) {
        float *d = dst + p * K * NR;
        int64_t n0 = p * NR, nn = N - n0 < NR ? N - n0 : NR;
        for (int64_t k = 0; k < K; k++) {
            for (int64_t j = 0; j < nn; j++) d[k * NR + j] = src[k * rs + (n0 + j) * cs];
            for (int64_t j = nn; j < NR; j++) d[k * NR + j] = 0.0f;
        }
    }
}

/* One AMX panel from f16 rows (element (k, j) at src[k*rs + j], j < nn):
 * a VNNI row of 16 column pairs is (row k >> 16) | (row k+1 & 0xffff0000)
 * on the float32 bits, for the high parts and (exactly) the low parts. */
TAMX static void amx_pack_f16_panel(const uint16_t *src, int64_t rs, int64_t K, int64_t nn,
                                    uint16_t *pan, int64_t Kp) {
    const __m512i mhi = _mm512_set1_epi32((int)0xffff0000u);
    for (int64_t q = 0; q < 2; q++) {
        const int64_t j0 = q * 16, nq = nn - j0 < 0 ? 0 : nn - j0 > 16 ? 16 : nn - j0;
        const __mmask16 m = (__mmask16)((1u << nq) - 1);
        uint16_t *hq = pan + q * Kp * 16, *lq = pan + Kp * 32 + q * Kp * 16;
        for (int64_t k = 0; k < Kp; k += 2) {
            __m512i h[2], l[2];
            for (int t = 0; t < 2; t++) {
                const __mmask16 mk = k + t < K ? m : 0;
                const __m512 x =
                    _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, src + (k + t) * rs + j0));
                const __m512 hf = bf16_rne(x, mhi);
                const __m512 d = _mm512_maskz_sub_ps(_mm512_cmp_ps_mask(x, hf, _CMP_NEQ_UQ), x, hf);
                h[t] = _mm512_castps_si512(hf);
                l[t] = _mm512_castps_si512(d);
            }
            _mm512_storeu_si512(hq + k * 16, _mm512_or_si512(_mm512_srli_epi32(h[0], 16), h[1]));
            _mm512_storeu_si512(lq + k * 16, _mm512_or_si512(_mm512_srli_epi32(l[0], 16),
                                                             _mm512_and_si512(l[1], mhi)));
        }
    }
}

void pr_f16_pack_b_f16(pr_f16_isa isa, const uint16_t *src, int64_t rs, int64_t cs, int64_t K,
                       int64_t N, float *dst) {
    const int64_t np = (N + NR - 1) / NR;
    float row[NR];
    if (isa == PR_F16_ISA_AMX && cs == 1) {
        const int64_t Kp = (K + 31) / 32 * 32;
        for (int64_t p = 0; p < np; p++) {
            const int64_t n0 = p * NR, nn = N - n0 < NR ? N - n0 : NR;
            amx_pack_f16_panel(src + n0, rs, K, nn,
                               (uint16_t *)(dst + pr_f16_bpack_panel(isa, K, p)), Kp);
        }
        return;
    }
    if (isa == PR_F16_ISA_AMX) {
        const int64_t Kp = (K + 31) / 32 * 32;
        memset(dst, 0, pr_f16_bpack_floats(isa, K, N) * sizeof(float));
        for (int64_t p = 0; p < np; p++) {
            uint16_t *pan = (uint16_t *)(dst + pr_f16_bpack_panel(isa, K, p));
            const int64_t n0 = p * NR, nn = N - n0 < NR ? N - n0 : NR;
            for (int64_t k = 0; k < K; k++) {
                if (cs == 1) pr_f16_to_f32_n(isa, src + k * rs + n0, row, nn);
                else
                    for (int64_t j = 0; j < nn; j++)
                        row[j] = pr_f16_to_f32(src[k * rs + (n0 + j) * cs]);
                for (int64_t j = 0; j < nn; j++) amx_put_b(pan, Kp, k, j, row[j]);
            }
        }
        return;
    }
    for (int64_t p = 0; p < np; p++) {
        float *d = dst + p * K * NR;
        int64_t n0 = p * NR, nn = N - n0 < NR ? N - n0 : NR;
        for (int64_t k = 0; k < K; k++) {
            if (cs == 1) {
                pr_f16_to_f32_n(isa, src + k * rs + n0, d + k * NR, nn);
            } else {
                for (int64_t j = 0; j < nn; j++)
                    d[k * NR + j] = pr_f16_to_f32(src[k * rs + (n0 + j) * cs]);
            }
            for (int64_t j = nn; j < NR; j++) d[k * NR + j] = 0.0f;
        }
    }
}

/* Rows [m0, m0+mc) x columns [k0, k0+kc) of A as f16 rows: *rows, stride
 * *ld (into buf, stride KCB, unless A can be read in place). */
static void pack_a_job(const pr_f16_gemm_job *j, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                       uint16_t *buf, const uint16_t **rows, int64_t *ld) {
    *rows = buf;
    *ld = KCB;
    if (j->pack_a) {
        j->pack_a(j->pack_ctx, m0, mc, k0, kc, buf, KCB);
    } else if (!j->trans_a) {
        *rows = j->a + m0 * j->lda + k0;
        *ld = j->lda;
    } else {
        for (int64_t k = 0; k < kc; k++) {
            const uint16_t *s = j->a + (k0 + k) * j->lda + m0;
            for (int64_t i = 0; i < mc; i++) buf[i * KCB + k] = s[i];
        }
    }
}

/* ------------------------------------------------------------ driver */

typedef struct tile_geom {
    int64_t mc, nc, tm, tn, t0; /* tile rows/cols, tile counts, first tile index */
} tile_geom;

static size_t align64(size_t b) { return (b + 63) & ~(size_t)63; }

/* per thread: packed A (f32), C accumulators, A's bf16 parts (AMX), A's
 * f16 rows */
static size_t thread_floats(void) {
    return (size_t)MC_MAX * KCS + (size_t)MC_MAX * NCMAX + (size_t)MC_MAX * KCB +
           (size_t)MC_MAX * KCB / 2;
}

size_t pr_f16_gemm_scratch_size(pr_f16_isa isa, int n_jobs, int nt) {
    (void)isa;
    if (nt < 1) nt = 1;
    return align64((size_t)(n_jobs > 0 ? n_jobs : 1) * sizeof(tile_geom)) +
           (size_t)nt * thread_floats() * sizeof(float) + 64;
}

/* K blocks: nkb blocks of kcb (AMX: a multiple of 32) */
static void k_blocks(pr_f16_isa isa, int64_t K, int64_t *nkb, int64_t *kcb) {
    *nkb = K > 0 ? (K + KCB - 1) / KCB : 1;
    *kcb = K > 0 ? (K + *nkb - 1) / *nkb : 0;
    if (isa == PR_F16_ISA_AMX) *kcb = (*kcb + 31) / 32 * 32;
}

static void epilogue_rows(pr_f16_isa isa, const pr_f16_gemm_job *j, const float *acc, int64_t ldcc,
                          int64_t m, int64_t rows, int64_t col0, int64_t ncol) {
    for (int64_t i = 0; i < rows; i++, m++)
        pr_f16_epilogue_row(isa, j->epi, acc + i * ldcc, ncol, col0,
                            j->z ? j->z + m * j->ldz + col0 : NULL, j->c + m * j->ldc + col0);
}

/* One 32 (or, with at most 16 rows left, 16) x 32 block of the AMX path:
 * rows [ir, ...) of the split A block, panel pg of B from row k0. */
static void amx_call(pr_f16_isa isa, const pr_f16_gemm_job *j, int64_t pg, int64_t k0, int64_t kcp,
                     int64_t Kp, const uint16_t *Ah, const uint16_t *Al, int64_t rows_left,
                     int64_t ir, float *C, int64_t ldc, int first) {
    const uint16_t *Bp = (const uint16_t *)(j->b + pr_f16_bpack_panel(isa, j->K, pg)) + k0 * 16;
    if (rows_left > 16) kamx(kcp, Ah + ir * KCB, Al + ir * KCB, Bp, Kp, C, ldc, first);
    else kamx16(kcp, Ah + ir * KCB, Al + ir * KCB, Bp, Kp, C, ldc, first);
}

static void run_tile(pr_f16_isa isa, const kern_fn *kern, int MR, const pr_f16_gemm_job *j,
                     const tile_geom *g, int64_t t, float *Ap, float *Cacc, uint16_t *Ah,
                     uint16_t *Al, uint16_t *A16) {
    const int64_t tm_i = t / g->tn, tn_i = t % g->tn;
    const int64_t m0 = tm_i * g->mc, mc = j->M - m0 < g->mc ? j->M - m0 : g->mc;
    const int64_t n0 = tn_i * g->nc, nc = j->N - n0 < g->nc ? j->N - n0 : g->nc;
    const int64_t p0 = n0 / NR, np = (nc + NR - 1) / NR, ldcc = np * NR;
    const int64_t K = j->K;
    const bool amx = isa == PR_F16_ISA_AMX;
    const int64_t Kp = amx ? (K + 31) / 32 * 32 : K;
    int64_t nkb, kcb;
    k_blocks(isa, K, &nkb, &kcb);
    for (int64_t kb = 0; kb < nkb; kb++) {
        const int64_t k0 = kb * kcb, kc = K - k0 < kcb ? K - k0 : kcb;
        const bool last = kb == nkb - 1;
        const uint16_t *arows = NULL;
        int64_t lda = 0;
        if (kc > 0) pack_a_job(j, m0, mc, k0, kc, A16, &arows, &lda);
        if (amx) {
            /* bf16 parts; rows up to a multiple of 16, K up to one of 32 */
            const int64_t mcp = (mc + 15) / 16 * 16, kcp = (kc + 31) / 32 * 32;
            if (kc > 0) amx_split(arows, lda, mc, kc, kcp, Ah, Al, KCB);
            for (int64_t r = mc; r < mcp; r++) {
                memset(Ah + r * KCB, 0, (size_t)kcp * 2);
                memset(Al + r * KCB, 0, (size_t)kcp * 2);
            }
            /* earlier K blocks panel by panel (the B panel stays in L1); the
             * last one row block by row block, each then through the
             * epilogue on the tile's whole width */
            if (!last) {
                for (int64_t p = 0; p < np; p++)
                    for (int64_t ir = 0; ir < mcp; ir += MR)
                        amx_call(isa, j, p0 + p, k0, kcp, Kp, Ah, Al, mcp - ir, ir,
                                 Cacc + ir * ldcc + p * NR, ldcc, kb == 0);
                continue;
            }
            for (int64_t ir = 0; ir < mcp; ir += MR) {
                for (int64_t p = 0; p < np; p++)
                    amx_call(isa, j, p0 + p, k0, kcp, Kp, Ah, Al, mcp - ir, ir,
                             Cacc + ir * ldcc + p * NR, ldcc, kb == 0);
                epilogue_rows(isa, j, Cacc + ir * ldcc, ldcc, m0 + ir, mc - ir < MR ? mc - ir : MR,
                              n0, nc);
            }
            continue;
        }
        for (int64_t i = 0; i < mc && kc > 0; i++)
            pr_f16_to_f32_n(isa, arows + i * lda, Ap + i * KCS, kc);
        if (!last) {
            for (int64_t p = 0; p < np; p++)
                for (int64_t ir = 0; ir < mc; ir += MR) {
                    const int mr = (int)(mc - ir < MR ? mc - ir : MR);
                    kern[mr](kc, Ap + ir * KCS, j->b + ((p0 + p) * K + k0) * NR,
                             Cacc + ir * ldcc + p * NR, ldcc, kb == 0);
                }
            continue;
        }
        for (int64_t ir = 0; ir < mc; ir += MR) {
            const int mr = (int)(mc - ir < MR ? mc - ir : MR);
            for (int64_t p = 0; p < np; p++)
                kern[mr](kc, Ap + ir * KCS, j->b + ((p0 + p) * K + k0) * NR,
                         Cacc + ir * ldcc + p * NR, ldcc, kb == 0);
            epilogue_rows(isa, j, Cacc + ir * ldcc, ldcc, m0 + ir, mr, n0, nc);
        }
    }
}

void pr_f16_gemm_run(pr_f16_isa isa, const pr_f16_gemm_job *jobs, int n_jobs, int nt,
                     void *scratch) {
    if (nt < 1) nt = 1;
    const int MR = isa_mr(isa), MC = isa_mc(isa);
    const kern_fn *kern = isa_kernels(isa);
    tile_geom *geo = scratch;
    float *tbuf =
        (float *)((char *)scratch + align64((size_t)(n_jobs > 0 ? n_jobs : 1) * sizeof(tile_geom)));
    /* tile sizes: whole panels, enough tiles to keep nt threads busy */
    int64_t mc = MC, nc = NCMAX, total = 0;
    for (int pass = 0; pass < 16; pass++) {
        total = 0;
        for (int q = 0; q < n_jobs; q++) {
            const pr_f16_gemm_job *j = &jobs[q];
            int64_t npad = (j->N + NR - 1) / NR * NR;
            geo[q].mc = mc;
            geo[q].nc = npad < nc ? npad : nc;
            if (geo[q].nc < NR) geo[q].nc = NR;
            geo[q].tm = j->M > 0 && j->N > 0 ? (j->M + mc - 1) / mc : 0;
            geo[q].tn = j->M > 0 && j->N > 0 ? (j->N + geo[q].nc - 1) / geo[q].nc : 0;
            geo[q].t0 = total;
            total += geo[q].tm * geo[q].tn;
        }
        if (nt == 1 || total >= 2 * nt) break;
        /* too few tiles: split columns first (down to 2 panels), then rows */
        int64_t maxn = 0, maxm = 0;
        for (int q = 0; q < n_jobs; q++) {
            if (jobs[q].N > maxn) maxn = jobs[q].N;
            if (jobs[q].M > maxm) maxm = jobs[q].M;
        }
        int64_t ncur = (maxn + NR - 1) / NR * NR;
        if (ncur > nc) ncur = nc;
        if (ncur > 2 * NR) {
            nc = (ncur / 2 + NR - 1) / NR * NR;
        } else if (mc > MR && maxm > MR) {
            int64_t mcur = maxm < mc ? maxm : mc;
            mc = (mcur / 2 + MR - 1) / MR * MR;
            if (mc < MR) mc = MR;
        } else if (ncur > NR) {
            nc = NR;
        } else {
            break;
        }
    }
    if (total == 0) return;
#pragma omp parallel num_threads(nt) if (nt > 1 && total > 1)
    {
        const int tid = omp_get_thread_num();
        float *Ap = tbuf + (size_t)tid * thread_floats();
        float *Cacc = Ap + (size_t)MC_MAX * KCS;
        uint16_t *Ah = (uint16_t *)(Cacc + (size_t)MC_MAX * NCMAX);
        uint16_t *Al = Ah + (size_t)MC_MAX * KCB;
        uint16_t *A16 = Al + (size_t)MC_MAX * KCB;
        if (isa == PR_F16_ISA_AMX) amx_begin();
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < total; t++) {
            int lo = 0, hi = n_jobs - 1;
            while (lo < hi) { /* last job with t0 <= t */
                int mid = (lo + hi + 1) / 2;
                if (geo[mid].t0 <= t) lo = mid;
                else hi = mid - 1;
            }
            run_tile(isa, kern, MR, &jobs[lo], &geo[lo], t - geo[lo].t0, Ap, Cacc, Ah, Al, A16);
        }
        if (isa == PR_F16_ISA_AMX) amx_end();
    }
}

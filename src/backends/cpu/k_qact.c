/* The late INT8 epilogue (kernels.h pr_cpu_qact_rows): rows of float32
 * pre-activations (a QConv primitive's output with its scales and bias
 * applied) through
 *
 *   R = act2(act(x) + z_scale * Z),   Y = saturate(round_half_even(R * inv_y))
 *
 * into int8/uint8, Z an optional int8/uint8 residual of Y's shape. Why:
 * oneDNN 2.6's Swish/Logistic post-ops cost ~0.24 ns per output on this Zen 5
 * (3x a 1x1 32->32 int8 conv's MACs: 0.023 -> 0.073 ms at 80x80, one
 * thread), more than writing float32 and this pass together. Swish and
 * Sigmoid use exp2 with a degree-5 polynomial (relative error 7.5e-8) and
 * one division; the other acts pv_act. x holds finite values (a conv's
 * outputs: +-inf may come out as NaN, then 0). Rows of the float input may
 * be padded (xs >= C values apart: the padded output channels of
 * dnnl_qconv.c); Z and Y are dense. AVX-512 when allowed,
 * pr_act_apply per value otherwise (PRECIS_CPU_ISA=scalar); OpenMP over
 * blocks of rows. */
#include <math.h>
#include <stdint.h>

#include "backends/cpu/k_qact.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

#define QA_CHUNK 32768 /* values per OpenMP work item */

typedef struct qa_args {
    const float *x;
    int64_t xs, C;
    const pr_act *act, *act2;
    const void *z;
    pr_dtype zdt, ydt;
    float z_scale, inv_y;
    void *y;
} qa_args;

static void qa_row_scalar(const qa_args *a, int64_t r, int64_t c0, int64_t c1) {
    const float *x = a->x + r * a->xs;
    bool zu8 = a->zdt == PRECIS_UINT8, yu8 = a->ydt == PRECIS_UINT8;
    float lo = yu8 ? 0.0f : -128.0f, hi = yu8 ? 255.0f : 127.0f;
    for (int64_t c = c0; c < c1; c++) {
        int64_t i = r * a->C + c;
        float v = pr_act_apply(a->act, x[c]);
        if (a->z) v += a->z_scale * ps_q8_load(a->z, i, zu8);
        v = ps_q8_round(pr_act_apply(a->act2, v) * a->inv_y, lo, hi);
        if (yu8)
            ((uint8_t *)a->y)[i] = (uint8_t)v;
        else
            ((int8_t *)a->y)[i] = (int8_t)v;
    }
}

#ifdef PR_CPU_X86
PR_VINLINE __m512 qa_act(const pr_act *a, __m512 x) {
    if (a->kind == PR_ACT_SWISH || a->kind == PR_ACT_SIGMOID) {
        /* NaN passes (to 0 in the quantization, as in ref) */
        return a->kind == PR_ACT_SWISH ? qa_swish(x) : _mm512_div_ps(PV_C(1.0f), qa_den(x));
    }
    return a->kind == PR_ACT_NONE ? x : pv_act(a, x);
}

/* One row, the acts, Z's presence and the types fixed by the caller (inlined
 * with constants: no per-vector dispatch); full vectors stored unmasked
 * (a masked vpmovdb store is slow on Zen 5). */
PR_VINLINE void qa_row_t(const float *x, const pr_act A, const pr_act A2, const void *z, bool zu8,
                         float z_scale, void *y, bool yu8, float inv_y, int64_t i0, int64_t n) {
    const __m512 lo = PV_C(yu8 ? 0.0f : -128.0f), hi = PV_C(yu8 ? 255.0f : 127.0f);
    const __m512 inv = PV_C(inv_y), zs = PV_C(z_scale);
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
        __m512 v = qa_act(&A, _mm512_loadu_ps(x + c));
        if (z) v = _mm512_fmadd_ps(pv_q8_load(z, i0 + c, zu8), zs, v);
        v = qa_act(&A2, v);
        pv_q8_store(y, i0 + c, pv_q8_round_lo8(_mm512_mul_ps(v, inv), lo, hi));
    }
    if (c < n) {
        __mmask16 m = pv_tail(n - c);
        __m512 v = qa_act(&A, _mm512_maskz_loadu_ps(m, x + c));
        if (z) v = _mm512_fmadd_ps(pv_q8_load_m(z, i0 + c, zu8, m), zs, v);
        v = qa_act(&A2, v);
        pv_q8_store_m(y, i0 + c, pv_q8_round_lo8(_mm512_mul_ps(v, inv), lo, hi), m);
    }
}

static PR_AVX512 void qa_row_512(const qa_args *a, int64_t r, int64_t c0, int64_t c1) {
    const float *x = a->x + r * a->xs + c0;
    const void *z = a->z;
    bool zu8 = a->zdt == PRECIS_UINT8, yu8 = a->ydt == PRECIS_UINT8;
    int64_t i0 = r * a->C + c0, n = c1 - c0;
    pr_act A = *a->act, A2 = *a->act2;
    const pr_act none = {PR_ACT_NONE, 0, 0}, sw = {PR_ACT_SWISH, 0, 0}, sg = {PR_ACT_SIGMOID, 0, 0};
    if (A2.kind == PR_ACT_NONE && (A.kind == PR_ACT_SWISH || A.kind == PR_ACT_SIGMOID)) {
        /* the plans' cases, specialised */
        bool s = A.kind == PR_ACT_SWISH;
#define QA_CASE(act, zz, zu, yu)                                                                   \
    qa_row_t(x, act, none, zz, zu, a->z_scale, a->y, yu, a->inv_y, i0, n)
        if (!z && !yu8) s ? QA_CASE(sw, NULL, false, false) : QA_CASE(sg, NULL, false, false);
        else if (!z) s ? QA_CASE(sw, NULL, false, true) : QA_CASE(sg, NULL, false, true);
        else if (!zu8 && !yu8) s ? QA_CASE(sw, z, false, false) : QA_CASE(sg, z, false, false);
        else qa_row_t(x, A, none, z, zu8, a->z_scale, a->y, yu8, a->inv_y, i0, n);
#undef QA_CASE
        return;
    }
    qa_row_t(x, A, A2, z, zu8, a->z_scale, a->y, yu8, a->inv_y, i0, n);
}
#endif

void pr_cpu_qact_rows(const float *x, int64_t xs, int64_t rows, int64_t C, const pr_act *act,
                      const pr_act *act2, const void *z, pr_dtype zdt, float z_scale, void *y,
                      pr_dtype ydt, float inv_y, int threads) {
    if (rows <= 0 || C <= 0) return;
    static const pr_act none = {PR_ACT_NONE, 0, 0};
    qa_args a = {x, xs, C, act ? act : &none, act2 ? act2 : &none, z, zdt, ydt, z_scale, inv_y, y};
    /* dense rows run as one long row, cut into chunks */
    bool flat = xs == C;
    int64_t R = flat ? 1 : rows, L = flat ? rows * C : C;
    if (flat) a.C = a.xs = L;
    int64_t per = L >= QA_CHUNK ? 1 : QA_CHUNK / L;       /* rows per item */
    int64_t cut = L >= QA_CHUNK ? (L + QA_CHUNK - 1) / QA_CHUNK : 1; /* items per row */
    int64_t items = (R + per - 1) / per * cut;
    bool v512 = false;
#ifdef PR_CPU_X86
    v512 = pr_cpu_use_avx512();
#endif
    int nt = threads > 1 && rows * C >= PR_CPU_PAR_MIN ? threads : 1;
    if (nt > items) nt = (int)items;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t it = 0; it < items; it++) {
        int64_t r0 = it / cut * per, r1 = r0 + per < R ? r0 + per : R;
        int64_t c0 = it % cut * QA_CHUNK;
        int64_t c1 = cut == 1 ? L : (c0 + QA_CHUNK < L ? c0 + QA_CHUNK : L);
        for (int64_t r = r0; r < r1; r++) {
#ifdef PR_CPU_X86
            if (v512) {
                qa_row_512(&a, r, c0, c1);
                continue;
            }
#endif
            qa_row_scalar(&a, r, c0, c1);
        }
    }
}

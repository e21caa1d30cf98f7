/* The late INT8 epilogue's Swish / Sigmoid (k_qact.c), shared with the
 * kernels that fuse Swish into their own epilogue (k_q1x1.h q1_epv): the
 * same operations, so the same float results for the same inputs. */
#ifndef PR_BACKENDS_CPU_K_QACT_H
#define PR_BACKENDS_CPU_K_QACT_H

#include "backends/cpu/vec.h"

#ifdef PR_CPU_X86
/* 2^t: t = n + f, |f| <= 1/2, a degree-5 minimax polynomial for 2^f
 * (relative error 7.5e-8, as good as float32 gets: a cruder degree 4,
 * 2.6e-6, moved ~1 output in 1000 across a rounding boundary, and YOLOv8n's
 * outputs with it), scaled by vscalefps (0 and inf beyond the float range,
 * so no clamp: t is finite here, a conv's output times -log2 e) */
PR_VINLINE __m512 qa_exp2(__m512 t) {
    __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_sub_ps(t, n);
    __m512 p = PV_C(1.3276457320898771e-3f);
    p = _mm512_fmadd_ps(p, f, PV_C(9.675541892647743e-3f));
    p = _mm512_fmadd_ps(p, f, PV_C(5.550713464617729e-2f));
    p = _mm512_fmadd_ps(p, f, PV_C(2.4022120237350464e-1f));
    p = _mm512_fmadd_ps(p, f, PV_C(6.931469440460205e-1f));
    p = _mm512_fmadd_ps(p, f, PV_C(1.0000001192092896f));
    return _mm512_scalef_ps(p, n);
}

/* 1 + e^-x */
PR_VINLINE __m512 qa_den(__m512 x) {
    return _mm512_add_ps(PV_C(1.0f), qa_exp2(_mm512_mul_ps(x, PV_C(-1.44269504088896341f))));
}

/* x / (1 + e^-x) (NaN passes) */
PR_VINLINE __m512 qa_swish(__m512 x) { return _mm512_div_ps(x, qa_den(x)); }
#endif

#endif

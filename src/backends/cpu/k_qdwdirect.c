/* The depthwise INT8 convolution's direct path (k_qdwconv.h): uint8 src of
 * <= 32 channels on images of <= QDW_DIRECT_MAX_PIX pixels (PP-OCR cls's
 * three ReLU depthwise layers of 8, 24 and 32 channels, which the quad
 * layout of k_qdwconv.c wastes most lanes on and oneDNN's brdgmm_dw runs at
 * ~1x FP32: mostly call overhead on 144-576 output pixels).
 *
 * The rows an output band reads are converted once to float (byte -> int32
 * -> float: exact), column padding as zeros, channels padded to a multiple
 * of 16 (Cv); each output pixel and 16 channels then sums KH x KW FMAs with
 * the weights as floats. Every product (|x| <= 255, |w| <= 128) and every
 * partial sum (<= 16 x 16 x 255 x 128 < 2^24) is an integer a float holds
 * exactly, so the sum equals the int32 sum of the other paths whatever the
 * order, and the epilogue is qdw_q's: fmadd(sum, x_scale * w_scale, B), act,
 * act2 (times 1 / y_scale), clamp, round half to even: the same bytes.
 *
 * Threads: images split over them; at batch 1 the output rows, when the
 * layer has at least PR_CPU_PAR_MIN multiply-adds per thread (below that a
 * fork/join costs more than half the layer: the calling thread runs it).
 * Larger images run on the dnnl.qconv state (s->big), as q1x1 does; a block
 * (qblock) refuses such a state (pr_qdw_block_ok). PRECIS_QDW_DIRECT=0
 * leaves these layers to dnnl.qconv (A/B timing). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/k_qdwconv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

bool pr_qdw_direct_ok(const pr_graph *g, const pr_node *n) {
    const char *env = getenv("PRECIS_QDW_DIRECT");
    if (env && !strcmp(env, "0")) return false;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1);
    if (!X || !W || X->dtype != PRECIS_UINT8 || W->rank != 4 || W->dims[0] > 32) return false;
    int64_t yt = pr_attr_int(n, "y_type", PRECIS_FLOAT32);
    if (yt != PRECIS_INT8 && yt != PRECIS_UINT8) return false;
    pr_act a, a2;
    if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a2)) return false;
    return (a.kind == PR_ACT_NONE || a.kind == PR_ACT_RELU || a.kind == PR_ACT_CLIP ||
            a.kind == PR_ACT_HARD_SWISH) &&
           (a2.kind == PR_ACT_NONE || a2.kind == PR_ACT_AFFINE);
}

void pr_qdw_direct_free(qdw_state *s) {
    free(s->dwf);
    free(s->dsc);
    free(s->dbi);
    if (s->big) pr_cpu_impl_dnnl_qconv.destroy(s->big);
    s->dwf = s->dsc = s->dbi = NULL;
    s->big = NULL;
}

bool pr_qdw_block_ok(const void *state) {
    const qdw_state *s = state;
    return s && !s->big;
}

precis_status pr_qdw_direct_prepare(qdw_state *s, const pr_graph *g, const pr_node *n,
                                    const pr_cpu_cfg *cfg, const int8_t *w, const float *ws,
                                    const float *bv, float xs) {
    s->direct = true;
    s->Cv = (s->C + 15) / 16 * 16;
    const int64_t KK = s->KH * s->KW;
    s->dwf = aligned_alloc(64, (size_t)(KK * s->Cv) * sizeof(float));
    s->dsc = aligned_alloc(64, (size_t)s->Cv * sizeof(float));
    s->dbi = aligned_alloc(64, (size_t)s->Cv * sizeof(float));
    if (!s->dwf || !s->dsc || !s->dbi) return PRECIS_ERR_OOM;
    memset(s->dwf, 0, (size_t)(KK * s->Cv) * sizeof(float));
    for (int64_t c = 0; c < s->Cv; c++) {
        const bool real = c < s->C, zero = real && ws[c] == 0.0f; /* scale 1: bias exact */
        s->dsc[c] = !real ? 0.0f : zero ? 1.0f : xs * ws[c];
        s->dbi[c] = real && bv ? bv[c] : 0.0f;
        if (!real || zero) continue;
        for (int64_t t = 0; t < KK; t++) s->dwf[t * s->Cv + c] = (float)w[c * KK + t];
    }
    /* larger images go to oneDNN; without it (or if it declines) this path
     * runs them too */
    if (pr_cpu_impl_dnnl_qconv.supports(g, n)) {
        pr_err e2 = {0};
        if (pr_cpu_impl_dnnl_qconv.prepare(g, n, cfg, &s->big, &e2)) s->big = NULL;
    }
    return PRECIS_OK;
}

#ifdef PR_CPU_X86
#define PR_DD __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

enum { G_IH, G_IW, G_OH, G_OW, G_SH, G_SW, G_DH, G_DW, G_PT, G_PL };

typedef struct dd_ep {
    __m512 alo, ahi, a2a, a2b, lo, hi;
    int ak; /* 0 none, 1 clip (Relu too), 2 HardSwish */
    bool aff;
} dd_ep;

static inline __attribute__((always_inline)) PR_DD __m512i dd_q(__m512 acc, __m512 sc, __m512 bi,
                                                               const dd_ep *e) {
    __m512 f = _mm512_fmadd_ps(acc, sc, bi);
    if (e->ak == 1) f = _mm512_min_ps(_mm512_max_ps(f, e->alo), e->ahi);
    if (e->ak == 2) {
        __m512 v = _mm512_fmadd_ps(f, PV_C(1.0f / 6.0f), PV_C(0.5f));
        f = _mm512_mul_ps(f, _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), PV_C(1.0f)));
    }
    f = e->aff ? _mm512_fmadd_ps(f, e->a2a, e->a2b) : _mm512_mul_ps(f, e->a2a);
    f = _mm512_min_ps(_mm512_max_ps(f, e->lo), e->hi);
    return _mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* Output rows [oh0, oh1) of one image: x (IH, IW, C) bytes, y its output,
 * P scratch for the rows they read. */
static PR_DD void dd_rows(const qdw_state *s, const int64_t *g, const dd_ep *e, const uint8_t *x,
                          uint8_t *y, int64_t oh0, int64_t oh1, float *P) {
    const int64_t C = s->C, Cv = s->Cv, nv = Cv / 16, KH = s->KH, KW = s->KW;
    const int64_t OW = g[G_OW], sh = g[G_SH], sw = g[G_SW], dh = g[G_DH], dw = g[G_DW];
    const int64_t ncol = (OW - 1) * sw + (KW - 1) * dw + 1;
    const int64_t r0 = oh0 * sh - g[G_PT], r1 = (oh1 - 1) * sh - g[G_PT] + (KH - 1) * dh + 1;
    __mmask16 cm[2];
    for (int64_t j = 0; j < 2; j++)
        cm[j] = C - 16 * j >= 16 ? (__mmask16)0xffff
                : C > 16 * j     ? (__mmask16)((1u << (C - 16 * j)) - 1u)
                                 : (__mmask16)0;
    /* the rows read, as floats; column p reads iw = p - pl */
    for (int64_t r = r0; r < r1; r++) {
        float *pr = P + (r - r0) * ncol * Cv;
        const bool rin = r >= 0 && r < g[G_IH];
        for (int64_t p = 0; p < ncol; p++) {
            const int64_t iw = p - g[G_PL];
            float *pp = pr + p * Cv;
            if (!rin || iw < 0 || iw >= g[G_IW]) {
                for (int64_t j = 0; j < nv; j++) _mm512_storeu_ps(pp + 16 * j, _mm512_setzero_ps());
                continue;
            }
            const uint8_t *xp = x + (r * g[G_IW] + iw) * C;
            for (int64_t j = 0; j < nv; j++) {
                __m128i b = _mm_maskz_loadu_epi8(cm[j], xp + 16 * j);
                _mm512_storeu_ps(pp + 16 * j, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)));
            }
        }
    }
    for (int64_t oh = oh0; oh < oh1; oh++) {
        const float *prow = P + ((oh - oh0) * sh) * ncol * Cv;
        uint8_t *yr = y + oh * OW * C;
        for (int64_t j = 0; j < nv; j++) {
            const __m512 sc = _mm512_load_ps(s->dsc + 16 * j), bi = _mm512_load_ps(s->dbi + 16 * j);
            const float *wj = s->dwf + 16 * j;
            const float *pj = prow + 16 * j;
            int64_t ow = 0;
            for (; ow + 4 <= OW; ow += 4) { /* 4 pixels: independent FMA chains */
                __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
                for (int64_t kh = 0; kh < KH; kh++) {
                    const float *pk = pj + (kh * dh) * ncol * Cv + ow * sw * Cv;
                    const float *wk = wj + kh * KW * Cv;
                    for (int64_t kw = 0; kw < KW; kw++) {
                        const __m512 wv = _mm512_load_ps(wk + kw * Cv);
                        const float *q = pk + kw * dw * Cv;
                        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q), wv, a0);
                        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + sw * Cv), wv, a1);
                        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 2 * sw * Cv), wv, a2);
                        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 3 * sw * Cv), wv, a3);
                    }
                }
                uint8_t *yp = yr + ow * C + 16 * j;
                _mm512_mask_cvtepi32_storeu_epi8(yp, cm[j], dd_q(a0, sc, bi, e));
                _mm512_mask_cvtepi32_storeu_epi8(yp + C, cm[j], dd_q(a1, sc, bi, e));
                _mm512_mask_cvtepi32_storeu_epi8(yp + 2 * C, cm[j], dd_q(a2, sc, bi, e));
                _mm512_mask_cvtepi32_storeu_epi8(yp + 3 * C, cm[j], dd_q(a3, sc, bi, e));
            }
            for (; ow < OW; ow++) {
                __m512 a0 = _mm512_setzero_ps();
                for (int64_t kh = 0; kh < KH; kh++)
                    for (int64_t kw = 0; kw < KW; kw++)
                        a0 = _mm512_fmadd_ps(
                            _mm512_loadu_ps(pj + ((kh * dh) * ncol + ow * sw + kw * dw) * Cv),
                            _mm512_load_ps(wj + (kh * KW + kw) * Cv), a0);
                _mm512_mask_cvtepi32_storeu_epi8(yr + ow * C + 16 * j, cm[j], dd_q(a0, sc, bi, e));
            }
        }
    }
}

/* Rows [oh0, oh1) of image n (the epilogue's constants made here: a target
 * function, the caller is not). */
static PR_DD void dd_band(const qdw_state *s, const int64_t *g, const uint8_t *x, uint8_t *y,
                          int64_t oh0, int64_t oh1, float *P) {
    dd_ep e;
    const bool aff = s->act2.kind == PR_ACT_AFFINE, clip = s->act.kind == PR_ACT_CLIP;
    e.ak = s->act.kind == PR_ACT_RELU || clip ? 1 : s->act.kind == PR_ACT_HARD_SWISH ? 2 : 0;
    e.aff = aff;
    e.alo = _mm512_set1_ps(clip ? s->act.alpha : 0.0f);
    e.ahi = _mm512_set1_ps(clip ? s->act.beta : INFINITY);
    e.a2a = _mm512_set1_ps(aff ? s->act2.alpha * s->inv : s->inv);
    e.a2b = _mm512_set1_ps(aff ? s->act2.beta * s->inv : 0.0f);
    e.lo = _mm512_set1_ps(s->lo);
    e.hi = _mm512_set1_ps(s->hi);
    dd_rows(s, g, &e, x, y, oh0, oh1, P);
}

precis_status pr_qdw_direct_run(const qdw_state *s, pr_kernel *k, pr_cpu_exec *x,
                                const int64_t geo[10]) {
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    const int64_t *g = geo;
    if (s->big && g[G_IH] * g[G_IW] > QDW_DIRECT_MAX_PIX)
        return pr_cpu_impl_dnnl_qconv.run(s->big, k, x);
    const int64_t N = X->dims[0], OH = g[G_OH], OW = g[G_OW];
    const int64_t ncol = (OW - 1) * g[G_SW] + (s->KW - 1) * g[G_DW] + 1;
    const int64_t rows = (OH - 1) * g[G_SH] + (s->KH - 1) * g[G_DH] + 1;
    int nt = x->num_threads > 0 ? x->num_threads : 1;
    /* multiply-adds per image; threads only where each gets PR_CPU_PAR_MIN */
    const int64_t work = OH * OW * s->Cv * s->KH * s->KW;
    if (N * work < (int64_t)nt * PR_CPU_PAR_MIN) nt = (int)(N * work / PR_CPU_PAR_MIN);
    if (nt < 1) nt = 1;
    const int64_t parts = N >= nt ? 1 : (nt + N - 1) / N < OH ? (nt + N - 1) / N : OH;
    const int64_t items = N * parts;
    if (items < nt) nt = (int)items;
    const size_t per = (size_t)(rows * ncol * s->Cv);
    float *scr = pr_cpu_scratch(x, per * sizeof(float) * (size_t)nt);
    if (!scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const uint8_t *xd = X->data;
    uint8_t *yd = Y->data;
    const size_t xin = (size_t)(g[G_IH] * g[G_IW] * s->C), yout = (size_t)(OH * OW * s->C);
    if (nt < 2) { /* no region: even a serial one costs ~0.3 us (NOTES.md) */
        for (int64_t n = 0; n < N; n++) dd_band(s, g, xd + n * xin, yd + n * yout, 0, OH, scr);
        return PRECIS_OK;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t it = 0; it < items; it++) {
        const int64_t n = it / parts, pt = it % parts;
        const int64_t o0 = OH * pt / parts, o1 = OH * (pt + 1) / parts;
        if (o1 > o0)
            dd_band(s, g, xd + n * xin, yd + n * yout, o0, o1,
                    scr + (size_t)omp_get_thread_num() * per);
    }
    return PRECIS_OK;
}
#else
precis_status pr_qdw_direct_run(const qdw_state *s, pr_kernel *k, pr_cpu_exec *x,
                                const int64_t geo[10]) {
    (void)s, (void)x, (void)geo;
    return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "qdwconv needs x86 AVX512");
}
#endif

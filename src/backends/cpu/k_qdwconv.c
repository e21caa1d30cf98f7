/* Depthwise INT8 convolution with VNNI: QConv (ops.inc) with group == C ==
 * M (one filter per channel), NHWC int8/uint8 src, int8 weights, output
 * int8/uint8 (requantized) or float32, bias, act and act2 in the epilogue, no
 * residual Z. Declined without AVX512-VNNI (dnnl.qconv takes the node).
 *
 *   R = act2(act(x_scale * w_scale[c] * sum(x * w) + B[c])),
 *   Y = R (float32) or saturate(round_half_even(R * (1 / y_scale)))
 * as ref_QConv, the sum exact in int32 (ref sums dequantized floats: outputs
 * may differ from ref by one unit near halves, like dnnl.qconv).
 *
 * Why not oneDNN: 2.6 runs depthwise int8 with an int8 src on jit_int8
 * (no faster than its f32 brdgmm_dw here) and with uint8 on brdgmm_dw, which
 * uses one byte of each vpdpbusd lane. Here every vpdpbusd lane sums four
 * taps of one channel: the taps of one kernel column (up to 4 kernel rows,
 * more rows make more "quads"). For an output row and a block of 64
 * channels, each input column is interleaved once into quads (V: per column
 * and quad 4 vectors of 16 lanes x 4 bytes) and reused by every output pixel
 * and kernel column that reads it. vpdpbusd takes uint8 x int8: an int8 src
 * is biased by 128 (x ^ 0x80) and the accumulators start at -128 * sum(w)
 * per channel; padding reads as x = 0 (byte 0, biased as the rest).
 *
 * Lane order: the byte interleave (unpack lo/hi of bytes, then of words)
 * works within 128-bit lanes, so vector r lane L holds channel
 * 16 (L / 4) + 4 r + L % 4 of the block; weights, scales, biases and the
 * compensation are packed in that order, and the int32 -> int16 -> int8
 * saturating packs put the channels back in order (float outputs through a
 * 4x4 transpose of 128-bit blocks).
 *
 * Quads whose rows all lie in the padding are skipped for the row (built
 * and summed: nothing), their compensation added back for an int8 src: a
 * 5x5 kernel on the 2-3 row images of PP-OCR cls's last stages has its
 * second quad (kernel row 4) in the padding for most output rows.
 *
 * Images of <= 4 rows (those same stages; qdw_img_tables in
 * k_qdwconv_prep.c): one quad holding the image's rows 0..3 is interleaved
 * once per image and block and every output row sums it against weights
 * made for that row (kernel row t + pt - oh * sh at image row t), instead of
 * one build per output row and live quad (PP-OCR cls b1 t1, 1 thread: its 7
 * such layers 49 -> 38 us, 40/48 channels 4.65 -> 3.2, 88 channels 7.8 ->
 * 6.25, 104 channels stride 2x1 6.75 -> 4.4, 200 channels 8.6 -> 7.4).
 * The linear last block keeps the row path. PRECIS_QDW_IMG=0 turns it off.
 * Images of <= 2 rows take column pairs instead of the quad (half of it
 * zero rows): qdw_build_pairs, PRECIS_QDW_PAIRS=0 the quads. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/k_qdwconv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"
#include "ir/infer_conv.h"

static bool qdw_nhwc_ok(const pr_graph *g, const pr_node *n) { (void)g, (void)n; return true; }

#ifdef PR_CPU_X86
#define PR_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))
#define VNNI_INLINE static inline __attribute__((always_inline)) PR_VNNI

typedef struct qdw_geo {
    int64_t IH, IW, OH, OW, sh, sw, dh, dw, pt, pl, ncol;
} qdw_geo;

/* V for one output row and channel block: column p reads iw = p - pl.
 * Rows out of the image (and the rows past KH in the last quad) read a zero
 * block with stride 0; columns out of it read the zero block too. */
static PR_VNNI void qdw_build(const qdw_state *s, const qdw_geo *g, const uint8_t *x, int64_t oh,
                              int64_t cb, __mmask64 cm, __m512i *V, int64_t q0, int64_t q1) {
    static const uint8_t zb[64] __attribute__((aligned(64)));
    const __m512i flip = _mm512_set1_epi8(s->xdt == PRECIS_INT8 ? (char)0x80 : 0);
    const int64_t C = s->C, nqh = s->nqh;
    const uint8_t *rows[QDW_MAXK + 4];
    int64_t step[QDW_MAXK + 4];
    for (int64_t kh = 0; kh < nqh * 4; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        bool ok = kh < s->KH && ih >= 0 && ih < g->IH;
        rows[kh] = ok ? x + ih * g->IW * C + cb * 64 : zb;
        step[kh] = ok ? C : 0;
    }
    for (int64_t qh = q0; qh < q1; qh++) {
        const uint8_t *const *r = rows + qh * 4;
        const int64_t *st = step + qh * 4;
        for (int64_t p = 0; p < g->ncol; p++) {
            int64_t iw = p - g->pl;
            bool in = iw >= 0 && iw < g->IW;
            const uint8_t *p0 = in ? r[0] + iw * st[0] : zb, *p1 = in ? r[1] + iw * st[1] : zb;
            const uint8_t *p2 = in ? r[2] + iw * st[2] : zb, *p3 = in ? r[3] + iw * st[3] : zb;
            __m512i t0 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(cm, p0), flip);
            __m512i t1 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(cm, p1), flip);
            __m512i t2 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(cm, p2), flip);
            __m512i t3 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(cm, p3), flip);
            __m512i ab0 = _mm512_unpacklo_epi8(t0, t1), ab1 = _mm512_unpackhi_epi8(t0, t1);
            __m512i cd0 = _mm512_unpacklo_epi8(t2, t3), cd1 = _mm512_unpackhi_epi8(t2, t3);
            __m512i *o = V + (p * nqh + qh) * 4;
            _mm512_store_si512(o, _mm512_unpacklo_epi16(ab0, cd0));
            _mm512_store_si512(o + 1, _mm512_unpackhi_epi16(ab0, cd0));
            _mm512_store_si512(o + 2, _mm512_unpacklo_epi16(ab1, cd1));
            _mm512_store_si512(o + 3, _mm512_unpackhi_epi16(ab1, cd1));
        }
    }
}

/* V for an image of IH <= 2 rows as column pairs (qdw_state.img_pairs):
 * V[p] holds rows 0, 1 of columns p and p + 1 (iw = p - pl), one quad's
 * lane order (qdw_build's interleave of 4 byte vectors: row 0 and 1 of
 * column p, then of p + 1). Out of the image: the zero block, as
 * qdw_build. Each column's loads serve two pairs. */
static PR_VNNI void qdw_build_pairs(const qdw_state *s, const qdw_geo *g, const uint8_t *x,
                                    int64_t cb, __mmask64 cm, __m512i *V) {
    const __m512i flip = _mm512_set1_epi8(s->xdt == PRECIS_INT8 ? (char)0x80 : 0);
    const int64_t C = s->C;
    const uint8_t *r0 = x + cb * 64, *r1 = x + g->IW * C + cb * 64;
    const bool two = g->IH > 1;
#define QDW_PAIR_COL(iw, a, b)                                                                     \
    do {                                                                                           \
        const bool in_ = (iw) >= 0 && (iw) < g->IW;                                                \
        a = in_ ? _mm512_xor_si512(_mm512_maskz_loadu_epi8(cm, r0 + (iw) * C), flip) : flip;      \
        b = in_ && two ? _mm512_xor_si512(_mm512_maskz_loadu_epi8(cm, r1 + (iw) * C), flip)       \
                       : flip;                                                                     \
    } while (0)
    __m512i t0, t1;
    QDW_PAIR_COL(-g->pl, t0, t1);
    for (int64_t p = 0; p < g->ncol; p++) {
        __m512i t2, t3;
        QDW_PAIR_COL(p + 1 - g->pl, t2, t3);
        __m512i ab0 = _mm512_unpacklo_epi8(t0, t1), ab1 = _mm512_unpackhi_epi8(t0, t1);
        __m512i cd0 = _mm512_unpacklo_epi8(t2, t3), cd1 = _mm512_unpackhi_epi8(t2, t3);
        __m512i *o = V + p * 4;
        _mm512_store_si512(o, _mm512_unpacklo_epi16(ab0, cd0));
        _mm512_store_si512(o + 1, _mm512_unpackhi_epi16(ab0, cd0));
        _mm512_store_si512(o + 2, _mm512_unpacklo_epi16(ab1, cd1));
        _mm512_store_si512(o + 3, _mm512_unpackhi_epi16(ab1, cd1));
        t0 = t2;
        t1 = t3;
    }
#undef QDW_PAIR_COL
}

/* The epilogue of one row and block. Fused (int8/uint8 out, act none,
 * Relu, Clip or HardSwish, act2 none or Affine): requantized in registers,
 * 1/y_scale folded into act2's affine; else F := sc * sum + bias for the
 * activation passes and qdw_out. */
enum { EP_F, EP_Q };
/* qdw_q's AK for qdw_state.sat's epilogues (packed blocks only: the linear
 * block's vpmovdb stores truncate) */
enum {
    QDW_AK_SAT_CLIP = -10,
    QDW_AK_SAT_RELU = -11,
    QDW_AK_FREE_NONE = -12,
    QDW_AK_FREE_RELU = -13,
    QDW_AK_FREE_HSW = -14
};
typedef struct qdw_ep {
    __m512i init[4];
    __m512 sc[4], bi[4];
    __m512 alo, ahi, a2a, a2b, lo, hi; /* act clip bounds, act2 affine (times inv), out range */
    __m512 *F;
    uint8_t *y; /* the row's first output of the block */
    int64_t C;
    __mmask64 m;
    bool u8;
} qdw_ep;

/* One vector of a pixel's epilogue (no arrays: GCC keeps them on the stack). */
VNNI_INLINE __m512i qdw_q(__m512i acc, __m512 sc, __m512 bi, const qdw_ep *e, int AK, bool AFF) {
    __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), sc, bi);
    if (AK == QDW_AK_SAT_CLIP) /* qdw_state.sat: the packs clamp (k_qdwconv.h) */
        return _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_min_ps(f, e->ahi), e->a2a),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (AK == QDW_AK_SAT_RELU)
        return _mm512_cvt_roundps_epi32(_mm512_min_ps(_mm512_mul_ps(f, e->a2a), e->hi),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (AK == QDW_AK_FREE_NONE || AK == QDW_AK_FREE_RELU || AK == QDW_AK_FREE_HSW) {
        if (AK == QDW_AK_FREE_RELU) f = _mm512_max_ps(f, _mm512_setzero_ps());
        if (AK == QDW_AK_FREE_HSW) {
            __m512 v = _mm512_fmadd_ps(f, PV_C(1.0f / 6.0f), PV_C(0.5f));
            f = _mm512_mul_ps(f, _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), PV_C(1.0f)));
        }
        return _mm512_cvt_roundps_epi32(_mm512_mul_ps(f, e->a2a),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    if (AK == PR_ACT_RELU || AK == PR_ACT_CLIP) f = _mm512_min_ps(_mm512_max_ps(f, e->alo), e->ahi);
    if (AK == PR_ACT_HARD_SWISH) {
        __m512 v = _mm512_fmadd_ps(f, PV_C(1.0f / 6.0f), PV_C(0.5f));
        f = _mm512_mul_ps(f, _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), PV_C(1.0f)));
    }
    f = AFF ? _mm512_fmadd_ps(f, e->a2a, e->a2b) : _mm512_mul_ps(f, e->a2a);
    f = _mm512_min_ps(_mm512_max_ps(f, e->lo), e->hi);
    return _mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

VNNI_INLINE void qdw_pixel(const qdw_ep *e, __m512i a0, __m512i a1, __m512i a2, __m512i a3,
                           int64_t ow, int EK, int AK, bool AFF) {
    if (EK == EP_F) {
        __m512 *f = e->F + ow * 4;
        f[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a0), e->sc[0], e->bi[0]);
        f[1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a1), e->sc[1], e->bi[1]);
        f[2] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a2), e->sc[2], e->bi[2]);
        f[3] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a3), e->sc[3], e->bi[3]);
        return;
    }
    __m512i q0 = qdw_q(a0, e->sc[0], e->bi[0], e, AK, AFF);
    __m512i q1 = qdw_q(a1, e->sc[1], e->bi[1], e, AK, AFF);
    __m512i q2 = qdw_q(a2, e->sc[2], e->bi[2], e, AK, AFF);
    __m512i q3 = qdw_q(a3, e->sc[3], e->bi[3], e, AK, AFF);
    __m512i p01 = _mm512_packs_epi32(q0, q1), p23 = _mm512_packs_epi32(q2, q3);
    __m512i b = e->u8 ? _mm512_packus_epi16(p01, p23) : _mm512_packs_epi16(p01, p23);
    _mm512_mask_storeu_epi8(e->y + ow * e->C, e->m, b);
}

/* The row's pixels from V; KW, NQH, DW constants where specialised (3x3:
 * the 12 weight vectors stay in registers). */
VNNI_INLINE void qdw_conv_t(const __m512i *V, const __m512i *wb, const qdw_ep *e, int64_t OW,
                            int64_t sw, int64_t KW, int64_t NQH, int64_t DW, int EK, int AK,
                            bool AFF, int64_t Q0, int64_t Q1) {
    if (KW == 3 && NQH == 1 && Q0 == 0 && Q1 == 1) { /* DW 2: qdw_img's column pairs */
        const __m512i w0 = wb[0], w1 = wb[1], w2 = wb[2], w3 = wb[3], w4 = wb[4], w5 = wb[5];
        const __m512i w6 = wb[6], w7 = wb[7], w8 = wb[8], w9 = wb[9], w10 = wb[10], w11 = wb[11];
        for (int64_t ow = 0; ow < OW; ow++) {
            const __m512i *v = V + ow * sw * 4, *u = v + DW * 4, *z = v + DW * 8;
            __m512i a0 = _mm512_dpbusd_epi32(e->init[0], v[0], w0);
            __m512i a1 = _mm512_dpbusd_epi32(e->init[1], v[1], w1);
            __m512i a2 = _mm512_dpbusd_epi32(e->init[2], v[2], w2);
            __m512i a3 = _mm512_dpbusd_epi32(e->init[3], v[3], w3);
            a0 = _mm512_dpbusd_epi32(a0, u[0], w4);
            a1 = _mm512_dpbusd_epi32(a1, u[1], w5);
            a2 = _mm512_dpbusd_epi32(a2, u[2], w6);
            a3 = _mm512_dpbusd_epi32(a3, u[3], w7);
            a0 = _mm512_dpbusd_epi32(a0, z[0], w8);
            a1 = _mm512_dpbusd_epi32(a1, z[1], w9);
            a2 = _mm512_dpbusd_epi32(a2, z[2], w10);
            a3 = _mm512_dpbusd_epi32(a3, z[3], w11);
            qdw_pixel(e, a0, a1, a2, a3, ow, EK, AK, AFF);
        }
        return;
    }
    for (int64_t ow = 0; ow < OW; ow++) {
        __m512i a0 = e->init[0], a1 = e->init[1], a2 = e->init[2], a3 = e->init[3];
        const __m512i *vp = V + ow * sw * NQH * 4;
        for (int64_t kw = 0; kw < KW; kw++)
            for (int64_t qh = Q0; qh < Q1; qh++) {
                const __m512i *v = vp + (kw * DW * NQH + qh) * 4, *w = wb + (kw * NQH + qh) * 4;
                a0 = _mm512_dpbusd_epi32(a0, v[0], w[0]);
                a1 = _mm512_dpbusd_epi32(a1, v[1], w[1]);
                a2 = _mm512_dpbusd_epi32(a2, v[2], w[2]);
                a3 = _mm512_dpbusd_epi32(a3, v[3], w[3]);
            }
        qdw_pixel(e, a0, a1, a2, a3, ow, EK, AK, AFF);
    }
}

/* Geometry specialisations for one epilogue; quads q0..q1-1 live. */
VNNI_INLINE void qdw_conv_g(const qdw_state *s, const qdw_geo *g, const __m512i *V,
                            const __m512i *wb, const qdw_ep *e, int EK, int AK, bool AFF,
                            int64_t q0, int64_t q1) {
    if (s->KW == 3 && s->nqh == 1 && g->dw == 1 && q0 == 0 && q1 == 1)
        qdw_conv_t(V, wb, e, g->OW, g->sw, 3, 1, 1, EK, AK, AFF, 0, 1);
    else if (s->KW == 3 && s->nqh == 1 && g->dw == 2 && q0 == 0 && q1 == 1) /* 5-col pairs */
        qdw_conv_t(V, wb, e, g->OW, g->sw, 3, 1, 2, EK, AK, AFF, 0, 1);
    else if (s->KW == 2 && s->nqh == 1 && g->dw == 2 && q0 == 0 && q1 == 1) /* 3-col pairs */
        qdw_conv_t(V, wb, e, g->OW, g->sw, 2, 1, 2, EK, AK, AFF, 0, 1);
    else if (s->KW == 5 && s->nqh == 2 && g->dw == 1 && q0 == 0 && q1 == 2)
        qdw_conv_t(V, wb, e, g->OW, g->sw, 5, 2, 1, EK, AK, AFF, 0, 2);
    else if (s->KW == 5 && s->nqh == 2 && g->dw == 1 && q0 == 0 && q1 == 1)
        qdw_conv_t(V, wb, e, g->OW, g->sw, 5, 2, 1, EK, AK, AFF, 0, 1);
    else if (s->KW == 5 && s->nqh == 1 && g->dw == 1 && q0 == 0 && q1 == 1) /* small images */
        qdw_conv_t(V, wb, e, g->OW, g->sw, 5, 1, 1, EK, AK, AFF, 0, 1);
    else
        qdw_conv_t(V, wb, e, g->OW, g->sw, s->KW, s->nqh, g->dw, EK, AK, AFF, q0, q1);
}

/* The linear block's outputs of one row (fused epilogue, e as qdw_conv
 * fills it, init/sc/bi per group). Two pixels at a time, every group's
 * accumulator in its own chain (dpbusd's latency); KW, NG constants where
 * specialised. */
VNNI_INLINE void qdw_lin_px(const qdw_ep *e, __m512i a, int64_t ow, int64_t j, int AK, bool AFF,
                            const __mmask16 *gm) {
    _mm512_mask_cvtepi32_storeu_epi8(e->y + ow * e->C + 16 * j, gm[j],
                                     qdw_q(a, e->sc[j], e->bi[j], e, AK, AFF));
}

VNNI_INLINE void qdw_lin_t(const __m512i *V, const __m512i *wb, const qdw_ep *e, int64_t OW,
                           int64_t sw, int64_t KW, int64_t NQH, int64_t DW, int64_t NG, int AK,
                           bool AFF, int64_t q0, int64_t q1, const __mmask16 *gm) {
    const int64_t ps = sw * NQH * NG; /* V vectors per output pixel */
    int64_t ow = 0;
    for (; ow + 2 <= OW; ow += 2) {
        const __m512i *vp = V + ow * ps;
        __m512i a0 = e->init[0], a1 = e->init[1], b0 = e->init[0], b1 = e->init[1];
        for (int64_t kw = 0; kw < KW; kw++)
            for (int64_t qh = q0; qh < q1; qh++) {
                const __m512i *v = vp + (kw * DW * NQH + qh) * NG, *w = wb + (kw * NQH + qh) * 4;
                a0 = _mm512_dpbusd_epi32(a0, v[0], w[0]);
                b0 = _mm512_dpbusd_epi32(b0, v[ps], w[0]);
                if (NG > 1) {
                    a1 = _mm512_dpbusd_epi32(a1, v[1], w[1]);
                    b1 = _mm512_dpbusd_epi32(b1, v[ps + 1], w[1]);
                }
            }
        qdw_lin_px(e, a0, ow, 0, AK, AFF, gm);
        qdw_lin_px(e, b0, ow + 1, 0, AK, AFF, gm);
        if (NG > 1) {
            qdw_lin_px(e, a1, ow, 1, AK, AFF, gm);
            qdw_lin_px(e, b1, ow + 1, 1, AK, AFF, gm);
        }
    }
    for (; ow < OW; ow++) {
        const __m512i *vp = V + ow * ps;
        __m512i a0 = e->init[0], a1 = e->init[1];
        for (int64_t kw = 0; kw < KW; kw++)
            for (int64_t qh = q0; qh < q1; qh++) {
                const __m512i *v = vp + (kw * DW * NQH + qh) * NG, *w = wb + (kw * NQH + qh) * 4;
                a0 = _mm512_dpbusd_epi32(a0, v[0], w[0]);
                if (NG > 1) a1 = _mm512_dpbusd_epi32(a1, v[1], w[1]);
            }
        qdw_lin_px(e, a0, ow, 0, AK, AFF, gm);
        if (NG > 1) qdw_lin_px(e, a1, ow, 1, AK, AFF, gm);
    }
}

VNNI_INLINE void qdw_lin_g(const qdw_state *s, const qdw_geo *g, const __m512i *V,
                           const __m512i *wb, const qdw_ep *e, int AK, bool AFF, int64_t q0,
                           int64_t q1, const __mmask16 *gm) {
    const int64_t KW = s->KW, NQ = s->nqh, DW = g->dw, NG = s->ng;
    if (KW == 3 && NQ == 1 && DW == 1 && NG == 1)
        qdw_lin_t(V, wb, e, g->OW, g->sw, 3, 1, 1, 1, AK, AFF, q0, q1, gm);
    else if (KW == 3 && NQ == 1 && DW == 1 && NG == 2)
        qdw_lin_t(V, wb, e, g->OW, g->sw, 3, 1, 1, 2, AK, AFF, q0, q1, gm);
    else if (KW == 5 && NQ == 2 && DW == 1 && NG == 1)
        qdw_lin_t(V, wb, e, g->OW, g->sw, 5, 2, 1, 1, AK, AFF, q0, q1, gm);
    else if (KW == 5 && NQ == 2 && DW == 1 && NG == 2)
        qdw_lin_t(V, wb, e, g->OW, g->sw, 5, 2, 1, 2, AK, AFF, q0, q1, gm);
    else if (NG == 1)
        qdw_lin_t(V, wb, e, g->OW, g->sw, KW, NQ, DW, 1, AK, AFF, q0, q1, gm);
    else
        qdw_lin_t(V, wb, e, g->OW, g->sw, KW, NQ, DW, 2, AK, AFF, q0, q1, gm);
}

/* One row and block: the sums, then (fused) the outputs or F. Returns
 * whether the outputs are written. */
static PR_VNNI bool qdw_conv(const qdw_state *s, const qdw_geo *g, const __m512i *V, int64_t cb,
                             __m512 *F, uint8_t *yrow, int64_t q0, int64_t q1) {
    const int64_t C = s->C, nc = C - cb * 64 < 64 ? C - cb * 64 : 64;
    const __m512i *wb = (const __m512i *)s->wp + cb * s->KW * s->nqh * 4;
    qdw_ep e;
    for (int r = 0; r < 4; r++) {
        e.init[r] = _mm512_loadu_si512(s->init + cb * 64 + r * 16);
        for (int64_t qh = 0; qh < s->nqh; qh++) /* skipped quads' compensation back */
            if (qh < q0 || qh >= q1)
                e.init[r] = _mm512_add_epi32(
                    e.init[r], _mm512_loadu_si512(s->qcomp + (cb * s->nqh + qh) * 64 + r * 16));
        e.sc[r] = _mm512_loadu_ps(s->sc + cb * 64 + r * 16);
        e.bi[r] = _mm512_loadu_ps(s->bias + cb * 64 + r * 16);
    }
    e.F = F;
    e.y = yrow + cb * 64;
    e.C = C;
    e.m = nc >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << nc) - 1;
    e.u8 = s->ydt == PRECIS_UINT8;
    if (!pr_qdw_fused(s)) {
        qdw_conv_g(s, g, V, wb, &e, EP_F, PR_ACT_NONE, false, q0, q1);
        return false;
    }
    bool aff = s->act2.kind == PR_ACT_AFFINE;
    e.alo = _mm512_set1_ps(s->act.kind == PR_ACT_CLIP ? s->act.alpha : 0.0f);
    e.ahi = _mm512_set1_ps(s->act.kind == PR_ACT_CLIP ? s->act.beta : INFINITY);
    e.a2a = _mm512_set1_ps(aff ? s->act2.alpha * s->inv : s->inv);
    e.a2b = _mm512_set1_ps(aff ? s->act2.beta * s->inv : 0.0f);
    e.lo = _mm512_set1_ps(s->lo);
    e.hi = _mm512_set1_ps(s->hi);
    if (s->lin && cb == s->nblk - 1) {
        __mmask16 gm[2];
        for (int64_t j = 0; j < s->ng; j++)
            gm[j] = nc - 16 * j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nc - 16 * j)) - 1u);
        switch (s->act.kind) {
        case PR_ACT_RELU:
        case PR_ACT_CLIP:
            if (aff) qdw_lin_g(s, g, V, wb, &e, PR_ACT_CLIP, true, q0, q1, gm);
            else qdw_lin_g(s, g, V, wb, &e, PR_ACT_CLIP, false, q0, q1, gm);
            break;
        case PR_ACT_HARD_SWISH:
            if (aff) qdw_lin_g(s, g, V, wb, &e, PR_ACT_HARD_SWISH, true, q0, q1, gm);
            else qdw_lin_g(s, g, V, wb, &e, PR_ACT_HARD_SWISH, false, q0, q1, gm);
            break;
        default:
            if (aff) qdw_lin_g(s, g, V, wb, &e, PR_ACT_NONE, true, q0, q1, gm);
            else qdw_lin_g(s, g, V, wb, &e, PR_ACT_NONE, false, q0, q1, gm);
            break;
        }
        return true;
    }
    if (s->sat == QDW_SAT_CLIP) {
        qdw_conv_g(s, g, V, wb, &e, EP_Q, QDW_AK_SAT_CLIP, false, q0, q1);
        return true;
    }
    if (s->sat == QDW_SAT_RELU) {
        qdw_conv_g(s, g, V, wb, &e, EP_Q, QDW_AK_SAT_RELU, false, q0, q1);
        return true;
    }
    if (s->sat == QDW_SAT_FREE_NONE) {
        qdw_conv_g(s, g, V, wb, &e, EP_Q, QDW_AK_FREE_NONE, false, q0, q1);
        return true;
    }
    if (s->sat == QDW_SAT_FREE_RELU) {
        qdw_conv_g(s, g, V, wb, &e, EP_Q, QDW_AK_FREE_RELU, false, q0, q1);
        return true;
    }
    if (s->sat == QDW_SAT_FREE_HSW) {
        qdw_conv_g(s, g, V, wb, &e, EP_Q, QDW_AK_FREE_HSW, false, q0, q1);
        return true;
    }
    switch (s->act.kind) {
    case PR_ACT_RELU:
    case PR_ACT_CLIP:
        if (aff) qdw_conv_g(s, g, V, wb, &e, EP_Q, PR_ACT_CLIP, true, q0, q1);
        else qdw_conv_g(s, g, V, wb, &e, EP_Q, PR_ACT_CLIP, false, q0, q1);
        break;
    case PR_ACT_HARD_SWISH:
        if (aff) qdw_conv_g(s, g, V, wb, &e, EP_Q, PR_ACT_HARD_SWISH, true, q0, q1);
        else qdw_conv_g(s, g, V, wb, &e, EP_Q, PR_ACT_HARD_SWISH, false, q0, q1);
        break;
    default:
        if (aff) qdw_conv_g(s, g, V, wb, &e, EP_Q, PR_ACT_NONE, true, q0, q1);
        else qdw_conv_g(s, g, V, wb, &e, EP_Q, PR_ACT_NONE, false, q0, q1);
        break;
    }
    return true;
}

/* The linear block (qdw_lin_ok): V[(p * nqh + qh) * ng + g] for the live
 * quads; lane L of group g = the 4 kernel rows' bytes of channel 16 g + L. */
/* one target list (clang honors only one target attribute of a function) */
static __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,f16c,fma"))) void
qdw_build_lin(const qdw_state *s, const qdw_geo *g, const uint8_t *x, int64_t oh, int64_t cb,
              int64_t nc, __m512i *V, int64_t q0, int64_t q1) {
    static const uint8_t zb[64] __attribute__((aligned(64)));
    const __m128i flip = _mm_set1_epi8(s->xdt == PRECIS_INT8 ? (char)0x80 : 0);
    const __m512i idx = _mm512_set_epi32(
        0x3f2f1f0f, 0x3e2e1e0e, 0x3d2d1d0d, 0x3c2c1c0c, 0x3b2b1b0b, 0x3a2a1a0a, 0x39291909,
        0x38281808, 0x37271707, 0x36261606, 0x35251505, 0x34241404, 0x33231303, 0x32221202,
        0x31211101, 0x30201000); /* byte 4 L + t <- row t's byte L */
    const int64_t C = s->C, nqh = s->nqh, ng = s->ng;
    const uint8_t *rows[QDW_MAXK + 4];
    int64_t step[QDW_MAXK + 4];
    for (int64_t kh = 0; kh < nqh * 4; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        bool ok = kh < s->KH && ih >= 0 && ih < g->IH;
        rows[kh] = ok ? x + ih * g->IW * C + cb * 64 : zb;
        step[kh] = ok ? C : 0;
    }
    __mmask16 gm[2];
    for (int64_t j = 0; j < ng; j++)
        gm[j] = nc - 16 * j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nc - 16 * j)) - 1u);
    for (int64_t qh = q0; qh < q1; qh++) {
        const uint8_t *const *r = rows + qh * 4;
        const int64_t *st = step + qh * 4;
        for (int64_t p = 0; p < g->ncol; p++) {
            int64_t iw = p - g->pl;
            bool in = iw >= 0 && iw < g->IW;
            const uint8_t *p0 = in ? r[0] + iw * st[0] : zb, *p1 = in ? r[1] + iw * st[1] : zb;
            const uint8_t *p2 = in ? r[2] + iw * st[2] : zb, *p3 = in ? r[3] + iw * st[3] : zb;
            __m512i *o = V + (p * nqh + qh) * ng;
            for (int64_t j = 0; j < ng; j++) {
                const __mmask16 m = gm[j];
                const int64_t o16 = 16 * j;
                __m512i t = _mm512_castsi128_si512(
                    _mm_xor_si128(_mm_maskz_loadu_epi8(m, p0 + o16), flip));
                t = _mm512_inserti32x4(t, _mm_xor_si128(_mm_maskz_loadu_epi8(m, p1 + o16), flip), 1);
                t = _mm512_inserti32x4(t, _mm_xor_si128(_mm_maskz_loadu_epi8(m, p2 + o16), flip), 2);
                t = _mm512_inserti32x4(t, _mm_xor_si128(_mm_maskz_loadu_epi8(m, p3 + o16), flip), 3);
                _mm512_store_si512(o + j, _mm512_permutexvar_epi8(idx, t));
            }
        }
    }
}

/* One activation over n vectors, the kind's loop chosen once. */
#define QDW_ACT_LOOP(K)                                                                            \
    case K: {                                                                                      \
        const pr_act ak = {K, a->alpha, a->beta};                                                  \
        for (int64_t i = 0; i < n; i++) F[i] = pv_act(&ak, F[i]);                                  \
        break;                                                                                     \
    }
static PR_VNNI void qdw_act(const pr_act *a, __m512 *F, int64_t n) {
    switch (a->kind) {
        QDW_ACT_LOOP(PR_ACT_RELU)
        QDW_ACT_LOOP(PR_ACT_LEAKY_RELU)
        QDW_ACT_LOOP(PR_ACT_CLIP)
        QDW_ACT_LOOP(PR_ACT_HARD_SIGMOID)
        QDW_ACT_LOOP(PR_ACT_HARD_SWISH)
        QDW_ACT_LOOP(PR_ACT_AFFINE)
    case PR_ACT_NONE: break;
    default:
        for (int64_t i = 0; i < n; i++) F[i] = pv_act(a, F[i]);
        break;
    }
}

/* F (lane order above) -> the row's outputs of block cb. */
static PR_VNNI void qdw_out(const qdw_state *s, const __m512 *F, int64_t OW, int64_t cb,
                            uint8_t *y) {
    const int64_t C = s->C, nc = C - cb * 64 < 64 ? C - cb * 64 : 64;
    if (s->ydt == PRECIS_FLOAT32) {
        float *yf = (float *)y + cb * 64;
        for (int64_t ow = 0; ow < OW; ow++, yf += C) {
            const __m512 *f = F + ow * 4;
            __m512 t0 = _mm512_shuffle_f32x4(f[0], f[1], 0x44);
            __m512 t1 = _mm512_shuffle_f32x4(f[2], f[3], 0x44);
            __m512 t2 = _mm512_shuffle_f32x4(f[0], f[1], 0xEE);
            __m512 t3 = _mm512_shuffle_f32x4(f[2], f[3], 0xEE);
            __m512 o[4] = {_mm512_shuffle_f32x4(t0, t1, 0x88), _mm512_shuffle_f32x4(t0, t1, 0xDD),
                           _mm512_shuffle_f32x4(t2, t3, 0x88), _mm512_shuffle_f32x4(t2, t3, 0xDD)};
            for (int k = 0; k < 4 && k * 16 < nc; k++) {
                if (nc - k * 16 >= 16)
                    _mm512_storeu_ps(yf + k * 16, o[k]);
                else
                    _mm512_mask_storeu_ps(yf + k * 16, pv_tail(nc - k * 16), o[k]);
            }
        }
        return;
    }
    const __m512 inv = _mm512_set1_ps(s->inv), lo = _mm512_set1_ps(s->lo), hi = _mm512_set1_ps(s->hi);
    const bool u8 = s->ydt == PRECIS_UINT8;
    const __mmask64 m = nc >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << nc) - 1;
    uint8_t *yb = y + cb * 64;
    for (int64_t ow = 0; ow < OW; ow++, yb += C) {
        const __m512 *f = F + ow * 4;
        __m512i q0 = pv_q8_round(_mm512_mul_ps(f[0], inv), lo, hi);
        __m512i q1 = pv_q8_round(_mm512_mul_ps(f[1], inv), lo, hi);
        __m512i q2 = pv_q8_round(_mm512_mul_ps(f[2], inv), lo, hi);
        __m512i q3 = pv_q8_round(_mm512_mul_ps(f[3], inv), lo, hi);
        __m512i p01 = _mm512_packs_epi32(q0, q1), p23 = _mm512_packs_epi32(q2, q3);
        __m512i b = u8 ? _mm512_packus_epi16(p01, p23) : _mm512_packs_epi16(p01, p23);
        _mm512_mask_storeu_epi8(yb, m, b);
    }
}

/* Block cb of output row oh of image n (the row path). */
static PR_VNNI void qdw_row(const qdw_state *s, const qdw_geo *g, const uint8_t *x, uint8_t *y,
                            int64_t n, int64_t oh, int64_t cb, __m512i *V, __m512 *F) {
    const int64_t C = s->C, nc = C - cb * 64 < 64 ? C - cb * 64 : 64;
    const __mmask64 cm = nc >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << nc) - 1;
    /* the quads with a kernel row in the image */
    int64_t q0 = s->nqh, q1 = 0;
    for (int64_t kh = 0; kh < s->KH; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        if (ih < 0 || ih >= g->IH) continue;
        if (kh / 4 < q0) q0 = kh / 4;
        if (kh / 4 + 1 > q1) q1 = kh / 4 + 1;
    }
    if (q1 <= q0) q0 = q1 = 0;
    const uint8_t *xn = x + (size_t)(n * g->IH * g->IW * C);
    if (s->lin && cb == s->nblk - 1)
        qdw_build_lin(s, g, xn, oh, cb, nc, V, q0, q1);
    else
        qdw_build(s, g, xn, oh, cb, cm, V, q0, q1);
    uint8_t *yrow = y + (size_t)((n * g->OH + oh) * g->OW * C) * pr_dtype_size(s->ydt);
    if (!qdw_conv(s, g, V, cb, F, yrow, q0, q1)) {
        qdw_act(&s->act, F, g->OW * 4);
        qdw_act(&s->act2, F, g->OW * 4);
        qdw_out(s, F, g->OW, cb, yrow);
    }
}

/* Block cb (interleaved, not the linear one) of every output row of image
 * n by the small-image path (qdw_img_tables): rows 0..3 of the image
 * interleaved once (qdw_build with a one-quad geometry whose row kh is
 * image row kh), each output row summed against its own weights. */
static PR_VNNI void qdw_img(const qdw_state *s, const qdw_geo *g, const uint8_t *x, uint8_t *y,
                            int64_t n, int64_t cb, int64_t part, int64_t parts, __m512i *V,
                            __m512 *F) {
    /* output columns [o0, o1) (parts > 1: threads split the columns, each
     * building its columns' V): the geometry of that slice */
    const int64_t o0 = g->OW * part / parts, o1 = g->OW * (part + 1) / parts;
    if (o1 <= o0) return;
    qdw_geo gp = *g;
    gp.OW = o1 - o0;
    gp.pl = g->pl - o0 * g->sw;
    gp.ncol = (gp.OW - 1) * g->sw + (s->KW - 1) * g->dw + 1;
    const int64_t C = s->C, nc = C - cb * 64 < 64 ? C - cb * 64 : 64;
    const __mmask64 cm = nc >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << nc) - 1;
    const uint8_t *xn = x + (size_t)(n * g->IH * g->IW * C);
    qdw_state s2 = *s;
    s2.nqh = 1;
    s2.lin = false;
    qdw_geo gc = gp; /* the sums' geometry */
    if (s->img_pairs && g->IH <= 2) {
        qdw_build_pairs(s, &gp, xn, cb, cm, V);
        s2.KW = (s->KW + 1) / 2; /* pairs 2 columns apart */
        gc.dw = 2;
    } else {
        qdw_state s1 = *s;
        s1.KH = 4;
        s1.nqh = 1;
        qdw_geo g1 = gp;
        g1.sh = 0;
        g1.pt = 0;
        g1.dh = 1;
        qdw_build(&s1, &g1, xn, 0, cb, cm, V, 0, 1);
    }
    const size_t ysz = pr_dtype_size(s->ydt);
    for (int64_t oh = 0; oh < g->OH; oh++) {
        s2.wp = s->wimg[g->IH - 1][oh];
        s2.init = s->iinit[g->IH - 1][oh];
        uint8_t *yrow = y + (size_t)((n * g->OH + oh) * g->OW + o0) * (size_t)C * ysz;
        if (!qdw_conv(&s2, &gc, V, cb, F, yrow, 0, 1)) {
            qdw_act(&s->act, F, gp.OW * 4);
            qdw_act(&s->act2, F, gp.OW * 4);
            qdw_out(s, F, gp.OW, cb, yrow);
        }
    }
}

/* Item it of qdw_run_vnni: (image, block, column part) of the small-image
 * path, then (row, block) of the row path; V: this thread's scratch (F
 * after nv). */
static void qdw_item(const qdw_state *s, const qdw_geo *g, const uint8_t *x, uint8_t *y,
                     int64_t it, int64_t items_img, int64_t nimg, int64_t parts, int64_t rb,
                     __m512i *V, int64_t nv) {
    __m512 *F = (__m512 *)(V + nv);
    if (it < items_img) {
        const int64_t per_n = nimg * parts, rem = it % per_n;
        qdw_img(s, g, x, y, it / per_n, rem / parts, rem % parts, parts, V, F);
        return;
    }
    const int64_t r = it - items_img, row = r / rb, cb = nimg + r % rb;
    qdw_row(s, g, x, y, row / g->OH, row % g->OH, cb, V, F);
}

static void qdw_run_vnni(const qdw_state *s, const qdw_geo *g, const uint8_t *x, uint8_t *y,
                         int64_t N, __m512i *scr, int64_t per, int nt) {
    const bool img = g->IH >= 1 && g->IH <= 4 && g->dh == 1 && s->img_oh[g->IH - 1] == g->OH &&
                     g->pt == s->img_pt && g->sh == s->img_sh;
    /* items: (image, block) of the small-image path, then (row, block) of
     * the row path (with img: the linear block only, if any) */
    const int64_t nimg = img ? s->nblk - (s->lin ? 1 : 0) : 0, rb = img ? s->nblk - nimg : s->nblk;
    /* with threads, the small-image items split the output columns (an item
     * per image and block left one thread most of the work at batch 1) */
    const int64_t parts = nt > 1 && g->OW >= 16 * nt ? nt : 1;
    const int64_t items_img = N * nimg * parts, items = items_img + N * g->OH * rb;
    const int64_t nv = g->ncol * s->nqh * 4;
    /* no region: entering even a serial one costs ~0.3 us (NOTES.md session 11) */
    if (nt < 2 || items < 2) {
        for (int64_t it = 0; it < items; it++)
            qdw_item(s, g, x, y, it, items_img, nimg, parts, rb, scr, nv);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t it = 0; it < items; it++)
        qdw_item(s, g, x, y, it, items_img, nimg, parts, rb,
                 scr + (size_t)omp_get_thread_num() * (size_t)per, nv);
}
#endif

static precis_status qdw_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    qdw_state *s = state;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    if (X->dtype != s->xdt || Y->dtype != s->ydt)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "prepared for %s -> %s, got %s -> %s",
                          pr_dtype_name(s->xdt), pr_dtype_name(s->ydt), pr_dtype_name(X->dtype),
                          pr_dtype_name(Y->dtype));
    if (X->rank != 4 || X->dims[1] != s->C)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must be [N, %lld, H, W]", (long long)s->C);
    pr_conv_geom geo;
    int64_t in_sp[2] = {X->dims[2], X->dims[3]}, wk[2] = {s->KH, s->KW};
    precis_status st = pr_conv_geom_init(k->node, PR_CONV_KIND_CONV, 2, in_sp, wk, k->err, &geo);
    if (st) return st;
    if (Y->rank != 4 || Y->dims[0] != X->dims[0] || Y->dims[1] != s->C ||
        Y->dims[2] != geo.out[0] || Y->dims[3] != geo.out[1])
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "output is not [%lld,%lld,%lld,%lld]",
                          (long long)X->dims[0], (long long)s->C, (long long)geo.out[0],
                          (long long)geo.out[1]);
    if (Y->numel == 0) return PRECIS_OK;
    if (s->direct) {
        const int64_t dg[10] = {X->dims[2],    X->dims[3],    geo.out[0],    geo.out[1],
                                geo.stride[0], geo.stride[1], geo.dil[0],    geo.dil[1],
                                geo.pad_b[0],  geo.pad_b[1]};
        return pr_qdw_direct_run(s, k, x, dg);
    }
#ifdef PR_CPU_X86
    qdw_geo g = {X->dims[2], X->dims[3], geo.out[0], geo.out[1], geo.stride[0], geo.stride[1],
                 geo.dil[0], geo.dil[1], geo.pad_b[0], geo.pad_b[1], 0};
    g.ncol = (g.OW - 1) * g.sw + (s->KW - 1) * g.dw + 1;
    int nt = x->num_threads > 0 ? x->num_threads : 1;
    int64_t per = g.ncol * s->nqh * 4 + g.OW * 4; /* V and F, in vectors */
    __m512i *scr = pr_cpu_scratch(x, (size_t)per * sizeof(__m512i) * (size_t)nt);
    if (!scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    qdw_run_vnni(s, &g, X->data, Y->data, X->dims[0], scr, per, nt);
    return PRECIS_OK;
#else
    return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "qdwconv needs x86 AVX512-VNNI");
#endif
}

static const char *qdw_describe(void *state) {
    const qdw_state *s = state;
    if (s && s->direct)
        return s->big ? "qdwconv.direct (dnnl.qconv over 4096 px)" : "qdwconv.direct";
    return "qdwconv.avx512_vnni";
}

const pr_cpu_impl pr_cpu_impl_qdwconv = {
    .name = "qdwconv",
    .supports = pr_qdw_supports,
    .nhwc_ok = qdw_nhwc_ok,
    .prepare = pr_qdw_prepare,
    .run = qdw_run,
    .describe = qdw_describe,
    .destroy = pr_qdw_destroy,
};

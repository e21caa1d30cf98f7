/* pr_cpu_impl_q1x1 (kernels.h): the INT8 1x1 convolution on NHWC images;
 * its state and checks are qfc's (k_qfc.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/k_q1x1.h"
#include "backends/cpu/k_qfc.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

#define Q1X1_MAX_IC 256 /* where q1x1 takes a conv (measured, see q1x1_supports) */

static bool q1x1_nhwc_ok(const pr_graph *g, const pr_node *n) { return true; }

/* The same 1x1 QConv as qfc on NHWC images of more pixels,
 * stride 1, int8/uint8 out, act none/Relu/Clip/HardSwish/Swish, act2
 * none/Affine:
 * the pointwise convs of the mobile nets with few input channels, where
 * oneDNN's brgconv_1x1 spends most of its time outside the products (PP-OCR
 * cls's 32->200 + HardSwish over 2x96 pixels: 8.2 us for 1.2 M MACs).
 * vpdpbusd sums 4 input channels per lane: per 4 pixels x 4 vectors of 16
 * output channels, each step over 4 input channels loads 4 weight vectors,
 * broadcasts 4 pixels' 4 bytes and issues 16 vpdpbusd; an int8 src is
 * biased by 128 with -128 * sum(w) in the start (qdwconv's way). The int32
 * sums are exact, so the epilogue is qfc's ((acc + B / s) * s, 1 / y_scale
 * folded for positively homogeneous acts, HardSwish as pv_act): outputs
 * equal qfc's for the same sums. Needs AVX512-VNNI. PRECIS_Q1X1=0 leaves
 * these convs to dnnl.qconv (A/B timing).
 * Where it is taken (per-layer minimum over 3 interleaved rounds, 1 thread,
 * batch 1, against dnnl.qconv): expansions and square convs (OC >= IC,
 * OC >= 16) on images up to 4096 pixels win: cls 16->88 5.2 -> 3.9 us,
 * 32->200 7.8 -> 6.5, rec 240->240 at 12x80 151 -> 142, det 192->192 at
 * 40x40 168 -> 156, EfficientNet-Lite0 80->480 at 14x14 25 -> 23,
 * CenterFace 32->192 at 40x40 42 -> 37; larger images lose (det 16->32 at
 * 320x320 487 -> 719 us, 48->96 at 80x80 144 -> 163): there the state's
 * dnnl.qconv primitive runs (the dims are known at run time only); narrow
 * projections lose or tie (EfficientNet 96->24 at 56x56 29 -> 31,
 * CenterFace ->32 at 40x40 20 -> 23.5): declined. OC 8 with 16-lane
 * vectors lost (cls 8->8 at 24x96 4.0 -> 7.7 us); two pixels per vector
 * (q1_rows8) win: 3.8 -> 2.5, 8->8 at 12x96 1.9 -> 1.4. */
static bool q1x1_vnni(void) {
#ifdef PR_CPU_X86
    return pr_cpu_use_vnni("PRECIS_Q1X1");
#else
    return false;
#endif
}

/* A residual (no act, OC 8 from up to 32 channels: cls's 32->8 + Add at
 * 6x48, b8 on brgconv_1x1 15.6 us t1, 13.4 t2): q1_rows8z. PRECIS_Q1X1_Z=0:
 * declined (A/B). */
static bool q1x1_z_ok(const pr_graph *g, const pr_node *n) {
    static int on = -1;
    const pr_tensor *W = pr_node_tin(g, n, 1), *Z = pr_node_tin(g, n, 4);
    pr_act a, a2;
    const float zs = pr_attr_float(n, "z_scale", 0.0f), ys = pr_attr_float(n, "y_scale", 0.0f);
    return pr_cpu_switch_on("PRECIS_Q1X1_Z", &on) && Z && (Z->dtype == PRECIS_INT8 ||
           Z->dtype == PRECIS_UINT8) && Z->layout == PR_LAYOUT_NHWC && W->dims[0] == 8 &&
           W->dims[1] <= 32 && pr_act_from_node(n, "act", &a) && a.kind == PR_ACT_NONE &&
           pr_act_from_node(n, "act2", &a2) && a2.kind == PR_ACT_NONE && zs > 0.0f &&
           isfinite(zs) && ys > 0.0f && isfinite(zs / ys);
}

/* OC 24 as pixel pairs of 3 groups of 8 channels (q1_rows24) rather than
 * 16-lane vectors (a half-empty second one). PRECIS_Q1X1_P24=0 (read at
 * prepare): the vectors (A/B). */
static bool q1_pairs24_on(void) {
    const char *e = getenv("PRECIS_Q1X1_P24");
    return !(e && !strcmp(e, "0"));
}

/* OC 16 k + 8 (k > 0: cls's 40, 88, 104, 200-channel expansions): the last
 * 8 channels as pixel pairs (q1_tail8) rather than a half-empty 16-lane
 * vector. PRECIS_Q1X1_T8=0 (read at prepare): the vector (A/B). */
static bool q1_tail8_on(void) {
    const char *e = getenv("PRECIS_Q1X1_T8");
    return !(e && !strcmp(e, "0"));
}

static bool q1x1_supports(const pr_graph *g, const pr_node *n) {
    const bool hz = n->n_inputs == 5 && n->inputs[4] >= 0;
    if (!q1x1_vnni() || !(hz ? pr_qfc_common_z(g, n) : pr_qfc_common(g, n))) return false;
    if (hz && !q1x1_z_ok(g, n)) return false;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1);
    const pr_tensor *Y = pr_node_tout(g, n, 0);
    if (X->layout != PR_LAYOUT_NHWC || Y->layout != PR_LAYOUT_NHWC) return false;
    if (X->dims[2] == 1 && X->dims[3] == 1) return false; /* qfc's */
    if (pr_qfc_y_dtype(n) == PRECIS_FLOAT32) return false;
    const int64_t *v;
    int nv = pr_attr_ints(n, "strides", &v);
    for (int i = 0; i < nv; i++)
        if (v[i] != 1) return false;
    pr_act a, a2;
    pr_act_from_node(n, "act", &a);
    pr_act_from_node(n, "act2", &a2);
    if (a.kind != PR_ACT_NONE && a.kind != PR_ACT_RELU && a.kind != PR_ACT_CLIP &&
        a.kind != PR_ACT_HARD_SWISH && a.kind != PR_ACT_SWISH)
        return false;
    /* Swish (YOLOv8n) in the epilogue, as the late pass computes it
     * (k_qact.h); PRECIS_Q1X1_SWISH=0 leaves these to dnnl.qconv + the late
     * pass (A/B) */
    const char *sw = getenv("PRECIS_Q1X1_SWISH");
    if (a.kind == PR_ACT_SWISH && sw && !strcmp(sw, "0")) return false;
    if (a2.kind != PR_ACT_NONE && a2.kind != PR_ACT_AFFINE) return false;
    /* expansions and square convs: OC >= IC (narrow projections, few output
     * vectors against many input steps, measured no faster than oneDNN) */
    /* with Swish, projections too: the alternative is oneDNN + the late
     * pass's float round trip (YOLOv8n b1 t1 per-step minima, us, dnnl +
     * late pass -> q1x1: C2f cv2 96->64 at 40x40 75.6 -> 68.4, 192->128 at
     * 20x20 60.7 -> 55.5, SPPF cv1 256->128 at 10x10 16.4 -> 14.2) */
    /* projections to 8 channels from up to 32 (two pixels a vector,
     * q1_rows8), where oneDNN's 16-lane kernels waste half their lanes: cls
     * 24->8 at 6x48 b8 t1 ~14 us on brgconv_1x1 (NOTES.md session 17);
     * PRECIS_Q1X1_PROJ8=0: declined (A/B) */
    static int p8 = -1;
    const bool proj = (a.kind == PR_ACT_SWISH && W->dims[0] >= 16) ||
                      (W->dims[0] == 8 && W->dims[1] <= 32 && pr_cpu_switch_on("PRECIS_Q1X1_PROJ8", &p8));
    return (W->dims[0] >= 16 || W->dims[0] == 8) && (W->dims[0] >= W->dims[1] || proj) &&
           W->dims[1] % 4 == 0 && W->dims[1] <= Q1X1_MAX_IC;
}

static precis_status q1x1_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                  void **state, pr_err *e) {
    *state = NULL;
    if (!q1x1_supports(g, n))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by q1x1",
                       n->name, n->op_type);
    qfc_state *s;
    precis_status st = pr_qfc_state_new(g, n, &s, e);
    if (st) return st;
    const int8_t *w = pr_node_tin(g, n, 1)->data;
    const float *ws = pr_node_tin(g, n, 2)->data;
    const int64_t OCv = (s->OC + 15) / 16;
    s->ICq = (s->IC + 3) / 4;
    size_t nw = (size_t)(OCv * s->ICq * 64);
    s->wq = aligned_alloc(64, nw);
    s->comp = calloc((size_t)s->OCp, sizeof(int32_t));
    if (!s->wq || !s->comp) {
        pr_qfc_destroy(s);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    memset(s->wq, 0, nw);
    if (n->n_inputs == 5 && n->inputs[4] >= 0) { /* q1x1_z_ok */
        s->zdt = pr_node_tin(g, n, 4)->dtype;
        s->zsf = pr_attr_float(n, "z_scale", 1.0f) * (1.0f / pr_attr_float(n, "y_scale", 1.0f));
    }
    /* large images go to oneDNN (see Q1X1_MAX_PIX); without it (or if it
     * declines) q1x1 runs them too */
    if (s->OC == 24 && q1_pairs24_on()) { /* filled after the weights, below */
        s->g24 = aligned_alloc(64, (size_t)(3 * s->ICq * 64) + 3 * 48 * 4);
        if (!s->g24) {
            pr_qfc_destroy(s);
            return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        }
    }
    if (pr_cpu_impl_dnnl_qconv.supports(g, n)) {
        pr_err e2 = {0};
        if (pr_cpu_impl_dnnl_qconv.prepare(g, n, cfg, &s->big, &e2)) s->big = NULL;
    }
    const bool s8 = s->xdt == PRECIS_INT8;
    for (int64_t m = 0; m < s->OC; m++) {
        if (ws[m] == 0.0f) continue; /* real weights 0 (qfc_state_new: scale 1) */
        int32_t sum = 0;
        for (int64_t c = 0; c < s->IC; c++) {
            int8_t q = w[m * s->IC + c];
            s->wq[((m / 16 * s->ICq + c / 4) * 16 + m % 16) * 4 + c % 4] = q;
            sum += q;
        }
        s->comp[m] = s8 ? -128 * sum : 0;
    }
    if (s->OC == 8) /* lanes 8-15: the next pixel (q1_rows8) */
        for (int64_t j = 8; j < 16; j++) {
            s->comp[j] = s->comp[j - 8];
            s->sc[j] = s->sc[j - 8];
            s->bi[j] = s->bi[j - 8];
            for (int64_t k = 0; k < s->ICq; k++)
                memcpy(s->wq + (k * 16 + j) * 4, s->wq + (k * 16 + j - 8) * 4, 4);
        }
    if (s->OC > 16 && s->OC % 16 == 8 && !s->g24 && q1_tail8_on()) {
        /* lanes 8-15 of the last vector: the next pixel (q1_tail8); the
         * other paths' stores mask those lanes off */
        const int64_t v = s->OC / 16, m0 = 16 * v;
        for (int64_t j = 8; j < 16; j++) {
            s->comp[m0 + j] = s->comp[m0 + j - 8];
            s->sc[m0 + j] = s->sc[m0 + j - 8];
            s->bi[m0 + j] = s->bi[m0 + j - 8];
            for (int64_t k = 0; k < s->ICq; k++)
                memcpy(s->wq + ((v * s->ICq + k) * 16 + j) * 4,
                       s->wq + ((v * s->ICq + k) * 16 + j - 8) * 4, 4);
        }
        s->t8 = true;
    }
    /* |acc| <= IC * 255 * 128; the acts do not grow |r| beyond it or their
     * bounds (HardSwish: |hswish(r)| <= |r|); then act2 and 1 / y_scale */
    const double amax = (double)s->IC * 255.0 * 128.0;
    const double a2 = s->act2.kind == PR_ACT_AFFINE ? fabs((double)s->act2.alpha) : 1.0;
    const double b2 = s->act2.kind == PR_ACT_AFFINE ? fabs((double)s->act2.beta) : 0.0;
    const double lim = (double)(1 << 30);
    s->sat = true;
    for (int64_t m = 0; m < s->OC && s->sat; m++) {
        double r = (amax + fabs((double)s->bi[m])) * fabs((double)s->sc[m]);
        if (s->act.kind == PR_ACT_CLIP)
            r = fmax(r, fmax(fabs((double)s->act.alpha), fabs((double)s->act.beta)));
        r = a2 * r + b2;
        if (!s->folded) r *= fabs((double)s->inv);
        s->sat = r < lim;
    }
    const char *env = getenv("PRECIS_QACT_SAT");
    s->satpk = s->sat && !(env && !strcmp(env, "0"));
    if (s->g24) { /* group g, lane j: channel 8 g + j % 8 */
        int8_t *wg = s->g24;
        int32_t *cg = (int32_t *)(wg + 3 * s->ICq * 64);
        float *sg = (float *)(cg + 48), *bg = sg + 48;
        for (int64_t gi = 0; gi < 3; gi++)
            for (int64_t j = 0; j < 16; j++) {
                const int64_t m = 8 * gi + j % 8;
                cg[16 * gi + j] = s->comp[m];
                sg[16 * gi + j] = s->sc[m];
                bg[16 * gi + j] = s->bi[m];
                for (int64_t k = 0; k < s->ICq; k++)
                    memcpy(wg + ((gi * s->ICq + k) * 16 + j) * 4,
                           s->wq + (((m / 16) * s->ICq + k) * 16 + m % 16) * 4, 4);
            }
    }
    *state = s;
    return PRECIS_OK;
}

#ifdef PR_CPU_X86
/* The epilogue of 16 sums of output channels from m (k_q1x1.h q1_epv). */
Q1_INLINE __m512i q1_ep(const q1_c *c, __m512i acc, int64_t m, int AK, bool A2, bool SAT) {
    return q1_epv(c, acc, _mm512_load_ps(c->bi + m), _mm512_load_ps(c->sc + m), AK, A2, SAT);
}

/* 16 outputs (fewer when left < 16) of channels from m. */
Q1_INLINE void q1_store16(const q1_c *c, uint8_t *yp, int64_t m, int64_t left, int AK, bool A2,
                          bool SAT, __m512i a) {
    /* clamped here: a saturating vpmovusdb / vpmovsdb (and a max for uint8)
     * measured no faster than the float clamp on the 1-3 vector tails */
    (void)SAT;
    const __m128i b = _mm512_cvtepi32_epi8(q1_ep(c, a, m, AK, A2, false));
    if (left >= 16)
        _mm_storeu_si128((__m128i *)yp, b);
    else
        _mm_mask_storeu_epi8(yp, (__mmask16)((1u << left) - 1u), b);
}

/* The outputs of one pixel (row yp) from its NV sums (channels from 16 v0;
 * left: the channels from there). */
Q1_INLINE void q1_store(const q1_c *c, uint8_t *yp, int64_t v0, int64_t left, int NV, int AK,
                        bool A2, int SAT, __m512i a0, __m512i a1, __m512i a2, __m512i a3) {
    const int64_t m = 16 * v0;
    if (SAT == 2 && NV < 4) { /* the tails packed too (q1_rows: PRECIS_QACT_SAT) */
        const __m512i q0 = q1_ep(c, a0, m, AK, A2, true);
        const __m512i q1 = NV > 1 ? q1_ep(c, a1, m + 16, AK, A2, true) : q0;
        const __m512i q2 = NV > 2 ? q1_ep(c, a2, m + 32, AK, A2, true) : q0;
        const __m512i p01 = _mm512_packs_epi32(q0, q1), p22 = _mm512_packs_epi32(q2, q2);
        const __m512i b = _mm512_permutexvar_epi32(
            _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
            c->u8 ? _mm512_packus_epi16(p01, p22) : _mm512_packs_epi16(p01, p22));
        const int64_t nb = left < 16 * NV ? left : 16 * NV;
        _mm512_mask_storeu_epi8(yp, ((__mmask64)1 << nb) - 1, b);
        return;
    }
    if (NV == 4) {
        const __m512i p01 =
            _mm512_packs_epi32(q1_ep(c, a0, m, AK, A2, SAT), q1_ep(c, a1, m + 16, AK, A2, SAT));
        const __m512i p23 = _mm512_packs_epi32(q1_ep(c, a2, m + 32, AK, A2, SAT),
                                               q1_ep(c, a3, m + 48, AK, A2, SAT));
        const __m512i b = _mm512_permutexvar_epi32(
            _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
            c->u8 ? _mm512_packus_epi16(p01, p23) : _mm512_packs_epi16(p01, p23));
        if (left >= 64)
            _mm512_storeu_si512((void *)yp, b);
        else
            _mm512_mask_storeu_epi8(yp, ((__mmask64)1 << left) - 1, b);
        return;
    }
    q1_store16(c, yp, m, left, AK, A2, SAT, a0);
    if (NV > 1) q1_store16(c, yp + 16, m + 16, left - 16, AK, A2, SAT, a1);
    if (NV > 2) q1_store16(c, yp + 32, m + 32, left - 32, AK, A2, SAT, a2);
}

/* PT (4 or 1) pixels from x (rows of IC bytes) x NV (1..4) output vectors
 * from 16 v0 into y (rows of OC bytes). The sums are named variables (GCC
 * spills arrays of them to the stack). */
Q1_INLINE void q1_tile(const q1_c *c, const uint8_t *x, uint8_t *y, int64_t v0, int PT, int NV,
                       int AK, bool A2, int SAT) {
    const int64_t IC = c->IC, OC = c->OC, ICq = c->ICq;
    /* SAT 2: an int8 src biased beforehand (pr_q1x1_rows_run), the dwords
     * broadcast from memory rather than through a register (the shuffle
     * port the packs and vpdpbusd need) */
    const uint32_t flip = SAT == 2 ? 0u : c->flip;
    const __m512i z = _mm512_setzero_si512();
    const int32_t *cp = c->comp + 16 * v0;
    const __m512i c0 = _mm512_loadu_si512((const void *)cp);
    const __m512i c1 = NV > 1 ? _mm512_loadu_si512((const void *)(cp + 16)) : z;
    const __m512i c2 = NV > 2 ? _mm512_loadu_si512((const void *)(cp + 32)) : z;
    const __m512i c3 = NV > 3 ? _mm512_loadu_si512((const void *)(cp + 48)) : z;
#define Q1_ACC(p) __m512i a##p##0 = c0, a##p##1 = c1, a##p##2 = c2, a##p##3 = c3
    Q1_ACC(0);
    Q1_ACC(1);
    Q1_ACC(2);
    Q1_ACC(3);
#undef Q1_ACC
    const __m512i *wv = c->wq + v0 * ICq;
    for (int64_t k = 0; k < ICq; k++) {
        const __m512i w0 = _mm512_load_si512((const void *)(wv + k));
        const __m512i w1 = NV > 1 ? _mm512_load_si512((const void *)(wv + ICq + k)) : z;
        const __m512i w2 = NV > 2 ? _mm512_load_si512((const void *)(wv + 2 * ICq + k)) : z;
        const __m512i w3 = NV > 3 ? _mm512_load_si512((const void *)(wv + 3 * ICq + k)) : z;
#define Q1_DOT(p)                                                                                  \
    do {                                                                                           \
        const __m512i b = q1_x4(x + (p) * IC, k, flip);                                            \
        a##p##0 = q1_dp(a##p##0, b, w0);                                               \
        if (NV > 1) a##p##1 = q1_dp(a##p##1, b, w1);                                  \
        if (NV > 2) a##p##2 = q1_dp(a##p##2, b, w2);                                  \
        if (NV > 3) a##p##3 = q1_dp(a##p##3, b, w3);                                  \
    } while (0)
        Q1_DOT(0);
        if (PT > 1) {
            Q1_DOT(1);
            Q1_DOT(2);
            Q1_DOT(3);
        }
#undef Q1_DOT
    }
    const int64_t left = OC - 16 * v0;
#define Q1_OUT(p)                                                                                  \
    q1_store(c, y + (p) * OC + 16 * v0, v0, left, NV, AK, A2, SAT, a##p##0, a##p##1, a##p##2,     \
             a##p##3)
    Q1_OUT(0);
    if (PT > 1) {
        Q1_OUT(1);
        Q1_OUT(2);
        Q1_OUT(3);
    }
#undef Q1_OUT
}

/* OC 8 (q1x1_prepare replicates weights, sums' start, scales and biases
 * into lanes 8-15): two pixels per vector, lanes 0-7 pixel p and 8-15 pixel
 * p + 1, whose 16 outputs are contiguous in NHWC; 8 pixels per step. */
Q1_INLINE __m512i q1_x4x2(const uint8_t *pa, const uint8_t *pb, int64_t k, uint32_t flip) {
    uint32_t da, db;
    memcpy(&da, pa + 4 * k, 4);
    memcpy(&db, pb + 4 * k, 4);
    return _mm512_mask_set1_epi32(_mm512_set1_epi32((int)(da ^ flip)), 0xff00,
                                  (int)(db ^ flip));
}

/* 8 pixels' sums over ICq dwords of k as 4 pixel pairs (q1_x4x2) against the
 * weight vectors wv, added into *a0..*a3 */
Q1_INLINE void q1_acc8(const uint8_t *xp, int64_t IC, int64_t ICq, const __m512i *wv,
                       uint32_t flip, __m512i *a0, __m512i *a1, __m512i *a2, __m512i *a3) {
    for (int64_t k = 0; k < ICq; k++) {
        const __m512i w = _mm512_load_si512((const void *)(wv + k));
        *a0 = q1_dp(*a0, q1_x4x2(xp, xp + IC, k, flip), w);
        *a1 = q1_dp(*a1, q1_x4x2(xp + 2 * IC, xp + 3 * IC, k, flip), w);
        *a2 = q1_dp(*a2, q1_x4x2(xp + 4 * IC, xp + 5 * IC, k, flip), w);
        *a3 = q1_dp(*a3, q1_x4x2(xp + 6 * IC, xp + 7 * IC, k, flip), w);
    }
}

Q1_INLINE void q1_rows8(const q1_c *restrict c, const uint8_t *x, uint8_t *restrict y, int64_t p0,
                        int64_t p1, int AK, bool A2, int SAT) {
    const int64_t IC = c->IC, ICq = c->ICq;
    const uint32_t flip = SAT == 2 ? 0u : c->flip; /* as q1_tile's */
    const __m512i c0 = _mm512_loadu_si512((const void *)c->comp);
    const __m512i *wv = c->wq;
    int64_t p = p0;
    for (; p + 8 <= p1; p += 8) {
        const uint8_t *xp = x + p * IC;
        __m512i a0 = c0, a1 = c0, a2 = c0, a3 = c0;
        q1_acc8(xp, IC, ICq, wv, flip, &a0, &a1, &a2, &a3);
        if (SAT == 2) { /* 8 pixels' 64 bytes through saturating packs */
            const __m512i p01 = _mm512_packs_epi32(q1_ep(c, a0, 0, AK, A2, true),
                                                   q1_ep(c, a1, 0, AK, A2, true));
            const __m512i p23 = _mm512_packs_epi32(q1_ep(c, a2, 0, AK, A2, true),
                                                   q1_ep(c, a3, 0, AK, A2, true));
            _mm512_storeu_si512(
                (void *)(y + p * 8),
                _mm512_permutexvar_epi32(
                    _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
                    c->u8 ? _mm512_packus_epi16(p01, p23) : _mm512_packs_epi16(p01, p23)));
            continue;
        }
        __m128i *yp = (__m128i *)(y + p * 8);
        _mm_storeu_si128(yp, _mm512_cvtepi32_epi8(q1_ep(c, a0, 0, AK, A2, false)));
        _mm_storeu_si128(yp + 1, _mm512_cvtepi32_epi8(q1_ep(c, a1, 0, AK, A2, false)));
        _mm_storeu_si128(yp + 2, _mm512_cvtepi32_epi8(q1_ep(c, a2, 0, AK, A2, false)));
        _mm_storeu_si128(yp + 3, _mm512_cvtepi32_epi8(q1_ep(c, a3, 0, AK, A2, false)));
    }
    for (; p < p1; p += 2) { /* pairs; a last single pixel reads itself twice */
        const uint8_t *xa = x + p * IC, *xb = p + 1 < p1 ? xa + IC : xa;
        __m512i a = c0;
        for (int64_t k = 0; k < ICq; k++)
            a = q1_dp(a, q1_x4x2(xa, xb, k, flip), _mm512_load_si512((const void *)(wv + k)));
        _mm_mask_storeu_epi8(y + p * 8, p + 1 < p1 ? (__mmask16)0xffff : (__mmask16)0xff,
                             _mm512_cvtepi32_epi8(q1_ep(c, a, 0, AK, A2, false)));
    }
}

/* q1_rows8 with a residual z (rows of 8 bytes, zs8: int8) and no act:
 * k_q1x1.h q1_epvzf, oneDNN's sum post-op as dnnl.qconv sets it (qamx's
 * projections: the same bytes), clamped, vpmovdb stores. */
static Q1_VNNI __attribute__((noinline)) void
q1_rows8z(const q1_c *restrict c, const uint8_t *x, uint8_t *restrict y, const uint8_t *z,
          bool zs8, float zsf, int64_t p0, int64_t p1) {
    const int64_t IC = c->IC, ICq = c->ICq;
    const __m512i c0 = _mm512_loadu_si512((const void *)c->comp);
    const __m512 bi = _mm512_load_ps(c->bi), sc = _mm512_load_ps(c->sc), zs = _mm512_set1_ps(zsf);
    const __m512i *wv = c->wq;
    int64_t p = p0;
#define Q1Z_OUT(a, q)                                                                              \
    do {                                                                                           \
        const __m128i zb = _mm_loadu_si128((const __m128i *)(z + (q) * 8));                        \
        const __m512 zf =                                                                          \
            _mm512_cvtepi32_ps(zs8 ? _mm512_cvtepi8_epi32(zb) : _mm512_cvtepu8_epi32(zb));        \
        _mm_storeu_si128((__m128i *)(y + (q) * 8),                                                 \
                         _mm512_cvtepi32_epi8(q1_epvzf(c, a, bi, sc, zf, zs)));                    \
    } while (0)
    for (; p + 8 <= p1; p += 8) { /* 4 pairs: 4 independent chains of vpdpbusd */
        const uint8_t *xp = x + p * IC;
        __m512i a0 = c0, a1 = c0, a2 = c0, a3 = c0;
        q1_acc8(xp, IC, ICq, wv, c->flip, &a0, &a1, &a2, &a3);
        Q1Z_OUT(a0, p);
        Q1Z_OUT(a1, p + 2);
        Q1Z_OUT(a2, p + 4);
        Q1Z_OUT(a3, p + 6);
    }
#undef Q1Z_OUT
    for (; p < p1; p += 2) { /* pairs; a last single pixel reads itself twice */
        const uint8_t *xa = x + p * IC, *xb = p + 1 < p1 ? xa + IC : xa;
        __m512i a = c0;
        for (int64_t k = 0; k < ICq; k++)
            a = q1_dp(a, q1_x4x2(xa, xb, k, c->flip), _mm512_load_si512((const void *)(wv + k)));
        const __mmask16 m = p + 1 < p1 ? (__mmask16)0xffff : (__mmask16)0xff;
        const __m128i zb = _mm_maskz_loadu_epi8(m, z + p * 8);
        const __m512 zf =
            _mm512_cvtepi32_ps(zs8 ? _mm512_cvtepi8_epi32(zb) : _mm512_cvtepu8_epi32(zb));
        _mm_mask_storeu_epi8(y + p * 8, m, _mm512_cvtepi32_epi8(q1_epvzf(c, a, bi, sc, zf, zs)));
    }
}

/* Two pixels' 3 group vectors (lanes: 8 channels x 2 pixels) as their 2 x
 * 24 bytes (nb: 48, or 24 for a single last pixel): the packs put 4
 * channels of a group a dword, vpermd orders the dwords. Through the
 * packs either way: clamped (in range: exact) or, SAT 2, clamp-free (the
 * sums' bound: the packs clamp). */
Q1_INLINE void q1_st24(const q1_c *c, uint8_t *yp, __m512i a0, __m512i a1, __m512i a2, int AK,
                       bool A2, int SAT, int nb) {
    const __m512i q0 = q1_ep(c, a0, 0, AK, A2, SAT == 2), q1 = q1_ep(c, a1, 16, AK, A2, SAT == 2);
    const __m512i q2 = q1_ep(c, a2, 32, AK, A2, SAT == 2);
    const __m512i p01 = _mm512_packs_epi32(q0, q1), p22 = _mm512_packs_epi32(q2, q2);
    const __m512i b = c->u8 ? _mm512_packus_epi16(p01, p22) : _mm512_packs_epi16(p01, p22);
    _mm512_mask_storeu_epi8(
        yp, nb == 48 ? (__mmask64)0xffffffffffffull : (__mmask64)0xffffffull,
        _mm512_permutexvar_epi32(
            _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 8, 12, 9, 13, 10, 14, 0, 0, 0, 0), b));
}

/* OC 24 (q1_c.pairs24): 8 pixels a step, 4 pairs x 3 groups of sums. */
Q1_INLINE void q1_rows24(const q1_c *restrict c, const uint8_t *x, uint8_t *restrict y, int64_t p0,
                         int64_t p1, int AK, bool A2, int SAT) {
    const int64_t IC = c->IC, ICq = c->ICq;
    const uint32_t flip = SAT == 2 ? 0u : c->flip; /* as q1_tile's */
    const __m512i c0 = _mm512_loadu_si512((const void *)c->comp),
                  c1 = _mm512_loadu_si512((const void *)(c->comp + 16)),
                  c2 = _mm512_loadu_si512((const void *)(c->comp + 32));
    const __m512i *wv = c->wq;
    int64_t p = p0;
    for (; p + 8 <= p1; p += 8) {
        const uint8_t *xp = x + p * IC;
        __m512i a00 = c0, a01 = c1, a02 = c2, a10 = c0, a11 = c1, a12 = c2;
        __m512i a20 = c0, a21 = c1, a22 = c2, a30 = c0, a31 = c1, a32 = c2;
        for (int64_t k = 0; k < ICq; k++) {
            const __m512i w0 = _mm512_load_si512((const void *)(wv + k)),
                          w1 = _mm512_load_si512((const void *)(wv + ICq + k)),
                          w2 = _mm512_load_si512((const void *)(wv + 2 * ICq + k));
            __m512i b = q1_x4x2(xp, xp + IC, k, flip);
            a00 = q1_dp(a00, b, w0), a01 = q1_dp(a01, b, w1), a02 = q1_dp(a02, b, w2);
            b = q1_x4x2(xp + 2 * IC, xp + 3 * IC, k, flip);
            a10 = q1_dp(a10, b, w0), a11 = q1_dp(a11, b, w1), a12 = q1_dp(a12, b, w2);
            b = q1_x4x2(xp + 4 * IC, xp + 5 * IC, k, flip);
            a20 = q1_dp(a20, b, w0), a21 = q1_dp(a21, b, w1), a22 = q1_dp(a22, b, w2);
            b = q1_x4x2(xp + 6 * IC, xp + 7 * IC, k, flip);
            a30 = q1_dp(a30, b, w0), a31 = q1_dp(a31, b, w1), a32 = q1_dp(a32, b, w2);
        }
        q1_st24(c, y + p * 24, a00, a01, a02, AK, A2, SAT, 48);
        q1_st24(c, y + (p + 2) * 24, a10, a11, a12, AK, A2, SAT, 48);
        q1_st24(c, y + (p + 4) * 24, a20, a21, a22, AK, A2, SAT, 48);
        q1_st24(c, y + (p + 6) * 24, a30, a31, a32, AK, A2, SAT, 48);
    }
    for (; p < p1; p += 2) { /* pairs; a last single pixel reads itself twice */
        const uint8_t *xa = x + p * IC, *xb = p + 1 < p1 ? xa + IC : xa;
        __m512i a0 = c0, a1 = c1, a2 = c2;
        for (int64_t k = 0; k < ICq; k++) {
            const __m512i b = q1_x4x2(xa, xb, k, flip);
            a0 = q1_dp(a0, b, _mm512_load_si512((const void *)(wv + k)));
            a1 = q1_dp(a1, b, _mm512_load_si512((const void *)(wv + ICq + k)));
            a2 = q1_dp(a2, b, _mm512_load_si512((const void *)(wv + 2 * ICq + k)));
        }
        q1_st24(c, y + p * 24, a0, a1, a2, AK, A2, SAT, p + 1 < p1 ? 48 : 24);
    }
}

/* The last 8 channels (from m = OC - 8 = 16 v) of OC 16 k + 8 (q1_c.tail8:
 * lanes 8-15 of vector v repeat lanes 0-7, q1x1_prepare) as pixel pairs, as
 * q1_rows8: lanes 0-7 pixel p, 8-15 pixel p + 1, 8 pixels a step in 4
 * chains. Each lane's sum and epilogue are those of the 16-lane vector
 * (clamped, then vpmovdb: exact for every SAT): the same bytes. Each pair's
 * 16 bytes go to its two rows. */
Q1_INLINE void q1_st8x2(const q1_c *c, uint8_t *ya, uint8_t *yb, __m512i a, int64_t m, int AK,
                        bool A2) {
    const __m128i b = _mm512_cvtepi32_epi8(q1_ep(c, a, m, AK, A2, false));
    _mm_storel_epi64((__m128i *)ya, b);
    if (yb) _mm_storeh_pd((double *)yb, _mm_castsi128_pd(b));
}

Q1_INLINE void q1_tail8(const q1_c *restrict c, const uint8_t *x, uint8_t *restrict y,
                        int64_t p0, int64_t p1, int AK, bool A2, int SAT) {
    const int64_t IC = c->IC, OC = c->OC, ICq = c->ICq, v = OC / 16, m = 16 * v;
    const uint32_t flip = SAT == 2 ? 0u : c->flip; /* as q1_tile's */
    const __m512i c0 = _mm512_loadu_si512((const void *)(c->comp + m));
    const __m512i *wv = c->wq + v * ICq;
    uint8_t *yo = y + m;
    int64_t p = p0;
    for (; p + 8 <= p1; p += 8) {
        const uint8_t *xp = x + p * IC;
        __m512i a0 = c0, a1 = c0, a2 = c0, a3 = c0;
        q1_acc8(xp, IC, ICq, wv, flip, &a0, &a1, &a2, &a3);
        uint8_t *yp = yo + p * OC;
        q1_st8x2(c, yp, yp + OC, a0, m, AK, A2);
        q1_st8x2(c, yp + 2 * OC, yp + 3 * OC, a1, m, AK, A2);
        q1_st8x2(c, yp + 4 * OC, yp + 5 * OC, a2, m, AK, A2);
        q1_st8x2(c, yp + 6 * OC, yp + 7 * OC, a3, m, AK, A2);
    }
    for (; p < p1; p += 2) { /* pairs; a last single pixel reads itself twice */
        const uint8_t *xa = x + p * IC, *xb = p + 1 < p1 ? xa + IC : xa;
        __m512i a = c0;
        for (int64_t k = 0; k < ICq; k++)
            a = q1_dp(a, q1_x4x2(xa, xb, k, flip), _mm512_load_si512((const void *)(wv + k)));
        q1_st8x2(c, yo + p * OC, p + 1 < p1 ? yo + (p + 1) * OC : NULL, a, m, AK, A2);
    }
}

/* Pixels p0..p1 of the image rows, every output vector; the tile shapes
 * as constants. */
Q1_INLINE void q1_rows_t(const q1_c *restrict c, const uint8_t *x, uint8_t *restrict y,
                         int64_t p0, int64_t p1, int AK, bool A2, int SAT) {
    const int64_t IC = c->IC, OC = c->OC, OCv = c->tail8 ? OC / 16 : (OC + 15) / 16;
    if (c->pairs24) {
        q1_rows24(c, x, y, p0, p1, AK, A2, SAT);
        return;
    }
    if (OC == 8) {
        q1_rows8(c, x, y, p0, p1, AK, A2, SAT);
        return;
    }
    int64_t p = p0;
    for (; p + 4 <= p1; p += 4) {
        int64_t v = 0;
        for (; v + 4 <= OCv; v += 4) q1_tile(c, x + p * IC, y + p * OC, v, 4, 4, AK, A2, SAT);
        switch (OCv - v) {
        case 3: q1_tile(c, x + p * IC, y + p * OC, v, 4, 3, AK, A2, SAT); break;
        case 2: q1_tile(c, x + p * IC, y + p * OC, v, 4, 2, AK, A2, SAT); break;
        case 1: q1_tile(c, x + p * IC, y + p * OC, v, 4, 1, AK, A2, SAT); break;
        default: break;
        }
    }
    for (; p < p1; p++) {
        int64_t v = 0;
        for (; v + 4 <= OCv; v += 4) q1_tile(c, x + p * IC, y + p * OC, v, 1, 4, AK, A2, SAT);
        for (; v < OCv; v++) q1_tile(c, x + p * IC, y + p * OC, v, 1, 1, AK, A2, SAT);
    }
    if (c->tail8) q1_tail8(c, x, y, p0, p1, AK, A2, SAT);
}

/* One function per (act, act2, clamp-free) variant: q1_rows_t inlined into
 * one function 16 times made a frame that overflowed the stack in the
 * -O0 sanitizer build. restrict: the byte stores do not alias the constants
 * (without it they were reloaded after every store: cls 8->24 3.6 -> 4.6 us;
 * passed by value instead, 32->200 ran 6.0 -> 8.0 us). */
typedef void (*q1_rows_fn)(const q1_c *c, const uint8_t *x, uint8_t *y, int64_t p0, int64_t p1);
#define Q1_VAR(NAME, AK, A2, SAT)                                                                  \
    static Q1_VNNI __attribute__((noinline)) void NAME(                                         \
        const q1_c *restrict c, const uint8_t *x, uint8_t *restrict y, int64_t p0, int64_t p1) {  \
        q1_rows_t(c, x, y, p0, p1, AK, A2, SAT);                                                   \
    }
#define Q1_VARS(SAT, S)                                                                            \
    Q1_VAR(q1_none_##S, PR_ACT_NONE, false, SAT)                                                   \
    Q1_VAR(q1_none_a2_##S, PR_ACT_NONE, true, SAT)                                                 \
    Q1_VAR(q1_relu_##S, PR_ACT_RELU, false, SAT)                                                   \
    Q1_VAR(q1_relu_a2_##S, PR_ACT_RELU, true, SAT)                                                 \
    Q1_VAR(q1_clip_##S, PR_ACT_CLIP, false, SAT)                                                   \
    Q1_VAR(q1_clip_a2_##S, PR_ACT_CLIP, true, SAT)                                                 \
    Q1_VAR(q1_hsw_##S, PR_ACT_HARD_SWISH, false, SAT)                                              \
    Q1_VAR(q1_hsw_a2_##S, PR_ACT_HARD_SWISH, true, SAT)                                            \
    Q1_VAR(q1_sw_##S, PR_ACT_SWISH, false, SAT)                                                    \
    Q1_VAR(q1_sw_a2_##S, PR_ACT_SWISH, true, SAT)                                                 \
    Q1_VAR(q1_cliphi_##S, PR_ACT_CLIP_HI, false, SAT)
Q1_VARS(0, c)
Q1_VARS(1, s)
Q1_VARS(2, p)
#undef Q1_VARS
#undef Q1_VAR

/* [clamp-free: no, 4-vector blocks, every store (qfc_state.satpk)][act: none,
 * Relu, Clip, HardSwish, Swish, Clip's min only (pr_qfc_act_sat: never with
 * act2)][act2 Affine] */
static const q1_rows_fn q1_fns[3][6][2] = {
    {{q1_none_c, q1_none_a2_c}, {q1_relu_c, q1_relu_a2_c}, {q1_clip_c, q1_clip_a2_c},
     {q1_hsw_c, q1_hsw_a2_c}, {q1_sw_c, q1_sw_a2_c}, {q1_cliphi_c, q1_cliphi_c}},
    {{q1_none_s, q1_none_a2_s}, {q1_relu_s, q1_relu_a2_s}, {q1_clip_s, q1_clip_a2_s},
     {q1_hsw_s, q1_hsw_a2_s}, {q1_sw_s, q1_sw_a2_s}, {q1_cliphi_s, q1_cliphi_s}},
    {{q1_none_p, q1_none_a2_p}, {q1_relu_p, q1_relu_a2_p}, {q1_clip_p, q1_clip_a2_p},
     {q1_hsw_p, q1_hsw_a2_p}, {q1_sw_p, q1_sw_a2_p}, {q1_cliphi_p, q1_cliphi_p}},
};

Q1_VNNI void pr_q1_flip(const uint8_t *x, uint8_t *t, int64_t n) {
    const __m512i f = _mm512_set1_epi8((char)0x80);
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        _mm512_storeu_si512((void *)(t + i),
                            _mm512_xor_si512(_mm512_loadu_si512((const void *)(x + i)), f));
    if (i < n) {
        const __mmask64 m = ((__mmask64)1 << (n - i)) - 1;
        _mm512_mask_storeu_epi8(t + i, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, x + i), f));
    }
}

static Q1_VNNI void q1_rows(const qfc_state *s, const uint8_t *x, uint8_t *y, int64_t p0,
                            int64_t p1) {
    const int8_t *g = s->g24; /* qfc_state.g24: [3][ICq][16][4] bytes, comp, sc, bi [48] */
    const int32_t *gc = g ? (const int32_t *)(g + 3 * s->ICq * 64) : NULL;
    const float *gs = g ? (const float *)(gc + 48) : NULL;
    const q1_c c = {g ? gs : s->sc, g ? gs + 48 : s->bi, g ? gc : s->comp,
                    (const __m512i *)(g ? g : s->wq), s->IC, s->OC, s->ICq,
                    s->xdt == PRECIS_INT8 ? 0x80808080u : 0u, s->ydt == PRECIS_UINT8,
                    PV_C(s->act.alpha), PV_C(s->act.beta), PV_C(s->act2.alpha),
                    PV_C(s->act2.beta), PV_C(s->inv), PV_C(s->lo), PV_C(s->hi), g != NULL,
                    s->t8};
    const int ak = s->ak == PR_ACT_RELU         ? 1
                   : s->ak == PR_ACT_CLIP       ? 2
                   : s->ak == PR_ACT_HARD_SWISH ? 3
                   : s->ak == PR_ACT_SWISH      ? 4
                   : s->ak == PR_ACT_CLIP_HI    ? 5
                                                : 0;
    q1_fns[s->sat ? 1 + s->satpk : 0][ak][s->act2.kind == PR_ACT_AFFINE](&c, x, y, p0, p1);
}

/* q1_rows with the residual (qfc_state.zdt: OC 8, no act). */
static Q1_VNNI void q1_rows_z(const qfc_state *s, const uint8_t *x, uint8_t *y, const uint8_t *z,
                              int64_t p0, int64_t p1) {
    const q1_c c = {s->sc, s->bi, s->comp, (const __m512i *)s->wq, s->IC, s->OC, s->ICq,
                    s->xdt == PRECIS_INT8 ? 0x80808080u : 0u, s->ydt == PRECIS_UINT8,
                    PV_C(s->act.alpha), PV_C(s->act.beta), PV_C(s->act2.alpha),
                    PV_C(s->act2.beta), PV_C(s->inv), PV_C(s->lo), PV_C(s->hi), false, false};
    q1_rows8z(&c, x, y, z, s->zdt == PRECIS_INT8, s->zsf, p0, p1);
}
#endif

static precis_status q1x1_run(void *state, pr_kernel *k, pr_cpu_exec *xc) {
    const qfc_state *s = state;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    if (X->dtype != s->xdt || Y->dtype != s->ydt)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "prepared for %s -> %s, got %s -> %s",
                          pr_dtype_name(s->xdt), pr_dtype_name(s->ydt), pr_dtype_name(X->dtype),
                          pr_dtype_name(Y->dtype));
    if (X->rank != 4 || X->dims[1] != s->IC)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must be [N, %lld, H, W]", (long long)s->IC);
    if (Y->rank != 4 || Y->dims[0] != X->dims[0] || Y->dims[1] != s->OC ||
        Y->dims[2] != X->dims[2] || Y->dims[3] != X->dims[3])
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "output must be [%lld, %lld, %lld, %lld]",
                          (long long)X->dims[0], (long long)s->OC, (long long)X->dims[2],
                          (long long)X->dims[3]);
    if (s->big && X->dims[2] * X->dims[3] > Q1X1_MAX_PIX)
        return pr_cpu_impl_dnnl_qconv.run(s->big, k, xc);
    return pr_q1x1_rows_run(s, k, xc);
}

precis_status pr_q1x1_rows_run(const qfc_state *s, pr_kernel *k, pr_cpu_exec *xc) {
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
#ifdef PR_CPU_X86
    const int64_t P = X->dims[0] * X->dims[2] * X->dims[3];
    int nt = xc && xc->num_threads > 0 ? xc->num_threads : 1;
    if (P * s->OC < PR_CPU_PAR_MIN) nt = 1;
    const int64_t chunk = 48, tasks = (P + chunk - 1) / chunk;
    if (tasks < nt) nt = (int)tasks;
    if (s->zdt != PRECIS_UNDEFINED) { /* the residual (q1x1_z_ok) */
        const pr_buf *Z = pr_kin(k, 4);
        if (!Z || Z->dtype != s->zdt || Z->numel != Y->numel)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual does not match the output");
        if (nt < 2) {
            q1_rows_z(s, X->data, Y->data, Z->data, 0, P);
            return PRECIS_OK;
        }
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t t = 0; t < tasks; t++)
            q1_rows_z(s, X->data, Y->data, Z->data, t * chunk, P - t * chunk < chunk ? P : (t + 1) * chunk);
        return PRECIS_OK;
    }
    /* satpk with an int8 src: each chunk's pixels biased by 128 into this
     * thread's scratch first (q1_tile's SAT 2 takes them as they are;
     * CenterFace b1 t1 16->96 at 160x160 302 -> ~245 us) */
    const bool fl = s->sat && s->satpk && s->xdt == PRECIS_INT8;
    const size_t tb = (size_t)(chunk * s->IC) + 64;
    uint8_t *scr = fl ? pr_cpu_scratch(xc, tb * (size_t)(nt > 1 ? nt : 1)) : NULL;
    if (fl && !scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const uint8_t *xd = X->data;
    uint8_t *yd = Y->data;
    if (nt < 2 && !fl) { /* no region: even a serial one costs ~0.3 us (NOTES.md) */
        q1_rows(s, xd, yd, 0, P);
        return PRECIS_OK;
    }
    if (nt < 2) {
        for (int64_t p0 = 0; p0 < P; p0 += chunk) {
            const int64_t n = P - p0 < chunk ? P - p0 : chunk;
            pr_q1_flip(xd + p0 * s->IC, scr, n * s->IC);
            q1_rows(s, scr, yd + p0 * s->OC, 0, n);
        }
        return PRECIS_OK;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t t = 0; t < tasks; t++) {
        const int64_t p0 = t * chunk, p1 = P - p0 < chunk ? P : p0 + chunk;
        if (fl) {
            uint8_t *b = scr + tb * (size_t)omp_get_thread_num();
            pr_q1_flip(xd + p0 * s->IC, b, (p1 - p0) * s->IC);
            q1_rows(s, b, yd + p0 * s->OC, 0, p1 - p0);
        } else {
            q1_rows(s, xd, yd, p0, p1);
        }
    }
    return PRECIS_OK;
#else
    return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "q1x1 needs x86 AVX512-VNNI");
#endif
}

static const char *q1x1_describe(void *state) {
    const qfc_state *s = state;
    return s && s->big ? "q1x1.avx512_vnni (dnnl.qconv over 4096 px)" : "q1x1.avx512_vnni";
}

const pr_cpu_impl pr_cpu_impl_q1x1 = {
    .name = "q1x1",
    .supports = q1x1_supports,
    .nhwc_ok = q1x1_nhwc_ok,
    .prepare = q1x1_prepare,
    .run = q1x1_run,
    .describe = q1x1_describe,
    .destroy = pr_qfc_destroy,
};

/* INT8 1x1 convolution of 1x1 images (kernels.h pr_cpu_impl_qfc): QConv
 * whose input is [N, IC, 1, 1], as the squeeze-excitation blocks of the
 * mobile nets have after their GlobalAveragePool (PP-OCR cls: 18 of its 53
 * convs, 8->2 .. 200->50). oneDNN spends 5-9 us on one of these at batch 8
 * (primitive execution and its brgemm driver for a handful of outputs);
 * here it is a small matrix-vector product per image:
 *
 *   acc[m] = sum_c x[c] * w[m, c]          (exact: integers below 2^24)
 *   R = act2(act(x_scale * w_scale[m] * acc[m] + B[m]))
 *   Y = R (float32) or saturate(round_half_even(R * (1 / y_scale)))
 *
 * as ref_QConv (which sums dequantized floats: int8/uint8 outputs may differ
 * by one unit near halves). The epilogue does what dnnl.qconv's oneDNN
 * post-ops do, in their order: (acc + B / s) * s with s the output scale
 * (times 1 / y_scale when the acts are positively homogeneous: folded),
 * Linear / HardSigmoid as a fused multiply-add, 1 / y_scale last otherwise;
 * so the outputs are dnnl.qconv's bit for bit where the acts are exact
 * (measured on PP-OCRv4 rec: its CER had moved by a character without).
 * No residual, group 1, IC up to 512 (the float sums stay exact); an image
 * of 1x1 pixel is the same bytes in plain and NHWC layouts. Weights are
 * kept as floats, [IC][OCp] with OCp OC rounded up to 64 (zeros), so that
 * four vectors of outputs accumulate in registers; AVX-512 when allowed,
 * portable C otherwise. q1x1 (k_q1x1.c), the same conv on larger NHWC
 * images, shares the state and the checks (k_qfc.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/k_qfc.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

#define QFC_MAX_IC 512 /* 512 * 255 * 128 < 2^24 */


static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }

static bool is_init(const pr_tensor *t, pr_dtype dt) {
    return t && (t->flags & PR_T_INIT) && t->data && t->dtype == dt;
}

pr_dtype pr_qfc_y_dtype(const pr_node *n) {
    int64_t yt = pr_attr_int(n, "y_type", PRECIS_FLOAT32);
    return yt == PRECIS_INT8 || yt == PRECIS_UINT8 || yt == PRECIS_FLOAT32 ? (pr_dtype)yt
                                                                           : PRECIS_UNDEFINED;
}

static bool homogeneous(const pr_act *a) {
    return a->kind == PR_ACT_NONE || a->kind == PR_ACT_RELU || a->kind == PR_ACT_LEAKY_RELU ||
           a->kind == PR_ACT_CLIP || a->kind == PR_ACT_AFFINE;
}

int pr_qfc_act_sat(const qfc_state *q) {
    const char *env = getenv("PRECIS_QACT_SAT");
    if ((env && !strcmp(env, "0")) || !q->folded || q->ydt == PRECIS_FLOAT32 ||
        q->act2.kind != PR_ACT_NONE)
        return q->act.kind;
    if (q->act.kind == PR_ACT_RELU) return q->lo >= 0.0f ? PR_ACT_NONE : PR_ACT_RELU;
    if (q->act.kind != PR_ACT_CLIP) return q->act.kind;
    const bool dlo = nearbyintf(q->act.alpha) <= q->lo, dhi = nearbyintf(q->act.beta) >= q->hi;
    return dlo && dhi                      ? PR_ACT_NONE
           : dlo                           ? PR_ACT_CLIP_HI
           : dhi && q->act.alpha == 0.0f ? PR_ACT_RELU
                                           : PR_ACT_CLIP;
}

/* act with its offsets times f (folded: positively homogeneous kinds) */
static pr_act act_scaled(pr_act a, float f) {
    if (a.kind == PR_ACT_CLIP) {
        a.alpha *= f;
        a.beta *= f;
    } else if (a.kind == PR_ACT_AFFINE) {
        a.beta *= f;
    }
    return a;
}

/* One act as oneDNN's eltwise post-ops compute it (Linear: one fused
 * multiply-add). */
PR_INLINE float qfc_act1(const pr_act *a, float x) {
    if (a->kind == PR_ACT_AFFINE) return fmaf(x, a->alpha, a->beta);
    if (a->kind == PR_ACT_HARD_SIGMOID) {
        float v = fmaf(x, a->alpha, a->beta);
        return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
    return pr_act_apply(a, x);
}

static bool act_layout(const pr_tensor *t) {
    return t->layout == PR_LAYOUT_PLAIN || t->layout == PR_LAYOUT_NHWC;
}

/* (k_qfc.h) The checks qfc and q1x1 share: a 1x1 QConv, group 1, no residual, no
 * pads, finite scales and bias, IC up to QFC_MAX_IC. */
bool pr_qfc_common(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_QConv || n->n_inputs < 3 || n->n_inputs > 5) return false;
    if (n->n_inputs == 5 && n->inputs[4] >= 0) return false; /* pr_qfc_common_z's */
    return pr_qfc_common_z(g, n);
}

/* (k_qfc.h) pr_qfc_common with a residual (input 4) allowed. */
bool pr_qfc_common_z(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_QConv || n->n_inputs < 3 || n->n_inputs > 5) return false;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2),
                    *B = pr_node_tin(g, n, 3), *Y = pr_node_tout(g, n, 0);
    if (!X || !W || !S || !Y || !q8(X->dtype) || X->rank != 4 || !act_layout(X) || !act_layout(Y))
        return false;
    pr_dtype ydt = pr_qfc_y_dtype(n);
    if (ydt == PRECIS_UNDEFINED || (Y->dtype != PRECIS_UNDEFINED && Y->dtype != ydt)) return false;
    if (!is_init(W, PRECIS_INT8) || W->rank != 4 || W->dims[2] != 1 || W->dims[3] != 1)
        return false;
    int64_t OC = W->dims[0], IC = W->dims[1];
    if (OC < 1 || IC < 1 || IC > QFC_MAX_IC || pr_attr_int(n, "group", 1) != 1) return false;
    if (pr_dim_known(X->dims[1]) && X->dims[1] != IC) return false;
    if (!is_init(S, PRECIS_FLOAT32) || S->rank != 1 || S->dims[0] != OC) return false;
    if (B && (!is_init(B, PRECIS_FLOAT32) || B->rank != 1 || B->dims[0] != OC)) return false;
    float xs = pr_attr_float(n, "x_scale", 0.0f);
    if (!(xs > 0.0f) || !isfinite(xs)) return false;
    const float *ws = S->data, *bv = B ? B->data : NULL;
    for (int64_t m = 0; m < OC; m++)
        if (!isfinite(ws[m]) || !isfinite(xs * ws[m]) || (bv && !isfinite(bv[m]))) return false;
    if (ydt != PRECIS_FLOAT32) {
        float ys = pr_attr_float(n, "y_scale", 0.0f);
        if (!(ys > 0.0f) || !isfinite(ys) || !isfinite(1.0f / ys)) return false;
    }
    pr_act a;
    if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a)) return false;
    const int64_t *v;
    int nv = pr_attr_ints(n, "kernel_shape", &v);
    if (nv >= 0 && (nv != 2 || v[0] != 1 || v[1] != 1)) return false;
    if ((nv = pr_attr_ints(n, "pads", &v)) >= 0)
        for (int i = 0; i < nv; i++)
            if (v[i] != 0) return false;
    return true;
}

static bool qfc_supports(const pr_graph *g, const pr_node *n) {
    const char *env = getenv("PRECIS_QFC"); /* 0: leave them to dnnl.qconv (A/B timing) */
    if ((env && env[0] == '0') || !pr_qfc_common(g, n)) return false;
    /* known 1x1 images only: a 1x1 kernel on them gives one pixel for any
     * stride, dilation and auto_pad (explicit pads: qfc_common declines) */
    const pr_tensor *X = pr_node_tin(g, n, 0);
    return X->dims[2] == 1 && X->dims[3] == 1;
}

static bool qfc_nhwc_ok(const pr_graph *g, const pr_node *n) { return true; }

precis_status pr_cpu_q_check_io(const qfc_state *q, pr_kernel *k, int64_t IC, int64_t OC,
                                int64_t KH, int64_t KW, pr_conv_geom *geo) {
    const pr_buf *X = k->in[0], *Y = k->out[0];
    if (X->dtype != q->xdt || Y->dtype != q->ydt)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "prepared for %s -> %s, got %s -> %s",
                          pr_dtype_name(q->xdt), pr_dtype_name(q->ydt), pr_dtype_name(X->dtype),
                          pr_dtype_name(Y->dtype));
    if (X->rank != 4 || X->dims[1] != IC)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must be [N, %lld, H, W]", (long long)IC);
    int64_t in_sp[2] = {X->dims[2], X->dims[3]}, wk[2] = {KH, KW};
    precis_status st = pr_conv_geom_init(k->node, PR_CONV_KIND_CONV, 2, in_sp, wk, k->err, geo);
    if (st) return st;
    if (!geo->pads_known || geo->pad_b[0] < 0 || geo->pad_b[1] < 0)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "padding not known or negative");
    if (Y->rank != 4 || Y->dims[0] != X->dims[0] || Y->dims[1] != OC ||
        Y->dims[2] != geo->out[0] || Y->dims[3] != geo->out[1])
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "output is not [%lld,%lld,%lld,%lld]",
                          (long long)X->dims[0], (long long)OC, (long long)geo->out[0],
                          (long long)geo->out[1]);
    return PRECIS_OK;
}

void pr_qfc_destroy(void *state) {
    qfc_state *s = state;
    if (!s) return;
    free(s->wt);
    free(s->sc);
    free(s->bi);
    free(s->wq);
    free(s->comp);
    free(s->g24);
    if (s->big) pr_cpu_impl_dnnl_qconv.destroy(s->big);
    free(s);
}

/* (k_qfc.h) The state both impls use (the q1x1 weights come after). */
precis_status pr_qfc_state_new(const pr_graph *g, const pr_node *n, qfc_state **state,
                               pr_err *e) {
    *state = NULL;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2),
                    *B = pr_node_tin(g, n, 3);
    qfc_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->xdt = X->dtype;
    s->ydt = pr_qfc_y_dtype(n);
    s->OC = W->dims[0];
    s->IC = W->dims[1];
    s->OCp = (s->OC + 63) / 64 * 64;
    pr_act_from_node(n, "act", &s->act);
    pr_act_from_node(n, "act2", &s->act2);
    s->inv = s->ydt == PRECIS_FLOAT32 ? 1.0f : 1.0f / pr_attr_float(n, "y_scale", 1.0f);
    s->folded = s->ydt != PRECIS_FLOAT32 && homogeneous(&s->act) && homogeneous(&s->act2);
    float fold = s->folded ? s->inv : 1.0f;
    s->act = act_scaled(s->act, fold);
    s->act2 = act_scaled(s->act2, fold);
    s->lo = s->ydt == PRECIS_UINT8 ? 0.0f : -128.0f;
    s->hi = s->ydt == PRECIS_UINT8 ? 255.0f : 127.0f;
    s->ak = pr_qfc_act_sat(s);
    size_t nw = (size_t)(s->IC * s->OCp) * sizeof(float), nv = (size_t)s->OCp * sizeof(float);
    s->wt = aligned_alloc(64, nw);
    s->sc = aligned_alloc(64, nv);
    s->bi = aligned_alloc(64, nv);
    if (!s->wt || !s->sc || !s->bi) {
        pr_qfc_destroy(s);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    memset(s->wt, 0, nw);
    memset(s->bi, 0, nv);
    float xs = pr_attr_float(n, "x_scale", 1.0f);
    const float *ws = S->data, *bv = B ? B->data : NULL;
    const int8_t *w = W->data;
    for (int64_t m = 0; m < s->OCp; m++) {
        bool real = m < s->OC, zero = real && ws[m] == 0.0f; /* real weights 0: scale 1 */
        float cs = !real || zero ? 1.0f : xs * ws[m];
        s->sc[m] = cs * fold;
        if (real && bv) s->bi[m] = bv[m] / cs;
        if (real && !zero)
            for (int64_t c = 0; c < s->IC; c++) s->wt[c * s->OCp + m] = (float)w[m * s->IC + c];
    }
    *state = s;
    return PRECIS_OK;
}

static precis_status qfc_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                 void **state, pr_err *e) {
    (void)cfg;
    *state = NULL;
    if (!qfc_supports(g, n))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by qfc", n->name,
                       n->op_type);
    return pr_qfc_state_new(g, n, (qfc_state **)state, e);
}

PR_INLINE float qfc_x(const void *x, int64_t i, pr_dtype dt) {
    return ps_q8_load(x, i, dt == PRECIS_UINT8);
}

static void qfc_image_scalar(const qfc_state *s, const void *x, int64_t n, void *y) {
    for (int64_t m = 0; m < s->OC; m++) {
        float acc = 0.0f;
        for (int64_t c = 0; c < s->IC; c++)
            acc += qfc_x(x, n * s->IC + c, s->xdt) * s->wt[c * s->OCp + m];
        float r = qfc_act1(&s->act2, qfc_act1(&s->act, (acc + s->bi[m]) * s->sc[m]));
        int64_t i = n * s->OC + m;
        if (!s->folded) r *= s->inv;
        if (s->ydt == PRECIS_FLOAT32)
            ((float *)y)[i] = r;
        else if (s->ydt == PRECIS_UINT8)
            ((uint8_t *)y)[i] = (uint8_t)ps_q8_round(r, s->lo, s->hi);
        else
            ((int8_t *)y)[i] = (int8_t)ps_q8_round(r, s->lo, s->hi);
    }
}

#ifdef PR_CPU_X86
PR_VINLINE __m512 qfc_act16(const pr_act *a, __m512 x) {
    if (a->kind == PR_ACT_AFFINE) return _mm512_fmadd_ps(x, PV_C(a->alpha), PV_C(a->beta));
    if (a->kind == PR_ACT_HARD_SIGMOID)
        return _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(x, PV_C(a->alpha), PV_C(a->beta)),
                                           _mm512_setzero_ps()),
                             PV_C(1.0f));
    return a->kind == PR_ACT_NONE ? x : pv_act(a, x);
}

/* 16 outputs from m: the epilogue and the (masked) store. */
PR_VINLINE void qfc_out(const qfc_state *s, __m512 acc, int64_t m, int64_t n, void *y) {
    __m512 r = _mm512_mul_ps(_mm512_add_ps(acc, _mm512_load_ps(s->bi + m)),
                             _mm512_load_ps(s->sc + m));
    r = qfc_act16(&s->act2, qfc_act16(&s->act, r));
    int64_t left = s->OC - m;
    if (left <= 0) return;
    __mmask16 k = left >= 16 ? (__mmask16)0xffff : pv_tail(left);
    int64_t i = n * s->OC + m;
    if (s->ydt == PRECIS_FLOAT32) {
        _mm512_mask_storeu_ps((float *)y + i, k, r);
        return;
    }
    if (!s->folded) r = _mm512_mul_ps(r, PV_C(s->inv));
    __m512i q = pv_q8_round(r, PV_C(s->lo), PV_C(s->hi));
    pv_q8_store_m(y, i, q, k);
}

static PR_AVX512 void qfc_image_512(const qfc_state *s, const void *x, int64_t n, void *y) {
    const int64_t IC = s->IC, OCp = s->OCp;
    bool u8 = s->xdt == PRECIS_UINT8;
    for (int64_t m = 0; m < s->OC; m += 64) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        const float *w = s->wt + m;
        for (int64_t c = 0; c < IC; c++, w += OCp) {
            __m512 xb = _mm512_set1_ps(ps_q8_load(x, n * IC + c, u8));
            a0 = _mm512_fmadd_ps(xb, _mm512_load_ps(w), a0);
            a1 = _mm512_fmadd_ps(xb, _mm512_load_ps(w + 16), a1);
            a2 = _mm512_fmadd_ps(xb, _mm512_load_ps(w + 32), a2);
            a3 = _mm512_fmadd_ps(xb, _mm512_load_ps(w + 48), a3);
        }
        qfc_out(s, a0, m, n, y);
        qfc_out(s, a1, m + 16, n, y);
        qfc_out(s, a2, m + 32, n, y);
        qfc_out(s, a3, m + 48, n, y);
    }
}

/* Four images n..n+3 at once: each weight vector loaded once for the four,
 * sixteen independent sums (one image's four chains wait on the FMA
 * latency: 200->50 at batch 8 took 5 us one image at a time). */
static PR_AVX512 void qfc_image4_512(const qfc_state *s, const void *x, int64_t n, void *y) {
    const int64_t IC = s->IC, OCp = s->OCp;
    bool u8 = s->xdt == PRECIS_UINT8;
    for (int64_t m = 0; m < s->OC; m += 64) {
#define QFC_Z(i) __m512 i##0 = _mm512_setzero_ps(), i##1 = i##0, i##2 = i##0, i##3 = i##0
        QFC_Z(a);
        QFC_Z(b);
        QFC_Z(c);
        QFC_Z(d);
#undef QFC_Z
        const float *w = s->wt + m;
        for (int64_t k = 0; k < IC; k++, w += OCp) {
            const __m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + 16);
            const __m512 w2 = _mm512_load_ps(w + 32), w3 = _mm512_load_ps(w + 48);
#define QFC_ACC(i, img)                                                                            \
    do {                                                                                           \
        __m512 xb = _mm512_set1_ps(ps_q8_load(x, (n + img) * IC + k, u8));                         \
        i##0 = _mm512_fmadd_ps(xb, w0, i##0);                                                      \
        i##1 = _mm512_fmadd_ps(xb, w1, i##1);                                                      \
        i##2 = _mm512_fmadd_ps(xb, w2, i##2);                                                      \
        i##3 = _mm512_fmadd_ps(xb, w3, i##3);                                                      \
    } while (0)
            QFC_ACC(a, 0);
            QFC_ACC(b, 1);
            QFC_ACC(c, 2);
            QFC_ACC(d, 3);
#undef QFC_ACC
        }
#define QFC_OUT(i, img)                                                                            \
    do {                                                                                           \
        qfc_out(s, i##0, m, n + img, y);                                                           \
        qfc_out(s, i##1, m + 16, n + img, y);                                                      \
        qfc_out(s, i##2, m + 32, n + img, y);                                                      \
        qfc_out(s, i##3, m + 48, n + img, y);                                                      \
    } while (0)
        QFC_OUT(a, 0);
        QFC_OUT(b, 1);
        QFC_OUT(c, 2);
        QFC_OUT(d, 3);
#undef QFC_OUT
    }
}
#endif

static precis_status qfc_run(void *state, pr_kernel *k, pr_cpu_exec *xc) {
    (void)xc;
    const qfc_state *s = state;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    if (X->dtype != s->xdt || Y->dtype != s->ydt)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "prepared for %s -> %s, got %s -> %s",
                          pr_dtype_name(s->xdt), pr_dtype_name(s->ydt), pr_dtype_name(X->dtype),
                          pr_dtype_name(Y->dtype));
    if (X->rank != 4 || X->dims[1] != s->IC || X->dims[2] != 1 || X->dims[3] != 1)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must be [N, %lld, 1, 1]", (long long)s->IC);
    int64_t N = X->dims[0];
    if (Y->rank != 4 || Y->dims[0] != N || Y->dims[1] != s->OC || Y->dims[2] != 1 ||
        Y->dims[3] != 1)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "output must be [%lld, %lld, 1, 1]", (long long)N,
                          (long long)s->OC);
#ifdef PR_CPU_X86
    if (pr_cpu_use_avx512()) {
        int64_t n = 0;
        for (; n + 4 <= N; n += 4) qfc_image4_512(s, X->data, n, Y->data);
        for (; n < N; n++) qfc_image_512(s, X->data, n, Y->data);
        return PRECIS_OK;
    }
#endif
    for (int64_t n = 0; n < N; n++) qfc_image_scalar(s, X->data, n, Y->data);
    return PRECIS_OK;
}

static const char *qfc_describe(void *state) {
    (void)state;
#ifdef PR_CPU_X86
    if (pr_cpu_use_avx512()) return "qfc.avx512";
#endif
    return "qfc.scalar";
}

const pr_cpu_impl pr_cpu_impl_qfc = {
    .name = "qfc",
    .supports = qfc_supports,
    .nhwc_ok = qfc_nhwc_ok,
    .prepare = qfc_prepare,
    .run = qfc_run,
    .describe = qfc_describe,
    .destroy = pr_qfc_destroy,
};

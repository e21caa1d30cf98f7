/* The depthwise INT8 convolution's build-time side (k_qdwconv.h): which
 * nodes it takes, the packed weights and starts, the small-image tables. The
 * kernels, their layouts and measurements: k_qdwconv.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/k_qdwconv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }

static bool is_init(const pr_tensor *t, pr_dtype dt) {
    return t && (t->flags & PR_T_INIT) && t->data && t->dtype == dt;
}

static pr_dtype y_dtype(const pr_node *n) {
    int64_t yt = pr_attr_int(n, "y_type", PRECIS_FLOAT32);
    return yt == PRECIS_INT8 || yt == PRECIS_UINT8 || yt == PRECIS_FLOAT32 ? (pr_dtype)yt
                                                                           : PRECIS_UNDEFINED;
}

/* PRECIS_QDWCONV=0 leaves depthwise QConv to dnnl.qconv (A/B timing). */
static bool have_vnni(void) {
#ifdef PR_CPU_X86
    return pr_cpu_use_vnni("PRECIS_QDWCONV");
#else
    return false;
#endif
}

/* PRECIS_QDW_IMG=0: no small-image path (qdw_img_tables; A/B timing). */
static bool qdw_img_off(void) {
    const char *env = getenv("PRECIS_QDW_IMG");
    return env && !strcmp(env, "0");
}

/* PRECIS_QDW_PAIRS=0: images of <= 2 rows on the quads (A/B timing, the
 * tests' other path). */
static bool qdw_pairs_off(void) {
    const char *env = getenv("PRECIS_QDW_PAIRS");
    return env && !strcmp(env, "0");
}

/* PRECIS_QDW_LIN=0: no linear last block (A/B timing). */
static bool lin_off(void) {
    const char *env = getenv("PRECIS_QDW_LIN");
    return env && !strcmp(env, "0");
}

/* 17..32 channels with an int8 src: all in the linear block (qdw_lin_ok's
 * conditions from the node), against oneDNN's jit_int8 (PP-OCR cls's 5x5
 * 32-channel layer, 1 thread, b1: 5.5 -> 4.1 us). uint8 src stays on
 * brdgmm_dw (24 and 32 channels: equal; 8: 4.4 vs 5.4 us linear, half of
 * the vector unused). Column stride 1 only: PP-OCRv4 det's 3x3 stride-2
 * 32-channel layer at 320x320 ran 161 -> 262 us linear (the build, twice
 * the columns, is most of a 3x3); rec's 3x3 stride 1 27.5 -> 26.6 us.
 * PRECIS_QDW_SMALL=0 leaves them to oneDNN. */
static bool small_ok(const pr_node *n, pr_dtype ydt) {
    const char *env = getenv("PRECIS_QDW_SMALL");
    if ((env && !strcmp(env, "0")) || lin_off() || ydt == PRECIS_FLOAT32) return false;
    pr_act a, a2;
    if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a2)) return false;
    return (a.kind == PR_ACT_NONE || a.kind == PR_ACT_RELU || a.kind == PR_ACT_CLIP ||
            a.kind == PR_ACT_HARD_SWISH) &&
           (a2.kind == PR_ACT_NONE || a2.kind == PR_ACT_AFFINE) &&
           pr_cpu_features_get()->avx512_vbmi;
}

/* uint8 src of 128..159 channels at stride 1x1: brdgmm_dw runs these at
 * ~1x FP32 (1 thread, b1: EfficientNet-Lite0's 144-channel 3x3 at 56x56
 * 94.5 -> 69.4 us here, CenterFace's at 80x80 184 -> 146; FP32 97 / 190);
 * at stride 2 it keeps them (144 channels: 51.7 -> 51.9, 51.1 -> 55.3).
 * PRECIS_QDW_U8MID=0 leaves them to oneDNN (A/B timing). */
static bool u8_mid_ok(const pr_node *n, int64_t C) {
    const char *env = getenv("PRECIS_QDW_U8MID");
    if ((env && !strcmp(env, "0")) || C < 128) return false;
    const int64_t *sv;
    int ns = pr_attr_ints(n, "strides", &sv);
    return ns < 2 || (sv[0] == 1 && sv[1] == 1);
}

/* qdw_state.sat (k_qdwconv.h): whether every value before the output
 * clamp is within +-2^30 (|sum| <= KH KW 255 128, the act keeps |F| or
 * less), then which epilogue. */
static int qdw_sat(const qdw_state *s) {
    const char *env = getenv("PRECIS_QACT_SAT");
    if ((env && !strcmp(env, "0")) || s->ydt == PRECIS_FLOAT32 || s->act2.kind != PR_ACT_NONE)
        return QDW_SAT_NONE;
    const double amax = (double)(s->KH * s->KW) * 255.0 * 128.0;
    bool bounded = true;
    for (int64_t v = 0; v < s->nblk * 64 && bounded; v++)
        bounded = (amax * fabs((double)s->sc[v]) + fabs((double)s->bias[v])) * (double)s->inv <
                  (double)(1 << 30);
    switch (s->act.kind) {
    case PR_ACT_CLIP: {
        const float lo = s->act.alpha * s->inv, hi = s->act.beta * s->inv; /* as the kernel */
        return nearbyintf(lo) <= s->lo && hi < 2147483520.0f ? QDW_SAT_CLIP : QDW_SAT_NONE;
    }
    case PR_ACT_RELU:
        if (s->lo >= 0.0f) return bounded ? QDW_SAT_FREE_NONE : QDW_SAT_RELU;
        return bounded ? QDW_SAT_FREE_RELU : QDW_SAT_NONE;
    case PR_ACT_HARD_SWISH: return bounded ? QDW_SAT_FREE_HSW : QDW_SAT_NONE;
    case PR_ACT_NONE: return bounded ? QDW_SAT_FREE_NONE : QDW_SAT_NONE;
    default: return QDW_SAT_NONE;
    }
}

bool pr_qdw_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_QConv || n->n_inputs < 3 || n->n_inputs > 4 || !have_vnni()) return false;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2),
                    *B = pr_node_tin(g, n, 3), *Y = pr_node_tout(g, n, 0);
    if (!X || !W || !S || !Y || !q8(X->dtype) || X->rank != 4 || X->layout != PR_LAYOUT_NHWC ||
        Y->layout != PR_LAYOUT_NHWC)
        return false;
    pr_dtype ydt = y_dtype(n);
    if (ydt == PRECIS_UNDEFINED || (Y->dtype != PRECIS_UNDEFINED && Y->dtype != ydt)) return false;
    if (!is_init(W, PRECIS_INT8) || W->rank != 4 || W->dims[1] != 1) return false;
    int64_t C = W->dims[0], G = pr_attr_int(n, "group", 1);
    if (G != C || C < 1 || (pr_dim_known(X->dims[1]) && X->dims[1] != C)) return false;
    /* Few channels waste lanes of the 64-channel blocks: there oneDNN is as
     * fast (uint8 src: brdgmm_dw, up to ~96 channels at 112x112..56x56 in
     * EfficientNet-Lite0 / CenterFace, stride 2 worst; 128+ at stride 1:
     * u8_mid_ok) or faster (int8 src,
     * jit_int8, below ~48 channels in PP-OCRv4 rec); measured per layer. */
    bool small = X->dtype == PRECIS_INT8 && C > 16 && C <= 32 && small_ok(n, ydt);
    if (small) { /* column stride 1 only: stride 2 builds twice the columns */
        const int64_t *sv;
        int ns = pr_attr_ints(n, "strides", &sv);
        small = ns < 2 || sv[1] == 1;
    }
    if (C < (X->dtype == PRECIS_UINT8 ? (u8_mid_ok(n, C) ? 128 : 160) : 40) && !small &&
        !pr_qdw_direct_ok(g, n))
        return false;
    if (W->dims[2] < 1 || W->dims[2] > QDW_MAXK || W->dims[3] < 1 || W->dims[3] > QDW_MAXK)
        return false;
    if (!is_init(S, PRECIS_FLOAT32) || S->rank != 1 || S->dims[0] != C) return false;
    if (B && (!is_init(B, PRECIS_FLOAT32) || B->rank != 1 || B->dims[0] != C)) return false;
    float xs = pr_attr_float(n, "x_scale", 0.0f);
    if (!(xs > 0.0f) || !isfinite(xs)) return false;
    for (int64_t c = 0; c < C; c++)
        if (!isfinite(((const float *)S->data)[c]) || !isfinite(xs * ((const float *)S->data)[c]))
            return false;
    if (ydt != PRECIS_FLOAT32) {
        float ys = pr_attr_float(n, "y_scale", 0.0f);
        if (!(ys > 0.0f) || !isfinite(1.0f / ys)) return false;
    }
    pr_act a;
    if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a)) return false;
    const int64_t *v;
    int nv = pr_attr_ints(n, "kernel_shape", &v);
    if (nv >= 0 && (nv != 2 || v[0] != W->dims[2] || v[1] != W->dims[3])) return false;
    if ((nv = pr_attr_ints(n, "strides", &v)) >= 0 && nv != 2) return false;
    if ((nv = pr_attr_ints(n, "dilations", &v)) >= 0 && nv != 2) return false;
    if ((nv = pr_attr_ints(n, "pads", &v)) >= 0 && nv != 4) return false;
    return true;
}


/* Whether the epilogue fuses (see qdw_ep). */
bool pr_qdw_fused(const qdw_state *s) {
    pr_act_kind a = s->act.kind, a2 = s->act2.kind;
    return s->ydt != PRECIS_FLOAT32 &&
           (a == PR_ACT_NONE || a == PR_ACT_RELU || a == PR_ACT_CLIP || a == PR_ACT_HARD_SWISH) &&
           (a2 == PR_ACT_NONE || a2 == PR_ACT_AFFINE);
}

/* A last block of 1..32 channels (fused epilogues only) runs "linear": one
 * vector per 16 channels, lane L = channel 16 g + L of the block, its 4
 * bytes the quad's kernel rows (built by a vpermb of four 16-byte row
 * loads), instead of the 4 interleaved vectors whose lanes beyond the
 * channels are wasted (200 channels: 3 blocks + 8 channels in a 4th). The
 * packed arrays keep their sizes: group g takes the slots of vector g.
 * A linear vector costs ~1.4 interleaved ones (its build: 4 loads, 3
 * inserts and a vpermb per 16 channels against 20 ops per 64), so 3 groups
 * lose to one block (PP-OCR cls, 1 thread, b1: 40/48 channels 4.45 -> 4.95
 * us, 104 channels 6.4 -> 6.8) and 1-2 groups win (88 channels 8.7 -> 7.7,
 * 200 channels 9.35 -> 8.3). */
static bool qdw_lin_ok(const qdw_state *s) {
    int64_t tc = s->C % 64;
    return tc > 0 && tc <= 32 && pr_qdw_fused(s) && pr_cpu_features_get()->avx512_vbmi;
}

void pr_qdw_destroy(void *state) {
    qdw_state *s = state;
    if (!s) return;
    free(s->wp);
    free(s->init);
    free(s->qcomp);
    free(s->sc);
    free(s->bias);
    pr_qdw_direct_free(s);
    for (int i = 0; i < 4; i++)
        for (int o = 0; o < 4; o++) {
            free(s->wimg[i][o]);
            free(s->iinit[i][o]);
        }
    free(s);
}

/* Small images (PP-OCR cls's last stages: 2-3 rows, 5x5 kernels): with
 * IH <= 4 every output row reads some of the same <= 4 image rows, so one
 * quad holding the image's rows 0..3 is interleaved once per image and
 * block (V) and every output row sums it against its own weights: kernel
 * row kh = t + pt - oh * sh at image row t (zero where out of the kernel or
 * t >= IH), start -128 * (the sum of those taps) for an int8 src (the
 * padding columns read biased zeros, as in the row path). Instead of one
 * build per output row and live quad. Explicit pads, no dilation; tables
 * for each IH whose OH is 1..4.
 *
 * IH <= 2 (img_pairs): a quad would hold 2 zero rows, half of every
 * vpdpbusd wasted; a lane's dword holds instead image rows 0, 1 of columns
 * p and p + 1, and an output pixel sums (KW + 1) / 2 such pairs, at columns
 * 2 j apart (a 5x5 kernel: 3 vpdpbusd a vector instead of 5). Byte
 * 2 (kw % 2) + t of pair kw / 2 holds kernel (kh, kw); the same taps, the
 * same start. */
static bool qdw_img_tables(qdw_state *s, const pr_node *n, const int8_t *w, const float *ws) {
    const int64_t *v;
    int nv = pr_attr_ints(n, "dilations", &v);
    for (int i = 0; i < nv; i++)
        if (v[i] != 1) return true;
    const char *ap = pr_attr_str(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0) return true;
    nv = pr_attr_ints(n, "pads", &v);
    const int64_t pt = nv == 4 ? v[0] : 0, pb = nv == 4 ? v[2] : 0;
    nv = pr_attr_ints(n, "strides", &v);
    const int64_t sh = nv == 2 ? v[0] : 1;
    const bool s8 = s->xdt == PRECIS_INT8;
    s->img_pt = pt;
    s->img_sh = sh;
    s->img_pairs = !qdw_pairs_off();
    const size_t nw = (size_t)(s->nblk * s->KW * 256), ni = (size_t)(s->nblk * 64);
    for (int64_t IH = 1; IH <= 4; IH++) {
        const int64_t span = IH + pt + pb - s->KH, OH = span < 0 ? 0 : span / sh + 1;
        if (OH < 1 || OH > 4) continue;
        const bool pairs = s->img_pairs && IH <= 2;
        const int64_t kwn = pairs ? (s->KW + 1) / 2 : s->KW;
        for (int64_t oh = 0; oh < OH; oh++) {
            int8_t *wi = s->wimg[IH - 1][oh] = aligned_alloc(64, nw);
            int32_t *ii = s->iinit[IH - 1][oh] = calloc(ni, sizeof(int32_t));
            if (!wi || !ii) return false;
            memset(wi, 0, nw);
            for (int64_t c = 0; c < s->C; c++) {
                const int64_t cb = c / 64, ci = c % 64, k = ci / 16, r = (ci % 16) / 4;
                const int64_t lane = k * 4 + ci % 4;
                int32_t sum = 0;
                for (int64_t kw = 0; kw < s->KW; kw++)
                    for (int64_t t = 0; t < IH; t++) {
                        const int64_t kh = t + pt - oh * sh;
                        if (kh < 0 || kh >= s->KH || ws[c] == 0.0f) continue;
                        const int8_t q = w[(c * s->KH + kh) * s->KW + kw];
                        const int64_t j = pairs ? kw / 2 : kw, b = pairs ? 2 * (kw % 2) + t : t;
                        wi[((cb * kwn + j) * 4 + r) * 64 + lane * 4 + b] = q;
                        sum += q;
                    }
                ii[cb * 64 + r * 16 + lane] = s8 ? -128 * sum : 0;
            }
        }
        s->img_oh[IH - 1] = OH;
    }
    return true;
}

precis_status pr_qdw_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                 void **state, pr_err *e) {
    *state = NULL;
    if (!pr_qdw_supports(g, n))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by qdwconv",
                       n->name, n->op_type);
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2),
                    *B = pr_node_tin(g, n, 3);
    qdw_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->xdt = X->dtype;
    s->ydt = y_dtype(n);
    s->C = W->dims[0];
    s->KH = W->dims[2];
    s->KW = W->dims[3];
    s->nqh = (s->KH + 3) / 4;
    s->nblk = (s->C + 63) / 64;
    pr_act_from_node(n, "act", &s->act);
    pr_act_from_node(n, "act2", &s->act2);
    s->lin = qdw_lin_ok(s) && !lin_off();
    s->ng = s->lin ? (s->C % 64 + 15) / 16 : 0;
    s->inv = s->ydt == PRECIS_FLOAT32 ? 1.0f : 1.0f / pr_attr_float(n, "y_scale", 1.0f);
    s->lo = s->ydt == PRECIS_UINT8 ? 0.0f : -128.0f;
    s->hi = s->ydt == PRECIS_UINT8 ? 255.0f : 127.0f;
    size_t nw = (size_t)(s->nblk * s->KW * s->nqh * 256), nv = (size_t)(s->nblk * 64);
    s->wp = aligned_alloc(64, nw); /* read as __m512i */
    if (s->wp) memset(s->wp, 0, nw);
    s->init = calloc(nv, sizeof(int32_t));
    s->qcomp = calloc(nv * (size_t)s->nqh, sizeof(int32_t));
    s->sc = calloc(nv, sizeof(float));
    s->bias = calloc(nv, sizeof(float));
    if (!s->wp || !s->init || !s->qcomp || !s->sc || !s->bias) {
        pr_qdw_destroy(s);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    float xs = pr_attr_float(n, "x_scale", 1.0f);
    const float *ws = S->data, *bv = B ? B->data : NULL;
    const int8_t *w = W->data;
    bool s8 = s->xdt == PRECIS_INT8;
    for (int64_t c = 0; c < s->C; c++) {
        int64_t cb = c / 64, ci = c % 64, k = ci / 16, r = (ci % 16) / 4, j = ci % 4;
        int64_t lane = k * 4 + j, v = cb * 64 + r * 16 + lane;
        if (s->lin && cb == s->nblk - 1) /* linear: vector k, lane ci % 16 */
            r = k, lane = ci % 16, v = cb * 64 + ci;
        bool zero = ws[c] == 0.0f; /* real weights 0: scale 1 keeps the bias exact */
        int32_t sum = 0;
        for (int64_t kw = 0; kw < s->KW; kw++)
            for (int64_t kh = 0; kh < s->KH; kh++) {
                int8_t q = zero ? 0 : w[(c * s->KH + kh) * s->KW + kw];
                sum += q;
                int64_t qh = kh / 4, t = kh % 4;
                s->wp[(((cb * s->KW + kw) * s->nqh + qh) * 4 + r) * 64 + lane * 4 + t] = q;
                if (s8) s->qcomp[(cb * s->nqh + qh) * 64 + r * 16 + lane] += 128 * q;
            }
        s->init[v] = s8 ? -128 * sum : 0;
        s->sc[v] = zero ? 1.0f : xs * ws[c];
        s->bias[v] = bv ? bv[c] : 0.0f;
    }
    s->sat = qdw_sat(s);
    if (pr_qdw_direct_ok(g, n) && pr_qdw_direct_prepare(s, g, n, cfg, w, ws, bv, xs)) {
        pr_qdw_destroy(s);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    if (!qdw_img_off() && !qdw_img_tables(s, n, w, ws)) {
        pr_qdw_destroy(s);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    *state = s;
    return PRECIS_OK;
}


/* pr_cpu_impl_qamx (kernels.h): the INT8 convolution on AMX tiles (TDPBSSD /
 * TDPBUSD), NHWC int8/uint8 in and out, group 1, any kernel / stride /
 * dilation / non-negative pads, as an implicit GEMM: rows = output pixels,
 * K = KH x KW x IC (tap-major, the channels of a tap contiguous as NHWC has
 * them), columns = output channels.
 *
 * Per block of 32 output pixels the rows are gathered ("packed") into a
 * scratch matrix of Kp bytes a row (K rounded up to 64; the padding's taps
 * as the real zero: byte 0, as X is int8 or uint8 with zero point 0), then
 * for every 32 output channels 2 x 2 tiles of 16 x 16 int32 sums run over
 * the 64-byte steps of K (A tiles 16 rows x 64 bytes, B tiles the weights
 * in AMX's VNNI layout: 16 rows of 4 K-consecutive bytes x 16 channels,
 * repacked at prepare). int8 src: TDPBSSD (signed x signed); uint8 src:
 * TDPBUSD. The sums are exact int32, so the epilogue is q1x1's (k_q1x1.h
 * q1_epv: (acc + B / s) * s, act, act2, 1 / y_scale, round, clamp) and the
 * outputs equal q1x1's / dnnl.qconv's for the same sums.
 *
 * The tile configuration is written by hand (palette 1: 16 rows x 64 bytes,
 * fixed by the architecture), as f16_gemm.c does, so this runs where the
 * CPU has AMX-INT8 whether or not cpuid describes the palettes (leaf 0x1D:
 * missing on the Firecracker VM of sessions 13-14, where oneDNN is capped at
 * VNNI). Linux hands out the tile state after ARCH_REQ_XCOMP_PERM.
 * PRECIS_QAMX=0 leaves these convs to the other impls (A/B timing). */
#define _GNU_SOURCE /* syscall() for arch_prctl (AMX permission) */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "backends/cpu/k_q1x1.h"
#include "backends/cpu/k_qfc.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"
#include "ir/infer_conv.h"

#define QA_MR 32 /* output pixels a block (2 A tiles) */
#define QA_NR 32 /* output channels a block (2 B tiles) */

typedef struct qamx_state {
    qfc_state *q; /* scales, biases, acts, output type (pr_qfc_state_new) */
    int64_t IC, OC, OCp, KH, KW, K, Kp;
    int8_t *wb; /* [OCp / 16][Kp / 64][16 rows][16 channels][4 bytes] */
    void *q1; /* q1x1's state where it may run this conv (qa_to_q1x1) */
    bool q1able; /* q1x1 takes this conv (up to Q1X1_MAX_PIX pixels) */
    pr_dtype zdt; /* the residual's type, PRECIS_UNDEFINED: none */
    float zs;     /* its scale */
    bool pk;      /* the epilogue stores through saturating packs (qa_pk_ok) */
    char desc[64];
} qamx_state;

static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }
static bool init_of(const pr_tensor *t, pr_dtype dt) {
    return t && (t->flags & PR_T_INIT) && t->data && t->dtype == dt;
}

static pthread_once_t qa_once = PTHREAD_ONCE_INIT;
static bool qa_perm;
static void qa_request(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    qa_perm = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
#endif
}

/* AMX-INT8 usable (and not switched off by PRECIS_QAMX=0)? */
bool pr_cpu_qamx_available(void) {
#ifdef PR_CPU_X86
    if (!pr_cpu_use_vnni("PRECIS_QAMX")) return false;
    const pr_cpu_features *f = pr_cpu_features_get();
    if (!f->amx_tile || !f->amx_int8) return false;
    pthread_once(&qa_once, qa_request);
    return qa_perm;
#else
    return false;
#endif
}

/* Where qamx takes a conv (YOLOv8n / PP-OCRv4 det b1 t1, per-step minima
 * over 5 interleaved rounds, us, the other impls -> qamx; NOTES.md, session
 * 14). The epilogue, the same operations as q1x1's and the late pass's
 * (Swish: one division a value), costs what it costs; the tiles pay where K
 * is long enough:
 *   KxK: IC >= 32 (3x3 32->32 at 40x40 68 -> 57, 64->64 at 20x20 59 -> 28,
 *     det's 96->24 at 96x192 2661 -> 1227); IC 16 loses (3x3 16->16 at 80x80
 *     99 -> 183, 3x3s2 16->32 191 -> 226).
 *   1x1 that q1x1 takes (images up to Q1X1_MAX_PIX): IC >= 192 with Swish
 *     (256->128 at 20x20 52 -> 37, 192->128 at 40x40 44 -> 39; 64..128 lose:
 *     64->64 at 40x40 46 -> 67, 96->64 56 -> 81, 128->128 33 -> 34), IC >= 64
 *     with the cheaper epilogues (rec's HardSwish 64->64 at 24x160 74 -> 60,
 *     128->128 120 -> 65; 16->32 / 32->64 lose 27 -> 31, 51 -> 59). Graphs of
 *     unknown dims: decided per run (qa_run: q1x1's state, prepared here).
 *   other 1x1 (dnnl.qconv's): IC a multiple of 4 under 64 or any IC from 64
 *     (det's 16->32 at 192x384 814 -> 503, 48->96 194 -> 101, 96->96 253 ->
 *     170), not with Swish under IC 128 (dnnl + the late pass: YOLOv8n's
 *     32->32 at 80x80 92 -> 141), nor IC not a multiple of 4 under 64 (det's
 *     18->96 69 -> 92, 12->96 209 -> 264, 42->96 26 -> 25), nor OC 16.
 * The other CNNs (same method, whole step sums, us, PRECIS_QAMX=0 -> on):
 * rec 3584 -> 2289, EfficientNet-Lite0 2290 -> 1951, CenterFace 15779 ->
 * 13860, cls 187 -> 187. */
static bool qa_all(void) {
    const char *all = getenv("PRECIS_QAMX_ALL"); /* every conv it can run (tests, A/B) */
    return all && !strcmp(all, "1");
}

/* HardSwish convs where qamx would replace dnnl.qconv: left to it unless
 * PRECIS_QAMX_HSW=1. oneDNN's post-op and q1_epv's round about one value in
 * 1e5 differently (test_cpu_qamx; neither formula matches every oneDNN
 * kernel), and PP-OCRv4 det / rec, whose backbones are HardSwish convs,
 * move a little with it (zoo, calibrator bests: rec cer 0.01493 -> 0.01431,
 * det mask IoU 0.9176 -> 0.9169): the default keeps their bytes. =1 is
 * faster (per-step sums, us, b1 t1: rec 3005 -> 2370, det 9651 -> 8402). */
static bool qa_hsw_off(void) {
    const char *e = getenv("PRECIS_QAMX_HSW");
    return !(e && !strcmp(e, "1"));
}

/* A 1x1 conv over pix pixels (-1: not known) that q1x1 takes (q1) is left
 * to q1x1 (and its dnnl.qconv state over Q1X1_MAX_PIX pixels)? */
static bool qa_to_q1x1(bool q1, int64_t pix, int64_t IC, pr_act_kind act) {
    if (!q1) return false;
    if (pix >= 0 && pix <= Q1X1_MAX_PIX) return IC < (act == PR_ACT_SWISH ? 192 : 64);
    if (act == PR_ACT_HARD_SWISH && qa_hsw_off()) return true;
    return act == PR_ACT_SWISH && IC < 128;
}

/* Large images (over Q1X1_MAX_PIX pixels) of a 1x1 expansion from under 32
 * channels to at least 6 times as many, no act or Relu / Clip (the same
 * bytes in both): q1x1's own rows rather than the tiles, whose int32 sums
 * make a round trip through tile stores that costs more than K = 16..24
 * of products (CenterFace at 320x320, b1 t1, per-step minima, us: 16->96
 * at 160x160 449 -> 417, 24->144 at 80x80 179 -> 167 and 176 -> 165; 24->24
 * lost 41 -> 53, 24->96 tied). PRECIS_QAMX_Q1BIG=0: the tiles (A/B). */
static bool qa_q1big(int64_t IC, int64_t OC, pr_act_kind act) {
    static int on = -1;
    return pr_cpu_switch_on("PRECIS_QAMX_Q1BIG", &on) && IC < 32 && OC >= 6 * IC &&
           (act == PR_ACT_NONE || act == PR_ACT_RELU || act == PR_ACT_CLIP);
}

static bool qa_shape_ok(const pr_graph *g, const pr_node *n, int64_t IC, int64_t OC, int64_t KH,
                        int64_t KW, pr_act_kind act) {
    if (qa_all()) return true;
    if (OC < 16) return false;
    if (act == PR_ACT_HARD_SWISH && qa_hsw_off() &&
        (KH * KW > 1 || !pr_cpu_impl_q1x1.supports(g, n)))
        return false;
    if (KH * KW > 1) return IC >= 32;
    if (OC <= 16) return false; /* half the tiles' columns idle: EfficientNet-Lite0's 32->16
                                 * at 112x112 35 -> 41, CenterFace's at 160x160 310 -> 375 */
    if (act == PR_ACT_SWISH && IC < 128 && !pr_cpu_impl_q1x1.supports(g, n))
        return false; /* dnnl.qconv + the late pass */
    if (IC < 64 && IC % 4) return false;
    /* known dims: decided here; else at run time (qa_run: q1x1's state) */
    const pr_tensor *X = pr_node_tin(g, n, 0);
    const int64_t pix = pr_dim_known(X->dims[2]) && pr_dim_known(X->dims[3])
                            ? X->dims[2] * X->dims[3]
                            : -1;
    return pix < 0 || !qa_to_q1x1(pr_cpu_impl_q1x1.supports(g, n), pix, IC, act);
}

static bool qa_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_QConv || n->n_inputs < 3 || n->n_inputs > 5) return false;
    if (!pr_cpu_qamx_available()) return false;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2),
                    *B = pr_node_tin(g, n, 3), *Y = pr_node_tout(g, n, 0);
    if (!X || !W || !S || !Y || !q8(X->dtype) || X->rank != 4 || X->layout != PR_LAYOUT_NHWC ||
        Y->layout != PR_LAYOUT_NHWC)
        return false;
    const pr_dtype ydt = pr_qfc_y_dtype(n);
    if (!q8(ydt) || (Y->dtype != PRECIS_UNDEFINED && Y->dtype != ydt)) return false;
    if (!init_of(W, PRECIS_INT8) || W->rank != 4 || pr_attr_int(n, "group", 1) != 1) return false;
    for (int d = 0; d < 4; d++)
        if (!pr_dim_known(W->dims[d]) || W->dims[d] <= 0) return false;
    const int64_t OC = W->dims[0], IC = W->dims[1];
    if (pr_dim_known(X->dims[1]) && X->dims[1] != IC) return false;
    if (X->dims[2] == 1 && X->dims[3] == 1 && W->dims[2] == 1 && W->dims[3] == 1)
        return false; /* qfc's */
    if (!init_of(S, PRECIS_FLOAT32) || S->rank != 1 || S->dims[0] != OC) return false;
    if (B && (!init_of(B, PRECIS_FLOAT32) || B->rank != 1 || B->dims[0] != OC)) return false;
    const float xs = pr_attr_float(n, "x_scale", 0.0f), ys = pr_attr_float(n, "y_scale", 0.0f);
    if (!(xs > 0.0f) || !isfinite(xs) || !(ys > 0.0f) || !isfinite(ys) || !isfinite(1.0f / ys))
        return false;
    const float *ws = S->data, *bv = B ? B->data : NULL;
    for (int64_t m = 0; m < OC; m++) {
        const float cs = ws[m] == 0.0f ? 1.0f : xs * ws[m];
        if (!isfinite(ws[m]) || !isfinite(cs) || cs == 0.0f || (bv && !isfinite(bv[m] / cs)))
            return false;
    }
    pr_act a, a2;
    if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a2)) return false;
    if (a.kind != PR_ACT_NONE && a.kind != PR_ACT_RELU && a.kind != PR_ACT_CLIP &&
        a.kind != PR_ACT_HARD_SWISH && a.kind != PR_ACT_SWISH)
        return false;
    if (a2.kind != PR_ACT_NONE && a2.kind != PR_ACT_AFFINE) return false;
    if (IC < 4 || !qa_shape_ok(g, n, IC, OC, W->dims[2], W->dims[3], a.kind)) return false;
    /* a residual with Swish (YOLOv8n's bottlenecks: the late epilogue's
     * order, as dnnl.qconv runs it, k_q1x1.h q1_epvz) or with no act at all
     * (the linear bottlenecks' projections: oneDNN's sum post-op, q1_epvzf) */
    const pr_tensor *Z = pr_node_tin(g, n, 4);
    if (n->n_inputs == 5 && n->inputs[4] >= 0) {
        const float zs = pr_attr_float(n, "z_scale", 0.0f);
        if (!Z || !q8(Z->dtype) || Z->rank != 4 || Z->layout != PR_LAYOUT_NHWC ||
            !(a.kind == PR_ACT_SWISH || (a.kind == PR_ACT_NONE && a2.kind == PR_ACT_NONE)) ||
            !(zs > 0.0f) || !isfinite(zs))
            return false;
        /* under 32 outputs the residual's extra bytes cost more than the
         * tiles gain (144->24 + Z at 160x160 497 -> 575 us, at 56x56 54 ->
         * 69; 144->32 at 80x80 102 -> 88, 576->96 at 20x20 223 -> 72) */
        if (a.kind == PR_ACT_NONE && OC < 32 && !qa_all()) return false;
    }
    const int64_t *v;
    int nv = pr_attr_ints(n, "kernel_shape", &v);
    if (nv >= 0 && (nv != 2 || v[0] != W->dims[2] || v[1] != W->dims[3])) return false;
    if ((nv = pr_attr_ints(n, "strides", &v)) >= 0) {
        if (nv != 2) return false;
        for (int i = 0; i < nv; i++)
            if (v[i] < 1) return false;
    }
    if ((nv = pr_attr_ints(n, "dilations", &v)) >= 0) {
        if (nv != 2) return false;
        for (int i = 0; i < nv; i++)
            if (v[i] < 1) return false;
    }
    if (strcmp(pr_attr_str(n, "auto_pad", "NOTSET"), "NOTSET") != 0) return false;
    if ((nv = pr_attr_ints(n, "pads", &v)) >= 0) {
        if (nv != 4) return false;
        for (int i = 0; i < nv; i++)
            if (v[i] < 0) return false;
    }
    return true;
}

static bool qa_nhwc_ok(const pr_graph *g, const pr_node *n) { return true; }

static void qa_destroy(void *state) {
    qamx_state *s = state;
    if (!s) return;
    pr_qfc_destroy(s->q);
    if (s->q1) pr_cpu_impl_q1x1.destroy(s->q1);
    free(s->wb);
    free(s);
}

/* The epilogue without the output clamp, its 2 x 16 values stored through
 * saturating int32 -> int16 -> int8 packs (qa_epi_t's PK) instead of 2
 * vpmovdb: for the acts pr_qfc_act_sat leaves (none, Relu, Clip, Clip's
 * min) with no act2, or no act with a residual (q1_epvzf), when every value
 * before the clamp is within +-2^30 (|sum| <= K 255 128, |Z| <= 255; these
 * acts do not grow it), so that
 * the conversion cannot overflow and the packs clamp as the min / max did:
 * the same bytes. PRECIS_QACT_SAT=0 (read at prepare): never. */
static bool qa_pk_ok(const qamx_state *s) {
    const qfc_state *q = s->q;
    const char *env = getenv("PRECIS_QACT_SAT");
    if ((env && !strcmp(env, "0")) || !q->folded || q->ydt == PRECIS_FLOAT32 ||
        q->act2.kind != PR_ACT_NONE ||
        !(q->ak == PR_ACT_NONE || q->ak == PR_ACT_RELU || q->ak == PR_ACT_CLIP ||
          q->ak == PR_ACT_CLIP_HI) ||
        (s->zdt != PRECIS_UNDEFINED && q->act.kind != PR_ACT_NONE))
        return false;
    const double amax = (double)s->K * 255.0 * 128.0;
    const double zmax = s->zdt == PRECIS_UNDEFINED ? 0.0 : 255.0 * fabs((double)s->zs);
    for (int64_t m = 0; m < s->OC; m++)
        if ((amax + fabs((double)q->bi[m])) * fabs((double)q->sc[m]) + zmax >= (double)(1 << 30))
            return false;
    return true;
}

static precis_status qa_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    *state = NULL;
    if (!qa_supports(g, n))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by qamx",
                       n->name, n->op_type);
    qamx_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    /* the epilogue's scales, biases and acts as q1x1 has them (qfc's OCp:
     * OC rounded up to 64, so the 32-channel blocks' loads stay inside) */
    precis_status st = pr_qfc_state_new(g, n, &s->q, e);
    if (st) {
        free(s);
        return st;
    }
    const pr_tensor *W = pr_node_tin(g, n, 1), *Z = pr_node_tin(g, n, 4);
    const int8_t *w = W->data;
    s->zdt = n->n_inputs == 5 && n->inputs[4] >= 0 && Z ? Z->dtype : PRECIS_UNDEFINED;
    s->zs = pr_attr_float(n, "z_scale", 1.0f);
    if (s->q->act.kind == PR_ACT_NONE) s->zs *= 1.0f / pr_attr_float(n, "y_scale", 1.0f);
    /* (no act: folded, oneDNN's sum scale z_scale / y_scale) */
    const float *ws = pr_node_tin(g, n, 2)->data;
    s->OC = W->dims[0];
    s->IC = W->dims[1];
    s->KH = W->dims[2];
    s->KW = W->dims[3];
    s->K = s->KH * s->KW * s->IC;
    s->Kp = (s->K + 63) / 64 * 64;
    s->OCp = (s->OC + QA_NR - 1) / QA_NR * QA_NR;
    s->pk = qa_pk_ok(s);
    const int64_t KS = s->Kp / 64;
    const size_t nb = (size_t)(s->OCp * s->Kp);
    s->wb = aligned_alloc(64, nb);
    if (!s->wb) {
        qa_destroy(s);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    memset(s->wb, 0, nb);
    for (int64_t m = 0; m < s->OC; m++) {
        if (ws[m] == 0.0f) continue; /* real weights 0 (qfc_state_new: scale 1) */
        for (int64_t c = 0; c < s->IC; c++)
            for (int64_t ky = 0; ky < s->KH; ky++)
                for (int64_t kx = 0; kx < s->KW; kx++) {
                    const int64_t k = (ky * s->KW + kx) * s->IC + c;
                    const int64_t ks = k / 64, r = k % 64 / 4, i = k % 4;
                    s->wb[(((m / 16) * KS + ks) * 16 + r) * 64 + (m % 16) * 4 + i] =
                        w[((m * s->IC + c) * s->KH + ky) * s->KW + kx];
                }
    }
    const int64_t *sv;
    const int64_t st0 = pr_attr_ints(n, "strides", &sv) == 2 ? sv[0] : 1;
    s->q1able = s->KH * s->KW == 1 && pr_cpu_impl_q1x1.supports(g, n);
    if (!qa_all() && s->q1able &&
        (qa_to_q1x1(true, Q1X1_MAX_PIX, s->IC, s->q->act.kind) ||
         qa_to_q1x1(true, -1, s->IC, s->q->act.kind))) { /* small or large images */
        st = pr_cpu_impl_q1x1.prepare(g, n, cfg, &s->q1, e);
        if (st) {
            qa_destroy(s);
            return st;
        }
    }
    snprintf(s->desc, sizeof s->desc, "qamx.amx_int8 %lldx%lld%s %lld->%lld%s", (long long)s->KH,
             (long long)s->KW, st0 == 2 ? "s2" : "", (long long)s->IC, (long long)s->OC,
             s->q1 ? " (or q1x1)" : "");
    *state = s;
    return PRECIS_OK;
}

#ifdef PR_CPU_X86
#define QA_ISA                                                                                     \
    __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c," \
                          "fma")))
#define QA_INLINE static inline __attribute__((always_inline)) QA_ISA

typedef struct __attribute__((aligned(64))) qa_cfg {
    uint8_t palette, start_row, rsv[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} qa_cfg;
/* tiles 0-3: C (2 x 2), 4-5: A rows 0-15 / 16-31, 6-7: B channels 0-15 / 16-31 */
static const qa_cfg qa_config = {
    1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

#define QA_BARRIER() __asm__ volatile("" ::: "memory")

/* The run's geometry. */
typedef struct qa_geo {
    int64_t IH, IW, OH, OW, sh, sw, dh, dw, pt, pl, P;
} qa_geo;

/* n bytes from src to dst (masked 64-byte moves). */
QA_INLINE void qa_copy(uint8_t *dst, const uint8_t *src, int64_t n) {
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        _mm512_storeu_si512((void *)(dst + i), _mm512_loadu_si512((const void *)(src + i)));
    if (i < n) {
        const __mmask64 k = ((__mmask64)1 << (n - i)) - 1;
        _mm512_mask_storeu_epi8(dst + i, k, _mm512_maskz_loadu_epi8(k, src + i));
    }
}

QA_INLINE void qa_zero(uint8_t *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512((void *)(dst + i), _mm512_setzero_si512());
    if (i < n) _mm512_mask_storeu_epi8(dst + i, ((__mmask64)1 << (n - i)) - 1, _mm512_setzero_si512());
}

/* Rows p0 .. p0 + rows - 1 of the implicit matrix into A (stride Kp). */
static QA_ISA void qa_pack(const qamx_state *s, const qa_geo *g, const uint8_t *x, uint8_t *A,
                           int64_t p0, int64_t rows) {
    const int64_t IC = s->IC, KW = s->KW, Kp = s->Kp, OHW = g->OH * g->OW;
    int64_t nimg = p0 / OHW, rem = p0 % OHW, oy = rem / g->OW, ox = rem % g->OW;
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *d = A + r * Kp;
        const int64_t iy0 = oy * g->sh - g->pt, ix0 = ox * g->sw - g->pl;
        const uint8_t *img = x + nimg * g->IH * g->IW * IC;
        for (int64_t ky = 0; ky < s->KH; ky++, d += KW * IC) {
            const int64_t iy = iy0 + ky * g->dh;
            if (iy < 0 || iy >= g->IH) {
                qa_zero(d, KW * IC);
                continue;
            }
            const uint8_t *row = img + iy * g->IW * IC;
            if (g->dw == 1 && ix0 >= 0 && ix0 + KW <= g->IW) {
                qa_copy(d, row + ix0 * IC, KW * IC);
                continue;
            }
            for (int64_t kx = 0; kx < KW; kx++) {
                const int64_t ix = ix0 + kx * g->dw;
                if (ix < 0 || ix >= g->IW)
                    qa_zero(d + kx * IC, IC);
                else
                    qa_copy(d + kx * IC, row + ix * IC, IC);
            }
        }
        if (++ox == g->OW) {
            ox = 0;
            if (++oy == g->OH) {
                oy = 0;
                nimg++;
            }
        }
    }
}

/* C[32][32] int32 (stride 32) = A[32][Kp] x the weights of channels
 * 32 ob .. 32 ob + 31 (tiles configured). */
QA_INLINE void qa_mm(const qamx_state *s, const uint8_t *A, int64_t lda, int64_t ob, int32_t *C,
                     bool u8) {
    const int64_t KS = s->Kp / 64;
    const int8_t *B0 = s->wb + (2 * ob) * KS * 1024, *B1 = B0 + KS * 1024;
    QA_BARRIER();
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t ks = 0; ks < KS; ks++) {
        _tile_loadd(4, A + ks * 64, lda);
        _tile_loadd(5, A + 16 * lda + ks * 64, lda);
        _tile_loadd(6, B0 + ks * 1024, 64);
        _tile_loadd(7, B1 + ks * 1024, 64);
        if (u8) {
            _tile_dpbusd(0, 4, 6);
            _tile_dpbusd(1, 4, 7);
            _tile_dpbusd(2, 5, 6);
            _tile_dpbusd(3, 5, 7);
        } else {
            _tile_dpbssd(0, 4, 6);
            _tile_dpbssd(1, 4, 7);
            _tile_dpbssd(2, 5, 6);
            _tile_dpbssd(3, 5, 7);
        }
    }
    _tile_stored(0, C, 128);
    _tile_stored(1, C + 16, 128);
    _tile_stored(2, C + 16 * 32, 128);
    _tile_stored(3, C + 16 * 32 + 16, 128);
    QA_BARRIER();
}

/* The epilogue of rows x (channels 32 ob ..) sums of C into y (rows of OC
 * bytes from pixel p0). */
/* The residual's 16 values at zp (lanes in k) as floats. */
QA_INLINE __m512 qa_z(const uint8_t *zp, __mmask16 k, int ZT) {
    const __m128i b = _mm_maskz_loadu_epi8(k, zp);
    return _mm512_cvtepi32_ps(ZT == 2 ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b));
}

/* 16 sums' epilogue (ZT: no residual, int8, uint8 one at zp, lanes k). */
QA_INLINE __m128i qa_ep16(const q1_c *c, __m512i a, __m512 bi, __m512 sc, int AK, bool A2, int ZT,
                          const uint8_t *zp, __mmask16 k, __m512 zs) {
    if (ZT && AK == PR_ACT_NONE)
        return _mm512_cvtepi32_epi8(q1_epvzf(c, a, bi, sc, qa_z(zp, k, ZT), zs));
    if (ZT) return _mm512_cvtepi32_epi8(q1_epvz(c, a, bi, sc, A2, qa_z(zp, k, ZT), zs));
    return _mm512_cvtepi32_epi8(q1_epv(c, a, bi, sc, AK, A2, false));
}

/* A row's 32 values (qamx_state.pk): no clamp, packed with saturation;
 * vpackssdw and vpack{us,ss}wb interleave 4-byte groups by 128-bit lanes,
 * vpermd puts the 8 dwords in order. */
QA_INLINE __m512i qa_pkv(const q1_c *c, __m512i a, __m512 bi, __m512 sc, int AK, int ZT,
                          const uint8_t *zp, __mmask16 k, __m512 zs) {
    if (!ZT) return q1_epv(c, a, bi, sc, AK, false, true);
    /* q1_epvzf without its clamp */
    const __m512 r = _mm512_fmadd_ps(qa_z(zp, k, ZT), zs,
                                     _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(a), bi), sc));
    return _mm512_cvt_roundps_epi32(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

QA_INLINE __m256i qa_pk32(const q1_c *c, __m512i a0, __m512i a1, __m512 bi0, __m512 sc0,
                          __m512 bi1, __m512 sc1, int AK, int ZT, const uint8_t *zp,
                          __mmask32 k, __m512 zs) {
    const __m512i p =
        _mm512_packs_epi32(qa_pkv(c, a0, bi0, sc0, AK, ZT, zp, (__mmask16)k, zs),
                           qa_pkv(c, a1, bi1, sc1, AK, ZT, zp + 16, (__mmask16)(k >> 16), zs));
    const __m512i b = c->u8 ? _mm512_packus_epi16(p, p) : _mm512_packs_epi16(p, p);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), b));
}

QA_INLINE void qa_epi_t(const q1_c *restrict c, const int32_t *C, uint8_t *restrict y,
                        const uint8_t *z, float zsc, int64_t p0, int64_t rows, int64_t ob, int AK,
                        bool A2, int ZT, bool PK) {
    const int64_t OC = c->OC, m0 = 32 * ob, left = OC - m0;
    const __m512 bi0 = _mm512_load_ps(c->bi + m0), sc0 = _mm512_load_ps(c->sc + m0);
    const __m512 bi1 = _mm512_load_ps(c->bi + m0 + 16), sc1 = _mm512_load_ps(c->sc + m0 + 16);
    if (PK) {
        const __mmask32 k = left >= 32 ? ~(__mmask32)0 : (__mmask32)((1ull << left) - 1);
        const __m512 zs = _mm512_set1_ps(zsc);
        uint8_t *yq = y + p0 * OC + m0;
        const uint8_t *zq = ZT ? z + p0 * OC + m0 : NULL;
        for (int64_t r = 0; r < rows; r++, yq += OC) {
            const __m256i b = qa_pk32(c, _mm512_load_si512((const void *)(C + r * 32)),
                                      _mm512_load_si512((const void *)(C + r * 32 + 16)), bi0,
                                      sc0, bi1, sc1, AK, ZT, zq, k, zs);
            if (ZT) zq += OC;
            if (left >= 32)
                _mm256_storeu_si256((__m256i *)yq, b);
            else
                _mm256_mask_storeu_epi8(yq, k, b);
        }
        return;
    }
    const __m512 zs = _mm512_set1_ps(zsc);
    uint8_t *yp = y + p0 * OC + m0;
    const uint8_t *zp = ZT ? z + p0 * OC + m0 : NULL;
    const __mmask16 all = (__mmask16)0xffff;
    if (left >= 32) {
        for (int64_t r = 0; r < rows; r++, yp += OC) {
            const __m512i a0 = _mm512_load_si512((const void *)(C + r * 32));
            const __m512i a1 = _mm512_load_si512((const void *)(C + r * 32 + 16));
            const __m128i b0 = qa_ep16(c, a0, bi0, sc0, AK, A2, ZT, zp, all, zs);
            const __m128i b1 = qa_ep16(c, a1, bi1, sc1, AK, A2, ZT, zp + 16, all, zs);
            _mm256_storeu_si256((__m256i *)yp,
                                _mm256_inserti128_si256(_mm256_castsi128_si256(b0), b1, 1));
            if (ZT) zp += OC;
        }
        return;
    }
    const __mmask32 k = (__mmask32)((1ull << left) - 1);
    const __mmask16 k0 = (__mmask16)k, k1 = (__mmask16)(k >> 16);
    for (int64_t r = 0; r < rows; r++, yp += OC) {
        const __m512i a0 = _mm512_load_si512((const void *)(C + r * 32));
        const __m512i a1 = _mm512_load_si512((const void *)(C + r * 32 + 16));
        const __m128i b0 = qa_ep16(c, a0, bi0, sc0, AK, A2, ZT, zp, k0, zs);
        const __m128i b1 =
            left > 16 ? qa_ep16(c, a1, bi1, sc1, AK, A2, ZT, zp + 16, k1, zs) : _mm_setzero_si128();
        _mm256_mask_storeu_epi8(yp, k, _mm256_inserti128_si256(_mm256_castsi128_si256(b0), b1, 1));
        if (ZT) zp += OC;
    }
}

typedef void (*qa_epi_fn)(const q1_c *c, const int32_t *C, uint8_t *y, const uint8_t *z,
                          float zs, int64_t p0, int64_t rows, int64_t ob);
#define QA_VARP(NAME, AK, A2, ZT, PK)                                                              \
    static QA_ISA __attribute__((noinline)) void NAME(                                          \
        const q1_c *restrict c, const int32_t *C, uint8_t *restrict y, const uint8_t *z, float zs, \
        int64_t p0, int64_t rows, int64_t ob) {                                                    \
        qa_epi_t(c, C, y, z, zs, p0, rows, ob, AK, A2, ZT, PK);                                    \
    }
#define QA_VAR(NAME, AK, A2, ZT) QA_VARP(NAME, AK, A2, ZT, false)
QA_VAR(qa_none, PR_ACT_NONE, false, 0)
QA_VAR(qa_none_a2, PR_ACT_NONE, true, 0)
QA_VAR(qa_relu, PR_ACT_RELU, false, 0)
QA_VAR(qa_relu_a2, PR_ACT_RELU, true, 0)
QA_VAR(qa_clip, PR_ACT_CLIP, false, 0)
QA_VAR(qa_clip_a2, PR_ACT_CLIP, true, 0)
QA_VAR(qa_hsw, PR_ACT_HARD_SWISH, false, 0)
QA_VAR(qa_hsw_a2, PR_ACT_HARD_SWISH, true, 0)
QA_VAR(qa_hswd, PR_ACT_HARD_SWISH_DNNL, false, 0)
QA_VAR(qa_hswd_a2, PR_ACT_HARD_SWISH_DNNL, true, 0)
QA_VAR(qa_sw, PR_ACT_SWISH, false, 0)
QA_VAR(qa_sw_a2, PR_ACT_SWISH, true, 0)
QA_VAR(qa_sw_z8, PR_ACT_SWISH, false, 1)
QA_VAR(qa_sw_a2_z8, PR_ACT_SWISH, true, 1)
QA_VAR(qa_sw_zu8, PR_ACT_SWISH, false, 2)
QA_VAR(qa_sw_a2_zu8, PR_ACT_SWISH, true, 2)
QA_VAR(qa_none_z8, PR_ACT_NONE, false, 1)
QA_VAR(qa_none_zu8, PR_ACT_NONE, false, 2)
QA_VAR(qa_cliphi, PR_ACT_CLIP_HI, false, 0)
QA_VARP(qa_none_pk, PR_ACT_NONE, false, 0, true)
QA_VARP(qa_relu_pk, PR_ACT_RELU, false, 0, true)
QA_VARP(qa_clip_pk, PR_ACT_CLIP, false, 0, true)
QA_VARP(qa_cliphi_pk, PR_ACT_CLIP_HI, false, 0, true)
QA_VARP(qa_none_z8_pk, PR_ACT_NONE, false, 1, true)
QA_VARP(qa_none_zu8_pk, PR_ACT_NONE, false, 2, true)
#undef QA_VAR
#undef QA_VARP
/* [act: none, Relu, Clip, HardSwish, Swish, Swish + int8 Z, Swish + uint8 Z, HardSwish as
 * oneDNN rounds it, none + int8 Z, none + uint8 Z, Clip's min only (pr_qfc_act_sat: never
 * with act2)][act2 Affine] */
static const qa_epi_fn qa_fns[11][2] = {
    {qa_none, qa_none_a2},     {qa_relu, qa_relu_a2},   {qa_clip, qa_clip_a2},
    {qa_hsw, qa_hsw_a2},       {qa_sw, qa_sw_a2},       {qa_sw_z8, qa_sw_a2_z8},
    {qa_sw_zu8, qa_sw_a2_zu8}, {qa_hswd, qa_hswd_a2},   {qa_none_z8, qa_none_z8},
    {qa_none_zu8, qa_none_zu8}, {qa_cliphi, qa_cliphi}};

/* Blocks b0 .. b1 - 1 of 32 output pixels on this thread (A: 32 x Kp
 * bytes, C: 2 x 32 x 32 int32, both 64-byte aligned scratch). */
static QA_ISA void qa_range(const qamx_state *s, const qa_geo *g, const uint8_t *x, uint8_t *y,
                            const uint8_t *z, int64_t b0, int64_t b1, uint8_t *A, int32_t *C,
                            bool hswd) {
    const qfc_state *q = s->q;
    const q1_c c = {q->sc, q->bi, NULL, NULL, s->IC, s->OC, 0, 0u, q->ydt == PRECIS_UINT8,
                    PV_C(q->act.alpha), PV_C(q->act.beta), PV_C(q->act2.alpha),
                    PV_C(q->act2.beta), PV_C(q->inv), PV_C(q->lo), PV_C(q->hi), false, false};
    const bool zn = q->act.kind == PR_ACT_NONE;
    const int ak = s->zdt == PRECIS_INT8              ? (zn ? 8 : 5)
                   : s->zdt == PRECIS_UINT8           ? (zn ? 9 : 6)
                   : q->ak == PR_ACT_RELU             ? 1
                   : q->ak == PR_ACT_CLIP             ? 2
                   : q->ak == PR_ACT_HARD_SWISH       ? (hswd ? 7 : 3)
                   : q->ak == PR_ACT_SWISH            ? 4
                   : q->ak == PR_ACT_CLIP_HI          ? 10
                                                      : 0;
    /* qamx_state.pk: the acts qa_pk_ok takes, by qa_fns' index */
    static const qa_epi_fn pk_fns[11] = {
        qa_none_pk, qa_relu_pk, qa_clip_pk,     NULL,           NULL,        NULL,
        NULL,       NULL,       qa_none_z8_pk, qa_none_zu8_pk, qa_cliphi_pk};
    const qa_epi_fn epi =
        s->pk && pk_fns[ak] ? pk_fns[ak] : qa_fns[ak][q->act2.kind == PR_ACT_AFFINE];
    const bool u8 = q->xdt == PRECIS_UINT8;
    /* 1x1, stride 1, no pads: the image rows are the matrix (full blocks),
     * when K is a multiple of 64 or under 64 (the A tiles' rows then IC
     * bytes, the B tiles' IC / 4 rows: this call's own configuration) */
    const bool plain = s->KH == 1 && s->KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 &&
                       g->pl == 0 && g->OH == g->IH && g->OW == g->IW;
    const bool small = plain && s->IC < 64 && s->IC % 4 == 0;
    const bool direct = plain && (s->K == s->Kp || small);
    qa_cfg cfg = qa_config;
    if (small) {
        cfg.colsb[4] = cfg.colsb[5] = (uint16_t)s->IC;
        cfg.rows[6] = cfg.rows[7] = (uint8_t)(s->IC / 4);
    }
    const int64_t NB = s->OCp / QA_NR;
    memset(A, 0, (size_t)(QA_MR * s->Kp)); /* the K padding's bytes (zero weights) */
    QA_BARRIER();
    _tile_loadconfig(&cfg);
    /* two C buffers: block j's products are issued before block j - 1's
     * epilogue runs, so that the tiles' work overlaps it */
    int32_t *Cb[2] = {C, C + QA_MR * QA_NR};
    int cur = 0;
    bool pend = false;
    int64_t pp0 = 0, prows = 0, pob = 0;
    for (int64_t b = b0; b < b1; b++) {
        const int64_t p0 = b * QA_MR, rows = g->P - p0 < QA_MR ? g->P - p0 : QA_MR;
        const uint8_t *a = A;
        int64_t lda = s->Kp;
        if (direct && rows == QA_MR) {
            a = x + p0 * s->IC;
            lda = s->IC;
        } else {
            qa_pack(s, g, x, A, p0, rows);
        }
        for (int64_t ob = 0; ob < NB; ob++) {
            qa_mm(s, a, lda, ob, Cb[cur], u8);
            if (pend) epi(&c, Cb[cur ^ 1], y, z, s->zs, pp0, prows, pob);
            pend = true;
            pp0 = p0;
            prows = rows;
            pob = ob;
            cur ^= 1;
        }
    }
    if (pend) epi(&c, Cb[cur ^ 1], y, z, s->zs, pp0, prows, pob);
    _tile_release();
}
#endif

static precis_status qa_run(void *state, pr_kernel *k, pr_cpu_exec *xc) {
    const qamx_state *s = state;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    pr_conv_geom geo;
    precis_status st = pr_cpu_q_check_io(s->q, k, s->IC, s->OC, s->KH, s->KW, &geo);
    if (st) return st;
    if (s->q1 && qa_to_q1x1(true, X->dims[2] * X->dims[3], s->IC, s->q->act.kind))
        return pr_cpu_impl_q1x1.run(s->q1, k, xc);
    if (s->q1 && X->dims[2] * X->dims[3] > Q1X1_MAX_PIX && qa_q1big(s->IC, s->OC, s->q->act.kind))
        return pr_q1x1_rows_run(s->q1, k, xc);
    const pr_buf *Z = s->zdt != PRECIS_UNDEFINED ? pr_kin(k, 4) : NULL;
    if (s->zdt != PRECIS_UNDEFINED && (!Z || Z->numel != Y->numel || Z->dtype != s->zdt))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual does not match the output");
    const uint8_t *zd = Z ? Z->data : NULL;
    if (Y->numel == 0) return PRECIS_OK;
#ifdef PR_CPU_X86
    const qa_geo g = {X->dims[2],    X->dims[3],    geo.out[0],    geo.out[1],
                      geo.stride[0], geo.stride[1], geo.dil[0],    geo.dil[1],
                      geo.pad_b[0],  geo.pad_b[1],  X->dims[0] * geo.out[0] * geo.out[1]};
    const int64_t nblk = (g.P + QA_MR - 1) / QA_MR;
    /* HardSwish rounded as the impl this conv ran on before qamx: q1x1's
     * where it takes it (1x1, up to Q1X1_MAX_PIX pixels), else oneDNN's:
     * the same bytes as before */
    const bool hswd = !(s->q1able && g.IH * g.IW <= Q1X1_MAX_PIX);
    int nt = xc && xc->num_threads > 0 ? xc->num_threads : 1;
    if (Y->numel * s->K < 16 * PR_CPU_PAR_MIN) nt = 1;
    if (nblk < nt) nt = (int)nblk;
    const size_t abytes = (size_t)(QA_MR * s->Kp + 63) / 64 * 64, per = abytes + 2 * QA_MR * QA_NR * 4;
    uint8_t *scr = pr_cpu_scratch(xc, (size_t)nt * per);
    if (!scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    if (nt < 2) {
        qa_range(s, &g, X->data, Y->data, zd, 0, nblk, scr, (int32_t *)(scr + abytes), hswd);
        return PRECIS_OK;
    }
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        const int64_t b0 = nblk * t / T, b1 = nblk * (t + 1) / T;
        uint8_t *mine = scr + (size_t)t * per;
        if (b1 > b0) qa_range(s, &g, X->data, Y->data, zd, b0, b1, mine, (int32_t *)(mine + abytes),
                            hswd);
    }
    return PRECIS_OK;
#else
    return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "qamx needs x86 AMX-INT8");
#endif
}

static const char *qa_describe(void *state) {
    const qamx_state *s = state;
    return s ? s->desc : "qamx.amx_int8";
}

const pr_cpu_impl pr_cpu_impl_qamx = {
    .name = "qamx",
    .supports = qa_supports,
    .nhwc_ok = qa_nhwc_ok,
    .prepare = qa_prepare,
    .run = qa_run,
    .describe = qa_describe,
    .destroy = qa_destroy,
};

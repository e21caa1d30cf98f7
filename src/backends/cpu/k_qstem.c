/* pr_cpu_impl_qstem (kernels.h): the INT8 stem convolution of PP-OCR cls,
 * a 3x3 stride-2 QConv over 1..4 input channels into 8 (cls: 3 -> 8
 * HardSwish at 48x192), where oneDNN's jit_int8 puts the 8 outputs in
 * 16-lane vectors (half of its vpdpbusd and epilogue lanes idle).
 *
 * Each input pixel's channels become one dword (bytes c < C, an int8 src
 * biased by 128 as q1x1 does, the padding its real zero), in rows with the
 * left / right padding as columns and the top / bottom padding as rows
 * ("expanded rows", scratch), made per band of output rows (whose rows fit
 * QS_BAND_BYTES). An output row then takes 16 output pixels per step in
 * the lanes: for tap (ky, kx), the 16 dwords at columns 2 ox + kx are two
 * loads and one vpermt2d (the even dwords), and one vpdpbusd per output
 * channel against that tap's 4 weight bytes broadcast (zero above C) adds
 * the tap to the 16 sums: 9 permutes and 72 vpdpbusd per 16 pixels. The
 * sums are exact int32 (the start -128 * sum(w) undoes the bias), the
 * epilogue is q1x1's (k_q1x1.h q1_epv: the same operations as qfc / q1x1
 * on the same sums), and the 16 lanes x 8 channel bytes are transposed to
 * NHWC with two vpermt2b (AVX512-VBMI). int8/uint8 src and out, bias, act
 * none/Relu/Clip/HardSwish, act2 none/Affine, no Z, group 1, stride 2x2,
 * dilation 1, explicit pads of 0 or 1. Needs AVX512-VNNI and VBMI
 * (declined otherwise: dnnl.qconv runs it); PRECIS_QSTEM=0 for A/B.
 * Measured (test_cpu_int8 --bench stem, medians, load ~3-5, us, qstem /
 * jit_int8 / fp32): cls b1 t1 11.6 / 12.9 / 15.7, b8 t1 79 / 103 / 121, b8
 * t2 38.5 / 52.9 / 60.1, b1 t2 8.4 / 8.1 / 10.5; 16 outputs (rec 3 -> 16 at
 * 48x320, det at 640x640) lost, 26 / 21.5 and 570 / 545 (jit_int8's lanes
 * are full there, and this epilogue + transpose cost more): declined. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/k_q1x1.h"
#include "backends/cpu/k_qfc.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"
#include "ir/infer_conv.h"

#define QS_MAX_C 4
#define QS_BAND_BYTES 49152 /* a band's expanded rows (L1-sized) */

typedef struct qs_state {
    qfc_state *q;    /* scales, biases, acts, output type (pr_qfc_state_new) */
    int64_t C, OC;   /* 1..4, 8 */
    int32_t wd[8][9]; /* output channel o, tap ky * 3 + kx: bytes c < C */
    int32_t comp[8];   /* the sums' start: -128 * sum(w[o]) for an int8 src */
    uint8_t tr[2][64]; /* vpermt2b indices of the NHWC transpose (qs_tables) */
    uint8_t trp[2][64]; /* the same from the packed sources (qs_tables) */
    bool pk;            /* the epilogue without its clamp, through packs (qs_pk_ok) */
} qs_state;

static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }
static bool init_of(const pr_tensor *t, pr_dtype dt) {
    return t && (t->flags & PR_T_INIT) && t->data && t->dtype == dt;
}

static bool qs_isa(void) {
#ifdef PR_CPU_X86
    return pr_cpu_use_vnni("PRECIS_QSTEM") && pr_cpu_features_get()->avx512_vbmi;
#else
    return false;
#endif
}

static bool ints_all(const pr_node *n, const char *name, int64_t want, int count) {
    const int64_t *v;
    int nv = pr_attr_ints(n, name, &v);
    if (nv < 0) return true; /* absent: the default (1) */
    if (nv != count) return false;
    for (int i = 0; i < nv; i++)
        if (v[i] != want) return false;
    return true;
}

static bool qs_supports(const pr_graph *g, const pr_node *n) {
    if (!qs_isa() || n->op != PR_OP_QConv || n->n_inputs < 3 || n->n_inputs > 4) return false;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2),
                    *B = pr_node_tin(g, n, 3), *Y = pr_node_tout(g, n, 0);
    if (!X || !W || !S || !Y || !q8(X->dtype) || X->rank != 4 || X->layout != PR_LAYOUT_NHWC ||
        Y->layout != PR_LAYOUT_NHWC)
        return false;
    const pr_dtype ydt = pr_qfc_y_dtype(n);
    if (!q8(ydt) || (Y->dtype != PRECIS_UNDEFINED && Y->dtype != ydt)) return false;
    if (!init_of(W, PRECIS_INT8) || W->rank != 4 || W->dims[2] != 3 || W->dims[3] != 3)
        return false;
    const int64_t OC = W->dims[0], C = W->dims[1];
    if (OC != 8 || C < 1 || C > QS_MAX_C || pr_attr_int(n, "group", 1) != 1)
        return false;
    if (pr_dim_known(X->dims[1]) && X->dims[1] != C) return false;
    if (!init_of(S, PRECIS_FLOAT32) || S->rank != 1 || S->dims[0] != OC) return false;
    if (B && (!init_of(B, PRECIS_FLOAT32) || B->rank != 1 || B->dims[0] != OC)) return false;
    const float xs = pr_attr_float(n, "x_scale", 0.0f), ys = pr_attr_float(n, "y_scale", 0.0f);
    if (!(xs > 0.0f) || !isfinite(xs) || !(ys > 0.0f) || !isfinite(ys) || !isfinite(1.0f / ys))
        return false;
    const float *ws = S->data, *bv = B ? B->data : NULL;
    for (int64_t m = 0; m < OC; m++)
        if (!isfinite(ws[m]) || !isfinite(xs * ws[m]) || (bv && !isfinite(bv[m]))) return false;
    pr_act a, a2;
    if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a2)) return false;
    if (a.kind != PR_ACT_NONE && a.kind != PR_ACT_RELU && a.kind != PR_ACT_CLIP &&
        a.kind != PR_ACT_HARD_SWISH)
        return false;
    if (a2.kind != PR_ACT_NONE && a2.kind != PR_ACT_AFFINE) return false;
    if (!ints_all(n, "strides", 2, 2) || pr_attr_ints(n, "strides", &(const int64_t *){0}) != 2)
        return false;
    if (!ints_all(n, "dilations", 1, 2)) return false;
    const char *ap = pr_attr_str(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") != 0) return false;
    const int64_t *p;
    int np = pr_attr_ints(n, "pads", &p);
    if (np >= 0 && np != 4) return false;
    for (int i = 0; i < np; i++)
        if (p[i] < 0 || p[i] > 1) return false;
    return true;
}

static bool qs_nhwc_ok(const pr_graph *g, const pr_node *n) { return true; }

static void qs_destroy(void *state) {
    qs_state *s = state;
    if (!s) return;
    pr_qfc_destroy(s->q);
    free(s);
}

/* The transpose of the 16 pixels x OC channel bytes (channel o's 16 bytes
 * at o * 16 in the sources) into NHWC (pixel i's OC bytes at i * OC):
 * output vector j's byte q is source byte tr[j][q] of the pair of sources.
 * trp: the same from sources made by the saturating packs (qs_pk_ok), whose
 * 128-bit lanes interleave 4 channels x 4 pixels: channel 4 z + k, pixel i
 * at byte 64 z + 16 (i / 4) + 4 k + i % 4. */
static void qs_tables(qs_state *s) {
    const int OC = (int)s->OC;
    for (int j = 0; j < OC / 4; j++)
        for (int q = 0; q < 64; q++) {
            const int b = j * 64 + q, i = b / OC, o = b % OC;
            s->tr[j][q] = (uint8_t)((o * 16 + i) & 127);
            const int z = (o / 4) & 1, k = o % 4;
            s->trp[j][q] = (uint8_t)(64 * z + 16 * (i / 4) + 4 * k + i % 4);
        }
}

/* The epilogue without the output clamp (q1_epv's SAT), its int32 values
 * through saturating int32 -> int16 -> int8 packs, where every value before
 * the clamp is within +-2^30 (q1x1's bound, k_q1x1.c: |sum| <= 9 C 255 128;
 * the acts do not grow it beyond their bounds; act2 and 1 / y_scale), so
 * that the conversion cannot overflow and the packs clamp as the min / max
 * did (the bounds are integers: clamp and round commute): the same bytes.
 * PRECIS_QACT_SAT=0 (read at prepare): never. */
static bool qs_pk_ok(const qs_state *s) {
    const qfc_state *q = s->q;
    const char *env = getenv("PRECIS_QACT_SAT");
    if ((env && !strcmp(env, "0")) || q->ydt == PRECIS_FLOAT32) return false;
    const double amax = 9.0 * (double)s->C * 255.0 * 128.0;
    const double a2 = q->act2.kind == PR_ACT_AFFINE ? fabs((double)q->act2.alpha) : 1.0;
    const double b2 = q->act2.kind == PR_ACT_AFFINE ? fabs((double)q->act2.beta) : 0.0;
    for (int64_t m = 0; m < s->OC; m++) {
        double r = (amax + fabs((double)q->bi[m])) * fabs((double)q->sc[m]);
        if (q->act.kind == PR_ACT_CLIP)
            r = fmax(r, fmax(fabs((double)q->act.alpha), fabs((double)q->act.beta)));
        r = a2 * r + b2;
        if (!q->folded) r *= fabs((double)q->inv);
        if (!(r < (double)(1 << 30))) return false;
    }
    return true;
}

static precis_status qs_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    (void)cfg;
    *state = NULL;
    if (!qs_supports(g, n))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by qstem",
                       n->name, n->op_type);
    qs_state *s = aligned_alloc(64, (sizeof(qs_state) + 63) / 64 * 64);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    memset(s, 0, sizeof *s);
    /* the epilogue's scales, biases and acts as q1x1 has them (its float
     * weights, made from the first C of each channel's taps, unused) */
    precis_status st = pr_qfc_state_new(g, n, &s->q, e);
    if (st) {
        free(s);
        return st;
    }
    const pr_tensor *W = pr_node_tin(g, n, 1);
    const int8_t *w = W->data;
    const float *ws = pr_node_tin(g, n, 2)->data;
    s->OC = W->dims[0];
    s->C = W->dims[1];
    const bool s8 = s->q->xdt == PRECIS_INT8;
    for (int64_t o = 0; o < s->OC; o++) {
        if (ws[o] == 0.0f) continue; /* real weights 0 (qfc_state_new: scale 1) */
        int32_t sum = 0;
        for (int t = 0; t < 9; t++) {
            uint32_t d = 0;
            for (int64_t c = 0; c < s->C; c++) {
                const int8_t q = w[(o * s->C + c) * 9 + t];
                d |= (uint32_t)(uint8_t)q << (8 * c);
                sum += q;
            }
            s->wd[o][t] = (int32_t)d;
        }
        s->comp[o] = s8 ? -128 * sum : 0;
    }
    qs_tables(s);
    s->pk = qs_pk_ok(s);
    *state = s;
    return PRECIS_OK;
}

#ifdef PR_CPU_X86
#define QS_ISA                                                                                     \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,f16c,fma")))
#define QS_INLINE static inline __attribute__((always_inline)) QS_ISA

typedef struct qs_geo {
    int64_t IH, IW, OH, OW, pt, pl, RW;
    uint32_t pad; /* an expanded pixel of the padding (a real zero) */
} qs_geo;

/* Expanded row r (input row r - pt) of one image: x the image (NHWC
 * bytes), e the row (RW dwords). */
static QS_ISA void qs_expand(const qs_state *s, const qs_geo *g, const uint8_t *x, int64_t r,
                             int32_t *e) {
    const __m512i pad = _mm512_set1_epi32((int)g->pad);
    for (int64_t j = 0; j < g->RW; j += 16) _mm512_store_si512((void *)(e + j), pad);
    const int64_t iy = r - g->pt, C = s->C;
    if (iy < 0 || iy >= g->IH) return;
    /* byte c of dword p <- byte p * C + c (c < C), the others 0 */
    uint8_t idx[64];
    uint64_t keep = 0;
    for (int q = 0; q < 64; q++) {
        idx[q] = (uint8_t)((q / 4) * C + q % 4);
        if (q % 4 < C) keep |= 1ull << q;
    }
    const __m512i ix = _mm512_loadu_si512((const void *)idx);
    const __m512i flip = _mm512_set1_epi32(s->q->xdt == PRECIS_INT8 ? (int)0x80808080u : 0);
    const uint8_t *row = x + iy * g->IW * C;
    for (int64_t i0 = 0; i0 < g->IW; i0 += 16) {
        const int64_t cnt = g->IW - i0 < 16 ? g->IW - i0 : 16;
        const int64_t nb = cnt * C;
        const __m512i v = _mm512_maskz_loadu_epi8(nb >= 64 ? ~0ull : (1ull << nb) - 1ull,
                                                  row + i0 * C);
        const __m512i d = _mm512_xor_si512(_mm512_maskz_permutexvar_epi8(keep, ix, v), flip);
        _mm512_mask_storeu_epi32(e + g->pl + i0, (__mmask16)((1u << cnt) - 1u), d);
    }
}

/* Output row oy of one image from its expanded rows (e: row 0), into y (the
 * row's NHWC bytes); OC (8), the act and act2 as constants. */
QS_INLINE void qs_row_t(const qs_state *s, const q1_c *c, const qs_geo *g, const int32_t *e,
                        int64_t oy, uint8_t *y, int OC, int AK, bool A2, bool PK) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i t0 = _mm512_loadu_si512((const void *)(PK ? s->trp[0] : s->tr[0]));
    const __m512i t1 = _mm512_loadu_si512((const void *)(PK ? s->trp[1] : s->tr[1]));
    const int32_t *r0 = e + 2 * oy * g->RW;
    for (int64_t ox0 = 0; ox0 < g->OW; ox0 += 16) {
        __m512i acc[8];
        for (int o = 0; o < OC; o++) acc[o] = _mm512_set1_epi32(s->comp[o]);
        for (int ky = 0; ky < 3; ky++) {
            const int32_t *rp = r0 + ky * g->RW + 2 * ox0;
            for (int kx = 0; kx < 3; kx++) {
                const __m512i v = _mm512_permutex2var_epi32(
                    _mm512_loadu_si512((const void *)(rp + kx)), even,
                    _mm512_loadu_si512((const void *)(rp + kx + 16)));
                for (int o = 0; o < OC; o++)
                    acc[o] = q1_dp(acc[o], v, _mm512_set1_epi32(s->wd[o][ky * 3 + kx]));
            }
        }
        __m512i z[2]; /* channels 4q..4q+3, 16 bytes each */
        for (int q = 0; PK && q < OC / 4; q++) { /* lanes: 4 channels x 4 pixels (trp) */
#define QS_EP(o) q1_epv(c, acc[o], _mm512_set1_ps(c->bi[o]), _mm512_set1_ps(c->sc[o]), AK, A2, true)
            const __m512i a = _mm512_packs_epi32(QS_EP(4 * q), QS_EP(4 * q + 1));
            const __m512i b = _mm512_packs_epi32(QS_EP(4 * q + 2), QS_EP(4 * q + 3));
#undef QS_EP
            z[q] = c->u8 ? _mm512_packus_epi16(a, b) : _mm512_packs_epi16(a, b);
        }
        for (int q = 0; !PK && q < OC / 4; q++) {
            __m128i v[4];
            for (int k = 0; k < 4; k++) {
                const int o = q * 4 + k;
                v[k] = _mm512_cvtepi32_epi8(q1_epv(c, acc[o], _mm512_set1_ps(c->bi[o]),
                                                   _mm512_set1_ps(c->sc[o]), AK, A2, false));
            }
            z[q] = _mm512_inserti32x4(
                _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(v[0]), v[1], 1),
                                   v[2], 2),
                v[3], 3);
        }
        const int64_t cnt = g->OW - ox0 < 16 ? g->OW - ox0 : 16;
        int64_t left = cnt * OC; /* bytes */
        uint8_t *yp = y + ox0 * OC;
        for (int j = 0; j < OC / 4 && left > 0; j++, left -= 64, yp += 64) {
            const __m512i out = _mm512_permutex2var_epi8(z[0], j ? t1 : t0, z[1]);
            if (left >= 64)
                _mm512_storeu_si512((void *)yp, out);
            else
                _mm512_mask_storeu_epi8(yp, ((__mmask64)1 << left) - 1, out);
        }
    }
}

/* One function per (OC, act, act2) (k_q1x1.c's reason: one frame each). */
typedef void (*qs_row_fn)(const qs_state *s, const q1_c *c, const qs_geo *g, const int32_t *e,
                          int64_t oy, uint8_t *y);
#define QS_VAR(NAME, OC, AK, A2, PK)                                                               \
    static QS_ISA __attribute__((noinline)) void NAME(const qs_state *s, const q1_c *c,           \
                                                      const qs_geo *g, const int32_t *e,          \
                                                      int64_t oy, uint8_t *y) {                   \
        qs_row_t(s, c, g, e, oy, y, OC, AK, A2, PK);                                               \
    }
#define QS_VARS(OC, PK, S)                                                                         \
    QS_VAR(qs_none_##OC##S, OC, PR_ACT_NONE, false, PK)                                            \
    QS_VAR(qs_none_a2_##OC##S, OC, PR_ACT_NONE, true, PK)                                          \
    QS_VAR(qs_relu_##OC##S, OC, PR_ACT_RELU, false, PK)                                            \
    QS_VAR(qs_relu_a2_##OC##S, OC, PR_ACT_RELU, true, PK)                                          \
    QS_VAR(qs_clip_##OC##S, OC, PR_ACT_CLIP, false, PK)                                            \
    QS_VAR(qs_clip_a2_##OC##S, OC, PR_ACT_CLIP, true, PK)                                          \
    QS_VAR(qs_hsw_##OC##S, OC, PR_ACT_HARD_SWISH, false, PK)                                       \
    QS_VAR(qs_hsw_a2_##OC##S, OC, PR_ACT_HARD_SWISH, true, PK)
QS_VARS(8, false, )
QS_VARS(8, true, _pk)
#undef QS_VARS
#undef QS_VAR

/* [packs (qs_state.pk)][act: none, Relu, Clip, HardSwish][act2 Affine] */
static const qs_row_fn qs_fns[2][4][2] = {
    {{qs_none_8, qs_none_a2_8}, {qs_relu_8, qs_relu_a2_8}, {qs_clip_8, qs_clip_a2_8},
     {qs_hsw_8, qs_hsw_a2_8}},
    {{qs_none_8_pk, qs_none_a2_8_pk}, {qs_relu_8_pk, qs_relu_a2_8_pk},
     {qs_clip_8_pk, qs_clip_a2_8_pk}, {qs_hsw_8_pk, qs_hsw_a2_8_pk}}};

/* Task t: image t / nb, its band t % nb of B output rows (expanded rows
 * into Et, then the output rows). */
static QS_ISA void qs_task(const qs_state *s, const q1_c *c, const qs_geo *g, qs_row_fn fn,
                           const uint8_t *xd, uint8_t *yd, int64_t img, int64_t orow, int64_t nb,
                           int64_t B, int64_t t, int32_t *Et) {
    const int64_t n = t / nb, oy0 = t % nb * B, oy1 = g->OH - oy0 < B ? g->OH : oy0 + B;
    for (int64_t r = 0; r <= 2 * (oy1 - oy0); r++)
        qs_expand(s, g, xd + n * img, 2 * oy0 + r, Et + r * g->RW);
    for (int64_t oy = oy0; oy < oy1; oy++) fn(s, c, g, Et, oy - oy0, yd + (n * g->OH + oy) * orow);
}

/* Bands of B output rows (2 B + 1 expanded rows each, in a thread's share
 * of E: BW dwords), task t = image t / nb, band t % nb; nt threads (one
 * region, or none). */
static QS_ISA void qs_go(const qs_state *s, const qs_geo *gp, const uint8_t *xd, uint8_t *yd,
                         int64_t N, int32_t *E, int64_t B, size_t BW, int nt) {
    const qs_geo g = *gp;
    const qfc_state *q = s->q;
    const q1_c c = {q->sc, q->bi, NULL, NULL, 0, s->OC, 0, 0, q->ydt == PRECIS_UINT8,
                    PV_C(q->act.alpha), PV_C(q->act.beta), PV_C(q->act2.alpha),
                    PV_C(q->act2.beta), PV_C(q->inv), PV_C(q->lo), PV_C(q->hi), false, false};
    const int ak = q->act.kind == PR_ACT_RELU ? 1
                   : q->act.kind == PR_ACT_CLIP ? 2
                   : q->act.kind == PR_ACT_HARD_SWISH ? 3
                                                       : 0;
    const qs_row_fn fn = qs_fns[s->pk][ak][q->act2.kind == PR_ACT_AFFINE];
    const int64_t img = g.IH * g.IW * s->C, orow = g.OW * s->OC, nb = (g.OH + B - 1) / B;
    if (nt < 2) { /* no region: even a serial one costs ~0.3 us (NOTES.md) */
        for (int64_t t = 0; t < N * nb; t++) qs_task(s, &c, &g, fn, xd, yd, img, orow, nb, B, t, E);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t t = 0; t < N * nb; t++)
        qs_task(s, &c, &g, fn, xd, yd, img, orow, nb, B, t,
                E + (size_t)omp_get_thread_num() * BW);
}
#endif

static precis_status qs_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    const qs_state *s = state;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    pr_conv_geom geo;
    precis_status st = pr_cpu_q_check_io(s->q, k, s->C, s->OC, 3, 3, &geo);
    if (st) return st;
    if (geo.stride[0] != 2 || geo.stride[1] != 2 || geo.dil[0] != 1 || geo.dil[1] != 1 ||
        geo.pad_b[0] > 1 || geo.pad_b[1] > 1)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "qstem: geometry changed since prepare");
    if (Y->numel == 0) return PRECIS_OK;
#ifdef PR_CPU_X86
    const int64_t N = X->dims[0];
    qs_geo g = {X->dims[2], X->dims[3], geo.out[0], geo.out[1], geo.pad_b[0], geo.pad_b[1], 0,
                s->q->xdt == PRECIS_INT8 ? 0x80808080u : 0u};
    /* output row oy reads expanded rows 2 oy .. 2 oy + 2 (row r: input row
     * r - pt); columns: the 16-pixel steps read up to 2 * OW16 + 33, the
     * image fills pl .. pl + IW - 1 */
    const int64_t OW16 = (g.OW + 15) / 16 * 16;
    g.RW = (2 * OW16 + 34 + 15) / 16 * 16;
    if (g.RW < g.pl + g.IW) g.RW = (g.pl + g.IW + 15) / 16 * 16;
    int nt = x && x->num_threads > 0 ? x->num_threads : 1;
    if (Y->numel * 9 * s->C < 8 * PR_CPU_PAR_MIN) nt = 1;
    /* bands of B output rows whose expanded rows fit QS_BAND_BYTES; at
     * least nt bands in all */
    int64_t B = (QS_BAND_BYTES / (g.RW * 4) - 1) / 2;
    if (B < 1) B = 1;
    if (B > g.OH) B = g.OH;
    if (nt > N) {
        const int64_t per_img = (nt + N - 1) / N, b2 = (g.OH + per_img - 1) / per_img;
        if (b2 < B) B = b2;
    }
    const int64_t tasks = N * ((g.OH + B - 1) / B);
    if (tasks < nt) nt = (int)tasks;
    const size_t BW = (size_t)((2 * B + 1) * g.RW);
    int32_t *E = pr_cpu_scratch(x, (size_t)nt * BW * sizeof(int32_t));
    if (!E) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    qs_go(s, &g, X->data, Y->data, N, E, B, BW, nt);
    return PRECIS_OK;
#else
    return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "qstem needs x86 AVX512-VNNI");
#endif
}

static const char *qs_describe(void *state) {
    (void)state;
    return "qstem.avx512_vnni";
}

const pr_cpu_impl pr_cpu_impl_qstem = {
    .name = "qstem",
    .supports = qs_supports,
    .nhwc_ok = qs_nhwc_ok,
    .prepare = qs_prepare,
    .run = qs_run,
    .describe = qs_describe,
    .destroy = qs_destroy,
};

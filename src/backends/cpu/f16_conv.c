/* Conv / FusedConv on float16 NHWC activations (kernels_f16.h).
 *
 *   - depthwise (group == C == M): a direct kernel over output rows,
 *     vectorized over channels, float32 accumulation;
 *   - with AMX, one group, and channels that pad to 32 cheaply (not a 1x1
 *     stride-1 conv): a direct convolution, tiles loaded straight from a
 *     bf16 split of the padded input (f16_gemm.h's bf16x3 scheme);
 *   - everything else: one GEMM per group, rows = output pixels (N*OH*OW),
 *     columns = the group's output channels, K = KH*KW*Cg in (kh, kw, c)
 *     order. A 1x1 stride-1 unpadded conv reads X directly as A; other convs
 *     pack A by implicit im2col (f16_gemm's A packer), K-block by K-block,
 *     into the GEMM's per-thread scratch.
 * Weights (and bias) are converted and packed in prepare; NCHW activations
 * are declined (nhwc_ok says yes). */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/f16_gemm.h"
#include "backends/cpu/kernels_f16.h"
#include "ir/infer_conv.h"

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define T2 __attribute__((target("avx2,fma,f16c")))
#define AINL inline __attribute__((always_inline))

typedef struct conv_state {
    pr_f16_isa isa;
    int64_t C, M, group, Cg, Mg, KH, KW, K;
    bool dw;        /* direct depthwise kernel */
    bool amxd;      /* direct AMX convolution (group 1), else GEMM */
    int64_t cp32;   /* amxd: channels padded to 32; packed depth K = KH*KW*cp32 */
    bool fused;     /* FusedConv: Z may be input 3 */
    float *bpack;   /* group g at bpack + g * bstride */
    size_t bstride; /* floats per group */
    float *bias;    /* [M] (dw: [cpad]) or NULL */
    float *dww;     /* depthwise weights [KH*KW][cpad] */
    int64_t cpad;   /* C rounded up to 16 */
    pr_act act, act2;
    pr_f16_epi *epis; /* per group: bias offset */
    char desc[64];
} conv_state;

static bool is_float_init(const pr_tensor *t) {
    return t && (t->flags & PR_T_INIT) && t->data &&
           (t->dtype == PRECIS_FLOAT32 || t->dtype == PRECIS_FLOAT16) && t->rank >= 0 &&
           pr_numel(t->rank, t->dims) >= 0;
}

static bool conv_check(const pr_graph *g, const pr_node *n, bool layouts) {
    if (n->op != PR_OP_Conv && n->op != PR_OP_FusedConv) return false;
    if (pr_node_out(n, 0) < 0) return false;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *B = pr_node_tin(g, n, 2);
    const pr_tensor *Z = n->op == PR_OP_FusedConv ? pr_node_tin(g, n, 3) : NULL;
    const pr_tensor *Y = &g->tensors[pr_node_out(n, 0)];
    if (!X || !W || X->dtype != PRECIS_FLOAT16 || (X->flags & PR_T_INIT) || X->rank != 4)
        return false;
    /* the output's dtype is X's (unset in a graph not yet inferred) */
    if (Y->dtype != PRECIS_FLOAT16 && Y->dtype != PRECIS_UNDEFINED) return false;
    if (Y->rank != 4 && Y->rank != -1) return false;
    if (!is_float_init(W) || W->rank != 4) return false;
    for (int d = 0; d < 4; d++)
        if (!pr_dim_known(W->dims[d]) || W->dims[d] < 1) return false;
    int64_t group = pr_attr_int(n, "group", 1), M = W->dims[0];
    if (group < 1 || M % group) return false;
    if (pr_dim_known(X->dims[1]) && X->dims[1] != W->dims[1] * group) return false;
    if (B && (!is_float_init(B) || pr_numel(B->rank, B->dims) != M)) return false;
    if (Z && (Z->dtype != PRECIS_FLOAT16 || (Z->rank != 4 && Z->rank != -1))) return false;
    pr_act a;
    if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a)) return false;
    if (layouts) {
        if (X->layout != PR_LAYOUT_NHWC || Y->layout != PR_LAYOUT_NHWC) return false;
        if (Z && Z->layout != PR_LAYOUT_NHWC) return false;
    }
    return true;
}

static bool conv_supports(const pr_graph *g, const pr_node *n) { return conv_check(g, n, true); }
static bool conv_nhwc_ok(const pr_graph *g, const pr_node *n) { return conv_check(g, n, false); }

static int conv_inplace(const pr_graph *g, const pr_node *n) {
    (void)g;
    return n->op == PR_OP_FusedConv && pr_node_in(n, 3) >= 0 ? 3 : -1;
}

static void conv_destroy(void *p) {
    conv_state *s = p;
    if (!s) return;
    free(s->bpack);
    free(s->bias);
    free(s->dww);
    free(s->epis);
    free(s);
}

static void *alloc64(size_t bytes) {
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63 ? (bytes + 63) & ~(size_t)63 : 64);
}

static float *to_f32(const pr_tensor *t) {
    int64_t ne = pr_numel(t->rank, t->dims);
    float *f = malloc((size_t)(ne > 0 ? ne : 1) * sizeof(float));
    if (f) pr_ref_to_f32(t->data, t->dtype, ne, f);
    return f;
}

static precis_status conv_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                  void **state, pr_err *e) {
    (void)cfg;
    const pr_tensor *W = pr_node_tin(g, n, 1), *B = pr_node_tin(g, n, 2);
    conv_state *s = calloc(1, sizeof *s);
    float *wf = NULL, *tmp = NULL;
    if (!s) goto oom;
    s->isa = pr_f16_isa_best();
    s->fused = n->op == PR_OP_FusedConv;
    s->group = pr_attr_int(n, "group", 1);
    s->M = W->dims[0];
    s->Cg = W->dims[1];
    s->KH = W->dims[2];
    s->KW = W->dims[3];
    s->C = s->Cg * s->group;
    s->Mg = s->M / s->group;
    s->K = s->KH * s->KW * s->Cg;
    pr_act_from_node(n, "act", &s->act);
    pr_act_from_node(n, "act2", &s->act2);
    s->dw = s->group == s->C && s->M == s->C && s->KH <= 64;
    if (!(wf = to_f32(W))) goto oom;
    const int64_t taps = s->KH * s->KW;
    if (s->dw) {
        s->cpad = (s->C + 15) / 16 * 16;
        s->dww = alloc64((size_t)(taps * s->cpad) * sizeof(float));
        s->bias = alloc64((size_t)s->cpad * sizeof(float));
        if (!s->dww || !s->bias) goto oom;
        memset(s->dww, 0, (size_t)(taps * s->cpad) * sizeof(float));
        memset(s->bias, 0, (size_t)s->cpad * sizeof(float));
        for (int64_t c = 0; c < s->C; c++)
            for (int64_t t = 0; t < taps; t++) s->dww[t * s->cpad + c] = wf[c * taps + t];
        if (B) {
            float *bf = to_f32(B);
            if (!bf) goto oom;
            memcpy(s->bias, bf, (size_t)s->C * sizeof(float));
            free(bf);
        }
        snprintf(s->desc, sizeof s->desc, "f16.conv:dw:%s", pr_f16_isa_name(s->isa));
    } else {
        /* direct AMX convolution: one group, channels padding to 32 costing
         * at most a quarter, and not a plain 1x1 stride-1 GEMM */
        const int64_t *st = NULL;
        int nst = pr_attr_ints(n, "strides", &st);
        bool unit = true;
        for (int i = 0; i < nst; i++) unit = unit && st[i] == 1;
        s->cp32 = (s->Cg + 31) / 32 * 32;
        s->amxd = s->isa == PR_F16_ISA_AMX && s->group == 1 && s->cp32 * 4 <= s->Cg * 5 &&
                  !(s->KH == 1 && s->KW == 1 && unit) && s->cp32 * taps <= (int64_t)1 << 20;
        const int64_t cs = s->amxd ? s->cp32 : s->Cg; /* channel stride of K */
        if (s->amxd) s->K = taps * s->cp32;
        s->bstride = pr_f16_bpack_floats(s->isa, s->K, s->Mg);
        s->bpack = alloc64(s->bstride * (size_t)s->group * sizeof(float));
        tmp = calloc((size_t)(s->K * s->Mg > 0 ? s->K * s->Mg : 1), sizeof(float));
        s->epis = calloc((size_t)s->group, sizeof *s->epis);
        if (!s->bpack || !tmp || !s->epis) goto oom;
        for (int64_t gi = 0; gi < s->group; gi++) {
            /* tmp[k][m], k = (kh*KW + kw)*cs + c */
            for (int64_t m = 0; m < s->Mg; m++)
                for (int64_t c = 0; c < s->Cg; c++)
                    for (int64_t t = 0; t < taps; t++)
                        tmp[(t * cs + c) * s->Mg + m] =
                            wf[((gi * s->Mg + m) * s->Cg + c) * taps + t];
            pr_f16_pack_b_f32(s->isa, tmp, s->Mg, 1, s->K, s->Mg,
                              s->bpack + (size_t)gi * s->bstride);
        }
        if (B && !(s->bias = to_f32(B))) goto oom;
        for (int64_t gi = 0; gi < s->group; gi++) {
            pr_f16_epi *ep = &s->epis[gi];
            ep->alpha = 1.0f;
            ep->bias = s->bias ? s->bias + gi * s->Mg : NULL;
            ep->act = s->act;
            ep->act2 = s->act2;
        }
        bool direct = s->KH == 1 && s->KW == 1;
        snprintf(s->desc, sizeof s->desc, "f16.conv:%s:%s",
                 s->amxd  ? "direct"
                 : direct ? "1x1"
                          : "im2col",
                 pr_f16_isa_name(s->isa));
    }
    free(wf);
    free(tmp);
    *state = s;
    return PRECIS_OK;
oom:
    free(wf);
    free(tmp);
    conv_destroy(s);
    return pr_errf(e, PRECIS_ERR_OOM, "node '%s' (%s): out of memory", n->name, n->op_type);
}

/* ------------------------------------------------------------ geometry */

typedef struct geo {
    int64_t N, C, H, W, OH, OW, sh, sw, dh, dw, ph, pw;
} geo;

/* ------------------------------------------------------------ im2col packer */

typedef struct im2col_ctx {
    const uint16_t *x;
    geo g;
    int64_t KW, Cg, c0;
} im2col_ctx;

static void im2col_pack(const void *vctx, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                        uint16_t *dst, int64_t ldd) {
    const im2col_ctx *c = vctx;
    const geo *g = &c->g;
    const int64_t ohw = g->OH * g->OW, Cg = c->Cg, KW = c->KW, end = k0 + kc;
    const bool contig = g->dw == 1 && Cg == g->C;
    for (int64_t i = 0; i < mc; i++) {
        const int64_t m = m0 + i, nb = m / ohw, r = m % ohw, oh = r / g->OW, ow = r % g->OW;
        uint16_t *d = dst + i * ldd;
        int64_t k = k0;
        while (k < end) {
            const int64_t tap = k / Cg, ci = k % Cg, kh = tap / KW, kw = tap % KW;
            const int64_t ih = oh * g->sh - g->ph + kh * g->dh;
            const int64_t iw = ow * g->sw - g->pw + kw * g->dw;
            int64_t len;
            if (ih < 0 || ih >= g->H) {
                len = (KW - kw) * Cg - ci; /* the rest of this kernel row */
                if (len > end - k) len = end - k;
                memset(d + (k - k0), 0, (size_t)len * sizeof(uint16_t));
            } else if (iw < 0 || iw >= g->W) {
                len = Cg - ci;
                if (len > end - k) len = end - k;
                memset(d + (k - k0), 0, (size_t)len * sizeof(uint16_t));
            } else {
                len = Cg - ci;
                if (contig) { /* following taps of the row are the next pixels */
                    int64_t kwe = kw + 1;
                    while (kwe < KW && iw + (kwe - kw) < g->W) kwe++;
                    len = (kwe - kw) * Cg - ci;
                }
                if (len > end - k) len = end - k;
                memcpy(d + (k - k0), c->x + ((nb * g->H + ih) * g->W + iw) * g->C + c->c0 + ci,
                       (size_t)len * sizeof(uint16_t));
            }
            k += len;
        }
    }
}

/* ------------------------------------------------------------ depthwise */
/* Per output row (n, oh): the KH input rows it reads are converted to
 * float32 into a per-thread buffer laid out [KH][Wp][cpad], zero-padded
 * left/right and in channels past C (padding written once per run), so that
 * every tap is a plain aligned load; rows outside the image are skipped.
 * Four output columns at a time (independent FMA chains). */

typedef struct dw_args {
    const conv_state *s;
    const uint16_t *x;
    geo g;
    int64_t wp; /* padded row width, pixels */
} dw_args;

/* rows[kh] = converted input row of tap row kh, or NULL outside the image.
 * The buffer holds KH rows; tag[slot] is the input row (n*H + ih) a slot
 * holds (-1: none), so that rows shared with the previous output row are
 * not converted again. */
static void dw_rows(pr_f16_isa isa, const dw_args *a, int64_t n, int64_t oh, float *buf,
                    int64_t *tag, const float **rows) {
    const conv_state *s = a->s;
    const geo *g = &a->g;
    const int64_t KH = s->KH, slot_f = a->wp * s->cpad;
    int64_t want[64];
    for (int64_t kh = 0; kh < KH; kh++) {
        const int64_t ih = oh * g->sh - g->ph + kh * g->dh;
        want[kh] = ih < 0 || ih >= g->H ? -1 : n * g->H + ih;
        rows[kh] = NULL;
        for (int64_t q = 0; q < KH && want[kh] >= 0; q++)
            if (tag[q] == want[kh]) rows[kh] = buf + q * slot_f;
    }
    for (int64_t kh = 0; kh < KH; kh++) {
        if (want[kh] < 0 || rows[kh]) continue;
        int64_t q = 0; /* a slot no tap of this row needs */
        for (; q < KH; q++) {
            bool used = false;
            for (int64_t t = 0; t < KH && !used; t++) used = tag[q] >= 0 && tag[q] == want[t];
            if (!used) break;
        }
        float *r = buf + q * slot_f + g->pw * s->cpad;
        const uint16_t *xr = a->x + want[kh] * g->W * g->C;
        if (s->cpad == g->C) {
            pr_f16_to_f32_n(isa, xr, r, g->W * g->C);
        } else {
            for (int64_t iw = 0; iw < g->W; iw++)
                pr_f16_to_f32_n(isa, xr + iw * g->C, r + iw * s->cpad, g->C);
        }
        tag[q] = want[kh];
        rows[kh] = buf + q * slot_f;
        for (int64_t t = kh + 1; t < KH; t++) /* the same input row twice (dilation 0 is invalid) */
            if (want[t] == want[kh]) rows[t] = rows[kh];
    }
}

T512 static void dw_row_512(const dw_args *a, const float *const *rows, float *out) {
    const conv_state *s = a->s;
    const geo *g = &a->g;
    const int64_t C = g->C, cp = s->cpad, KW = s->KW, OW = g->OW;
    const int64_t xs = g->sw * cp, ks = g->dw * cp;
    for (int64_t c = 0; c < C; c += 16) {
        const __mmask16 m = C - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (C - c)) - 1);
        const __m512 bias = _mm512_load_ps(s->bias + c);
        int64_t ow = 0;
        for (; ow + 4 <= OW; ow += 4) {
            __m512 a0 = bias, a1 = bias, a2 = bias, a3 = bias;
            for (int64_t kh = 0; kh < s->KH; kh++) {
                if (!rows[kh]) continue;
                const float *xp = rows[kh] + ow * xs + c;
                const float *wr = s->dww + kh * KW * cp + c;
                for (int64_t kw = 0; kw < KW; kw++, xp += ks) {
                    const __m512 w = _mm512_load_ps(wr + kw * cp);
                    a0 = _mm512_fmadd_ps(_mm512_load_ps(xp), w, a0);
                    a1 = _mm512_fmadd_ps(_mm512_load_ps(xp + xs), w, a1);
                    a2 = _mm512_fmadd_ps(_mm512_load_ps(xp + 2 * xs), w, a2);
                    a3 = _mm512_fmadd_ps(_mm512_load_ps(xp + 3 * xs), w, a3);
                }
            }
            _mm512_mask_storeu_ps(out + ow * C + c, m, a0);
            _mm512_mask_storeu_ps(out + (ow + 1) * C + c, m, a1);
            _mm512_mask_storeu_ps(out + (ow + 2) * C + c, m, a2);
            _mm512_mask_storeu_ps(out + (ow + 3) * C + c, m, a3);
        }
        for (; ow < OW; ow++) {
            __m512 acc = bias;
            for (int64_t kh = 0; kh < s->KH; kh++) {
                if (!rows[kh]) continue;
                const float *xp = rows[kh] + ow * xs + c;
                const float *wr = s->dww + kh * KW * cp + c;
                for (int64_t kw = 0; kw < KW; kw++, xp += ks)
                    acc = _mm512_fmadd_ps(_mm512_load_ps(xp), _mm512_load_ps(wr + kw * cp), acc);
            }
            _mm512_mask_storeu_ps(out + ow * C + c, m, acc);
        }
    }
}

T2 static AINL void st8(float *p, __m256 v, int64_t nc) {
    if (nc >= 8) {
        _mm256_storeu_ps(p, v);
        return;
    }
    float t[8];
    _mm256_storeu_ps(t, v);
    memcpy(p, t, (size_t)nc * sizeof(float));
}

T2 static void dw_row_2(const dw_args *a, const float *const *rows, float *out) {
    const conv_state *s = a->s;
    const geo *g = &a->g;
    const int64_t C = g->C, cp = s->cpad, KW = s->KW, OW = g->OW;
    const int64_t xs = g->sw * cp, ks = g->dw * cp;
    for (int64_t c = 0; c < C; c += 8) {
        const int64_t nc = C - c;
        const __m256 bias = _mm256_load_ps(s->bias + c);
        int64_t ow = 0;
        for (; ow + 4 <= OW; ow += 4) {
            __m256 a0 = bias, a1 = bias, a2 = bias, a3 = bias;
            for (int64_t kh = 0; kh < s->KH; kh++) {
                if (!rows[kh]) continue;
                const float *xp = rows[kh] + ow * xs + c;
                const float *wr = s->dww + kh * KW * cp + c;
                for (int64_t kw = 0; kw < KW; kw++, xp += ks) {
                    const __m256 w = _mm256_load_ps(wr + kw * cp);
                    a0 = _mm256_fmadd_ps(_mm256_load_ps(xp), w, a0);
                    a1 = _mm256_fmadd_ps(_mm256_load_ps(xp + xs), w, a1);
                    a2 = _mm256_fmadd_ps(_mm256_load_ps(xp + 2 * xs), w, a2);
                    a3 = _mm256_fmadd_ps(_mm256_load_ps(xp + 3 * xs), w, a3);
                }
            }
            st8(out + ow * C + c, a0, nc);
            st8(out + (ow + 1) * C + c, a1, nc);
            st8(out + (ow + 2) * C + c, a2, nc);
            st8(out + (ow + 3) * C + c, a3, nc);
        }
        for (; ow < OW; ow++) {
            __m256 acc = bias;
            for (int64_t kh = 0; kh < s->KH; kh++) {
                if (!rows[kh]) continue;
                const float *xp = rows[kh] + ow * xs + c;
                const float *wr = s->dww + kh * KW * cp + c;
                for (int64_t kw = 0; kw < KW; kw++, xp += ks)
                    acc = _mm256_fmadd_ps(_mm256_load_ps(xp), _mm256_load_ps(wr + kw * cp), acc);
            }
            st8(out + ow * C + c, acc, nc);
        }
    }
}

static void dw_row_s(const dw_args *a, const float *const *rows, float *out) {
    const conv_state *s = a->s;
    const geo *g = &a->g;
    const int64_t C = g->C, cp = s->cpad, KW = s->KW;
    for (int64_t ow = 0; ow < g->OW; ow++) {
        float *r = out + ow * C;
        for (int64_t c = 0; c < C; c++) r[c] = s->bias[c];
        for (int64_t kh = 0; kh < s->KH; kh++) {
            if (!rows[kh]) continue;
            for (int64_t kw = 0; kw < KW; kw++) {
                const float *xp = rows[kh] + (ow * g->sw + kw * g->dw) * cp;
                const float *wp = s->dww + (kh * KW + kw) * cp;
                for (int64_t c = 0; c < C; c++) r[c] += xp[c] * wp[c];
            }
        }
    }
}

static precis_status run_dw(conv_state *s, pr_kernel *k, pr_cpu_exec *x, const geo *g,
                            const uint16_t *xd, uint16_t *yd, const uint16_t *zd) {
    const int nt = x->num_threads > 0 ? x->num_threads : 1;
    /* padded width: the left pad, the image, and whatever the last tap reaches */
    int64_t wp = g->pw + g->W, reach = (g->OW - 1) * g->sw + (s->KW - 1) * g->dw + 1;
    if (reach > wp) wp = reach;
    const size_t rowsf = (size_t)(s->KH * wp * s->cpad);
    const size_t outf = (size_t)((g->OW * g->C + 15) / 16 * 16);
    const size_t per = rowsf + outf;
    float *buf = pr_cpu_scratch(x, (size_t)nt * per * sizeof(float));
    if (!buf) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory (scratch)");
    const dw_args a = {s, xd, *g, wp};
    const pr_f16_epi epi = {1.0f, NULL, 0.0f, s->act, s->act2};
    const int64_t nrows = g->N * g->OH, rowlen = g->OW * g->C;
    const int ntu = nrows > 1 ? nt : 1;
#pragma omp parallel num_threads(ntu) if (ntu > 1)
    {
        float *rb = buf + (size_t)omp_get_thread_num() * per, *out = rb + rowsf;
        memset(rb, 0, rowsf * sizeof(float));
        const float *rows[64];
        int64_t tag[64];
        for (int q = 0; q < 64; q++) tag[q] = -1;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < nrows; r++) {
            const int64_t n = r / g->OH, oh = r % g->OH;
            dw_rows(s->isa, &a, n, oh, rb, tag, rows);
            if (s->isa >= PR_F16_ISA_AVX512) dw_row_512(&a, rows, out);
            else if (s->isa == PR_F16_ISA_AVX2) dw_row_2(&a, rows, out);
            else dw_row_s(&a, rows, out);
            pr_f16_epilogue_row(s->isa, &epi, out, rowlen, 0, zd ? zd + r * rowlen : NULL,
                                yd + r * rowlen);
        }
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ direct AMX */
/* X is split once into bf16 high/low images, zero-padded to [N][Hp][Wp][cp32]
 * (the conv's padding, channels to 32, and columns the last row tiles
 * reach), so that for a tap (kh, kw) the A rows of 16 consecutive output
 * columns are 16 pixels at a fixed stride: tiles load straight from the
 * image, no im2col. A unit is (n, oh, 32 output columns) x every panel. */

static size_t align64(size_t b) { return (b + 63) & ~(size_t)63; }

static precis_status run_amx_direct(conv_state *s, pr_kernel *k, pr_cpu_exec *x, const geo *g,
                                    const uint16_t *xd, uint16_t *yd, const uint16_t *zd) {
    const int nt = x->num_threads > 0 ? x->num_threads : 1;
    const int64_t Cp = s->cp32, OWr = (g->OW + 15) / 16 * 16;
    int64_t Hp = g->H + g->ph, Wp = g->W + g->pw;
    const int64_t hr = (g->OH - 1) * g->sh + (s->KH - 1) * g->dh + 1;
    const int64_t wr = (OWr - 1) * g->sw + (s->KW - 1) * g->dw + 1;
    if (hr > Hp) Hp = hr;
    if (wr > Wp) Wp = wr;
    const int64_t img = g->N * Hp * Wp * Cp, nsteps = s->KH * s->KW * (Cp / 32);
    const size_t ib = align64((size_t)img * sizeof(uint16_t));
    const size_t ob = align64((size_t)nsteps * sizeof(int64_t));
    const size_t cb = 32 * 32 * sizeof(float);
    char *mem = pr_cpu_scratch(x, 2 * ib + ob + (size_t)nt * cb);
    if (!mem) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory (scratch)");
    uint16_t *hi = (uint16_t *)mem, *lo = (uint16_t *)(mem + ib);
    int64_t *aoff = (int64_t *)(mem + 2 * ib);
    float *cbuf = (float *)(mem + 2 * ib + ob);
    for (int64_t kh = 0, st = 0; kh < s->KH; kh++)
        for (int64_t kw = 0; kw < s->KW; kw++)
            for (int64_t c = 0; c < Cp; c += 32)
                aoff[st++] = (kh * g->dh * Wp + kw * g->dw) * Cp + c;
    /* units: panel group (B panels of at most ~1 MiB together, so that they
     * stay in L2 across units) x pixel block, group-major */
    const int64_t np = (s->M + PR_F16_NR - 1) / PR_F16_NR;
    const int64_t pfl = (int64_t)pr_f16_bpack_panel(s->isa, s->K, 1);
    int64_t pg = ((int64_t)1 << 18) / (pfl > 0 ? pfl : 1);
    if (pg < 1) pg = 1;
    if (pg > np) pg = np;
    const int64_t ngr = (np + pg - 1) / pg;
    const int64_t prow = g->N * Hp, owb = (g->OW + 31) / 32, npb = g->N * g->OH * owb;
    const int64_t units = ngr * npb;
    const int ntu = units > 1 ? nt : 1;
#pragma omp parallel num_threads(ntu) if (ntu > 1)
    {
        float *C = cbuf + (size_t)omp_get_thread_num() * 32 * 32;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < prow; r++) { /* padded image rows */
            const int64_t n = r / Hp, ih = r % Hp - g->ph;
            uint16_t *h = hi + r * Wp * Cp, *l = lo + r * Wp * Cp;
            if (ih < 0 || ih >= g->H) {
                memset(h, 0, (size_t)(Wp * Cp) * sizeof(uint16_t));
                memset(l, 0, (size_t)(Wp * Cp) * sizeof(uint16_t));
                continue;
            }
            const int64_t left = g->pw * Cp, right = (Wp - g->pw - g->W) * Cp;
            memset(h, 0, (size_t)left * sizeof(uint16_t));
            memset(l, 0, (size_t)left * sizeof(uint16_t));
            memset(h + left + g->W * Cp, 0, (size_t)right * sizeof(uint16_t));
            memset(l + left + g->W * Cp, 0, (size_t)right * sizeof(uint16_t));
            pr_f16_amx_split(xd + (n * g->H + ih) * g->W * g->C, g->C, g->W, g->C, Cp, h + left,
                             l + left, Cp);
        }
        pr_f16_amx_begin();
#pragma omp for schedule(dynamic, 1)
        for (int64_t u = 0; u < units; u++) {
            const int64_t gr = u / npb, b = u % npb;
            const int64_t n = b / (g->OH * owb), oh = b / owb % g->OH, ow0 = b % owb * 32;
            const int64_t pa = gr * pg, pe = pa + pg < np ? pa + pg : np;
            const int64_t rows = g->OW - ow0 < 32 ? g->OW - ow0 : 32;
            const int64_t base = ((n * Hp + oh * g->sh) * Wp + ow0 * g->sw) * Cp;
            const int64_t pix = (n * g->OH + oh) * g->OW + ow0;
            for (int64_t p = pa; p < pe; p++) {
                const int64_t col0 = p * PR_F16_NR;
                const int64_t ncol = s->M - col0 < PR_F16_NR ? s->M - col0 : PR_F16_NR;
                pr_f16_amx_block(hi + base, lo + base, aoff, nsteps, g->sw * Cp, rows > 16 ? 2 : 1,
                                 s->bpack + pr_f16_bpack_panel(s->isa, s->K, p), s->K, C, 32);
                for (int64_t i = 0; i < rows; i++)
                    pr_f16_epilogue_row(s->isa, &s->epis[0], C + i * 32, ncol, col0,
                                        zd ? zd + (pix + i) * s->M + col0 : NULL,
                                        yd + (pix + i) * s->M + col0);
            }
        }
        pr_f16_amx_end();
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ run */

static precis_status conv_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    conv_state *s = state;
    const pr_buf *X = k->in[0];
    const pr_buf *Z = s->fused ? pr_kin(k, 3) : NULL;
    pr_buf *Y = k->out[0];
    if (X->rank != 4 || X->dtype != PRECIS_FLOAT16 || Y->dtype != PRECIS_FLOAT16 || Y->rank != 4)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "f16 conv: unexpected input/output");
    if (X->dims[1] != s->C)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "input has %lld channels, weights expect %lld",
                          (long long)X->dims[1], (long long)s->C);
    pr_conv_geom cg;
    const int64_t wk[2] = {s->KH, s->KW};
    precis_status st =
        pr_conv_geom_init(k->node, PR_CONV_KIND_CONV, 2, X->dims + 2, wk, k->err, &cg);
    if (st) return st;
    if (!cg.pads_known || !pr_dim_known(cg.out[0]) || !pr_dim_known(cg.out[1]))
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "window geometry not resolved");
    geo g = {X->dims[0],   s->C,         X->dims[2], X->dims[3], cg.out[0],   cg.out[1],
             cg.stride[0], cg.stride[1], cg.dil[0],  cg.dil[1],  cg.pad_b[0], cg.pad_b[1]};
    if (Y->dims[0] != g.N || Y->dims[1] != s->M || Y->dims[2] != g.OH || Y->dims[3] != g.OW)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output buffer shape does not match");
    if (Z && (Z->numel != Y->numel || Z->dtype != PRECIS_FLOAT16))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual does not match the output");
    if (Y->numel == 0) return PRECIS_OK;
    const uint16_t *xd = X->data, *zd = Z ? Z->data : NULL;
    uint16_t *yd = Y->data;
    if (s->dw) return run_dw(s, k, x, &g, xd, yd, zd);
    if (s->amxd) return run_amx_direct(s, k, x, &g, xd, yd, zd);

    const int nt = x->num_threads > 0 ? x->num_threads : 1;
    const int ng = (int)s->group;
    const size_t jb = align64((size_t)ng * sizeof(pr_f16_gemm_job));
    const size_t cb = align64((size_t)ng * sizeof(im2col_ctx));
    const size_t gb = pr_f16_gemm_scratch_size(s->isa, ng, nt);
    char *mem = pr_cpu_scratch(x, jb + cb + gb);
    if (!mem) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory (scratch)");
    pr_f16_gemm_job *jobs = (pr_f16_gemm_job *)mem;
    im2col_ctx *ctx = (im2col_ctx *)(mem + jb);
    const bool direct = s->KH == 1 && s->KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 &&
                        g.pw == 0 && cg.pad_e[0] == 0 && cg.pad_e[1] == 0;
    for (int gi = 0; gi < ng; gi++) {
        pr_f16_gemm_job *j = &jobs[gi];
        memset(j, 0, sizeof *j);
        j->M = g.N * g.OH * g.OW;
        j->N = s->Mg;
        j->K = s->K;
        if (direct) {
            j->a = xd + gi * s->Cg;
            j->lda = s->C;
        } else {
            ctx[gi] = (im2col_ctx){xd, g, s->KW, s->Cg, gi * s->Cg};
            j->pack_a = im2col_pack;
            j->pack_ctx = &ctx[gi];
        }
        j->b = s->bpack + (size_t)gi * s->bstride;
        j->c = yd + gi * s->Mg;
        j->ldc = s->M;
        j->z = zd ? zd + gi * s->Mg : NULL;
        j->ldz = s->M;
        j->epi = &s->epis[gi];
    }
    pr_f16_gemm_run(s->isa, jobs, ng, nt, mem + jb + cb);
    return PRECIS_OK;
}

static const char *conv_describe(void *state) { return ((conv_state *)state)->desc; }

const pr_cpu_impl pr_cpu_impl_f16_conv = {
    .name = "f16.conv",
    .supports = conv_supports,
    .nhwc_ok = conv_nhwc_ok,
    .inplace_input = conv_inplace,
    .prepare = conv_prepare,
    .run = conv_run,
    .describe = conv_describe,
    .destroy = conv_destroy,
};

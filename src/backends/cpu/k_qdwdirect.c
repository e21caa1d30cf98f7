/* The depthwise INT8 convolution's direct path (k_qdwconv.h): uint8 src of
 * 8, 16 or 32 channels, int8/uint8 out with a fused epilogue, images of <=
 * QDW_DIRECT_MAX_PIX pixels (PP-OCR cls's ReLU depthwise layers of 8 and 32
 * channels, which the quad layout of k_qdwconv.c wastes most lanes on and
 * oneDNN's brdgmm_dw runs at ~1x FP32).
 *
 * The rows an output band reads are converted once to float (byte -> int32
 * -> float: exact) with zero columns for the padding, pixel stride C. At
 * column stride 1 an output row's values (ow, c) and each tap's inputs are
 * consecutive floats, so the row runs as vectors of 16 values with the
 * weights in lcm(C, 16) / 16 patterns (dd_flat: no lane wasted for 8 or 24
 * channels); other strides per pixel and 16 channels (dd_row). Every
 * product (|x| <= 255, |w| <= 128) and every partial sum (<= 16 x 16 x 255
 * x 128 < 2^24) is an integer a float holds exactly, so the sum equals the
 * int32 sum of the other paths whatever the order, and the epilogue is
 * qdw_q's: fmadd(sum, x_scale * w_scale, B), act, act2 (times 1 / y_scale),
 * clamp, round half to even: the same bytes.
 *
 * Measured (PP-OCR cls b1, 1 thread, per-step minima, against brdgmm_dw):
 * 8 channels 3x3 stride 2x1 at 24x96 4.3 -> 2.5 us, 32 channels 3x3 at 6x96
 * 4.0 -> 3.85 us; 24 channels (a half-empty second vector) 4.2 -> 5.1 us:
 * declined. The FMAs cost what FP32's do (16 multiply-adds per op) plus the
 * conversion and the requantization: this path cannot reach 2x FP32, it only
 * removes oneDNN's call overhead.
 *
 * 3x3 kernels at row dilation 1 (VNNI): the 3 rows an output row reads as
 * one row of dwords (dd_convert3: a kernel column's 3 taps a dword, one
 * vpdpbusd a column) rather than each input row's 3 columns (dd_convert4:
 * one a kernel row): one conversion an output row instead of one an input
 * row, half the conversions at row stride 2 (cls b8 t1, 1 thread: 24 ch
 * stride 2x1 at 12x96 33.1 -> 21.2 us, the first block's 8 ch 2x1 at 24x96
 * 54 -> 45 with its other members, 32 ch at 6x96 30.2 -> 26.4; the same
 * bytes). PRECIS_QDW_ROWS3=0 (read at prepare): dd_convert4's rows.
 *
 * Threads: images split over them; at batch 1 the output rows, when the
 * layer has at least PR_CPU_PAR_MIN multiply-adds per thread. Larger images
 * run on the dnnl.qconv state (s->big), as q1x1 does; a block (qblock)
 * refuses such a state (pr_qdw_block_ok). PRECIS_QDW_DIRECT=0 leaves these
 * layers to dnnl.qconv (A/B timing). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/k_qdwconv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

/* PRECIS_QDW_DIRECT_BIG=0: images over QDW_DIRECT_MAX_PIX on dnnl.qconv (the
 * state keeps it), as before session 12 (A/B timing). */
bool pr_qdw_direct_big(void) {
    static int on = -1;
    return pr_cpu_switch_on("PRECIS_QDW_DIRECT_BIG", &on);
}

bool pr_qdw_direct_ok(const pr_graph *g, const pr_node *n) {
    const char *env = getenv("PRECIS_QDW_DIRECT");
    if (env && !strcmp(env, "0")) return false;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1);
    /* 8, 16, 24 or 32 channels; 24 only at column stride 1 (dd_flat: per
     * pixel its second vector is half empty, cls's 24-channel layer ran 4.2
     * -> 5.1 us so) */
    if (!X || !W || X->dtype != PRECIS_UINT8 || W->rank != 4 ||
        (W->dims[0] != 8 && W->dims[0] != 16 && W->dims[0] != 24 && W->dims[0] != 32))
        return false;
    if (W->dims[0] == 24) {
        const int64_t *sv;
        if (pr_attr_ints(n, "strides", &sv) == 2 && sv[1] != 1) return false;
    }
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
    free(s->dwq);
    free(s->dwt);
    s->dwq = s->dwt = NULL;
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
    /* lcm(C, 16) lanes: 16 for 8 and 16 channels, 32 for 32, 48 for 24 */
    const int64_t ws_ = s->C == 24 ? 48 : s->C == 32 ? 32 : 16, KK = s->KH * s->KW;
    s->Cv = ws_;
    s->dwf = aligned_alloc(64, (size_t)(KK * ws_) * sizeof(float));
    s->dsc = aligned_alloc(64, (size_t)ws_ * sizeof(float));
    s->dbi = aligned_alloc(64, (size_t)ws_ * sizeof(float));
    if (!s->dwf || !s->dsc || !s->dbi) return PRECIS_ERR_OOM;
    memset(s->dwf, 0, (size_t)(KK * ws_) * sizeof(float));
    /* lane l holds channel l % C (dd_flat's patterns; dd_row masks the
     * lanes past C) */
    for (int64_t l = 0; l < ws_; l++) {
        const int64_t c = l % s->C;
        const bool real = c < s->C, zero = real && ws[c] == 0.0f; /* scale 1: bias exact */
        s->dsc[l] = !real ? 0.0f : zero ? 1.0f : xs * ws[c];
        s->dbi[l] = real && bv ? bv[c] : 0.0f;
        if (!real || zero) continue;
        for (int64_t t = 0; t < KK; t++) s->dwf[t * ws_ + l] = (float)w[c * KK + t];
    }
    /* 3-column kernels: the weights of a kernel row as the bytes of a dword
     * for vpdpbusd (dd_flat4) */
    if (s->KW == 3 && pr_cpu_use_vnni("PRECIS_QDW_DIRECT_VNNI")) {
        s->dwq = aligned_alloc(64, (size_t)(s->KH * ws_) * sizeof(int32_t));
        if (!s->dwq) return PRECIS_ERR_OOM;
        memset(s->dwq, 0, (size_t)(s->KH * ws_) * sizeof(int32_t));
        for (int64_t l = 0; l < ws_; l++) {
            const int64_t c = l % s->C;
            if (ws[c] == 0.0f) continue;
            for (int64_t kh = 0; kh < s->KH; kh++) {
                uint32_t v = 0;
                for (int64_t kw = 0; kw < 3; kw++)
                    v |= (uint32_t)(uint8_t)w[c * KK + kh * 3 + kw] << (8 * kw);
                s->dwq[kh * ws_ + l] = (int32_t)v;
            }
        }
    }
    /* 3x3 kernels: the weights of a kernel column as the bytes of a dword
     * (dd_convert3 / dd_flat4's T3); PRECIS_QDW_ROWS3=0: dwq's rows only */
    const char *r3 = getenv("PRECIS_QDW_ROWS3");
    if (s->dwq && s->KH == 3 && !(r3 && !strcmp(r3, "0"))) {
        s->dwt = aligned_alloc(64, (size_t)(3 * ws_) * sizeof(int32_t));
        if (!s->dwt) return PRECIS_ERR_OOM;
        memset(s->dwt, 0, (size_t)(3 * ws_) * sizeof(int32_t));
        for (int64_t l = 0; l < ws_; l++) {
            const int64_t c = l % s->C;
            if (ws[c] == 0.0f) continue;
            for (int64_t kw = 0; kw < 3; kw++) {
                uint32_t v = 0;
                for (int64_t kh = 0; kh < 3; kh++)
                    v |= (uint32_t)(uint8_t)w[c * KK + kh * 3 + kw] << (8 * kh);
                s->dwt[kw * ws_ + l] = (int32_t)v;
            }
        }
    }
    /* larger images run here in bands of output rows (dd_band_rows); with
     * PRECIS_QDW_DIRECT_BIG=0 on oneDNN (if it takes the node) */
    if (!pr_qdw_direct_big() && pr_cpu_impl_dnnl_qconv.supports(g, n)) {
        pr_err e2 = {0};
        if (pr_cpu_impl_dnnl_qconv.prepare(g, n, cfg, &s->big, &e2)) s->big = NULL;
    }
    return PRECIS_OK;
}

/* Float bytes of the rows a band of output rows reads, for images over
 * QDW_DIRECT_MAX_PIX (a quarter of Zen 5's 1 MB L2 per core). */
#define DD_BAND_BYTES ((int64_t)256 * 1024)

#ifdef PR_CPU_X86
#define PR_DD __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

enum { G_IH, G_IW, G_OH, G_OW, G_SH, G_SW, G_DH, G_DW, G_PT, G_PL };

typedef struct dd_ep {
    __m512 alo, ahi, a2a, a2b, lo, hi;
    int ak; /* 0 none, 1 clip (Relu too), 2 HardSwish */
    bool aff;
} dd_ep;

/* RL: Relu or Clip [0, b] into uint8, no act2: max(f, 0) * inv, then only
 * the upper clamp can bite (e->hi: min(hi, b * inv), dd_rows; the same
 * bytes as the general form, whose other steps change nothing here).
 * RL 2: for the saturating packs' stores (DD_PK4) only, without the max:
 * a negative f rounds to 0 or below, which packus makes 0 (k_qdwconv.h
 * QDW_SAT_*; PRECIS_QACT_SAT=0: RL 1). */
static inline __attribute__((always_inline)) PR_DD __m512i dd_q(__m512 acc, __m512 sc, __m512 bi,
                                                               const dd_ep *e, int RL) {
    __m512 f = _mm512_fmadd_ps(acc, sc, bi);
    if (RL == 2)
        return _mm512_cvt_roundps_epi32(_mm512_min_ps(_mm512_mul_ps(f, e->a2a), e->hi),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (RL) {
        f = _mm512_mul_ps(_mm512_max_ps(f, _mm512_setzero_ps()), e->a2a);
        return _mm512_cvt_roundps_epi32(_mm512_min_ps(f, e->hi),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    if (e->ak == 1) f = _mm512_min_ps(_mm512_max_ps(f, e->alo), e->ahi);
    if (e->ak == 2) {
        __m512 v = _mm512_fmadd_ps(f, PV_C(1.0f / 6.0f), PV_C(0.5f));
        f = _mm512_mul_ps(f, _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), PV_C(1.0f)));
    }
    f = e->aff ? _mm512_fmadd_ps(f, e->a2a, e->a2b) : _mm512_mul_ps(f, e->a2a);
    f = _mm512_min_ps(_mm512_max_ps(f, e->lo), e->hi);
    return _mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* The rows [r0, r1) an output band reads, as floats: row stride ncol * C,
 * column p = iw + pl, zeros out of the image. */
static PR_DD void dd_convert(const qdw_state *s, const int64_t *g, const uint8_t *x, int64_t r0,
                             int64_t r1, int64_t ncol, float *P) {
    const int64_t C = s->C, IW = g[G_IW], pl = g[G_PL];
    const int64_t left = pl < 0 ? 0 : pl > ncol ? ncol : pl;
    for (int64_t r = r0; r < r1; r++) {
        float *pr = P + (r - r0) * ncol * C;
        if (r < 0 || r >= g[G_IH]) {
            memset(pr, 0, (size_t)(ncol * C) * sizeof(float));
            continue;
        }
        /* columns [left, right) in the image */
        int64_t right = IW + pl < ncol ? IW + pl : ncol;
        if (right < left) right = left;
        memset(pr, 0, (size_t)(left * C) * sizeof(float));
        memset(pr + right * C, 0, (size_t)((ncol - right) * C) * sizeof(float));
        const uint8_t *xr = x + (r * IW + (left - pl)) * C;
        float *pp = pr + left * C;
        const int64_t n = (right - left) * C;
        int64_t i = 0;
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(pp + i, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                         _mm_loadu_si128((const __m128i *)(xr + i)))));
        if (i < n) {
            const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
            _mm512_mask_storeu_ps(pp + i, m,
                                  _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                      _mm_maskz_loadu_epi8(m, xr + i))));
        }
    }
}

/* One output row, column stride 1 ("flat"): output values f = ow * C + c
 * of the row are consecutive, and so are their inputs at each tap (P row
 * + f + kw * dw * C), so the row runs as vectors of 16 consecutive values
 * whatever C: vector v uses weight pattern v % NP (lane l: channel
 * (16 (v % NP) + l) % C; NP = lcm(C, 16) / 16: 1 for 8 and 16 channels, 2
 * for 32, 3 for 24), no lane wasted. 12 vectors at a time (independent
 * FMA chains; 12 is a multiple of every NP). K3: 3 kernel columns,
 * dilation 1. */
#define DD_W(i) ((i) % NP == 0 ? w0 : (i) % NP == 1 ? w1 : w2)
#define DD_SC(i) ((i) % NP == 0 ? sc0 : (i) % NP == 1 ? sc1 : sc2)
#define DD_BI(i) ((i) % NP == 0 ? bi0 : (i) % NP == 1 ? bi1 : bi2)
#define DD_FMA(i) a##i = _mm512_fmadd_ps(_mm512_loadu_ps(q + 16 * (i)), DD_W(i), a##i)
#define DD_ST(i)                                                                                   \
    _mm512_mask_cvtepi32_storeu_epi8(yr + (v + (i)) * 16, dd_mask(n, v + (i)),                    \
                                     dd_q(a##i, DD_SC(i), DD_BI(i), e, RL))

static inline __attribute__((always_inline)) __mmask16 dd_mask(int64_t n, int64_t v) {
    return (v + 1) * 16 <= n ? (__mmask16)0xffff : (__mmask16)((1u << (n - v * 16)) - 1u);
}

static inline __attribute__((always_inline)) PR_DD void
dd_flat(const qdw_state *s, const int64_t *g, const dd_ep *e, const float *prow, uint8_t *yr,
        int64_t ncol, bool RL, bool K3, int NP) {
    const int64_t C = s->C, KH = s->KH, KW = K3 ? 3 : s->KW, dh = g[G_DH], dw = K3 ? 1 : g[G_DW];
    const int64_t n = g[G_OW] * C, nvec = (n + 15) / 16, rs = dh * ncol * C, ws = NP * 16;
    const __m512 sc0 = _mm512_load_ps(s->dsc), sc1 = _mm512_load_ps(s->dsc + 16 * (1 % NP)),
                 sc2 = _mm512_load_ps(s->dsc + 16 * (2 % NP));
    const __m512 bi0 = _mm512_load_ps(s->dbi), bi1 = _mm512_load_ps(s->dbi + 16 * (1 % NP)),
                 bi2 = _mm512_load_ps(s->dbi + 16 * (2 % NP));
    int64_t v = 0;
    for (; v + 12 <= nvec; v += 12) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
        __m512 a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
        const float *pk = prow + v * 16, *wk = s->dwf;
        for (int64_t kh = 0; kh < KH; kh++, pk += rs, wk += KW * ws)
            for (int64_t kw = 0; kw < KW; kw++) {
                const float *wt = wk + kw * ws, *q = pk + kw * dw * C;
                const __m512 w0 = _mm512_load_ps(wt), w1 = _mm512_load_ps(wt + 16 * (1 % NP)),
                             w2 = _mm512_load_ps(wt + 16 * (2 % NP));
                DD_FMA(0);
                DD_FMA(1);
                DD_FMA(2);
                DD_FMA(3);
                DD_FMA(4);
                DD_FMA(5);
                DD_FMA(6);
                DD_FMA(7);
                DD_FMA(8);
                DD_FMA(9);
                DD_FMA(10);
                DD_FMA(11);
            }
        DD_ST(0);
        DD_ST(1);
        DD_ST(2);
        DD_ST(3);
        DD_ST(4);
        DD_ST(5);
        DD_ST(6);
        DD_ST(7);
        DD_ST(8);
        DD_ST(9);
        DD_ST(10);
        DD_ST(11);
    }
    for (; v < nvec; v++) {
        const int64_t pat = (v % NP) * 16;
        __m512 a0 = _mm512_setzero_ps();
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++)
                a0 = _mm512_fmadd_ps(_mm512_loadu_ps(prow + kh * rs + v * 16 + kw * dw * C),
                                     _mm512_load_ps(s->dwf + (kh * KW + kw) * ws + pat), a0);
        _mm512_mask_cvtepi32_storeu_epi8(
            yr + v * 16, dd_mask(n, v),
            dd_q(a0, _mm512_load_ps(s->dsc + pat), _mm512_load_ps(s->dbi + pat), e, RL));
    }
}

/* PRECIS_QDW_PACK=0: dd_flat4 stores each vector with vpmovdb (A/B). */
static bool dd_pack_on(void) {
    static int on = -1;
    return pr_cpu_switch_on("PRECIS_QDW_PACK", &on);
}

/* The rows [r0, r1) an output band reads for dd_flat4: value f of a row
 * (f = column * C + channel, columns as dd_convert's) as the dword of
 * bytes x[f], x[f + C], x[f + 2 C], 0: a kernel row's three taps for
 * vpdpbusd (uint8 x int8, exact int32 sums). nq dwords a row (the vectors
 * an output row reads), row stride ncol * C; R: ncol * C + 64 bytes of
 * scratch for the zero-padded byte row. */
#define PR_DD4 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma")))
static PR_DD4 void dd_convert4(const qdw_state *s, const int64_t *g, const uint8_t *x, int64_t r0,
                               int64_t r1, int64_t ncol, int64_t nq, int32_t *P, uint8_t *R) {
    const int64_t C = s->C, IW = g[G_IW], pl = g[G_PL], rl = ncol * C;
    const int64_t left = pl < 0 ? 0 : pl > ncol ? ncol : pl;
    int64_t right = IW + pl < ncol ? IW + pl : ncol;
    if (right < left) right = left;
    memset(R + rl, 0, 64);
    for (int64_t r = r0; r < r1; r++) {
        int32_t *pr = P + (r - r0) * rl;
        if (r < 0 || r >= g[G_IH]) {
            memset(pr, 0, (size_t)nq * sizeof(int32_t));
            continue;
        }
        memset(R, 0, (size_t)(left * C));
        memcpy(R + left * C, x + (r * IW + (left - pl)) * C, (size_t)((right - left) * C));
        memset(R + right * C, 0, (size_t)((ncol - right) * C));
        for (int64_t f = 0; f < nq; f += 16) {
            const __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(R + f)));
            const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(R + f + C)));
            const __m512i c =
                _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(R + f + 2 * C)));
            _mm512_storeu_si512((void *)(pr + f),
                                _mm512_ternarylogic_epi32(a, _mm512_slli_epi32(b, 8),
                                                          _mm512_slli_epi32(c, 16), 0xfe));
        }
    }
}

/* The 3 rows r, r + 1, r + 2 (zeros out of the image) that an output row
 * of a 3x3 kernel at row dilation 1 reads, as one row of dwords: value f
 * (f = column * C + channel, columns as dd_convert's) as the bytes of rows
 * r, r + 1, r + 2 at f, then 0: a kernel column's three taps for vpdpbusd
 * (s->dwt). nqt dwords (a multiple of 16: the vectors of an output row
 * and the 2 C values past them); R: 3 x (nqt + 64) bytes of scratch. One
 * conversion an output row, where dd_convert4's rows cost one an input row:
 * two an output row at row stride 2 (cls's 8- and 24-channel layers). */
static PR_DD4 void dd_convert3(const qdw_state *s, const int64_t *g, const uint8_t *x, int64_t r,
                               int64_t ncol, int64_t nqt, int32_t *Q, uint8_t *R) {
    const int64_t C = s->C, IW = g[G_IW], pl = g[G_PL], rb = nqt + 64;
    const int64_t left = pl < 0 ? 0 : pl > ncol ? ncol : pl;
    int64_t right = IW + pl < ncol ? IW + pl : ncol;
    if (right < left) right = left;
    for (int64_t i = 0; i < 3; i++) {
        uint8_t *Ri = R + i * rb;
        const int64_t row = r + i;
        if (row < 0 || row >= g[G_IH]) {
            memset(Ri, 0, (size_t)rb);
            continue;
        }
        memset(Ri, 0, (size_t)(left * C));
        memcpy(Ri + left * C, x + (row * IW + (left - pl)) * C, (size_t)((right - left) * C));
        memset(Ri + right * C, 0, (size_t)(rb - right * C));
    }
    for (int64_t f = 0; f < nqt; f += 16) {
        const __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(R + f)));
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(R + rb + f)));
        const __m512i c =
            _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(R + 2 * rb + f)));
        _mm512_storeu_si512((void *)(Q + f),
                            _mm512_ternarylogic_epi32(a, _mm512_slli_epi32(b, 8),
                                                      _mm512_slli_epi32(c, 16), 0xfe));
    }
}

/* dd_flat for 3 kernel columns at dilation 1 on dd_convert4's rows: per
 * kernel row one vpdpbusd (its 3 taps) instead of 3 FMAs; the int32 sums
 * equal the float path's (both exact), so do the bytes. */
#define DD_DP(i)                                                                                   \
    a##i = _mm512_dpbusd_epi32(a##i, _mm512_loadu_si512((const void *)(q + 16 * (i))), DD_W(i))
#define DD_ST4(i)                                                                                  \
    _mm512_mask_cvtepi32_storeu_epi8(yr + (v + (i)) * 16, dd_mask(n, v + (i)),                    \
                                     dd_q(_mm512_cvtepi32_ps(a##i), DD_SC(i), DD_BI(i), e,      \
                                          RL ? 1 : 0))
/* Vectors i..i + 3 (values in the output type's range) packed with
 * saturation (exact here) into 64 bytes: vpackssdw, vpack{us,ss}wb leave
 * them interleaved by 128-bit lanes, vpermd puts the dwords back (4 + 4
 * shuffles where 4 vpmovdb stores take 8) */
#define DD_PK4(i, j, k, l)                                                                         \
    do {                                                                                           \
        const __m512i p0 = _mm512_packs_epi32(                                                     \
            dd_q(_mm512_cvtepi32_ps(a##i), DD_SC(i), DD_BI(i), e, RL),                             \
            dd_q(_mm512_cvtepi32_ps(a##j), DD_SC(j), DD_BI(j), e, RL));                            \
        const __m512i p1 = _mm512_packs_epi32(                                                     \
            dd_q(_mm512_cvtepi32_ps(a##k), DD_SC(k), DD_BI(k), e, RL),                             \
            dd_q(_mm512_cvtepi32_ps(a##l), DD_SC(l), DD_BI(l), e, RL));                            \
        const __m512i b = u8 ? _mm512_packus_epi16(p0, p1) : _mm512_packs_epi16(p0, p1);           \
        _mm512_storeu_si512((void *)(yr + (v + (i)) * 16), _mm512_permutexvar_epi32(pk, b));      \
    } while (0)
static inline __attribute__((always_inline)) PR_DD4 void
dd_flat4(const qdw_state *s, const int64_t *g, const dd_ep *e, const int32_t *prow, uint8_t *yr,
         int64_t ncol, int RL, int NP, int64_t v0, int64_t v1, int T3) {
    /* T3: on dd_convert3's row, per kernel column (3) one vpdpbusd of its 3
     * taps, the columns C values apart */
    const int64_t C = s->C, KH = T3 ? 3 : s->KH, dh = g[G_DH];
    const int64_t n = g[G_OW] * C, nvec = v1, rs = T3 ? C : dh * ncol * C, ws = NP * 16;
    const int32_t *wq = T3 ? s->dwt : s->dwq;
    const __m512 sc0 = _mm512_load_ps(s->dsc), sc1 = _mm512_load_ps(s->dsc + 16 * (1 % NP)),
                 sc2 = _mm512_load_ps(s->dsc + 16 * (2 % NP));
    const __m512 bi0 = _mm512_load_ps(s->dbi), bi1 = _mm512_load_ps(s->dbi + 16 * (1 % NP)),
                 bi2 = _mm512_load_ps(s->dbi + 16 * (2 % NP));
    const bool u8 = s->ydt == PRECIS_UINT8, qp = dd_pack_on();
    const __m512i pk = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    int64_t v = v0;
    for (; v + 12 <= nvec; v += 12) {
        __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
        __m512i a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
        const int32_t *q = prow + v * 16, *wt = wq;
        for (int64_t kh = 0; kh < KH; kh++, q += rs, wt += ws) {
            const __m512i w0 = _mm512_load_si512((const void *)wt),
                          w1 = _mm512_load_si512((const void *)(wt + 16 * (1 % NP))),
                          w2 = _mm512_load_si512((const void *)(wt + 16 * (2 % NP)));
            DD_DP(0);
            DD_DP(1);
            DD_DP(2);
            DD_DP(3);
            DD_DP(4);
            DD_DP(5);
            DD_DP(6);
            DD_DP(7);
            DD_DP(8);
            DD_DP(9);
            DD_DP(10);
            DD_DP(11);
        }
        if ((v + 12) * 16 <= n && qp) { /* 4 vectors a 64-byte store */
            DD_PK4(0, 1, 2, 3);
            DD_PK4(4, 5, 6, 7);
            DD_PK4(8, 9, 10, 11);
            continue;
        }
        DD_ST4(0);
        DD_ST4(1);
        DD_ST4(2);
        DD_ST4(3);
        DD_ST4(4);
        DD_ST4(5);
        DD_ST4(6);
        DD_ST4(7);
        DD_ST4(8);
        DD_ST4(9);
        DD_ST4(10);
        DD_ST4(11);
    }
    for (; v < nvec; v++) {
        const int64_t pat = (v % NP) * 16;
        __m512i a0 = _mm512_setzero_si512();
        for (int64_t kh = 0; kh < KH; kh++)
            a0 = _mm512_dpbusd_epi32(a0, _mm512_loadu_si512((const void *)(prow + kh * rs + v * 16)),
                                     _mm512_load_si512((const void *)(wq + kh * ws + pat)));
        _mm512_mask_cvtepi32_storeu_epi8(yr + v * 16, dd_mask(n, v),
                                         dd_q(_mm512_cvtepi32_ps(a0), _mm512_load_ps(s->dsc + pat),
                                              _mm512_load_ps(s->dbi + pat), e, RL ? 1 : 0));
    }
}

/* One output row, column stride > 1 (8, 16 or 32 channels): per pixel and
 * 16 channels (8 channels: lanes 8..15 masked off), 8 pixels at a time. */
static PR_DD void dd_row(const qdw_state *s, const int64_t *g, const dd_ep *e, const float *prow,
                         uint8_t *yr, int64_t ncol, const __mmask16 *cm) {
    const int64_t C = s->C, nv = (C + 15) / 16, KH = s->KH, KW = s->KW;
    const int64_t OW = g[G_OW], sw = g[G_SW], dh = g[G_DH], dw = g[G_DW];
    const int64_t rs = (dh * ncol) * C, ps = sw * C, ws = s->Cv;
    const bool RL = false;
    for (int64_t j = 0; j < nv; j++) {
        const __m512 sc = _mm512_load_ps(s->dsc + 16 * j), bi = _mm512_load_ps(s->dbi + 16 * j);
        const float *wj = s->dwf + 16 * j, *pj = prow + 16 * j;
        int64_t ow = 0;
        for (; ow + 8 <= OW; ow += 8) {
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            __m512 a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            const float *pk = pj + ow * ps;
            const float *wk = wj;
            for (int64_t kh = 0; kh < KH; kh++, pk += rs, wk += KW * ws)
                for (int64_t kw = 0; kw < KW; kw++) {
                    const __m512 wv = _mm512_load_ps(wk + kw * ws);
                    const float *q = pk + kw * dw * C;
                    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q), wv, a0);
                    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + ps), wv, a1);
                    a2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 2 * ps), wv, a2);
                    a3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 3 * ps), wv, a3);
                    a4 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 4 * ps), wv, a4);
                    a5 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 5 * ps), wv, a5);
                    a6 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 6 * ps), wv, a6);
                    a7 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 7 * ps), wv, a7);
                }
            uint8_t *yp = yr + ow * C + 16 * j;
            _mm512_mask_cvtepi32_storeu_epi8(yp, cm[j], dd_q(a0, sc, bi, e, RL));
            _mm512_mask_cvtepi32_storeu_epi8(yp + C, cm[j], dd_q(a1, sc, bi, e, RL));
            _mm512_mask_cvtepi32_storeu_epi8(yp + 2 * C, cm[j], dd_q(a2, sc, bi, e, RL));
            _mm512_mask_cvtepi32_storeu_epi8(yp + 3 * C, cm[j], dd_q(a3, sc, bi, e, RL));
            _mm512_mask_cvtepi32_storeu_epi8(yp + 4 * C, cm[j], dd_q(a4, sc, bi, e, RL));
            _mm512_mask_cvtepi32_storeu_epi8(yp + 5 * C, cm[j], dd_q(a5, sc, bi, e, RL));
            _mm512_mask_cvtepi32_storeu_epi8(yp + 6 * C, cm[j], dd_q(a6, sc, bi, e, RL));
            _mm512_mask_cvtepi32_storeu_epi8(yp + 7 * C, cm[j], dd_q(a7, sc, bi, e, RL));
        }
        for (; ow < OW; ow++) {
            __m512 a0 = _mm512_setzero_ps();
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++)
                    a0 = _mm512_fmadd_ps(
                        _mm512_loadu_ps(pj + (kh * dh * ncol + ow * sw + kw * dw) * C),
                        _mm512_load_ps(wj + (kh * KW + kw) * ws), a0);
            _mm512_mask_cvtepi32_storeu_epi8(yr + ow * C + 16 * j, cm[j], dd_q(a0, sc, bi, e, RL));
        }
    }
}

#define DD_FLAT_V(RL, K3, NP) dd_flat(s, g, (RL) ? &er : e, prow, yr, ncol, RL, K3, NP)

/* Output rows [oh0, oh1) of one image: x (IH, IW, C) bytes, y its output,
 * P scratch for the rows they read. */
#define DD_FLAT4_V(RL, NP) dd_flat4(s, g, (RL) ? &er : e, qrow, yr, ncol, RL, NP, v0, v1, T3)
#define DD_FLAT4_ALL                                                                               \
    do {                                                                                           \
        if (rl2 && np == 1) DD_FLAT4_V(2, 1);                                                      \
        else if (rl2 && np == 2) DD_FLAT4_V(2, 2);                                                 \
        else if (rl2) DD_FLAT4_V(2, 3);                                                            \
        else if (rl && np == 1) DD_FLAT4_V(1, 1);                                                  \
        else if (rl && np == 2) DD_FLAT4_V(1, 2);                                                  \
        else if (rl) DD_FLAT4_V(1, 3);                                                             \
        else if (np == 1) DD_FLAT4_V(false, 1);                                                    \
        else if (np == 2) DD_FLAT4_V(false, 2);                                                    \
        else DD_FLAT4_V(false, 3);                                                                 \
    } while (0)
/* dd_flat4's vectors per strip: the rows of a band are run a strip at a
 * time, so that the strip's converted input rows (KH + band rows - 1 of
 * DD_STRIP x 64 bytes) stay in L1 across the band's output rows rather
 * than being read from L2 by every row (a 160-pixel row of 32 channels is
 * 20 KB) */
#define DD_STRIP 24

static PR_DD4 void dd_rows(const qdw_state *s, const int64_t *g, const dd_ep *e, const uint8_t *x,
                           uint8_t *y, int64_t oh0, int64_t oh1, float *P) {
    const int64_t C = s->C, KH = s->KH, KW = s->KW;
    const int64_t OW = g[G_OW], sh = g[G_SH], sw = g[G_SW], dh = g[G_DH], dw = g[G_DW];
    const int64_t ncol = (OW - 1) * sw + (KW - 1) * dw + 1;
    const int64_t r0 = oh0 * sh - g[G_PT], r1 = (oh1 - 1) * sh - g[G_PT] + (KH - 1) * dh + 1;
    __mmask16 cm[2];
    for (int64_t j = 0; j < 2; j++)
        cm[j] = C - 16 * j >= 16 ? (__mmask16)0xffff
                : C > 16 * j     ? (__mmask16)((1u << (C - 16 * j)) - 1u)
                                 : (__mmask16)0;
    const bool k3 = KW == 3 && dw == 1;
    const bool q4 = k3 && s->dwq && sw == 1;
    const int64_t nq = (OW * C + 15) / 16 * 16;
    const bool t3 = q4 && s->dwt && dh == 1; /* dd_convert3's rows */
    if (t3) {
    } else if (q4)
        dd_convert4(s, g, x, r0, r1, ncol, nq, (int32_t *)(void *)P,
                    (uint8_t *)(void *)(P + (r1 - r0) * ncol * C));
    else
        dd_convert(s, g, x, r0, r1, ncol, P);
    /* Relu, or Clip [0, b] (ReLU6: EfficientNet-Lite0) with hi min(hi, b inv):
     * rounding is monotonic, so fl(min(f, b) inv) = min(fl(f inv), fl(b inv)),
     * the same bytes */
    dd_ep er = *e;
    const bool rl = e->ak == 1 && !e->aff && s->ydt == PRECIS_UINT8 && s->lo == 0.0f &&
                    _mm512_cmp_ps_mask(e->alo, _mm512_setzero_ps(), _CMP_EQ_OQ) == 0xffff &&
                    _mm512_cmp_ps_mask(e->ahi, _mm512_setzero_ps(), _CMP_GT_OQ) == 0xffff;
    if (rl) er.hi = _mm512_min_ps(e->hi, _mm512_mul_ps(e->ahi, e->a2a));
    const bool rl2 = rl && s->sat != QDW_SAT_NONE && dd_pack_on(); /* dd_q's RL 2 */
    const int np = (int)(s->Cv / 16);
    if (t3) {
        const int T3 = 1;
        const int64_t nqt = (nq + 2 * C + 15) / 16 * 16, v0 = 0, v1 = nq / 16;
        int32_t *qrow = (int32_t *)(void *)P;
        for (int64_t oh = oh0; oh < oh1; oh++) {
            dd_convert3(s, g, x, oh * sh - g[G_PT], ncol, nqt, qrow, (uint8_t *)(qrow + nqt));
            uint8_t *yr = y + oh * OW * C;
            DD_FLAT4_ALL;
        }
        return;
    }
    if (q4) {
        const int T3 = 0;
        const int64_t nvec = nq / 16;
        for (int64_t v0 = 0; v0 < nvec; v0 += DD_STRIP) {
            const int64_t v1 = v0 + DD_STRIP < nvec ? v0 + DD_STRIP : nvec;
            for (int64_t oh = oh0; oh < oh1; oh++) {
                const int32_t *qrow = (const int32_t *)(const void *)P + ((oh - oh0) * sh) * ncol * C;
                uint8_t *yr = y + oh * OW * C;
                DD_FLAT4_ALL;
            }
        }
        return;
    }
    for (int64_t oh = oh0; oh < oh1; oh++) {
        const float *prow = P + ((oh - oh0) * sh) * ncol * C;
        uint8_t *yr = y + oh * OW * C;
        if (sw != 1) dd_row(s, g, e, prow, yr, ncol, cm);
        else if (rl && k3 && np == 1) DD_FLAT_V(true, true, 1);
        else if (rl && k3 && np == 2) DD_FLAT_V(true, true, 2);
        else if (rl && k3) DD_FLAT_V(true, true, 3);
        else if (np == 1) DD_FLAT_V(false, false, 1);
        else if (np == 2) DD_FLAT_V(false, false, 2);
        else DD_FLAT_V(false, false, 3);
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
    const int64_t work = OH * OW * s->C * s->KH * s->KW;
    if (N * work < (int64_t)nt * PR_CPU_PAR_MIN) nt = (int)(N * work / PR_CPU_PAR_MIN);
    if (nt < 1) nt = 1;
    const int64_t parts = N >= nt ? 1 : (nt + N - 1) / N < OH ? (nt + N - 1) / N : OH;
    const int64_t items = N * parts;
    if (items < nt) nt = (int)items;
    /* output rows per band: the float rows a band reads within DD_BAND_BYTES
     * (all rows up to QDW_DIRECT_MAX_PIX pixels, as before) */
    int64_t br = OH;
    if (g[G_IH] * g[G_IW] > QDW_DIRECT_MAX_PIX) {
        const int64_t fit = DD_BAND_BYTES / (int64_t)(ncol * s->C * (int64_t)sizeof(float));
        const int64_t ext = (s->KH - 1) * g[G_DH] + 1;
        br = fit > ext ? (fit - ext) / g[G_SH] + 1 : 1;
        if (br > OH) br = OH;
    }
    const int64_t brows = (br - 1) * g[G_SH] + (s->KH - 1) * g[G_DH] + 1;
    /* + slack read by tail lanes, + dd_convert4's byte row */
    const size_t per0 = (size_t)((brows < rows ? brows : rows) * ncol * s->C);
    size_t per = per0 + 32 + (s->dwq ? (size_t)((ncol * s->C + 64) / 4 + 16) : 0);
    if (s->dwt) { /* dd_convert3's dword row (nqt) and 3 byte rows of nqt + 64 */
        const size_t nqt = (size_t)(((OW * s->C + 15) / 16 * 16 + 2 * s->C + 15) / 16 * 16);
        const size_t t3 = nqt + (3 * (nqt + 64) + 3) / 4 + 16;
        if (t3 > per0) per += t3 - per0;
    }
    float *scr = pr_cpu_scratch(x, per * sizeof(float) * (size_t)nt);
    if (!scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    for (int t = 0; t < nt; t++) memset(scr + (size_t)t * per + per0, 0, 32 * sizeof(float));
    const uint8_t *xd = X->data;
    uint8_t *yd = Y->data;
    const size_t xin = (size_t)(g[G_IH] * g[G_IW] * s->C), yout = (size_t)(OH * OW * s->C);
    if (nt < 2) { /* no region: even a serial one costs ~0.3 us (NOTES.md) */
        for (int64_t n = 0; n < N; n++)
            for (int64_t b = 0; b < OH; b += br)
                dd_band(s, g, xd + n * xin, yd + n * yout, b, b + br < OH ? b + br : OH, scr);
        return PRECIS_OK;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t it = 0; it < items; it++) {
        const int64_t n = it / parts, pt = it % parts;
        const int64_t o0 = OH * pt / parts, o1 = OH * (pt + 1) / parts;
        for (int64_t b = o0; b < o1; b += br)
            dd_band(s, g, xd + n * xin, yd + n * yout, b, b + br < o1 ? b + br : o1,
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

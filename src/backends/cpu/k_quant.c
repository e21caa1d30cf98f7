/* Per-tensor QuantizeLinear and DequantizeLinear (kernels.h) at the
 * float/int8 boundaries of an INT8 plan.
 *
 *   quantize    y = saturate(round_half_even(x / scale)), NaN -> 0; x float32,
 *               bfloat16 or float16 (computed in float32, an IEEE division
 *               as the ref does, so results agree bit for bit); y int8/uint8.
 *   dequantize  y = scale * (float)q; q int8/uint8; y float32, bfloat16 or
 *               float16 (rounded to nearest even).
 * The scale is a one-element float initializer, or for QuantizeLinear a
 * vector over the last axis of a plain tensor (axis = rank - 1: the
 * per-channel quantization of a smoothed activation, quantize.h); a zero
 * point must be absent or an all-zero initializer (precis' INT8 is
 * symmetric), else the node is declined and runs on ref. Elementwise, so
 * layout-agnostic (input and output share the layout), and QuantizeLinear
 * also reads a plain rank-4 float32 tensor into an NHWC output (a plan's
 * input quantize: the reorder after it is dropped, pr_plan_layouts): chunks
 * of pixels are quantized per channel into scratch and interleaved (vpermb
 * for up to 4 channels with AVX512-VBMI). AVX-512 when allowed, portable C otherwise
 * (PRECIS_CPU_ISA=scalar); OpenMP over chunks of QCHUNK elements. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

#define QCHUNK 65536

typedef struct qstate {
    bool quant; /* QuantizeLinear, else DequantizeLinear */
    bool avx512, vbmi;
    bool to_nhwc; /* plain rank-4 input, NHWC output */
    float scale;
    int64_t C;     /* > 0: per-channel scales over the last axis */
    float *scales; /* C of them */
} qstate;

static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }


static bool is_init(const pr_tensor *t) { return t && (t->flags & PR_T_INIT) && t->data; }

/* The one-element scale initializer as the ref reads it; false if absent,
 * not a float, not a single value, zero or not finite. */
static bool scale_of(const pr_tensor *s, float *out) {
    if (!is_init(s) || pr_numel(s->rank, s->dims) != 1) return false;
    if (!pr_cpu_float_dt(s->dtype) && s->dtype != PRECIS_FLOAT64) return false;
    float v = s->dtype == PRECIS_FLOAT32 ? *(const float *)s->data
                                         : (float)pr_load_f64(s->data, s->dtype, 0);
    if (!isfinite(v) || v == 0.0f) return false;
    *out = v;
    return true;
}

/* Zero point absent, or an all-zero initializer of a 1-byte type with n
 * values (1: per tensor). */
static bool zp_ok_n(const pr_tensor *z, int64_t n) {
    if (!z) return true;
    if (!is_init(z) || !q8(z->dtype) || pr_numel(z->rank, z->dims) != n) return false;
    for (int64_t i = 0; i < n; i++)
        if (((const uint8_t *)z->data)[i]) return false;
    return true;
}

static bool zp_ok(const pr_tensor *z) { return zp_ok_n(z, 1); }

/* QuantizeLinear per channel of x's last axis (plain layout): the channel
 * count, else 0. */
static int64_t per_channel(const pr_graph *g, const pr_node *n, const pr_tensor *x) {
    const pr_tensor *s = pr_node_tin(g, n, 1);
    if (n->op != PR_OP_QuantizeLinear || !x || x->rank < 1 || !is_init(s) ||
        s->dtype != PRECIS_FLOAT32 || s->rank != 1 || pr_cpu_layout_of(x) != PR_LAYOUT_PLAIN ||
        !pr_node_tout(g, n, 0) || pr_cpu_layout_of(pr_node_tout(g, n, 0)) != PR_LAYOUT_PLAIN)
        return 0;
    int64_t ax = pr_attr_int(n, "axis", 1), C = x->dims[x->rank - 1];
    if (ax < 0) ax += x->rank;
    if (ax != x->rank - 1 || C <= 1 || s->dims[0] != C || !zp_ok_n(pr_node_tin(g, n, 2), C))
        return 0;
    for (int64_t c = 0; c < C; c++) {
        float v = ((const float *)s->data)[c];
        if (!isfinite(v) || v == 0.0f) return 0;
    }
    return C;
}

/* A plain rank-4 float32 input quantized into an NHWC output (its rank may
 * not be inferred yet). */
static bool to_nhwc(const pr_tensor *x, const pr_tensor *y) {
    return x->rank == 4 && (y->rank == 4 || y->rank < 0) && x->dtype == PRECIS_FLOAT32 &&
           x->layout == PR_LAYOUT_PLAIN && y->layout == PR_LAYOUT_NHWC;
}

static bool default_domain(const pr_node *n) {
    return !n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
}

static bool q_common(const pr_graph *g, const pr_node *n, const pr_tensor **x,
                     const pr_tensor **y) {
    float s;
    *x = pr_node_tin(g, n, 0);
    *y = pr_node_tout(g, n, 0);
    if (!default_domain(n) || !*x || !*y || n->n_inputs > 3 || n->n_outputs != 1) return false;
    if ((!scale_of(pr_node_tin(g, n, 1), &s) || !zp_ok(pr_node_tin(g, n, 2))) &&
        !per_channel(g, n, *x))
        return false;
    if (pr_attr_int(n, "block_size", 0) != 0) return false; /* blocked quantization */
    if ((*x)->flags & PR_T_INIT) return false;
    return pr_cpu_layout_of(*x) == pr_cpu_layout_of(*y) ||
           (n->op == PR_OP_QuantizeLinear && to_nhwc(*x, *y));
}

static bool quant_supports(const pr_graph *g, const pr_node *n) {
    const pr_tensor *x, *y;
    if (n->op != PR_OP_QuantizeLinear || !q_common(g, n, &x, &y)) return false;
    const pr_tensor *z = pr_node_tin(g, n, 2);
    /* the zero point's type, else uint8 (or opset 21's output_dtype) */
    pr_dtype want = z ? z->dtype : q8(y->dtype) ? y->dtype : PRECIS_UINT8;
    return pr_cpu_float_dt(x->dtype) && (y->dtype == PRECIS_UNDEFINED || y->dtype == want) &&
           q8(want);
}

static bool dequant_supports(const pr_graph *g, const pr_node *n) {
    const pr_tensor *x, *y;
    if (n->op != PR_OP_DequantizeLinear || !q_common(g, n, &x, &y)) return false;
    const pr_tensor *z = pr_node_tin(g, n, 2);
    if (z && z->dtype != x->dtype) return false;
    return q8(x->dtype) && (y->dtype == PRECIS_UNDEFINED || pr_cpu_float_dt(y->dtype));
}

static bool q_nhwc_ok(const pr_graph *g, const pr_node *n) { return true; }

static precis_status q_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                               void **state, pr_err *e) {
    bool quant = n->op == PR_OP_QuantizeLinear;
    *state = NULL;
    if (!(quant ? quant_supports(g, n) : dequant_supports(g, n)))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by %s", n->name,
                       n->op_type, quant ? "quantize" : "dequantize");
    qstate *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->quant = quant;
    if (!scale_of(pr_node_tin(g, n, 1), &s->scale)) {
        const pr_tensor *sc = pr_node_tin(g, n, 1);
        s->C = per_channel(g, n, pr_node_tin(g, n, 0));
        if (!(s->scales = malloc((size_t)s->C * sizeof *s->scales))) {
            free(s);
            return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        }
        memcpy(s->scales, sc->data, (size_t)s->C * sizeof *s->scales);
    }
    s->to_nhwc = quant && !s->C && to_nhwc(pr_node_tin(g, n, 0), pr_node_tout(g, n, 0));
#ifdef PR_CPU_X86
    s->avx512 = pr_cpu_use_avx512();
    s->vbmi = s->avx512 && pr_cpu_features_get()->avx512_vbmi;
#endif
    *state = s;
    return PRECIS_OK;
}

/* ------------------------------------------------------------ scalar */

static void quant_scalar(const void *x, pr_dtype xdt, float sc, void *y, bool u8, int64_t i0,
                         int64_t i1) {
    if (u8) {
        uint8_t *q = y;
        for (int64_t i = i0; i < i1; i++)
            q[i] = (uint8_t)ps_q8_round(ps_load(x, i, xdt) / sc, 0, 255);
    } else {
        int8_t *q = y;
        for (int64_t i = i0; i < i1; i++)
            q[i] = (int8_t)ps_q8_round(ps_load(x, i, xdt) / sc, -128, 127);
    }
}

static void dequant_scalar(const void *q, bool u8, float sc, void *y, pr_dtype ydt, int64_t i0,
                           int64_t i1) {
    if (u8) {
        const uint8_t *p = q;
        for (int64_t i = i0; i < i1; i++) ps_store(y, i, ydt, (float)p[i] * sc);
    } else {
        const int8_t *p = q;
        for (int64_t i = i0; i < i1; i++) ps_store(y, i, ydt, (float)p[i] * sc);
    }
}

/* ------------------------------------------------------------ AVX-512 */

#ifdef PR_CPU_X86
PR_VINLINE __m512i quant16(__m512 v, __m512 sc, __m512 lo, __m512 hi) {
    return pv_q8_round_lo8(_mm512_div_ps(v, sc), lo, hi);
}

/* quant16's bytes from a multiply by rc = fl(1 / scale) (a normal float),
 * the division only in the lanes where it could round otherwise. With q =
 * x / scale, y = fl(x rc) = q (1 + e1)(1 + e2), |e| <= 2^-24, and fl(q)
 * within |q| 2^-24 of q: |y - fl(q)| < 1.5 |q| 2^-23, under 2^-12.4 for
 * |q| < 1024. Rounding to the nearest integer (after a clamp to integer
 * bounds, both monotonic) gives the same result for y and fl(q) unless a
 * half-integer lies between them: so where y is 2^-11 or more from the
 * nearest half-integer, y's result is fl(q)'s; lanes nearer (~1 in 1000
 * values) are divided. Where |q| >= 1024 both clamp to the same bound; inf
 * and NaN pass as the division's (inf - inf is NaN: no lane divided). The
 * division costs ~10 cycles a vector (vdivps zmm): the input quantize of a
 * 320x320 image (CenterFace) was division-bound. */
PR_VINLINE __m512i quant16r(__m512 v, __m512 sc, __m512 rc, __m512 lo, __m512 hi) {
    __m512 y = _mm512_mul_ps(v, rc);
    const __m512 f = _mm512_sub_ps(
        _mm512_sub_ps(y, _mm512_roundscale_ps(y, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)),
        _mm512_set1_ps(0.5f));
    const __mmask16 near =
        _mm512_cmp_ps_mask(_mm512_abs_ps(f), _mm512_set1_ps(0x1p-11f), _CMP_LT_OQ);
    if (near) y = _mm512_mask_div_ps(y, near, v, sc);
    return pv_q8_round_lo8(y, lo, hi);
}

/* quant16's bytes without a division: y = fl(x rc) corrected once by
 * the remainder, y' = fl(y + fl(x - y scale) rc) (two FMAs; Markstein's
 * correction). With rc = (1 / scale)(1 + e), |e| <= 2^-24, and |y - q| <=
 * 2^-22 |q| (q = x / scale): y + (x - y scale) rc = q + e (q - y), so,
 * with the remainder's own rounding, y' is the rounding of q + d, |d| <=
 * 2^-45 |q|. For |q| < 2^20 that never crosses a half-integer h that q
 * does not equal: q - h = (x - h scale) / scale, and x - h scale, a
 * multiple of 2^(E - 24) (E: scale's exponent; x's exponent is at least
 * E - 1 for |q| >= 1/2), is 0 or over 2^-25 scale in magnitude. Rounding is
 * monotonic and h a float, so y' and fl(q) lie on the same side of every
 * half-integer (or both equal it): the same integer after the clamp and
 * the round, half to even. Lanes with |y| >= 2^20, inf or NaN keep y (the
 * division's bound, inf, NaN). ~5 operations a vector and no division
 * (cls's 48x192 input at b8 quantized 46 -> ~38 us with quant16r's
 * divisions left out: its near-half lanes are not rare on image data). */
PR_VINLINE __m512i quant16m(__m512 v, __m512 sc, __m512 rc, __m512 lo, __m512 hi) {
    const __m512 y = _mm512_mul_ps(v, rc);
    const __m512 r = _mm512_fnmadd_ps(y, sc, v);
    const __mmask16 ok = _mm512_cmp_ps_mask(_mm512_abs_ps(y), _mm512_set1_ps(0x1p20f), _CMP_LT_OQ);
    return pv_q8_round_lo8(_mm512_mask3_fmadd_ps(r, rc, y, ok), lo, hi);
}

/* PRECIS_QUANT_FMA=0: quant16r (a division near halves) instead (A/B). */
static bool quant_fma_on(void) {
    static int on = -1;
    return pr_cpu_switch_on("PRECIS_QUANT_FMA", &on);
}

/* PRECIS_QUANT_RCP=0: every value divided (A/B). */
static bool quant_rcp_on(void) {
    static int on = -1;
    return pr_cpu_switch_on("PRECIS_QUANT_RCP", &on);
}

#define QUANT_512_BODY(Q)                                                                          \
    for (; i + 64 <= i1; i += 64) {                                                                \
        __m512i a = Q(pv_load(x, i, xdt));                                                         \
        __m512i b = Q(pv_load(x, i + 16, xdt));                                                    \
        __m512i c = Q(pv_load(x, i + 32, xdt));                                                    \
        __m512i d = Q(pv_load(x, i + 48, xdt));                                                    \
        pv_q8_store(q, i, a);                                                                      \
        pv_q8_store(q, i + 16, b);                                                                 \
        pv_q8_store(q, i + 32, c);                                                                 \
        pv_q8_store(q, i + 48, d);                                                                 \
    }                                                                                              \
    for (; i < i1; i += 16) {                                                                      \
        __mmask16 m = i1 - i >= 16 ? (__mmask16)0xffff : pv_tail(i1 - i);                          \
        pv_q8_store_m(q, i, Q(pv_load_m(x, i, xdt, m)), m);                                        \
    }

static PR_AVX512 void quant_512(const void *x, pr_dtype xdt, float scale, void *y, bool u8,
                                int64_t i0, int64_t i1) {
    const __m512 sc = _mm512_set1_ps(scale);
    const __m512 lo = _mm512_set1_ps(u8 ? 0.0f : -128.0f), hi = _mm512_set1_ps(u8 ? 255.0f : 127.0f);
    int8_t *q = y;
    int64_t i = i0;
    const float r = 1.0f / scale;
    if (isnormal(r) && quant_rcp_on()) {
        const __m512 rc = _mm512_set1_ps(r);
        if (quant_fma_on()) {
#define Q_FMA(v) quant16m(v, sc, rc, lo, hi)
            QUANT_512_BODY(Q_FMA)
#undef Q_FMA
            return;
        }
#define Q_RCP(v) quant16r(v, sc, rc, lo, hi)
        QUANT_512_BODY(Q_RCP)
#undef Q_RCP
        return;
    }
#define Q_DIV(v) quant16(v, sc, lo, hi)
    QUANT_512_BODY(Q_DIV)
#undef Q_DIV
}

static PR_AVX512 void quant_row_512(const void *x, pr_dtype xdt, const float *sc, void *y, bool u8,
                                    int64_t i0, int64_t C) {
    const __m512 lo = _mm512_set1_ps(u8 ? 0.0f : -128.0f), hi = _mm512_set1_ps(u8 ? 255.0f : 127.0f);
    int8_t *q = y;
    for (int64_t c = 0; c < C; c += 16) {
        __mmask16 m = C - c >= 16 ? (__mmask16)0xffff : pv_tail(C - c);
        __m512 s = _mm512_maskz_loadu_ps(m, sc + c);
        s = _mm512_mask_blend_ps(m, _mm512_set1_ps(1.0f), s);
        pv_q8_store_m(q, i0 + c, quant16(pv_load_m(x, i0 + c, xdt, m), s, lo, hi), m);
    }
}

PR_VINLINE __m512 dq16(__m128i b, bool u8, __m512 sc) {
    return _mm512_mul_ps(pv_q8_to_f32(b, u8), sc);
}

static PR_AVX512 void dequant_512(const void *q, bool u8, float scale, void *y, pr_dtype ydt,
                                  int64_t i0, int64_t i1) {
    const __m512 sc = _mm512_set1_ps(scale);
    const uint8_t *p = q;
    int64_t i = i0;
    for (; i + 64 <= i1; i += 64) {
        __m512i b = _mm512_loadu_si512((const void *)(p + i));
        pv_store(y, i, ydt, dq16(_mm512_extracti32x4_epi32(b, 0), u8, sc));
        pv_store(y, i + 16, ydt, dq16(_mm512_extracti32x4_epi32(b, 1), u8, sc));
        pv_store(y, i + 32, ydt, dq16(_mm512_extracti32x4_epi32(b, 2), u8, sc));
        pv_store(y, i + 48, ydt, dq16(_mm512_extracti32x4_epi32(b, 3), u8, sc));
    }
    for (; i < i1; i += 16) {
        __mmask16 m = i1 - i >= 16 ? (__mmask16)0xffff : pv_tail(i1 - i);
        __m128i b = _mm_maskz_loadu_epi8(m, p + i);
        pv_store_m(y, i, ydt, dq16(b, u8, sc), m);
    }
}

/* C <= 4 planes of n bytes (planes at stride ps) -> n pixels of C bytes. */
static __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) void
interleave_vbmi(const uint8_t *t, int64_t ps, int64_t C, uint8_t *y, int64_t n) {
    uint8_t idx[64];
    for (int j = 0; j < 64; j++) idx[j] = (uint8_t)(j < 16 * C ? (j % C) * 16 + j / C : 0);
    const __m512i ix = _mm512_loadu_si512((const void *)idx);
    const __mmask64 all = C == 4 ? ~(__mmask64)0 : ((__mmask64)1 << (16 * C)) - 1;
    int64_t p = 0;
    for (; p + 16 <= n; p += 16) {
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(t + p)));
        for (int64_t c = 1; c < C; c++) {
            __m128i b = _mm_loadu_si128((const __m128i *)(t + c * ps + p));
            v = c == 1   ? _mm512_inserti32x4(v, b, 1)
                : c == 2 ? _mm512_inserti32x4(v, b, 2)
                         : _mm512_inserti32x4(v, b, 3);
        }
        _mm512_mask_storeu_epi8(y + p * C, all, _mm512_permutexvar_epi8(ix, v));
    }
    for (; p < n; p++)
        for (int64_t c = 0; c < C; c++) y[p * C + c] = t[c * ps + p];
}
#endif

/* ------------------------------------------------------------ drivers */

static int threads_for(int64_t n, int threads) {
    if (threads <= 1 || n < PR_CPU_PAR_MIN) return 1;
    int64_t chunks = (n + QCHUNK - 1) / QCHUNK;
    return chunks < threads ? (int)chunks : threads;
}

static void quant_chunk(const void *x, pr_dtype xdt, float sc, void *y, bool u8, int64_t n,
                        int64_t c, bool v512) {
    int64_t i0 = c * QCHUNK, i1 = i0 + QCHUNK < n ? i0 + QCHUNK : n;
#ifdef PR_CPU_X86
    if (v512) {
        quant_512(x, xdt, sc, y, u8, i0, i1);
        return;
    }
#endif
    (void)v512;
    quant_scalar(x, xdt, sc, y, u8, i0, i1);
}

/* Drivers: no region at one thread (even a serial one costs ~0.3 us,
 * NOTES.md session 11). */
static void quant_run(const void *x, pr_dtype xdt, float sc, void *y, bool u8, int64_t n, int nt,
                      bool v512) {
    int64_t chunks = (n + QCHUNK - 1) / QCHUNK;
    nt = threads_for(n, nt);
    if (nt < 2) {
        for (int64_t c = 0; c < chunks; c++) quant_chunk(x, xdt, sc, y, u8, n, c, v512);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t c = 0; c < chunks; c++) quant_chunk(x, xdt, sc, y, u8, n, c, v512);
}

/* Rows of C channels, each channel with its scale. */
static void quant_rows_chunk(const void *x, pr_dtype xdt, const float *sc, int64_t C, void *y,
                             bool u8, int64_t rows, int64_t per, int64_t ch, bool v512) {
    int64_t r1 = (ch + 1) * per < rows ? (ch + 1) * per : rows;
    for (int64_t r = ch * per; r < r1; r++) {
        int64_t i0 = r * C;
#ifdef PR_CPU_X86
        if (v512) {
            quant_row_512(x, xdt, sc, y, u8, i0, C);
            continue;
        }
#endif
        (void)v512;
        for (int64_t c = 0; c < C; c++) quant_scalar(x, xdt, sc[c], y, u8, i0 + c, i0 + c + 1);
    }
}

static void quant_rows(const void *x, pr_dtype xdt, const float *sc, int64_t C, void *y, bool u8,
                       int64_t n, int nt, bool v512) {
    int64_t rows = n / C, per = QCHUNK / C > 0 ? QCHUNK / C : 1;
    int64_t chunks = (rows + per - 1) / per;
    nt = threads_for(n, nt);
    if (nt < 2) {
        for (int64_t ch = 0; ch < chunks; ch++)
            quant_rows_chunk(x, xdt, sc, C, y, u8, rows, per, ch, v512);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t ch = 0; ch < chunks; ch++)
        quant_rows_chunk(x, xdt, sc, C, y, u8, rows, per, ch, v512);
}

static void dequant_chunk(const void *q, bool u8, float sc, void *y, pr_dtype ydt, int64_t n,
                          int64_t c, bool v512) {
    int64_t i0 = c * QCHUNK, i1 = i0 + QCHUNK < n ? i0 + QCHUNK : n;
#ifdef PR_CPU_X86
    if (v512) {
        dequant_512(q, u8, sc, y, ydt, i0, i1);
        return;
    }
#endif
    (void)v512;
    dequant_scalar(q, u8, sc, y, ydt, i0, i1);
}

static void dequant_run(const void *q, bool u8, float sc, void *y, pr_dtype ydt, int64_t n, int nt,
                        bool v512) {
    int64_t chunks = (n + QCHUNK - 1) / QCHUNK;
    nt = threads_for(n, nt);
    if (nt < 2) {
        for (int64_t c = 0; c < chunks; c++) dequant_chunk(q, u8, sc, y, ydt, n, c, v512);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t c = 0; c < chunks; c++) dequant_chunk(q, u8, sc, y, ydt, n, c, v512);
}

#define QPIX 1024 /* pixels per piece of the NHWC quantize */

/* x plain [N, C, HW] float32 -> y [N, HW, C] int8/uint8; scratch: C * QPIX
 * bytes per thread: a piece of np pixels is quantized plane by plane (planes
 * np bytes apart), then interleaved: vpermb for C <= 4, the 16x16-tile byte
 * transpose of k_move.c from 8 channels (YOLOv8n's DFL input, 16 channels:
 * 0.10 -> 0.03 ms), byte by byte otherwise. */
/* Piece it of quant_nhwc_run (t: this thread's C * QPIX bytes). */
static void quant_nhwc_piece(const qstate *s, const float *x, int64_t C, int64_t HW, void *y,
                             bool u8, uint8_t *t, int64_t it, int64_t pieces) {
    int64_t n = it / pieces, p0 = it % pieces * QPIX, np = HW - p0 < QPIX ? HW - p0 : QPIX;
    uint8_t *yo = (uint8_t *)y + (n * HW + p0) * C;
    for (int64_t c = 0; c < C; c++) {
        const float *xc = x + (n * C + c) * HW + p0;
#ifdef PR_CPU_X86
        if (s->avx512) {
            quant_512(xc, PRECIS_FLOAT32, s->scale, t + c * np, u8, 0, np);
            continue;
        }
#endif
        quant_scalar(xc, PRECIS_FLOAT32, s->scale, t + c * np, u8, 0, np);
    }
#ifdef PR_CPU_X86
    if (s->vbmi && C <= 4) {
        interleave_vbmi(t, np, C, yo, np);
        return;
    }
#endif
    if (C >= 8) {
        const int64_t dims[4] = {1, C, 1, np};
        pr_cpu_nchw_nhwc(t, yo, dims, 1, true, 1);
        return;
    }
    for (int64_t p = 0; p < np; p++)
        for (int64_t c = 0; c < C; c++) yo[p * C + c] = t[c * np + p];
}

static void quant_nhwc_run(const qstate *s, const float *x, int64_t N, int64_t C, int64_t HW,
                           void *y, bool u8, uint8_t *scr, int nt) {
    int64_t pieces = (HW + QPIX - 1) / QPIX, items = N * pieces;
    nt = threads_for(N * C * HW, nt);
    if (nt < 2) { /* no region: even a serial one costs ~0.3 us (NOTES.md) */
        for (int64_t it = 0; it < items; it++)
            quant_nhwc_piece(s, x, C, HW, y, u8, scr, it, pieces);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t it = 0; it < items; it++)
        quant_nhwc_piece(s, x, C, HW, y, u8,
                         scr + (size_t)omp_get_thread_num() * (size_t)(C * QPIX), it, pieces);
}

void pr_cpu_dequant_q8(const void *q, pr_dtype qdt, float scale, void *out, pr_dtype odt,
                       int64_t n, int threads) {
    bool v512 = false;
#ifdef PR_CPU_X86
    v512 = pr_cpu_use_avx512();
#endif
    if (n > 0) dequant_run(q, qdt == PRECIS_UINT8, scale, out, odt, n, threads, v512);
}

static precis_status q_run(void *state, pr_kernel *k, pr_cpu_exec *xc) {
    const qstate *s = state;
    const pr_buf *x = pr_kin(k, 0);
    pr_buf *y = k->n_out > 0 ? k->out[0] : NULL;
    if (!x || !y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input or output is missing");
    if (x->numel != y->numel)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "output has %lld elements, input %lld",
                          (long long)y->numel, (long long)x->numel);
    int nt = xc && xc->num_threads > 0 ? xc->num_threads : 1;
    if (s->quant) {
        if (!pr_cpu_float_dt(x->dtype) || !q8(y->dtype))
            return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "types %s -> %s",
                              pr_dtype_name(x->dtype), pr_dtype_name(y->dtype));
        if (s->C > 0 && (x->rank < 1 || x->dims[x->rank - 1] != s->C))
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "last axis %lld, %lld channel scales",
                              (long long)(x->rank ? x->dims[x->rank - 1] : 0), (long long)s->C);
        if (s->to_nhwc && x->numel > 0) {
            if (x->dtype != PRECIS_FLOAT32 || x->rank != 4)
                return pr_kernelf(k, PRECIS_ERR_INTERNAL, "NHWC quantize wants float32 [N,C,H,W]");
            int64_t C = x->dims[1];
            uint8_t *scr = xc ? pr_cpu_scratch(xc, (size_t)(C * QPIX) * (size_t)nt) : NULL;
            if (!scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
            quant_nhwc_run(s, x->data, x->dims[0], C, x->dims[2] * x->dims[3], y->data,
                           y->dtype == PRECIS_UINT8, scr, nt);
        } else if (x->numel > 0 && s->C > 0) {
            quant_rows(x->data, x->dtype, s->scales, s->C, y->data, y->dtype == PRECIS_UINT8,
                       x->numel, nt, s->avx512);
        } else if (x->numel > 0) {
            quant_run(x->data, x->dtype, s->scale, y->data, y->dtype == PRECIS_UINT8, x->numel, nt,
                      s->avx512);
        }
    } else {
        if (!q8(x->dtype) || !pr_cpu_float_dt(y->dtype))
            return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "types %s -> %s",
                              pr_dtype_name(x->dtype), pr_dtype_name(y->dtype));
        if (x->numel > 0)
            dequant_run(x->data, x->dtype == PRECIS_UINT8, s->scale, y->data, y->dtype, x->numel,
                        nt, s->avx512);
    }
    return PRECIS_OK;
}

static const char *quant_describe(void *state) {
    const qstate *s = state;
    if (s->C > 0) return s->avx512 ? "quantize.channels.avx512" : "quantize.channels.scalar";
    return s->avx512 ? "quantize.avx512" : "quantize.scalar";
}

static const char *dequant_describe(void *state) {
    return ((const qstate *)state)->avx512 ? "dequantize.avx512" : "dequantize.scalar";
}

static void q_destroy(void *state) {
    qstate *s = state;
    if (s) free(s->scales);
    free(s);
}

const pr_cpu_impl pr_cpu_impl_quantize = {
    .name = "quantize",
    .supports = quant_supports,
    .nhwc_ok = q_nhwc_ok,
    .inplace_input = NULL,
    .prepare = q_prepare,
    .run = q_run,
    .describe = quant_describe,
    .destroy = q_destroy,
};

const pr_cpu_impl pr_cpu_impl_dequantize = {
    .name = "dequantize",
    .supports = dequant_supports,
    .nhwc_ok = q_nhwc_ok,
    .inplace_input = NULL,
    .prepare = q_prepare,
    .run = q_run,
    .describe = dequant_describe,
    .destroy = q_destroy,
};

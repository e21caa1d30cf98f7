/* MaxPool, AveragePool (2-D windows: pads, strides, dilations, ceil_mode,
 * auto_pad, count_include_pad), GlobalAveragePool and GlobalMaxPool for
 * float32/bfloat16/float16, plain or NHWC.
 *
 * Plain N,C,H,W: one task per output row of a plane. The window's valid
 * input rows are reduced (max or sum) into a float row buffer that carries
 * the pads as identity values (-inf / 0) on both sides and beyond (ceil_mode
 * windows), then each output takes the kw taps of that row: contiguous loads
 * for stride 1, an even-lane permute of two loads for stride 2, gathers
 * otherwise. NHWC: one task per output row of an image, every output pixel
 * reduces its valid taps 64 channels (4 vectors) at a time. Averages divide
 * by the tap count exactly as the ref does (valid taps, or the taps inside
 * the padded extent with count_include_pad). Global pools reduce each plane
 * (plain) or chunks of pixels per channel, read contiguously (NHWC). MaxPool's Indices output is
 * not supported (the impl declines such nodes).
 *
 * MaxPool also takes int8/uint8 (INT8 plans), comparing integers: values
 * are mapped to an unsigned order (int8 XOR 0x80), so one byte-wise max
 * (64 lanes per AVX-512 vector) serves both; a window with no valid tap
 * gives the type's minimum, as the ref's -inf saturated. GlobalMaxPool has
 * no int8 in ONNX (shape inference and the ref decline it), so neither
 * here.
 *
 * QPool (ops.inc: INT8 GlobalAveragePool / AveragePool of int8/uint8 X,
 * float32 or requantized int8/uint8 Y) sums the bytes exactly in integers:
 * global pools per plane (plain: byte sums by vpsadbw) or per channel over
 * chunks of pixels (NHWC, 64 channels of int32 sums at a time); windows per
 * output pixel, 64 channels at a time (NHWC) or tap by tap in scalar C
 * (plain, rare in INT8 plans). */
#define PR_KN_INTERNAL
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_norm.h"
#include "backends/cpu/vec.h"
#include "backends/ref/ref_conv.h"

typedef enum { KP_MAX, KP_AVG, KP_GMAX, KP_GAVG } kp_kind;

typedef struct kp_state {
    kp_kind kind;
    bool v512, nhwc, cip;
    bool q;         /* QPool: int8/uint8 X of real value xs * X */
    float xs, inv;  /* QPool: x_scale, 1 / y_scale */
} kp_state;

static bool kp_kind_of(const pr_node *n, kp_kind *k) {
    switch (n->op) {
    case PR_OP_MaxPool: *k = KP_MAX; return true;
    case PR_OP_AveragePool: *k = KP_AVG; return true;
    case PR_OP_GlobalMaxPool: *k = KP_GMAX; return true;
    case PR_OP_GlobalAveragePool: *k = KP_GAVG; return true;
    case PR_OP_QPool: {
        pr_op base = pr_op_lookup(pr_attr_str(n, "kind", ""));
        if (base != PR_OP_AveragePool && base != PR_OP_GlobalAveragePool) return false;
        *k = base == PR_OP_AveragePool ? KP_AVG : KP_GAVG;
        return true;
    }
    default: return false;
    }
}

static bool kp_q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }
static bool kp_scale_ok(float s) { return s > 0.0f && isfinite(s); }

/* QPool's dtypes: X int8/uint8 with x_scale; Y float32 or y_type with y_scale. */
static bool kq_types_ok(const pr_node *n, const pr_tensor *X, const pr_tensor *Y) {
    if (!kp_q8(X->dtype) || !kp_scale_ok(pr_attr_float(n, "x_scale", 0.0f))) return false;
    int64_t yt = pr_attr_int(n, "y_type", PRECIS_FLOAT32);
    if (yt != PRECIS_FLOAT32 &&
        (!kp_q8((pr_dtype)yt) || !kp_scale_ok(pr_attr_float(n, "y_scale", 0.0f))))
        return false;
    return Y->dtype == PRECIS_UNDEFINED || Y->dtype == (pr_dtype)yt;
}

static bool kp_supports(const pr_graph *g, const pr_node *n) {
    kp_kind kind;
    if (!kp_kind_of(n, &kind)) return false;
    int xi = pr_node_in(n, 0), yi = pr_node_out(n, 0);
    if (xi < 0 || yi < 0) return false;
    if (pr_node_out(n, 1) >= 0) return false; /* MaxPool Indices */
    const pr_tensor *X = &g->tensors[xi], *Y = &g->tensors[yi];
    if (n->op == PR_OP_QPool) {
        if (!kq_types_ok(n, X, Y)) return false;
    } else {
        if (!kn_act_dtype(X->dtype) && !(kp_q8(X->dtype) && kind == KP_MAX)) return false;
        if (Y->dtype != PRECIS_UNDEFINED && Y->dtype != X->dtype) return false;
    }
    if (X->layout != PR_LAYOUT_PLAIN && X->layout != PR_LAYOUT_NHWC) return false;
    /* a global pool's N,C,1,1 output is stored alike in both layouts */
    if (X->layout != Y->layout && kind != KP_GMAX && kind != KP_GAVG) return false;
    if (kind == KP_GMAX || kind == KP_GAVG) {
        if (X->layout == PR_LAYOUT_NHWC) return X->rank == 4;
        return X->rank >= 3;
    }
    if (X->rank != 4) return false;
    const int64_t *ks;
    if (pr_attr_ints(n, "kernel_shape", &ks) != 2) return false;
    pr_err e = {0};
    pr_conv_geom cg;
    return pr_conv_geom_init(n, PR_CONV_KIND_POOL, 2, X->dims + 2, NULL, &e, &cg) == PRECIS_OK;
}

static bool kp_nhwc_ok(const pr_graph *g, const pr_node *n) {
    int xi = pr_node_in(n, 0);
    return xi >= 0 && g->tensors[xi].rank == 4 && pr_node_out(n, 1) < 0;
}

static precis_status kp_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    kp_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "node '%s' (%s): out of memory", n->name, n->op_type);
    if (!kp_kind_of(n, &s->kind)) {
        free(s);
        return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s' (%s): not a pool", n->name, n->op_type);
    }
    s->v512 = kn_have_avx512();
    s->nhwc = g->tensors[pr_node_in(n, 0)].layout == PR_LAYOUT_NHWC;
    if (g->tensors[pr_node_out(n, 0)].layout != g->tensors[pr_node_in(n, 0)].layout &&
        s->kind != KP_GMAX && s->kind != KP_GAVG) {
        free(s);
        return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s' (%s): input and output layouts differ",
                       n->name, n->op_type);
    }
    s->cip = pr_attr_int(n, "count_include_pad", 0) == 1;
    s->q = n->op == PR_OP_QPool;
    s->xs = pr_attr_float(n, "x_scale", 1.0f);
    s->inv = 1.0f / pr_attr_float(n, "y_scale", 1.0f);
    *state = s;
    return PRECIS_OK;
}

static const char *kp_describe(void *state) {
    const kp_state *s = state;
    if (s->v512) return s->nhwc ? "pool:avx512:nhwc" : "pool:avx512";
    return s->nhwc ? "pool:scalar:nhwc" : "pool:scalar";
}

static void kp_destroy(void *state) { free(state); }

/* Window geometry of one 2-D pool, in the padded frame where needed. */
typedef struct kp_geom {
    int64_t H, W, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    int64_t L; /* padded row buffer length (plain path), slack included */
} kp_geom;

/* Count of the window of output index o along one axis (as the ref). */
static int64_t kp_count(int64_t o, int64_t s, int64_t pb, int64_t pe, int64_t d, int64_t in,
                        int64_t k, bool cip) {
    int64_t lo, hi;
    const int64_t off = o * s - pb;
    if (cip)
        rc_valid_range(off + pb, d, in + pb + pe, k, &lo, &hi);
    else
        rc_valid_range(off, d, in, k, &lo, &hi);
    return hi - lo;
}

/* ------------------------------------------------------------ plain, scalar */

/* One output row: rb is the padded row buffer (identity outside [pl, pl+W)). */
static void kp_row_scalar(const void *xp, void *yrow, pr_dtype dt, const kp_geom *g, int64_t oy,
                          bool mx, bool cip, const float *cx, float *rb) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    float *r = rb + g->pl;
    const float id = mx ? -INFINITY : 0.0f;
    if (y0 == y1)
        for (int64_t i = 0; i < g->W; i++) r[i] = id;
    for (int64_t ky = y0; ky < y1; ky++) {
        const int64_t off = (offy + ky * g->dh) * g->W;
        if (ky == y0) {
            for (int64_t i = 0; i < g->W; i++) r[i] = kn_ld1(xp, dt, off + i);
        } else if (mx) {
            for (int64_t i = 0; i < g->W; i++) {
                const float v = kn_ld1(xp, dt, off + i);
                r[i] = v > r[i] ? v : r[i];
            }
        } else {
            for (int64_t i = 0; i < g->W; i++) r[i] += kn_ld1(xp, dt, off + i);
        }
    }
    const float cy = mx ? 1.0f : (float)kp_count(oy, g->sh, g->pt, g->pb, g->dh, g->H, g->kh, cip);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        const float *w = rb + ox * g->sw;
        float a = id;
        if (mx) {
            for (int64_t kx = 0; kx < g->kw; kx++) a = w[kx * g->dw] > a ? w[kx * g->dw] : a;
        } else {
            for (int64_t kx = 0; kx < g->kw; kx++) a += w[kx * g->dw];
            const float c = cy * cx[ox];
            a = c > 0 ? a / c : 0.0f;
        }
        kn_st1(yrow, dt, ox, a);
    }
}

/* ------------------------------------------------------------ plain, AVX-512 */

KN_AVX512 static void kp_row_512(const void *xp, void *yrow, pr_dtype dt, const kp_geom *g,
                                 int64_t oy, bool mx, bool cip, const float *cx, float *rb) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    float *r = rb + g->pl;
    const __m512 id = _mm512_set1_ps(mx ? -INFINITY : 0.0f);
    const int64_t W = g->W;
    const __mmask16 wm = kn_tail(W & 15);
    const int64_t Wv = W & ~(int64_t)15;
    if (y0 == y1) {
        for (int64_t i = 0; i < Wv; i += 16) _mm512_storeu_ps(r + i, id);
        if (Wv < W) _mm512_mask_storeu_ps(r + Wv, wm, id);
    } else {
        const int64_t o0 = (offy + y0 * g->dh) * W;
        for (int64_t i = 0; i < Wv; i += 16) {
            __m512 a = kn_ld16(xp, dt, o0 + i);
            for (int64_t ky = y0 + 1; ky < y1; ky++) {
                __m512 v = kn_ld16(xp, dt, (offy + ky * g->dh) * W + i);
                a = mx ? _mm512_max_ps(a, v) : _mm512_add_ps(a, v);
            }
            _mm512_storeu_ps(r + i, a);
        }
        if (Wv < W) {
            __m512 a = kn_ld16z(xp, dt, o0 + Wv, wm);
            for (int64_t ky = y0 + 1; ky < y1; ky++) {
                __m512 v = kn_ld16z(xp, dt, (offy + ky * g->dh) * W + Wv, wm);
                a = mx ? _mm512_max_ps(a, v) : _mm512_add_ps(a, v);
            }
            _mm512_mask_storeu_ps(r + Wv, wm, a);
        }
    }
    const __m512 cy = _mm512_set1_ps(
        mx ? 1.0f : (float)kp_count(oy, g->sh, g->pt, g->pb, g->dh, g->H, g->kh, cip));
    const int64_t sw = g->sw, dw = g->dw, kw = g->kw, Wo = g->Wo;
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t ox = 0; ox < Wo; ox += 16) {
        const __mmask16 om = Wo - ox >= 16 ? (__mmask16)0xffff : kn_tail(Wo - ox);
        __m512 a = id;
        const float *base = rb + ox * sw;
        if (sw == 1) {
            for (int64_t kx = 0; kx < kw; kx++) {
                __m512 v = _mm512_loadu_ps(base + kx * dw);
                a = mx ? _mm512_max_ps(a, v) : _mm512_add_ps(a, v);
            }
        } else if (sw == 2) {
            for (int64_t kx = 0; kx < kw; kx++) {
                const float *p = base + kx * dw;
                __m512 v =
                    _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps(p + 16));
                a = mx ? _mm512_max_ps(a, v) : _mm512_add_ps(a, v);
            }
        } else {
            const __m512i vi = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)sw));
            for (int64_t kx = 0; kx < kw; kx++) {
                __m512 v = _mm512_mask_i32gather_ps(id, om, vi, base + kx * dw, 4);
                a = mx ? _mm512_max_ps(a, v) : _mm512_add_ps(a, v);
            }
        }
        if (!mx) {
            __m512 c = _mm512_mul_ps(cy, _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), om, cx + ox));
            __mmask16 pos = _mm512_cmp_ps_mask(c, _mm512_setzero_ps(), _CMP_GT_OQ);
            a = _mm512_maskz_div_ps(pos, a, c);
        }
        if (om == 0xffff)
            kn_st16(yrow, dt, ox, a);
        else
            kn_st16m(yrow, dt, ox, a, om);
    }
}

/* ------------------------------------------------------------ NHWC */

static void kp_nhwc_row_scalar(const void *xn, void *yrow, pr_dtype dt, const kp_geom *g, int64_t C,
                               int64_t oy, bool mx, bool cip, float *acc) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const float id = mx ? -INFINITY : 0.0f;
    const int64_t cy = kp_count(oy, g->sh, g->pt, g->pb, g->dh, g->H, g->kh, cip);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        for (int64_t c = 0; c < C; c++) acc[c] = id;
        for (int64_t ky = y0; ky < y1; ky++)
            for (int64_t kx = x0; kx < x1; kx++) {
                const int64_t o = ((offy + ky * g->dh) * g->W + offx + kx * g->dw) * C;
                if (mx) {
                    for (int64_t c = 0; c < C; c++) {
                        const float v = kn_ld1(xn, dt, o + c);
                        acc[c] = v > acc[c] ? v : acc[c];
                    }
                } else {
                    for (int64_t c = 0; c < C; c++) acc[c] += kn_ld1(xn, dt, o + c);
                }
            }
        if (!mx) {
            const float cnt =
                (float)cy * (float)kp_count(ox, g->sw, g->pl, g->pr, g->dw, g->W, g->kw, cip);
            for (int64_t c = 0; c < C; c++) acc[c] = cnt > 0 ? acc[c] / cnt : 0.0f;
        }
        for (int64_t c = 0; c < C; c++) kn_st1(yrow, dt, ox * C + c, acc[c]);
    }
}

KN_AVX512 static void kp_nhwc_row_512(const void *xn, void *yrow, pr_dtype dt, const kp_geom *g,
                                      int64_t C, int64_t oy, bool mx, bool cip) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const __m512 id = _mm512_set1_ps(mx ? -INFINITY : 0.0f);
    const int64_t cy = kp_count(oy, g->sh, g->pt, g->pb, g->dh, g->H, g->kh, cip);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        __m512 cnt = _mm512_set1_ps(1.0f);
        __mmask16 pos = 0xffff;
        if (!mx) {
            const float c =
                (float)cy * (float)kp_count(ox, g->sw, g->pl, g->pr, g->dw, g->W, g->kw, cip);
            cnt = _mm512_set1_ps(c);
            pos = c > 0 ? 0xffff : 0;
        }
        int64_t c = 0;
        for (; c + 64 <= C; c += 64) {
            __m512 a0 = id, a1 = id, a2 = id, a3 = id;
            for (int64_t ky = y0; ky < y1; ky++)
                for (int64_t kx = x0; kx < x1; kx++) {
                    const int64_t o = ((offy + ky * g->dh) * g->W + offx + kx * g->dw) * C + c;
                    __m512 v0 = kn_ld16(xn, dt, o), v1 = kn_ld16(xn, dt, o + 16);
                    __m512 v2 = kn_ld16(xn, dt, o + 32), v3 = kn_ld16(xn, dt, o + 48);
                    if (mx) {
                        a0 = _mm512_max_ps(a0, v0);
                        a1 = _mm512_max_ps(a1, v1);
                        a2 = _mm512_max_ps(a2, v2);
                        a3 = _mm512_max_ps(a3, v3);
                    } else {
                        a0 = _mm512_add_ps(a0, v0);
                        a1 = _mm512_add_ps(a1, v1);
                        a2 = _mm512_add_ps(a2, v2);
                        a3 = _mm512_add_ps(a3, v3);
                    }
                }
            if (!mx) {
                a0 = _mm512_maskz_div_ps(pos, a0, cnt);
                a1 = _mm512_maskz_div_ps(pos, a1, cnt);
                a2 = _mm512_maskz_div_ps(pos, a2, cnt);
                a3 = _mm512_maskz_div_ps(pos, a3, cnt);
            }
            const int64_t yo = ox * C + c;
            kn_st16(yrow, dt, yo, a0);
            kn_st16(yrow, dt, yo + 16, a1);
            kn_st16(yrow, dt, yo + 32, a2);
            kn_st16(yrow, dt, yo + 48, a3);
        }
        for (; c < C; c += 16) {
            const __mmask16 cm = C - c >= 16 ? (__mmask16)0xffff : kn_tail(C - c);
            __m512 a = id;
            for (int64_t ky = y0; ky < y1; ky++)
                for (int64_t kx = x0; kx < x1; kx++) {
                    const int64_t o = ((offy + ky * g->dh) * g->W + offx + kx * g->dw) * C + c;
                    __m512 v = kn_ld16z(xn, dt, o, cm);
                    a = mx ? _mm512_max_ps(a, v) : _mm512_add_ps(a, v);
                }
            if (!mx) a = _mm512_maskz_div_ps(pos, a, cnt);
            kn_st16m(yrow, dt, ox * C + c, a, cm);
        }
    }
}

/* ------------------------------------------------------------ global */

KN_AVX512 static float kp_plane_512(const void *x, pr_dtype dt, int64_t n, bool mx) {
    if (mx) {
        const __m512 ninf = _mm512_set1_ps(-INFINITY);
        __m512 a0 = ninf, a1 = ninf;
        int64_t i = 0;
        for (; i + 32 <= n; i += 32) {
            a0 = _mm512_max_ps(a0, kn_ld16(x, dt, i));
            a1 = _mm512_max_ps(a1, kn_ld16(x, dt, i + 16));
        }
        for (; i + 16 <= n; i += 16) a0 = _mm512_max_ps(a0, kn_ld16(x, dt, i));
        if (i < n) a1 = _mm512_max_ps(a1, kn_ld16f(x, dt, i, kn_tail(n - i), ninf));
        return _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
    }
    double s = 0;
    for (int64_t b = 0; b < n; b += 4096) {
        const int64_t e = b + 4096 < n ? b + 4096 : n;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        int64_t i = b;
        for (; i + 32 <= e; i += 32) {
            a0 = _mm512_add_ps(a0, kn_ld16(x, dt, i));
            a1 = _mm512_add_ps(a1, kn_ld16(x, dt, i + 16));
        }
        for (; i + 16 <= e; i += 16) a0 = _mm512_add_ps(a0, kn_ld16(x, dt, i));
        if (i < e) a1 = _mm512_add_ps(a1, kn_ld16z(x, dt, i, kn_tail(e - i)));
        s += _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    }
    return n > 0 ? (float)(s / (double)n) : 0.0f;
}

static float kp_plane_scalar(const void *x, pr_dtype dt, int64_t n, bool mx) {
    if (mx) {
        float m = n > 0 ? kn_ld1(x, dt, 0) : -INFINITY;
        for (int64_t i = 1; i < n; i++) {
            const float v = kn_ld1(x, dt, i);
            m = v > m ? v : m;
        }
        return m;
    }
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += kn_ld1(x, dt, i);
    return n > 0 ? (float)(s / (double)n) : 0.0f;
}

static precis_status kp_global(const kp_state *s, pr_kernel *k, pr_cpu_exec *x, const pr_buf *X,
                               pr_buf *Y) {
    if (X->rank < 3) return pr_kernelf(k, PRECIS_ERR_SHAPE, "X must have rank >= 3");
    const int64_t N = X->dims[0], C = X->dims[1], planes = N * C;
    if (Y->numel != planes) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "Y size mismatch");
    if (planes == 0) return PRECIS_OK;
    const int64_t P = X->numel / planes;
    const pr_dtype dt = X->dtype;
    const size_t es = pr_dtype_size(dt);
    const unsigned char *xd = X->data;
    unsigned char *yd = Y->data;
    const bool mx = s->kind == KP_GMAX, v512 = s->v512;
    if (!s->nhwc) {
        const int nt = kn_threads(x->num_threads, X->numel, planes);
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t pl = 0; pl < planes; pl++) {
            const void *xp = xd + (size_t)(pl * P) * es;
            kn_st1(yd, dt, pl, v512 ? kp_plane_512(xp, dt, P, mx) : kp_plane_scalar(xp, dt, P, mx));
        }
        return PRECIS_OK;
    }
    if (X->rank != 4) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "NHWC input must have rank 4");
    /* chunks of pixels reduced per channel in parallel (contiguous reads),
     * then the chunk partials combined (sums in double) */
    const int64_t nch = P > 0 ? (P + KN_NHWC_CHUNK - 1) / KN_NHWC_CHUNK : 1, tasks = N * nch;
    const size_t Cp = kn_pad16(C);
    float *part = pr_cpu_scratch(x, (size_t)tasks * Cp * sizeof(float));
    if (!part) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const int nt = kn_threads(x->num_threads, X->numel, tasks);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t q = 0; q < tasks; q++) {
        const int64_t n = q / nch, p0 = (q % nch) * KN_NHWC_CHUNK;
        const int64_t np = P - p0 < KN_NHWC_CHUNK ? P - p0 : KN_NHWC_CHUNK;
        float *acc = part + (size_t)q * Cp;
        for (int64_t c = 0; c < C; c++) acc[c] = mx ? -INFINITY : 0.0f;
        const void *xs = xd + (size_t)((n * P + p0) * C) * es;
        if (np <= 0) continue;
        if (v512)
            kn_nhwc_acc_512(xs, dt, np, C, mx ? KN_MAX : KN_SUM, NULL, acc);
        else
            kn_nhwc_acc_scalar(xs, dt, np, C, mx ? KN_MAX : KN_SUM, NULL, acc);
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            float v;
            if (mx) {
                v = -INFINITY;
                for (int64_t ch = 0; ch < nch; ch++) {
                    const float a = part[(size_t)(n * nch + ch) * Cp + c];
                    v = a > v ? a : v;
                }
            } else {
                double sum = 0;
                for (int64_t ch = 0; ch < nch; ch++) sum += part[(size_t)(n * nch + ch) * Cp + c];
                v = P > 0 ? (float)(sum / (double)P) : 0.0f;
            }
            kn_st1(yd, dt, n * C + c, v);
        }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ int8 max */

/* Bytes in the unsigned order: v ^ flip (flip 0x80 for int8, 0 for uint8);
 * the identity (padding) is 0. */

static void kq_row_scalar(const uint8_t *xp, uint8_t *yrow, uint8_t flip, const kp_geom *g,
                          int64_t oy, uint8_t *rb) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    uint8_t *r = rb + g->pl;
    memset(r, 0, (size_t)g->W);
    for (int64_t ky = y0; ky < y1; ky++) {
        const uint8_t *xr = xp + (offy + ky * g->dh) * g->W;
        for (int64_t i = 0; i < g->W; i++) {
            const uint8_t v = xr[i] ^ flip;
            r[i] = v > r[i] ? v : r[i];
        }
    }
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        const uint8_t *w = rb + ox * g->sw;
        uint8_t a = 0;
        for (int64_t kx = 0; kx < g->kw; kx++) a = w[kx * g->dw] > a ? w[kx * g->dw] : a;
        yrow[ox] = a ^ flip;
    }
}

static void kq_nhwc_row_scalar(const uint8_t *xn, uint8_t *yrow, uint8_t flip, const kp_geom *g,
                               int64_t C, int64_t oy, uint8_t *acc) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        memset(acc, 0, (size_t)C);
        for (int64_t ky = y0; ky < y1; ky++)
            for (int64_t kx = x0; kx < x1; kx++) {
                const uint8_t *xs = xn + ((offy + ky * g->dh) * g->W + offx + kx * g->dw) * C;
                for (int64_t c = 0; c < C; c++) {
                    const uint8_t v = xs[c] ^ flip;
                    acc[c] = v > acc[c] ? v : acc[c];
                }
            }
        for (int64_t c = 0; c < C; c++) yrow[ox * C + c] = acc[c] ^ flip;
    }
}

KN_AVX512 static inline __mmask64 kq_tail(int64_t n) {
    return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
}

/* rb: L + 64 bytes of slack past the padded row (stride-1 vector reads) */
KN_AVX512 static void kq_row_512(const uint8_t *xp, uint8_t *yrow, uint8_t flip, const kp_geom *g,
                                 int64_t oy, uint8_t *rb) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const __m512i fl = _mm512_set1_epi8((char)flip);
    uint8_t *r = rb + g->pl;
    for (int64_t i = 0; i < g->W; i += 64) {
        const __mmask64 m = kq_tail(g->W - i);
        __m512i a = _mm512_setzero_si512();
        for (int64_t ky = y0; ky < y1; ky++) {
            __m512i v = _mm512_maskz_loadu_epi8(m, xp + (offy + ky * g->dh) * g->W + i);
            a = _mm512_max_epu8(a, _mm512_xor_si512(v, fl));
        }
        _mm512_mask_storeu_epi8(r + i, m, a);
    }
    if (g->sw != 1) {
        for (int64_t ox = 0; ox < g->Wo; ox++) {
            const uint8_t *w = rb + ox * g->sw;
            uint8_t a = 0;
            for (int64_t kx = 0; kx < g->kw; kx++) a = w[kx * g->dw] > a ? w[kx * g->dw] : a;
            yrow[ox] = a ^ flip;
        }
        return;
    }
    for (int64_t ox = 0; ox < g->Wo; ox += 64) {
        const __mmask64 m = kq_tail(g->Wo - ox);
        __m512i a = _mm512_setzero_si512();
        for (int64_t kx = 0; kx < g->kw; kx++)
            a = _mm512_max_epu8(a, _mm512_loadu_si512((const void *)(rb + ox + kx * g->dw)));
        _mm512_mask_storeu_epi8(yrow + ox, m, _mm512_xor_si512(a, fl));
    }
}

KN_AVX512 static void kq_nhwc_row_512(const uint8_t *xn, uint8_t *yrow, uint8_t flip,
                                      const kp_geom *g, int64_t C, int64_t oy) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const __m512i fl = _mm512_set1_epi8((char)flip);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        for (int64_t c = 0; c < C; c += 64) {
            const __mmask64 m = kq_tail(C - c);
            __m512i a = _mm512_setzero_si512();
            for (int64_t ky = y0; ky < y1; ky++)
                for (int64_t kx = x0; kx < x1; kx++) {
                    const int64_t o = ((offy + ky * g->dh) * g->W + offx + kx * g->dw) * C + c;
                    __m512i v = _mm512_maskz_loadu_epi8(m, xn + o);
                    a = _mm512_max_epu8(a, _mm512_xor_si512(v, fl));
                }
            _mm512_mask_storeu_epi8(yrow + ox * C + c, m, _mm512_xor_si512(a, fl));
        }
    }
}

static precis_status kq_maxpool(const kp_state *s, pr_kernel *k, pr_cpu_exec *x, const pr_buf *X,
                                pr_buf *Y, kp_geom *g) {
    const int64_t N = X->dims[0], C = X->dims[1];
    const uint8_t flip = X->dtype == PRECIS_INT8 ? 0x80 : 0;
    const uint8_t *xd = X->data;
    uint8_t *yd = Y->data;
    const bool v512 = s->v512;
    const int64_t work = Y->numel * g->kh * g->kw + X->numel;
    if (s->nhwc) {
        const int64_t tasks = N * g->Ho;
        const int nt = kn_threads(x->num_threads, work, tasks);
        const size_t per = (size_t)((C + 63) & ~(int64_t)63);
        uint8_t *acc = NULL;
        if (!v512 && !(acc = pr_cpu_scratch(x, (size_t)nt * per)))
            return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t q = 0; q < tasks; q++) {
            const int64_t n = q / g->Ho, oy = q % g->Ho;
            const uint8_t *xn = xd + n * g->H * g->W * C;
            uint8_t *yrow = yd + (n * g->Ho + oy) * g->Wo * C;
            if (v512)
                kq_nhwc_row_512(xn, yrow, flip, g, C, oy);
            else
                kq_nhwc_row_scalar(xn, yrow, flip, g, C, oy,
                                   acc + (size_t)omp_get_thread_num() * per);
        }
        return PRECIS_OK;
    }
    int64_t L = g->pl + g->W + g->pr, need = (g->Wo - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    if (need > L) L = need;
    const size_t per = (size_t)((L + 64 + 63) & ~(int64_t)63);
    const int64_t tasks = N * C * g->Ho;
    const int nt = kn_threads(x->num_threads, work, tasks);
    uint8_t *scr = pr_cpu_scratch(x, (size_t)nt * per);
    if (!scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
#pragma omp parallel num_threads(nt)
    {
        uint8_t *rb = scr + (size_t)omp_get_thread_num() * per;
        memset(rb, 0, per); /* the pads stay identity */
#pragma omp for schedule(static)
        for (int64_t q = 0; q < tasks; q++) {
            const int64_t pl = q / g->Ho, oy = q % g->Ho;
            const uint8_t *xp = xd + pl * g->H * g->W;
            uint8_t *yrow = yd + (pl * g->Ho + oy) * g->Wo;
            if (v512)
                kq_row_512(xp, yrow, flip, g, oy, rb);
            else
                kq_row_scalar(xp, yrow, flip, g, oy, rb);
        }
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ int8 average (QPool) */

/* QPool: R = pool(xs * X), Y = R (float32) or saturate(round(R * inv)).
 * Sums of the bytes are exact integers; R = xs * sum / count in double
 * (windows: sum * (xs / count)), rounded to float (the ref sums the real
 * values in float, so R may differ in its last bits and a requantized Y by
 * one unit near halves). */
static inline void kq_put(void *y, pr_dtype ydt, int64_t i, float r, float inv) {
    if (ydt == PRECIS_FLOAT32)
        ((float *)y)[i] = r;
    else if (ydt == PRECIS_UINT8)
        ((uint8_t *)y)[i] = (uint8_t)ps_q8_round(r * inv, 0.0f, 255.0f);
    else
        ((int8_t *)y)[i] = (int8_t)ps_q8_round(r * inv, -128.0f, 127.0f);
}

/* Sum of n bytes (int8 when flip is 0x80, else uint8). */
static int64_t kq_sum_scalar(const uint8_t *x, int64_t n, uint8_t flip) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) s += flip ? (int64_t)(int8_t)x[i] : (int64_t)x[i];
    return s;
}

KN_AVX512 static int64_t kq_sum_512(const uint8_t *x, int64_t n, uint8_t flip) {
    const __m512i fl = _mm512_set1_epi8((char)flip), z = _mm512_setzero_si512();
    __m512i acc = z;
    for (int64_t i = 0; i < n; i += 64) {
        const __mmask64 m = kq_tail(n - i);
        const __m512i b = _mm512_maskz_loadu_epi8(m, x + i);
        const __m512i v = _mm512_maskz_mov_epi8(m, _mm512_xor_si512(b, fl));
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(v, z)); /* 8 sums of 8 bytes */
    }
    const int64_t s = _mm512_reduce_add_epi64(acc);
    return flip ? s - 128 * n : s; /* int8 x = (x ^ 0x80) - 128 */
}

/* NHWC: acc[c] += x[p * C + c] over P pixels, int32 (C padded to 64 in acc). */
static void kq_acc_scalar(const uint8_t *x, int64_t P, int64_t C, bool s8, int32_t *acc) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t c = 0; c < C; c++)
            acc[c] += s8 ? (int32_t)(int8_t)x[p * C + c] : (int32_t)x[p * C + c];
}

/* acc[c..c+64) += pixel rows, 64 channels at a time (acc padded to 64).
 * The bytes are summed in 16-bit lanes over runs of up to 256 pixels (256 *
 * -128 and 256 * 127 fit int16, 256 * 255 fits uint16: exact) and widened
 * into the int32 sums after each run: per 64 bytes two widening loads and
 * two adds instead of four extracts, four widenings and four adds. */
#define KQ_RUN16 256
KN_AVX512 static inline __m512i kq_w16(const uint8_t *p, __mmask32 m, bool s8) {
    const __m256i v = _mm256_maskz_loadu_epi8(m, p);
    return s8 ? _mm512_cvtepi8_epi16(v) : _mm512_cvtepu8_epi16(v);
}
KN_AVX512 static inline __m512i kq_w32(__m256i h, bool s8) {
    return s8 ? _mm512_cvtepi16_epi32(h) : _mm512_cvtepu16_epi32(h);
}
KN_AVX512 static void kq_acc_512(const uint8_t *x, int64_t P, int64_t C, bool s8, int32_t *acc) {
    for (int64_t c = 0; c < C; c += 64) {
        const __mmask64 m = kq_tail(C - c);
        const __mmask32 m0 = (__mmask32)m, m1 = (__mmask32)(m >> 32);
        __m512i a0 = _mm512_loadu_si512((const void *)(acc + c));
        __m512i a1 = _mm512_loadu_si512((const void *)(acc + c + 16));
        __m512i a2 = _mm512_loadu_si512((const void *)(acc + c + 32));
        __m512i a3 = _mm512_loadu_si512((const void *)(acc + c + 48));
        for (int64_t p0 = 0; p0 < P; p0 += KQ_RUN16) {
            const int64_t p1 = P - p0 < KQ_RUN16 ? P : p0 + KQ_RUN16;
            __m512i h0 = _mm512_setzero_si512(), h1 = _mm512_setzero_si512();
            if (m1)
                for (int64_t p = p0; p < p1; p++) {
                    h0 = _mm512_add_epi16(h0, kq_w16(x + p * C + c, m0, s8));
                    h1 = _mm512_add_epi16(h1, kq_w16(x + p * C + c + 32, m1, s8));
                }
            else /* a tail of <= 32 channels */
                for (int64_t p = p0; p < p1; p++)
                    h0 = _mm512_add_epi16(h0, kq_w16(x + p * C + c, m0, s8));
            a0 = _mm512_add_epi32(a0, kq_w32(_mm512_castsi512_si256(h0), s8));
            a1 = _mm512_add_epi32(a1, kq_w32(_mm512_extracti64x4_epi64(h0, 1), s8));
            a2 = _mm512_add_epi32(a2, kq_w32(_mm512_castsi512_si256(h1), s8));
            a3 = _mm512_add_epi32(a3, kq_w32(_mm512_extracti64x4_epi64(h1, 1), s8));
        }
        _mm512_storeu_si512((void *)(acc + c), a0);
        _mm512_storeu_si512((void *)(acc + c + 16), a1);
        _mm512_storeu_si512((void *)(acc + c + 32), a2);
        _mm512_storeu_si512((void *)(acc + c + 48), a3);
    }
}

/* kq_put of n int32 sums as (float)(xs * sum / P) in double, the scalar
 * path's operations in its order (IEEE: the same results), at y + i. */
KN_AVX512 static void kq_put_div_512(void *y, pr_dtype ydt, int64_t i, const int32_t *sum,
                                     int64_t n, double xs, int64_t P, float inv) {
    const __m512d x8 = _mm512_set1_pd(xs), p8 = _mm512_set1_pd((double)P);
    const bool u8 = ydt == PRECIS_UINT8;
    const __m512 vi = _mm512_set1_ps(inv), lo = _mm512_set1_ps(u8 ? 0.0f : -128.0f),
                 hi = _mm512_set1_ps(u8 ? 255.0f : 127.0f);
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 m = n - c >= 16 ? (__mmask16)0xffff : kn_tail(n - c);
        const __m512i a = _mm512_maskz_loadu_epi32(m, sum + c);
        const __m256 r0 = _mm512_cvtpd_ps(_mm512_div_pd(
            _mm512_mul_pd(x8, _mm512_cvtepi32_pd(_mm512_castsi512_si256(a))), p8));
        const __m256 r1 = _mm512_cvtpd_ps(_mm512_div_pd(
            _mm512_mul_pd(x8, _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(a, 1))), p8));
        const __m512 r = _mm512_insertf32x8(_mm512_castps256_ps512(r0), r1, 1);
        if (ydt == PRECIS_FLOAT32)
            _mm512_mask_storeu_ps((float *)y + i + c, m, r);
        else
            pv_q8_store_m(y, i + c, pv_q8_round(_mm512_mul_ps(r, vi), lo, hi), m);
    }
}

static inline size_t kq_pad64(int64_t n) { return (size_t)((n + 63) & ~(int64_t)63); }

static precis_status kq_global_avg(const kp_state *s, pr_kernel *k, pr_cpu_exec *x,
                                   const pr_buf *X, pr_buf *Y) {
    if (X->rank < 3) return pr_kernelf(k, PRECIS_ERR_SHAPE, "X must have rank >= 3");
    const int64_t N = X->dims[0], C = X->dims[1], planes = N * C;
    if (Y->numel != planes) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "Y size mismatch");
    if (planes == 0) return PRECIS_OK;
    const int64_t P = X->numel / planes;
    const uint8_t flip = X->dtype == PRECIS_INT8 ? 0x80 : 0;
    const uint8_t *xd = X->data;
    const double xs = s->xs;
    if (!s->nhwc) {
        const int nt = kn_threads(x->num_threads, X->numel, planes);
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t pl = 0; pl < planes; pl++) {
            const uint8_t *xp = xd + pl * P;
            const int64_t sum = s->v512 ? kq_sum_512(xp, P, flip) : kq_sum_scalar(xp, P, flip);
            kq_put(Y->data, Y->dtype, pl, P > 0 ? (float)(xs * (double)sum / (double)P) : 0.0f,
                   s->inv);
        }
        return PRECIS_OK;
    }
    if (X->rank != 4) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "NHWC input must have rank 4");
    /* chunks of pixels summed per channel in parallel, then combined */
    const int64_t nch = P > 0 ? (P + KN_NHWC_CHUNK - 1) / KN_NHWC_CHUNK : 1, tasks = N * nch;
    const size_t Cp = kq_pad64(C);
    int32_t *part = pr_cpu_scratch(x, (size_t)tasks * Cp * sizeof(int32_t));
    if (!part) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const int nt = kn_threads(x->num_threads, X->numel, tasks);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t q = 0; q < tasks; q++) {
        const int64_t n = q / nch, p0 = (q % nch) * KN_NHWC_CHUNK;
        const int64_t np = P - p0 < KN_NHWC_CHUNK ? P - p0 : KN_NHWC_CHUNK;
        int32_t *acc = part + (size_t)q * Cp;
        memset(acc, 0, Cp * sizeof *acc);
        if (np <= 0) continue;
        const uint8_t *xs8 = xd + (n * P + p0) * C;
        if (s->v512)
            kq_acc_512(xs8, np, C, flip != 0, acc);
        else
            kq_acc_scalar(xs8, np, C, flip != 0, acc);
    }
    for (int64_t n = 0; n < N; n++) {
        if (s->v512 && nch == 1 && P > 0) { /* one chunk: the sums are final */
            kq_put_div_512(Y->data, Y->dtype, n * C, part + (size_t)n * Cp, C, xs, P, s->inv);
            continue;
        }
        for (int64_t c = 0; c < C; c++) {
            int64_t sum = 0;
            for (int64_t ch = 0; ch < nch; ch++) sum += part[(size_t)(n * nch + ch) * Cp + c];
            kq_put(Y->data, Y->dtype, n * C + c,
                   P > 0 ? (float)(xs * (double)sum / (double)P) : 0.0f, s->inv);
        }
    }
    return PRECIS_OK;
}

/* kq_put of n int32 sums times f (R = (float)(sum * f), in double as the
 * scalar path) at y + i. */
KN_AVX512 static void kq_put_512(void *y, pr_dtype ydt, int64_t i, const int32_t *sum, int64_t n,
                                 double f, float inv) {
    const __m512d f8 = _mm512_set1_pd(f);
    const bool u8 = ydt == PRECIS_UINT8;
    const __m512 vi = _mm512_set1_ps(inv), lo = _mm512_set1_ps(u8 ? 0.0f : -128.0f),
                 hi = _mm512_set1_ps(u8 ? 255.0f : 127.0f);
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 m = n - c >= 16 ? (__mmask16)0xffff : kn_tail(n - c);
        const __m512i a = _mm512_maskz_loadu_epi32(m, sum + c);
        const __m256 r0 = _mm512_cvtpd_ps(_mm512_mul_pd(
            _mm512_cvtepi32_pd(_mm512_castsi512_si256(a)), f8));
        const __m256 r1 = _mm512_cvtpd_ps(_mm512_mul_pd(
            _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(a, 1)), f8));
        const __m512 r = _mm512_insertf32x8(_mm512_castps256_ps512(r0), r1, 1);
        if (ydt == PRECIS_FLOAT32)
            _mm512_mask_storeu_ps((float *)y + i + c, m, r);
        else
            pv_q8_store_m(y, i + c, pv_q8_round(_mm512_mul_ps(r, vi), lo, hi), m);
    }
}

/* Window sums, NHWC: one output row, every pixel's valid taps summed per
 * channel (acc: C padded to 64 int32). */
static void kq_avg_nhwc_row(const kp_state *s, const uint8_t *xn, void *y, pr_dtype ydt,
                            const kp_geom *g, int64_t C, int64_t oy, bool s8, int32_t *acc) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const int64_t cy = kp_count(oy, g->sh, g->pt, g->pb, g->dh, g->H, g->kh, s->cip);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        memset(acc, 0, kq_pad64(C) * sizeof *acc);
        for (int64_t ky = y0; ky < y1; ky++)
            for (int64_t kx = x0; kx < x1; kx++) {
                const uint8_t *px = xn + ((offy + ky * g->dh) * g->W + offx + kx * g->dw) * C;
                if (s->v512)
                    kq_acc_512(px, 1, C, s8, acc);
                else
                    kq_acc_scalar(px, 1, C, s8, acc);
            }
        const double cnt =
            (double)cy * (double)kp_count(ox, g->sw, g->pl, g->pr, g->dw, g->W, g->kw, s->cip);
        const double f = cnt > 0 ? (double)s->xs / cnt : 0.0;
        const int64_t o = (oy * g->Wo + ox) * C;
        if (s->v512) {
            kq_put_512(y, ydt, o, acc, C, f, s->inv);
        } else {
            for (int64_t c = 0; c < C; c++) kq_put(y, ydt, o + c, (float)(acc[c] * f), s->inv);
        }
    }
}

/* Plain: one output row of one plane, taps summed one by one. */
static void kq_avg_row(const kp_state *s, const uint8_t *xp, void *y, pr_dtype ydt,
                       const kp_geom *g, int64_t oy, bool s8) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const int64_t cy = kp_count(oy, g->sh, g->pt, g->pb, g->dh, g->H, g->kh, s->cip);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        int32_t sum = 0;
        for (int64_t ky = y0; ky < y1; ky++) {
            const uint8_t *r = xp + (offy + ky * g->dh) * g->W + offx;
            for (int64_t kx = x0; kx < x1; kx++)
                sum += s8 ? (int32_t)(int8_t)r[kx * g->dw] : (int32_t)r[kx * g->dw];
        }
        const double cnt =
            (double)cy * (double)kp_count(ox, g->sw, g->pl, g->pr, g->dw, g->W, g->kw, s->cip);
        kq_put(y, ydt, oy * g->Wo + ox, (float)(sum * (cnt > 0 ? (double)s->xs / cnt : 0.0)),
               s->inv);
    }
}

static precis_status kq_avgpool(const kp_state *s, pr_kernel *k, pr_cpu_exec *x, const pr_buf *X,
                                pr_buf *Y, const kp_geom *g) {
    const int64_t N = X->dims[0], C = X->dims[1];
    const bool s8 = X->dtype == PRECIS_INT8;
    const uint8_t *xd = X->data;
    unsigned char *yd = Y->data;
    const size_t ye = pr_dtype_size(Y->dtype);
    const int64_t work = Y->numel * g->kh * g->kw + X->numel;
    if (s->nhwc) {
        const int64_t tasks = N * g->Ho;
        const int nt = kn_threads(x->num_threads, work, tasks);
        const size_t per = kq_pad64(C);
        int32_t *acc = pr_cpu_scratch(x, (size_t)nt * per * sizeof(int32_t));
        if (!acc) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t q = 0; q < tasks; q++) {
            const int64_t n = q / g->Ho, oy = q % g->Ho;
            kq_avg_nhwc_row(s, xd + n * g->H * g->W * C, yd + (size_t)(n * g->Ho * g->Wo * C) * ye,
                            Y->dtype, g, C, oy, s8, acc + (size_t)omp_get_thread_num() * per);
        }
        return PRECIS_OK;
    }
    const int64_t tasks = N * C * g->Ho;
    const int nt = kn_threads(x->num_threads, work, tasks);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t q = 0; q < tasks; q++) {
        const int64_t pl = q / g->Ho, oy = q % g->Ho;
        kq_avg_row(s, xd + pl * g->H * g->W, yd + (size_t)(pl * g->Ho * g->Wo) * ye, Y->dtype, g,
                   oy, s8);
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ run */

static precis_status kp_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    const kp_state *s = state;
    const pr_buf *X = pr_kin(k, 0);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X || !Y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing X or Y");
    const pr_dtype dt = X->dtype;
    const bool q8 = kp_q8(dt) && s->kind == KP_MAX;
    if (s->q ? !kp_q8(dt) || (Y->dtype != PRECIS_FLOAT32 && !kp_q8(Y->dtype))
             : (!kn_act_dtype(dt) && !q8) || Y->dtype != dt)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported types %s -> %s",
                          pr_dtype_name(dt), pr_dtype_name(Y->dtype));
    if (s->q && s->kind == KP_GAVG) return kq_global_avg(s, k, x, X, Y);
    if (s->kind == KP_GMAX || s->kind == KP_GAVG) return kp_global(s, k, x, X, Y);
    if (X->rank != 4) return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "only 2-D pools are supported");
    pr_conv_geom cg;
    precis_status st =
        pr_conv_geom_init(k->node, PR_CONV_KIND_POOL, 2, X->dims + 2, NULL, k->err, &cg);
    if (st) return st;
    for (int i = 0; i < 2; i++)
        if (!cg.pads_known || !pr_dim_known(cg.out[i]) || Y->rank != 4 ||
            Y->dims[2 + i] != cg.out[i])
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output buffer does not match the window");
    if (Y->dims[0] != X->dims[0] || Y->dims[1] != X->dims[1])
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output buffer does not match the input");
    kp_geom g = {
        .H = X->dims[2],
        .W = X->dims[3],
        .Ho = cg.out[0],
        .Wo = cg.out[1],
        .kh = cg.kernel[0],
        .kw = cg.kernel[1],
        .sh = cg.stride[0],
        .sw = cg.stride[1],
        .dh = cg.dil[0],
        .dw = cg.dil[1],
        .pt = cg.pad_b[0],
        .pl = cg.pad_b[1],
        .pb = cg.pad_e[0],
        .pr = cg.pad_e[1],
    };
    if (Y->numel == 0) return PRECIS_OK;
    if (q8) return kq_maxpool(s, k, x, X, Y, &g);
    if (s->q) return kq_avgpool(s, k, x, X, Y, &g);
    const int64_t N = X->dims[0], C = X->dims[1];
    const bool mx = s->kind == KP_MAX, cip = s->cip, v512 = s->v512;
    const size_t es = pr_dtype_size(dt);
    const unsigned char *xd = X->data;
    unsigned char *yd = Y->data;
    const int64_t work = Y->numel * g.kh * g.kw + X->numel;
    if (s->nhwc) {
        const int64_t tasks = N * g.Ho;
        const int nt = kn_threads(x->num_threads, work, tasks);
        float *acc = NULL;
        if (!v512) {
            acc = pr_cpu_scratch(x, (size_t)nt * kn_pad16(C) * sizeof(float));
            if (!acc) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
        }
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t q = 0; q < tasks; q++) {
            const int64_t n = q / g.Ho, oy = q % g.Ho;
            const void *xn = xd + (size_t)(n * g.H * g.W * C) * es;
            void *yrow = yd + (size_t)((n * g.Ho + oy) * g.Wo * C) * es;
            if (v512)
                kp_nhwc_row_512(xn, yrow, dt, &g, C, oy, mx, cip);
            else
                kp_nhwc_row_scalar(xn, yrow, dt, &g, C, oy, mx, cip,
                                   acc + (size_t)omp_get_thread_num() * kn_pad16(C));
        }
        return PRECIS_OK;
    }
    /* plain: padded row buffer per thread, x counts shared */
    int64_t L = g.pl + g.W + g.pr, need = (g.Wo - 1) * g.sw + (g.kw - 1) * g.dw + 1;
    if (need > L) L = need;
    g.L = L + 48;
    const int64_t planes = N * C, tasks = planes * g.Ho;
    const int nt = kn_threads(x->num_threads, work, tasks);
    const size_t per = kn_pad16(g.L);
    float *scr = pr_cpu_scratch(x, ((size_t)nt * per + kn_pad16(g.Wo)) * sizeof(float));
    if (!scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    float *cx = scr + (size_t)nt * per;
    for (int64_t ox = 0; ox < g.Wo; ox++)
        cx[ox] = (float)kp_count(ox, g.sw, g.pl, g.pr, g.dw, g.W, g.kw, cip);
    const float idv = mx ? -INFINITY : 0.0f;
#pragma omp parallel num_threads(nt)
    {
        float *rb = scr + (size_t)omp_get_thread_num() * per;
        for (int64_t i = 0; i < g.L; i++) rb[i] = idv;
#pragma omp for schedule(static)
        for (int64_t q = 0; q < tasks; q++) {
            const int64_t pl = q / g.Ho, oy = q % g.Ho;
            const void *xp = xd + (size_t)(pl * g.H * g.W) * es;
            void *yrow = yd + (size_t)((pl * g.Ho + oy) * g.Wo) * es;
            if (v512)
                kp_row_512(xp, yrow, dt, &g, oy, mx, cip, cx, rb);
            else
                kp_row_scalar(xp, yrow, dt, &g, oy, mx, cip, cx, rb);
        }
    }
    return PRECIS_OK;
}

const pr_cpu_impl pr_cpu_impl_pool = {
    .name = "pool",
    .supports = kp_supports,
    .nhwc_ok = kp_nhwc_ok,
    .inplace_input = NULL,
    .prepare = kp_prepare,
    .run = kp_run,
    .describe = kp_describe,
    .destroy = kp_destroy,
};

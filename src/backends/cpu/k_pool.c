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
 * chunks of pixels (NHWC, 64 channels at a time, in 16-bit lanes over runs
 * of 256 pixels widened into int32 sums); windows per output pixel, 64
 * channels at a time (NHWC) or tap by tap in scalar C (plain, rare in INT8
 * plans). The int8/uint8 kernels are in k_qpool.c (k_pool.h: the shared
 * state and geometry). */
#define PR_KN_INTERNAL
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_norm.h"
#include "backends/cpu/k_pool.h"
#include "backends/cpu/vec.h"
#include "backends/ref/ref_conv.h"

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
    if (s->q && s->kind == KP_GAVG) return pr_kq_global_avg(s, k, x, X, Y);
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
    if (q8) return pr_kq_maxpool(s, k, x, X, Y, &g);
    if (s->q) return pr_kq_avgpool(s, k, x, X, Y, &g);
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

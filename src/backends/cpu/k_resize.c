/* Resize (opsets 10-19) and Upsample over H and W of a rank-4 tensor, for
 * float32/bfloat16/float16 (int8/uint8 too for nearest, in INT8 plans), plain or NHWC.
 *
 * The parameters come from pr_resize_plan_make (src/ir/infer_resize.c) at
 * run time, so constant and run-time scales/sizes are the same case. Modes:
 * nearest (every nearest_mode), linear and cubic without antialias, every
 * coordinate_transformation_mode but tf_crop_and_resize; the per-axis taps
 * (source indices and weights) follow ref_resize.c exactly, including
 * exclude_outside and edge clamping. supports() declines antialias and
 * tf_crop_and_resize; a plan that resizes N or C (known only at run time)
 * is handed to the ref kernel (through a plain copy for NHWC tensors).
 *
 * nearest: an element gather per output row; rows that repeat the previous
 *          row's source are copied. NHWC copies whole pixels.
 * linear / cubic: separable per output row: the vertical taps are combined
 *          into a float row (W values, or W*C for NHWC), then the horizontal
 *          taps: gathers across W for plain tensors, contiguous channel
 *          vectors for NHWC. Rows of all planes/images run in parallel. */
#define PR_KN_INTERNAL
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/kernels_norm.h"
#include "backends/ref/ref_resize.h"
#include "backends/ref/ref_tensor.h"

typedef struct kr_state {
    bool v512, nhwc;
} kr_state;

/* Per-axis taps, planar: idx[q * out + o], w[q * out + o]. */
typedef struct kr_axis {
    int64_t in, out;
    int n;
    bool ident;
    int32_t *idx;
    float *w;
} kr_axis;

/* ------------------------------------------------------------ plan */

static bool kr_plan(const pr_node *n, int nin, const pr_tinfo *tin, pr_err *e, pr_resize_plan *p,
                    bool *known) {
    pr_infer ic = {NULL, n, nin, tin, 0, NULL, e};
    return pr_resize_plan_make(&ic, p, known) == PRECIS_OK;
}

static bool kr_q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }

static bool kr_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_Resize && n->op != PR_OP_Upsample) return false;
    int xi = pr_node_in(n, 0), yi = pr_node_out(n, 0);
    if (xi < 0 || yi < 0) return false;
    const pr_tensor *X = &g->tensors[xi], *Y = &g->tensors[yi];
    if ((!kn_act_dtype(X->dtype) && !kr_q8(X->dtype)) || X->rank != 4) return false;
    if (Y->dtype != PRECIS_UNDEFINED && Y->dtype != X->dtype) return false;
    if (X->layout != Y->layout) return false;
    if (X->layout != PR_LAYOUT_PLAIN && X->layout != PR_LAYOUT_NHWC) return false;
    pr_tinfo tin[PR_REF_KIC_MAX];
    int nin = n->n_inputs < PR_REF_KIC_MAX ? n->n_inputs : PR_REF_KIC_MAX;
    for (int i = 0; i < nin; i++) {
        memset(&tin[i], 0, sizeof tin[i]);
        tin[i].rank = -1;
        int ti = pr_node_in(n, i);
        if (ti < 0) continue;
        const pr_tensor *t = &g->tensors[ti];
        tin[i].dtype = t->dtype;
        tin[i].rank = t->rank;
        if (t->rank > 0) memcpy(tin[i].dims, t->dims, (size_t)t->rank * sizeof(int64_t));
        tin[i].value = (t->flags & PR_T_INIT) ? t->data : NULL;
    }
    pr_err e = {0};
    pr_resize_plan p;
    bool known;
    if (!kr_plan(n, nin, tin, &e, &p, &known)) return false;
    if (p.antialias || p.coord == PR_COORD_TF_CROP_AND_RESIZE) return false;
    /* int8 (INT8 plans): nearest only, a pure gather */
    return !kr_q8(X->dtype) || p.mode == PR_RESIZE_NEAREST;
}

static bool kr_nhwc_ok(const pr_graph *g, const pr_node *n) {
    int xi = pr_node_in(n, 0);
    return xi >= 0 && g->tensors[xi].rank == 4;
}

static precis_status kr_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    kr_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "node '%s' (%s): out of memory", n->name, n->op_type);
    s->v512 = kn_have_avx512();
    s->nhwc = g->tensors[pr_node_in(n, 0)].layout == PR_LAYOUT_NHWC;
    if (g->tensors[pr_node_out(n, 0)].layout != g->tensors[pr_node_in(n, 0)].layout) {
        free(s);
        return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s' (%s): input and output layouts differ",
                       n->name, n->op_type);
    }
    *state = s;
    return PRECIS_OK;
}

static const char *kr_describe(void *state) {
    const kr_state *s = state;
    if (s->v512) return s->nhwc ? "resize:avx512:nhwc" : "resize:avx512";
    return s->nhwc ? "resize:scalar:nhwc" : "resize:scalar";
}

static void kr_destroy(void *state) { free(state); }

/* ------------------------------------------------------------ taps (ref_resize.h) */

static int kr_ntaps(const pr_resize_plan *p, int d, int64_t in, int64_t out) {
    if (out == 0) return 0;
    if (out == in && fabs(p->scale[d] - 1.0) <= 1e-9) return 1; /* identity */
    return p->mode == PR_RESIZE_NEAREST ? 1 : p->mode == PR_RESIZE_LINEAR ? 2 : 4;
}

/* Fills t (idx/w already sized for n * out entries). */
static void kr_taps(const pr_resize_plan *p, int d, kr_axis *t) {
    const int64_t in = t->in, out = t->out;
    const int n = t->n;
    t->ident = out == in && fabs(p->scale[d] - 1.0) <= 1e-9;
    for (int64_t o = 0; o < out; o++) {
        if (t->ident) {
            t->idx[o] = (int32_t)o;
            t->w[o] = 1.0f;
            continue;
        }
        double x = pr_resize_coord(p, d, (double)o, in, out);
        if (p->mode == PR_RESIZE_NEAREST) {
            t->idx[o] = (int32_t)pr_resize_nearest(p, d, x, in);
            t->w[o] = 1.0f;
            continue;
        }
        if (!isfinite(x)) x = 0;
        if (x > 4.0e18) x = 4.0e18;
        if (x < -4.0e18) x = -4.0e18;
        double xf = floor(x), c[4];
        bool integer = x == xf;
        double ratio = integer ? 1.0 : x - xf;
        int64_t start = (int64_t)xf + (integer ? -(n / 2) : -(n / 2) + 1);
        pr_resize_coeffs(p, ratio, 1.0, n, c); /* antialias is declined */
        if (p->exclude_outside) {
            double sum = 0;
            for (int i = 0; i < n; i++) {
                int64_t j = start + i;
                if (j < 0 || j >= in) c[i] = 0;
                sum += c[i];
            }
            if (sum == 0) sum = 1;
            for (int i = 0; i < n; i++) c[i] /= sum;
        }
        for (int i = 0; i < n; i++) {
            int64_t j = start + i;
            j = j < 0 ? 0 : j >= in ? in - 1 : j;
            t->idx[i * out + o] = (int32_t)j;
            t->w[i * out + o] = (float)c[i];
        }
    }
}

/* ------------------------------------------------------------ fallback */

/* NCHW <-> NHWC copies of elements of size es (2 or 4 bytes). */
static void kr_transpose(const void *src, void *dst, size_t es, int64_t N, int64_t C, int64_t P,
                         bool to_nhwc) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < P; p++) {
                const int64_t a = (n * C + c) * P + p, b = (n * P + p) * C + c;
                const int64_t si = to_nhwc ? a : b, di = to_nhwc ? b : a;
                if (es == 4)
                    ((uint32_t *)dst)[di] = ((const uint32_t *)src)[si];
                else
                    ((uint16_t *)dst)[di] = ((const uint16_t *)src)[si];
            }
}

/* The ref kernel on plain copies (plans that resize N or C). */
static precis_status kr_fallback(const kr_state *s, pr_kernel *k, pr_cpu_exec *x) {
    const pr_kernel_fn ref = pr_ref_table[k->node->op];
    if (!ref) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "no ref kernel");
    if (!s->nhwc) return ref(k);
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    const size_t es = pr_dtype_size(X->dtype);
    const size_t xb = ((size_t)X->numel * es + 63) & ~(size_t)63;
    unsigned char *t = pr_cpu_scratch(x, xb + (size_t)Y->numel * es + 64);
    if (!t) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    pr_buf bx = *X, by = *Y;
    bx.data = t;
    by.data = t + xb;
    kr_transpose(X->data, bx.data, es, X->dims[0], X->dims[1], X->dims[2] * X->dims[3], false);
    const pr_buf *ins[PR_REF_KIC_MAX];
    int nin = k->n_in < PR_REF_KIC_MAX ? k->n_in : PR_REF_KIC_MAX;
    for (int i = 0; i < nin; i++) ins[i] = k->in[i];
    ins[0] = &bx;
    pr_buf *outs[1] = {&by};
    pr_kernel k2 = *k;
    k2.n_in = nin;
    k2.in = ins;
    k2.n_out = 1;
    k2.out = outs;
    precis_status st = ref(&k2);
    if (st) return st;
    kr_transpose(by.data, Y->data, es, Y->dims[0], Y->dims[1], Y->dims[2] * Y->dims[3], true);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ row kernels */

/* tmp[0..len) = sum_q w[q] * row_q, rows at element offsets off[q] of src. */
static void kr_vert_scalar(const void *src, pr_dtype dt, const int64_t *off, const float *w, int n,
                           int64_t len, float *tmp) {
    for (int64_t i = 0; i < len; i++) {
        float a = 0;
        for (int q = 0; q < n; q++) a += w[q] * kn_ld1(src, dt, off[q] + i);
        tmp[i] = a;
    }
}

KN_AVX512 static void kr_vert_512(const void *src, pr_dtype dt, const int64_t *off, const float *w,
                                  int n, int64_t len, float *tmp) {
    int64_t i = 0;
    for (; i + 16 <= len; i += 16) {
        __m512 a = _mm512_mul_ps(_mm512_set1_ps(w[0]), kn_ld16(src, dt, off[0] + i));
        for (int q = 1; q < n; q++)
            a = _mm512_fmadd_ps(_mm512_set1_ps(w[q]), kn_ld16(src, dt, off[q] + i), a);
        _mm512_storeu_ps(tmp + i, a);
    }
    if (i < len) {
        const __mmask16 m = kn_tail(len - i);
        __m512 a = _mm512_mul_ps(_mm512_set1_ps(w[0]), kn_ld16z(src, dt, off[0] + i, m));
        for (int q = 1; q < n; q++)
            a = _mm512_fmadd_ps(_mm512_set1_ps(w[q]), kn_ld16z(src, dt, off[q] + i, m), a);
        _mm512_mask_storeu_ps(tmp + i, m, a);
    }
}

/* Plain: out[ox] = sum_q w * row[idx]. */
static void kr_horz_scalar(const float *row, void *y, pr_dtype dt, const kr_axis *tw) {
    const int64_t Wo = tw->out;
    for (int64_t o = 0; o < Wo; o++) {
        float a = 0;
        for (int q = 0; q < tw->n; q++) a += tw->w[q * Wo + o] * row[tw->idx[q * Wo + o]];
        kn_st1(y, dt, o, a);
    }
}

KN_AVX512 static void kr_horz_512(const float *row, void *y, pr_dtype dt, const kr_axis *tw) {
    const int64_t Wo = tw->out;
    if (tw->ident) {
        kn_from_f32_512(row, dt, y, Wo);
        return;
    }
    for (int64_t o = 0; o < Wo; o += 16) {
        const __mmask16 m = Wo - o >= 16 ? (__mmask16)0xffff : kn_tail(Wo - o);
        __m512 a = _mm512_setzero_ps();
        for (int q = 0; q < tw->n; q++) {
            __m512i vi = _mm512_maskz_loadu_epi32(m, tw->idx + q * Wo + o);
            __m512 g = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, vi, row, 4);
            a = _mm512_fmadd_ps(g, _mm512_maskz_loadu_ps(m, tw->w + q * Wo + o), a);
        }
        kn_st16m(y, dt, o, a, m);
    }
}

/* NHWC: out[ox, c] = sum_q w * row[idx, c]. */
static void kr_horz_nhwc_scalar(const float *row, void *y, pr_dtype dt, const kr_axis *tw,
                                int64_t C) {
    const int64_t Wo = tw->out;
    for (int64_t o = 0; o < Wo; o++)
        for (int64_t c = 0; c < C; c++) {
            float a = 0;
            for (int q = 0; q < tw->n; q++)
                a += tw->w[q * Wo + o] * row[(int64_t)tw->idx[q * Wo + o] * C + c];
            kn_st1(y, dt, o * C + c, a);
        }
}

KN_AVX512 static void kr_horz_nhwc_512(const float *row, void *y, pr_dtype dt, const kr_axis *tw,
                                       int64_t C) {
    const int64_t Wo = tw->out;
    const int n = tw->n;
    for (int64_t o = 0; o < Wo; o++) {
        const float *src[4];
        __m512 w[4];
        for (int q = 0; q < n; q++) {
            src[q] = row + (int64_t)tw->idx[q * Wo + o] * C;
            w[q] = _mm512_set1_ps(tw->w[q * Wo + o]);
        }
        int64_t c = 0;
        for (; c + 16 <= C; c += 16) {
            __m512 a = _mm512_mul_ps(w[0], _mm512_loadu_ps(src[0] + c));
            for (int q = 1; q < n; q++) a = _mm512_fmadd_ps(w[q], _mm512_loadu_ps(src[q] + c), a);
            kn_st16(y, dt, o * C + c, a);
        }
        if (c < C) {
            const __mmask16 m = kn_tail(C - c);
            __m512 a = _mm512_mul_ps(w[0], _mm512_maskz_loadu_ps(m, src[0] + c));
            for (int q = 1; q < n; q++)
                a = _mm512_fmadd_ps(w[q], _mm512_maskz_loadu_ps(m, src[q] + c), a);
            kn_st16m(y, dt, o * C + c, a, m);
        }
    }
}

/* Nearest, plain: one output row gathered from one source row. */
static void kr_gather_row(const void *src, void *dst, size_t es, const int32_t *idx, int64_t n) {
    if (es == 4) {
        const uint32_t *s = src;
        uint32_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = s[idx[i]];
    } else if (es == 2) {
        const uint16_t *s = src;
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = s[idx[i]];
    } else {
        const uint8_t *s = src;
        uint8_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = s[idx[i]];
    }
}

KN_AVX512 static void kr_gather_row_512(const void *src, void *dst, size_t es, const int32_t *idx,
                                        int64_t n) {
    if (es != 4) {
        kr_gather_row(src, dst, es, idx, n);
        return;
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_si512((int *)dst + i,
                            _mm512_i32gather_epi32(_mm512_loadu_si512(idx + i), src, 4));
    if (i < n) {
        const __mmask16 m = kn_tail(n - i);
        __m512i vi = _mm512_maskz_loadu_epi32(m, idx + i);
        _mm512_mask_storeu_epi32(
            (int *)dst + i, m, _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, vi, src, 4));
    }
}

/* ------------------------------------------------------------ run */

static precis_status kr_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    const kr_state *s = state;
    const pr_buf *X = pr_kin(k, 0);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X || !Y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input or output missing");
    const pr_dtype dt = X->dtype;
    if ((!kn_act_dtype(dt) && !kr_q8(dt)) || Y->dtype != dt || X->rank != 4 || Y->rank != 4)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported input %s rank %d",
                          pr_dtype_name(dt), X->rank);
    pr_kic c;
    pr_kic_init(&c, k);
    pr_resize_plan p;
    bool known;
    precis_status st = pr_resize_plan_make(&c.ic, &p, &known);
    if (st) return st;
    if (!known) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "resize parameters not known");
    for (int d = 0; d < 4; d++)
        if (Y->dims[d] != p.out[d])
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output dim %d is %lld, plan says %lld", d,
                              (long long)Y->dims[d], (long long)p.out[d]);
    if (Y->numel == 0) return PRECIS_OK;
    const int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
    const int64_t Ho = Y->dims[2], Wo = Y->dims[3];
    if (p.antialias || p.coord == PR_COORD_TF_CROP_AND_RESIZE || p.out[0] != N || p.out[1] != C ||
        kr_ntaps(&p, 0, N, N) != 1 || kr_ntaps(&p, 1, C, C) != 1 || H >= INT32_MAX ||
        W >= INT32_MAX || H == 0 || W == 0)
        return kr_fallback(s, k, x);
    kr_axis th = {H, Ho, kr_ntaps(&p, 2, H, Ho), false, NULL, NULL};
    kr_axis tw = {W, Wo, kr_ntaps(&p, 3, W, Wo), false, NULL, NULL};
    const bool nearest = p.mode == PR_RESIZE_NEAREST || (th.n == 1 && tw.n == 1);
    const int64_t len = s->nhwc ? W * C : W; /* vertical row length */
    const int64_t tasks = N * (s->nhwc ? 1 : C) * Ho;
    const int nt = kn_threads(x->num_threads, Y->numel * th.n * tw.n, tasks);
    const size_t ntap = kn_pad16(th.n * Ho) + kn_pad16(tw.n * Wo);
    const size_t per = nearest ? 0 : kn_pad16(len);
    char *scr = pr_cpu_scratch(x, ntap * 8 + (size_t)nt * per * sizeof(float));
    if (!scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    th.idx = (int32_t *)(void *)scr;
    tw.idx = th.idx + kn_pad16(th.n * Ho);
    th.w = (float *)(void *)(scr + ntap * 4);
    tw.w = th.w + kn_pad16(th.n * Ho);
    float *rows = (float *)(void *)(scr + ntap * 8);
    kr_taps(&p, 2, &th);
    kr_taps(&p, 3, &tw);
    const size_t es = pr_dtype_size(dt);
    const unsigned char *xd = X->data;
    unsigned char *yd = Y->data;
    const bool v512 = s->v512, nhwc = s->nhwc;
    /* per task: image/plane b and output row oy */
    const int64_t in_img = H * len, out_row = nhwc ? Wo * C : Wo;
    const int64_t out_img = Ho * out_row;
    if (nearest) {
#pragma omp parallel num_threads(nt)
        {
            int64_t last = -2;
#pragma omp for schedule(static)
            for (int64_t q = 0; q < tasks; q++) {
                const int64_t b = q / Ho, oy = q % Ho;
                const int64_t iy = th.idx[oy];
                unsigned char *yr = yd + (size_t)(b * out_img + oy * out_row) * es;
                if (last == q - 1 && oy > 0 && th.idx[oy - 1] == iy) {
                    memcpy(yr, yr - (size_t)out_row * es, (size_t)out_row * es);
                } else {
                    const unsigned char *xr = xd + (size_t)(b * in_img + iy * len) * es;
                    if (nhwc) {
                        const size_t px = (size_t)C * es;
                        for (int64_t o = 0; o < Wo; o++)
                            memcpy(yr + (size_t)o * px, xr + (size_t)tw.idx[o] * px, px);
                    } else if (v512) {
                        kr_gather_row_512(xr, yr, es, tw.idx, Wo);
                    } else {
                        kr_gather_row(xr, yr, es, tw.idx, Wo);
                    }
                }
                last = q;
            }
        }
        return PRECIS_OK;
    }
#pragma omp parallel num_threads(nt)
    {
        float *tmp = rows + (size_t)omp_get_thread_num() * per;
#pragma omp for schedule(static)
        for (int64_t q = 0; q < tasks; q++) {
            const int64_t b = q / Ho, oy = q % Ho;
            const unsigned char *xi = xd + (size_t)(b * in_img) * es;
            unsigned char *yr = yd + (size_t)(b * out_img + oy * out_row) * es;
            int64_t off[4];
            float w[4];
            for (int t = 0; t < th.n; t++) {
                off[t] = (int64_t)th.idx[t * Ho + oy] * len;
                w[t] = th.w[t * Ho + oy];
            }
            const float *row = tmp;
            if (th.n == 1 && w[0] == 1.0f && dt == PRECIS_FLOAT32)
                row = (const float *)(const void *)xi + off[0];
            else if (v512)
                kr_vert_512(xi, dt, off, w, th.n, len, tmp);
            else
                kr_vert_scalar(xi, dt, off, w, th.n, len, tmp);
            if (nhwc) {
                if (v512)
                    kr_horz_nhwc_512(row, yr, dt, &tw, C);
                else
                    kr_horz_nhwc_scalar(row, yr, dt, &tw, C);
            } else {
                if (v512)
                    kr_horz_512(row, yr, dt, &tw);
                else
                    kr_horz_scalar(row, yr, dt, &tw);
            }
        }
    }
    return PRECIS_OK;
}

const pr_cpu_impl pr_cpu_impl_resize = {
    .name = "resize",
    .supports = kr_supports,
    .nhwc_ok = kr_nhwc_ok,
    .inplace_input = NULL,
    .prepare = kr_prepare,
    .run = kr_run,
    .describe = kr_describe,
    .destroy = kr_destroy,
};

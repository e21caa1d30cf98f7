/* Reference kernels for the 'conv' family (see ops.inc): convolutions.
 * Pooling lives in ref_conv_pool.c, normalizations in ref_conv_norm.c.
 *
 * Conv = im2col over blocks of output positions + a cache-blocked GEMM
 * (1x1 stride-1 convolutions skip im2col, depthwise ones run direct).
 * ConvTranspose = GEMM with the transposed weights + col2im.
 * float32 runs natively, float64 in double, float16/bfloat16 in float32;
 * ConvInteger/QLinearConv subtract the zero points into int16 and use the
 * int16 -> int64 GEMM: exact for any shape. The GEMM is ref_gemm.h's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref_conv.h"
#include "backends/ref/ref_gemm.h"

/* Columns per im2col block: about 512 KiB of float columns, multiple of 8. */
static inline int64_t rc_block_cols(int64_t rows, int64_t total) {
    int64_t pb = ((int64_t)1 << 17) / (rows > 0 ? rows : 1);
    if (pb < 64) pb = 64;
    pb &= ~(int64_t)7;
    return pb >= total ? (total > 0 ? total : 1) : pb;
}

#define RC_T float
#define RC_C float
#define RC_SUF f32
#define RC_GEMM pr_ref_gemm_f32
#define RC_FLOAT 1
#include "backends/ref/ref_conv_tmpl.inc"

#define RC_T double
#define RC_C double
#define RC_SUF f64
#define RC_GEMM pr_ref_gemm_f64
#define RC_FLOAT 1
#include "backends/ref/ref_conv_tmpl.inc"

#define RC_T int16_t
#define RC_C int64_t
#define RC_SUF i16
#define RC_GEMM pr_ref_gemm_s16s64
#define RC_FLOAT 0
#include "backends/ref/ref_conv_tmpl.inc"

/* ------------------------------------------------------- shared helpers */

precis_status pr_refconv_geom(pr_kernel *k, pr_conv_kind kind, const pr_buf *x,
                              const int64_t *w_kernel, const pr_buf *y, rc_geom3 *g) {
    if (x->rank < 3)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must have rank >= 3, got %d", x->rank);
    int nsp = x->rank - 2;
    if (nsp > 3)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "%d spatial dims (at most 3 supported)", nsp);
    pr_conv_geom cg;
    precis_status st = pr_conv_geom_init(k->node, kind, nsp, x->dims + 2, w_kernel, k->err, &cg);
    if (st) return st;
    int off = 3 - nsp;
    for (int i = 0; i < 3; i++) {
        if (i < off) {
            g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
            g->pb[i] = g->pe[i] = 0;
            continue;
        }
        int j = i - off;
        if (!pr_dim_known(cg.out[j]) || !cg.pads_known || cg.kernel[j] < 1)
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "window geometry not resolved");
        if (y && (y->rank != x->rank || y->dims[2 + j] != cg.out[j]))
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output buffer dim %d is %lld, expected %lld",
                              2 + j, (long long)(y->rank == x->rank ? y->dims[2 + j] : -1),
                              (long long)cg.out[j]);
        g->in[i] = cg.in[j];
        g->out[i] = cg.out[j];
        g->k[i] = cg.kernel[j];
        g->s[i] = cg.stride[j];
        g->d[i] = cg.dil[j];
        g->pb[i] = cg.pad_b[j];
        g->pe[i] = cg.pad_e[j];
    }
    g->in_sz = g->in[0] * g->in[1] * g->in[2];
    g->out_sz = g->out[0] * g->out[1] * g->out[2];
    /* pool kernels are not backed by a buffer: saturate instead of overflowing */
    g->k_sz = 1;
    for (int i = 0; i < 3; i++)
        g->k_sz = g->k_sz > INT64_MAX / g->k[i] ? INT64_MAX : g->k_sz * g->k[i];
    return PRECIS_OK;
}

float *pr_refconv_to_f32(const pr_buf *b) {
    float *f = malloc((size_t)(b->numel > 0 ? b->numel : 1) * sizeof(float));
    if (f) pr_ref_to_f32(b->data, b->dtype, b->numel, f);
    return f;
}

void pr_refconv_from_f32(pr_buf *b, const float *src) {
    pr_ref_from_f32(src, b->numel, b->dtype, b->data);
}

double *pr_refconv_to_f64(const pr_buf *b) {
    if (!b) return NULL;
    double *d = malloc((size_t)(b->numel > 0 ? b->numel : 1) * sizeof(double));
    if (!d) return NULL;
    for (int64_t i = 0; i < b->numel; i++) d[i] = pr_load_f64(b->data, b->dtype, i);
    return d;
}

/* ------------------------------------------------------------ float convs */

/* Checks shared by the float convolutions; sets *group. transposed: W is
 * (C, M/group, k...) instead of (M, C/group, k...). */
static precis_status conv_check(pr_kernel *k, bool transposed, int64_t *group, int64_t *M) {
    const pr_buf *X = pr_kin(k, 0), *W = pr_kin(k, 1), *B = pr_kin(k, 2);
    if (!X || !W || k->n_out < 1 || !k->out[0])
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing X, W or Y");
    if (!pr_dtype_info(X->dtype)->is_float || W->dtype != X->dtype || (B && B->dtype != X->dtype) ||
        k->out[0]->dtype != X->dtype)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported types X %s, W %s",
                          pr_dtype_name(X->dtype), pr_dtype_name(W->dtype));
    if (X->rank < 3 || W->rank != X->rank)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "X rank %d / W rank %d invalid", X->rank, W->rank);
    int64_t g = pr_attr_int(k->node, "group", 1), C = X->dims[1];
    if (g < 1 || C % g != 0)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "group %lld does not divide %lld channels",
                          (long long)g, (long long)C);
    int64_t m;
    if (transposed) {
        if (W->dims[0] != C) return pr_kernelf(k, PRECIS_ERR_SHAPE, "W dim 0 must equal C");
        if (W->dims[1] > ((int64_t)1 << 40) / g)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "too many output channels");
        m = W->dims[1] * g;
    } else {
        if (C / g != W->dims[1] || W->dims[0] % g != 0)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "W shape does not match C and group");
        m = W->dims[0];
    }
    if (B && B->numel != m)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "B has %lld values, expected %lld",
                          (long long)B->numel, (long long)m);
    if (k->out[0]->dims[1] != m) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "Y channel mismatch");
    *group = g;
    *M = m;
    return PRECIS_OK;
}

/* Runs a float convolution (transposed or not) for any float dtype. */
static precis_status conv_float(pr_kernel *k, bool transposed) {
    precis_status st;
    int64_t group = 1, M = 0;
    PR_TRY(conv_check(k, transposed, &group, &M));
    const pr_buf *X = pr_kin(k, 0), *W = pr_kin(k, 1), *B = pr_kin(k, 2);
    pr_buf *Y = k->out[0];
    rc_geom3 g;
    PR_TRY(pr_refconv_geom(k, transposed ? PR_CONV_KIND_CONVT : PR_CONV_KIND_CONV, X, W->dims + 2,
                           Y, &g));
    const int64_t N = X->dims[0], C = X->dims[1], out_sz = g.out_sz;
    if (X->dtype == PRECIS_FLOAT64) {
        double *y = Y->data;
        const double *b = B ? B->data : NULL;
        for (int64_t n = 0; n < N; n++)
            for (int64_t m = 0; m < M; m++) {
                double *yp = y + (n * M + m) * out_sz, bv = b ? b[m] : 0.0;
                for (int64_t i = 0; i < out_sz; i++) yp[i] = bv;
            }
        return transposed ? conv_transpose_f64(k, X->data, W->data, y, N, C, M, group, &g)
                          : conv_fwd_f64(k, X->data, W->data, y, N, C, M, group, &g);
    }
    const bool native = X->dtype == PRECIS_FLOAT32;
    float *xf = native ? X->data : pr_refconv_to_f32(X);
    float *wf = native ? W->data : pr_refconv_to_f32(W);
    float *bf = !B ? NULL : native ? B->data : pr_refconv_to_f32(B);
    float *yf = native ? Y->data : malloc((size_t)(Y->numel > 0 ? Y->numel : 1) * sizeof(float));
    if (!xf || !wf || !yf || (B && !bf)) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    } else {
        for (int64_t n = 0; n < N; n++)
            for (int64_t m = 0; m < M; m++) {
                float *yp = yf + (n * M + m) * out_sz, bv = bf ? bf[m] : 0.0f;
                for (int64_t i = 0; i < out_sz; i++) yp[i] = bv;
            }
        st = transposed ? conv_transpose_f32(k, xf, wf, yf, N, C, M, group, &g)
                        : conv_fwd_f32(k, xf, wf, yf, N, C, M, group, &g);
        if (!st && !native) pr_refconv_from_f32(Y, yf);
    }
    if (!native) {
        free(xf);
        free(wf);
        free(bf);
        free(yf);
    }
fail:
    return st;
}

precis_status ref_Conv(pr_kernel *k) { return conv_float(k, false); }
precis_status ref_ConvTranspose(pr_kernel *k) { return conv_float(k, true); }

/* ---------------------------------------------------------- integer convs */

static bool is_q8(const pr_buf *b) {
    return b && (b->dtype == PRECIS_UINT8 || b->dtype == PRECIS_INT8);
}

static inline int32_t q8_at(const pr_buf *b, int64_t i) {
    return b->dtype == PRECIS_UINT8 ? (int32_t)((const uint8_t *)b->data)[i]
                                    : (int32_t)((const int8_t *)b->data)[i];
}

/* v - zp into int16; zp NULL (0), one value, or one per dim-0 slice (nch). */
static int16_t *q8_sub_zp(const pr_buf *v, const pr_buf *zp, int64_t nch) {
    int64_t n = v->numel;
    int16_t *o = malloc((size_t)(n > 0 ? n : 1) * sizeof(int16_t));
    if (!o) return NULL;
    int64_t per = (zp && zp->numel > 1 && nch > 0) ? n / nch : n;
    for (int64_t i = 0; i < n; i++) {
        int32_t z = !zp ? 0 : zp->numel > 1 ? q8_at(zp, per > 0 ? i / per : 0) : q8_at(zp, 0);
        o[i] = (int16_t)(q8_at(v, i) - z);
    }
    return o;
}

/* Exact integer convolution: acc[N][M][out_sz] = sum (x - xzp)(w - wzp). */
static precis_status conv_int(pr_kernel *k, const pr_buf *X, const pr_buf *xzp, const pr_buf *W,
                              const pr_buf *wzp, const pr_buf *Y, int64_t **acc_out, int64_t *M_out,
                              int64_t *out_sz) {
    precis_status st = PRECIS_OK;
    *acc_out = NULL;
    if (!is_q8(X) || !is_q8(W) || !Y)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "x and w must be uint8 or int8");
    if ((xzp && (xzp->dtype != X->dtype || xzp->numel != 1)) || (wzp && wzp->dtype != W->dtype))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "zero points must match x/w types, x's per-tensor");
    if (X->rank < 3 || W->rank != X->rank)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "x rank %d / w rank %d invalid", X->rank, W->rank);
    int64_t group = pr_attr_int(k->node, "group", 1), N = X->dims[0], C = X->dims[1];
    int64_t M = W->dims[0];
    if (group < 1 || C % group != 0 || C / group != W->dims[1] || M % group != 0)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "w shape does not match channels and group");
    if (wzp && wzp->numel != 1 && wzp->numel != M)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "w_zero_point must have 1 or %lld values",
                          (long long)M);
    rc_geom3 g;
    st = pr_refconv_geom(k, PR_CONV_KIND_CONV, X, W->dims + 2, Y, &g);
    if (st) return st;
    int16_t *xi = q8_sub_zp(X, xzp, 1), *wi = q8_sub_zp(W, wzp, M);
    int64_t cnt = N * M * g.out_sz;
    int64_t *acc = calloc((size_t)(cnt > 0 ? cnt : 1), sizeof(int64_t));
    if (!xi || !wi || !acc) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    } else {
        st = conv_fwd_i16(k, xi, wi, acc, N, C, M, group, &g);
    }
    free(xi);
    free(wi);
    if (st) {
        free(acc);
        return st;
    }
    *acc_out = acc;
    *M_out = M;
    *out_sz = g.out_sz;
    return PRECIS_OK;
}

precis_status ref_ConvInteger(pr_kernel *k) {
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!Y || Y->dtype != PRECIS_INT32)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output must be int32");
    int64_t *acc, M, out_sz;
    precis_status st =
        conv_int(k, pr_kin(k, 0), pr_kin(k, 2), pr_kin(k, 1), pr_kin(k, 3), Y, &acc, &M, &out_sz);
    if (st) return st;
    int32_t *y = Y->data;
    for (int64_t i = 0; i < Y->numel; i++) y[i] = (int32_t)(uint32_t)(uint64_t)acc[i];
    free(acc);
    return PRECIS_OK;
}

precis_status ref_QLinearConv(pr_kernel *k) {
    const pr_buf *X = pr_kin(k, 0), *xs = pr_kin(k, 1), *xzp = pr_kin(k, 2), *W = pr_kin(k, 3);
    const pr_buf *ws = pr_kin(k, 4), *wzp = pr_kin(k, 5), *ys = pr_kin(k, 6), *yzp = pr_kin(k, 7);
    const pr_buf *B = pr_kin(k, 8);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X || !xs || !W || !ws || !ys || !Y)
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing a required input");
    if (xs->dtype != PRECIS_FLOAT32 || ws->dtype != PRECIS_FLOAT32 || ys->dtype != PRECIS_FLOAT32 ||
        xs->numel != 1 || ys->numel != 1)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "scales must be float32 (x_scale, y_scale scalar)");
    if (!is_q8(Y) || (yzp && (yzp->dtype != Y->dtype || yzp->numel != 1)))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "y_zero_point must be a uint8/int8 scalar");
    if (B && B->dtype != PRECIS_INT32) return pr_kernelf(k, PRECIS_ERR_SHAPE, "B must be int32");
    int64_t *acc, M, out_sz;
    precis_status st = conv_int(k, X, xzp, W, wzp, Y, &acc, &M, &out_sz);
    if (st) return st;
    if ((ws->numel != 1 && ws->numel != M) || (B && B->numel != M)) {
        free(acc);
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "w_scale / B must have 1 / %lld values",
                          (long long)M);
    }
    const float xsv = ((const float *)xs->data)[0], ysv = ((const float *)ys->data)[0];
    const float *wsv = ws->data;
    const int32_t *bv = B ? B->data : NULL;
    const double zp = yzp ? (double)q8_at(yzp, 0) : 0.0;
    const double lo = Y->dtype == PRECIS_UINT8 ? 0.0 : -128.0;
    const double hi = Y->dtype == PRECIS_UINT8 ? 255.0 : 127.0;
    const int64_t N = X->dims[0];
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            /* the scale in float32 arithmetic, applied in double (ONNX reference) */
            const float scale = xsv * wsv[ws->numel > 1 ? m : 0] / ysv;
            const int64_t bias = bv ? bv[m] : 0;
            const int64_t base = (n * M + m) * out_sz;
            for (int64_t i = 0; i < out_sz; i++) {
                double r = (double)(acc[base + i] + bias) * (double)scale + zp;
                r = r != r ? zp : nearbyint(r);
                r = r < lo ? lo : r > hi ? hi : r;
                if (Y->dtype == PRECIS_UINT8)
                    ((uint8_t *)Y->data)[base + i] = (uint8_t)r;
                else
                    ((int8_t *)Y->data)[base + i] = (int8_t)r;
            }
        }
    free(acc);
    return PRECIS_OK;
}

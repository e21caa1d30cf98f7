/* Reference kernels for the 'conv' family (see ops.inc): normalizations
 * (BatchNormalization, InstanceNormalization, LayerNormalization,
 * LpNormalization, LRN). float32/float64 run natively, float16/bfloat16
 * through a float32 copy; small parameter vectors are read as doubles. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref_conv.h"

#define RC_T float
#define RC_SUF f32
#include "backends/ref/ref_conv_norm_tmpl.inc"

#define RC_T double
#define RC_SUF f64
#include "backends/ref/ref_conv_norm_tmpl.inc"

/* Float data view of X and Y: native for float32/float64, else float32 copies. */
typedef struct fview {
    bool f64, native;
    const void *x;
    void *y;
} fview;

static precis_status fview_begin(pr_kernel *k, const pr_buf *X, pr_buf *Y, fview *v) {
    memset(v, 0, sizeof *v);
    if (!X || !Y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing input or output");
    if (!pr_dtype_info(X->dtype)->is_float || Y->dtype != X->dtype || Y->numel != X->numel)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported type %s",
                          pr_dtype_name(X->dtype));
    v->f64 = X->dtype == PRECIS_FLOAT64;
    v->native = v->f64 || X->dtype == PRECIS_FLOAT32;
    if (v->native) {
        v->x = X->data;
        v->y = Y->data;
        return PRECIS_OK;
    }
    float *xf = pr_refconv_to_f32(X);
    float *yf = malloc((size_t)(Y->numel > 0 ? Y->numel : 1) * sizeof(float));
    if (!xf || !yf) {
        free(xf);
        free(yf);
        return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    }
    v->x = xf;
    v->y = yf;
    return PRECIS_OK;
}

/* Converts the result back (when ok) and frees the copies. */
static void fview_end(pr_buf *Y, fview *v, bool ok) {
    if (v->native) return;
    if (ok) pr_refconv_from_f32(Y, v->y);
    free((void *)v->x);
    free(v->y);
    v->x = v->y = NULL;
}

static void store_vec(pr_buf *b, const double *v, int64_t n) {
    if (!b) return;
    for (int64_t i = 0; i < n && i < b->numel; i++) pr_store_f64(b->data, b->dtype, i, v[i]);
}

/* ------------------------------------------------------ BatchNormalization */

precis_status ref_BatchNormalization(pr_kernel *k) {
    const pr_buf *X = pr_kin(k, 0), *S = pr_kin(k, 1), *B = pr_kin(k, 2);
    const pr_buf *Mn = pr_kin(k, 3), *Vr = pr_kin(k, 4);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X || !S || !B || !Mn || !Vr)
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing a required input");
    if (X->rank < 2) return pr_kernelf(k, PRECIS_ERR_SHAPE, "X must have rank >= 2");
    const int64_t N = X->dims[0], C = X->dims[1];
    const int64_t inner = N * C > 0 ? X->numel / (N * C) : 0;
    const bool per_act = inner > 1 && S->numel == C * inner && B->numel == C * inner &&
                         Mn->numel == C * inner && Vr->numel == C * inner;
    if (!per_act && (S->numel != C || B->numel != C || Mn->numel != C || Vr->numel != C))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "scale, B, mean and var must have %lld values",
                          (long long)C);
    const int64_t np = per_act ? C * inner : C;
    const double eps = pr_attr_float(k->node, "epsilon", 1e-5f);
    const double mom = pr_attr_float(k->node, "momentum", 0.9f);
    bool training;
    if (k->node->opset >= 14)
        training = pr_attr_int(k->node, "training_mode", 0) != 0;
    else
        training = k->n_out > 1 && k->out[1] &&
                   !(k->node->opset < 7 && pr_attr_int(k->node, "is_test", 0) != 0);
    if (training && per_act)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "training mode with spatial=0");

    fview v;
    precis_status st = fview_begin(k, X, Y, &v);
    if (st) return st;
    double *s = pr_refconv_to_f64(S), *b = pr_refconv_to_f64(B);
    double *mean = pr_refconv_to_f64(Mn), *var = pr_refconv_to_f64(Vr);
    double *a = malloc((size_t)np * sizeof(double)), *bm = malloc((size_t)C * 2 * sizeof(double));
    if (!s || !b || !mean || !var || !a || !bm) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    const double *um = mean, *uv = var; /* statistics used to normalize */
    double *bmean = bm, *bvar = bm + C;
    if (training) {
        if (v.f64)
            bn_stats_f64(v.x, N, C, inner, bmean, bvar);
        else
            bn_stats_f32(v.x, N, C, inner, bmean, bvar);
        um = bmean;
        uv = bvar;
    }
    for (int64_t i = 0; i < np; i++) a[i] = s[i] / sqrt(uv[i] + eps);
    if (v.f64)
        bn_apply_f64(v.x, v.y, N, C, inner, um, a, b, per_act);
    else
        bn_apply_f32(v.x, v.y, N, C, inner, um, a, b, per_act);
    if (training) {
        /* running statistics: input * momentum + batch * (1 - momentum) */
        for (int64_t c = 0; c < C; c++) {
            mean[c] = mean[c] * mom + bmean[c] * (1.0 - mom);
            var[c] = var[c] * mom + bvar[c] * (1.0 - mom);
        }
        store_vec(k->n_out > 1 ? k->out[1] : NULL, mean, C);
        store_vec(k->n_out > 2 ? k->out[2] : NULL, var, C);
        store_vec(k->n_out > 3 ? k->out[3] : NULL, bmean, C);
        store_vec(k->n_out > 4 ? k->out[4] : NULL, bvar, C);
    } else {
        /* inference: optional extra outputs pass the statistics through */
        store_vec(k->n_out > 1 ? k->out[1] : NULL, mean, C);
        store_vec(k->n_out > 2 ? k->out[2] : NULL, var, C);
        store_vec(k->n_out > 3 ? k->out[3] : NULL, mean, C);
        store_vec(k->n_out > 4 ? k->out[4] : NULL, var, C);
    }
done:
    fview_end(Y, &v, st == PRECIS_OK);
    free(s);
    free(b);
    free(mean);
    free(var);
    free(a);
    free(bm);
    return st;
}

/* --------------------------------------------------- InstanceNormalization */

precis_status ref_InstanceNormalization(pr_kernel *k) {
    const pr_buf *X = pr_kin(k, 0), *S = pr_kin(k, 1), *B = pr_kin(k, 2);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X || !S || !B) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing a required input");
    if (X->rank < 3) return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must have rank >= 3");
    const int64_t N = X->dims[0], C = X->dims[1];
    const int64_t inner = N * C > 0 ? X->numel / (N * C) : 0;
    if (S->numel != C || B->numel != C)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "scale and B must have %lld values", (long long)C);
    const double eps = pr_attr_float(k->node, "epsilon", 1e-5f);
    fview v;
    precis_status st = fview_begin(k, X, Y, &v);
    if (st) return st;
    double *s = pr_refconv_to_f64(S), *b = pr_refconv_to_f64(B);
    if (!s || !b) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    } else if (v.f64) {
        instnorm_f64(v.x, v.y, N, C, inner, s, b, eps);
    } else {
        instnorm_f32(v.x, v.y, N, C, inner, s, b, eps);
    }
    fview_end(Y, &v, st == PRECIS_OK);
    free(s);
    free(b);
    return st;
}

/* ------------------------------------------------------ LayerNormalization */

/* Values of p (broadcast to dims[0..r)) as `inner` doubles. */
static double *bcast_param(const pr_buf *p, int r, const int64_t *dims, int64_t inner) {
    double *o = malloc((size_t)(inner > 0 ? inner : 1) * sizeof(double));
    if (!o) return NULL;
    int64_t st[PR_MAX_RANK], idx[PR_MAX_RANK] = {0};
    pr_bcast_strides(p, r, dims, st);
    for (int64_t i = 0; i < inner; i++) {
        int64_t off = 0;
        for (int d = 0; d < r; d++) off += idx[d] * st[d];
        o[i] = pr_load_f64(p->data, p->dtype, off);
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < dims[d]) break;
            idx[d] = 0;
        }
    }
    return o;
}

precis_status ref_LayerNormalization(pr_kernel *k) {
    const pr_buf *X = pr_kin(k, 0), *S = pr_kin(k, 1), *B = pr_kin(k, 2);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X || !S) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing X or Scale");
    if (X->rank < 1) return pr_kernelf(k, PRECIS_ERR_SHAPE, "X must have rank >= 1");
    int64_t axis = pr_attr_int(k->node, "axis", -1);
    if (axis < -X->rank || axis >= X->rank)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += X->rank;
    const int r = X->rank - (int)axis;
    const int64_t *nd = X->dims + axis;
    for (int i = 0; i < 2; i++) {
        const pr_buf *p = i == 0 ? S : B;
        if (!p) continue;
        if (p->rank > r) return pr_kernelf(k, PRECIS_ERR_SHAPE, "Scale/B rank too large");
        for (int d = 0; d < p->rank; d++) {
            int64_t pd = p->dims[p->rank - 1 - d], xd = nd[r - 1 - d];
            if (pd != 1 && pd != xd)
                return pr_kernelf(k, PRECIS_ERR_SHAPE,
                                  "Scale/B do not broadcast to the normalized shape");
        }
    }
    const int64_t inner = pr_numel(r, nd);
    const int64_t rows = inner > 0 ? X->numel / inner : 0;
    const double eps = pr_attr_float(k->node, "epsilon", 1e-5f);
    const float qs = pr_attr_float(k->node, "q_scale", 0.0f);
    fview v;
    precis_status st = fview_begin(k, X, Y, &v);
    if (st) return st;
    double *s = bcast_param(S, r, nd, inner), *b = B ? bcast_param(B, r, nd, inner) : NULL;
    double *stats = malloc((size_t)(rows > 0 ? rows : 1) * 2 * sizeof(double));
    if (!s || (B && !b) || !stats) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    } else {
        if (v.f64)
            layernorm_f64(v.x, v.y, rows, inner, s, b, eps, stats, stats + rows);
        else
            layernorm_f32(v.x, v.y, rows, inner, s, b, eps, stats, stats + rows);
        if (!(qs > 0.0f)) {
            store_vec(k->n_out > 1 ? k->out[1] : NULL, stats, rows);
            store_vec(k->n_out > 2 ? k->out[2] : NULL, stats + rows, rows);
        }
    }
    fview_end(Y, &v, st == PRECIS_OK);
    /* q_scale (ops.inc): output 1 is Y as stored, quantized to e4m3 */
    pr_buf *Q = qs > 0.0f && k->n_out > 1 ? k->out[1] : NULL;
    if (!st && Q && Y) {
        if (Q->dtype != PRECIS_FLOAT8E4M3FN || Q->numel != Y->numel)
            st = pr_kernelf(k, PRECIS_ERR_SHAPE, "q_scale: output 1 must be float8e4m3fn of Y's size");
        else
            pr_ref_quant_e4m3(Y->data, Y->dtype, Y->numel, qs, Q->data);
    }
    free(s);
    free(b);
    free(stats);
    return st;
}

/* --------------------------------------------------- LpNormalization, LRN */

precis_status ref_LpNormalization(pr_kernel *k) {
    const pr_buf *X = pr_kin(k, 0);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing input");
    int64_t axis = pr_attr_int(k->node, "axis", -1), p = pr_attr_int(k->node, "p", 2);
    if (X->rank < 1 || axis < -X->rank || axis >= X->rank)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "axis %lld out of range", (long long)axis);
    if (p != 1 && p != 2) return pr_kernelf(k, PRECIS_ERR_SHAPE, "p must be 1 or 2");
    if (axis < 0) axis += X->rank;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= X->dims[i];
    for (int i = (int)axis + 1; i < X->rank; i++) inner *= X->dims[i];
    fview v;
    precis_status st = fview_begin(k, X, Y, &v);
    if (st) return st;
    if (v.f64)
        lpnorm_f64(v.x, v.y, outer, X->dims[axis], inner, (int)p);
    else
        lpnorm_f32(v.x, v.y, outer, X->dims[axis], inner, (int)p);
    fview_end(Y, &v, true);
    return PRECIS_OK;
}

precis_status ref_LRN(pr_kernel *k) {
    const pr_buf *X = pr_kin(k, 0);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing input");
    if (X->rank < 2) return pr_kernelf(k, PRECIS_ERR_SHAPE, "X must have rank >= 2");
    const int64_t size = pr_attr_int(k->node, "size", 0);
    if (size < 1) return pr_kernelf(k, PRECIS_ERR_SHAPE, "attribute size must be >= 1");
    const double alpha = pr_attr_float(k->node, "alpha", 1e-4f);
    const double beta = pr_attr_float(k->node, "beta", 0.75f);
    const double bias = pr_attr_float(k->node, "bias", 1.0f);
    const int64_t N = X->dims[0], C = X->dims[1];
    const int64_t inner = N * C > 0 ? X->numel / (N * C) : 0;
    fview v;
    precis_status st = fview_begin(k, X, Y, &v);
    if (st) return st;
    double *sq = malloc((size_t)(inner > 0 ? inner : 1) * sizeof(double));
    if (!sq) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    } else if (v.f64) {
        lrn_f64(v.x, v.y, N, C, inner, size, alpha, beta, bias, sq);
    } else {
        lrn_f32(v.x, v.y, N, C, inner, size, alpha, beta, bias, sq);
    }
    fview_end(Y, &v, st == PRECIS_OK);
    free(sq);
    return st;
}

/* Reference kernels for the 'conv' family (see ops.inc): pooling.
 * float32 and float64 run natively; float16/bfloat16 (and int8/uint8 for
 * MaxPool, exact) run through a float32 copy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref_conv.h"

#define RC_T float
#define RC_SUF f32
#include "backends/ref/ref_conv_pool_tmpl.inc"

#define RC_T double
#define RC_SUF f64
#include "backends/ref/ref_conv_pool_tmpl.inc"

typedef enum { POOL_MAX, POOL_AVG, POOL_LP } pool_kind;

/* LpPool / GlobalLpPool exponent: float attribute in opset 1, int later. */
static double attr_p(const pr_node *n) {
    const pr_attr *a = pr_attr_find(n, "p");
    if (!a) return 2.0;
    return a->type == PR_ATTR_INT ? (double)a->i : a->type == PR_ATTR_FLOAT ? (double)a->f : 2.0;
}

static bool pool_type_ok(pr_dtype dt, bool allow_int8) {
    return dt == PRECIS_FLOAT32 || dt == PRECIS_FLOAT64 || dt == PRECIS_FLOAT16 ||
           dt == PRECIS_BFLOAT16 || (allow_int8 && (dt == PRECIS_UINT8 || dt == PRECIS_INT8));
}

static precis_status run_pool(pr_kernel *k, pool_kind kind) {
    const pr_buf *X = pr_kin(k, 0);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    pr_buf *I = k->n_out > 1 ? k->out[1] : NULL;
    if (!X || !Y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing X or Y");
    if (!pool_type_ok(X->dtype, kind == POOL_MAX) || Y->dtype != X->dtype)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported type %s",
                          pr_dtype_name(X->dtype));
    if (I && (I->dtype != PRECIS_INT64 || I->numel != Y->numel))
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "Indices must be int64 shaped like Y");
    rc_geom3 g;
    precis_status st = pr_refconv_geom(k, PR_CONV_KIND_POOL, X, NULL, Y, &g);
    if (st) return st;
    const int64_t planes = X->dims[0] * X->dims[1];
    const int so = (int)pr_attr_int(k->node, "storage_order", 0);
    const bool cip = pr_attr_int(k->node, "count_include_pad", 0) == 1;
    const double p = attr_p(k->node);
    int64_t *ind = I ? I->data : NULL;
    if (X->dtype == PRECIS_FLOAT64) {
        if (kind == POOL_MAX)
            maxpool_f64(X->data, Y->data, ind, planes, &g, so);
        else
            avgpool_f64(X->data, Y->data, planes, &g, cip, kind == POOL_LP, p);
        return PRECIS_OK;
    }
    const bool native = X->dtype == PRECIS_FLOAT32;
    float *xf = native ? X->data : pr_refconv_to_f32(X);
    float *yf = native ? Y->data : malloc((size_t)(Y->numel > 0 ? Y->numel : 1) * sizeof(float));
    if (!xf || !yf) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    } else {
        if (kind == POOL_MAX)
            maxpool_f32(xf, yf, ind, planes, &g, so);
        else
            avgpool_f32(xf, yf, planes, &g, cip, kind == POOL_LP, p);
        if (!native) pr_refconv_from_f32(Y, yf);
    }
    if (!native) {
        free(xf);
        free(yf);
    }
    return st;
}

precis_status ref_MaxPool(pr_kernel *k) { return run_pool(k, POOL_MAX); }
precis_status ref_AveragePool(pr_kernel *k) { return run_pool(k, POOL_AVG); }
precis_status ref_LpPool(pr_kernel *k) { return run_pool(k, POOL_LP); }

/* mode: 0 average, 1 max, 2 Lp */
static precis_status run_global_pool(pr_kernel *k, int mode) {
    const pr_buf *X = pr_kin(k, 0);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X || !Y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing X or Y");
    if (!pool_type_ok(X->dtype, false) || Y->dtype != X->dtype)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported type %s",
                          pr_dtype_name(X->dtype));
    if (X->rank < 3)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "X must have rank >= 3, got %d", X->rank);
    const int64_t planes = X->dims[0] * X->dims[1];
    if (Y->numel != planes) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "Y size mismatch");
    const int64_t sz = planes > 0 ? X->numel / planes : 0;
    const double p = attr_p(k->node);
    if (X->dtype == PRECIS_FLOAT64) {
        global_pool_f64(X->data, Y->data, planes, sz, mode, p);
        return PRECIS_OK;
    }
    const bool native = X->dtype == PRECIS_FLOAT32;
    float *xf = native ? X->data : pr_refconv_to_f32(X);
    float *yf = native ? Y->data : malloc((size_t)(planes > 0 ? planes : 1) * sizeof(float));
    precis_status st = PRECIS_OK;
    if (!xf || !yf) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    } else {
        global_pool_f32(xf, yf, planes, sz, mode, p);
        if (!native) pr_refconv_from_f32(Y, yf);
    }
    if (!native) {
        free(xf);
        free(yf);
    }
    return st;
}

precis_status ref_GlobalAveragePool(pr_kernel *k) { return run_global_pool(k, 0); }
precis_status ref_GlobalMaxPool(pr_kernel *k) { return run_global_pool(k, 1); }
precis_status ref_GlobalLpPool(pr_kernel *k) { return run_global_pool(k, 2); }

/* Shape and type inference for the 'conv' family (see ops.inc):
 * convolutions, pooling and normalizations, ONNX opsets 1..17. */
#include <stdio.h>
#include <string.h>

#include "ir/infer.h"
#include "ir/infer_conv.h"

/* Bounds that keep all window index math far away from int64 overflow. */
#define CG_MAX_WIN ((int64_t)1 << 31) /* kernel, stride, dilation, pads */
#define CG_MAX_DIM ((int64_t)1 << 40) /* spatial dims */

static int64_t floor_div(int64_t a, int64_t b) { /* b > 0 */
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static int64_t ceil_div(int64_t a, int64_t b) { /* b > 0 */
    return -floor_div(-a, b);
}

static precis_status geom_err(const pr_node *n, pr_err *e, const char *msg, const char *what) {
    return pr_errf(e, PRECIS_ERR_SHAPE, "node '%s' (%s): %s%s", n->name, n->op_type, msg, what);
}

/* An ints attribute of exactly `want` entries, each in [lo, CG_MAX_WIN). Absent: def. */
static precis_status geom_ints(const pr_node *n, const char *name, int want, int64_t lo,
                               int64_t def, int64_t *out, bool *present, pr_err *e) {
    const int64_t *v;
    int cnt = pr_attr_ints(n, name, &v);
    if (present) *present = cnt >= 0;
    if (cnt < 0) {
        for (int i = 0; i < want; i++) out[i] = def;
        return PRECIS_OK;
    }
    if (cnt != want)
        return pr_errf(e, PRECIS_ERR_SHAPE,
                       "node '%s' (%s): attribute %s has %d values, expected %d", n->name,
                       n->op_type, name, cnt, want);
    for (int i = 0; i < cnt; i++) {
        if (v[i] < lo || v[i] >= CG_MAX_WIN)
            return pr_errf(e, PRECIS_ERR_SHAPE,
                           "node '%s' (%s): attribute %s[%d] = %lld out of range [%lld, %lld)",
                           n->name, n->op_type, name, i, (long long)v[i], (long long)lo,
                           (long long)CG_MAX_WIN);
        out[i] = v[i];
    }
    return PRECIS_OK;
}

precis_status pr_conv_geom_init(const pr_node *n, pr_conv_kind kind, int nsp, const int64_t *in_sp,
                                const int64_t *w_kernel, pr_err *e, pr_conv_geom *g) {
    precis_status st;
    memset(g, 0, sizeof *g);
    if (nsp < 1 || nsp > PR_MAX_RANK - 2)
        return pr_errf(e, PRECIS_ERR_SHAPE, "node '%s' (%s): %d spatial dims not supported",
                       n->name, n->op_type, nsp);
    g->nsp = nsp;
    for (int i = 0; i < nsp; i++) {
        g->in[i] = in_sp[i];
        if (in_sp[i] > CG_MAX_DIM) return geom_err(n, e, "input spatial dim too large", "");
    }

    /* kernel: attribute, else the weights */
    bool have_ks;
    PR_TRY(geom_ints(n, "kernel_shape", nsp, 1, PR_DIM_UNKNOWN, g->kernel, &have_ks, e));
    if (!have_ks && kind == PR_CONV_KIND_POOL)
        return geom_err(n, e, "attribute kernel_shape is required", "");
    if (w_kernel) {
        for (int i = 0; i < nsp; i++) {
            if (!have_ks) {
                g->kernel[i] = pr_dim_known(w_kernel[i]) ? w_kernel[i] : PR_DIM_UNKNOWN;
                if (g->kernel[i] == 0) return geom_err(n, e, "weights have a zero kernel dim", "");
                if (g->kernel[i] >= CG_MAX_WIN) return geom_err(n, e, "kernel too large", "");
            } else if (pr_dim_known(w_kernel[i]) && w_kernel[i] != g->kernel[i]) {
                return pr_errf(e, PRECIS_ERR_SHAPE,
                               "node '%s' (%s): kernel_shape[%d] = %lld but the weights have %lld",
                               n->name, n->op_type, i, (long long)g->kernel[i],
                               (long long)w_kernel[i]);
            }
        }
    }
    PR_TRY(geom_ints(n, "strides", nsp, 1, 1, g->stride, NULL, e));
    PR_TRY(geom_ints(n, "dilations", nsp, 1, 1, g->dil, NULL, e));
    int64_t pads[2 * PR_MAX_RANK];
    bool have_pads;
    PR_TRY(geom_ints(n, "pads", 2 * nsp, 0, 0, pads, &have_pads, e));
    if (kind == PR_CONV_KIND_CONVT)
        PR_TRY(geom_ints(n, "output_padding", nsp, 0, 0, g->out_pad, NULL, e));
    if (kind == PR_CONV_KIND_POOL) {
        int64_t cm = pr_attr_int(n, "ceil_mode", 0);
        if (cm != 0 && cm != 1) return geom_err(n, e, "ceil_mode must be 0 or 1", "");
        g->ceil_mode = cm == 1;
    }

    const char *ap = pr_attr_str(n, "auto_pad", "NOTSET");
    enum { AP_NOTSET, AP_UPPER, AP_LOWER, AP_VALID } mode;
    if (strcmp(ap, "NOTSET") == 0 || ap[0] == '\0')
        mode = AP_NOTSET;
    else if (strcmp(ap, "SAME_UPPER") == 0)
        mode = AP_UPPER;
    else if (strcmp(ap, "SAME_LOWER") == 0)
        mode = AP_LOWER;
    else if (strcmp(ap, "VALID") == 0)
        mode = AP_VALID;
    else
        return pr_errf(e, PRECIS_ERR_SHAPE, "node '%s' (%s): unknown auto_pad '%s'", n->name,
                       n->op_type, ap);

    /* ConvTranspose output_shape: nsp entries, or N, C and nsp entries */
    const int64_t *oshape = NULL;
    if (kind == PR_CONV_KIND_CONVT) {
        int cnt = pr_attr_ints(n, "output_shape", &oshape);
        if (cnt >= 0) {
            if (cnt != nsp && cnt != nsp + 2)
                return pr_errf(e, PRECIS_ERR_SHAPE,
                               "node '%s' (%s): output_shape has %d values, expected %d", n->name,
                               n->op_type, cnt, nsp);
            oshape += cnt - nsp;
            for (int i = 0; i < nsp; i++)
                if (oshape[i] < 0 || oshape[i] > CG_MAX_DIM)
                    return geom_err(n, e, "output_shape out of range", "");
        }
    }

    g->pads_known = true;
    for (int i = 0; i < nsp; i++) {
        int64_t in = in_sp[i], k = g->kernel[i], s = g->stride[i], d = g->dil[i];
        bool known = pr_dim_known(in) && k > 0;
        int64_t dk = k > 0 ? (k - 1) * d + 1 : PR_DIM_UNKNOWN;
        int64_t pb = 0, pe = 0, out = PR_DIM_UNKNOWN;
        if (kind == PR_CONV_KIND_CONVT) {
            if (pr_dim_known(in) && in > CG_MAX_DIM / s)
                return geom_err(n, e, "input spatial dim times stride too large", "");
            if (oshape || mode == AP_UPPER || mode == AP_LOWER) {
                int64_t o = oshape ? oshape[i] : (pr_dim_known(in) ? in * s : PR_DIM_UNKNOWN);
                out = o;
                if (known) {
                    int64_t total = s * (in - 1) + g->out_pad[i] + dk - o;
                    if (mode == AP_UPPER) {
                        pb = floor_div(total, 2);
                        pe = total - pb;
                    } else {
                        pe = floor_div(total, 2);
                        pb = total - pe;
                    }
                } else {
                    g->pads_known = false;
                }
            } else {
                if (mode == AP_NOTSET) {
                    pb = pads[i];
                    pe = pads[nsp + i];
                }
                if (known) {
                    out = s * (in - 1) + g->out_pad[i] + dk - pb - pe;
                    if (out < 0)
                        return pr_errf(e, PRECIS_ERR_SHAPE,
                                       "node '%s' (%s): negative output size along spatial dim %d",
                                       n->name, n->op_type, i);
                }
            }
        } else if (mode == AP_UPPER || mode == AP_LOWER) {
            if (pr_dim_known(in))
                out = ceil_div(in, s);
            else if (s == 1)
                out = in; /* keeps a symbolic size */
            if (known) {
                int64_t total = (out - 1) * s + dk - in;
                if (total < 0) total = 0;
                pb = mode == AP_UPPER ? total / 2 : total - total / 2;
                pe = total - pb;
            } else {
                g->pads_known = false;
            }
        } else {
            if (mode == AP_NOTSET) {
                pb = pads[i];
                pe = pads[nsp + i];
            }
            if (known) {
                int64_t span = in + pb + pe - dk;
                if (span < 0)
                    return pr_errf(e, PRECIS_ERR_SHAPE,
                                   "node '%s' (%s): kernel extent %lld exceeds padded input %lld "
                                   "along spatial dim %d",
                                   n->name, n->op_type, (long long)dk, (long long)(in + pb + pe),
                                   i);
                if (g->ceil_mode && mode == AP_NOTSET) {
                    out = ceil_div(span, s) + 1;
                    /* the last window must start inside the input or the begin padding */
                    if ((out - 1) * s >= in + pb) out--;
                } else {
                    out = span / s + 1;
                }
            } else if (k > 0 && s == 1 && pb + pe == dk - 1) {
                out = in; /* size preserved: keep the symbol */
            }
        }
        g->pad_b[i] = pb;
        g->pad_e[i] = pe;
        g->out[i] = out;
    }
    return PRECIS_OK;
fail:
    return st;
}

/* ------------------------------------------------------------------ helpers */

static precis_status need_float(pr_infer *ic, int i, const char *what) {
    pr_dtype dt = ic->in[i].dtype;
    if (!pr_dtype_info(dt)->is_float)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be a float type, got %s", what,
                         pr_dtype_name(dt));
    return PRECIS_OK;
}

static precis_status need_same_type(pr_infer *ic, int i, int j, const char *a, const char *b) {
    if (pr_in_present(ic, j) && ic->in[j].dtype != ic->in[i].dtype)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s (%s) and %s (%s) must have the same type", a,
                         pr_dtype_name(ic->in[i].dtype), b, pr_dtype_name(ic->in[j].dtype));
    return PRECIS_OK;
}

/* Optional per-channel vector input i: rank 1 of size n (when both known);
 * accept_scalar also admits rank 0 / size 1 (per-tensor). */
static precis_status need_vec(pr_infer *ic, int i, int64_t n, bool accept_scalar,
                              const char *what) {
    if (!pr_in_present(ic, i) || ic->in[i].rank < 0) return PRECIS_OK;
    const pr_tinfo *t = &ic->in[i];
    if (accept_scalar && (t->rank == 0 || (t->rank == 1 && t->dims[0] == 1))) return PRECIS_OK;
    if (t->rank != 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be 1-D%s, got rank %d", what,
                         accept_scalar ? " or a scalar" : "", t->rank);
    if (pr_dim_known(n) && pr_dim_known(t->dims[0]) && t->dims[0] != n)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s has %lld entries, expected %lld", what,
                         (long long)t->dims[0], (long long)n);
    return PRECIS_OK;
}

static precis_status need_scalar(pr_infer *ic, int i, const char *what) {
    if (!pr_in_present(ic, i) || ic->in[i].rank < 0) return PRECIS_OK;
    const pr_tinfo *t = &ic->in[i];
    if (t->rank == 0 || (t->rank == 1 && t->dims[0] == 1)) return PRECIS_OK;
    return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be a scalar (per-tensor)", what);
}

/* Shared by Conv, ConvTranspose, ConvInteger and QLinearConv.
 * x/w: input indices of data and weights, b: bias input index or -1. */
static precis_status infer_conv_common(pr_infer *ic, pr_conv_kind kind, int x, int w, int b,
                                       pr_dtype out_dt) {
    const pr_tinfo *X = &ic->in[x], *W = &ic->in[w];
    int rank = X->rank >= 0 ? X->rank : W->rank;
    if (rank < 0) {
        pr_infer_set_out(ic, 0, out_dt, -1, NULL);
        return PRECIS_OK;
    }
    if (rank < 3)
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "input must have rank >= 3 (N, C, spatial...), got %d", rank);
    if (X->rank >= 0 && W->rank >= 0 && X->rank != W->rank)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "weights rank %d differs from input rank %d",
                         W->rank, X->rank);
    int nsp = rank - 2;
    if (nsp > PR_MAX_RANK - 2) return pr_inferf(ic, PRECIS_ERR_SHAPE, "rank %d too large", rank);
    int64_t group = pr_attr_int(ic->node, "group", 1);
    if (group < 1 || group >= CG_MAX_WIN)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "group must be >= 1, got %lld", (long long)group);

    int64_t unk[PR_MAX_RANK];
    for (int i = 0; i < PR_MAX_RANK; i++) unk[i] = PR_DIM_UNKNOWN;
    const int64_t *xd = X->rank >= 0 ? X->dims : unk;
    const int64_t *wd = W->rank >= 0 ? W->dims : unk;
    int64_t C = xd[1], w0 = wd[0], w1 = wd[1], M;
    if (kind == PR_CONV_KIND_CONVT) {
        /* W: (C, M/group, k...) */
        if (pr_dim_known(C) && pr_dim_known(w0) && C != w0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "weights dim 0 (%lld) must equal the input channels (%lld)",
                             (long long)w0, (long long)C);
        if (pr_dim_known(C) && C % group != 0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "input channels %lld not divisible by group %lld", (long long)C,
                             (long long)group);
        if (pr_dim_known(w1) && w1 > CG_MAX_DIM / group)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "output channels too large");
        M = pr_dim_known(w1) ? w1 * group : PR_DIM_UNKNOWN;
    } else {
        /* W: (M, C/group, k...) */
        if (pr_dim_known(C) && pr_dim_known(w1) && (C % group != 0 || C / group != w1))
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "input has %lld channels but weights expect %lld x group %lld",
                             (long long)C, (long long)w1, (long long)group);
        if (pr_dim_known(w0) && w0 % group != 0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "output channels %lld not divisible by group %lld", (long long)w0,
                             (long long)group);
        M = w0;
    }
    if (b >= 0) {
        precis_status st = need_vec(ic, b, M, false, "bias B");
        if (st) return st;
    }
    pr_conv_geom g;
    precis_status st = pr_conv_geom_init(ic->node, kind, nsp, xd + 2, wd + 2, ic->err, &g);
    if (st) return st;
    int64_t od[PR_MAX_RANK];
    od[0] = xd[0];
    od[1] = M;
    for (int i = 0; i < nsp; i++) od[2 + i] = g.out[i];
    pr_infer_set_out(ic, 0, out_dt, rank, od);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ convolutions */

/* Conv and ConvTranspose: float X, W and optional B of one type. */
static precis_status infer_conv_float(pr_infer *ic, pr_conv_kind kind) {
    precis_status st;
    PR_TRY(pr_infer_need_input(ic, 0, "X"));
    PR_TRY(pr_infer_need_input(ic, 1, "W"));
    PR_TRY(need_float(ic, 0, "X"));
    PR_TRY(need_same_type(ic, 0, 1, "X", "W"));
    PR_TRY(need_same_type(ic, 0, 2, "X", "B"));
    return infer_conv_common(ic, kind, 0, 1, 2, ic->in[0].dtype);
fail:
    return st;
}

precis_status pr_infer_Conv(pr_infer *ic) { return infer_conv_float(ic, PR_CONV_KIND_CONV); }
precis_status pr_infer_ConvTranspose(pr_infer *ic) {
    return infer_conv_float(ic, PR_CONV_KIND_CONVT);
}

static precis_status need_q8(pr_infer *ic, int i, const char *what) {
    pr_dtype dt = ic->in[i].dtype;
    if (dt != PRECIS_UINT8 && dt != PRECIS_INT8)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be uint8 or int8, got %s", what,
                         pr_dtype_name(dt));
    return PRECIS_OK;
}

/* Per-channel weight parameter (zero point / scale): scalar or [M]. */
static precis_status need_wparam(pr_infer *ic, int i, int w, const char *what) {
    int64_t M = ic->in[w].rank >= 1 ? ic->in[w].dims[0] : PR_DIM_UNKNOWN;
    return need_vec(ic, i, M, true, what);
}

precis_status pr_infer_ConvInteger(pr_infer *ic) {
    precis_status st;
    PR_TRY(pr_infer_need_input(ic, 0, "x"));
    PR_TRY(pr_infer_need_input(ic, 1, "w"));
    PR_TRY(need_q8(ic, 0, "x"));
    PR_TRY(need_q8(ic, 1, "w"));
    PR_TRY(need_same_type(ic, 0, 2, "x", "x_zero_point"));
    PR_TRY(need_same_type(ic, 1, 3, "w", "w_zero_point"));
    PR_TRY(need_scalar(ic, 2, "x_zero_point"));
    PR_TRY(need_wparam(ic, 3, 1, "w_zero_point"));
    return infer_conv_common(ic, PR_CONV_KIND_CONV, 0, 1, -1, PRECIS_INT32);
fail:
    return st;
}

precis_status pr_infer_QLinearConv(pr_infer *ic) {
    precis_status st;
    static const char *const names[] = {"x",       "x_scale",      "x_zero_point", "w",
                                        "w_scale", "w_zero_point", "y_scale"};
    for (int i = 0; i < 7; i++) PR_TRY(pr_infer_need_input(ic, i, names[i]));
    PR_TRY(need_q8(ic, 0, "x"));
    PR_TRY(need_q8(ic, 3, "w"));
    PR_TRY(need_same_type(ic, 0, 2, "x", "x_zero_point"));
    PR_TRY(need_same_type(ic, 3, 5, "w", "w_zero_point"));
    static const int scales[] = {1, 4, 6};
    for (int j = 0; j < 3; j++) {
        int i = scales[j];
        if (ic->in[i].dtype != PRECIS_FLOAT32)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be float32, got %s", names[i],
                             pr_dtype_name(ic->in[i].dtype));
    }
    PR_TRY(need_scalar(ic, 1, "x_scale"));
    PR_TRY(need_scalar(ic, 2, "x_zero_point"));
    PR_TRY(need_wparam(ic, 4, 3, "w_scale"));
    PR_TRY(need_wparam(ic, 5, 3, "w_zero_point"));
    PR_TRY(need_scalar(ic, 6, "y_scale"));
    pr_dtype out_dt = ic->in[0].dtype;
    if (pr_in_present(ic, 7)) {
        PR_TRY(need_q8(ic, 7, "y_zero_point"));
        PR_TRY(need_scalar(ic, 7, "y_zero_point"));
        out_dt = ic->in[7].dtype;
    }
    if (pr_in_present(ic, 8) && ic->in[8].dtype != PRECIS_INT32)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "B must be int32, got %s",
                         pr_dtype_name(ic->in[8].dtype));
    return infer_conv_common(ic, PR_CONV_KIND_CONV, 0, 3, 8, out_dt);
fail:
    return st;
}

/* ----------------------------------------------------------------- pooling */

static precis_status infer_pool(pr_infer *ic, bool allow_int8) {
    precis_status st;
    PR_TRY(pr_infer_need_input(ic, 0, "X"));
    pr_dtype dt = ic->in[0].dtype;
    if (!pr_dtype_info(dt)->is_float && !(allow_int8 && (dt == PRECIS_UINT8 || dt == PRECIS_INT8)))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "X has invalid type %s", pr_dtype_name(dt));
    const pr_tinfo *X = &ic->in[0];
    if (X->rank < 0) {
        pr_infer_set_out(ic, 0, dt, -1, NULL);
        pr_infer_set_out(ic, 1, PRECIS_INT64, -1, NULL);
        return PRECIS_OK;
    }
    if (X->rank < 3)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "X must have rank >= 3 (N, C, spatial...), got %d",
                         X->rank);
    pr_conv_geom g;
    PR_TRY(pr_conv_geom_init(ic->node, PR_CONV_KIND_POOL, X->rank - 2, X->dims + 2, NULL, ic->err,
                             &g));
    int64_t od[PR_MAX_RANK];
    od[0] = X->dims[0];
    od[1] = X->dims[1];
    for (int i = 0; i < g.nsp; i++) od[2 + i] = g.out[i];
    pr_infer_set_out(ic, 0, dt, X->rank, od);
    pr_infer_set_out(ic, 1, PRECIS_INT64, X->rank, od);
    return PRECIS_OK;
fail:
    return st;
}

precis_status pr_infer_MaxPool(pr_infer *ic) {
    int64_t so = pr_attr_int(ic->node, "storage_order", 0);
    if (so != 0 && so != 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "storage_order must be 0 or 1, got %lld",
                         (long long)so);
    return infer_pool(ic, true);
}

precis_status pr_infer_AveragePool(pr_infer *ic) {
    int64_t cip = pr_attr_int(ic->node, "count_include_pad", 0);
    if (cip != 0 && cip != 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "count_include_pad must be 0 or 1");
    return infer_pool(ic, false);
}

/* LpPool / GlobalLpPool: p is a float in opset 1, an int from opset 2. */
static precis_status check_p(pr_infer *ic) {
    const pr_attr *a = pr_attr_find(ic->node, "p");
    if (!a) return PRECIS_OK;
    double p = a->type == PR_ATTR_INT ? (double)a->i : a->type == PR_ATTR_FLOAT ? a->f : -1.0;
    if (!(p > 0.0)) return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute p must be a positive number");
    return PRECIS_OK;
}

precis_status pr_infer_LpPool(pr_infer *ic) {
    precis_status st = check_p(ic);
    return st ? st : infer_pool(ic, false);
}

static precis_status infer_global_pool(pr_infer *ic, bool allow_int8) {
    precis_status st;
    PR_TRY(pr_infer_need_input(ic, 0, "X"));
    pr_dtype dt = ic->in[0].dtype;
    if (!pr_dtype_info(dt)->is_float && !(allow_int8 && (dt == PRECIS_UINT8 || dt == PRECIS_INT8)))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "X has invalid type %s", pr_dtype_name(dt));
    const pr_tinfo *X = &ic->in[0];
    if (X->rank >= 0 && X->rank < 3)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "X must have rank >= 3 (N, C, spatial...), got %d",
                         X->rank);
    pr_infer_copy(ic, 0, 0);
    for (int i = 2; i < X->rank; i++) ic->out[0].dims[i] = 1;
    return PRECIS_OK;
fail:
    return st;
}

precis_status pr_infer_GlobalAveragePool(pr_infer *ic) { return infer_global_pool(ic, false); }
precis_status pr_infer_GlobalMaxPool(pr_infer *ic) { return infer_global_pool(ic, false); }
precis_status pr_infer_GlobalLpPool(pr_infer *ic) {
    precis_status st = check_p(ic);
    return st ? st : infer_global_pool(ic, false);
}

/* ----------------------------------------------------------- normalization */

static int64_t channels_of(const pr_infer *ic) {
    const pr_tinfo *X = &ic->in[0];
    return X->rank >= 2 ? X->dims[1] : PR_DIM_UNKNOWN;
}

precis_status pr_infer_BatchNormalization(pr_infer *ic) {
    precis_status st;
    static const char *const names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 5; i++) PR_TRY(pr_infer_need_input(ic, i, names[i]));
    PR_TRY(need_float(ic, 0, "X"));
    for (int i = 1; i < 5; i++) PR_TRY(need_float(ic, i, names[i]));
    const pr_tinfo *X = &ic->in[0];
    if (X->rank >= 0 && X->rank < 2)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "X must have rank >= 2, got %d", X->rank);
    int64_t C = channels_of(ic);
    /* opset < 9 with spatial=0: parameters are C x D1 x ... x Dn */
    bool per_act = ic->node->opset < 9 && pr_attr_int(ic->node, "spatial", 1) == 0;
    for (int i = 1; i < 5; i++) {
        if (per_act && ic->in[i].rank > 1) {
            if (X->rank >= 0 && ic->in[i].rank != X->rank - 1)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must have rank %d", names[i],
                                 X->rank - 1);
            continue;
        }
        PR_TRY(need_vec(ic, i, C, false, names[i]));
    }
    pr_infer_copy(ic, 0, 0);
    int64_t vd[1] = {C};
    pr_dtype mdt = ic->in[3].dtype;
    for (int o = 1; o < ic->n_out && o < 5; o++) pr_infer_set_out(ic, o, mdt, 1, vd);
    return PRECIS_OK;
fail:
    return st;
}

precis_status pr_infer_InstanceNormalization(pr_infer *ic) {
    precis_status st;
    PR_TRY(pr_infer_need_input(ic, 0, "input"));
    PR_TRY(pr_infer_need_input(ic, 1, "scale"));
    PR_TRY(pr_infer_need_input(ic, 2, "B"));
    PR_TRY(need_float(ic, 0, "input"));
    PR_TRY(need_same_type(ic, 0, 1, "input", "scale"));
    PR_TRY(need_same_type(ic, 0, 2, "input", "B"));
    const pr_tinfo *X = &ic->in[0];
    if (X->rank >= 0 && X->rank < 3)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input must have rank >= 3, got %d", X->rank);
    int64_t C = channels_of(ic);
    PR_TRY(need_vec(ic, 1, C, false, "scale"));
    PR_TRY(need_vec(ic, 2, C, false, "B"));
    pr_infer_copy(ic, 0, 0);
    return PRECIS_OK;
fail:
    return st;
}

/* Can shape s (rank sr) be unidirectionally broadcast to d (rank dr)? */
static bool bcast_to(int sr, const int64_t *s, int dr, const int64_t *d) {
    if (sr > dr) return false;
    for (int i = 0; i < sr; i++) {
        int64_t a = s[sr - 1 - i], b = d[dr - 1 - i];
        if (a == 1 || !pr_dim_known(a) || !pr_dim_known(b)) continue;
        if (a != b) return false;
    }
    return true;
}

precis_status pr_infer_LayerNormalization(pr_infer *ic) {
    precis_status st;
    PR_TRY(pr_infer_need_input(ic, 0, "X"));
    PR_TRY(pr_infer_need_input(ic, 1, "Scale"));
    PR_TRY(need_float(ic, 0, "X"));
    PR_TRY(need_same_type(ic, 0, 1, "X", "Scale"));
    PR_TRY(need_same_type(ic, 0, 2, "X", "B"));
    int64_t stash = pr_attr_int(ic->node, "stash_type", PRECIS_FLOAT32);
    if (stash != PRECIS_FLOAT32 && stash != PRECIS_FLOAT64 && stash != PRECIS_FLOAT16 &&
        stash != PRECIS_BFLOAT16)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "invalid stash_type %lld", (long long)stash);
    pr_infer_copy(ic, 0, 0);
    const pr_tinfo *X = &ic->in[0];
    const bool q = pr_attr_float(ic->node, "q_scale", 0.0f) != 0.0f;
    if (q) { /* ops.inc: output 1 is Y quantized to e4m3 */
        if (!(pr_attr_float(ic->node, "q_scale", 0.0f) > 0.0f) || ic->n_out > 2)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "q_scale must be > 0, with at most 2 outputs");
        if (ic->n_out > 1) pr_infer_copy(ic, 1, 0);
        if (ic->n_out > 1) ic->out[1].dtype = PRECIS_FLOAT8E4M3FN;
    }
    if (X->rank < 0) {
        for (int o = q ? 3 : 1; o < 3; o++) pr_infer_set_out(ic, o, (pr_dtype)stash, -1, NULL);
        return PRECIS_OK;
    }
    if (X->rank < 1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "X must have rank >= 1");
    int axis;
    PR_TRY(pr_infer_axis(ic, pr_attr_int(ic->node, "axis", -1), X->rank, &axis));
    for (int i = 1; i <= 2; i++) {
        if (!pr_in_present(ic, i) || ic->in[i].rank < 0) continue;
        if (!bcast_to(ic->in[i].rank, ic->in[i].dims, X->rank - axis, X->dims + axis))
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "%s does not broadcast to the normalized shape (X dims from axis %d)",
                             i == 1 ? "Scale" : "B", axis);
    }
    int64_t md[PR_MAX_RANK];
    for (int i = 0; i < X->rank; i++) md[i] = i < axis ? X->dims[i] : 1;
    for (int o = q ? 3 : 1; o < 3; o++) pr_infer_set_out(ic, o, (pr_dtype)stash, X->rank, md);
    return PRECIS_OK;
fail:
    return st;
}

precis_status pr_infer_LpNormalization(pr_infer *ic) {
    precis_status st;
    PR_TRY(pr_infer_need_input(ic, 0, "input"));
    PR_TRY(need_float(ic, 0, "input"));
    int64_t p = pr_attr_int(ic->node, "p", 2);
    if (p != 1 && p != 2)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "p must be 1 or 2, got %lld", (long long)p);
    const pr_tinfo *X = &ic->in[0];
    if (X->rank >= 0) {
        if (X->rank < 1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "input must have rank >= 1");
        int axis;
        PR_TRY(pr_infer_axis(ic, pr_attr_int(ic->node, "axis", -1), X->rank, &axis));
    }
    pr_infer_copy(ic, 0, 0);
    return PRECIS_OK;
fail:
    return st;
}

precis_status pr_infer_LRN(pr_infer *ic) {
    precis_status st;
    PR_TRY(pr_infer_need_input(ic, 0, "X"));
    PR_TRY(need_float(ic, 0, "X"));
    int64_t size = pr_attr_int(ic->node, "size", 0);
    if (size < 1 || size >= CG_MAX_WIN)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute size must be >= 1 (required)");
    const pr_tinfo *X = &ic->in[0];
    if (X->rank >= 0 && X->rank < 2)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "X must have rank >= 2 (N, C, ...), got %d",
                         X->rank);
    pr_infer_copy(ic, 0, 0);
    return PRECIS_OK;
fail:
    return st;
}

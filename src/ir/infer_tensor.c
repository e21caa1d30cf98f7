/* Shape and type inference for the 'tensor' family (see ops.inc): shape
 * manipulation, indexing and generation. Resize/Upsample live in
 * infer_resize.c; the parameter plans shared with the ref kernels are
 * declared in infer_tensor.h. */
#include "ir/infer_tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

/* Length of a 1-D input when known from its shape, else -1. */
static int64_t in_len1d(const pr_infer *ic, int i) {
    if (!pr_in_present(ic, i)) return -1;
    const pr_tinfo *t = &ic->in[i];
    if (t->rank == 0) return 1;
    if (t->rank == 1 && pr_dim_known(t->dims[0])) return t->dims[0];
    return -1;
}

precis_status pr_infer_check_storable(pr_infer *ic, pr_dtype dt) {
    if (dt != PRECIS_UNDEFINED && pr_dtype_size(dt) == 0)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED,
                         "dtype %s is not supported (no fixed-size storage)", pr_dtype_name(dt));
    return PRECIS_OK;
}

/* Axes from an attribute (opset < attr_until) or from input `input`.
 * Returns count; -1: not given; -3: given but value unknown (count unknown
 * unless *len_hint >= 0); -2: error set. */
static int axes_arg(pr_infer *ic, int64_t attr_until, int input, int64_t *buf, int cap,
                    int64_t *len_hint) {
    *len_hint = -1;
    if (ic->node->opset < attr_until) {
        const int64_t *a;
        int n = pr_attr_ints(ic->node, "axes", &a);
        if (n < 0) return -1;
        if (n > cap) {
            pr_inferf(ic, PRECIS_ERR_SHAPE, "%d axes given, at most %d supported", n, cap);
            return -2;
        }
        memcpy(buf, a, (size_t)n * sizeof *a);
        return n;
    }
    if (!pr_in_present(ic, input)) return -1;
    int n = pr_infer_in_ints(ic, input, buf, cap);
    if (n == -1) {
        *len_hint = in_len1d(ic, input);
        return -3;
    }
    return n;
}

/* Normalise axes against rank; fails on out-of-range or repeated axes. */
static precis_status norm_axes(pr_infer *ic, int64_t *axes, int n, int rank) {
    for (int i = 0; i < n; i++) {
        int a;
        precis_status st = pr_infer_axis(ic, axes[i], rank, &a);
        if (st) return st;
        axes[i] = a;
        for (int j = 0; j < i; j++)
            if (axes[j] == a)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "axis %d is given more than once", a);
    }
    return PRECIS_OK;
}

/* Product of dims[lo..hi): known value, or the single non-1 symbolic dim, or
 * unknown. */
static int64_t dims_product(const int64_t *dims, int lo, int hi) {
    int64_t p = 1, sym = 0;
    int n_unknown = 0;
    for (int i = lo; i < hi; i++) {
        if (pr_dim_known(dims[i])) {
            if (dims[i] == 0) return 0;
            if (p > INT64_MAX / dims[i]) return PR_DIM_UNKNOWN;
            p *= dims[i];
        } else {
            n_unknown++;
            sym = dims[i];
        }
    }
    if (n_unknown == 0) return p;
    if (n_unknown == 1 && p == 1) return sym;
    return PR_DIM_UNKNOWN;
}

/* ------------------------------------------------------------ Constant */

precis_status pr_infer_Constant(pr_infer *ic) {
    const pr_node *n = ic->node;
    for (int i = 0; i < n->n_attrs; i++) {
        const pr_attr *a = &n->attrs[i];
        if (!a->name) continue;
        if (strcmp(a->name, "value") == 0) {
            if (a->type != PR_ATTR_TENSOR || !a->t)
                return pr_inferf(ic, PRECIS_ERR_PARSE, "attribute 'value' is not a tensor");
            const pr_const *t = a->t;
            if (t->dtype == PRECIS_STRING)
                return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED,
                                 "string tensors are not supported (precis has no string dtype)");
            precis_status st = pr_infer_check_storable(ic, t->dtype);
            if (st) return st;
            if (t->rank < 0 || t->rank > PR_MAX_RANK)
                return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "value has rank %d (max %d)", t->rank,
                                 PR_MAX_RANK);
            int64_t ne = pr_numel(t->rank, t->dims);
            if (ne < 0 || (uint64_t)ne * pr_dtype_size(t->dtype) != t->nbytes)
                return pr_inferf(ic, PRECIS_ERR_PARSE,
                                 "value holds %zu bytes, its shape needs %lld", t->nbytes,
                                 (long long)ne * (long long)pr_dtype_size(t->dtype));
            pr_infer_set_out(ic, 0, t->dtype, t->rank, t->dims);
            return PRECIS_OK;
        }
        if (strcmp(a->name, "value_float") == 0) {
            pr_infer_set_out(ic, 0, PRECIS_FLOAT32, 0, NULL);
            return PRECIS_OK;
        }
        if (strcmp(a->name, "value_int") == 0) {
            pr_infer_set_out(ic, 0, PRECIS_INT64, 0, NULL);
            return PRECIS_OK;
        }
        if (strcmp(a->name, "value_floats") == 0 || strcmp(a->name, "value_ints") == 0) {
            int64_t d = a->n;
            pr_infer_set_out(ic, 0, a->name[6] == 'f' ? PRECIS_FLOAT32 : PRECIS_INT64, 1, &d);
            return PRECIS_OK;
        }
        if (strcmp(a->name, "value_string") == 0 || strcmp(a->name, "value_strings") == 0)
            return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED,
                             "attribute '%s': precis has no string dtype", a->name);
        if (strcmp(a->name, "sparse_value") == 0)
            return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "sparse_value is not supported");
    }
    return pr_inferf(ic, PRECIS_ERR_SHAPE,
                     "no value attribute (value, value_float(s), value_int(s))");
}

/* ------------------------------------------------------------ Reshape */

precis_status pr_infer_Reshape(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    int64_t shape[PR_MAX_RANK];
    int n;
    if (ic->node->opset < 5) {
        const int64_t *a;
        n = pr_attr_ints(ic->node, "shape", &a);
        if (n < 0) return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute 'shape' is required");
        if (n > PR_MAX_RANK)
            return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "target rank %d exceeds %d", n,
                             PR_MAX_RANK);
        memcpy(shape, a, (size_t)n * sizeof *a);
    } else {
        st = pr_infer_need_input(ic, 1, "shape");
        if (st) return st;
        if (ic->in[1].rank > 1)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "shape must be 1-D, got rank %d",
                             ic->in[1].rank);
        n = pr_infer_in_ints(ic, 1, shape, PR_MAX_RANK);
        if (n == -2) return PRECIS_ERR_SHAPE;
    }
    ic->out[0].dtype = x->dtype;
    if (n == -1) {
        int64_t len = in_len1d(ic, 1);
        if (len > PR_MAX_RANK)
            return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "target rank %lld exceeds %d",
                             (long long)len, PR_MAX_RANK);
        if (len >= 0) pr_infer_set_out(ic, 0, x->dtype, (int)len, NULL);
        return PRECIS_OK;
    }
    bool allowzero = ic->node->opset >= 14 && pr_attr_int(ic->node, "allowzero", 0) != 0;
    char b1[160], b2[160];
    int neg = -1;
    bool has_zero = false;
    int64_t out[PR_MAX_RANK];
    for (int i = 0; i < n; i++) {
        int64_t v = shape[i];
        if (v < -1)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "invalid shape %s: dim %d is %lld",
                             pr_ints_str(shape, n, b1, sizeof b1), i, (long long)v);
        if (v == -1) {
            if (neg >= 0)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "shape %s has more than one -1",
                                 pr_ints_str(shape, n, b1, sizeof b1));
            neg = i;
            out[i] = PR_DIM_UNKNOWN;
        } else if (v == 0 && !allowzero) {
            if (x->rank >= 0 && i >= x->rank)
                return pr_inferf(
                    ic, PRECIS_ERR_SHAPE,
                    "shape %s: 0 at index %d copies an input dim, but the input has rank %d",
                    pr_ints_str(shape, n, b1, sizeof b1), i, x->rank);
            out[i] = x->rank >= 0 ? x->dims[i] : PR_DIM_UNKNOWN;
        } else {
            if (v == 0) has_zero = true;
            out[i] = v;
        }
    }
    if (allowzero && has_zero && neg >= 0)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "shape %s has both 0 and -1 with allowzero=1",
                         pr_ints_str(shape, n, b1, sizeof b1));
    if (x->rank < 0) {
        pr_infer_set_out(ic, 0, x->dtype, n, out);
        return PRECIS_OK;
    }
    int64_t in_n = pr_numel(x->rank, x->dims);
    if (neg >= 0) {
        /* cancel identical non-known dims of input and output, then divide */
        int64_t rest_in[PR_MAX_RANK];
        int n_rest = 0;
        int64_t p_in = 1, p_out = 1;
        bool ok = true;
        for (int i = 0; i < x->rank; i++) {
            if (pr_dim_known(x->dims[i])) {
                if (x->dims[i] && p_in > INT64_MAX / x->dims[i])
                    ok = false;
                else
                    p_in *= x->dims[i];
            } else {
                rest_in[n_rest++] = x->dims[i];
            }
        }
        for (int i = 0; i < n && ok; i++) {
            if (i == neg) continue;
            if (pr_dim_known(out[i])) {
                if (out[i] && p_out > INT64_MAX / out[i])
                    ok = false;
                else
                    p_out *= out[i];
            } else if (pr_dim_is_sym(out[i])) {
                int j = 0;
                while (j < n_rest && rest_in[j] != out[i]) j++;
                if (j == n_rest)
                    ok = false;
                else
                    rest_in[j] = rest_in[--n_rest];
            } else {
                ok = false;
            }
        }
        if (ok && n_rest == 0) {
            if (p_out == 0)
                return pr_inferf(
                    ic, PRECIS_ERR_SHAPE,
                    "cannot infer the -1 of shape %s for input %s: other dims give 0 elements",
                    pr_ints_str(shape, n, b1, sizeof b1),
                    pr_infer_dims_str(ic, x->rank, x->dims, b2, sizeof b2));
            if (p_in % p_out != 0)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "cannot reshape %s (%lld elements) into %s",
                                 pr_infer_dims_str(ic, x->rank, x->dims, b2, sizeof b2),
                                 (long long)p_in, pr_ints_str(shape, n, b1, sizeof b1));
            out[neg] = p_in / p_out;
        } else if (ok && n_rest == 1 && p_in == p_out && p_in != 0) {
            out[neg] = rest_in[0];
        }
    } else if (in_n >= 0) {
        int64_t out_n = pr_numel(n, out);
        if (out_n >= 0 && out_n != in_n)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "cannot reshape %s (%lld elements) into %s",
                             pr_infer_dims_str(ic, x->rank, x->dims, b2, sizeof b2),
                             (long long)in_n, pr_ints_str(shape, n, b1, sizeof b1));
    }
    pr_infer_set_out(ic, 0, x->dtype, n, out);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Flatten */

precis_status pr_infer_Flatten(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "input");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    int64_t axis = pr_attr_int(ic->node, "axis", 1);
    int64_t dims[2] = {PR_DIM_UNKNOWN, PR_DIM_UNKNOWN};
    if (x->rank < 0) {
        pr_infer_set_out(ic, 0, x->dtype, 2, dims);
        return PRECIS_OK;
    }
    if (axis < -x->rank || axis > x->rank)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "axis %lld out of range [%d, %d] for rank %d",
                         (long long)axis, -x->rank, x->rank, x->rank);
    int a = (int)(axis < 0 ? axis + x->rank : axis);
    dims[0] = dims_product(x->dims, 0, a);
    dims[1] = dims_product(x->dims, a, x->rank);
    if (pr_numel(x->rank, x->dims) < 0 && pr_dim_known(dims[0]) && pr_dim_known(dims[1]) &&
        dims[0] != 0 && dims[1] != 0 && dims[0] > INT64_MAX / dims[1])
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "element count overflows");
    pr_infer_set_out(ic, 0, x->dtype, 2, dims);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Transpose */

precis_status pr_infer_Transpose(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    const int64_t *perm;
    int np = pr_attr_ints(ic->node, "perm", &perm);
    if (x->rank < 0) {
        ic->out[0].dtype = x->dtype;
        if (np >= 0 && np <= PR_MAX_RANK) pr_infer_set_out(ic, 0, x->dtype, np, NULL);
        return PRECIS_OK;
    }
    int r = x->rank;
    int64_t out[PR_MAX_RANK];
    if (np < 0) {
        for (int i = 0; i < r; i++) out[i] = x->dims[r - 1 - i];
        pr_infer_set_out(ic, 0, x->dtype, r, out);
        return PRECIS_OK;
    }
    char b[160];
    if (np != r)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "perm %s has %d entries, the input has rank %d",
                         pr_ints_str(perm, np, b, sizeof b), np, r);
    bool seen[PR_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "perm %s is not a permutation of 0..%d",
                             pr_ints_str(perm, np, b, sizeof b), r - 1);
        seen[perm[i]] = true;
        out[i] = x->dims[perm[i]];
    }
    pr_infer_set_out(ic, 0, x->dtype, r, out);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Squeeze / Unsqueeze */

precis_status pr_infer_Squeeze(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    ic->out[0].dtype = x->dtype;
    int64_t axes[PR_MAX_RANK + 1], hint;
    int n = axes_arg(ic, 13, 1, axes, PR_MAX_RANK + 1, &hint);
    if (n == -2) return PRECIS_ERR_SHAPE;
    if (x->rank < 0) return PRECIS_OK;
    int r = x->rank;
    int64_t out[PR_MAX_RANK];
    int k = 0;
    if (n == -3) {
        if (hint >= 0 && hint <= r) pr_infer_set_out(ic, 0, x->dtype, r - (int)hint, NULL);
        return PRECIS_OK;
    }
    if (n == -1) {
        for (int i = 0; i < r; i++) {
            if (!pr_dim_known(x->dims[i])) return PRECIS_OK; /* rank unknown */
            if (x->dims[i] != 1) out[k++] = x->dims[i];
        }
        pr_infer_set_out(ic, 0, x->dtype, k, out);
        return PRECIS_OK;
    }
    st = norm_axes(ic, axes, n, r);
    if (st) return st;
    bool drop[PR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int a = (int)axes[i];
        if (pr_dim_known(x->dims[a]) && x->dims[a] != 1) {
            char b[160];
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "cannot squeeze axis %d of size %lld (input %s)",
                             a, (long long)x->dims[a],
                             pr_infer_dims_str(ic, r, x->dims, b, sizeof b));
        }
        drop[a] = true;
    }
    for (int i = 0; i < r; i++)
        if (!drop[i]) out[k++] = x->dims[i];
    pr_infer_set_out(ic, 0, x->dtype, k, out);
    return PRECIS_OK;
}

precis_status pr_infer_Unsqueeze(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    ic->out[0].dtype = x->dtype;
    int64_t axes[PR_MAX_RANK + 1], hint;
    int n = axes_arg(ic, 13, 1, axes, PR_MAX_RANK + 1, &hint);
    if (n == -2) return PRECIS_ERR_SHAPE;
    if (n == -1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "axes are required");
    if (x->rank < 0) return PRECIS_OK;
    if (n == -3) {
        if (hint >= 0 && x->rank + hint <= PR_MAX_RANK)
            pr_infer_set_out(ic, 0, x->dtype, x->rank + (int)hint, NULL);
        return PRECIS_OK;
    }
    int r = x->rank + n;
    if (r > PR_MAX_RANK)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, PR_MAX_RANK);
    st = norm_axes(ic, axes, n, r);
    if (st) return st;
    bool ins[PR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) ins[axes[i]] = true;
    int64_t out[PR_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++) out[i] = ins[i] ? 1 : x->dims[j++];
    pr_infer_set_out(ic, 0, x->dtype, r, out);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Concat */

precis_status pr_infer_Concat(pr_infer *ic) {
    if (ic->n_in < 1 || !pr_in_present(ic, 0))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "needs at least one input");
    const pr_attr *aa = pr_attr_find(ic->node, "axis");
    if (!aa && ic->node->opset >= 4)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute 'axis' is required");
    int64_t axis = pr_attr_int(ic->node, "axis", 1);
    pr_dtype dt = PRECIS_UNDEFINED;
    int rank = -1;
    for (int i = 0; i < ic->n_in; i++) {
        if (!pr_in_present(ic, i)) return pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d is missing", i);
        const pr_tinfo *t = &ic->in[i];
        if (dt == PRECIS_UNDEFINED)
            dt = t->dtype;
        else if (t->dtype != dt)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d is %s, input 0 is %s", i,
                             pr_dtype_name(t->dtype), pr_dtype_name(dt));
        if (t->rank >= 0) {
            if (rank < 0)
                rank = t->rank;
            else if (t->rank != rank)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d has rank %d, expected %d", i,
                                 t->rank, rank);
        }
    }
    ic->out[0].dtype = dt;
    if (rank < 0) return PRECIS_OK;
    if (rank == 0) return pr_inferf(ic, PRECIS_ERR_SHAPE, "cannot concatenate scalars");
    int a;
    precis_status st = pr_infer_axis(ic, axis, rank, &a);
    if (st) return st;
    int64_t out[PR_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        if (d == a) {
            int64_t sum = 0;
            bool all = true;
            for (int i = 0; i < ic->n_in; i++) {
                const pr_tinfo *t = &ic->in[i];
                if (t->rank < 0 || !pr_dim_known(t->dims[d])) {
                    all = false;
                    continue;
                }
                if (sum > INT64_MAX - t->dims[d])
                    return pr_inferf(ic, PRECIS_ERR_SHAPE, "axis size overflows");
                sum += t->dims[d];
            }
            out[d] =
                all ? sum
                    : (ic->n_in == 1 && ic->in[0].rank >= 0 ? ic->in[0].dims[d] : PR_DIM_UNKNOWN);
            continue;
        }
        int64_t v = PR_DIM_UNKNOWN;
        for (int i = 0; i < ic->n_in; i++) {
            const pr_tinfo *t = &ic->in[i];
            if (t->rank < 0) continue;
            int64_t w = t->dims[d];
            if (pr_dim_known(w)) {
                if (pr_dim_known(v) && v != w) {
                    char b1[160], b2[160];
                    return pr_inferf(ic, PRECIS_ERR_SHAPE,
                                     "input %d %s does not match %s on dim %d (axis is %d)", i,
                                     pr_infer_dims_str(ic, rank, t->dims, b1, sizeof b1),
                                     pr_infer_dims_str(ic, rank, ic->in[0].dims, b2, sizeof b2), d,
                                     a);
                }
                v = w;
            } else if (pr_dim_is_sym(w) && !pr_dim_known(v)) {
                v = w;
            }
        }
        out[d] = v;
    }
    pr_infer_set_out(ic, 0, dt, rank, out);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Split */

precis_status pr_split_plan_make(pr_infer *ic, int n_out, int *axis_out, int64_t *sizes,
                                 bool *known) {
    precis_status st = pr_infer_need_input(ic, 0, "input");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    *known = false;
    for (int j = 0; j < n_out; j++) sizes[j] = PR_DIM_UNKNOWN;
    if (n_out < 1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "needs at least one output");
    int64_t num_outputs = pr_attr_int(ic->node, "num_outputs", 0);
    bool has_num = ic->node->opset >= 18 && pr_attr_find(ic->node, "num_outputs");
    if (has_num && num_outputs != n_out)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "num_outputs is %lld but the node has %d outputs",
                         (long long)num_outputs, n_out);
    if (x->rank < 0) return PRECIS_OK;
    int axis;
    st = pr_infer_axis(ic, pr_attr_int(ic->node, "axis", 0), x->rank, &axis);
    if (st) return st;
    *axis_out = axis;
    int64_t dim = x->dims[axis];
    /* explicit split sizes */
    int64_t *split = NULL;
    int ns = -1;
    bool split_unknown = false;
    const int64_t *as;
    bool from_input = ic->node->opset >= 13 || (ic->node->opset < 2 && pr_in_present(ic, 1));
    if (from_input) {
        if (pr_in_present(ic, 1)) {
            int64_t len = pr_infer_in_numel(ic, 1);
            if (len < 0 || !pr_infer_value_known(ic, 1)) {
                split_unknown = true;
            } else {
                split = malloc(((size_t)len + 1) * sizeof *split);
                if (!split) return pr_inferf(ic, PRECIS_ERR_OOM, "out of memory");
                ns = pr_infer_in_ints(ic, 1, split, (int)(len < INT32_MAX ? len : INT32_MAX));
                if (ns == -2) {
                    free(split);
                    return PRECIS_ERR_SHAPE;
                }
            }
        }
    } else {
        int na = pr_attr_ints(ic->node, "split", &as);
        if (na >= 0) {
            split = malloc(((size_t)na + 1) * sizeof *split);
            if (!split) return pr_inferf(ic, PRECIS_ERR_OOM, "out of memory");
            memcpy(split, as, (size_t)na * sizeof *as);
            ns = na;
        }
    }
    if (split_unknown) return PRECIS_OK;
    if (split && ns >= 0) {
        st = PRECIS_OK;
        if (has_num) {
            st = pr_inferf(ic, PRECIS_ERR_SHAPE, "both 'split' and 'num_outputs' are given");
            goto done;
        }
        if (ns != n_out) {
            st = pr_inferf(ic, PRECIS_ERR_SHAPE, "split has %d entries but the node has %d outputs",
                           ns, n_out);
            goto done;
        }
        int64_t sum = 0;
        for (int j = 0; j < ns; j++) {
            if (split[j] < 0 || split[j] > INT64_MAX - sum) {
                st = pr_inferf(ic, PRECIS_ERR_SHAPE, "split entry %d is %lld", j,
                               (long long)split[j]);
                goto done;
            }
            sum += split[j];
            sizes[j] = split[j];
        }
        if (pr_dim_known(dim) && sum != dim) {
            char b[256];
            st = pr_inferf(ic, PRECIS_ERR_SHAPE, "split %s sums to %lld, axis %d has size %lld",
                           pr_ints_str(split, ns, b, sizeof b), (long long)sum, axis,
                           (long long)dim);
            goto done;
        }
        *known = true;
    done:
        free(split);
        return st;
    }
    free(split);
    if (!pr_dim_known(dim)) return PRECIS_OK;
    if (dim % n_out == 0) {
        for (int j = 0; j < n_out; j++) sizes[j] = dim / n_out;
    } else {
        if (!has_num)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "axis %d of size %lld cannot be split into %d equal parts", axis,
                             (long long)dim, n_out);
        int64_t chunk = dim / n_out + 1;
        int64_t last = dim - chunk * (n_out - 1);
        if (last < 0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "axis %d of size %lld cannot be split into %d parts of %lld", axis,
                             (long long)dim, n_out, (long long)chunk);
        for (int j = 0; j < n_out; j++) sizes[j] = j == n_out - 1 ? last : chunk;
    }
    *known = true;
    return PRECIS_OK;
}

precis_status pr_infer_Split(pr_infer *ic) {
    if (!pr_in_present(ic, 0)) return pr_inferf(ic, PRECIS_ERR_SHAPE, "input 0 is required");
    const pr_tinfo *x = &ic->in[0];
    int64_t *sizes = malloc(((size_t)ic->n_out + 1) * sizeof *sizes);
    if (!sizes) return pr_inferf(ic, PRECIS_ERR_OOM, "out of memory");
    int axis = 0;
    bool known;
    precis_status st = pr_split_plan_make(ic, ic->n_out, &axis, sizes, &known);
    if (st) {
        free(sizes);
        return st;
    }
    for (int j = 0; j < ic->n_out; j++) {
        ic->out[j].dtype = x->dtype;
        if (x->rank < 0) continue;
        pr_infer_set_out(ic, j, x->dtype, x->rank, x->dims);
        ic->out[j].dims[axis] = sizes[j];
        if (!pr_dim_known(sizes[j]) && ic->n_out == 1) ic->out[j].dims[axis] = x->dims[axis];
    }
    free(sizes);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Slice */

/* Clamp start/end and count the elements (ONNX Slice-10+ semantics). */
static void slice_axis(int64_t dim, int64_t s, int64_t e, int64_t step, int64_t *start,
                       int64_t *len) {
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t n = 0;
    if (step > 0) {
        s = s < 0 ? 0 : s > dim ? dim : s;
        e = e < 0 ? 0 : e > dim ? dim : e;
        if (e > s) n = (e - s - 1) / step + 1;
    } else {
        s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
        e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        if (s > e) {
            uint64_t ms = (uint64_t)(-(step + 1)) + 1u; /* -step without overflow */
            n = (int64_t)((uint64_t)(s - e - 1) / ms) + 1;
        }
    }
    *start = n > 0 ? s : 0;
    *len = n;
}

precis_status pr_slice_plan_make(pr_infer *ic, pr_slice_plan *p, bool *known) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    memset(p, 0, sizeof *p);
    *known = false;
    p->rank = x->rank;
    int r = x->rank;
    int64_t starts[PR_MAX_RANK], ends[PR_MAX_RANK], axes[PR_MAX_RANK], steps[PR_MAX_RANK];
    int ns, ne, na = -1, nst = -1;
    bool axes_unknown = false, vals_unknown = false;
    if (ic->node->opset < 10) {
        const int64_t *a;
        ns = pr_attr_ints(ic->node, "starts", &a);
        if (ns < 0 || ns > PR_MAX_RANK)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             ns < 0 ? "attribute 'starts' is required" : "too many starts");
        memcpy(starts, a, (size_t)ns * sizeof *a);
        ne = pr_attr_ints(ic->node, "ends", &a);
        if (ne < 0 || ne > PR_MAX_RANK)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             ne < 0 ? "attribute 'ends' is required" : "too many ends");
        memcpy(ends, a, (size_t)ne * sizeof *a);
        na = pr_attr_ints(ic->node, "axes", &a);
        if (na > PR_MAX_RANK) return pr_inferf(ic, PRECIS_ERR_SHAPE, "too many axes");
        if (na > 0) memcpy(axes, a, (size_t)na * sizeof *a);
    } else {
        if ((st = pr_infer_need_input(ic, 1, "starts")) ||
            (st = pr_infer_need_input(ic, 2, "ends")))
            return st;
        static const char *const names[] = {"", "starts", "ends", "axes", "steps"};
        for (int i = 1; i <= 4; i++)
            if (pr_in_present(ic, i) && ic->in[i].rank != 1 && ic->in[i].rank != -1)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be 1-D, got rank %d", names[i],
                                 ic->in[i].rank);
        ns = pr_infer_in_ints(ic, 1, starts, PR_MAX_RANK);
        ne = pr_infer_in_ints(ic, 2, ends, PR_MAX_RANK);
        if (ns == -2 || ne == -2) return PRECIS_ERR_SHAPE;
        if (ns == -1 || ne == -1) vals_unknown = true;
        if (pr_in_present(ic, 3)) {
            na = pr_infer_in_ints(ic, 3, axes, PR_MAX_RANK);
            if (na == -2) return PRECIS_ERR_SHAPE;
            if (na == -1) axes_unknown = true;
        }
        if (pr_in_present(ic, 4)) {
            nst = pr_infer_in_ints(ic, 4, steps, PR_MAX_RANK);
            if (nst == -2) return PRECIS_ERR_SHAPE;
            if (nst == -1) vals_unknown = true;
        }
    }
    if (r < 0) return PRECIS_OK;
    for (int d = 0; d < r; d++) {
        p->start[d] = 0;
        p->step[d] = 1;
        p->len[d] = x->dims[d];
    }
    if (axes_unknown) {
        for (int d = 0; d < r; d++) p->sliced[d] = true;
        return PRECIS_OK;
    }
    if (na < 0) {
        int64_t cnt = ns >= 0 ? ns : ne >= 0 ? ne : in_len1d(ic, 1);
        if (cnt < 0) {
            for (int d = 0; d < r; d++) p->sliced[d] = true;
            return PRECIS_OK;
        }
        if (cnt > r)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "%lld starts given for an input of rank %d",
                             (long long)cnt, r);
        na = (int)cnt;
        for (int i = 0; i < na; i++) axes[i] = i;
    }
    st = norm_axes(ic, axes, na, r);
    if (st) return st;
    for (int i = 0; i < na; i++) p->sliced[axes[i]] = true;
    if (vals_unknown) return PRECIS_OK;
    if (ns != ne || ns != na || (nst >= 0 && nst != ns))
        return pr_inferf(
            ic, PRECIS_ERR_SHAPE,
            "starts (%d), ends (%d), axes (%d) and steps (%d) must have the same length", ns, ne,
            na, nst >= 0 ? nst : ns);
    for (int i = 0; i < na; i++) {
        int a = (int)axes[i];
        int64_t step = nst >= 0 ? steps[i] : 1;
        if (step == 0) return pr_inferf(ic, PRECIS_ERR_SHAPE, "step for axis %d is 0", a);
        p->step[a] = step;
        int64_t dim = x->dims[a];
        if (pr_dim_known(dim)) {
            slice_axis(dim, starts[i], ends[i], step, &p->start[a], &p->len[a]);
        } else {
            p->start[a] = starts[i];
            /* whole axis taken: keep the (symbolic) dim */
            bool whole = step == 1 && starts[i] == 0 && ends[i] >= (INT64_MAX >> 1);
            p->len[a] = whole ? dim : PR_DIM_UNKNOWN;
        }
    }
    *known = true;
    return PRECIS_OK;
}

precis_status pr_infer_Slice(pr_infer *ic) {
    pr_slice_plan p;
    bool known;
    precis_status st = pr_slice_plan_make(ic, &p, &known);
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    ic->out[0].dtype = x->dtype;
    if (x->rank < 0) return PRECIS_OK;
    int64_t out[PR_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        out[d] = known ? p.len[d] : p.sliced[d] ? PR_DIM_UNKNOWN : x->dims[d];
    pr_infer_set_out(ic, 0, x->dtype, x->rank, out);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Expand */

precis_status pr_infer_Expand(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "input");
    if (st || (st = pr_infer_need_input(ic, 1, "shape"))) return st;
    const pr_tinfo *x = &ic->in[0];
    ic->out[0].dtype = x->dtype;
    if (ic->in[1].rank > 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "shape must be 1-D, got rank %d", ic->in[1].rank);
    int64_t shape[PR_MAX_RANK];
    int n = pr_infer_in_ints(ic, 1, shape, PR_MAX_RANK);
    if (n == -2) return PRECIS_ERR_SHAPE;
    if (n == -1) {
        int64_t len = in_len1d(ic, 1);
        if (x->rank >= 0 && len >= 0) {
            int r = (int)(len > x->rank ? len : x->rank);
            if (r > PR_MAX_RANK)
                return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "output rank %d exceeds %d", r,
                                 PR_MAX_RANK);
            pr_infer_set_out(ic, 0, x->dtype, r, NULL);
        }
        return PRECIS_OK;
    }
    for (int i = 0; i < n; i++)
        if (shape[i] < 0) {
            char b[160];
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "shape %s has a negative dim",
                             pr_ints_str(shape, n, b, sizeof b));
        }
    if (x->rank < 0) return PRECIS_OK;
    pr_tinfo tmp[2];
    tmp[0] = *x;
    memset(&tmp[1], 0, sizeof tmp[1]);
    tmp[1].dtype = x->dtype;
    tmp[1].rank = n;
    memcpy(tmp[1].dims, shape, (size_t)n * sizeof *shape);
    pr_infer sub = *ic;
    sub.in = tmp;
    sub.n_in = 2;
    int idx[2] = {0, 1}, rank;
    int64_t out[PR_MAX_RANK];
    st = pr_infer_broadcast(&sub, 2, idx, &rank, out);
    if (st) return st;
    pr_infer_set_out(ic, 0, x->dtype, rank, out);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Shape / Size */

precis_status pr_infer_Shape(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    int64_t d = PR_DIM_UNKNOWN;
    if (x->rank >= 0) {
        int64_t r = x->rank;
        int64_t s = ic->node->opset >= 15 ? pr_attr_int(ic->node, "start", 0) : 0;
        int64_t e = ic->node->opset >= 15 ? pr_attr_int(ic->node, "end", r) : r;
        if (s < 0) s += r;
        if (e < 0) e += r;
        s = s < 0 ? 0 : s > r ? r : s;
        e = e < 0 ? 0 : e > r ? r : e;
        d = e > s ? e - s : 0;
    }
    pr_infer_set_out(ic, 0, PRECIS_INT64, 1, &d);
    return PRECIS_OK;
}

precis_status pr_infer_Size(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st) return st;
    pr_infer_set_out(ic, 0, PRECIS_INT64, 0, NULL);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ ConstantOfShape */

precis_status pr_infer_ConstantOfShape(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "input");
    if (st) return st;
    pr_dtype dt = PRECIS_FLOAT32;
    const pr_attr *a = pr_attr_find(ic->node, "value");
    if (a) {
        if (a->type != PR_ATTR_TENSOR || !a->t)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute 'value' must be a tensor");
        dt = a->t->dtype;
        if (dt == PRECIS_STRING)
            return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "precis has no string dtype");
        if ((st = pr_infer_check_storable(ic, dt))) return st;
        if (pr_numel(a->t->rank, a->t->dims) != 1 || a->t->nbytes != pr_dtype_size(dt))
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "attribute 'value' must hold exactly one element");
    }
    if (ic->in[0].dtype != PRECIS_INT64)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input must be int64, got %s",
                         pr_dtype_name(ic->in[0].dtype));
    if (ic->in[0].rank > 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input must be 1-D, got rank %d", ic->in[0].rank);
    ic->out[0].dtype = dt;
    int64_t shape[PR_MAX_RANK];
    int n = pr_infer_in_ints(ic, 0, shape, PR_MAX_RANK);
    if (n == -2) return PRECIS_ERR_SHAPE;
    if (n == -1) {
        int64_t len = in_len1d(ic, 0);
        if (len > PR_MAX_RANK)
            return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "output rank %lld exceeds %d",
                             (long long)len, PR_MAX_RANK);
        if (len >= 0) pr_infer_set_out(ic, 0, dt, (int)len, NULL);
        return PRECIS_OK;
    }
    for (int i = 0; i < n; i++)
        if (shape[i] < 0) {
            char b[160];
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "shape %s has a negative dim",
                             pr_ints_str(shape, n, b, sizeof b));
        }
    pr_infer_set_out(ic, 0, dt, n, shape);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Range */

precis_status pr_infer_Range(pr_infer *ic) {
    precis_status st;
    const char *nm[3] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; i++)
        if ((st = pr_infer_need_input(ic, i, nm[i]))) return st;
    pr_dtype dt = ic->in[0].dtype;
    if (!pr_infer_numeric_dtype(dt))
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "dtype %s is not supported",
                         pr_dtype_name(dt));
    for (int i = 0; i < 3; i++) {
        if (ic->in[i].dtype != dt)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s is %s, start is %s", nm[i],
                             pr_dtype_name(ic->in[i].dtype), pr_dtype_name(dt));
        if (ic->in[i].rank > 1 ||
            (ic->in[i].rank == 1 && ic->in[i].dims[0] != 1 && pr_dim_known(ic->in[i].dims[0])))
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be a scalar", nm[i]);
    }
    int64_t d = PR_DIM_UNKNOWN;
    if (ic->in[0].value && ic->in[1].value && ic->in[2].value) {
        const pr_dtype_traits *t = pr_dtype_info(dt);
        if (t->is_float) {
            double s = pr_load_f64(ic->in[0].value, dt, 0), l = pr_load_f64(ic->in[1].value, dt, 0),
                   dl = pr_load_f64(ic->in[2].value, dt, 0);
            if (dl == 0) return pr_inferf(ic, PRECIS_ERR_SHAPE, "delta is 0");
            double c = dt == PRECIS_FLOAT32
                           ? (double)ceilf((float)(((float)l - (float)s) / (float)dl))
                           : ceil((l - s) / dl);
            if (isnan(c))
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "start, limit or delta is NaN or inf");
            if (c > 9.0e18) return pr_inferf(ic, PRECIS_ERR_SHAPE, "range has too many elements");
            d = c > 0 ? (int64_t)c : 0;
        } else {
            int64_t s = pr_load_i64(ic->in[0].value, dt, 0),
                    l = pr_load_i64(ic->in[1].value, dt, 0),
                    dl = pr_load_i64(ic->in[2].value, dt, 0);
            if (dl == 0) return pr_inferf(ic, PRECIS_ERR_SHAPE, "delta is 0");
            d = 0;
            if (dl > 0 && l > s) {
                uint64_t diff = (uint64_t)l - (uint64_t)s, ud = (uint64_t)dl;
                uint64_t c = diff / ud + (diff % ud != 0);
                if (c > (uint64_t)INT64_MAX)
                    return pr_inferf(ic, PRECIS_ERR_SHAPE, "range too long");
                d = (int64_t)c;
            } else if (dl < 0 && l < s) {
                uint64_t diff = (uint64_t)s - (uint64_t)l, ud = (uint64_t)(-(dl + 1)) + 1u;
                uint64_t c = diff / ud + (diff % ud != 0);
                if (c > (uint64_t)INT64_MAX)
                    return pr_inferf(ic, PRECIS_ERR_SHAPE, "range too long");
                d = (int64_t)c;
            }
        }
    }
    pr_infer_set_out(ic, 0, dt, 1, &d);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Tile */

precis_status pr_infer_Tile(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "input");
    if (st || (st = pr_infer_need_input(ic, 1, "repeats"))) return st;
    const pr_tinfo *x = &ic->in[0];
    ic->out[0].dtype = x->dtype;
    if (x->rank < 0) return PRECIS_OK;
    int r = x->rank;
    int64_t out[PR_MAX_RANK];
    if (ic->node->opset < 6) {
        /* Tile-1: inputs tiles (scalar) and axis (scalar) */
        if ((st = pr_infer_need_input(ic, 2, "axis"))) return st;
        int64_t t[1], ax[1];
        int nt = pr_infer_in_ints(ic, 1, t, 1), nx = pr_infer_in_ints(ic, 2, ax, 1);
        if (nt == -2 || nx == -2) return PRECIS_ERR_SHAPE;
        for (int d = 0; d < r; d++) out[d] = x->dims[d];
        if (nx != 1) {
            pr_infer_set_out(ic, 0, x->dtype, r, NULL);
            return PRECIS_OK;
        }
        int a;
        if ((st = pr_infer_axis(ic, ax[0], r, &a))) return st;
        if (nt != 1)
            out[a] = PR_DIM_UNKNOWN;
        else if (t[0] < 0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "tiles is negative");
        else if (t[0] != 1) {
            if (!pr_dim_known(out[a]))
                out[a] = PR_DIM_UNKNOWN;
            else if (out[a] && t[0] > INT64_MAX / out[a])
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "output dim overflows");
            else
                out[a] *= t[0];
        }
        pr_infer_set_out(ic, 0, x->dtype, r, out);
        return PRECIS_OK;
    }
    int64_t rep[PR_MAX_RANK];
    int n = pr_infer_in_ints(ic, 1, rep, PR_MAX_RANK);
    if (n == -2) return PRECIS_ERR_SHAPE;
    if (n == -1) {
        pr_infer_set_out(ic, 0, x->dtype, r, NULL);
        return PRECIS_OK;
    }
    if (n != r) {
        char b[160];
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "repeats %s has %d entries, the input has rank %d",
                         pr_ints_str(rep, n, b, sizeof b), n, r);
    }
    for (int d = 0; d < r; d++) {
        if (rep[d] < 0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "repeats[%d] is %lld", d, (long long)rep[d]);
        if (rep[d] == 1)
            out[d] = x->dims[d];
        else if (rep[d] == 0)
            out[d] = 0;
        else if (!pr_dim_known(x->dims[d]))
            out[d] = PR_DIM_UNKNOWN;
        else if (x->dims[d] && rep[d] > INT64_MAX / x->dims[d])
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "output dim %d overflows", d);
        else
            out[d] = x->dims[d] * rep[d];
    }
    pr_infer_set_out(ic, 0, x->dtype, r, out);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Pad */

precis_status pr_pad_plan_make(pr_infer *ic, pr_pad_plan *p, bool *known) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    memset(p, 0, sizeof *p);
    *known = false;
    p->rank = x->rank;
    const char *mode = pr_attr_str(ic->node, "mode", "constant");
    if (strcmp(mode, "constant") == 0)
        p->mode = PR_PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0)
        p->mode = PR_PAD_REFLECT;
    else if (strcmp(mode, "edge") == 0)
        p->mode = PR_PAD_EDGE;
    else if (strcmp(mode, "wrap") == 0)
        p->mode = PR_PAD_WRAP;
    else
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "mode '%s' is not one of constant, reflect, edge, wrap", mode);
    if ((st = pr_infer_check_storable(ic, x->dtype))) return st;
    int64_t pads[2 * PR_MAX_RANK], axes[PR_MAX_RANK];
    int np, na = -1;
    double cval = 0;
    bool cval_from_input = false;
    if (ic->node->opset < 11) {
        const int64_t *a;
        np = pr_attr_ints(ic->node, ic->node->opset < 2 ? "paddings" : "pads", &a);
        if (np < 0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute '%s' is required",
                             ic->node->opset < 2 ? "paddings" : "pads");
        if (np > 2 * PR_MAX_RANK) return pr_inferf(ic, PRECIS_ERR_SHAPE, "too many pads (%d)", np);
        memcpy(pads, a, (size_t)np * sizeof *a);
        cval = pr_attr_float(ic->node, "value", 0.0f);
    } else {
        if ((st = pr_infer_need_input(ic, 1, "pads"))) return st;
        np = pr_infer_in_ints(ic, 1, pads, 2 * PR_MAX_RANK);
        if (np == -2) return PRECIS_ERR_SHAPE;
        if (pr_in_present(ic, 2)) {
            if (ic->in[2].dtype != x->dtype)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "constant_value is %s, data is %s",
                                 pr_dtype_name(ic->in[2].dtype), pr_dtype_name(x->dtype));
            int64_t cn = pr_infer_in_numel(ic, 2);
            if (cn > 1)
                return pr_inferf(ic, PRECIS_ERR_SHAPE,
                                 "constant_value must be a scalar (%lld elements)", (long long)cn);
            if (cn == 1) {
                if (!ic->in[2].value) return PRECIS_OK;
                cval_from_input = true;
            }
        }
        if (ic->node->opset >= 18 && pr_in_present(ic, 3)) {
            na = pr_infer_in_ints(ic, 3, axes, PR_MAX_RANK);
            if (na == -2) return PRECIS_ERR_SHAPE;
            if (na == -1) return PRECIS_OK;
        }
    }
    if (np == -1 || x->rank < 0) return PRECIS_OK;
    int r = x->rank;
    if (na < 0) {
        na = r;
        for (int i = 0; i < r; i++) axes[i] = i;
    } else if ((st = norm_axes(ic, axes, na, r))) {
        return st;
    }
    if (np != 2 * na) {
        char b[256];
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "pads %s has %d entries, expected %d (2 x %d axes)",
                         pr_ints_str(pads, np, b, sizeof b), np, 2 * na, na);
    }
    for (int i = 0; i < na; i++) {
        p->begin[axes[i]] = pads[i];
        p->end[axes[i]] = pads[na + i];
    }
    for (int d = 0; d < r; d++) {
        int64_t dim = x->dims[d];
        if (!pr_dim_known(dim)) continue;
        if (dim > INT64_MAX / 4 || p->begin[d] < -dim || p->end[d] < -dim ||
            p->begin[d] > INT64_MAX / 4 || p->end[d] > INT64_MAX / 4 ||
            p->begin[d] + p->end[d] < -dim)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "pads %lld, %lld are invalid for axis %d of size %lld",
                             (long long)p->begin[d], (long long)p->end[d], d, (long long)dim);
        if (p->mode != PR_PAD_CONSTANT && dim == 0 && (p->begin[d] > 0 || p->end[d] > 0)) {
            static const char *const names[] = {"constant", "reflect", "edge", "wrap"};
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "cannot pad empty axis %d in %s mode", d,
                             names[p->mode]);
        }
    }
    size_t es = pr_dtype_size(x->dtype);
    if (es > sizeof p->value) return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "element too large");
    if (cval_from_input)
        memcpy(p->value, ic->in[2].value, es);
    else
        pr_store_f64(p->value, x->dtype, 0, cval);
    *known = true;
    return PRECIS_OK;
}

precis_status pr_infer_Pad(pr_infer *ic) {
    pr_pad_plan p;
    bool known;
    precis_status st = pr_pad_plan_make(ic, &p, &known);
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    ic->out[0].dtype = x->dtype;
    if (x->rank < 0) return PRECIS_OK;
    int64_t out[PR_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        int64_t dim = x->dims[d];
        if (!known)
            out[d] = PR_DIM_UNKNOWN;
        else if (p.begin[d] == 0 && p.end[d] == 0)
            out[d] = dim;
        else if (!pr_dim_known(dim))
            out[d] = PR_DIM_UNKNOWN;
        else
            out[d] = dim + p.begin[d] + p.end[d];
    }
    pr_infer_set_out(ic, 0, x->dtype, x->rank, out);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ DepthToSpace / SpaceToDepth */

static precis_status depth_space(pr_infer *ic, bool to_space) {
    precis_status st = pr_infer_need_input(ic, 0, "input");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    ic->out[0].dtype = x->dtype;
    const pr_attr *ab = pr_attr_find(ic->node, "blocksize");
    if (!ab) return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute 'blocksize' is required");
    int64_t b = pr_attr_int(ic->node, "blocksize", 0);
    if (b < 1 || b > (1 << 20))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "blocksize %lld must be >= 1", (long long)b);
    {
        const char *mode = pr_attr_str(ic->node, "mode", "DCR");
        if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "mode '%s' must be DCR or CRD", mode);
    }
    if (x->rank < 0) {
        pr_infer_set_out(ic, 0, x->dtype, 4, NULL);
        return PRECIS_OK;
    }
    if (x->rank != 4)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input must be 4-D [N,C,H,W], got rank %d", x->rank);
    int64_t out[4] = {x->dims[0], PR_DIM_UNKNOWN, PR_DIM_UNKNOWN, PR_DIM_UNKNOWN};
    int64_t c = x->dims[1], h = x->dims[2], w = x->dims[3];
    if (to_space) {
        if (pr_dim_known(c)) {
            if (c % (b * b))
                return pr_inferf(ic, PRECIS_ERR_SHAPE,
                                 "channels %lld not divisible by blocksize^2 = %lld", (long long)c,
                                 (long long)(b * b));
            out[1] = c / (b * b);
        }
        if (pr_dim_known(h)) {
            if (h > INT64_MAX / b) return pr_inferf(ic, PRECIS_ERR_SHAPE, "height overflows");
            out[2] = h * b;
        }
        if (pr_dim_known(w)) {
            if (w > INT64_MAX / b) return pr_inferf(ic, PRECIS_ERR_SHAPE, "width overflows");
            out[3] = w * b;
        }
        if (b == 1) out[1] = c, out[2] = h, out[3] = w;
    } else {
        if (pr_dim_known(c)) {
            if (c > INT64_MAX / (b * b))
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "channels overflow");
            out[1] = c * b * b;
        }
        if (pr_dim_known(h)) {
            if (h % b)
                return pr_inferf(ic, PRECIS_ERR_SHAPE,
                                 "height %lld not divisible by blocksize %lld", (long long)h,
                                 (long long)b);
            out[2] = h / b;
        }
        if (pr_dim_known(w)) {
            if (w % b)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "width %lld not divisible by blocksize %lld",
                                 (long long)w, (long long)b);
            out[3] = w / b;
        }
        if (b == 1) out[1] = c, out[2] = h, out[3] = w;
    }
    pr_infer_set_out(ic, 0, x->dtype, 4, out);
    return PRECIS_OK;
}

precis_status pr_infer_DepthToSpace(pr_infer *ic) { return depth_space(ic, true); }
precis_status pr_infer_SpaceToDepth(pr_infer *ic) { return depth_space(ic, false); }

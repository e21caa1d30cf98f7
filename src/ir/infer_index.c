/* Shape inference of the 'tensor' family's indexing ops (see ops.inc):
 * Gather, GatherElements, GatherND, ScatterElements (and the deprecated
 * Scatter), ScatterND, OneHot, EyeLike, Trilu, NonZero. Helpers shared with
 * infer_tensor.c are declared in infer_tensor.h. */
#include <string.h>

#include "ir/infer_tensor.h"

static bool is_int_index_dtype(pr_dtype dt) { return dt == PRECIS_INT64 || dt == PRECIS_INT32; }

/* ------------------------------------------------------------ Gather family */

static precis_status check_indices(pr_infer *ic, int i) {
    precis_status st = pr_infer_need_input(ic, i, "indices");
    if (st) return st;
    if (!is_int_index_dtype(ic->in[i].dtype))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "indices must be int32 or int64, got %s",
                         pr_dtype_name(ic->in[i].dtype));
    return PRECIS_OK;
}

precis_status pr_infer_Gather(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st || (st = check_indices(ic, 1))) return st;
    const pr_tinfo *x = &ic->in[0], *idx = &ic->in[1];
    ic->out[0].dtype = x->dtype;
    if (x->rank < 0 || idx->rank < 0) return PRECIS_OK;
    if (x->rank < 1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "data must have rank >= 1");
    int a;
    st = pr_infer_axis(ic, pr_attr_int(ic->node, "axis", 0), x->rank, &a);
    if (st) return st;
    int r = x->rank - 1 + idx->rank;
    if (r > PR_MAX_RANK)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, PR_MAX_RANK);
    int64_t out[PR_MAX_RANK];
    int k = 0;
    for (int d = 0; d < a; d++) out[k++] = x->dims[d];
    for (int d = 0; d < idx->rank; d++) out[k++] = idx->dims[d];
    for (int d = a + 1; d < x->rank; d++) out[k++] = x->dims[d];
    pr_infer_set_out(ic, 0, x->dtype, r, out);
    return PRECIS_OK;
}

precis_status pr_infer_GatherElements(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st || (st = check_indices(ic, 1))) return st;
    const pr_tinfo *x = &ic->in[0], *idx = &ic->in[1];
    ic->out[0].dtype = x->dtype;
    if (idx->rank >= 0) pr_infer_set_out(ic, 0, x->dtype, idx->rank, idx->dims);
    if (x->rank < 0) return PRECIS_OK;
    if (x->rank < 1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "data must have rank >= 1");
    int a;
    st = pr_infer_axis(ic, pr_attr_int(ic->node, "axis", 0), x->rank, &a);
    if (st) return st;
    if (idx->rank < 0) return PRECIS_OK;
    if (idx->rank != x->rank)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "indices have rank %d, data has rank %d", idx->rank,
                         x->rank);
    for (int d = 0; d < x->rank; d++)
        if (d != a && pr_dim_known(idx->dims[d]) && pr_dim_known(x->dims[d]) &&
            idx->dims[d] > x->dims[d]) {
            char b1[160], b2[160];
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "indices %s exceed data %s on dim %d (axis %d)",
                             pr_infer_dims_str(ic, idx->rank, idx->dims, b1, sizeof b1),
                             pr_infer_dims_str(ic, x->rank, x->dims, b2, sizeof b2), d, a);
        }
    return PRECIS_OK;
}

precis_status pr_infer_GatherND(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st) return st;
    if ((st = pr_infer_need_input(ic, 1, "indices"))) return st;
    const pr_tinfo *x = &ic->in[0], *idx = &ic->in[1];
    if (idx->dtype != PRECIS_INT64)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "indices must be int64, got %s",
                         pr_dtype_name(idx->dtype));
    ic->out[0].dtype = x->dtype;
    int64_t b = pr_attr_int(ic->node, "batch_dims", 0);
    if (x->rank < 0 || idx->rank < 0) return PRECIS_OK;
    int r = x->rank, q = idx->rank;
    if (r < 1 || q < 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "data (rank %d) and indices (rank %d) need rank >= 1", r, q);
    if (b < 0 || b >= (q < r ? q : r))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "batch_dims %lld must be in [0, %d)", (long long)b,
                         q < r ? q : r);
    for (int d = 0; d < b; d++)
        if (pr_dim_known(x->dims[d]) && pr_dim_known(idx->dims[d]) && x->dims[d] != idx->dims[d])
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "batch dim %d: data has %lld, indices have %lld",
                             d, (long long)x->dims[d], (long long)idx->dims[d]);
    int64_t m = idx->dims[q - 1];
    if (!pr_dim_known(m)) return PRECIS_OK;
    if (m < 1 || m > r - b)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "last indices dim is %lld, must be in [1, %lld]",
                         (long long)m, (long long)(r - b));
    int orank = q - 1 + r - (int)b - (int)m;
    if (orank > PR_MAX_RANK)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "output rank %d exceeds %d", orank,
                         PR_MAX_RANK);
    int64_t out[PR_MAX_RANK];
    int k = 0;
    for (int d = 0; d < q - 1; d++) {
        out[k] = idx->dims[d];
        if (d < b && !pr_dim_known(out[k]) && pr_dim_known(x->dims[d])) out[k] = x->dims[d];
        k++;
    }
    for (int d = (int)(b + m); d < r; d++) out[k++] = x->dims[d];
    pr_infer_set_out(ic, 0, x->dtype, orank, out);
    return PRECIS_OK;
}

static precis_status check_reduction(pr_infer *ic) {
    const char *red = pr_attr_str(ic->node, "reduction", "none");
    int64_t v = ic->node->opset;
    if (strcmp(red, "none") == 0) return PRECIS_OK;
    if ((strcmp(red, "add") == 0 || strcmp(red, "mul") == 0) && v >= 16) return PRECIS_OK;
    if ((strcmp(red, "max") == 0 || strcmp(red, "min") == 0) && v >= 18) return PRECIS_OK;
    return pr_inferf(ic, PRECIS_ERR_SHAPE, "reduction '%s' is not valid at opset %lld", red,
                     (long long)v);
}

precis_status pr_infer_ScatterElements(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st || (st = check_indices(ic, 1)) || (st = pr_infer_need_input(ic, 2, "updates")))
        return st;
    if ((st = check_reduction(ic))) return st;
    const pr_tinfo *x = &ic->in[0], *idx = &ic->in[1], *u = &ic->in[2];
    if (u->dtype != x->dtype)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "updates are %s, data is %s",
                         pr_dtype_name(u->dtype), pr_dtype_name(x->dtype));
    pr_infer_copy(ic, 0, 0);
    if (x->rank < 0) return PRECIS_OK;
    if (x->rank < 1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "data must have rank >= 1");
    int a;
    st = pr_infer_axis(ic, pr_attr_int(ic->node, "axis", 0), x->rank, &a);
    if (st) return st;
    if (idx->rank >= 0 && idx->rank != x->rank)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "indices have rank %d, data has rank %d", idx->rank,
                         x->rank);
    if (idx->rank >= 0 && u->rank >= 0) {
        bool same = idx->rank == u->rank;
        for (int d = 0; same && d < idx->rank; d++)
            if (pr_dim_known(idx->dims[d]) && pr_dim_known(u->dims[d]) &&
                idx->dims[d] != u->dims[d])
                same = false;
        if (!same) {
            char b1[160], b2[160];
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "indices %s and updates %s must have the same shape",
                             pr_infer_dims_str(ic, idx->rank, idx->dims, b1, sizeof b1),
                             pr_infer_dims_str(ic, u->rank, u->dims, b2, sizeof b2));
        }
    }
    return PRECIS_OK;
}

/* Scatter (opsets 9-10, deprecated at 11) is ScatterElements without reduction. */
precis_status pr_infer_Scatter(pr_infer *ic) { return pr_infer_ScatterElements(ic); }

precis_status pr_infer_ScatterND(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "data");
    if (st || (st = pr_infer_need_input(ic, 1, "indices")) ||
        (st = pr_infer_need_input(ic, 2, "updates")))
        return st;
    if ((st = check_reduction(ic))) return st;
    const pr_tinfo *x = &ic->in[0], *idx = &ic->in[1], *u = &ic->in[2];
    if (idx->dtype != PRECIS_INT64)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "indices must be int64, got %s",
                         pr_dtype_name(idx->dtype));
    if (u->dtype != x->dtype)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "updates are %s, data is %s",
                         pr_dtype_name(u->dtype), pr_dtype_name(x->dtype));
    pr_infer_copy(ic, 0, 0);
    if (x->rank < 0 || idx->rank < 0) return PRECIS_OK;
    int r = x->rank, q = idx->rank;
    if (r < 1 || q < 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "data (rank %d) and indices (rank %d) need rank >= 1", r, q);
    int64_t k = idx->dims[q - 1];
    if (!pr_dim_known(k)) return PRECIS_OK;
    if (k < 1 || k > r)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "last indices dim is %lld, must be in [1, %d]",
                         (long long)k, r);
    if (u->rank < 0) return PRECIS_OK;
    /* updates shape = indices.shape[:-1] + data.shape[k:] */
    int ur = q - 1 + r - (int)k;
    bool ok = u->rank == ur;
    for (int d = 0; ok && d < ur; d++) {
        int64_t want = d < q - 1 ? idx->dims[d] : x->dims[k + d - (q - 1)];
        if (pr_dim_known(want) && pr_dim_known(u->dims[d]) && want != u->dims[d]) ok = false;
    }
    if (!ok) {
        char b1[160], b2[160], b3[160];
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "updates %s do not match indices %s and data %s (expected "
                         "indices.shape[:-1] + data.shape[%lld:])",
                         pr_infer_dims_str(ic, u->rank, u->dims, b1, sizeof b1),
                         pr_infer_dims_str(ic, q, idx->dims, b2, sizeof b2),
                         pr_infer_dims_str(ic, r, x->dims, b3, sizeof b3), (long long)k);
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ OneHot */

precis_status pr_infer_OneHot(pr_infer *ic) {
    precis_status st;
    if ((st = pr_infer_need_input(ic, 0, "indices")) ||
        (st = pr_infer_need_input(ic, 1, "depth")) || (st = pr_infer_need_input(ic, 2, "values")))
        return st;
    const pr_tinfo *idx = &ic->in[0], *dep = &ic->in[1], *val = &ic->in[2];
    if ((st = pr_infer_check_storable(ic, val->dtype))) return st;
    if (!pr_infer_numeric_dtype(idx->dtype) || !pr_infer_numeric_dtype(dep->dtype))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "indices (%s) and depth (%s) must be numeric",
                         pr_dtype_name(idx->dtype), pr_dtype_name(dep->dtype));
    if (val->rank >= 0 && pr_numel(val->rank, val->dims) >= 0 &&
        (val->rank != 1 || val->dims[0] != 2))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "values must be [off_value, on_value] (2 elements)");
    if (dep->rank >= 0 && pr_numel(dep->rank, dep->dims) >= 0 &&
        pr_numel(dep->rank, dep->dims) != 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "depth must be a scalar or 1-element tensor");
    ic->out[0].dtype = val->dtype;
    if (idx->rank < 0) return PRECIS_OK;
    int r = idx->rank + 1;
    if (r > PR_MAX_RANK)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, PR_MAX_RANK);
    int a;
    if ((st = pr_infer_axis(ic, pr_attr_int(ic->node, "axis", -1), r, &a))) return st;
    int64_t depth = PR_DIM_UNKNOWN;
    if (dep->value) {
        double dv = pr_load_f64(dep->value, dep->dtype, 0);
        if (!(dv >= 1) || dv > 1e15)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "depth %g must be positive", dv);
        depth = (int64_t)dv;
    }
    int64_t out[PR_MAX_RANK];
    for (int d = 0, j = 0; d < r; d++) out[d] = d == a ? depth : idx->dims[j++];
    pr_infer_set_out(ic, 0, val->dtype, r, out);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ EyeLike / Trilu / NonZero */

precis_status pr_infer_EyeLike(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "input");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    int64_t dtv = pr_attr_int(ic->node, "dtype", (int64_t)x->dtype);
    if (dtv < 0 || dtv > PR_DTYPE_MAX)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "dtype %lld is not a valid data type",
                         (long long)dtv);
    pr_dtype dt = (pr_dtype)dtv;
    if (pr_dtype_size(dt) == 0 ||
        !(pr_dtype_info(dt)->is_float || pr_dtype_info(dt)->is_int || dt == PRECIS_BOOL))
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "dtype %s is not supported",
                         pr_dtype_name(dt));
    if (x->rank >= 0 && x->rank != 2)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input must be 2-D, got rank %d", x->rank);
    ic->out[0].dtype = dt;
    if (x->rank == 2) pr_infer_set_out(ic, 0, dt, 2, x->dims);
    return PRECIS_OK;
}

precis_status pr_infer_Trilu(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "input");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    if ((st = pr_infer_check_storable(ic, x->dtype))) return st;
    if (x->rank >= 0 && x->rank < 2)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input must have rank >= 2, got %d", x->rank);
    if (pr_in_present(ic, 1)) {
        if (ic->in[1].dtype != PRECIS_INT64)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "k must be int64, got %s",
                             pr_dtype_name(ic->in[1].dtype));
        int64_t kn = pr_infer_in_numel(ic, 1);
        if (kn >= 0 && kn != 1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "k must be a scalar");
    }
    pr_infer_copy(ic, 0, 0);
    return PRECIS_OK;
}

/* Is element i of a buffer non-zero? (floats: +-0 are zero, NaN is not) */
bool pr_elem_nonzero(const unsigned char *p, pr_dtype dt, size_t es) {
    const pr_dtype_traits *t = pr_dtype_info(dt);
    unsigned char acc = 0;
    if (t->is_float) {
        /* little-endian: the sign bit is the top bit of the last byte */
        for (size_t b = 0; b + 1 < es; b++) acc |= p[b];
        acc |= (unsigned char)(p[es - 1] & 0x7f);
        return acc != 0;
    }
    for (size_t b = 0; b < es; b++) acc |= p[b];
    return acc != 0;
}

int64_t pr_count_nonzero(const void *data, pr_dtype dt, int64_t n) {
    size_t es = pr_dtype_size(dt);
    const unsigned char *p = data;
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += pr_elem_nonzero(p + (size_t)i * es, dt, es);
    return c;
}

precis_status pr_infer_NonZero(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "X");
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    if ((st = pr_infer_check_storable(ic, x->dtype))) return st;
    int64_t dims[2] = {x->rank >= 0 ? x->rank : PR_DIM_UNKNOWN, PR_DIM_UNKNOWN};
    if (pr_infer_value_known(ic, 0)) {
        int64_t n = pr_numel(x->rank, x->dims);
        if (n >= 0) dims[1] = n == 0 ? 0 : pr_count_nonzero(x->value, x->dtype, n);
    }
    pr_infer_set_out(ic, 0, PRECIS_INT64, 2, dims);
    return PRECIS_OK;
}

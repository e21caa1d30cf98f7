/* Shared inference helpers and the generated inference table. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/infer.h"

const pr_infer_fn pr_infer_table[PR_OP_COUNT] = {
    NULL,
#define PR_OP(name, family) pr_infer_##name,
#include "ir/ops.inc"
#undef PR_OP
};

precis_status pr_inferf(pr_infer *ic, precis_status st, const char *fmt, ...) {
    char msg[PR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pr_errf(ic->err, st, "node '%s' (%s): %s", ic->node->name, ic->node->op_type, msg);
}

precis_status pr_infer_need_input(pr_infer *ic, int i, const char *what) {
    if (!pr_in_present(ic, i))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d (%s) is required", i, what);
    return PRECIS_OK;
}

void pr_infer_set_out(pr_infer *ic, int o, pr_dtype dt, int rank, const int64_t *dims) {
    if (o >= ic->n_out) return;
    ic->out[o].dtype = dt;
    ic->out[o].rank = rank;
    for (int d = 0; d < rank && d < PR_MAX_RANK; d++)
        ic->out[o].dims[d] = dims ? dims[d] : PR_DIM_UNKNOWN;
}

int64_t pr_infer_in_numel(const pr_infer *ic, int i) {
    if (!pr_in_present(ic, i)) return -1;
    return pr_numel(ic->in[i].rank, ic->in[i].dims);
}

const char *pr_ints_str(const int64_t *v, int n, char *buf, size_t cap) {
    size_t k = 0;
    if (cap == 0) return buf;
    buf[0] = 0;
    k += (size_t)snprintf(buf + k, cap - k, "[");
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)v[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

const char *pr_infer_dims_str(const pr_infer *ic, int rank, const int64_t *dims, char *buf,
                              size_t cap) {
    if (ic->g) {
        /* pr_shape_str prints "dtype[...]"; skip the dtype part */
        char tmp[256];
        pr_shape_str(ic->g, PRECIS_UNDEFINED, rank, dims, tmp, sizeof tmp);
        const char *p = strchr(tmp, '[');
        snprintf(buf, cap, "%s", p ? p : tmp);
        return buf;
    }
    return pr_ints_str(dims, rank, buf, cap);
}

bool pr_infer_value_known(const pr_infer *ic, int i) {
    if (!pr_in_present(ic, i)) return false;
    return ic->in[i].value != NULL || pr_infer_in_numel(ic, i) == 0;
}

/* Integer values of input i: count, -1 when not known, -2 on error (set). */
int pr_infer_in_ints(pr_infer *ic, int i, int64_t *buf, int cap) {
    if (!pr_in_present(ic, i)) return -1;
    if (pr_infer_in_numel(ic, i) == 0) {
        if (ic->in[i].dtype != PRECIS_INT64 && ic->in[i].dtype != PRECIS_INT32) {
            pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d must be int64 or int32, got %s", i,
                      pr_dtype_name(ic->in[i].dtype));
            return -2;
        }
        return 0;
    }
    return pr_infer_ints(ic, i, buf, cap);
}

void pr_infer_copy(pr_infer *ic, int o, int i) {
    ic->out[o].dtype = ic->in[i].dtype;
    ic->out[o].rank = ic->in[i].rank;
    if (ic->in[i].rank > 0)
        memcpy(ic->out[o].dims, ic->in[i].dims, (size_t)ic->in[i].rank * sizeof(int64_t));
}

precis_status pr_infer_broadcast(pr_infer *ic, int n, const int *idx, int *rank, int64_t *dims) {
    int r = 0;
    for (int k = 0; k < n; k++) {
        const pr_tinfo *t = &ic->in[idx[k]];
        if (t->rank < 0) {
            *rank = -1;
            return PRECIS_OK;
        }
        if (t->rank > r) r = t->rank;
    }
    for (int d = 0; d < r; d++) {
        int64_t out = 1;
        bool have = false;
        for (int k = 0; k < n; k++) {
            const pr_tinfo *t = &ic->in[idx[k]];
            int j = d - (r - t->rank);
            if (j < 0) continue;
            int64_t v = t->dims[j];
            if (v == 1) continue;
            if (!have) {
                out = v;
                have = true;
            } else if (v == out) {
                continue;
            } else if (v >= 0 && out >= 0) {
                return pr_inferf(ic, PRECIS_ERR_SHAPE,
                                 "cannot broadcast dim %d: %lld vs %lld", d, (long long)out,
                                 (long long)v);
            } else if (out < 0 && v >= 0) {
                out = v; /* a known dim > 1 wins over a symbolic one */
            } else if (v < 0 && out >= 0) {
                /* keep the known one */
            } else {
                out = PR_DIM_UNKNOWN; /* two different symbols */
            }
        }
        dims[d] = out;
    }
    *rank = r;
    return PRECIS_OK;
}

precis_status pr_infer_axis(pr_infer *ic, int64_t axis, int rank, int *out) {
    if (axis < -rank || axis >= rank)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "axis %lld out of range for rank %d",
                         (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return PRECIS_OK;
}

int pr_infer_ints(pr_infer *ic, int i, int64_t *buf, int cap) {
    if (!pr_in_present(ic, i) || !ic->in[i].value) return -1;
    const pr_tinfo *t = &ic->in[i];
    if (t->dtype != PRECIS_INT64 && t->dtype != PRECIS_INT32) {
        pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d must be int64 or int32, got %s", i,
                  pr_dtype_name(t->dtype));
        return -2;
    }
    int64_t n = pr_numel(t->rank, t->dims);
    if (n < 0 || n > cap) {
        pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d has %lld values, at most %d supported", i,
                  (long long)n, cap);
        return -2;
    }
    for (int64_t j = 0; j < n; j++) buf[j] = pr_load_i64(t->value, t->dtype, j);
    return (int)n;
}

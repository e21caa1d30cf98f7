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

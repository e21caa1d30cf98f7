/* Shared helpers of the ref backend and its generated kernel table. */
#include <stdarg.h>
#include <stdio.h>

#include "backends/ref/ref.h"

const pr_kernel_fn pr_ref_table[PR_OP_COUNT] = {
    NULL,
#define PR_OP(name, family) ref_##name,
#include "ir/ops.inc"
#undef PR_OP
};

precis_status pr_kernelf(pr_kernel *k, precis_status st, const char *fmt, ...) {
    char msg[PR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pr_errf(k->err, st, "node '%s' (%s): %s", k->node->name, k->node->op_type, msg);
}

void pr_strides(int rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

void pr_bcast_strides(const pr_buf *in, int out_rank, const int64_t *out_dims, int64_t *strides) {
    int64_t s[PR_MAX_RANK];
    pr_strides(in->rank, in->dims, s);
    int off = out_rank - in->rank;
    for (int d = 0; d < out_rank; d++) {
        int j = d - off;
        strides[d] = (j < 0 || (in->dims[j] == 1 && out_dims[d] != 1)) ? 0 : s[j];
        if (j >= 0 && in->dims[j] == 1) strides[d] = 0;
    }
}

/* Shared helpers of the ref backend and its generated kernel table. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

precis_status pr_kernel_axis(pr_kernel *k, int64_t axis, int rank, int *out) {
    if (axis < -rank || axis >= rank)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "axis %lld out of range for rank %d",
                          (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return PRECIS_OK;
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

void pr_ref_to_f32(const void *src, pr_dtype dt, int64_t n, float *dst) {
    switch (dt) {
    case PRECIS_FLOAT32:
        if (n > 0) memcpy(dst, src, (size_t)n * sizeof(float));
        break;
    case PRECIS_FLOAT16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = pr_f16_to_f32(s[i]);
        break;
    }
    case PRECIS_BFLOAT16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = pr_bf16_to_f32(s[i]);
        break;
    }
    case PRECIS_FLOAT64: {
        const double *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = (float)s[i];
        break;
    }
    case PRECIS_UINT8: {
        const uint8_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = s[i];
        break;
    }
    case PRECIS_INT8: {
        const int8_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = s[i];
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++) dst[i] = (float)pr_load_f64(src, dt, i);
        break;
    }
}

static double sat_round(float v, double lo, double hi) {
    if (v != v) return 0.0;
    double r = nearbyint((double)v);
    return r < lo ? lo : r > hi ? hi : r;
}

void pr_ref_from_f32(const float *src, int64_t n, pr_dtype dt, void *dst) {
    switch (dt) {
    case PRECIS_FLOAT32:
        if (n > 0) memcpy(dst, src, (size_t)n * sizeof(float));
        break;
    case PRECIS_FLOAT16: {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = pr_f32_to_f16(src[i]);
        break;
    }
    case PRECIS_BFLOAT16: {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = pr_f32_to_bf16(src[i]);
        break;
    }
    case PRECIS_FLOAT64: {
        double *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = src[i];
        break;
    }
    case PRECIS_UINT8: {
        uint8_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = (uint8_t)sat_round(src[i], 0, 255);
        break;
    }
    case PRECIS_INT8: {
        int8_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = (int8_t)sat_round(src[i], -128, 127);
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++) pr_store_f64(dst, dt, i, src[i]);
        break;
    }
}

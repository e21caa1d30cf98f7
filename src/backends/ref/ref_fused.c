/* Reference kernels of the fused ops (ops.inc, family fused): the base op's
 * ref kernel, then the epilogue in float. Slow and obvious on purpose: these
 * are the oracle for the fast fused kernels. */
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "ir/act.h"

/* Y = act2(act(alpha * Y + bias) + Z), bias broadcast to Y, Z of Y's shape. */
static precis_status epilogue(pr_kernel *k, pr_buf *Y, float alpha, const pr_buf *bias,
                              const pr_buf *Z) {
    pr_act a1, a2;
    pr_act_from_node(k->node, "act", &a1);
    pr_act_from_node(k->node, "act2", &a2);
    if (Z && Z->numel != Y->numel)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual has %lld elements, output %lld",
                          (long long)Z->numel, (long long)Y->numel);
    int64_t n = Y->numel;
    float *y = malloc((size_t)(n ? n : 1) * sizeof *y);
    float *z = Z ? malloc((size_t)(n ? n : 1) * sizeof *z) : NULL;
    float *b = NULL;
    int64_t bs[PR_MAX_RANK];
    if (bias) {
        b = malloc((size_t)(bias->numel ? bias->numel : 1) * sizeof *b);
        pr_bcast_strides(bias, Y->rank, Y->dims, bs);
    }
    if (!y || (Z && !z) || (bias && !b)) {
        free(y);
        free(z);
        free(b);
        return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    }
    pr_ref_to_f32(Y->data, Y->dtype, n, y);
    if (Z) pr_ref_to_f32(Z->data, Z->dtype, n, z);
    if (bias) pr_ref_to_f32(bias->data, bias->dtype, bias->numel, b);
    int64_t idx[PR_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        float v = alpha * y[i];
        if (b) {
            int64_t off = 0;
            for (int d = 0; d < Y->rank; d++) off += idx[d] * bs[d];
            v += b[off];
            for (int d = Y->rank - 1; d >= 0; d--) {
                if (++idx[d] < Y->dims[d]) break;
                idx[d] = 0;
            }
        }
        v = pr_act_apply(&a1, v);
        if (z) v = pr_act_apply(&a2, v + z[i]);
        y[i] = v;
    }
    pr_ref_from_f32(y, n, Y->dtype, Y->data);
    free(y);
    free(z);
    free(b);
    return PRECIS_OK;
}

precis_status ref_FusedConv(pr_kernel *k) {
    pr_kernel sub = *k;
    sub.n_in = k->n_in < 3 ? k->n_in : 3;
    precis_status st = ref_Conv(&sub);
    if (st) return st;
    return epilogue(k, k->out[0], 1.0f, NULL, pr_kin(k, 3));
}

/* A 2-D transposed copy of b (same dtype). */
static precis_status transposed(pr_kernel *k, const pr_buf *b, pr_buf *t, void **mem) {
    *t = *b;
    size_t es = pr_dtype_size(b->dtype);
    int64_t R = b->dims[0], C = b->dims[1];
    unsigned char *d = malloc((size_t)(b->numel ? b->numel : 1) * es);
    if (!d) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const unsigned char *s = b->data;
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            memcpy(d + (size_t)(c * R + r) * es, s + (size_t)(r * C + c) * es, es);
    t->dims[0] = C;
    t->dims[1] = R;
    t->data = d;
    *mem = d;
    return PRECIS_OK;
}

precis_status ref_FusedMatMul(pr_kernel *k) {
    pr_buf ab[2];
    const pr_buf *in[2];
    void *mem[2] = {NULL, NULL};
    precis_status st = PRECIS_OK;
    for (int i = 0; i < 2; i++) {
        in[i] = k->in[i];
        if (!pr_attr_int(k->node, i ? "transB" : "transA", 0)) continue;
        if (k->in[i]->rank != 2) {
            st = pr_kernelf(k, PRECIS_ERR_SHAPE, "trans%s needs a 2-D operand", i ? "B" : "A");
            goto done;
        }
        if ((st = transposed(k, k->in[i], &ab[i], &mem[i]))) goto done;
        in[i] = &ab[i];
    }
    pr_kernel sub = *k;
    sub.n_in = 2;
    sub.in = in;
    if ((st = ref_MatMul(&sub))) goto done;
    st = epilogue(k, k->out[0], pr_attr_float(k->node, "alpha", 1.0f), pr_kin(k, 2), pr_kin(k, 3));
done:
    free(mem[0]);
    free(mem[1]);
    return st;
}

precis_status ref_Reorder(pr_kernel *k) {
    if (k->out[0]->nbytes) memcpy(k->out[0]->data, k->in[0]->data, k->out[0]->nbytes);
    return PRECIS_OK;
}

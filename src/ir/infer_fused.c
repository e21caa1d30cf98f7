/* Shape inference for the precis-internal fused ops (ops.inc, family fused):
 * each defers to the op it extends and checks the epilogue operands. */
#include "ir/act.h"
#include "ir/infer.h"

#include <string.h>

static precis_status check_acts(pr_infer *ic) {
    pr_act a;
    if (!pr_act_from_node(ic->node, "act", &a) || !pr_act_from_node(ic->node, "act2", &a))
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "unknown activation '%s' / '%s'",
                         pr_attr_str(ic->node, "act", ""), pr_attr_str(ic->node, "act2", ""));
    return PRECIS_OK;
}

/* Z (input zi) must have the output's shape where both are known. */
static precis_status check_residual(pr_infer *ic, int zi) {
    if (!pr_in_present(ic, zi)) return PRECIS_OK;
    const pr_tinfo *z = &ic->in[zi], *y = &ic->out[0];
    if (z->dtype != y->dtype)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "residual has dtype %s, output %s",
                         pr_dtype_name(z->dtype), pr_dtype_name(y->dtype));
    if (z->rank < 0 || y->rank < 0) return PRECIS_OK;
    if (z->rank != y->rank) return pr_inferf(ic, PRECIS_ERR_SHAPE, "residual rank differs");
    for (int i = 0; i < y->rank; i++)
        if (pr_dim_known(z->dims[i]) && pr_dim_known(y->dims[i]) && z->dims[i] != y->dims[i])
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "residual dim %d is %lld, output has %lld", i,
                             (long long)z->dims[i], (long long)y->dims[i]);
    return PRECIS_OK;
}

/* In a bf16/fp16 plan the activations are low precision while weights and
 * biases stay float32 initializers (kernels convert them once): shapes are
 * inferred as if the weights had the activation's dtype. */
static bool low_float(pr_dtype d) { return d == PRECIS_BFLOAT16 || d == PRECIS_FLOAT16; }

precis_status pr_infer_FusedConv(pr_infer *ic) {
    precis_status st = check_acts(ic);
    if (st) return st;
    pr_infer sub = *ic;
    sub.n_in = ic->n_in < 3 ? ic->n_in : 3;
    pr_tinfo in3[3];
    if (ic->n_in >= 2 && low_float(ic->in[0].dtype)) {
        for (int i = 0; i < sub.n_in; i++) {
            in3[i] = ic->in[i];
            if (i && in3[i].dtype == PRECIS_FLOAT32) in3[i].dtype = ic->in[0].dtype;
        }
        sub.in = in3;
    }
    if ((st = pr_infer_Conv(&sub))) return st;
    return check_residual(ic, 3);
}

precis_status pr_infer_FusedMatMul(pr_infer *ic) {
    precis_status st = check_acts(ic);
    if (st) return st;
    pr_tinfo ab[2];
    for (int i = 0; i < 2; i++) {
        if ((st = pr_infer_need_input(ic, i, i ? "B" : "A"))) return st;
        ab[i] = ic->in[i];
        if (i && low_float(ic->in[0].dtype) && ab[i].dtype == PRECIS_FLOAT32)
            ab[i].dtype = ic->in[0].dtype;
        bool tr = pr_attr_int(ic->node, i ? "transB" : "transA", 0) != 0;
        if (!tr) continue;
        if (ab[i].rank != 2)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "trans%s needs a 2-D operand", i ? "B" : "A");
        int64_t d = ab[i].dims[0];
        ab[i].dims[0] = ab[i].dims[1];
        ab[i].dims[1] = d;
        ab[i].value = NULL;
    }
    pr_infer sub = *ic;
    sub.n_in = 2;
    sub.in = ab;
    if ((st = pr_infer_MatMul(&sub))) return st;
    if (pr_in_present(ic, 2) && ic->in[2].dtype != ic->out[0].dtype &&
        ic->in[2].dtype != PRECIS_FLOAT32)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "bias has dtype %s, output %s",
                         pr_dtype_name(ic->in[2].dtype), pr_dtype_name(ic->out[0].dtype));
    return check_residual(ic, 3);
}

precis_status pr_infer_Reorder(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "X");
    if (st) return st;
    const char *to = pr_attr_str(ic->node, "to", "");
    if (strcmp(to, "plain") != 0 && strcmp(to, "nhwc") != 0)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "unknown layout '%s'", to);
    pr_infer_copy(ic, 0, 0);
    return PRECIS_OK;
}

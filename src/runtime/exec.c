#include "runtime/exec.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/tensor.h"

#define PR_MAX_NODE_IO 64

precis_status pr_exec_check_supported(const pr_node *n, pr_err *e) {
    if (n->op == PR_OP_UNKNOWN || !pr_infer_table[n->op] || !pr_ref_table[n->op])
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                       "node '%s': unsupported op '%s' (domain '%s', opset %lld)", n->name,
                       n->op_type, n->domain[0] ? n->domain : "ai.onnx", (long long)n->opset);
    if (n->n_inputs > PR_MAX_NODE_IO || n->n_outputs > PR_MAX_NODE_IO)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): more than %d inputs or outputs",
                       n->name, n->op_type, PR_MAX_NODE_IO);
    return PRECIS_OK;
}

int pr_exec_supported_op(const pr_node *n) {
    return n->op != PR_OP_UNKNOWN && pr_infer_table[n->op] && pr_ref_table[n->op];
}

void pr_tinfo_from_buf(pr_tinfo *t, const pr_buf *b) {
    memset(t, 0, sizeof *t);
    if (!b) {
        t->rank = -1;
        return;
    }
    t->dtype = b->dtype;
    t->rank = b->rank;
    if (b->rank) memcpy(t->dims, b->dims, (size_t)b->rank * sizeof(int64_t));
    t->value = b->data;
}

precis_status pr_exec_node(pr_graph *g, const pr_node *n, const pr_buf *const *in, pr_buf *out,
                           int num_threads, pr_err *e) {
    precis_status st = pr_exec_check_supported(n, e);
    if (st) return st;
    pr_tinfo tin[PR_MAX_NODE_IO], tout[PR_MAX_NODE_IO];
    for (int i = 0; i < n->n_inputs; i++) pr_tinfo_from_buf(&tin[i], in[i]);
    memset(tout, 0, sizeof(pr_tinfo) * (size_t)n->n_outputs);
    for (int j = 0; j < n->n_outputs; j++) tout[j].rank = -1;
    pr_infer ic = {g, n, n->n_inputs, tin, n->n_outputs, tout, e};
    st = pr_infer_table[n->op](&ic);
    if (st) return st;

    pr_buf *outp[PR_MAX_NODE_IO];
    for (int j = 0; j < n->n_outputs; j++) {
        memset(&out[j], 0, sizeof out[j]);
        outp[j] = NULL;
    }
    for (int j = 0; j < n->n_outputs; j++) {
        if (n->outputs[j] < 0) continue;
        const pr_tinfo *t = &tout[j];
        const char *oname = g->tensors[n->outputs[j]].name;
        if (t->dtype == PRECIS_UNDEFINED || t->rank < 0 || pr_numel(t->rank, t->dims) < 0) {
            st = pr_errf(e, PRECIS_ERR_INTERNAL,
                         "node '%s' (%s): could not determine the shape of output '%s'", n->name,
                         n->op_type, oname);
            goto fail;
        }
        st = pr_buf_alloc(&out[j], t->dtype, t->rank, t->dims, oname, e);
        if (st) {
            pr_err_prefix(e, "node '%s' (%s)", n->name, n->op_type);
            goto fail;
        }
        outp[j] = &out[j];
    }
    pr_kernel k = {g, n, n->n_inputs, in, n->n_outputs, outp, e, num_threads};
    st = pr_ref_table[n->op](&k);
    if (st) goto fail;
    return PRECIS_OK;
fail:
    for (int j = 0; j < n->n_outputs; j++) pr_buf_free(&out[j]);
    return st;
}

precis_status pr_infer_step_outputs(const pr_graph *g, const pr_node *n, pr_tinfo *tin,
                                    pr_tinfo *tout, pr_err *e) {
    pr_harmonize_inputs(g, n, tin);
    memset(tout, 0, sizeof(pr_tinfo) * (size_t)n->n_outputs);
    for (int j = 0; j < n->n_outputs; j++) tout[j].rank = -1;
    pr_infer ic = {(pr_graph *)g, n, n->n_inputs, tin, n->n_outputs, tout, e};
    return pr_infer_table[n->op](&ic);
}

void pr_harmonize_inputs(const pr_graph *g, const pr_node *n, pr_tinfo *tin) {
    switch (n->op) {
    case PR_OP_LayerNormalization: case PR_OP_InstanceNormalization:
    case PR_OP_BatchNormalization: case PR_OP_PRelu: case PR_OP_Add: case PR_OP_Sub:
    case PR_OP_Mul: case PR_OP_Div: case PR_OP_Max: case PR_OP_Min: case PR_OP_Sum:
    case PR_OP_Mean: case PR_OP_Clip: case PR_OP_Where: case PR_OP_Conv:
    case PR_OP_ConvTranspose: case PR_OP_MatMul: case PR_OP_Gemm:
        break;
    default:
        return;
    }
    pr_dtype low = PRECIS_UNDEFINED;
    for (int j = 0; j < n->n_inputs; j++)
        if (tin[j].dtype == PRECIS_BFLOAT16 || tin[j].dtype == PRECIS_FLOAT16) low = tin[j].dtype;
    if (low == PRECIS_UNDEFINED) return;
    for (int j = 0; j < n->n_inputs; j++) {
        int t = n->inputs[j];
        if (t >= 0 && (g->tensors[t].flags & PR_T_INIT) && tin[j].dtype == PRECIS_FLOAT32) {
            tin[j].dtype = low;
            tin[j].value = NULL;
        }
    }
}

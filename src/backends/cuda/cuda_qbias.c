/* Biased uint8 storage: which tensors (see cuda_qbias.h). */
#include "backends/cuda/cuda_qbias.h"

#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"

static bool gemm_node(const pr_graph *g, const pr_node *n) {
    return (n->op == PR_OP_QConv || n->op == PR_OP_QMatMul) &&
           pr_cuda_find_impl(g, n) == &pr_cuda_impl_qgemm;
}

/* n reads t only where biased storage is honoured: X (with K < 2^16, the
 * bound cuda_qgemm.c's prepare checks for a uint8 X) or a QConv's Z. */
static bool reads_biased(const pr_graph *g, const pr_node *n, int t) {
    for (int j = 0; j < n->n_inputs; j++) {
        if (n->inputs[j] != t) continue;
        if (j == 4 && n->op == PR_OP_QConv) continue;
        if (j != 0) return false;
        const pr_tensor *X = &g->tensors[t];
        int64_t K = 0;
        if (n->op == PR_OP_QConv) {
            const pr_tensor *W = &g->tensors[n->inputs[1]];
            K = W->dims[1] * W->dims[2] * W->dims[3];
        } else {
            K = X->dims[X->rank - 1];
        }
        if (!pr_dim_known(K) || K >= (1 << 16)) return false;
    }
    return true;
}

bool pr_cu_u8_biased(const pr_graph *g, int t) {
    const char *env = getenv("PRECIS_CUDA_U8_BIAS");
    if (env && !strcmp(env, "0")) return false;
    if (t < 0 || t >= g->n_tensors) return false;
    const pr_tensor *T = &g->tensors[t];
    if (env && !strcmp(env, "all")) /* the kernel tests (test_cuda_u8.c): one node */
        return T->dtype == PRECIS_UINT8 && !(T->flags & PR_T_INIT);
    if (T->dtype != PRECIS_UINT8 || (T->flags & (PR_T_INPUT | PR_T_OUTPUT | PR_T_INIT)))
        return false;
    if (T->producer < 0 || T->producer >= g->n_nodes) return false;
    const pr_node *p = &g->nodes[T->producer];
    if (p->op != PR_OP_QConv || pr_node_out(p, 0) != t || !gemm_node(g, p)) return false;
    int uses = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        bool reads = false;
        for (int j = 0; j < n->n_inputs && !reads; j++) reads = n->inputs[j] == t;
        if (!reads) continue;
        if (!gemm_node(g, n) || !reads_biased(g, n, t)) return false;
        uses++;
    }
    return uses > 0;
}

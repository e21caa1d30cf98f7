/* Biased uint8 storage: which tensors (see cuda_qbias.h). */
#include "backends/cuda/cuda_qbias.h"

#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"

static bool runs_on(const pr_graph *g, const pr_node *n, const pr_cuda_impl *im) {
    return pr_cuda_find_impl(g, n) == im;
}

static bool gemm_node(const pr_graph *g, const pr_node *n) {
    return (n->op == PR_OP_QConv || n->op == PR_OP_QMatMul) && runs_on(g, n, &pr_cuda_impl_qgemm);
}

/* A plain activation (no graph input / output, no initializer) of dtype uint8. */
static bool u8_act(const pr_graph *g, int t) {
    const pr_tensor *T = &g->tensors[t];
    return T->dtype == PRECIS_UINT8 && !(T->flags & (PR_T_INPUT | PR_T_OUTPUT | PR_T_INIT));
}

/* n (a GEMM) reads t only where biased storage is honoured: X (with K <
 * 2^16, the bound cuda_qgemm.c's prepare checks for a uint8 X) or a QConv's Z. */
static bool gemm_reads(const pr_graph *g, const pr_node *n, int t) {
    if (!gemm_node(g, n)) return false;
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

static bool reads(const pr_node *n, int t) {
    for (int j = 0; j < n->n_inputs; j++)
        if (n->inputs[j] == t) return true;
    return false;
}

/* Every reader of t satisfies ok(g, n, t), and there is one. */
typedef bool (*reader_fn)(const pr_graph *g, const pr_node *n, int t);
static bool all_readers(const pr_graph *g, int t, reader_fn ok) {
    int uses = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        if (!reads(n, t)) continue;
        if (!ok(g, n, t)) return false;
        uses++;
    }
    return uses > 0;
}

/* The GEMM-side producers: a QConv on the IMMA GEMMs or on the int8
 * depthwise kernel (cuda_qdw.c), writing t as output 0. */
static bool conv_makes(const pr_graph *g, int t) {
    int p = g->tensors[t].producer;
    if (p < 0 || p >= g->n_nodes) return false;
    const pr_node *n = &g->nodes[p];
    return n->op == PR_OP_QConv && pr_node_out(n, 0) == t &&
           (runs_on(g, n, &pr_cuda_impl_qgemm) || runs_on(g, n, &pr_cuda_impl_qdwconv));
}

/* A MaxPool (cuda_pool.c: on biased bytes the int8 max, XOR 0x80 keeping
 * the order) passing t through: t made by a conv, every reader of its
 * output a GEMM. No chains of pools (t's producer is a conv). */
static bool pool_passes(const pr_graph *g, const pr_node *n, int t) {
    if (n->op != PR_OP_MaxPool || n->n_outputs != 1 || n->inputs[0] != t ||
        !runs_on(g, n, &pr_cuda_impl_pool))
        return false;
    for (int j = 1; j < n->n_inputs; j++)
        if (n->inputs[j] == t) return false;
    int o = pr_node_out(n, 0);
    return o >= 0 && u8_act(g, o) && conv_makes(g, t) && all_readers(g, o, gemm_reads);
}

static bool reader_ok(const pr_graph *g, const pr_node *n, int t) {
    return gemm_reads(g, n, t) || pool_passes(g, n, t);
}

bool pr_cu_u8_biased(const pr_graph *g, int t) {
    const char *env = getenv("PRECIS_CUDA_U8_BIAS");
    if (env && !strcmp(env, "0")) return false;
    if (t < 0 || t >= g->n_tensors) return false;
    const pr_tensor *T = &g->tensors[t];
    if (env && !strcmp(env, "all")) /* the kernel tests (test_cuda_u8.c): one node */
        return T->dtype == PRECIS_UINT8 && !(T->flags & PR_T_INIT);
    if (!u8_act(g, t)) return false;
    if (!conv_makes(g, t)) { /* or the output of a pool that passes a biased tensor on */
        int p = T->producer;
        if (p < 0 || p >= g->n_nodes) return false;
        const pr_node *n = &g->nodes[p];
        int i = pr_node_in(n, 0);
        if (pr_node_out(n, 0) != t || i < 0 || !u8_act(g, i) || !pool_passes(g, n, i) ||
            !all_readers(g, i, reader_ok))
            return false;
    }
    return all_readers(g, t, reader_ok);
}

/* fold_attention_heads (cuda plans, after precision and layouts): the head
 * split and merge transposes around an Attention go into its loads and its
 * store.
 *
 *   X [B, S, H, D] -> Transpose(perm 0,2,1,3) -> Attention input Q, K or V
 *   Attention Y [B, H, S, Dv] -> Transpose(perm 0,2,1,3) -> Z [B, S, H, Dv]
 *
 * become Attention reading X (attribute heads_bshd bit 0/1/2) and writing Z
 * (bit 3): ops.inc's Attention with those operands stored with axes r-3 and
 * r-2 swapped. Only where the fused fp16/bf16 kernel (cu_flash.cu) runs the
 * node: Q, K (k_transposed 0), V and Y of one low float type, plain, rank 4,
 * D = Dv in {32, 64, 128}; the batched-GEMM path would have to fall back to
 * the per-row kernel on such strides. PRECIS_CUDA_FLASH=0 turns both off.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass_plan.h"

static bool swap12(const pr_graph *g, int ni) {
    const pr_node *n = &g->nodes[ni];
    if (pr_node_dead(n) || n->op != PR_OP_Transpose || strcmp(n->domain, "") ||
        n->n_inputs != 1 || n->n_outputs != 1)
        return false;
    const int64_t *perm;
    if (pr_attr_ints(n, "perm", &perm) != 4) return false;
    return perm[0] == 0 && perm[1] == 2 && perm[2] == 1 && perm[3] == 3;
}

static bool plain4(const pr_graph *g, int t, pr_dtype dt) {
    const pr_tensor *x = &g->tensors[t];
    return t >= 0 && x->dtype == dt && x->rank == 4 && x->layout == PR_LAYOUT_PLAIN &&
           !pr_is_init(g, t);
}

static bool candidate(const pr_graph *g, const pr_node *n) {
    if (pr_node_dead(n) || n->op != PR_OP_Attention || n->n_inputs < 3 || n->n_outputs != 1 ||
        pr_attr_int(n, "k_transposed", 0) || pr_attr_int(n, "heads_bshd", 0))
        return false;
    pr_dtype dt = g->tensors[n->outputs[0]].dtype;
    if (dt != PRECIS_FLOAT16 && dt != PRECIS_BFLOAT16) return false;
    for (int i = 0; i < 3; i++)
        if (!plain4(g, n->inputs[i], dt)) return false;
    if (!plain4(g, n->outputs[0], dt)) return false;
    int64_t d = g->tensors[n->inputs[0]].dims[3], dv = g->tensors[n->inputs[2]].dims[3];
    return d == dv && (d == 32 || d == 64 || d == 128) &&
           g->tensors[n->inputs[1]].dims[3] == d;
}

precis_status pr_fold_attention_heads(pr_graph *g, pr_err *e) {
    const char *env = getenv("PRECIS_CUDA_FLASH");
    if (env && !strcmp(env, "0")) return PRECIS_OK;
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, e);
    if (st) return st;
    for (int ni = 0; ni < g->n_nodes && !st; ni++) {
        if (!candidate(g, &g->nodes[ni])) continue;
        pr_dtype dt = g->tensors[g->nodes[ni].outputs[0]].dtype;
        int64_t hb = 0;
        for (int i = 0; i < 3 && !st; i++) {
            int t = g->nodes[ni].inputs[i], p = pr_producer(g, t);
            if (p < 0 || !swap12(g, p) || pr_is_graph_output(g, t) ||
                pr_single_consumer(g, &u, t) != ni)
                continue;
            int x = g->nodes[p].inputs[0];
            if (!plain4(g, x, dt)) continue;
            if ((st = pr_node_set_input(g, &u, ni, i, x, e))) break;
            if (pr_fuse_absorb(g, &u, ni, &p, 1, -1, e) < 0) st = PRECIS_ERR_OOM;
            hb |= 1 << i;
        }
        if (st) break;
        int y = g->nodes[ni].outputs[0], c = pr_single_consumer(g, &u, y);
        bool fold_y = c >= 0 && swap12(g, c) && !pr_is_graph_output(g, y) &&
                      plain4(g, g->nodes[c].outputs[0], dt);
        if (fold_y) hb |= 8;
        if (!hb) continue;
        if ((st = pr_node_set_int(g, ni, "heads_bshd", hb, e))) break;
        if (fold_y) {
            int nn = pr_fuse_absorb(g, &u, ni, &c, 1, c, e);
            if (nn < 0) st = PRECIS_ERR_OOM;
        }
    }
    pr_uses_free(&u);
    if (st) return st;
    return pr_graph_compact(g, e);
}

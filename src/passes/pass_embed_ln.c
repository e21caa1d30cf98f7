/* fold_embed_layernorm (cuda plans, from fold_fp8_quantize's entry point, so
 * after the LayerNorm took its e4m3 output): the BERT-family embeddings
 *
 *   Gather(W0, I0) -> g0 \
 *   Gather(W1, I1) -> g1 -> Sum(g0, g1, P) -> X -> LayerNormalization -> Y [, Yq]
 *   => EmbedLayerNorm(W0, I0, W1, I1, P, Scale, B) -> Y [, Yq]     (ops.inc)
 *
 * (the word and token type lookups, the position rows P, the Sum made by
 * pass_attn_mask.c's fold_add3) as one node: cu_norm.cu's k_embed_ln reads the
 * table rows (rounded to X's dtype, as the Gathers store them) and P, sums them
 * as the Sum kernel does (RN(RN(g0 + g1) + P) in X's dtype) and normalizes as
 * the LayerNorm kernel does, so Y / Yq are the unfused
 * cuda path's bytes; MiniLM b64 ran four kernels (two k_gather16, k_sum3v,
 * k_layernorm_vec: 26.6 us under ncu in phase 17t). Only what that kernel
 * runs: static shapes; g0, g1 and X private (one reader, no graph outputs);
 * Gathers along axis 0 of rank-2 float tables whose rows they store in X's
 * dtype (a float32 table converted, as the cuda Gather does in MiniLM's plans,
 * or a table of X's dtype), int32 / int64 indices of one shape; X fp16 / bf16 over a last
 * axis L % 8 == 0, L <= 1024; P float, its dims after leading 1s those of X's
 * last ones; Scale / B float of L elements; the LayerNorm over the last axis,
 * stash_type 1, no Mean / InvStdDev. PRECIS_CUDA_EMBED_LN=0 keeps the nodes
 * (A/B). */
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass_plan.h"

static bool fdt(pr_dtype d) {
    return d == PRECIS_FLOAT32 || d == PRECIS_FLOAT16 || d == PRECIS_BFLOAT16;
}

/* Tensor t (a Sum input, Sum node si) is a private Gather(W, I) along axis 0
 * of a rank-2 float table, its rows stored in sdt (the Sum's dtype: W's, or W
 * float32 converted by the cuda Gather, MiniLM's fp16 plans): its node in *gi. */
static bool emb_gather(const pr_graph *g, const pr_uses *u, int t, int si, pr_dtype sdt, int *gi) {
    if (t < 0 || pr_is_graph_output(g, t) || pr_single_consumer(g, u, t) != si) return false;
    int p = pr_producer(g, t);
    if (!pr_live_op(g, p, PR_OP_Gather) || g->nodes[p].n_inputs != 2) return false;
    const pr_node *n = &g->nodes[p];
    int w = pr_node_in(n, 0), ix = pr_node_in(n, 1);
    if (w < 0 || ix < 0 || !pr_dims_known(&g->tensors[w]) || !pr_dims_known(&g->tensors[ix]))
        return false;
    const pr_tensor *W = &g->tensors[w], *I = &g->tensors[ix], *Y = &g->tensors[t];
    int64_t axis = pr_attr_int(n, "axis", 0);
    if (W->rank != 2 || (axis != 0 && axis != -2) || !fdt(W->dtype) || Y->dtype != sdt ||
        (I->dtype != PRECIS_INT64 && I->dtype != PRECIS_INT32) || I->rank + 1 > PR_MAX_RANK)
        return false;
    *gi = p;
    return true;
}

/* LayerNorm node li: rewritten (1), left (0), error (-1). */
static int fold_one(pr_graph *g, pr_uses *u, int li, pr_err *e) {
    const pr_node *n = &g->nodes[li];
    int x = pr_node_in(n, 0), sc = pr_node_in(n, 1), b = pr_node_in(n, 2), y = pr_node_out(n, 0);
    const bool q = pr_attr_float(n, "q_scale", 0.0f) > 0.0f;
    if (x < 0 || sc < 0 || y < 0 || n->n_inputs > 3 || pr_node_out(n, 2) >= 0 ||
        (!q && pr_node_out(n, 1) >= 0) || pr_attr_int(n, "stash_type", 1) != 1)
        return 0;
    const pr_tensor *X = &g->tensors[x];
    if (!pr_dims_known(X) || X->rank < 2 ||
        (X->dtype != PRECIS_FLOAT16 && X->dtype != PRECIS_BFLOAT16) ||
        g->tensors[y].dtype != X->dtype)
        return 0;
    int64_t axis = pr_attr_int(n, "axis", -1), L = X->dims[X->rank - 1];
    if ((axis != -1 && axis != X->rank - 1) || L % 8 || L > 1024) return 0;
    for (int i = 1; i <= 2; i++) {
        int t = pr_node_in(n, i);
        if (t < 0) continue;
        if (!fdt(g->tensors[t].dtype) || pr_numel(g->tensors[t].rank, g->tensors[t].dims) != L)
            return 0;
    }
    if (pr_is_graph_output(g, x) || pr_single_consumer(g, u, x) != li) return 0;
    int si = pr_producer(g, x);
    if (!pr_live_op(g, si, PR_OP_Sum) || g->nodes[si].n_inputs != 3 || g->nodes[si].n_attrs)
        return 0;
    const pr_node *s = &g->nodes[si];
    int gi[2], p = pr_node_in(s, 2);
    if (!emb_gather(g, u, pr_node_in(s, 0), si, X->dtype, &gi[0]) ||
        !emb_gather(g, u, pr_node_in(s, 1), si, X->dtype, &gi[1]) || p < 0)
        return 0;
    /* one index shape, Gather rows of L, Y's dims = I0's + [L] */
    const pr_tensor *I0 = &g->tensors[pr_node_in(&g->nodes[gi[0]], 1)];
    const pr_tensor *I1 = &g->tensors[pr_node_in(&g->nodes[gi[1]], 1)];
    if (I0->rank != I1->rank || I0->rank + 1 != X->rank ||
        memcmp(I0->dims, I1->dims, sizeof(int64_t) * (size_t)I0->rank) ||
        memcmp(I0->dims, X->dims, sizeof(int64_t) * (size_t)I0->rank))
        return 0;
    for (int j = 0; j < 2; j++)
        if (g->tensors[pr_node_in(&g->nodes[gi[j]], 0)].dims[1] != L) return 0;
    /* P: float, its dims past leading 1s equal to X's last ones (row-periodic) */
    const pr_tensor *P = &g->tensors[p];
    if (!pr_dims_known(P) || !fdt(P->dtype) || P->rank > X->rank) return 0;
    int lead = 0;
    while (lead < P->rank - 1 && P->dims[lead] == 1) lead++;
    for (int d = lead; d < P->rank; d++)
        if (P->dims[d] != X->dims[X->rank - P->rank + d]) return 0;
    /* rewrite the LayerNorm in place */
    int w0 = pr_node_in(&g->nodes[gi[0]], 0), i0 = pr_node_in(&g->nodes[gi[0]], 1);
    int w1 = pr_node_in(&g->nodes[gi[1]], 0), i1 = pr_node_in(&g->nodes[gi[1]], 1);
    const int in[7] = {w0, i0, w1, i1, p, sc, b};
    pr_dtype sdt = X->dtype;
    for (int i = 0; i < 7; i++)
        if (pr_node_set_input(g, u, li, i, in[i], e)) return -1;
    if (b < 0) g->nodes[li].n_inputs = 6;
    const int gone[3] = {si, gi[0], gi[1]};
    if (pr_node_merge_origins(g, li, gone, 3, e)) return -1;
    for (int j = 0; j < 3; j++) pr_node_kill(g, u, gone[j]);
    if (pr_node_set_int(g, li, "sum_type", (int64_t)sdt, e) ||
        pr_node_set_int(g, li, "axis", -1, e))
        return -1;
    pr_node_retype(g, li, PR_OP_EmbedLayerNorm, 1);
    return 1;
}

precis_status pr_fold_embed_layernorm(pr_graph *g, pr_err *e) {
    const char *env = getenv("PRECIS_CUDA_EMBED_LN");
    if (env && !strcmp(env, "0")) return PRECIS_OK;
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, e);
    if (st) return st;
    int done = 0;
    for (int ni = 0; ni < g->n_nodes && !st; ni++) {
        const pr_node *n = &g->nodes[ni];
        if (pr_node_dead(n) || n->op != PR_OP_LayerNormalization || strcmp(n->domain, "")) continue;
        int r = fold_one(g, &u, ni, e);
        if (r < 0) st = e->status ? e->status : PRECIS_ERR_OOM;
        done += r > 0;
    }
    pr_uses_free(&u);
    if (!st && done) st = pr_graph_compact(g, e);
    return st;
}

/* fold_fp8_quantize (cuda fp8 plans, after fold_attention_heads): the e4m3
 * QuantizeLinear steps in front of the fp8 GEMMs go into their producers.
 *
 *   LayerNormalization -> Y (fp16 / bf16) -> QuantizeLinear(s) -> Yq (e4m3)
 *     (Y may have other readers: the residual of a later GEMM)
 *   => LayerNormalization(q_scale s) -> Y, Yq            (ops.inc: output 1)
 *
 *   Attention -> Y (fp16 / bf16) [-> Reshape ...] -> QuantizeLinear(s) -> Yq
 *     (each tensor of the chain read once)
 *   => Attention(y_type 17, y_scale s) [-> Reshape ...] -> Yq
 *
 * The QuantizeLinear: scalar scale > 0, zero point absent or 0, e4m3 output.
 * The fused forms mean exactly the numbers of QuantizeLinear after the node
 * (it quantizes Y as stored), so ref runs the plan the same; the CUDA kernels
 * (cu_norm.cu, cu_flash.cu) write the e4m3 copy in their store, saving a pass
 * over the activation each (BERT-base: 37 QuantizeLinear steps). Only where
 * the CUDA impl runs the fused form (a LayerNorm of one output; an Attention
 * on the flash kernel, i.e. heads folded: heads_bshd set, static shapes).
 * PRECIS_CUDA_FP8_FUSEQ=0 keeps the QuantizeLinear steps (A/B). */
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass_plan.h"

static bool low_float(pr_dtype dt) { return dt == PRECIS_FLOAT16 || dt == PRECIS_BFLOAT16; }

/* Node c is QuantizeLinear(t) to e4m3 of one scale > 0 and zero point 0:
 * the scale in *s. */
static bool q_e4m3(const pr_graph *g, int c, int t, float *s) {
    if (c < 0) return false;
    const pr_node *n = &g->nodes[c];
    if (pr_node_dead(n) || n->op != PR_OP_QuantizeLinear || strcmp(n->domain, "") ||
        pr_node_in(n, 0) != t || n->n_outputs != 1)
        return false;
    int y = pr_node_out(n, 0), zp = pr_node_in(n, 2);
    float z = 0;
    if (y < 0 || g->tensors[y].dtype != PRECIS_FLOAT8E4M3FN) return false;
    if (!pr_const_scalar(g, pr_node_in(n, 1), s) || !(*s > 0.0f)) return false;
    return zp < 0 || (pr_const_scalar(g, zp, &z) && z == 0.0f);
}

static bool is_reshape(pr_op op) {
    return op == PR_OP_Reshape || op == PR_OP_Flatten || op == PR_OP_Squeeze ||
           op == PR_OP_Unsqueeze;
}

static precis_status fold_layernorm(pr_graph *g, pr_uses *u, int ni, int *done, pr_err *e) {
    const pr_node *n = &g->nodes[ni];
    int y = pr_node_out(n, 0);
    if (y < 0 || !low_float(g->tensors[y].dtype) || pr_node_out(n, 1) >= 0 ||
        pr_node_out(n, 2) >= 0 || pr_attr_float(n, "q_scale", 0.0f) != 0.0f)
        return PRECIS_OK;
    int cons[16];
    int nc = pr_consumers(g, y, cons, 16);
    for (int k = 0; k < nc && k < 16; k++) {
        float s;
        if (!q_e4m3(g, cons[k], y, &s)) continue;
        int qi = cons[k], yq = pr_node_out(&g->nodes[qi], 0);
        if (pr_node_merge_origins(g, ni, &qi, 1, e)) return e->status;
        pr_node_kill(g, u, qi);
        if (pr_node_set_float(g, ni, "q_scale", s, e) || pr_node_set_output(g, ni, 1, yq, e))
            return e->status;
        g->nodes[ni].n_outputs = 2;
        (*done)++;
        return PRECIS_OK;
    }
    return PRECIS_OK;
}

static precis_status fold_attention(pr_graph *g, pr_uses *u, int ni, int *done, pr_err *e) {
    const pr_node *n = &g->nodes[ni];
    int y = pr_node_out(n, 0);
    if (n->n_outputs != 1 || y < 0 || !low_float(g->tensors[y].dtype) ||
        !pr_attr_int(n, "heads_bshd", 0) || pr_attr_int(n, "y_type", 0))
        return PRECIS_OK;
    /* static shapes only: cuda_attention.c takes y_type where it knows at prepare that
     * the fused kernel runs (else ref would run the node on the host) */
    for (int i = 0; i < n->n_inputs; i++) {
        const pr_tensor *x = n->inputs[i] >= 0 ? &g->tensors[n->inputs[i]] : NULL;
        if (x && (x->rank < 0 || pr_numel(x->rank, x->dims) < 0)) return PRECIS_OK;
    }
    if (g->tensors[y].rank < 0 || pr_numel(g->tensors[y].rank, g->tensors[y].dims) < 0)
        return PRECIS_OK;
    int chain[8], nch = 0, t = y, c = pr_single_consumer(g, u, t);
    while (c >= 0 && is_reshape(g->nodes[c].op) && pr_node_in(&g->nodes[c], 0) == t && nch < 8 &&
           g->nodes[c].n_outputs == 1) {
        chain[nch++] = c;
        t = pr_node_out(&g->nodes[c], 0);
        c = t >= 0 ? pr_single_consumer(g, u, t) : -1;
    }
    float s;
    if (!q_e4m3(g, c, t, &s)) return PRECIS_OK;
    int yq = pr_node_out(&g->nodes[c], 0);
    if (pr_node_merge_origins(g, ni, &c, 1, e)) return e->status;
    pr_node_kill(g, u, c);
    if (pr_node_set_int(g, ni, "y_type", PRECIS_FLOAT8E4M3FN, e) ||
        pr_node_set_float(g, ni, "y_scale", s, e))
        return e->status;
    /* the chain's tensors become e4m3; its last node writes Yq */
    g->tensors[y].dtype = PRECIS_FLOAT8E4M3FN;
    for (int k = 0; k + 1 < nch; k++)
        g->tensors[pr_node_out(&g->nodes[chain[k]], 0)].dtype = PRECIS_FLOAT8E4M3FN;
    if (pr_node_set_output(g, nch ? chain[nch - 1] : ni, 0, yq, e)) return e->status;
    (*done)++;
    return PRECIS_OK;
}

static precis_status fold_quantize(pr_graph *g, pr_err *e) {
    const char *env = getenv("PRECIS_CUDA_FP8_FUSEQ");
    if (env && !strcmp(env, "0")) return PRECIS_OK;
    bool any = false;
    for (int i = 0; i < g->n_tensors && !any; i++)
        any = g->tensors[i].dtype == PRECIS_FLOAT8E4M3FN;
    if (!any) return PRECIS_OK;
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, e);
    if (st) return st;
    int done = 0;
    for (int ni = 0; ni < g->n_nodes && !st; ni++) {
        const pr_node *n = &g->nodes[ni];
        if (pr_node_dead(n)) continue;
        if (n->op == PR_OP_LayerNormalization && !strcmp(n->domain, ""))
            st = fold_layernorm(g, &u, ni, &done, e);
        else if (n->op == PR_OP_Attention)
            st = fold_attention(g, &u, ni, &done, e);
    }
    pr_uses_free(&u);
    if (!st && done) st = pr_graph_compact(g, e);
    return st;
}

/* Every cuda plan: the quantize folds (fp8 plans), then the embeddings' Gathers
 * + Sum + LayerNorm as one node (pass_embed_ln.c: after the LayerNorm took its
 * e4m3 output). */
precis_status pr_fold_fp8_quantize(pr_graph *g, pr_err *e) {
    precis_status st = fold_quantize(g, e);
    return st ? st : pr_fold_embed_layernorm(g, e);
}

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
 *
 * Then the three projections of such an Attention (all three operands
 * folded) become one GEMM:
 *
 *   A -> FusedMatMul(W_q, b_q) -> Reshape [.., S, H, D] -> Attention Q
 *   A -> FusedMatMul(W_k, b_k) -> Reshape [.., S, H, D] -> Attention K
 *   A -> FusedMatMul(W_v, b_v) -> Reshape [.., S, H, D] -> Attention V
 *
 * become A -> FusedMatMul([W_q W_k W_v], [b_q b_k b_v]) -> P [.., S, 3HD] read
 * in place by the Attention (attribute qkv_heads H): float weights (or fp8
 * QMatMuls of one a_scale and one weight scale: fp8 builds give the three
 * one), no activation or residual, the same transB / alpha and output type.
 * PRECIS_CUDA_QKV=0 keeps the three.
 */
#include <stdio.h>
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

/* A projection's input slots: bias and residual (QMatMul: after b_scale). */
static int bias_slot(const pr_node *n) { return n->op == PR_OP_QMatMul ? 3 : 2; }

/* Q, K or V (input i of Attention ni): Reshape [.., S, H, D] of a projection
 * [.., S, H * D] read only there: a FusedMatMul / MatMul with float32 weights,
 * or an fp8 QMatMul (e4m3 weights, one scale, float output). *mm the
 * projection, *rs the Reshape; false when it is not one. */
static bool projection(const pr_graph *g, const pr_uses *u, int ni, int i, int *mm, int *rs) {
    int t = g->nodes[ni].inputs[i], r = pr_producer(g, t);
    if (r < 0 || g->nodes[r].op != PR_OP_Reshape || pr_single_consumer(g, u, t) != ni ||
        pr_is_graph_output(g, t))
        return false;
    int x = pr_node_in(&g->nodes[r], 0), m = pr_producer(g, x);
    if (m < 0 || pr_single_consumer(g, u, x) != r || pr_is_graph_output(g, x)) return false;
    const pr_node *n = &g->nodes[m];
    bool q = n->op == PR_OP_QMatMul;
    if (n->op != PR_OP_FusedMatMul && n->op != PR_OP_MatMul && !q) return false;
    if (n->n_outputs != 1 || pr_node_in(n, bias_slot(n) + 1) >= 0 || pr_attr_str(n, "act", "")[0] ||
        pr_attr_str(n, "act2", "")[0] || pr_attr_int(n, "transA", 0) ||
        pr_attr_int(n, "y_type", PRECIS_FLOAT32) != PRECIS_FLOAT32)
        return false;
    const pr_tensor *X = &g->tensors[x], *T = &g->tensors[t];
    int w = pr_node_in(n, 1), b = pr_node_in(n, bias_slot(n));
    pr_dtype wdt = q ? PRECIS_FLOAT8E4M3FN : PRECIS_FLOAT32;
    if (!pr_is_init(g, w) || g->tensors[w].dtype != wdt || g->tensors[w].rank != 2) return false;
    float sc;
    if (q && (g->tensors[pr_node_in(n, 0)].dtype != wdt || !pr_const_scalar(g, pr_node_in(n, 2), &sc)))
        return false;
    if (b >= 0 && (!pr_is_init(g, b) || g->tensors[b].dtype != PRECIS_FLOAT32 ||
                   pr_numel(g->tensors[b].rank, g->tensors[b].dims) != X->dims[X->rank - 1]))
        return false;
    if (X->rank + 1 != T->rank || X->dtype != T->dtype || X->layout != PR_LAYOUT_PLAIN) return false;
    for (int d = 0; d + 1 < X->rank; d++)
        if (X->dims[d] != T->dims[d]) return false;
    if (!pr_dim_known(X->dims[X->rank - 1]) ||
        X->dims[X->rank - 1] != T->dims[T->rank - 2] * T->dims[T->rank - 1])
        return false;
    *mm = m;
    *rs = r;
    return true;
}

/* Do projections m0 and m agree on everything but their weights and biases? */
static bool same_kind(const pr_graph *g, const pr_node *n0, const pr_node *n) {
    const pr_tensor *W0 = &g->tensors[pr_node_in(n0, 1)], *W = &g->tensors[pr_node_in(n, 1)];
    float a0 = n0->op == PR_OP_MatMul ? 1.0f : pr_attr_float(n0, "alpha", 1.0f);
    float a1 = n->op == PR_OP_MatMul ? 1.0f : pr_attr_float(n, "alpha", 1.0f);
    if (n->op != n0->op || pr_node_in(n, 0) != pr_node_in(n0, 0) || a0 != a1 ||
        (pr_attr_int(n, "transB", 0) != 0) != (pr_attr_int(n0, "transB", 0) != 0) ||
        (pr_node_in(n, bias_slot(n)) >= 0) != (pr_node_in(n0, bias_slot(n0)) >= 0) ||
        W->dims[0] != W0->dims[0] || W->dims[1] != W0->dims[1] ||
        g->tensors[n->outputs[0]].dtype != g->tensors[n0->outputs[0]].dtype)
        return false;
    if (n->op != PR_OP_QMatMul) return true;
    float s0, s1; /* one activation scale and one weight scale (quantize.c shares it) */
    pr_const_scalar(g, pr_node_in(n0, 2), &s0);
    pr_const_scalar(g, pr_node_in(n, 2), &s1);
    return s0 == s1 && pr_attr_float(n, "a_scale", 0) == pr_attr_float(n0, "a_scale", 0);
}

/* [W_q W_k W_v] (along N) and [b_q b_k b_v] into node m[0]; 0 done, 1 not
 * packable, < 0 error. */
static int pack_qkv(pr_graph *g, pr_uses *u, int ni, pr_err *e) {
    int m[3], r[3];
    for (int i = 0; i < 3; i++)
        if (!projection(g, u, ni, i, &m[i], &r[i])) return 1;
    if (m[0] == m[1] || m[0] == m[2] || m[1] == m[2] ||
        !same_kind(g, &g->nodes[m[0]], &g->nodes[m[1]]) ||
        !same_kind(g, &g->nodes[m[0]], &g->nodes[m[2]]))
        return 1;
    const pr_node *n0 = &g->nodes[m[0]];
    const int bs = bias_slot(n0);
    bool tb = pr_attr_int(n0, "transB", 0) != 0, bias = pr_node_in(n0, bs) >= 0;
    const pr_tensor *W0 = &g->tensors[pr_node_in(n0, 1)];
    pr_dtype wdt = W0->dtype;
    size_t es = pr_dtype_size(wdt);
    int64_t K = tb ? W0->dims[1] : W0->dims[0], N = tb ? W0->dims[0] : W0->dims[1];
    char *w = pr_edit_alloc((size_t)(K * 3 * N) * es);
    float *b = malloc((size_t)(3 * N) * sizeof *b);
    if (!w || !b) {
        free(w);
        free(b);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory"), -1;
    }
    for (int i = 0; i < 3; i++) {
        const pr_node *n = &g->nodes[m[i]];
        const char *wi = g->tensors[pr_node_in(n, 1)].data;
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++)
                memcpy(w + (size_t)(tb ? (i * N + j) * K + k : k * 3 * N + i * N + j) * es,
                       wi + (size_t)(tb ? j * K + k : k * N + j) * es, es);
        if (bias) memcpy(b + i * N, g->tensors[pr_node_in(n, bs)].data, (size_t)N * sizeof *b);
    }
    const pr_tensor *X = &g->tensors[n0->outputs[0]];
    int64_t wd[2] = {tb ? 3 * N : K, tb ? K : 3 * N}, bd[1] = {3 * N}, pd[PR_MAX_RANK];
    memcpy(pd, X->dims, sizeof pd);
    pd[X->rank - 1] = 3 * N;
    char nm[600];
    snprintf(nm, sizeof nm, "%s/qkv_weights", g->nodes[ni].name);
    int tw = pr_graph_add_init(g, nm, wdt, 2, wd, w, e);
    snprintf(nm, sizeof nm, "%s/qkv_bias", g->nodes[ni].name);
    int tbias = tw < 0 || !bias ? -1 : pr_graph_add_init_f32(g, nm, 1, bd, b, e);
    free(b);
    if (tw < 0 || (bias && tbias < 0)) return -1;
    int tp = pr_graph_new_tensor(g, g->nodes[ni].name, "/qkv", X->dtype, X->rank, pd, e);
    if (tp < 0) return -1;
    const pr_tensor *Q = &g->tensors[g->nodes[ni].inputs[0]];
    int64_t heads = Q->dims[Q->rank - 2];
    if (pr_node_set_input(g, u, m[0], 1, tw, e) ||
        (bias && pr_node_set_input(g, u, m[0], bs, tbias, e)) ||
        pr_node_set_output(g, m[0], 0, tp, e))
        return -1;
    int others[2] = {m[1], m[2]};
    if (pr_fuse_absorb(g, u, m[0], others, 2, -1, e) < 0) return -1;
    for (int i = 0; i < 3; i++)
        if (pr_node_set_input(g, u, ni, i, tp, e)) return -1;
    if (pr_fuse_absorb(g, u, ni, r, 3, -1, e) < 0) return -1;
    if (pr_node_set_int(g, ni, "qkv_heads", heads, e)) return -1;
    return 0;
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
    const char *qkv = getenv("PRECIS_CUDA_QKV");
    for (int ni = 0; ni < g->n_nodes && !st && !(qkv && !strcmp(qkv, "0")); ni++) {
        const pr_node *n = &g->nodes[ni];
        if (pr_node_dead(n) || n->op != PR_OP_Attention ||
            (pr_attr_int(n, "heads_bshd", 0) & 7) != 7 || pr_attr_int(n, "qkv_heads", 0))
            continue;
        if (pack_qkv(g, &u, ni, e) < 0) st = e->status ? e->status : PRECIS_ERR_OOM;
    }
    pr_uses_free(&u);
    if (!st) st = pr_fold_attention_mask(g, e);
    if (st) return st;
    return pr_graph_compact(g, e);
}

/* fold_bn: an inference-mode BatchNormalization after a linear op with
 * constant weights becomes part of those weights.
 *
 *   BN(y) = (y - mean) * s + bias,   s = scale / sqrt(var + eps)
 *
 * Conv / FusedConv (no act, act2 or Z), per output channel (W dim 0), and
 * ConvTranspose (output channel: W dim 1 within each group):
 *   W' = W * s[oc],  B' = B * s + (bias - mean * s)
 * Gemm with a rank-2 output [M, N] (BN's channel axis 1 is N):
 *   B' = B * s[n] (columns; rows with transB),  C' = beta * C * s + shift, beta = 1
 * MatMul with a constant 2-D B and a rank-2 output: becomes Gemm(A, B', C').
 * The linear node takes over BN's output and records BN among its origins.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass.h"
#include "passes/prec_req.h"

/* The float32 initializer t with exactly n elements, or NULL. */
static const float *vec_f32(const pr_graph *g, int t, int64_t n) {
    if (!pr_is_init(g, t) || g->tensors[t].dtype != PRECIS_FLOAT32) return NULL;
    if (pr_numel(g->tensors[t].rank, g->tensors[t].dims) != n) return NULL;
    return g->tensors[t].data;
}

/* Is node bi a BatchNormalization in inference form with constant float32
 * parameters of C channels? Fills s and shift. */
static bool bn_params(const pr_graph *g, int bi, int64_t *C, double **s, double **shift) {
    const pr_node *n = &g->nodes[bi];
    if (n->op != PR_OP_BatchNormalization || n->domain[0] || n->n_inputs != 5) return false;
    if (n->n_outputs < 1 || n->outputs[0] < 0) return false;
    for (int j = 1; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0) return false;
    if (n->opset >= 14 && pr_attr_int(n, "training_mode", 0) != 0) return false;
    if (n->opset < 9 && pr_attr_int(n, "spatial", 1) != 1) return false;
    int sc = n->inputs[1];
    if (!pr_is_init(g, sc) || g->tensors[sc].rank != 1) return false;
    int64_t c = g->tensors[sc].dims[0];
    const float *sv = vec_f32(g, sc, c), *bv = vec_f32(g, n->inputs[2], c),
                *mv = vec_f32(g, n->inputs[3], c), *vv = vec_f32(g, n->inputs[4], c);
    if (!sv || !bv || !mv || !vv || c <= 0 || !pr_is_f32(g, n->inputs[0]) ||
        !pr_is_f32(g, n->outputs[0]))
        return false;
    double eps = pr_attr_float(n, "epsilon", 1e-5f);
    *s = malloc((size_t)c * sizeof(double));
    *shift = malloc((size_t)c * sizeof(double));
    if (!*s || !*shift) {
        free(*s);
        free(*shift);
        *s = *shift = NULL;
        return false;
    }
    for (int64_t i = 0; i < c; i++) {
        (*s)[i] = (double)sv[i] / sqrt((double)vv[i] + eps);
        (*shift)[i] = (double)bv[i] - (double)mv[i] * (*s)[i];
    }
    *C = c;
    return true;
}

static bool no_epilogue(const pr_node *n) {
    return pr_attr_str(n, "act", "")[0] == 0 && pr_attr_str(n, "act2", "")[0] == 0 &&
           (n->n_inputs < 4 || n->inputs[3] < 0);
}

/* Fold into Conv/FusedConv node p. *done set when folded. */
static precis_status fold_conv(pr_graph *g, pr_uses *u, int p, const int *absorb, int nabsorb,
                               int64_t C, const double *s, const double *shift, bool *done,
                               pr_err *e) {
    const pr_node *n = &g->nodes[p];
    bool fused = n->op == PR_OP_FusedConv && strcmp(n->domain, PR_FUSED_DOMAIN) == 0;
    bool tr = n->op == PR_OP_ConvTranspose && !n->domain[0];
    if (!((n->op == PR_OP_Conv && !n->domain[0]) || tr || (fused && no_epilogue(n))))
        return PRECIS_OK;
    int w = pr_node_in(n, 1), b = pr_node_in(n, 2);
    if (!pr_is_init(g, w) || g->tensors[w].dtype != PRECIS_FLOAT32 || g->tensors[w].rank < 3)
        return PRECIS_OK;
    /* Conv W: [C, Cin/group, k...]; ConvTranspose W: [Cin, C/group, k...] */
    const pr_tensor *W = &g->tensors[w];
    int64_t group = pr_attr_int(n, "group", 1);
    if (group < 1 || (tr ? W->dims[1] * group != C || W->dims[0] % group : W->dims[0] != C))
        return PRECIS_OK;
    const float *bv = NULL;
    if (b >= 0 && !(bv = vec_f32(g, b, C))) return PRECIS_OK;
    int64_t nw = pr_numel(W->rank, W->dims), per = nw / W->dims[0];
    int64_t cpg = tr ? W->dims[1] : 0, inner = tr ? per / W->dims[1] : 0, ipg = W->dims[0] / group;
    float *nwv = pr_edit_alloc((size_t)nw * sizeof(float));
    float *nbv = pr_edit_alloc((size_t)C * sizeof(float));
    if (!nwv || !nbv) {
        free(nwv);
        free(nbv);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory folding BatchNormalization");
    }
    const float *wv = W->data;
    if (tr) {
        for (int64_t i = 0; i < nw; i++) {
            int64_t ci = i / per, j = (i % per) / inner;
            int64_t oc = (ci / ipg) * cpg + j;
            nwv[i] = (float)((double)wv[i] * s[oc]);
        }
    } else {
        for (int64_t oc = 0; oc < C; oc++)
            for (int64_t i = 0; i < per; i++)
                nwv[oc * per + i] = (float)((double)wv[oc * per + i] * s[oc]);
    }
    for (int64_t oc = 0; oc < C; oc++)
        nbv[oc] = (float)((bv ? (double)bv[oc] : 0.0) * s[oc] + shift[oc]);
    int wr = W->rank;
    int64_t wd[PR_MAX_RANK];
    memcpy(wd, W->dims, sizeof wd);
    int tw = pr_graph_add_init(g, g->tensors[w].name, PRECIS_FLOAT32, wr, wd, nwv, e);
    if (tw < 0) {
        free(nbv);
        return PRECIS_ERR_OOM;
    }
    int tb = pr_graph_add_init(g, g->tensors[w].name, PRECIS_FLOAT32, 1, &C, nbv, e);
    if (tb < 0) return PRECIS_ERR_OOM;
    precis_status st;
    if ((st = pr_node_set_input(g, u, p, 1, tw, e))) return st;
    if ((st = pr_node_set_input(g, u, p, 2, tb, e))) return st;
    if (pr_fuse_absorb(g, u, p, absorb, nabsorb, absorb[nabsorb - 1], e) < 0) return PRECIS_ERR_OOM;
    *done = true;
    return PRECIS_OK;
}

/* Fold into Gemm, or MatMul (made a Gemm), node p with output [M, C]. */
static precis_status fold_gemm(pr_graph *g, pr_uses *u, int p, const int *absorb, int nabsorb,
                               int64_t C, const double *s, const double *shift, bool *done,
                               pr_err *e) {
    const pr_node *n = &g->nodes[p];
    bool gemm = n->op == PR_OP_Gemm && !n->domain[0];
    bool mm = n->op == PR_OP_MatMul && !n->domain[0];
    if ((!gemm && !mm) || n->opset < 7 || n->n_outputs != 1) return PRECIS_OK;
    int y = n->outputs[0], a = pr_node_in(n, 0), b = pr_node_in(n, 1), c = pr_node_in(n, 2);
    const pr_tensor *Y = &g->tensors[y];
    if (Y->rank != 2 || Y->dims[1] != C || !pr_is_f32(g, a) || g->tensors[a].rank != 2)
        return PRECIS_OK;
    if (!pr_is_init(g, b) || g->tensors[b].dtype != PRECIS_FLOAT32 || g->tensors[b].rank != 2)
        return PRECIS_OK;
    bool tb = gemm && pr_attr_int(n, "transB", 0) != 0;
    const pr_tensor *B = &g->tensors[b];
    if (B->dims[tb ? 0 : 1] != C) return PRECIS_OK;
    float beta = gemm ? pr_attr_float(n, "beta", 1.0f) : 1.0f;
    /* C: absent, one value, [C], [1, C] or [M, C] */
    int64_t M = Y->dims[0], cn = 0;
    bool full = false;
    const float *cv = NULL;
    if (c >= 0) {
        const pr_tensor *Ct = &g->tensors[c];
        if (!pr_is_init(g, c) || Ct->dtype != PRECIS_FLOAT32 || Ct->rank > 2) return PRECIS_OK;
        cn = pr_numel(Ct->rank, Ct->dims);
        cv = Ct->data;
        if (Ct->rank == 2 && Ct->dims[0] == M && M > 1 && Ct->dims[1] == C)
            full = true;
        else if (!(cn == 1 || (Ct->rank >= 1 && Ct->dims[Ct->rank - 1] == C && cn == C)))
            return PRECIS_OK;
    }
    int64_t K = B->dims[tb ? 1 : 0], nb = K * C;
    int64_t nc = full ? M * C : C;
    float *nbv = pr_edit_alloc((size_t)nb * sizeof(float));
    float *ncv = pr_edit_alloc((size_t)nc * sizeof(float));
    if (!nbv || !ncv) {
        free(nbv);
        free(ncv);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory folding BatchNormalization");
    }
    const float *bv = B->data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < C; j++) {
            int64_t i = tb ? j * K + k : k * C + j;
            nbv[i] = (float)((double)bv[i] * s[j]);
        }
    for (int64_t i = 0; i < nc; i++) {
        int64_t j = i % C;
        double cval = !cv ? 0.0 : full ? cv[i] : cn == 1 ? cv[0] : cv[j];
        ncv[i] = (float)((double)beta * cval * s[j] + shift[j]);
    }
    int64_t bd[2] = {B->dims[0], B->dims[1]}, cd[2] = {M, C};
    int tB = pr_graph_add_init(g, B->name, PRECIS_FLOAT32, 2, bd, nbv, e);
    if (tB < 0) {
        free(ncv);
        return PRECIS_ERR_OOM;
    }
    int tC = full ? pr_graph_add_init(g, g->nodes[p].name, PRECIS_FLOAT32, 2, cd, ncv, e)
                  : pr_graph_add_init(g, g->nodes[p].name, PRECIS_FLOAT32, 1, &C, ncv, e);
    if (tC < 0) return PRECIS_ERR_OOM;
    precis_status st;
    if (mm) pr_node_retype(g, p, PR_OP_Gemm, 0);
    if ((st = pr_node_set_input(g, u, p, 1, tB, e))) return st;
    if ((st = pr_node_set_input(g, u, p, 2, tC, e))) return st;
    if ((st = pr_node_set_float(g, p, "beta", 1.0f, e))) return st;
    if (pr_fuse_absorb(g, u, p, absorb, nabsorb, absorb[nabsorb - 1], e) < 0) return PRECIS_ERR_OOM;
    *done = true;
    return PRECIS_OK;
}

static precis_status bn_run(pr_graph *g, pr_pass_ctx *pc) {
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, pc->err);
    if (st) return st;
    for (int bi = 0; bi < g->n_nodes && !st; bi++) {
        if (pr_node_dead(&g->nodes[bi]) || g->nodes[bi].op != PR_OP_BatchNormalization) continue;
        int64_t C;
        double *s = NULL, *shift = NULL;
        if (!bn_params(g, bi, &C, &s, &shift)) continue;
        int x = g->nodes[bi].inputs[0];
        int p = pr_producer(g, x);
        bool done = false;
        int absorb[2] = {bi, bi}, nabsorb = 1;
        /* BN(Add(y, c)) with c per channel: fold c into the shift too */
        if (p >= 0 && g->nodes[p].op == PR_OP_Add && !g->nodes[p].domain[0] &&
            g->nodes[p].n_inputs == 2 && pr_single_consumer(g, &u, x) == bi) {
            float *cv = malloc((size_t)C * sizeof(float));
            const pr_node *an = &g->nodes[p];
            int y = -1;
            for (int i = 0; i < 2 && cv && y < 0; i++)
                if (!pr_is_init(g, an->inputs[i]) &&
                    pr_const_along_axis(g, an->inputs[1 - i], g->tensors[x].rank, 1, C, cv))
                    y = an->inputs[i];
            if (y >= 0 && pr_is_f32(g, y) && g->tensors[y].rank == g->tensors[x].rank) {
                for (int64_t i = 0; i < C; i++) shift[i] += (double)cv[i] * s[i];
                absorb[0] = p;
                nabsorb = 2;
                x = y;
                p = pr_producer(g, y);
            }
            free(cv);
        }
        if (p >= 0 && pr_single_consumer(g, &u, x) == absorb[0] && g->nodes[p].n_outputs >= 1 &&
            g->nodes[p].outputs[0] == x &&
            pr_prec_fusable(g, p, absorb, nabsorb, absorb[nabsorb - 1])) {
            st = fold_conv(g, &u, p, absorb, nabsorb, C, s, shift, &done, pc->err);
            if (!st && !done && nabsorb == 1)
                st = fold_gemm(g, &u, p, absorb, nabsorb, C, s, shift, &done, pc->err);
        }
        if (done) pc->changes++;
        free(s);
        free(shift);
    }
    pr_uses_free(&u);
    if (st) return st;
    return pr_graph_compact(g, pc->err);
}

const pr_pass pr_pass_fold_bn = {"fold_bn", bn_run};

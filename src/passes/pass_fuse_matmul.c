/* fuse_matmul: MatMul with a constant float32 2-D B, and Gemm, -> FusedMatMul
 *   Y = act2(act(alpha * (A' x B') + bias) + Z)
 * absorbing, while each intermediate is private to the next node:
 *   - Gemm's beta * C when C is constant (bias; [N]-shaped when C broadcasts
 *     over the last dim, else C's own shape);
 *   - a scalar Mul/Div on A's producer side (Mul(a, s) -> MatMul) -> alpha;
 *   - after Y, constant Mul/Div (a scalar -> alpha and bias; a vector along
 *     the last dim -> B's columns and bias, when B is constant) and Add/Sub
 *     of a constant along the last dim -> bias;
 *   - an activation (pr_match_act, Gelu included) -> act;
 *   - Add of a tensor of Y's exact shape -> Z; an activation -> act2.
 * A MatMul of two activations (attention) becomes FusedMatMul only when a
 * scalar scale is absorbed (alpha), e.g. softmax(Q K^T / sqrt(d)).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass.h"
#include "passes/prec_req.h"

typedef struct mfuse {
    pr_graph *g;
    pr_uses *u;
    pr_err *e;
    int ni, y;
    bool transB;
    bool wconst;  /* B is a constant 2-D float32 initializer */
    int64_t K, N; /* B' is [K, N] (N < 0: not known) */
    float alpha;
    float *w;      /* modified copy of B (NULL while unchanged) */
    float *bias;   /* bias values (NULL: none) */
    int bias_rank; /* 1: [N]; else the shape in bias_dims */
    int64_t bias_dims[PR_MAX_RANK];
    bool bias_dirty;
} mfuse;

static bool is_default(const pr_node *n, pr_op op) { return n->op == op && !n->domain[0]; }

static int64_t bias_numel(const mfuse *f) { return pr_numel(f->bias_rank, f->bias_dims); }

static precis_status oom(mfuse *f) {
    return pr_errf(f->e, PRECIS_ERR_OOM, "out of memory fusing MatMul");
}

/* Make sure there is an [N] bias (zeros when none). false: the bias has
 * another shape or N is unknown. */
static bool vec_bias(mfuse *f, precis_status *st) {
    *st = PRECIS_OK;
    if (f->N <= 0) return false;
    if (f->bias) return f->bias_rank == 1 && f->bias_dims[0] == f->N;
    f->bias = calloc((size_t)f->N, sizeof(float));
    if (!f->bias) {
        *st = oom(f);
        return false;
    }
    f->bias_rank = 1;
    f->bias_dims[0] = f->N;
    return true;
}

static precis_status ensure_w(mfuse *f) {
    if (f->w) return PRECIS_OK;
    size_t n = (size_t)(f->K * f->N);
    f->w = malloc(n * sizeof(float));
    if (!f->w) return oom(f);
    memcpy(f->w, f->g->tensors[f->g->nodes[f->ni].inputs[1]].data, n * sizeof(float));
    return PRECIS_OK;
}

/* One constant Mul/Div/Add/Sub after y. */
static precis_status affine_step(mfuse *f, bool *took) {
    pr_graph *g = f->g;
    *took = false;
    int c = pr_single_consumer(g, f->u, f->y);
    if (c < 0) return PRECIS_OK;
    const pr_node *n = &g->nodes[c];
    bool mul = is_default(n, PR_OP_Mul), div = is_default(n, PR_OP_Div);
    bool add = is_default(n, PR_OP_Add), sub = is_default(n, PR_OP_Sub);
    if (!(mul || div || add || sub) || n->n_inputs != 2 || n->n_outputs != 1) return PRECIS_OK;
    if ((div || sub) && n->inputs[0] != f->y) return PRECIS_OK;
    int k = pr_other_input(g, c, f->y);
    if (k < 0 || k == f->y || !pr_is_f32(g, n->outputs[0]) || !pr_is_init(g, k)) return PRECIS_OK;
    if (!pr_prec_fusable(g, f->ni, &c, 1, c)) return PRECIS_OK;
    int r = g->tensors[f->y].rank;
    precis_status st = PRECIS_OK;
    float sv;
    if ((mul || div) && pr_const_scalar(g, k, &sv) && g->tensors[k].rank <= r &&
        g->tensors[k].dtype == PRECIS_FLOAT32) {
        if (div && sv == 0.0f) return PRECIS_OK;
        float s = div ? 1.0f / sv : sv;
        /* Div by s: alpha / s rounds like x / s only up to an ulp */
        f->alpha *= s;
        if (f->bias) {
            int64_t nb = bias_numel(f);
            for (int64_t i = 0; i < nb; i++) f->bias[i] = div ? f->bias[i] / sv : f->bias[i] * sv;
            f->bias_dirty = true;
        }
    } else {
        if (f->N <= 0) return PRECIS_OK;
        float *v = malloc((size_t)f->N * sizeof(float));
        if (!v) return oom(f);
        bool ok = pr_const_along_axis(g, k, r, r - 1, f->N, v);
        if (ok && (mul || div) && !f->wconst) ok = false;
        for (int64_t i = 0; ok && div && i < f->N; i++) ok = v[i] != 0.0f;
        if (ok && !vec_bias(f, &st)) ok = false;
        if (ok && (mul || div) && (st = ensure_w(f))) ok = false;
        if (!ok) {
            free(v);
            return st;
        }
        for (int64_t j = 0; j < f->N; j++) {
            if (mul || div) {
                for (int64_t kk = 0; kk < f->K; kk++) {
                    float *p = f->transB ? &f->w[j * f->K + kk] : &f->w[kk * f->N + j];
                    *p = mul ? *p * v[j] : *p / v[j];
                }
                f->bias[j] = mul ? f->bias[j] * v[j] : f->bias[j] / v[j];
            } else {
                f->bias[j] = add ? f->bias[j] + v[j] : f->bias[j] - v[j];
            }
        }
        f->bias_dirty = true;
        free(v);
    }
    int ni = pr_fuse_absorb(g, f->u, f->ni, &c, 1, c, f->e);
    if (ni < 0) return PRECIS_ERR_OOM;
    f->ni = ni;
    f->y = g->nodes[ni].outputs[0];
    *took = true;
    return PRECIS_OK;
}

/* A scalar Mul/Div producing A, used only here: -> alpha. */
static int prescale_node(const pr_graph *g, const pr_uses *u, int ni, float *s, int *x) {
    int a = g->nodes[ni].inputs[0];
    int p = pr_producer(g, a);
    if (p < 0 || pr_single_consumer(g, u, a) != ni) return -1;
    const pr_node *n = &g->nodes[p];
    bool mul = is_default(n, PR_OP_Mul), div = is_default(n, PR_OP_Div);
    if (!(mul || div) || n->n_inputs != 2 || n->n_outputs != 1) return -1;
    int xi = -1;
    for (int i = 0; i < 2; i++) {
        float v;
        int o = n->inputs[1 - i];
        if ((div && i != 0) || !pr_const_scalar(g, o, &v) || g->tensors[o].dtype != PRECIS_FLOAT32)
            continue;
        if (!pr_is_f32(g, n->inputs[i]) || pr_is_init(g, n->inputs[i])) continue;
        if (g->tensors[o].rank > g->tensors[n->inputs[i]].rank) continue;
        if (div && v == 0.0f) continue;
        *s = div ? 1.0f / v : v;
        *x = n->inputs[i];
        xi = i;
        break;
    }
    return xi < 0 ? -1 : p;
}

/* Does a scalar Mul/Div follow y privately? */
static bool postscale_follows(const pr_graph *g, const pr_uses *u, int y) {
    int c = pr_single_consumer(g, u, y);
    if (c < 0) return false;
    const pr_node *n = &g->nodes[c];
    bool mul = is_default(n, PR_OP_Mul), div = is_default(n, PR_OP_Div);
    if (!(mul || div) || n->n_inputs != 2 || (div && n->inputs[0] != y)) return false;
    int k = pr_other_input(g, c, y);
    float v;
    return k >= 0 && k != y && pr_const_scalar(g, k, &v) && g->tensors[k].dtype == PRECIS_FLOAT32 &&
           g->tensors[k].rank <= g->tensors[y].rank && (mul || v != 0.0f);
}

/* Is node ni a MatMul or Gemm to fuse? Sets up f (no graph change). */
static bool candidate(pr_graph *g, pr_uses *u, int ni, mfuse *f, int *pre, float *pre_s,
                      int *pre_x) {
    const pr_node *n = &g->nodes[ni];
    bool mm = is_default(n, PR_OP_MatMul), gemm = is_default(n, PR_OP_Gemm);
    *pre = -1;
    if (!(mm || gemm) || n->n_outputs != 1 || n->n_inputs < 2) return false;
    int a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    if (!pr_is_f32(g, a) || !pr_is_f32(g, b) || !pr_is_f32(g, y)) return false;
    memset(f, 0, sizeof *f);
    f->ni = ni;
    f->y = y;
    f->alpha = 1.0f;
    f->N = -1;
    const pr_tensor *B = &g->tensors[b], *Y = &g->tensors[y];
    f->wconst = pr_is_init(g, b) && B->rank == 2;
    if (gemm) {
        if (n->opset < 7 || g->tensors[a].rank != 2 || B->rank != 2 || Y->rank != 2) return false;
        f->transB = pr_attr_int(n, "transB", 0) != 0;
        f->alpha = pr_attr_float(n, "alpha", 1.0f);
        int c = pr_node_in(n, 2);
        if (c >= 0) {
            const pr_tensor *Ct = &g->tensors[c];
            if (!pr_is_init(g, c) || Ct->dtype != PRECIS_FLOAT32 || Ct->rank > 2) return false;
        }
    } else {
        if (n->n_inputs != 2 || (!f->wconst && g->tensors[a].rank < 2)) return false;
    }
    if (f->wconst) {
        f->K = B->dims[f->transB ? 1 : 0];
        f->N = B->dims[f->transB ? 0 : 1];
    } else if (Y->rank >= 1 && pr_dim_known(Y->dims[Y->rank - 1])) {
        f->N = Y->dims[Y->rank - 1];
    }
    if (mm && !f->wconst) {
        /* attention: only with a scalar scale to absorb */
        *pre = prescale_node(g, u, ni, pre_s, pre_x);
        if (*pre < 0 && !postscale_follows(g, u, y)) return false;
    } else if (mm) {
        *pre = prescale_node(g, u, ni, pre_s, pre_x);
    }
    return true;
}

/* Gemm's beta * C -> bias. */
static precis_status gemm_bias(mfuse *f) {
    const pr_node *n = &f->g->nodes[f->ni];
    int c = pr_node_in(n, 2);
    if (c < 0) return PRECIS_OK;
    float beta = pr_attr_float(n, "beta", 1.0f);
    const pr_tensor *Ct = &f->g->tensors[c];
    const float *cv = Ct->data;
    int64_t cn = pr_numel(Ct->rank, Ct->dims);
    bool vec =
        f->N > 0 && (cn == 1 || (Ct->rank >= 1 && Ct->dims[Ct->rank - 1] == f->N && cn == f->N));
    if (vec) {
        precis_status st;
        if (!vec_bias(f, &st)) return st ? st : pr_errf(f->e, PRECIS_ERR_INTERNAL, "gemm bias");
        for (int64_t j = 0; j < f->N; j++) f->bias[j] = beta * cv[cn == 1 ? 0 : j];
    } else {
        f->bias = malloc((size_t)(cn ? cn : 1) * sizeof(float));
        if (!f->bias) return oom(f);
        for (int64_t i = 0; i < cn; i++) f->bias[i] = beta * cv[i];
        f->bias_rank = Ct->rank;
        memcpy(f->bias_dims, Ct->dims, sizeof f->bias_dims);
    }
    f->bias_dirty = true;
    return PRECIS_OK;
}

static precis_status act_step(mfuse *f, const char *prefix, bool *took) {
    pr_act_match m;
    *took = false;
    if (!pr_match_act(f->g, f->u, f->y, true, &m)) return PRECIS_OK;
    if (!pr_prec_fusable(f->g, f->ni, m.nodes, m.n_nodes, m.out_node)) return PRECIS_OK;
    precis_status st = pr_node_set_act(f->g, f->ni, prefix, &m.act, f->e);
    if (st) return st;
    int ni = pr_fuse_absorb(f->g, f->u, f->ni, m.nodes, m.n_nodes, m.out_node, f->e);
    if (ni < 0) return PRECIS_ERR_OOM;
    f->ni = ni;
    f->y = f->g->nodes[ni].outputs[0];
    *took = true;
    return PRECIS_OK;
}

static precis_status commit(mfuse *f) {
    pr_graph *g = f->g;
    precis_status st;
    char base[512];
    if (f->w) {
        int64_t d[2] = {f->transB ? f->N : f->K, f->transB ? f->K : f->N};
        const char *bn = g->tensors[g->nodes[f->ni].inputs[1]].name;
        int t = pr_graph_add_init_f32(g, bn, 2, d, f->w, f->e);
        if (t < 0) return PRECIS_ERR_OOM;
        if ((st = pr_node_set_input(g, f->u, f->ni, 1, t, f->e))) return st;
    }
    if (f->bias && f->bias_dirty) {
        snprintf(base, sizeof base, "%s_bias", g->nodes[f->ni].name);
        int t = pr_graph_add_init_f32(g, base, f->bias_rank, f->bias_dims, f->bias, f->e);
        if (t < 0) return PRECIS_ERR_OOM;
        if ((st = pr_node_set_input(g, f->u, f->ni, 2, t, f->e))) return st;
    } else if ((st = pr_node_set_input(g, f->u, f->ni, 2, -1, f->e))) {
        return st;
    }
    return pr_node_set_float(g, f->ni, "alpha", f->alpha, f->e);
}

static precis_status fuse_one(pr_graph *g, pr_uses *u, mfuse *f, int pre, float pre_s, int pre_x) {
    precis_status st = PRECIS_OK;
    int ni = f->ni;
    const pr_node *n = &g->nodes[ni];
    bool gemm = is_default(n, PR_OP_Gemm);
    int64_t transA = gemm ? pr_attr_int(n, "transA", 0) : 0;
    if (pre >= 0 && !pr_prec_fusable(g, ni, &pre, 1, -1)) pre = -1;
    if (gemm) PR_TRY(gemm_bias(f));
    /* the node is now a FusedMatMul (its own attributes replaced) */
    pr_node_retype(g, ni, PR_OP_FusedMatMul, 1);
    pr_node_clear_attrs(g, ni);
    if (transA) PR_TRY(pr_node_set_int(g, ni, "transA", 1, f->e));
    if (f->transB) PR_TRY(pr_node_set_int(g, ni, "transB", 1, f->e));
    PR_TRY(pr_node_set_input(g, u, ni, 2, -1, f->e));
    PR_TRY(pr_node_set_input(g, u, ni, 3, -1, f->e));
    if (pre >= 0) {
        PR_TRY(pr_node_set_input(g, u, ni, 0, pre_x, f->e));
        f->alpha *= pre_s;
        if (pr_fuse_absorb(g, u, ni, &pre, 1, -1, f->e) < 0) {
            st = PRECIS_ERR_OOM;
            goto fail;
        }
    }
    for (bool took = true; took;) PR_TRY(affine_step(f, &took));
    bool took;
    PR_TRY(act_step(f, "act", &took));
    int z, c = pr_match_residual(g, u, f->y, &z);
    if (c >= 0 && pr_prec_fusable(g, f->ni, &c, 1, c)) {
        PR_TRY(pr_node_set_input(g, u, f->ni, 3, z, f->e));
        int k = pr_fuse_absorb(g, u, f->ni, &c, 1, c, f->e);
        if (k < 0) {
            st = PRECIS_ERR_OOM;
            goto fail;
        }
        f->ni = k;
        f->y = g->nodes[k].outputs[0];
        PR_TRY(act_step(f, "act2", &took));
    }
    PR_TRY(commit(f));
fail:
    free(f->w);
    free(f->bias);
    return st;
}

static precis_status mm_run(pr_graph *g, pr_pass_ctx *pc) {
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, pc->err);
    if (st) return st;
    for (int ni = 0; ni < g->n_nodes && !st; ni++) {
        if (pr_node_dead(&g->nodes[ni])) continue;
        mfuse f;
        int pre, pre_x = -1;
        float pre_s = 1.0f;
        if (!candidate(g, &u, ni, &f, &pre, &pre_s, &pre_x)) continue;
        f.g = g;
        f.u = &u;
        f.e = pc->err;
        st = fuse_one(g, &u, &f, pre, pre_s, pre_x);
        if (!st) pc->changes++;
    }
    pr_uses_free(&u);
    if (st) return st;
    return pr_graph_compact(g, pc->err);
}

const pr_pass pr_pass_fuse_matmul = {"fuse_matmul", mm_run};

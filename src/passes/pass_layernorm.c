/* fuse_layernorm: the decomposed layer normalization over the last axis
 *
 *   m = ReduceMean(x, [-1]); d = Sub(x, m); q = Pow(d, 2) | Mul(d, d)
 *   v = ReduceMean(q, [-1]); s = Sqrt(Add(v, eps)); n = Div(d, s)
 *   [n = Mul(n, gamma)] [n = Add(n, beta)]
 *
 * -> LayerNormalization(x, gamma, beta; axis = -1, epsilon = eps) (opset 17
 * semantics), gamma/beta as [D] initializers (ones/zeros when absent).
 * ReduceMean axes come from the attribute (opset < 18) or the constant input
 * (opset 18); keepdims must be 1. Every intermediate must be private.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/linalg.h"
#include "passes/graph_edit.h"
#include "passes/pass.h"
#include "passes/prec_req.h"

static bool is_default(const pr_graph *g, int ni, pr_op op) {
    return ni >= 0 && !pr_node_dead(&g->nodes[ni]) && g->nodes[ni].op == op &&
           !g->nodes[ni].domain[0];
}

/* ReduceMean node ni over exactly the last axis of its rank-r input, keepdims. */
static bool mean_last(const pr_graph *g, int ni, int r) {
    if (!is_default(g, ni, PR_OP_ReduceMean)) return false;
    const pr_node *n = &g->nodes[ni];
    if (pr_attr_int(n, "keepdims", 1) != 1 || n->n_outputs != 1) return false;
    int64_t ax;
    if (pr_reduce_axes_from_input(n, PR_OP_ReduceMean)) {
        int a = pr_node_in(n, 1);
        if (!pr_is_init(g, a) || pr_numel(g->tensors[a].rank, g->tensors[a].dims) != 1)
            return false;
        if (g->tensors[a].dtype != PRECIS_INT64) return false;
        ax = *(const int64_t *)g->tensors[a].data;
    } else {
        const int64_t *axes;
        if (n->n_inputs != 1 || pr_attr_ints(n, "axes", &axes) != 1) return false;
        ax = axes[0];
    }
    return ax == -1 || ax == r - 1;
}

/* The only consumer of t if it is op (default domain), else -1. */
static int next(const pr_graph *g, const pr_uses *u, int t, pr_op op) {
    int c = pr_single_consumer(g, u, t);
    return is_default(g, c, op) && g->nodes[c].n_outputs == 1 ? c : -1;
}

/* Constant float32 c broadcasting along the last axis (size D) of a rank-r
 * tensor: values into v. */
static bool last_axis_const(const pr_graph *g, int c, int r, int64_t D, float *v) {
    return pr_const_along_axis(g, c, r, r - 1, D, v);
}

typedef struct lnm {
    int nodes[10];
    int n_nodes;
    int x, out;
    float eps;
    int gamma, beta; /* node index of Mul / Add, or -1 */
} lnm;

static bool match(const pr_graph *g, const pr_uses *u, int r1, lnm *m, float *gv, float *bv) {
    const pr_node *n1 = &g->nodes[r1];
    int x = n1->inputs[0];
    if (!pr_is_f32(g, x)) return false;
    int r = g->tensors[x].rank;
    if (r < 1 || !pr_dim_known(g->tensors[x].dims[r - 1]) || !mean_last(g, r1, r)) return false;
    int64_t D = g->tensors[x].dims[r - 1];
    int mean = n1->outputs[0];
    int sub = next(g, u, mean, PR_OP_Sub);
    if (sub < 0 || g->nodes[sub].inputs[0] != x || g->nodes[sub].inputs[1] != mean) return false;
    int d = g->nodes[sub].outputs[0];
    if (pr_is_graph_output(g, d)) return false;
    int cs[3];
    int nc = pr_consumers(g, d, cs, 3);
    if (nc != pr_uses_of(u, d) || (nc != 2 && nc != 3)) return false;
    int sq = -1, dv = -1;
    for (int i = 0; i < nc; i++) {
        int c = cs[i];
        const pr_node *cn = &g->nodes[c];
        float e;
        if (is_default(g, c, PR_OP_Pow) && nc == 2 && cn->inputs[0] == d &&
            pr_const_scalar(g, cn->inputs[1], &e) && e == 2.0f)
            sq = c;
        else if (is_default(g, c, PR_OP_Mul) && nc == 3 && cn->inputs[0] == d && cn->inputs[1] == d)
            sq = c;
        else if (is_default(g, c, PR_OP_Div) && cn->inputs[0] == d && cn->inputs[1] != d)
            dv = c;
        else
            return false;
    }
    if (sq < 0 || dv < 0) return false;
    int r2 = pr_single_consumer(g, u, g->nodes[sq].outputs[0]);
    if (r2 < 0 || g->nodes[r2].inputs[0] != g->nodes[sq].outputs[0] || !mean_last(g, r2, r))
        return false;
    int ad = next(g, u, g->nodes[r2].outputs[0], PR_OP_Add);
    if (ad < 0) return false;
    int et = pr_other_input(g, ad, g->nodes[r2].outputs[0]);
    float eps;
    if (et < 0 || !pr_const_scalar(g, et, &eps) || g->tensors[et].dtype != PRECIS_FLOAT32 ||
        g->tensors[et].rank > r)
        return false;
    int sq2 = next(g, u, g->nodes[ad].outputs[0], PR_OP_Sqrt);
    if (sq2 < 0 || pr_single_consumer(g, u, g->nodes[sq2].outputs[0]) != dv ||
        g->nodes[dv].inputs[1] != g->nodes[sq2].outputs[0])
        return false;
    m->n_nodes = 0;
    int list[] = {r1, sub, sq, r2, ad, sq2, dv};
    for (int i = 0; i < 7; i++) m->nodes[m->n_nodes++] = list[i];
    int out = g->nodes[dv].outputs[0];
    if (!pr_is_f32(g, out)) return false;
    m->gamma = m->beta = -1;
    for (int64_t j = 0; j < D; j++) gv[j] = 1.0f, bv[j] = 0.0f;
    int c = next(g, u, out, PR_OP_Mul);
    if (c >= 0) {
        int k = pr_other_input(g, c, out);
        if (k >= 0 && k != out && last_axis_const(g, k, r, D, gv)) {
            m->gamma = c;
            m->nodes[m->n_nodes++] = c;
            out = g->nodes[c].outputs[0];
        } else {
            for (int64_t j = 0; j < D; j++) gv[j] = 1.0f;
        }
    }
    c = next(g, u, out, PR_OP_Add);
    if (c >= 0) {
        int k = pr_other_input(g, c, out);
        if (k >= 0 && k != out && last_axis_const(g, k, r, D, bv)) {
            m->beta = c;
            m->nodes[m->n_nodes++] = c;
            out = g->nodes[c].outputs[0];
        } else {
            for (int64_t j = 0; j < D; j++) bv[j] = 0.0f;
        }
    }
    m->x = x;
    m->out = out;
    m->eps = eps;
    return true;
}

static precis_status ln_run(pr_graph *g, pr_pass_ctx *pc) {
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, pc->err);
    if (st) return st;
    float *gv = NULL, *bv = NULL;
    for (int ni = 0; ni < g->n_nodes && !st; ni++) {
        if (!is_default(g, ni, PR_OP_ReduceMean)) continue;
        int x = g->nodes[ni].inputs[0];
        if (!pr_is_f32(g, x) || g->tensors[x].rank < 1) continue;
        int64_t D = g->tensors[x].dims[g->tensors[x].rank - 1];
        if (D <= 0) continue;
        free(gv);
        free(bv);
        gv = malloc((size_t)D * sizeof(float));
        bv = malloc((size_t)D * sizeof(float));
        if (!gv || !bv) {
            st = pr_errf(pc->err, PRECIS_ERR_OOM, "out of memory fusing LayerNorm");
            break;
        }
        lnm m;
        if (!match(g, &u, ni, &m, gv, bv) ||
            !pr_prec_fusable(g, ni, m.nodes + 1, m.n_nodes - 1, m.nodes[m.n_nodes - 1]))
            continue;
        char base[512];
        snprintf(base, sizeof base, "%s_scale", g->nodes[ni].name);
        int ts = pr_graph_add_init_f32(g, base, 1, &D, gv, pc->err);
        snprintf(base, sizeof base, "%s_bias", g->nodes[ni].name);
        int tb = ts >= 0 ? pr_graph_add_init_f32(g, base, 1, &D, bv, pc->err) : -1;
        if (tb < 0) {
            st = PRECIS_ERR_OOM;
            break;
        }
        /* the first ReduceMean becomes the LayerNormalization */
        int last = m.nodes[m.n_nodes - 1];
        pr_node_retype(g, ni, PR_OP_LayerNormalization, 17);
        pr_node_clear_attrs(g, ni);
        if ((st = pr_node_set_int(g, ni, "axis", -1, pc->err))) break;
        if ((st = pr_node_set_float(g, ni, "epsilon", m.eps, pc->err))) break;
        if ((st = pr_node_set_input(g, &u, ni, 1, ts, pc->err))) break;
        if ((st = pr_node_set_input(g, &u, ni, 2, tb, pc->err))) break;
        g->nodes[ni].n_inputs = 3;
        if (pr_fuse_absorb(g, &u, ni, m.nodes + 1, m.n_nodes - 1, last, pc->err) < 0) {
            st = PRECIS_ERR_OOM;
            break;
        }
        pc->changes++;
    }
    free(gv);
    free(bv);
    pr_uses_free(&u);
    if (st) return st;
    return pr_graph_compact(g, pc->err);
}

const pr_pass pr_pass_fuse_layernorm = {"fuse_layernorm", ln_run};

/* fuse_conv: Conv with constant float32 weights -> FusedConv, absorbing what
 * follows it while each intermediate tensor is private to the next node (one
 * use, not a graph output):
 *
 *   0. before it: a per-input-channel Mul/Div by a constant (into W) and, when
 *      the Conv has no padding, Add/Sub of a constant (into B) producing X
 *      (e.g. the learnable affine after PP-LCNet's activations);
 *   1. per-channel affine ops with a constant operand that broadcasts along
 *      the channel axis only ([1,C,1,1], [C,1,1], one value, ...):
 *      Mul/Div scale W and B, Add/Sub shift B;
 *   2. an activation (graph_edit.h pr_match_act: Relu, LeakyRelu, Clip,
 *      Sigmoid, HardSigmoid, HardSwish, Tanh, Swish and the decomposed
 *      x*sigmoid(x), x*hardsigmoid(x), x*clip(x+3,0,6)/6 forms) -> act;
 *   3. Add of another tensor of the output's exact shape -> Z (residual);
 *   4. an activation after that -> act2;
 *   3'. or, with an activation and no residual, a scalar affine (Mul/Div and
 *      Add/Sub by one-value constants) -> act2 = Affine.
 *
 * FusedConv(X, W, B, Z): Y = act2(act(Conv(X, W, B)) + Z) (Z = 0 when absent). New W/B are new
 * initializers (the originals may be shared). A ConvTranspose with constant
 * weights stays a ConvTranspose but takes in step 1 (its bias Add, mostly).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass.h"
#include "passes/prec_req.h"

typedef struct cfuse {
    pr_graph *g;
    pr_uses *u;
    pr_err *e;
    int ni;                /* the fused node (moves as it absorbs) */
    int y;                 /* its current output tensor */
    int64_t C;             /* output channels */
    int64_t nw;            /* weights */
    bool tr;               /* ConvTranspose: W is [Cin, C/group, k...] */
    int64_t per, ipg, cpg; /* weights per W row, W rows per group, channels per group */
    float *w, *b;          /* modified copies of W / B (NULL while unchanged) */
} cfuse;

/* Output channel of weight i. */
static int64_t oc_of(const cfuse *f, int64_t i) {
    if (!f->tr) return i / f->per;
    int64_t row = i / f->per, j = (i % f->per) / (f->per / f->cpg);
    return (row / f->ipg) * f->cpg + j;
}

static bool is_default(const pr_node *n, pr_op op) { return n->op == op && !n->domain[0]; }

static precis_status ensure_b(cfuse *f) {
    if (f->b) return PRECIS_OK;
    f->b = calloc((size_t)f->C, sizeof(float));
    if (!f->b) return pr_errf(f->e, PRECIS_ERR_OOM, "out of memory fusing Conv");
    int bt = pr_node_in(&f->g->nodes[f->ni], 2);
    if (bt >= 0) memcpy(f->b, f->g->tensors[bt].data, (size_t)f->C * sizeof(float));
    return PRECIS_OK;
}

static precis_status ensure_w(cfuse *f) {
    if (f->w) return PRECIS_OK;
    size_t n = (size_t)f->nw;
    f->w = malloc(n * sizeof(float));
    if (!f->w) return pr_errf(f->e, PRECIS_ERR_OOM, "out of memory fusing Conv");
    memcpy(f->w, f->g->tensors[f->g->nodes[f->ni].inputs[1]].data, n * sizeof(float));
    return PRECIS_OK;
}

/* Step 1: one per-channel affine op after y. *took set when absorbed. */
static precis_status affine_step(cfuse *f, bool *took) {
    pr_graph *g = f->g;
    *took = false;
    int c = pr_single_consumer(g, f->u, f->y);
    if (c < 0) return PRECIS_OK;
    const pr_node *n = &g->nodes[c];
    bool mul = is_default(n, PR_OP_Mul), div = is_default(n, PR_OP_Div);
    bool add = is_default(n, PR_OP_Add), sub = is_default(n, PR_OP_Sub);
    if (!(mul || div || add || sub) || n->n_inputs != 2 || n->n_outputs != 1) return PRECIS_OK;
    if ((div || sub) && n->inputs[0] != f->y) return PRECIS_OK;
    /* a constant along the channel axis leaves y's shape unchanged */
    int k = pr_other_input(g, c, f->y);
    if (k < 0 || k == f->y || !pr_is_f32(g, n->outputs[0])) return PRECIS_OK;
    if (!pr_prec_fusable(g, f->ni, &c, 1, c)) return PRECIS_OK;
    float *v = malloc((size_t)f->C * sizeof(float));
    if (!v) return pr_errf(f->e, PRECIS_ERR_OOM, "out of memory fusing Conv");
    int r = g->tensors[f->y].rank;
    if (!pr_const_along_axis(g, k, r, 1, f->C, v)) {
        free(v);
        return PRECIS_OK;
    }
    if (div)
        for (int64_t i = 0; i < f->C; i++)
            if (v[i] == 0.0f) {
                free(v);
                return PRECIS_OK;
            }
    precis_status st = ensure_b(f);
    if (!st && (mul || div)) st = ensure_w(f);
    if (st) {
        free(v);
        return st;
    }
    if (mul || div)
        for (int64_t i = 0; i < f->nw; i++) {
            float sc = v[oc_of(f, i)];
            f->w[i] = mul ? f->w[i] * sc : f->w[i] / sc;
        }
    for (int64_t oc = 0; oc < f->C; oc++) {
        if (mul)
            f->b[oc] *= v[oc];
        else if (div)
            f->b[oc] /= v[oc];
        else if (add)
            f->b[oc] += v[oc];
        else
            f->b[oc] -= v[oc];
    }
    free(v);
    int ni = pr_fuse_absorb(g, f->u, f->ni, &c, 1, c, f->e);
    if (ni < 0) return PRECIS_ERR_OOM;
    f->ni = ni;
    f->y = g->nodes[ni].outputs[0];
    *took = true;
    return PRECIS_OK;
}

/* Zero padding: every output reads only real input (no implicit zeros). */
static bool no_padding(const pr_node *n) {
    const char *ap = pr_attr_str(n, "auto_pad", "NOTSET");
    if (!strcmp(ap, "VALID")) return true;
    if (strcmp(ap, "NOTSET") != 0) return false;
    const int64_t *pads;
    int np = pr_attr_ints(n, "pads", &pads);
    for (int i = 0; i < np; i++)
        if (pads[i] != 0) return false;
    return true;
}

/* Step 0: a per-input-channel affine op producing X, used only by this Conv:
 *   Conv(W, x * a) = Conv(W * a[ci], x)
 *   Conv(W, x + c) = Conv(W, x) + sum_{ci,k} W[oc,ci,k] c[ci]  (no padding)
 * The Conv then reads x. *took set when absorbed. */
static precis_status input_affine_step(cfuse *f, bool *took) {
    pr_graph *g = f->g;
    *took = false;
    const pr_node *cn = &g->nodes[f->ni];
    int xin = cn->inputs[0];
    int p = pr_producer(g, xin);
    if (p < 0 || f->tr || pr_single_consumer(g, f->u, xin) != f->ni) return PRECIS_OK;
    const pr_node *n = &g->nodes[p];
    bool mul = is_default(n, PR_OP_Mul), div = is_default(n, PR_OP_Div);
    bool add = is_default(n, PR_OP_Add), sub = is_default(n, PR_OP_Sub);
    if (!(mul || div || add || sub) || n->n_inputs != 2 || n->n_outputs != 1) return PRECIS_OK;
    if ((add || sub) && !no_padding(cn)) return PRECIS_OK;
    if (!pr_prec_fusable(g, f->ni, &p, 1, -1)) return PRECIS_OK;
    int r = g->tensors[xin].rank;
    int64_t group = pr_attr_int(cn, "group", 1);
    int64_t cin = g->tensors[cn->inputs[1]].dims[1] * group;
    float *v = malloc((size_t)cin * sizeof(float));
    if (!v) return pr_errf(f->e, PRECIS_ERR_OOM, "out of memory fusing Conv");
    int t = -1;
    for (int i = 0; i < 2 && t < 0; i++) {
        int a = n->inputs[i], c = n->inputs[1 - i];
        if ((div || sub) && i != 0) break;
        if (pr_is_init(g, a) || !pr_is_f32(g, a) || g->tensors[a].rank != r) continue;
        if (pr_const_along_axis(g, c, r, 1, cin, v)) t = a;
    }
    for (int64_t i = 0; t >= 0 && div && i < cin; i++)
        if (v[i] == 0.0f) t = -1;
    precis_status st = PRECIS_OK;
    if (t < 0 || (st = ensure_b(f)) || (st = ensure_w(f))) {
        free(v);
        return st;
    }
    /* weight i: output channel i / per, input channel within the group
     * (i % per) / ksp, group of the output channel */
    int64_t cpg_in = cin / group, cpg_out = f->C / group, ksp = f->per / cpg_in;
    for (int64_t oc = 0; oc < f->C; oc++) {
        double acc = 0; /* the bias term in double: it sums a whole filter */
        for (int64_t i = oc * f->per; i < (oc + 1) * f->per; i++) {
            int64_t ci = (oc / cpg_out) * cpg_in + (i % f->per) / ksp;
            if (mul)
                f->w[i] *= v[ci];
            else if (div)
                f->w[i] /= v[ci];
            else
                acc += (double)f->w[i] * v[ci];
        }
        if (add || sub) f->b[oc] = (float)((double)f->b[oc] + (add ? acc : -acc));
    }
    free(v);
    if ((st = pr_node_set_input(g, f->u, f->ni, 0, t, f->e))) return st;
    if (pr_fuse_absorb(g, f->u, f->ni, &p, 1, -1, f->e) < 0) return PRECIS_ERR_OOM;
    *took = true;
    return PRECIS_OK;
}

/* Commit modified W/B as new initializers. */
static precis_status commit(cfuse *f) {
    pr_graph *g = f->g;
    precis_status st = PRECIS_OK;
    const pr_node *n = &g->nodes[f->ni];
    if (f->w) {
        const pr_tensor *W = &g->tensors[n->inputs[1]];
        int64_t dims[PR_MAX_RANK];
        int rank = W->rank;
        memcpy(dims, W->dims, sizeof dims);
        int t = pr_graph_add_init_f32(g, W->name, rank, dims, f->w, f->e);
        if (t < 0) return PRECIS_ERR_OOM;
        if ((st = pr_node_set_input(g, f->u, f->ni, 1, t, f->e))) return st;
    }
    if (f->b) {
        char base[512];
        snprintf(base, sizeof base, "%s_bias", g->nodes[f->ni].name);
        int t = pr_graph_add_init_f32(g, base, 1, &f->C, f->b, f->e);
        if (t < 0) return PRECIS_ERR_OOM;
        if ((st = pr_node_set_input(g, f->u, f->ni, 2, t, f->e))) return st;
    }
    return PRECIS_OK;
}

/* An activation after y -> attributes <prefix>. */
static precis_status act_step(cfuse *f, const char *prefix, bool allow_gelu, bool *took) {
    pr_act_match m;
    *took = false;
    if (!pr_match_act(f->g, f->u, f->y, allow_gelu, &m)) return PRECIS_OK;
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

/* Scalar Mul/Div and Add/Sub (one or two of them) after the activation ->
 * act2 = Affine(alpha, beta): PP-LCNetV3's learnable affine after hardswish,
 * which the next Conv cannot take when it pads. There is no Z then, so act2
 * applies to act's output. */
static precis_status post_affine_step(cfuse *f, bool *took) {
    pr_graph *g = f->g;
    *took = false;
    pr_act a = {PR_ACT_AFFINE, 1.0f, 0.0f};
    int nodes[2], nn = 0, y = f->y;
    while (nn < 2) {
        int c = pr_single_consumer(g, f->u, y);
        if (c < 0) break;
        const pr_node *n = &g->nodes[c];
        bool mul = is_default(n, PR_OP_Mul), div = is_default(n, PR_OP_Div);
        bool add = is_default(n, PR_OP_Add), sub = is_default(n, PR_OP_Sub);
        if (!(mul || div || add || sub) || n->n_inputs != 2 || n->n_outputs != 1) break;
        if ((div || sub) && n->inputs[0] != y) break;
        int k = pr_other_input(g, c, y);
        float v;
        if (k < 0 || k == y || !pr_const_scalar(g, k, &v) || !isfinite(v) || (div && v == 0.0f) ||
            g->tensors[k].rank > g->tensors[y].rank || !pr_is_f32(g, n->outputs[0]))
            break;
        if (mul || div) {
            float s = mul ? v : 1.0f / v;
            a.alpha *= s;
            a.beta *= s;
        } else {
            a.beta += add ? v : -v;
        }
        nodes[nn++] = c;
        y = n->outputs[0];
    }
    if (!nn || !pr_prec_fusable(g, f->ni, nodes, nn, nodes[nn - 1])) return PRECIS_OK;
    precis_status st = pr_node_set_act(g, f->ni, "act2", &a, f->e);
    if (st) return st;
    int ni = pr_fuse_absorb(g, f->u, f->ni, nodes, nn, nodes[nn - 1], f->e);
    if (ni < 0) return PRECIS_ERR_OOM;
    f->ni = ni;
    f->y = g->nodes[ni].outputs[0];
    *took = true;
    return PRECIS_OK;
}

/* Add(y, z) with z of y's exact shape -> Z. */
static precis_status residual_step(cfuse *f, bool *took) {
    int z;
    *took = false;
    int c = pr_match_residual(f->g, f->u, f->y, &z);
    if (c < 0 || !pr_prec_fusable(f->g, f->ni, &c, 1, c)) return PRECIS_OK;
    precis_status st = pr_node_set_input(f->g, f->u, f->ni, 3, z, f->e);
    if (st) return st;
    int k = pr_fuse_absorb(f->g, f->u, f->ni, &c, 1, c, f->e);
    if (k < 0) return PRECIS_ERR_OOM;
    f->ni = k;
    f->y = f->g->nodes[k].outputs[0];
    *took = true;
    return PRECIS_OK;
}

/* A Conv (or ConvTranspose) with constant float32 weights and bias. */
static bool conv_candidate(const pr_graph *g, int ni, cfuse *f) {
    const pr_node *n = &g->nodes[ni];
    bool tr = is_default(n, PR_OP_ConvTranspose);
    if ((!is_default(n, PR_OP_Conv) && !tr) || n->n_inputs < 2 || n->n_inputs > 3 ||
        n->n_outputs != 1)
        return false;
    int x = n->inputs[0], w = n->inputs[1], b = pr_node_in(n, 2), y = n->outputs[0];
    if (!pr_is_f32(g, x) || !pr_is_f32(g, y) || !pr_is_init(g, w)) return false;
    const pr_tensor *W = &g->tensors[w];
    if (W->dtype != PRECIS_FLOAT32 || W->rank < 3 || g->tensors[y].rank != W->rank) return false;
    int64_t nw = pr_numel(W->rank, W->dims), group = pr_attr_int(n, "group", 1);
    if (nw <= 0 || W->dims[0] <= 0 || W->dims[1] <= 0 || group < 1 || W->dims[0] % group)
        return false;
    int64_t C = tr ? W->dims[1] * group : W->dims[0];
    if (b >= 0 && (!pr_is_init(g, b) || g->tensors[b].dtype != PRECIS_FLOAT32 ||
                   pr_numel(g->tensors[b].rank, g->tensors[b].dims) != C))
        return false;
    memset(f, 0, sizeof *f);
    f->ni = ni;
    f->y = y;
    f->C = C;
    f->nw = nw;
    f->tr = tr;
    f->per = nw / W->dims[0];
    f->ipg = W->dims[0] / group;
    f->cpg = W->dims[1];
    return true;
}

/* Fuse at f->ni; *changed when the graph changed. */
static precis_status fuse_one(cfuse *f, bool *changed) {
    pr_graph *g = f->g;
    precis_status st = PRECIS_OK;
    bool took = true;
    *changed = !f->tr;
    if (!f->tr) {
        pr_node_retype(g, f->ni, PR_OP_FusedConv, 1);
        PR_TRY(pr_node_set_input(g, f->u, f->ni, 3, -1, f->e));
    }
    while (took) {
        PR_TRY(input_affine_step(f, &took));
        *changed |= took;
    }
    took = true;
    while (took) {
        PR_TRY(affine_step(f, &took));
        *changed |= took;
    }
    PR_TRY(commit(f));
    if (f->tr) goto fail; /* ConvTranspose keeps its op: bias and scale only */
    PR_TRY(act_step(f, "act", false, &took));
    bool act = took;
    PR_TRY(residual_step(f, &took));
    if (took)
        PR_TRY(act_step(f, "act2", false, &took));
    else if (act)
        PR_TRY(post_affine_step(f, &took));
fail:
    free(f->w);
    free(f->b);
    return st;
}

static precis_status conv_run(pr_graph *g, pr_pass_ctx *pc) {
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, pc->err);
    if (st) return st;
    for (int ni = 0; ni < g->n_nodes && !st; ni++) {
        cfuse f;
        if (pr_node_dead(&g->nodes[ni]) || !conv_candidate(g, ni, &f)) continue;
        f.g = g;
        f.u = &u;
        f.e = pc->err;
        bool changed;
        st = fuse_one(&f, &changed);
        if (!st && changed) pc->changes++;
    }
    pr_uses_free(&u);
    if (st) return st;
    return pr_graph_compact(g, pc->err);
}

const pr_pass pr_pass_fuse_conv = {"fuse_conv", conv_run};

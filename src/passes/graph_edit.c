/* Graph editing helpers for the optimization passes (see graph_edit.h). */
#include "passes/graph_edit.h"
#include "passes/prec_req.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"

/* ------------------------------------------------------------ use counts */

/* Count references from subgraph `sub` (and its nested subgraphs) to tensors
 * of g that sub does not define itself. */
static void count_outer_refs(const pr_graph *g, const pr_graph *sub, int *n) {
    for (int t = 0; t < sub->n_tensors; t++) {
        const pr_tensor *x = &sub->tensors[t];
        if (x->producer >= 0 || (x->flags & (PR_T_INIT | PR_T_INPUT))) continue;
        int o = pr_graph_find_tensor(g, x->name);
        if (o >= 0) n[o]++;
    }
    for (int i = 0; i < sub->n_subgraphs; i++) count_outer_refs(g, sub->subgraphs[i], n);
}

/* ---------------------------------------------------------- dim classes */

#define R PR_MAX_RANK

static int uf_find(const pr_uses *u, int x) {
    while (u->uf[x] != x) {
        u->uf[x] = u->uf[u->uf[x]];
        x = u->uf[x];
    }
    return x;
}

static void uf_union(pr_uses *u, int a, int b) {
    a = uf_find(u, a);
    b = uf_find(u, b);
    if (a == b) return;
    int64_t va = u->uf_val[a], vb = u->uf_val[b];
    if (va >= 0 && vb >= 0 && va != vb) return; /* inconsistent: keep apart */
    u->uf[a] = b;
    if (vb < 0) u->uf_val[b] = va;
}

typedef struct dimctx {
    const pr_graph *g;
    pr_uses *u;
} dimctx;

/* Rank of tensor t if it takes part in the analysis, else -1. */
static int drank(const dimctx *c, int t) {
    return t >= 0 && t < c->u->cap ? c->g->tensors[t].rank : -1;
}
static int64_t dval(const dimctx *c, int t, int d) {
    return c->u->uf_val[uf_find(c->u, t * R + d)];
}
static void dsame(dimctx *c, int t, int d, int s, int e) { uf_union(c->u, t * R + d, s * R + e); }
static bool dis(const dimctx *c, int t, int d, int s, int e) {
    int a = uf_find(c->u, t * R + d), b = uf_find(c->u, s * R + e);
    return a == b || (c->u->uf_val[a] >= 0 && c->u->uf_val[a] == c->u->uf_val[b]);
}

static void unify_all(dimctx *c, int out, int in) {
    int r = drank(c, out);
    if (r < 0 || r != drank(c, in)) return;
    for (int d = 0; d < r; d++) dsame(c, out, d, in, d);
}

/* Numpy broadcast of the first la dims of a and lb dims of b into the first
 * lo dims of out (right-aligned). */
static void bcast(dimctx *c, int out, int lo, int a, int la, int b, int lb) {
    for (int i = 0; i < lo; i++) {
        int ia = i - (lo - la), ib = i - (lo - lb);
        if (ia < 0 && ib < 0) continue;
        if (ia < 0) {
            dsame(c, out, i, b, ib);
            continue;
        }
        if (ib < 0) {
            dsame(c, out, i, a, ia);
            continue;
        }
        int64_t va = dval(c, a, ia), vb = dval(c, b, ib);
        if (va == 1)
            dsame(c, out, i, b, ib);
        else if (vb == 1)
            dsame(c, out, i, a, ia);
        else if (dis(c, a, ia, b, ib) || va > 1)
            dsame(c, out, i, a, ia);
        else if (vb > 1)
            dsame(c, out, i, b, ib);
    }
}

/* Values of an int64 initializer (at most cap), or -1. */
static int const_ints(const pr_graph *g, int t, int64_t *v, int cap) {
    if (!pr_is_init(g, t) || g->tensors[t].dtype != PRECIS_INT64) return -1;
    int64_t n = pr_numel(g->tensors[t].rank, g->tensors[t].dims);
    if (n < 0 || n > cap) return -1;
    if (n) memcpy(v, g->tensors[t].data, (size_t)n * sizeof *v);
    return (int)n;
}

/* Axes from the attribute (opset < from) or input i; normalised to rank r. */
static int axes_of(const pr_graph *g, const pr_node *n, int64_t from, int i, int r, int64_t *ax) {
    int k;
    if (n->opset < from) {
        const int64_t *a;
        k = pr_attr_ints(n, "axes", &a);
        if (k < 0 || k > R) return -1;
        if (k) memcpy(ax, a, (size_t)k * sizeof *ax);
    } else {
        k = const_ints(g, pr_node_in(n, i), ax, R);
    }
    for (int j = 0; j < k; j++) {
        if (ax[j] < 0) ax[j] += r;
        if (ax[j] < 0 || ax[j] >= r) return -1;
    }
    return k;
}

static bool in_axes(const int64_t *ax, int k, int d) {
    for (int j = 0; j < k; j++)
        if (ax[j] == d) return true;
    return false;
}

/* Conv / pools: batch dim, and spatial dims that keep their size. */
static void conv_rule(dimctx *c, const pr_node *n, bool conv) {
    int x = n->inputs[0], y = n->outputs[0];
    int r = drank(c, x);
    if (r < 3 || r != drank(c, y)) return;
    dsame(c, y, 0, x, 0);
    int ns = r - 2;
    if (!conv) dsame(c, y, 1, x, 1);
    const int64_t *ks = NULL, *st = NULL, *dl = NULL, *pd = NULL;
    int nk = pr_attr_ints(n, "kernel_shape", &ks);
    int nst = pr_attr_ints(n, "strides", &st), ndl = pr_attr_ints(n, "dilations", &dl);
    int npd = pr_attr_ints(n, "pads", &pd);
    const pr_tensor *W = conv ? &c->g->tensors[n->inputs[1]] : NULL;
    const char *ap = pr_attr_str(n, "auto_pad", "NOTSET");
    for (int i = 0; i < ns; i++) {
        int64_t k = nk == ns ? ks[i] : (W && W->rank == r ? W->dims[2 + i] : -1);
        int64_t s = nst == ns ? st[i] : 1, d = ndl == ns ? dl[i] : 1;
        if (k < 1 || s != 1) continue;
        bool keep;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"))
            keep = true;
        else if (!strcmp(ap, "VALID"))
            keep = d * (k - 1) == 0;
        else
            keep = (npd == 2 * ns ? pd[i] + pd[i + ns] : 0) == d * (k - 1);
        if (keep) dsame(c, y, 2 + i, x, 2 + i);
    }
}

static void dim_rules(dimctx *c, const pr_node *n) {
    const pr_graph *g = c->g;
    if (n->n_inputs < 1 || n->n_outputs < 1 || n->inputs[0] < 0 || n->outputs[0] < 0) return;
    int x = n->inputs[0], y = n->outputs[0];
    int rx = drank(c, x), ry = drank(c, y);
    if (rx < 0 || ry < 0) return;
    bool fused = !strcmp(n->domain, PR_FUSED_DOMAIN);
    if (n->domain[0] && !fused) return;
    switch (n->op) {
    case PR_OP_Add:
    case PR_OP_Sub:
    case PR_OP_Mul:
    case PR_OP_Div:
    case PR_OP_Pow:
    case PR_OP_Mod:
    case PR_OP_Equal:
    case PR_OP_Less:
    case PR_OP_LessOrEqual:
    case PR_OP_Greater:
    case PR_OP_GreaterOrEqual:
    case PR_OP_And:
    case PR_OP_Or:
    case PR_OP_Xor:
    case PR_OP_BitShift:
    case PR_OP_PRelu:
    case PR_OP_Min:
    case PR_OP_Max:
    case PR_OP_Sum:
    case PR_OP_Mean: {
        if (n->opset < 7) return;
        if (n->n_inputs == 1) {
            unify_all(c, y, x);
            return;
        }
        int b = pr_node_in(n, 1), rb = drank(c, b);
        if (n->n_inputs != 2 || rb < 0 || ry != (rx > rb ? rx : rb)) return;
        bcast(c, y, ry, x, rx, b, rb);
        return;
    }
    case PR_OP_Relu:
    case PR_OP_LeakyRelu:
    case PR_OP_Sigmoid:
    case PR_OP_Tanh:
    case PR_OP_HardSigmoid:
    case PR_OP_HardSwish:
    case PR_OP_Gelu:
    case PR_OP_Erf:
    case PR_OP_Sqrt:
    case PR_OP_Exp:
    case PR_OP_Log:
    case PR_OP_Neg:
    case PR_OP_Abs:
    case PR_OP_Reciprocal:
    case PR_OP_Floor:
    case PR_OP_Ceil:
    case PR_OP_Round:
    case PR_OP_Sign:
    case PR_OP_Sin:
    case PR_OP_Cos:
    case PR_OP_Tan:
    case PR_OP_Asin:
    case PR_OP_Acos:
    case PR_OP_Atan:
    case PR_OP_Sinh:
    case PR_OP_Cosh:
    case PR_OP_Asinh:
    case PR_OP_Acosh:
    case PR_OP_Atanh:
    case PR_OP_Elu:
    case PR_OP_Selu:
    case PR_OP_Celu:
    case PR_OP_Softplus:
    case PR_OP_Softsign:
    case PR_OP_ThresholdedRelu:
    case PR_OP_Shrink:
    case PR_OP_Mish:
    case PR_OP_Clip:
    case PR_OP_Not:
    case PR_OP_IsNaN:
    case PR_OP_IsInf:
    case PR_OP_Cast:
    case PR_OP_CastLike:
    case PR_OP_Identity:
    case PR_OP_Dropout:
    case PR_OP_Softmax:
    case PR_OP_LogSoftmax:
    case PR_OP_Hardmax:
    case PR_OP_LayerNormalization:
    case PR_OP_BatchNormalization:
    case PR_OP_InstanceNormalization:
    case PR_OP_LpNormalization:
    case PR_OP_LRN:
    case PR_OP_CumSum:
    case PR_OP_QuantizeLinear:
    case PR_OP_DequantizeLinear:
    case PR_OP_Reorder: unify_all(c, y, x); return;
    case PR_OP_MatMul:
    case PR_OP_FusedMatMul: {
        int b = pr_node_in(n, 1), rb = drank(c, b);
        if (rx < 2 || rb < 2 || ry != (rx > rb ? rx : rb)) return;
        bool ta = fused && pr_attr_int(n, "transA", 0), tb = fused && pr_attr_int(n, "transB", 0);
        if ((ta && rx != 2) || (tb && rb != 2)) return;
        dsame(c, y, ry - 2, x, ta ? 1 : rx - 2);
        dsame(c, y, ry - 1, b, tb ? 0 : rb - 1);
        bcast(c, y, ry - 2, x, rx - 2, b, rb - 2);
        return;
    }
    case PR_OP_Gemm: {
        int b = pr_node_in(n, 1);
        if (rx != 2 || drank(c, b) != 2 || ry != 2) return;
        dsame(c, y, 0, x, pr_attr_int(n, "transA", 0) ? 1 : 0);
        dsame(c, y, 1, b, pr_attr_int(n, "transB", 0) ? 0 : 1);
        return;
    }
    case PR_OP_Transpose: {
        const int64_t *perm;
        int np = pr_attr_ints(n, "perm", &perm);
        if (rx != ry) return;
        for (int i = 0; i < ry; i++) {
            int64_t p = np == ry ? perm[i] : ry - 1 - i;
            if (p >= 0 && p < rx) dsame(c, y, i, x, (int)p);
        }
        return;
    }
    case PR_OP_Reshape: {
        int64_t v[R];
        int k = const_ints(g, pr_node_in(n, 1), v, R);
        bool allowzero = n->opset >= 14 && pr_attr_int(n, "allowzero", 0);
        if (k != ry || allowzero) return;
        for (int i = 0; i < k && i < rx; i++)
            if (v[i] == 0) dsame(c, y, i, x, i);
        return;
    }
    case PR_OP_Unsqueeze: {
        int64_t ax[R];
        int k = axes_of(g, n, 13, 1, ry, ax);
        if (k < 0 || rx + k != ry) return;
        for (int i = 0, j = 0; i < ry; i++)
            if (!in_axes(ax, k, i)) dsame(c, y, i, x, j++);
        return;
    }
    case PR_OP_Squeeze: {
        int64_t ax[R];
        int k = axes_of(g, n, 13, 1, rx, ax);
        if (k <= 0 || rx - k != ry) return;
        for (int i = 0, j = 0; i < rx; i++)
            if (!in_axes(ax, k, i)) dsame(c, y, j++, x, i);
        return;
    }
    case PR_OP_Concat:
    case PR_OP_Split: {
        int64_t a = pr_attr_int(n, "axis", n->op == PR_OP_Split ? 0 : 1);
        if (a < 0) a += rx;
        bool cat = n->op == PR_OP_Concat;
        int m = cat ? n->n_inputs : n->n_outputs;
        for (int j = 0; j < m; j++) {
            int t = cat ? n->inputs[j] : n->outputs[j];
            if (drank(c, t) != rx || ry != rx) continue;
            for (int i = 0; i < rx; i++)
                if (i != a) dsame(c, cat ? y : t, i, cat ? t : x, i);
        }
        return;
    }
    case PR_OP_Slice: {
        int64_t ax[R];
        int k;
        if (n->opset < 10) return;
        if (pr_node_in(n, 3) >= 0) {
            k = axes_of(g, n, 0, 3, rx, ax);
        } else {
            int s = pr_node_in(n, 1);
            k = drank(c, s) == 1 ? (int)g->tensors[s].dims[0] : -1;
            for (int i = 0; i < k && i < R; i++) ax[i] = i;
        }
        if (k < 0 || k > R || rx != ry) return;
        for (int i = 0; i < rx; i++)
            if (!in_axes(ax, k, i)) dsame(c, y, i, x, i);
        return;
    }
    case PR_OP_Gather: {
        int idx = pr_node_in(n, 1), ri = drank(c, idx);
        int64_t a = pr_attr_int(n, "axis", 0);
        if (a < 0) a += rx;
        if (ri < 0 || a < 0 || a >= rx || ry != rx - 1 + ri) return;
        for (int i = 0; i < a; i++) dsame(c, y, i, x, i);
        for (int i = 0; i < ri; i++) dsame(c, y, (int)a + i, idx, i);
        for (int i = (int)a + 1; i < rx; i++) dsame(c, y, ri + i - 1, x, i);
        return;
    }
    case PR_OP_Conv:
    case PR_OP_FusedConv: conv_rule(c, n, true); return;
    case PR_OP_MaxPool:
    case PR_OP_AveragePool:
    case PR_OP_LpPool: conv_rule(c, n, false); return;
    case PR_OP_GlobalAveragePool:
    case PR_OP_GlobalMaxPool:
    case PR_OP_GlobalLpPool:
        if (rx >= 2 && rx == ry) {
            dsame(c, y, 0, x, 0);
            dsame(c, y, 1, x, 1);
        }
        return;
    default: return;
    }
}

static precis_status dims_build(const pr_graph *g, pr_uses *u, pr_err *e) {
    int nt = u->cap;
    u->uf_n = nt * R + g->n_syms;
    u->uf = malloc((size_t)(u->uf_n + 1) * sizeof *u->uf);
    u->uf_val = malloc((size_t)(u->uf_n + 1) * sizeof *u->uf_val);
    if (!u->uf || !u->uf_val) return pr_errf(e, PRECIS_ERR_OOM, "out of memory in shape analysis");
    for (int i = 0; i < u->uf_n; i++) {
        u->uf[i] = i;
        u->uf_val[i] = -1;
    }
    for (int t = 0; t < nt; t++) {
        const pr_tensor *x = &g->tensors[t];
        for (int d = 0; d < x->rank && d < R; d++) {
            int64_t v = x->dims[d];
            if (pr_dim_known(v))
                u->uf_val[t * R + d] = v;
            else if (pr_dim_is_sym(v) && pr_dim_sym_index(v) < g->n_syms &&
                     strcmp(g->syms[pr_dim_sym_index(v)], "?") != 0)
                uf_union(u, t * R + d, nt * R + pr_dim_sym_index(v));
        }
    }
    dimctx c = {g, u};
    for (int i = 0; i < g->n_nodes; i++)
        if (!pr_node_dead(&g->nodes[i])) dim_rules(&c, &g->nodes[i]);
    return PRECIS_OK;
}

#undef R

precis_status pr_uses_build(const pr_graph *g, pr_uses *u, pr_err *e) {
    memset(u, 0, sizeof *u);
    u->cap = g->n_tensors;
    u->n = calloc((size_t)(g->n_tensors + 1), sizeof *u->n);
    if (!u->n) {
        u->cap = 0;
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory counting tensor uses");
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        if (pr_node_dead(n)) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) u->n[n->inputs[k]]++;
    }
    for (int k = 0; k < g->n_outputs; k++) u->n[g->outputs[k]]++;
    for (int i = 0; i < g->n_subgraphs; i++) count_outer_refs(g, g->subgraphs[i], u->n);
    precis_status st = dims_build(g, u, e);
    if (st) pr_uses_free(u);
    return st;
}

void pr_uses_free(pr_uses *u) {
    free(u->n);
    free(u->uf);
    free(u->uf_val);
    memset(u, 0, sizeof *u);
}

int pr_uses_of(const pr_uses *u, int t) { return t >= 0 && t < u->cap ? u->n[t] : 0; }

void pr_uses_add(pr_uses *u, int t, int delta) {
    if (u && t >= 0 && t < u->cap) u->n[t] += delta;
}

int pr_consumers(const pr_graph *g, int t, int *nodes, int cap) {
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        if (pr_node_dead(n)) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t) {
                if (c < cap) nodes[c] = i;
                c++;
            }
    }
    return c;
}

int pr_single_consumer(const pr_graph *g, const pr_uses *u, int t) {
    if (t < 0 || t >= u->cap || u->n[t] != 1 || pr_is_graph_output(g, t)) return -1;
    int ni = -1;
    return pr_consumers(g, t, &ni, 1) == 1 ? ni : -1;
}

int pr_producer(const pr_graph *g, int t) {
    if (t < 0) return -1;
    int p = g->tensors[t].producer;
    return p >= 0 && p < g->n_nodes && !pr_node_dead(&g->nodes[p]) ? p : -1;
}

/* -------------------------------------------------------------- editing */

void pr_node_kill(pr_graph *g, pr_uses *u, int ni) {
    pr_node *n = &g->nodes[ni];
    if (pr_node_dead(n)) return;
    for (int k = 0; k < n->n_inputs; k++) pr_uses_add(u, n->inputs[k], -1);
    for (int k = 0; k < n->n_outputs; k++) {
        int t = n->outputs[k];
        if (t >= 0 && g->tensors[t].producer == ni) g->tensors[t].producer = -1;
    }
    n->op_type = NULL;
    n->op = PR_OP_UNKNOWN;
    n->n_inputs = n->n_outputs = 0;
}

/* Stable topological sort of g->nodes (all live, producers set). */
static precis_status topo_sort(pr_graph *g, pr_err *e) {
    int nn = g->n_nodes;
    int *order = malloc((size_t)(nn + 1) * sizeof *order);
    int *stack = malloc((size_t)(nn + 1) * sizeof *stack);
    int *pos = calloc((size_t)(nn + 1), sizeof *pos);
    unsigned char *state = calloc((size_t)(nn + 1), 1);
    pr_node *tmp = malloc((size_t)(nn + 1) * sizeof *tmp);
    precis_status st = PRECIS_OK;
    if (!order || !stack || !pos || !state || !tmp) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory sorting nodes");
        goto done;
    }
    int no = 0;
    for (int i = 0; i < nn; i++) {
        if (state[i]) continue;
        int sp = 0;
        stack[sp++] = i;
        state[i] = 1;
        while (sp) {
            int top = stack[sp - 1];
            const pr_node *n = &g->nodes[top];
            if (pos[top] < n->n_inputs) {
                int t = n->inputs[pos[top]++];
                int p = t >= 0 ? g->tensors[t].producer : -1;
                if (p < 0) continue;
                if (state[p] == 1) {
                    st = pr_errf(e, PRECIS_ERR_INTERNAL,
                                 "optimized graph has a cycle through node '%s' (%s)", n->name,
                                 n->op_type);
                    goto done;
                }
                if (state[p] == 0) {
                    state[p] = 1;
                    stack[sp++] = p;
                }
                continue;
            }
            sp--;
            state[top] = 2;
            order[no++] = top;
        }
    }
    for (int i = 0; i < nn; i++) tmp[i] = g->nodes[order[i]];
    memcpy(g->nodes, tmp, (size_t)nn * sizeof *tmp);
    for (int i = 0; i < nn; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++)
            if (g->nodes[i].outputs[k] >= 0) g->tensors[g->nodes[i].outputs[k]].producer = i;
done:
    free(order);
    free(stack);
    free(pos);
    free(state);
    free(tmp);
    return st;
}

precis_status pr_graph_compact(pr_graph *g, pr_err *e) {
    int w = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (pr_node_dead(&g->nodes[i])) continue;
        if (w != i) g->nodes[w] = g->nodes[i];
        w++;
    }
    g->n_nodes = w;
    for (int t = 0; t < g->n_tensors; t++) g->tensors[t].producer = -1;
    bool sorted = true;
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_outputs; k++) {
            int t = n->outputs[k];
            if (t < 0) continue;
            if (g->tensors[t].producer >= 0)
                return pr_errf(e, PRECIS_ERR_INTERNAL,
                               "optimized graph: tensor '%s' is produced by '%s' and '%s'",
                               g->tensors[t].name, g->nodes[g->tensors[t].producer].name, n->name);
            g->tensors[t].producer = i;
        }
    }
    for (int i = 0; i < g->n_nodes && sorted; i++) {
        const pr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t >= 0 && g->tensors[t].producer >= i) sorted = false;
        }
    }
    return sorted ? PRECIS_OK : topo_sort(g, e);
}

precis_status pr_graph_check(const pr_graph *g, pr_err *e) {
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        if (pr_node_dead(n)) return pr_errf(e, PRECIS_ERR_INTERNAL, "node %d is dead", i);
        for (int k = 0; k < n->n_outputs; k++) {
            int t = n->outputs[k];
            if (t >= 0 && g->tensors[t].producer != i)
                return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s': output '%s' has producer %d",
                               n->name, g->tensors[t].name, g->tensors[t].producer);
        }
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0) continue;
            const pr_tensor *x = &g->tensors[t];
            if (x->producer >= i)
                return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s': input '%s' is produced later",
                               n->name, x->name);
            if (x->producer < 0 && !(x->flags & (PR_T_INIT | PR_T_INPUT)) && !g->parent)
                return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s': input '%s' has no value",
                               n->name, x->name);
        }
    }
    for (int t = 0; t < g->n_tensors; t++) {
        int p = g->tensors[t].producer;
        if (p >= g->n_nodes)
            return pr_errf(e, PRECIS_ERR_INTERNAL, "tensor '%s': producer %d out of range",
                           g->tensors[t].name, p);
        if (p >= 0) {
            const pr_node *n = &g->nodes[p];
            bool found = false;
            for (int k = 0; k < n->n_outputs; k++) found |= n->outputs[k] == t;
            if (!found)
                return pr_errf(e, PRECIS_ERR_INTERNAL,
                               "tensor '%s': producer '%s' does not output it", g->tensors[t].name,
                               n->name);
        }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        const pr_tensor *x = &g->tensors[g->outputs[k]];
        if (x->producer < 0 && !(x->flags & (PR_T_INIT | PR_T_INPUT)))
            return pr_errf(e, PRECIS_ERR_INTERNAL, "graph output '%s' is not computed", x->name);
    }
    return PRECIS_OK;
}

int pr_node_new(pr_graph *g, pr_op op, int64_t opset, const char *name, int n_in, int n_out,
                pr_err *e) {
    int ni = pr_graph_add_node(g, n_in, n_out, 0, e);
    if (ni < 0) return -1;
    pr_node *n = &g->nodes[ni];
    n->name = pr_arena_strdup(g->arena, name ? name : "");
    if (!n->name) {
        g->n_nodes--;
        pr_errf(e, PRECIS_ERR_OOM, "out of memory adding a node");
        return -1;
    }
    pr_node_retype(g, ni, op, opset);
    return ni;
}

void pr_node_retype(pr_graph *g, int ni, pr_op op, int64_t opset) {
    pr_node *n = &g->nodes[ni];
    n->op = op;
    n->op_type = pr_op_name(op);
    n->domain = strcmp(pr_op_family(op), "fused") == 0 ? PR_FUSED_DOMAIN : "";
    if (opset > 0) n->opset = opset;
}

static precis_status grow_ints(pr_graph *g, int **arr, int *n, int want, pr_err *e) {
    if (want <= *n) return PRECIS_OK;
    int *a = pr_arena_alloc(g->arena, (size_t)want * sizeof *a);
    if (!a) return pr_errf(e, PRECIS_ERR_OOM, "out of memory growing a node");
    for (int i = 0; i < want; i++) a[i] = i < *n ? (*arr)[i] : -1;
    *arr = a;
    *n = want;
    return PRECIS_OK;
}

precis_status pr_node_set_input(pr_graph *g, pr_uses *u, int ni, int i, int t, pr_err *e) {
    pr_node *n = &g->nodes[ni];
    precis_status st = grow_ints(g, &n->inputs, &n->n_inputs, i + 1, e);
    if (st) return st;
    pr_uses_add(u, n->inputs[i], -1);
    n->inputs[i] = t;
    pr_uses_add(u, t, +1);
    return PRECIS_OK;
}

precis_status pr_node_set_output(pr_graph *g, int ni, int i, int t, pr_err *e) {
    pr_node *n = &g->nodes[ni];
    precis_status st = grow_ints(g, &n->outputs, &n->n_outputs, i + 1, e);
    if (st) return st;
    int old = n->outputs[i];
    if (old >= 0 && g->tensors[old].producer == ni) g->tensors[old].producer = -1;
    n->outputs[i] = t;
    if (t >= 0) g->tensors[t].producer = ni;
    return PRECIS_OK;
}

/* The attribute `name` of node ni, added (zeroed) if absent. */
static pr_attr *attr_slot(pr_graph *g, int ni, const char *name, pr_err *e) {
    pr_node *n = &g->nodes[ni];
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) {
            const char *nm = n->attrs[i].name;
            memset(&n->attrs[i], 0, sizeof n->attrs[i]);
            n->attrs[i].name = nm;
            return &n->attrs[i];
        }
    pr_attr *a = pr_arena_alloc(g->arena, (size_t)(n->n_attrs + 1) * sizeof *a);
    const char *nm = pr_arena_strdup(g->arena, name);
    if (!a || !nm) {
        pr_errf(e, PRECIS_ERR_OOM, "out of memory adding attribute '%s'", name);
        return NULL;
    }
    if (n->n_attrs) memcpy(a, n->attrs, (size_t)n->n_attrs * sizeof *a);
    n->attrs = a;
    a = &n->attrs[n->n_attrs++];
    a->name = nm;
    return a;
}

precis_status pr_node_set_int(pr_graph *g, int ni, const char *name, int64_t v, pr_err *e) {
    pr_attr *a = attr_slot(g, ni, name, e);
    if (!a) return PRECIS_ERR_OOM;
    a->type = PR_ATTR_INT;
    a->i = v;
    return PRECIS_OK;
}

precis_status pr_node_set_float(pr_graph *g, int ni, const char *name, float v, pr_err *e) {
    pr_attr *a = attr_slot(g, ni, name, e);
    if (!a) return PRECIS_ERR_OOM;
    a->type = PR_ATTR_FLOAT;
    a->f = v;
    return PRECIS_OK;
}

precis_status pr_node_set_string(pr_graph *g, int ni, const char *name, const char *s, pr_err *e) {
    const char *c = pr_arena_strdup(g->arena, s);
    pr_attr *a = c ? attr_slot(g, ni, name, e) : NULL;
    if (!a) return pr_errf(e, PRECIS_ERR_OOM, "out of memory adding attribute '%s'", name);
    a->type = PR_ATTR_STRING;
    a->s = c;
    a->s_len = strlen(c);
    return PRECIS_OK;
}

precis_status pr_node_set_ints(pr_graph *g, int ni, const char *name, const int64_t *v, int n,
                               pr_err *e) {
    int64_t *c = pr_arena_alloc(g->arena, (size_t)(n > 0 ? n : 1) * sizeof *c);
    pr_attr *a = c ? attr_slot(g, ni, name, e) : NULL;
    if (!a) return pr_errf(e, PRECIS_ERR_OOM, "out of memory adding attribute '%s'", name);
    if (n > 0) memcpy(c, v, (size_t)n * sizeof *c);
    a->type = PR_ATTR_INTS;
    a->ints = c;
    a->n = n;
    return PRECIS_OK;
}

void pr_node_clear_attrs(pr_graph *g, int ni) { g->nodes[ni].n_attrs = 0; }

precis_status pr_node_set_act(pr_graph *g, int ni, const char *prefix, const pr_act *a, pr_err *e) {
    if (a->kind == PR_ACT_NONE) return PRECIS_OK;
    char key[32];
    precis_status st = pr_node_set_string(g, ni, prefix, pr_act_names[a->kind], e);
    if (st) return st;
    switch (a->kind) {
    case PR_ACT_LEAKY_RELU:
    case PR_ACT_CLIP:
    case PR_ACT_HARD_SIGMOID:
    case PR_ACT_AFFINE:
        snprintf(key, sizeof key, "%s_alpha", prefix);
        if ((st = pr_node_set_float(g, ni, key, a->alpha, e))) return st;
        snprintf(key, sizeof key, "%s_beta", prefix);
        return pr_node_set_float(g, ni, key, a->beta, e);
    default: return PRECIS_OK;
    }
}

int pr_graph_new_tensor(pr_graph *g, const char *base, const char *suffix, pr_dtype dt, int rank,
                        const int64_t *dims, pr_err *e) {
    char name[600];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    size_t bl = strlen(name);
    for (int k = 1; pr_graph_find_tensor(g, name) >= 0 && bl + 12 < sizeof name; k++)
        snprintf(name + bl, sizeof name - bl, "_%d", k);
    int t = pr_graph_get_tensor(g, name, e);
    if (t < 0) return -1;
    pr_tensor *x = &g->tensors[t];
    x->dtype = dt;
    x->rank = rank;
    for (int i = 0; i < rank; i++) x->dims[i] = dims[i];
    x->producer = -1;
    return t;
}

void *pr_edit_alloc(size_t nbytes) {
    size_t n = (nbytes + 63) & ~(size_t)63;
    return aligned_alloc(64, n ? n : 64);
}

int pr_graph_add_init(pr_graph *g, const char *base, pr_dtype dt, int rank, const int64_t *dims,
                      void *data, pr_err *e) {
    if (!pr_graph_own(g, data)) {
        free(data);
        pr_errf(e, PRECIS_ERR_OOM, "out of memory adding initializer '%s'", base);
        return -1;
    }
    size_t bl = strlen(base);
    char *name = malloc(bl + 24);
    if (!name) {
        pr_errf(e, PRECIS_ERR_OOM, "out of memory adding initializer '%s'", base);
        return -1;
    }
    memcpy(name, base, bl + 1);
    for (int k = 1; pr_graph_find_tensor(g, name) >= 0; k++) snprintf(name + bl, 24, "_%d", k);
    int t = pr_graph_get_tensor(g, name, e);
    free(name);
    if (t < 0) return -1;
    pr_tensor *x = &g->tensors[t];
    x->dtype = dt;
    x->rank = rank;
    for (int i = 0; i < rank; i++) x->dims[i] = dims[i];
    x->data = data;
    x->nbytes = (size_t)pr_numel(rank, dims) * pr_dtype_size(dt);
    x->flags = PR_T_INIT;
    x->producer = -1;
    return t;
}

int pr_graph_add_init_f32(pr_graph *g, const char *base, int rank, const int64_t *dims,
                          const float *src, pr_err *e) {
    int64_t ne = pr_numel(rank, dims);
    float *d = ne >= 0 ? pr_edit_alloc((size_t)ne * sizeof(float)) : NULL;
    if (!d) {
        pr_errf(e, PRECIS_ERR_OOM, "out of memory adding initializer '%s'", base);
        return -1;
    }
    if (ne) memcpy(d, src, (size_t)ne * sizeof(float));
    return pr_graph_add_init(g, base, PRECIS_FLOAT32, rank, dims, d, e);
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

precis_status pr_node_merge_origins(pr_graph *g, int dst, const int *nodes, int n, pr_err *e) {
    int *idx = malloc((size_t)(n + 1) * sizeof *idx);
    if (!idx) return pr_errf(e, PRECIS_ERR_OOM, "out of memory merging origins");
    int ni = 0;
    idx[ni++] = dst;
    for (int i = 0; i < n; i++) {
        bool dup = false;
        for (int j = 0; j < ni; j++) dup |= idx[j] == nodes[i];
        if (!dup) idx[ni++] = nodes[i];
    }
    qsort(idx, (size_t)ni, sizeof *idx, cmp_int);
    int total = 0;
    for (int i = 0; i < ni; i++) {
        const pr_node *x = &g->nodes[idx[i]];
        total += x->n_origins ? x->n_origins : 1;
    }
    const char **o = pr_arena_alloc(g->arena, (size_t)(total ? total : 1) * sizeof *o);
    if (!o) {
        free(idx);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory merging origins");
    }
    int no = 0;
    for (int i = 0; i < ni; i++) {
        const pr_node *x = &g->nodes[idx[i]];
        int k = x->n_origins ? x->n_origins : 1;
        if (!x->n_origins && pr_attr_int(x, "precis_inserted", 0)) continue; /* not an original */
        for (int j = 0; j < k; j++) {
            const char *s = x->n_origins ? x->origins[j] : x->name;
            bool dup = false;
            for (int q = 0; q < no && !dup; q++) dup = strcmp(o[q], s) == 0;
            if (!dup) o[no++] = s;
        }
    }
    free(idx);
    g->nodes[dst].origins = o;
    g->nodes[dst].n_origins = no;
    return PRECIS_OK;
}

int pr_fuse_absorb(pr_graph *g, pr_uses *u, int ni, const int *nodes, int n, int out_node,
                   pr_err *e) {
    if (pr_node_merge_origins(g, ni, nodes, n, e)) return -1;
    pr_prec_merge(g, ni, nodes, n, out_node);
    int t_new = out_node >= 0 ? g->nodes[out_node].outputs[0] : -1;
    for (int i = 0; i < n; i++)
        if (nodes[i] != ni) pr_node_kill(g, u, nodes[i]);
    if (out_node < 0) return ni;
    if (pr_node_set_output(g, ni, 0, t_new, e)) return -1;
    if (out_node <= ni) return ni;
    /* move into out_node's (dead) slot: every input of ni exists there */
    g->nodes[out_node] = g->nodes[ni];
    pr_node *d = &g->nodes[ni];
    d->op_type = NULL;
    d->op = PR_OP_UNKNOWN;
    d->n_inputs = d->n_outputs = 0;
    const pr_node *m = &g->nodes[out_node];
    for (int k = 0; k < m->n_outputs; k++)
        if (m->outputs[k] >= 0) g->tensors[m->outputs[k]].producer = out_node;
    return out_node;
}

/* ------------------------------------------------------- value queries */

bool pr_is_f32(const pr_graph *g, int t) {
    return t >= 0 && g->tensors[t].dtype == PRECIS_FLOAT32 && g->tensors[t].rank >= 0;
}

bool pr_const_scalar(const pr_graph *g, int t, float *v) {
    if (!pr_is_init(g, t)) return false;
    const pr_tensor *x = &g->tensors[t];
    if (pr_numel(x->rank, x->dims) != 1) return false;
    switch (x->dtype) {
    case PRECIS_FLOAT32:
    case PRECIS_FLOAT64:
    case PRECIS_FLOAT16:
    case PRECIS_BFLOAT16:
    case PRECIS_INT8:
    case PRECIS_UINT8:
    case PRECIS_INT16:
    case PRECIS_UINT16:
    case PRECIS_INT32:
    case PRECIS_INT64:
    case PRECIS_UINT32:
    case PRECIS_UINT64:
    case PRECIS_FLOAT8E4M3FN: pr_ref_to_f32(x->data, x->dtype, 1, v); return true;
    default: return false;
    }
}

bool pr_same_shape(const pr_graph *g, const pr_uses *u, int t, int v) {
    const pr_tensor *a = &g->tensors[t], *b = &g->tensors[v];
    if (a->rank < 0 || a->rank != b->rank) return false;
    bool classes = u && u->uf && t < u->cap && v < u->cap;
    for (int i = 0; i < a->rank; i++) {
        int64_t x = a->dims[i], y = b->dims[i];
        if (pr_dim_known(x) && x == y) continue;
        /* "?" is not a shared dim (see session.c) */
        if (pr_dim_is_sym(x) && x == y && strcmp(g->syms[pr_dim_sym_index(x)], "?") != 0) continue;
        if (classes) {
            int ca = uf_find(u, t * PR_MAX_RANK + i), cb = uf_find(u, v * PR_MAX_RANK + i);
            if (ca == cb || (u->uf_val[ca] >= 0 && u->uf_val[ca] == u->uf_val[cb])) continue;
        }
        return false;
    }
    return true;
}

bool pr_const_along_axis(const pr_graph *g, int c, int r, int axis, int64_t size, float *vals) {
    if (!pr_is_init(g, c) || g->tensors[c].dtype != PRECIS_FLOAT32 || size <= 0) return false;
    const pr_tensor *x = &g->tensors[c];
    if (x->rank > r) return false;
    bool per = false;
    for (int j = 0; j < x->rank; j++) {
        int ay = r - x->rank + j;
        int64_t d = x->dims[j];
        if (d == 1) continue;
        if (ay == axis && d == size) {
            per = true;
            continue;
        }
        return false;
    }
    const float *p = x->data;
    for (int64_t i = 0; i < size; i++) vals[i] = p[per ? i : 0];
    return true;
}

int pr_other_input(const pr_graph *g, int ni, int t) {
    const pr_node *n = &g->nodes[ni];
    if (n->n_inputs != 2) return -1;
    if (n->inputs[0] == t) return n->inputs[1];
    if (n->inputs[1] == t) return n->inputs[0];
    return -1;
}

/* --------------------------------------------------------- activations */

static bool is_op(const pr_graph *g, int ni, pr_op op) {
    return ni >= 0 && !pr_node_dead(&g->nodes[ni]) && g->nodes[ni].op == op &&
           g->nodes[ni].domain[0] == 0;
}

/* Clip's bounds when constant. */
static bool clip_bounds(const pr_graph *g, const pr_node *n, float *lo, float *hi) {
    if (n->opset < 11) {
        *lo = pr_attr_float(n, "min", -FLT_MAX);
        *hi = pr_attr_float(n, "max", FLT_MAX);
        return true;
    }
    *lo = -INFINITY;
    *hi = INFINITY;
    if (n->n_inputs > 1 && n->inputs[1] >= 0 && !pr_const_scalar(g, n->inputs[1], lo)) return false;
    if (n->n_inputs > 2 && n->inputs[2] >= 0 && !pr_const_scalar(g, n->inputs[2], hi)) return false;
    return true;
}

/* A single-node activation c applied to t. */
static bool single_act(const pr_graph *g, int c, int t, bool allow_gelu, pr_act *a) {
    const pr_node *n = &g->nodes[c];
    if (n->domain[0] || n->n_inputs < 1 || n->inputs[0] != t || n->n_outputs < 1 ||
        !pr_is_f32(g, n->outputs[0]))
        return false;
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) return false;
    a->alpha = a->beta = 0;
    switch (n->op) {
    case PR_OP_Relu: a->kind = PR_ACT_RELU; return true;
    case PR_OP_LeakyRelu:
        a->kind = PR_ACT_LEAKY_RELU;
        a->alpha = pr_attr_float(n, "alpha", 0.01f);
        return true;
    case PR_OP_Sigmoid: a->kind = PR_ACT_SIGMOID; return true;
    case PR_OP_Tanh: a->kind = PR_ACT_TANH; return true;
    case PR_OP_HardSwish: a->kind = PR_ACT_HARD_SWISH; return true;
    case PR_OP_HardSigmoid:
        a->kind = PR_ACT_HARD_SIGMOID;
        a->alpha = pr_attr_float(n, "alpha", 0.2f);
        a->beta = pr_attr_float(n, "beta", 0.5f);
        return true;
    case PR_OP_Clip:
        for (int k = 1; k < n->n_inputs; k++)
            if (n->inputs[k] == t) return false;
        if (!clip_bounds(g, n, &a->alpha, &a->beta)) return false;
        a->kind = PR_ACT_CLIP;
        return true;
    case PR_OP_Gelu: {
        if (!allow_gelu) return false;
        const char *ap = pr_attr_str(n, "approximate", "none");
        if (strcmp(ap, "none") == 0)
            a->kind = PR_ACT_GELU;
        else if (strcmp(ap, "tanh") == 0)
            a->kind = PR_ACT_GELU_TANH;
        else
            return false;
        return true;
    }
    default: return false;
    }
}

/* Node ni is a two-input op with input t and a constant scalar other input
 * equal to want (relative tolerance tol). */
static bool with_scalar(const pr_graph *g, int ni, pr_op op, int t, double want, double tol) {
    if (!is_op(g, ni, op)) return false;
    const pr_node *n = &g->nodes[ni];
    if (n->n_inputs != 2 || n->n_outputs != 1) return false;
    int o = pr_other_input(g, ni, t);
    float v;
    if (o < 0 || o == t || !pr_const_scalar(g, o, &v) || !pr_near(v, want, tol)) return false;
    /* Div and Sub are not commutative: t must be the first operand */
    if ((op == PR_OP_Div || op == PR_OP_Sub) && n->inputs[0] != t) return false;
    return pr_is_f32(g, n->outputs[0]);
}

/* "x / 6" or "x * (1/6)" applied to t by node ni. */
static bool div6(const pr_graph *g, int ni, int t) {
    return with_scalar(g, ni, PR_OP_Div, t, 6.0, 1e-6) ||
           with_scalar(g, ni, PR_OP_Mul, t, 1.0 / 6.0, 1e-5);
}

/* Clip(t, 0, 6) by node ni. */
static bool relu6_of(const pr_graph *g, int ni, int t) {
    if (!is_op(g, ni, PR_OP_Clip) || g->nodes[ni].inputs[0] != t) return false;
    float lo, hi;
    return clip_bounds(g, &g->nodes[ni], &lo, &hi) && lo == 0.0f && hi == 6.0f;
}

/* Two-use patterns: m = Mul(t, s) and the other consumer k of t start a
 * branch computing s. */
static bool two_use_act(const pr_graph *g, const pr_uses *u, int t, int m, int k, pr_act_match *r) {
    if (!is_op(g, m, PR_OP_Mul) || g->nodes[m].n_outputs != 1) return false;
    if (!pr_is_f32(g, g->nodes[m].outputs[0])) return false;
    int s = pr_other_input(g, m, t);
    if (s < 0 || s == t || pr_single_consumer(g, u, s) != m) return false;
    int sp = pr_producer(g, s);
    const pr_node *kn = &g->nodes[k];
    r->act.alpha = r->act.beta = 0;
    /* Swish: Mul(t, Sigmoid(t)) */
    if (sp == k && is_op(g, k, PR_OP_Sigmoid) && kn->inputs[0] == t) {
        r->act.kind = PR_ACT_SWISH;
        r->n_nodes = 2;
        r->nodes[0] = k;
        r->nodes[1] = m;
        r->out_node = m;
        return true;
    }
    /* Swish: Mul(t, Sigmoid(Mul(t, 1))) */
    if (with_scalar(g, k, PR_OP_Mul, t, 1.0, 0.0) && is_op(g, sp, PR_OP_Sigmoid) &&
        g->nodes[sp].inputs[0] == kn->outputs[0] &&
        pr_single_consumer(g, u, kn->outputs[0]) == sp) {
        r->act.kind = PR_ACT_SWISH;
        r->n_nodes = 3;
        r->nodes[0] = k;
        r->nodes[1] = sp;
        r->nodes[2] = m;
        r->out_node = m;
        return true;
    }
    /* HardSwish: Mul(t, HardSigmoid(t; 1/6, 1/2)) */
    if (sp == k && is_op(g, k, PR_OP_HardSigmoid) && kn->inputs[0] == t &&
        pr_near(pr_attr_float(kn, "alpha", 0.2f), 1.0 / 6.0, 1e-5) &&
        pr_near(pr_attr_float(kn, "beta", 0.5f), 0.5, 1e-6)) {
        r->act.kind = PR_ACT_HARD_SWISH;
        r->n_nodes = 2;
        r->nodes[0] = k;
        r->nodes[1] = m;
        r->out_node = m;
        return true;
    }
    /* HardSwish: t * Clip(t + 3, 0, 6) / 6 in two orders */
    if (with_scalar(g, k, PR_OP_Add, t, 3.0, 1e-6)) {
        int a = kn->outputs[0];
        int c = pr_single_consumer(g, u, a);
        if (c < 0 || !relu6_of(g, c, a)) return false;
        int ct = g->nodes[c].outputs[0];
        if (ct == s) { /* (t * clip) / 6 */
            int mo = g->nodes[m].outputs[0];
            int d = pr_single_consumer(g, u, mo);
            if (d < 0 || !div6(g, d, mo)) return false;
            r->act.kind = PR_ACT_HARD_SWISH;
            r->n_nodes = 4;
            r->nodes[0] = k;
            r->nodes[1] = c;
            r->nodes[2] = m;
            r->nodes[3] = d;
            r->out_node = d;
            return true;
        }
        int d = pr_single_consumer(g, u, ct); /* t * (clip / 6) */
        if (d < 0 || d != sp || !div6(g, d, ct)) return false;
        r->act.kind = PR_ACT_HARD_SWISH;
        r->n_nodes = 4;
        r->nodes[0] = k;
        r->nodes[1] = c;
        r->nodes[2] = d;
        r->nodes[3] = m;
        r->out_node = m;
        return true;
    }
    return false;
}

bool pr_match_act(const pr_graph *g, const pr_uses *u, int t, bool allow_gelu, pr_act_match *m) {
    memset(m, 0, sizeof *m);
    m->out_node = -1;
    if (!pr_is_f32(g, t) || pr_is_graph_output(g, t)) return false;
    int c = pr_single_consumer(g, u, t);
    if (c >= 0) {
        if (!single_act(g, c, t, allow_gelu, &m->act)) return false;
        m->n_nodes = 1;
        m->nodes[0] = c;
        m->out_node = c;
        return true;
    }
    if (pr_uses_of(u, t) != 2) return false;
    int cs[2];
    if (pr_consumers(g, t, cs, 2) != 2 || cs[0] == cs[1]) return false;
    return two_use_act(g, u, t, cs[0], cs[1], m) || two_use_act(g, u, t, cs[1], cs[0], m);
}

int pr_match_residual(const pr_graph *g, const pr_uses *u, int y, int *z) {
    int c = pr_single_consumer(g, u, y);
    if (c < 0 || !is_op(g, c, PR_OP_Add)) return -1;
    const pr_node *n = &g->nodes[c];
    if (n->n_inputs != 2 || n->n_outputs != 1) return -1;
    int o = pr_other_input(g, c, y);
    if (o < 0 || o == y || !pr_is_f32(g, o) || !pr_same_shape(g, u, o, y) ||
        !pr_same_shape(g, u, n->outputs[0], y))
        return -1;
    *z = o;
    return c;
}

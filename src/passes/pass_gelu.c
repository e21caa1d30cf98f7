/* fuse_gelu: decomposed GELU -> Gelu (ONNX opset 20).
 *
 *   erf form:  0.5 * x * (1 + Erf(x / sqrt(2)))        -> approximate "none"
 *              (x / 1.4142135 or x * 0.70710678)
 *   tanh form: 0.5 * x * (1 + Tanh(0.7978845608 * (x + 0.044715 * x^3)))
 *              (x^3 as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x))
 *                                                        -> approximate "tanh"
 * The final product in the usual exported orders: (x * a) * 0.5,
 * x * (a * 0.5) and (x * 0.5) * a, operands either way round. Every
 * intermediate must be private to the pattern.
 */
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass.h"
#include "passes/prec_req.h"

#define MAXN 10

static bool is_default(const pr_graph *g, int ni, pr_op op) {
    return ni >= 0 && !pr_node_dead(&g->nodes[ni]) && g->nodes[ni].op == op &&
           !g->nodes[ni].domain[0] && g->nodes[ni].n_outputs == 1;
}

/* Node ni is op(t, c) (either order for Mul/Add; t first for Div) with c a
 * constant scalar within tol of want. */
static bool op_const(const pr_graph *g, int ni, pr_op op, int t, double want, double tol) {
    if (!is_default(g, ni, op) || g->nodes[ni].n_inputs != 2) return false;
    if (op == PR_OP_Div && g->nodes[ni].inputs[0] != t) return false;
    int c = pr_other_input(g, ni, t);
    float v;
    return c >= 0 && c != t && pr_const_scalar(g, c, &v) && pr_near(v, want, tol) &&
           g->tensors[c].rank <= g->tensors[t].rank;
}

/* The scalar-constant operand side: for op(?, c) node ni, the non-constant
 * input when the constant matches; -1 otherwise. */
static int input_of_const(const pr_graph *g, int ni, pr_op op, double want, double tol) {
    if (!is_default(g, ni, op) || g->nodes[ni].n_inputs != 2) return -1;
    for (int i = 0; i < 2; i++) {
        int x = g->nodes[ni].inputs[i];
        if (op == PR_OP_Div && i != 0) break;
        if (!pr_is_init(g, x) && op_const(g, ni, op, x, want, tol)) return x;
    }
    return -1;
}

typedef struct gm {
    int nodes[MAXN];
    int n;
    int out_node;
} gm;

static void push(gm *m, int ni) { m->nodes[m->n++] = ni; }

/* 0.5 * x * a, given a = 1 + erf(..) / 1 + tanh(..). */
static bool tail(const pr_graph *g, const pr_uses *u, int x, int a, gm *m) {
    int m1 = pr_single_consumer(g, u, a);
    if (!is_default(g, m1, PR_OP_Mul) || g->nodes[m1].n_inputs != 2) return false;
    int q = pr_other_input(g, m1, a);
    if (q < 0 || q == a) return false;
    int p = g->nodes[m1].outputs[0];
    if (q == x) { /* (x * a) * 0.5 */
        int m2 = pr_single_consumer(g, u, p);
        if (!op_const(g, m2, PR_OP_Mul, p, 0.5, 1e-6)) return false;
        push(m, m1);
        push(m, m2);
        m->out_node = m2;
        return true;
    }
    float v;
    if (pr_const_scalar(g, q, &v) && pr_near(v, 0.5, 1e-6) &&
        g->tensors[q].rank <= g->tensors[a].rank) { /* (a * 0.5) * x */
        int m2 = pr_single_consumer(g, u, p);
        if (!is_default(g, m2, PR_OP_Mul) || pr_other_input(g, m2, p) != x) return false;
        push(m, m1);
        push(m, m2);
        m->out_node = m2;
        return true;
    }
    int h = pr_producer(g, q); /* (x * 0.5) * a */
    if (pr_single_consumer(g, u, q) == m1 && op_const(g, h, PR_OP_Mul, x, 0.5, 1e-6)) {
        push(m, h);
        push(m, m1);
        m->out_node = m1;
        return true;
    }
    return false;
}

/* Erf node ei: x / sqrt2 -> Erf -> + 1 -> tail. */
static bool match_erf(const pr_graph *g, const pr_uses *u, int ei, int *x, gm *m) {
    int d = g->nodes[ei].inputs[0];
    int p = pr_producer(g, d);
    if (p < 0 || pr_single_consumer(g, u, d) != ei) return false;
    int xx = input_of_const(g, p, PR_OP_Div, 1.4142135623730951, 1e-4);
    if (xx < 0) xx = input_of_const(g, p, PR_OP_Mul, 0.7071067811865476, 1e-4);
    if (xx < 0 || !pr_is_f32(g, xx)) return false;
    int eo = g->nodes[ei].outputs[0];
    int ad = pr_single_consumer(g, u, eo);
    if (!op_const(g, ad, PR_OP_Add, eo, 1.0, 1e-6)) return false;
    m->n = 0;
    push(m, p);
    push(m, ei);
    push(m, ad);
    *x = xx;
    return tail(g, u, xx, g->nodes[ad].outputs[0], m);
}

/* w == x^3 computed privately from x: push its nodes. */
static bool cube(const pr_graph *g, const pr_uses *u, int w, int x, int user, gm *m) {
    int p = pr_producer(g, w);
    if (p < 0 || pr_single_consumer(g, u, w) != user) return false;
    if (op_const(g, p, PR_OP_Pow, x, 3.0, 0.0) && g->nodes[p].inputs[0] == x) {
        push(m, p);
        return true;
    }
    if (!is_default(g, p, PR_OP_Mul) || g->nodes[p].n_inputs != 2) return false;
    int o = pr_other_input(g, p, x);
    if (o < 0 || o == x) return false;
    int s = pr_producer(g, o); /* Mul(x, Mul(x, x)) */
    if (pr_single_consumer(g, u, o) != p || !is_default(g, s, PR_OP_Mul) ||
        g->nodes[s].inputs[0] != x || g->nodes[s].inputs[1] != x)
        return false;
    push(m, s);
    push(m, p);
    return true;
}

/* Tanh node ti: 0.79788 * (x + 0.044715 x^3) -> Tanh -> + 1 -> tail. */
static bool match_tanh(const pr_graph *g, const pr_uses *u, int ti, int *x, gm *m) {
    int t = g->nodes[ti].inputs[0];
    int p1 = pr_producer(g, t);
    if (p1 < 0 || pr_single_consumer(g, u, t) != ti) return false;
    int in = input_of_const(g, p1, PR_OP_Mul, 0.7978845608028654, 1e-4);
    int pa = pr_producer(g, in);
    if (in < 0 || pr_single_consumer(g, u, in) != p1 || !is_default(g, pa, PR_OP_Add) ||
        g->nodes[pa].n_inputs != 2)
        return false;
    for (int i = 0; i < 2; i++) {
        int xx = g->nodes[pa].inputs[i], v = g->nodes[pa].inputs[1 - i];
        int pv = pr_producer(g, v);
        if (!pr_is_f32(g, xx) || pr_is_init(g, xx) || pr_single_consumer(g, u, v) != pa) continue;
        int w = input_of_const(g, pv, PR_OP_Mul, 0.044715, 1e-4);
        if (w < 0) continue;
        m->n = 0;
        if (!cube(g, u, w, xx, pv, m)) continue;
        push(m, pv);
        push(m, pa);
        push(m, p1);
        push(m, ti);
        int to = g->nodes[ti].outputs[0];
        int ad = pr_single_consumer(g, u, to);
        if (!op_const(g, ad, PR_OP_Add, to, 1.0, 1e-6)) return false;
        push(m, ad);
        *x = xx;
        return tail(g, u, xx, g->nodes[ad].outputs[0], m);
    }
    return false;
}

static precis_status gelu_run(pr_graph *g, pr_pass_ctx *pc) {
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, pc->err);
    if (st) return st;
    for (int ni = 0; ni < g->n_nodes && !st; ni++) {
        bool erf = is_default(g, ni, PR_OP_Erf), th = is_default(g, ni, PR_OP_Tanh);
        if (!erf && !th) continue;
        gm m;
        int x;
        if (!(erf ? match_erf(g, &u, ni, &x, &m) : match_tanh(g, &u, ni, &x, &m))) continue;
        if (!pr_is_f32(g, g->nodes[m.out_node].outputs[0])) continue;
        /* the first node of the pattern becomes Gelu(x) */
        int first = m.nodes[0];
        for (int i = 1; i < m.n; i++)
            if (m.nodes[i] < first) first = m.nodes[i];
        int rest[MAXN], nr = 0;
        for (int i = 0; i < m.n; i++)
            if (m.nodes[i] != first) rest[nr++] = m.nodes[i];
        if (!pr_prec_fusable(g, first, rest, nr, m.out_node)) continue;
        pr_node_retype(g, first, PR_OP_Gelu, 20);
        pr_node_clear_attrs(g, first);
        if ((st = pr_node_set_string(g, first, "approximate", erf ? "none" : "tanh", pc->err)))
            break;
        for (int k = 1; k < g->nodes[first].n_inputs; k++)
            if ((st = pr_node_set_input(g, &u, first, k, -1, pc->err))) break;
        if (st || (st = pr_node_set_input(g, &u, first, 0, x, pc->err))) break;
        g->nodes[first].n_inputs = 1;
        if (pr_fuse_absorb(g, &u, first, rest, nr, m.out_node, pc->err) < 0) {
            st = PRECIS_ERR_OOM;
            break;
        }
        pc->changes++;
    }
    pr_uses_free(&u);
    if (st) return st;
    return pr_graph_compact(g, pc->err);
}

const pr_pass pr_pass_fuse_gelu = {"fuse_gelu", gelu_run};

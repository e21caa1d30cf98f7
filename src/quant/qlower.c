/* pr_quantize_lower: QDQ patterns -> int8 ops (quantize.h).
 *
 *   DQ(x_q) -> FusedConv(., DQ(W_q per channel), B, [DQ(z_q) | Z]) [-> Q]
 *        => QConv(x_q, W_q, w_scale, B, z_q | Z)      (int8 out when a Q follows)
 *   DQ(a_q) -> FusedMatMul/MatMul(., DQ(B_q) ...) [-> Q]  => QMatMul
 *   DQ(x_q) -> pass-through op -> Q (same scale)   => the op on x_q
 * DequantizeLinear nodes nobody reads any more are dropped. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "quant/quantize.h"

/* t is the output of a per-tensor DequantizeLinear with zero point 0: its
 * node index, *q the quantized tensor, *s the scale. */
static int dq_of(const pr_graph *g, int t, int *q, float *s) {
    int p = pr_producer(g, t);
    if (p < 0) return -1;
    const pr_node *n = &g->nodes[p];
    if (n->op != PR_OP_DequantizeLinear) return -1;
    int x = pr_node_in(n, 0), sc = pr_node_in(n, 1), zp = pr_node_in(n, 2);
    float z = 0;
    if (x < 0 || (g->tensors[x].dtype != PRECIS_INT8 && g->tensors[x].dtype != PRECIS_UINT8))
        return -1;
    if (!pr_const_scalar(g, sc, s) || !(*s > 0.0f)) return -1;
    if (zp >= 0 && (!pr_const_scalar(g, zp, &z) || z != 0.0f)) return -1;
    *q = x;
    return p;
}

/* Per-axis weight DequantizeLinear (int8 initializer, scales [C], axis):
 * node index, *q, *scale tensor. */
static int dq_weight(const pr_graph *g, int t, int axis, int *q, int *scale) {
    int p = pr_producer(g, t);
    if (p < 0) return -1;
    const pr_node *n = &g->nodes[p];
    if (n->op != PR_OP_DequantizeLinear) return -1;
    int x = pr_node_in(n, 0), sc = pr_node_in(n, 1);
    if (!pr_is_init(g, x) || g->tensors[x].dtype != PRECIS_INT8 || !pr_is_init(g, sc)) return -1;
    const pr_tensor *S = &g->tensors[sc];
    int r = g->tensors[x].rank;
    int64_t ax = pr_attr_int(n, "axis", 1);
    if (ax < 0) ax += r;
    if (S->rank != 1 || ax != axis || S->dims[0] != g->tensors[x].dims[axis]) return -1;
    *q = x;
    *scale = sc;
    return p;
}

/* The only consumer of y is a per-tensor QuantizeLinear with zero point 0:
 * its index, *s, *dt (its output dtype). */
static int q_after(const pr_graph *g, const pr_uses *u, int y, float *s, pr_dtype *dt) {
    int c = pr_single_consumer(g, u, y);
    if (c < 0) return -1;
    const pr_node *n = &g->nodes[c];
    if (n->op != PR_OP_QuantizeLinear || pr_node_in(n, 0) != y) return -1;
    float z = 0;
    int zp = pr_node_in(n, 2), out = pr_node_out(n, 0);
    if (!pr_const_scalar(g, pr_node_in(n, 1), s) || !(*s > 0.0f) || out < 0) return -1;
    if (zp >= 0 && (!pr_const_scalar(g, zp, &z) || z != 0.0f)) return -1;
    *dt = g->tensors[out].dtype;
    if (*dt != PRECIS_INT8 && *dt != PRECIS_UINT8) return -1;
    return c;
}

/* A rank-1 copy of scalar scale s as a new initializer. */
static int scale_vec(pr_graph *g, const char *base, float s, pr_err *e) {
    int64_t one = 1;
    char nm[600];
    snprintf(nm, sizeof nm, "%s/scale_vec", base);
    return pr_graph_add_init_f32(g, nm, 1, &one, &s, e);
}

/* Retype compute node ni to its int8 form; absorb the Q after it. */
static precis_status lower_compute(pr_graph *g, pr_uses *u, int ni, bool *done, pr_err *e) {
    *done = false;
    const pr_node *n = &g->nodes[ni];
    bool conv = n->op == PR_OP_FusedConv;
    if (!conv && n->op != PR_OP_FusedMatMul && n->op != PR_OP_MatMul) return PRECIS_OK;
    int xq, wq, wscale = -1, zq = -1;
    float xs, bs = 0, zs = 0;
    if (dq_of(g, pr_node_in(n, 0), &xq, &xs) < 0) return PRECIS_OK;
    int w = pr_node_in(n, 1);
    int axis = conv ? 0 : (pr_attr_int(n, "transB", 0) ? 0 : 1);
    if (dq_weight(g, w, axis, &wq, &wscale) < 0) {
        if (conv || pr_attr_int(n, "transB", 0) || dq_of(g, w, &wq, &bs) < 0) return PRECIS_OK;
    }
    int bias = conv || n->op == PR_OP_FusedMatMul ? pr_node_in(n, 2) : -1;
    int z = conv || n->op == PR_OP_FusedMatMul ? pr_node_in(n, 3) : -1;
    if (z >= 0 && dq_of(g, z, &zq, &zs) < 0) zq = -1;
    float ys = 0;
    pr_dtype yt = PRECIS_FLOAT32;
    int qn = q_after(g, u, pr_node_out(n, 0), &ys, &yt);
    if (wscale < 0 && (wscale = scale_vec(g, g->tensors[w].name, bs, e)) < 0) return e->status;
    /* inputs: X, W, scale, bias, Z */
    int ins[5] = {xq, wq, wscale, bias, zq >= 0 ? zq : z};
    pr_node_retype(g, ni, conv ? PR_OP_QConv : PR_OP_QMatMul, 1);
    for (int i = 0; i < 5; i++)
        if (pr_node_set_input(g, u, ni, i, ins[i], e)) return e->status;
    g->nodes[ni].n_inputs = ins[4] >= 0 ? 5 : (ins[3] >= 0 ? 4 : 3);
    if (pr_node_set_float(g, ni, conv ? "x_scale" : "a_scale", xs, e)) return e->status;
    if (zq >= 0 && pr_node_set_float(g, ni, "z_scale", zs, e)) return e->status;
    if (qn >= 0) {
        if (pr_node_set_int(g, ni, "y_type", yt, e) || pr_node_set_float(g, ni, "y_scale", ys, e))
            return e->status;
        if (pr_fuse_absorb(g, u, ni, &qn, 1, qn, e) < 0) return e->status;
    }
    *done = true;
    return PRECIS_OK;
}

/* Pass-through node ni on int8 data: every data input a DQ of one scale,
 * every output read only by a Q of that scale and dtype. */
static precis_status lower_passthrough(pr_graph *g, pr_uses *u, int ni, bool *done, pr_err *e) {
    *done = false;
    const pr_node *n = &g->nodes[ni];
    int nd;
    if (!pr_quant_passthrough(g, n, &nd) || nd > n->n_inputs || n->n_outputs > 16) return PRECIS_OK;
    int qin[64];
    float s = 0;
    pr_dtype dt = PRECIS_UNDEFINED;
    if (nd > 64) return PRECIS_OK;
    for (int j = 0; j < nd; j++) {
        float sj;
        if (dq_of(g, n->inputs[j], &qin[j], &sj) < 0) return PRECIS_OK;
        pr_dtype dj = g->tensors[qin[j]].dtype;
        if (j && (sj != s || dj != dt)) return PRECIS_OK;
        s = sj;
        dt = dj;
    }
    int qout[16];
    for (int j = 0; j < n->n_outputs; j++) {
        float sj;
        pr_dtype dj;
        if (n->outputs[j] < 0) return PRECIS_OK;
        if ((qout[j] = q_after(g, u, n->outputs[j], &sj, &dj)) < 0 || sj != s || dj != dt)
            return PRECIS_OK;
    }
    for (int j = 0; j < nd; j++)
        if (pr_node_set_input(g, u, ni, j, qin[j], e)) return e->status;
    if (n->n_outputs == 1) {
        if (pr_fuse_absorb(g, u, ni, qout, 1, qout[0], e) < 0) return e->status;
    } else {
        /* several outputs (Split): take over each Q's output, then drop the Qs */
        for (int j = 0; j < g->nodes[ni].n_outputs; j++) {
            int qo = pr_node_out(&g->nodes[qout[j]], 0);
            pr_node_kill(g, u, qout[j]);
            if (pr_node_set_output(g, ni, j, qo, e)) return e->status;
        }
    }
    *done = true;
    return PRECIS_OK;
}

precis_status pr_quantize_lower(pr_graph *g, int verbose, pr_err *e) {
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, e);
    if (st) return st;
    int n_compute = 0, n_pass = 0, n_dropped = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (pr_node_dead(&g->nodes[i])) continue;
        bool done = false;
        if ((st = lower_compute(g, &u, i, &done, e))) goto out;
        if (done) {
            n_compute++;
            continue;
        }
        if ((st = lower_passthrough(g, &u, i, &done, e))) goto out;
        n_pass += done;
    }
    /* DequantizeLinear (and QuantizeLinear) nobody reads */
    for (bool again = true; again;) {
        again = false;
        for (int i = 0; i < g->n_nodes; i++) {
            pr_node *n = &g->nodes[i];
            if (pr_node_dead(n) ||
                (n->op != PR_OP_DequantizeLinear && n->op != PR_OP_QuantizeLinear))
                continue;
            int y = pr_node_out(n, 0);
            if (y >= 0 && (pr_uses_of(&u, y) > 0 || pr_is_graph_output(g, y))) continue;
            pr_node_kill(g, &u, i);
            n_dropped++;
            again = true;
        }
    }
    st = pr_graph_compact(g, e);
    if (!st && verbose)
        fprintf(stderr, "precis: int8 lowering: %d compute nodes, %d pass-through, %d Q/DQ dropped\n",
                n_compute, n_pass, n_dropped);
out:
    pr_uses_free(&u);
    return st;
}

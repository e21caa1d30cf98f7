/* pr_quantize_lower: QDQ patterns -> int8 ops (quantize.h).
 *
 *   DQ(x_q) -> FusedConv(., DQ(W_q per channel), B, [DQ(z_q) | Z]) [-> Q]
 *        => QConv(x_q, W_q, w_scale, B, z_q | Z)      (int8 out when a Q follows)
 *   DQ(a_q) -> FusedMatMul/MatMul(., DQ(B_q) ...) [-> Q]  => QMatMul
 *   DQ(x_q) -> pass-through op -> Q (same scale)   => the op on x_q
 *   DQ(a_q) | float a, DQ(b_q) | float b -> Add/Sub/Mul [-> activation] [-> Q]
 *        => QBinary(a_q | a, b_q | b)                 (int8 out when a Q follows)
 *   DQ(x_q) -> GlobalAveragePool / AveragePool [-> Q] => QPool(x_q)
 *   x -> Mul(1 / s, a smoothing vector over the last axis) -> Q(scale a)
 *        => Q(x, scales a * s per channel of the last axis)   (CPU)
 * DequantizeLinear nodes nobody reads any more are dropped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cuda/cuda.h"
#include "passes/graph_edit.h"
#include "passes/prec_req.h"
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
    pr_dtype xd = x < 0 ? PRECIS_UNDEFINED : g->tensors[x].dtype;
    if (xd != PRECIS_INT8 && xd != PRECIS_UINT8 && xd != PRECIS_FLOAT8E4M3FN) return -1;
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
 * its index, *s, *dt (its output dtype). -1 also when y's producer was
 * asked to store it in a float type (the Q then stays a step of its own). */
static int q_after(const pr_graph *g, const pr_uses *u, int y, float *s, pr_dtype *dt) {
    int c = pr_single_consumer(g, u, y);
    if (c < 0) return -1;
    int p = g->tensors[y].producer;
    pr_dtype ro = p >= 0 ? g->nodes[p].req_output : PRECIS_UNDEFINED;
    if (pr_prec_is_float(ro)) return -1;
    const pr_node *n = &g->nodes[c];
    if (n->op != PR_OP_QuantizeLinear || pr_node_in(n, 0) != y) return -1;
    float z = 0;
    int zp = pr_node_in(n, 2), out = pr_node_out(n, 0);
    if (!pr_const_scalar(g, pr_node_in(n, 1), s) || !(*s > 0.0f) || out < 0) return -1;
    if (zp >= 0 && (!pr_const_scalar(g, zp, &z) || z != 0.0f)) return -1;
    *dt = g->tensors[out].dtype;
    if (*dt != PRECIS_INT8 && *dt != PRECIS_UINT8 && *dt != PRECIS_FLOAT8E4M3FN) return -1;
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
        /* per-tensor B: an int8 activation, or fp8 weights (transB too) */
        if (conv || dq_of(g, w, &wq, &bs) < 0) return PRECIS_OK;
        bool f8w = g->tensors[wq].dtype == PRECIS_FLOAT8E4M3FN;
        if (pr_attr_int(n, "transB", 0) && !f8w) return PRECIS_OK;
        if (f8w != (g->tensors[xq].dtype == PRECIS_FLOAT8E4M3FN)) return PRECIS_OK;
    } else if (g->tensors[xq].dtype == PRECIS_FLOAT8E4M3FN) {
        return PRECIS_OK;
    }
    int bias = conv || n->op == PR_OP_FusedMatMul ? pr_node_in(n, 2) : -1;
    int z = conv || n->op == PR_OP_FusedMatMul ? pr_node_in(n, 3) : -1;
    if (z >= 0 && (dq_of(g, z, &zq, &zs) < 0 || g->tensors[zq].dtype == PRECIS_FLOAT8E4M3FN))
        zq = -1; /* an fp8 residual is read dequantized */
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

/* Elementwise node ni (Add, Sub, Mul; at least one operand a DQ, the other
 * DQ or float32, an activation after it absorbed) or average pool of a DQ
 * (rank 4, 2-D window: what the CPU pool kernel runs) => QBinary / QPool;
 * absorbs the Q after it. */
static precis_status lower_elem(pr_graph *g, pr_uses *u, int ni, bool *done, pr_err *e) {
    *done = false;
    const pr_node *n = &g->nodes[ni];
    bool bin = n->op == PR_OP_Add || n->op == PR_OP_Sub || n->op == PR_OP_Mul;
    bool pool = n->op == PR_OP_GlobalAveragePool || n->op == PR_OP_AveragePool;
    if ((!bin && !pool) || (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)) return PRECIS_OK;
    int y = pr_node_out(n, 0);
    if (n->n_outputs != 1 || y < 0 || g->tensors[y].dtype != PRECIS_FLOAT32) return PRECIS_OK;
    if (bin && (n->n_inputs != 2 || (n->opset < 7 && pr_attr_int(n, "broadcast", 0))))
        return PRECIS_OK;
    if (pool) {
        const int64_t *ks;
        int x = pr_node_in(n, 0);
        if (x < 0 || g->tensors[x].rank != 4 ||
            (n->op == PR_OP_AveragePool && pr_attr_ints(n, "kernel_shape", &ks) != 2))
            return PRECIS_OK;
    }
    int nin = bin ? 2 : 1, qin[2] = {-1, -1}, nq = 0;
    float sc[2] = {0, 0};
    for (int j = 0; j < nin; j++) {
        int t = n->inputs[j];
        if (dq_of(g, t, &qin[j], &sc[j]) >= 0) {
            if (g->tensors[qin[j]].dtype == PRECIS_FLOAT8E4M3FN) return PRECIS_OK; /* no fp8 QBinary */
            nq++;
        } else {
            if (!bin || t < 0 || g->tensors[t].dtype != PRECIS_FLOAT32) return PRECIS_OK;
            qin[j] = t;
        }
    }
    if (!nq) return PRECIS_OK;
    pr_act_match m = {0};
    m.out_node = -1;
    int yl = y; /* the float result the Q reads */
    if (bin && pr_match_act(g, u, y, true, &m)) yl = pr_node_out(&g->nodes[m.out_node], 0);
    else m.n_nodes = 0;
    float ys = 0;
    pr_dtype yt = PRECIS_FLOAT32;
    int qn = q_after(g, u, yl, &ys, &yt);
    const char *kind = pr_op_name(n->op);
    pr_node_retype(g, ni, bin ? PR_OP_QBinary : PR_OP_QPool, 1);
    if (pr_node_set_string(g, ni, "kind", kind, e)) return e->status;
    for (int j = 0; j < nin; j++) {
        if (pr_node_set_input(g, u, ni, j, qin[j], e)) return e->status;
        const char *an = pool ? "x_scale" : j ? "b_scale" : "a_scale";
        if (sc[j] > 0.0f && pr_node_set_float(g, ni, an, sc[j], e)) return e->status;
    }
    if (m.n_nodes && pr_node_set_act(g, ni, "act", &m.act, e)) return e->status;
    if (qn >= 0 && (pr_node_set_int(g, ni, "y_type", yt, e) ||
                    pr_node_set_float(g, ni, "y_scale", ys, e)))
        return e->status;
    int absorb[8], na = 0;
    for (int k = 0; k < m.n_nodes; k++) absorb[na++] = m.nodes[k];
    if (qn >= 0) absorb[na++] = qn;
    if (na && pr_fuse_absorb(g, u, ni, absorb, na, qn >= 0 ? qn : m.out_node, e) < 0)
        return e->status;
    *done = true;
    return PRECIS_OK;
}

/* ------------------------------------------------- back to float */

static int f32_scalar(pr_graph *g, const char *base, float v, pr_err *e) {
    char nm[600];
    snprintf(nm, sizeof nm, "%s/scale", base);
    return pr_graph_add_init_f32(g, nm, 0, NULL, &v, e);
}

static int zero_point(pr_graph *g, const char *base, pr_dtype dt, int64_t n, pr_err *e) {
    char nm[600];
    snprintf(nm, sizeof nm, "%s/zero_point", base);
    void *d = pr_edit_alloc((size_t)(n ? n : 1));
    if (!d) return pr_errf(e, PRECIS_ERR_OOM, "out of memory"), -1;
    memset(d, 0, (size_t)(n ? n : 1));
    int64_t dims[1] = {n};
    return pr_graph_add_init(g, nm, dt, n > 1 ? 1 : 0, dims, d, e);
}

/* A new tensor like t but of dtype dt, named t's name + suffix. */
static int like(pr_graph *g, int t, const char *suffix, pr_dtype dt, pr_err *e) {
    int64_t dims[PR_MAX_RANK];
    memcpy(dims, g->tensors[t].dims, sizeof dims);
    return pr_graph_new_tensor(g, g->tensors[t].name, suffix, dt, g->tensors[t].rank, dims, e);
}

/* op(q, scale, zp) -> out, inserted by precis. */
static int conv_node(pr_graph *g, pr_op op, int q, int scale, int zp, int out, int axis, pr_err *e) {
    char nm[640];
    snprintf(nm, sizeof nm, "%s/%s", g->tensors[q].name,
             op == PR_OP_QuantizeLinear ? "QuantizeLinear" : "DequantizeLinear");
    int ni = pr_node_new(g, op, g->tensors[zp].dtype == PRECIS_FLOAT8E4M3FN ? 19 : 13, nm, 3, 1, e);
    if (ni < 0) return -1;
    g->nodes[ni].inputs[0] = q;
    g->nodes[ni].inputs[1] = scale;
    g->nodes[ni].inputs[2] = zp;
    if (pr_node_set_output(g, ni, 0, out, e) || pr_node_set_int(g, ni, "precis_inserted", 1, e) ||
        (axis >= 0 && pr_node_set_int(g, ni, "axis", axis, e)))
        return -1;
    return ni;
}

/* Dequantized copy of quantized tensor q (scale tensor sc, or scalar s when
 * sc < 0; per-axis when the scale has several entries). */
static int dequantized(pr_graph *g, int q, int sc, float s, int axis, pr_err *e) {
    if (sc < 0 && (sc = f32_scalar(g, g->tensors[q].name, s, e)) < 0) return -1;
    int64_t n = g->tensors[sc].rank == 1 ? g->tensors[sc].dims[0] : 1;
    int zp = zero_point(g, g->tensors[q].name, g->tensors[q].dtype, n, e);
    int out = zp < 0 ? -1 : like(g, q, "/dequantized", PRECIS_FLOAT32, e);
    if (out < 0 || conv_node(g, PR_OP_DequantizeLinear, q, sc, zp, out, n > 1 ? axis : -1, e) < 0)
        return -1;
    return out;
}

/* Float initializer holding int8 initializer q dequantized per channel
 * along axis with scale initializer sc (what DequantizeLinear would give, as
 * a constant so that the float kernels take it as weights). */
static int dequantized_init(pr_graph *g, int q, int sc, int axis, pr_err *e) {
    const pr_tensor *Q = &g->tensors[q], *S = &g->tensors[sc];
    int64_t n = pr_numel(Q->rank, Q->dims), C = Q->dims[axis], inner = 1;
    for (int i = axis + 1; i < Q->rank; i++) inner *= Q->dims[i];
    bool one = S->rank == 1 && S->dims[0] == 1; /* per tensor (fp8 weights) */
    if (S->rank != 1 || (S->dims[0] != C && !one) || S->dtype != PRECIS_FLOAT32)
        return pr_errf(e, PRECIS_ERR_INTERNAL, "'%s': scale does not match its weights",
                       Q->name), -1;
    float *d = pr_edit_alloc((size_t)(n ? n : 1) * sizeof(float));
    if (!d) return pr_errf(e, PRECIS_ERR_OOM, "out of memory"), -1;
    const int8_t *qv = Q->data;
    const float *sv = S->data;
    for (int64_t i = 0; i < n; i++) {
        float v = Q->dtype == PRECIS_FLOAT8E4M3FN ? pr_e4m3_to_f32((uint8_t)qv[i]) : (float)qv[i];
        d[i] = v * sv[one ? 0 : (i / inner) % C];
    }
    int64_t dims[PR_MAX_RANK];
    memcpy(dims, Q->dims, sizeof dims);
    char nm[600];
    snprintf(nm, sizeof nm, "%s/dequantized", Q->name);
    return pr_graph_add_init(g, nm, PRECIS_FLOAT32, Q->rank, dims, d, e);
}

/* An int8 node no CPU kernel takes goes back to its float form between
 * DequantizeLinear / QuantizeLinear nodes (its originals stay its own). */
static precis_status unlower(pr_graph *g, int ni, pr_err *e) {
    pr_node n = g->nodes[ni];
    bool conv = n.op == PR_OP_QConv;
    float xs = pr_attr_float(&n, conv ? "x_scale" : "a_scale", 1.0f);
    float zs = pr_attr_float(&n, "z_scale", 1.0f);
    int x = pr_node_in(&n, 0), w = pr_node_in(&n, 1), ws = pr_node_in(&n, 2);
    int b = pr_node_in(&n, 3), z = pr_node_in(&n, 4), y = pr_node_out(&n, 0);
    bool tb = pr_attr_int(&n, "transB", 0) != 0;
    int wr = g->tensors[w].rank;
    int xf = dequantized(g, x, -1, xs, 0, e);
    int wf = xf < 0 ? -1 : dequantized_init(g, w, ws, conv || tb ? 0 : wr - 1, e);
    if (wf < 0) return e->status;
    int zf = z;
    if (z >= 0 && g->tensors[z].dtype != PRECIS_FLOAT32 && (zf = dequantized(g, z, -1, zs, 0, e)) < 0)
        return e->status;
    if (g->tensors[y].dtype != PRECIS_FLOAT32) {
        float ys = pr_attr_float(&n, "y_scale", 1.0f);
        int yf = like(g, y, "/float", PRECIS_FLOAT32, e);
        int sc = yf < 0 ? -1 : f32_scalar(g, g->tensors[y].name, ys, e);
        int zp = sc < 0 ? -1 : zero_point(g, g->tensors[y].name, g->tensors[y].dtype, 1, e);
        if (zp < 0 || conv_node(g, PR_OP_QuantizeLinear, yf, sc, zp, y, -1, e) < 0) return e->status;
        if (pr_node_set_output(g, ni, 0, yf, e)) return e->status;
    }
    int ins[4] = {xf, wf, b, zf};
    pr_node_retype(g, ni, conv ? PR_OP_FusedConv : PR_OP_FusedMatMul, 1);
    for (int i = 0; i < 4; i++)
        if (pr_node_set_input(g, NULL, ni, i, ins[i], e)) return e->status;
    g->nodes[ni].n_inputs = zf >= 0 ? 4 : (b >= 0 ? 3 : 2);
    return PRECIS_OK;
}

/* The smoothing Mul before QuantizeLinear qi (quantize.h) folded into its
 * scale: a per-channel QuantizeLinear over the last axis. */
static precis_status lower_smooth_q(pr_graph *g, pr_uses *u, int qi, bool *done, pr_err *e) {
    *done = false;
    const pr_node *q = &g->nodes[qi];
    if (q->op != PR_OP_QuantizeLinear || !pr_attr_int(q, "precis_inserted", 0)) return PRECIS_OK;
    int ts = pr_node_in(q, 0), mi = ts >= 0 ? pr_producer(g, ts) : -1, y = pr_node_out(q, 0);
    float a, z = 0;
    if (mi < 0 || y < 0 || !pr_const_scalar(g, pr_node_in(q, 1), &a) || !(a > 0.0f)) return PRECIS_OK;
    if (pr_node_in(q, 2) >= 0 && (!pr_const_scalar(g, pr_node_in(q, 2), &z) || z != 0.0f))
        return PRECIS_OK;
    const pr_node *m = &g->nodes[mi];
    if (m->op != PR_OP_Mul || !pr_attr_int(m, "precis_inserted", 0) || pr_uses_of(u, ts) != 1 ||
        pr_is_graph_output(g, ts))
        return PRECIS_OK;
    int x = pr_node_in(m, 0), c = pr_node_in(m, 1);
    const pr_tensor *X = x >= 0 ? &g->tensors[x] : NULL, *Cv = c >= 0 ? &g->tensors[c] : NULL;
    if (!X || !pr_is_init(g, c) || Cv->dtype != PRECIS_FLOAT32 || Cv->rank != 1 || X->rank < 1 ||
        X->dims[X->rank - 1] != Cv->dims[0] || Cv->dims[0] < 2)
        return PRECIS_OK;
    int64_t C = Cv->dims[0];
    float *sc = pr_edit_alloc((size_t)C * sizeof *sc);
    void *zp = pr_edit_alloc((size_t)C);
    if (!sc || !zp) {
        free(sc);
        free(zp);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    memset(zp, 0, (size_t)C);
    const float *inv = Cv->data;
    bool ok = true;
    for (int64_t k = 0; k < C; k++) {
        sc[k] = a / inv[k];
        ok &= isfinite(sc[k]) && sc[k] > 0.0f;
    }
    if (!ok) {
        free(sc);
        free(zp);
        return PRECIS_OK;
    }
    char nm[600];
    snprintf(nm, sizeof nm, "%s/channel_scale", q->name);
    pr_dtype zdt = g->tensors[y].dtype;
    int ts_ = pr_graph_add_init(g, nm, PRECIS_FLOAT32, 1, &C, sc, e);
    snprintf(nm, sizeof nm, "%s/channel_zero_point", g->nodes[qi].name);
    int tz = ts_ < 0 ? (free(zp), -1) : pr_graph_add_init(g, nm, zdt, 1, &C, zp, e);
    if (tz < 0) return e->status;
    if (pr_node_set_input(g, u, qi, 0, x, e) || pr_node_set_input(g, u, qi, 1, ts_, e) ||
        pr_node_set_input(g, u, qi, 2, tz, e) ||
        pr_node_set_int(g, qi, "axis", g->tensors[x].rank - 1, e))
        return e->status;
    pr_node_kill(g, u, mi);
    *done = true;
    return PRECIS_OK;
}

precis_status pr_quantize_lower(pr_graph *g, int verbose, bool cuda, pr_err *e) {
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, e);
    if (st) return st;
    int n_compute = 0, n_pass = 0, n_elem = 0, n_dropped = 0;
    /* the build's quantized type: int8, or fp8 (stamped by pr_prec_stamp) */
    pr_dtype qt = g->prec && g->prec->dflt == PRECIS_FLOAT8E4M3FN ? PRECIS_FLOAT8E4M3FN
                                                                   : PRECIS_INT8;
    const char *qn = qt == PRECIS_INT8 ? "int8" : "fp8";
    for (int i = 0; i < g->n_nodes; i++) {
        if (pr_node_dead(&g->nodes[i])) continue;
        /* a precision rule keeps it float: its DQ inputs and Q output stay steps of their own */
        if (g->prec && pr_prec_effective(g, &g->nodes[i]) != qt) continue;
        bool done = false;
        if ((st = lower_compute(g, &u, i, &done, e))) goto out;
        if (done) {
            n_compute++;
            continue;
        }
        if ((st = lower_passthrough(g, &u, i, &done, e))) goto out;
        if (done) {
            n_pass++;
            continue;
        }
        if ((st = lower_elem(g, &u, i, &done, e))) goto out;
        n_elem += done;
        if (done || cuda) continue; /* the CUDA quantize kernel is per tensor */
        if ((st = lower_smooth_q(g, &u, i, &done, e))) goto out;
        n_elem += done;
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
    /* int8 nodes the backend cannot run go back to float */
    int n_back = 0;
    for (int i = 0, nn = g->n_nodes; i < nn && !st; i++) {
        pr_node *n = &g->nodes[i];
        if (pr_node_dead(n) || (n->op != PR_OP_QConv && n->op != PR_OP_QMatMul)) continue;
        bool runs = false;
#ifdef PRECIS_HAVE_CUDA
        if (cuda) runs = pr_cuda_find_impl(g, n) != NULL;
#endif
        if (!cuda) runs = pr_cpu_find_impl(g, n) != NULL;
        if (runs) continue;
        if (verbose)
            fprintf(stderr, "precis: %s: node '%s' (%s) has no %s %s kernel: stays float\n", qn,
                    n->name, n->op_type, qn, cuda ? "CUDA" : "CPU");
        st = unlower(g, i, e);
        n_back++;
    }
    if (!st) st = pr_graph_compact(g, e);
    if (!st && verbose)
        fprintf(stderr, "precis: %s lowering: %d compute nodes (%d back to float), %d "
                "pass-through, %d elementwise/pool, %d Q/DQ dropped\n", qn, n_compute, n_back, n_pass,
                n_elem, n_dropped);
out:
    pr_uses_free(&u);
    return st;
}

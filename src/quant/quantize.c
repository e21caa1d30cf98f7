/* pr_quantize_insert: calibrated ranges -> explicit QDQ graph (quantize.h). */
#include "quant/quantize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/prec_req.h"

#define Q_OPSET 13
#define Q_OPSET_FP8 19 /* QuantizeLinear / DequantizeLinear with float8 types */
#define E4M3_MAX 448.0f
/* weight channels whose largest |w| is below this quantize to zeros */
#define PR_W_AMAX_MIN 1e-30f

bool pr_quant_passthrough(const pr_graph *g, const pr_node *n, int *data_inputs) {
    int d = 1;
    switch (n->op) {
    case PR_OP_Reshape:
    case PR_OP_Flatten:
    case PR_OP_Transpose:
    case PR_OP_Squeeze:
    case PR_OP_Unsqueeze:
    case PR_OP_Slice:
    case PR_OP_Split:
    case PR_OP_MaxPool:
    case PR_OP_DepthToSpace:
    case PR_OP_Identity: break;
    case PR_OP_Concat: d = n->n_inputs; break;
    case PR_OP_Resize:
        if (strcmp(pr_attr_str(n, "mode", "nearest"), "nearest") != 0) return false;
        break;
    default: return false;
    }
    if (n->op == PR_OP_MaxPool && pr_node_out(n, 1) >= 0) return false; /* Indices */
    if (data_inputs) *data_inputs = d;
    (void)g;
    return true;
}

/* A float32 activation: not an initializer, known rank. */
static bool activation(const pr_graph *g, int t) {
    return t >= 0 && !(g->tensors[t].flags & PR_T_INIT) && g->tensors[t].dtype == PRECIS_FLOAT32 &&
           g->tensors[t].rank >= 0;
}

static bool is_fp8(const pr_quant_opts *o) { return o->qtype == PRECIS_FLOAT8E4M3FN; }
static pr_dtype qtype_of(const pr_quant_opts *o) { return is_fp8(o) ? o->qtype : PRECIS_INT8; }

/* A precision rule keeps n in a float type (int8 / fp8 builds stamp every graph). */
static bool keep_float(const pr_graph *g, const pr_node *n, pr_dtype qt) {
    return g->prec && pr_prec_effective(g, n) != qt;
}

static bool f32_init(const pr_graph *g, int t) {
    return pr_is_init(g, t) && g->tensors[t].dtype == PRECIS_FLOAT32;
}

/* What an int8 node quantizes: activations (a, b: -1 none) and the weight
 * initializer w with the per-channel axis of its DequantizeLinear; elem: an
 * elementwise or pooling node (QBinary / QPool after lowering). */
typedef struct qcompute {
    int a, b, w, w_axis;
    bool elem;
} qcompute;

static bool compute_node(const pr_graph *g, const pr_node *n, bool fp8, qcompute *q) {
    q->a = q->b = q->w = -1;
    q->w_axis = 0;
    q->elem = false;
    int x = pr_node_in(n, 0), y = pr_node_in(n, 1);
    if (!activation(g, x)) return false;
    if (n->op == PR_OP_FusedConv) {
        if (fp8) return false; /* fp8: linear layers only */
        if (!f32_init(g, y) || g->tensors[y].rank != 4 || g->tensors[x].rank != 4) return false;
        q->a = x;
        q->w = y;
        return true;
    }
    if (n->op != PR_OP_FusedMatMul && n->op != PR_OP_MatMul) return false;
    if (pr_attr_int(n, "transA", 0)) return false;
    bool tb = pr_attr_int(n, "transB", 0) != 0;
    q->a = x;
    if (f32_init(g, y) && g->tensors[y].rank == 2) {
        q->w = y;
        q->w_axis = tb ? 0 : 1;
        return true;
    }
    if (activation(g, y) && !tb && !fp8) {
        q->b = y;
        return true;
    }
    return false;
}

/* Is t constant over H and W (its dims aligned with the last two of a
 * rank-4 tensor are 1: a per-channel, per-sample or scalar vector)? */
static bool spatially_const(const pr_tensor *t) {
    for (int d = 0; d < t->rank; d++)
        if (d + 4 - t->rank >= 2 && t->dims[d] != 1) return false;
    return t->rank >= 0;
}

/* Operand t of an elementwise node with rank-4 output y: over H and W
 * (the last two dims, right-aligned) either constant (per channel, per
 * sample or scalar) or not broadcast (y's extent, as far as the graph
 * knows); batch and channel dims may broadcast either way. Excludes masks
 * like [N, 1, 1, S] on attention scores. */
static bool elem_operand(const pr_graph *g, const pr_uses *u, int t, int y) {
    const pr_tensor *x = &g->tensors[t], *o = &g->tensors[y];
    if (x->rank < 0 || x->rank > 4) return false;
    if (pr_same_shape(g, u, t, y) || spatially_const(x)) return true;
    for (int d = 2; d < 4; d++) {
        int xd = d - (4 - x->rank);
        if ((xd < 0 || x->dims[xd] == 1) && o->dims[d] != 1) return false; /* broadcast */
    }
    return true;
}

/* Does a Softmax read y? (attention scores stay float) */
static bool feeds_softmax(const pr_graph *g, int y) {
    int cs[16], nc = pr_consumers(g, y, cs, 16);
    for (int k = 0; k < nc && k < 16; k++)
        if (g->nodes[cs[k]].op == PR_OP_Softmax || g->nodes[cs[k]].op == PR_OP_LogSoftmax)
            return true;
    return false;
}

/* Add/Sub/Mul of float32 rank-4 feature maps (operands as elem_operand)
 * not read by a Softmax, and GlobalAveragePool / 2-D AveragePool: int8
 * nodes whose feature-map inputs are quantized (QBinary / QPool after
 * lowering). Constants stay float, and so do per-channel vectors beside a
 * feature map (a squeeze-excitation gate: tiny, and a gate clipped by a
 * calibrator scales its whole channel). Other ranks are left alone (box
 * decoding, sequence models and the like stay float). */
static bool elem_node(const pr_graph *g, const pr_uses *u, const pr_node *n, qcompute *q) {
    q->a = q->b = q->w = -1;
    q->w_axis = 0;
    q->elem = true;
    if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return false;
    int y = pr_node_out(n, 0);
    if (n->n_outputs != 1 || y < 0 || g->tensors[y].dtype != PRECIS_FLOAT32 ||
        g->tensors[y].rank != 4)
        return false;
    if (n->op == PR_OP_GlobalAveragePool || n->op == PR_OP_AveragePool) {
        const int64_t *ks;
        if (n->op == PR_OP_AveragePool && pr_attr_ints(n, "kernel_shape", &ks) != 2) return false;
        int x = pr_node_in(n, 0);
        if (!activation(g, x) || g->tensors[x].rank != 4) return false;
        q->a = x;
        return true;
    }
    if (n->op != PR_OP_Add && n->op != PR_OP_Sub && n->op != PR_OP_Mul) return false;
    if (n->n_inputs != 2 || (n->opset < 7 && pr_attr_int(n, "broadcast", 0))) return false;
    if (feeds_softmax(g, y)) return false;
    for (int j = 0; j < 2; j++) {
        int t = n->inputs[j];
        if (t < 0 || !elem_operand(g, u, t, y)) return false;
        if (activation(g, t)) {
            if (spatially_const(&g->tensors[t]) && !spatially_const(&g->tensors[y])) continue;
            if (j) q->b = t;
            else q->a = t;
        } else if (!f32_init(g, t)) {
            return false;
        }
    }
    return q->a >= 0 || q->b >= 0;
}

/* ---------------------------------------------------------- union-find */

static int uf_find(int *p, int x) {
    while (p[x] != x) x = p[x] = p[p[x]];
    return x;
}
static void uf_join(int *p, int a, int b) {
    a = uf_find(p, a);
    b = uf_find(p, b);
    if (a != b) p[a < b ? b : a] = a < b ? a : b;
}

/* ------------------------------------------------------------ insertion */

/* Node op(in0, scale, zp [axis]) -> out, marked as inserted by precis. */
static int qdq_node(pr_graph *g, pr_op op, const char *name, int in0, int scale, int zp, int out,
                    int axis, pr_err *e) {
    bool f8 = g->tensors[zp].dtype == PRECIS_FLOAT8E4M3FN;
    int ni = pr_node_new(g, op, f8 ? Q_OPSET_FP8 : Q_OPSET, name, 3, 1, e);
    if (ni < 0) return -1;
    pr_node *n = &g->nodes[ni];
    n->inputs[0] = in0;
    n->inputs[1] = scale;
    n->inputs[2] = zp;
    if (pr_node_set_output(g, ni, 0, out, e) || pr_node_set_int(g, ni, "precis_inserted", 1, e))
        return -1;
    if (axis >= 0 && pr_node_set_int(g, ni, "axis", axis, e)) return -1;
    return ni;
}

/* "a" + "b" into buf (truncated to cap). */
static const char *join(char *buf, size_t cap, const char *a, const char *b) {
    snprintf(buf, cap, "%s%s", a, b);
    return buf;
}

static int scalar_init(pr_graph *g, const char *base, pr_dtype dt, float v, pr_err *e) {
    void *d = pr_edit_alloc(8);
    if (!d) return pr_errf(e, PRECIS_ERR_OOM, "out of memory"), -1;
    memset(d, 0, 8);
    if (dt == PRECIS_FLOAT32) memcpy(d, &v, sizeof v);
    return pr_graph_add_init(g, base, dt, 0, NULL, d, e);
}

/* Quantize activation t with scale s as dt: t -> Q -> t_q -> DQ -> t_dq,
 * every consumer of t (but the new Q) reading t_dq; with float_residual a
 * conv/matmul reading t as its residual (input 3) keeps the float values:
 * t's producer stays a float step, so they exist anyway, and a residual
 * stream rounded to one per-tensor int8 scale loses the small channels
 * beside outlier ones (BERT's LayerNorm outputs). */
static precis_status quantize_tensor(pr_graph *g, int t, float s, pr_dtype dt, bool float_residual,
                                     pr_err *e) {
    char base[520];
    snprintf(base, sizeof base, "%s", g->tensors[t].name);
    int64_t dims[PR_MAX_RANK];
    int rank = g->tensors[t].rank;
    memcpy(dims, g->tensors[t].dims, sizeof dims);
    char nm[600];
    int sc = scalar_init(g, join(nm, sizeof nm, base, "/scale"), PRECIS_FLOAT32, s, e);
    if (sc < 0) return e->status;
    int zp = scalar_init(g, join(nm, sizeof nm, base, "/zero_point"), dt, 0, e);
    if (zp < 0) return e->status;
    int tq = pr_graph_new_tensor(g, base, "/quantized", dt, rank, dims, e);
    int tdq = tq < 0 ? -1
                     : pr_graph_new_tensor(g, base, "/dequantized", PRECIS_FLOAT32, rank, dims, e);
    if (tdq < 0) return e->status;
    int n_nodes = g->n_nodes;
    for (int i = 0; i < n_nodes; i++) {
        pr_node *n = &g->nodes[i];
        if (pr_node_dead(n)) continue;
        bool fused = n->op == PR_OP_FusedMatMul || n->op == PR_OP_FusedConv;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] == t && !(float_residual && fused && j == 3)) n->inputs[j] = tdq;
    }
    snprintf(nm, sizeof nm, "%s/QuantizeLinear", base);
    if (qdq_node(g, PR_OP_QuantizeLinear, nm, t, sc, zp, tq, -1, e) < 0) return e->status;
    snprintf(nm, sizeof nm, "%s/DequantizeLinear", base);
    if (qdq_node(g, PR_OP_DequantizeLinear, nm, tq, sc, zp, tdq, -1, e) < 0) return e->status;
    return PRECIS_OK;
}

static float amax_f32(const pr_tensor *W) {
    const float *src = W->data;
    float amax = 0;
    for (int64_t i = 0, n = pr_numel(W->rank, W->dims); i < n; i++)
        if (fabsf(src[i]) > amax) amax = fabsf(src[i]);
    return amax;
}

/* Weight initializer w of node ni (input slot): e4m3 with one scale
 * (amax / 448; amax the largest |w| of w and its siblings: quantize.h)
 * through a per-tensor DequantizeLinear. */
static precis_status quantize_weight_fp8(pr_graph *g, int ni, int slot, int w, float amax,
                                         pr_err *e) {
    const pr_tensor *W = &g->tensors[w];
    int rank = W->rank;
    int64_t dims[PR_MAX_RANK];
    memcpy(dims, W->dims, sizeof dims);
    int64_t n = pr_numel(rank, dims);
    const float *src = W->data;
    uint8_t *q = pr_edit_alloc((size_t)(n ? n : 1));
    if (!q) return pr_errf(e, PRECIS_ERR_OOM, "out of memory quantizing '%s'", W->name);
    float s = amax >= PR_W_AMAX_MIN && isfinite(amax) ? amax / E4M3_MAX : 1.0f;
    for (int64_t i = 0; i < n; i++) q[i] = pr_f32_to_e4m3(src[i] / s);
    char base[600], nm[640];
    snprintf(base, sizeof base, "%s", W->name);
    int tq = pr_graph_add_init(g, join(nm, sizeof nm, base, "/quantized"), PRECIS_FLOAT8E4M3FN,
                               rank, dims, q, e);
    int ts = tq < 0 ? -1
                    : scalar_init(g, join(nm, sizeof nm, base, "/scale"), PRECIS_FLOAT32, s, e);
    int tz = ts < 0 ? -1
                    : scalar_init(g, join(nm, sizeof nm, base, "/zero_point"),
                                  PRECIS_FLOAT8E4M3FN, 0, e);
    int tdq = tz < 0 ? -1
                     : pr_graph_new_tensor(g, base, "/dequantized", PRECIS_FLOAT32, rank, dims, e);
    if (tdq < 0) return e->status;
    snprintf(nm, sizeof nm, "%s/DequantizeLinear", base);
    if (qdq_node(g, PR_OP_DequantizeLinear, nm, tq, ts, tz, tdq, -1, e) < 0) return e->status;
    g->nodes[ni].inputs[slot] = tdq;
    return PRECIS_OK;
}

/* Weight initializer w of node ni (input slot): int8 per channel along axis
 * through a DequantizeLinear. */
static precis_status quantize_weight(pr_graph *g, int ni, int slot, int w, int axis, pr_err *e) {
    const pr_tensor *W = &g->tensors[w];
    int rank = W->rank;
    int64_t dims[PR_MAX_RANK];
    memcpy(dims, W->dims, sizeof dims);
    int64_t C = dims[axis], inner = 1, n = pr_numel(rank, dims);
    for (int i = axis + 1; i < rank; i++) inner *= dims[i];
    const float *src = W->data;
    int8_t *q = pr_edit_alloc((size_t)(n ? n : 1));
    float *sc = pr_edit_alloc((size_t)C * sizeof(float));
    int8_t *zp = pr_edit_alloc((size_t)C);
    if (!q || !sc || !zp) {
        free(q);
        free(sc);
        free(zp);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory quantizing '%s'", W->name);
    }
    memset(zp, 0, (size_t)C);
    for (int64_t c = 0; c < C; c++) sc[c] = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = (i / inner) % C;
        float a = fabsf(src[i]);
        if (a > sc[c]) sc[c] = a;
    }
    /* A channel of denormal-sized weights (dead channels after BatchNorm
     * folding hold values like 1e-39) quantizes to zeros with scale 1: its
     * own scale would make bias / (x_scale * w_scale) overflow in the int8
     * kernels' bias, for a contribution that is nil in FP32 as well. */
    for (int64_t c = 0; c < C; c++) sc[c] = sc[c] >= PR_W_AMAX_MIN ? sc[c] / 127.0f : 1.0f;
    for (int64_t i = 0; i < n; i++) {
        float v = nearbyintf(src[i] / sc[(i / inner) % C]);
        q[i] = (int8_t)(v > 127.0f ? 127 : (v < -127.0f ? -127 : v));
    }
    char base[600], nm[640];
    snprintf(base, sizeof base, "%s", W->name);
    int tq = pr_graph_add_init(g, join(nm, sizeof nm, base, "/quantized"), PRECIS_INT8,
                               rank, dims, q, e);
    int64_t cd[1] = {C};
    int ts = tq < 0 ? -1
                    : pr_graph_add_init(g, join(nm, sizeof nm, base, "/scale"),
                                        PRECIS_FLOAT32, 1, cd, sc, e);
    if (tq < 0 || ts < 0) {
        if (ts < 0 && tq >= 0) free(zp);
        else if (tq < 0) free(sc), free(zp);
        return e->status;
    }
    int tz = pr_graph_add_init(g, join(nm, sizeof nm, base, "/zero_point"), PRECIS_INT8,
                               1, cd, zp, e);
    if (tz < 0) return e->status;
    int tdq = pr_graph_new_tensor(g, base, "/dequantized", PRECIS_FLOAT32, rank, dims, e);
    if (tdq < 0) return e->status;
    snprintf(nm, sizeof nm, "%s/DequantizeLinear", base);
    if (qdq_node(g, PR_OP_DequantizeLinear, nm, tq, ts, tz, tdq, axis, e) < 0) return e->status;
    g->nodes[ni].inputs[slot] = tdq;
    return PRECIS_OK;
}

/* ------------------------------------------------------------ smoothing */

typedef struct smoothed {
    int t;      /* the new tensor x / s */
    float amax; /* its max |value| */
    pr_dtype dt;
} smoothed;

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Is node i a linear layer reading t as its A operand (int8, constant rank-2
 * weight with K == k rows in the channel axis)? */
static bool linear_reader(const pr_graph *g, const bool *isq, const qcompute *qc, int i, int t,
                          int64_t k) {
    const pr_node *n = &g->nodes[i];
    if (!isq[i] || qc[i].elem || qc[i].a != t || qc[i].b >= 0 || qc[i].w < 0) return false;
    if (n->op != PR_OP_MatMul && n->op != PR_OP_FusedMatMul) return false;
    const pr_tensor *W = &g->tensors[qc[i].w];
    int64_t kw = pr_attr_int(n, "transB", 0) ? W->dims[1] : W->dims[0];
    return W->rank == 2 && kw == k && pr_node_in(n, 0) == t;
}

/* Smooth activation t (quantize.h): the Mul, the scaled weights, *out.
 * 1 done, 0 (nothing changed) when t does not qualify, -1 error (e set). */
static int smooth_tensor(pr_graph *g, const pr_quant_opts *o, int t, int nn, const bool *isq,
                          qcompute *qc, bool float_readers_ok, pr_dtype dt, smoothed *out,
                          pr_err *e) {
    const pr_calib_tensor *ct = pr_calib_get(o->stats, pr_calib_find(o->stats, g->tensors[t].name));
    int64_t C = ct ? ct->n_chan : 0;
    if (C <= 0 || C > (1 << 20) || g->tensors[t].rank < 2 || g->tensors[t].dims[g->tensors[t].rank - 1] != C)
        return 0;
    int lin = 0;
    for (int i = 0; i < nn; i++) {
        const pr_node *n = &g->nodes[i];
        if (pr_node_dead(n)) continue;
        for (int j = 0; j < n->n_inputs; j++) {
            if (n->inputs[j] != t) continue;
            /* other readers take the float t: a float node, or a residual input */
            bool residual = j == 3 && (n->op == PR_OP_FusedMatMul || n->op == PR_OP_FusedConv);
            if (j == 0 && linear_reader(g, isq, qc, i, t, C)) lin++;
            else if (!float_readers_ok || (isq[i] && !residual) || pr_quant_passthrough(g, n, NULL))
                return 0;
        }
    }
    if (!lin) return 0;
    float *med = malloc((size_t)C * sizeof *med), *wm = calloc((size_t)C, sizeof *wm);
    if (!med || !wm) {
        free(med);
        free(wm);
        pr_errf(e, PRECIS_ERR_OOM, "out of memory smoothing '%s'", g->tensors[t].name);
        return -1;
    }
    bool ok = true;
    {
        memcpy(med, ct->chan_amax, (size_t)C * sizeof *med);
        qsort(med, (size_t)C, sizeof *med, cmp_float);
        float median = med[C / 2], top = med[C - 1];
        ok = median > 0 && top > o->smooth_spread * median;
    }
    for (int i = 0; ok && i < nn; i++) {
        if (pr_node_dead(&g->nodes[i]) || !linear_reader(g, isq, qc, i, t, C)) continue;
        const pr_tensor *W = &g->tensors[qc[i].w];
        bool tb = pr_attr_int(&g->nodes[i], "transB", 0) != 0;
        int64_t N = tb ? W->dims[0] : W->dims[1];
        const float *w = W->data;
        for (int64_t c = 0; c < C; c++)
            for (int64_t k = 0; k < N; k++) {
                float a = fabsf(tb ? w[k * C + c] : w[c * N + k]);
                if (a > wm[c]) wm[c] = a;
            }
    }
    if (!ok) {
        free(med);
        free(wm);
        return 0;
    }
    /* s into med, 1 / s into wm; amax of x / s */
    float amax = 0;
    for (int64_t c = 0; c < C; c++) {
        float xm = ct->chan_amax[c], f = 1.0f;
        if (xm > 0 && wm[c] > 0) {
            f = powf(xm, o->smooth_alpha) / powf(wm[c], 1.0f - o->smooth_alpha);
            if (!(f > 1e-6f && f < 1e6f)) f = 1.0f;
        }
        med[c] = f;
        wm[c] = 1.0f / f;
        if (xm / f > amax) amax = xm / f;
    }
    char nm[640];
    const char *base = g->tensors[t].name;
    int64_t cd[1] = {C};
    int tinv = pr_graph_add_init_f32(g, join(nm, sizeof nm, base, "/smooth_inv"), 1, cd, wm, e);
    int64_t dims[PR_MAX_RANK];
    memcpy(dims, g->tensors[t].dims, sizeof dims);
    int ts = tinv < 0 ? -1
                      : pr_graph_new_tensor(g, base, "/smoothed", PRECIS_FLOAT32,
                                            g->tensors[t].rank, dims, e);
    snprintf(nm, sizeof nm, "%s/Smooth", base);
    int mi = ts < 0 ? -1 : pr_node_new(g, PR_OP_Mul, Q_OPSET, nm, 2, 1, e);
    if (mi < 0 || pr_node_set_output(g, mi, 0, ts, e) ||
        pr_node_set_int(g, mi, "precis_inserted", 1, e)) {
        free(med);
        free(wm);
        return -1;
    }
    g->nodes[mi].inputs[0] = t;
    g->nodes[mi].inputs[1] = tinv;
    int rc = 1;
    for (int i = 0; i < nn && rc > 0; i++) {
        if (pr_node_dead(&g->nodes[i]) || !linear_reader(g, isq, qc, i, t, C)) continue;
        const pr_tensor *W = &g->tensors[qc[i].w];
        bool tb = pr_attr_int(&g->nodes[i], "transB", 0) != 0;
        int64_t wd[2] = {W->dims[0], W->dims[1]}, N = tb ? wd[0] : wd[1];
        float *ws = malloc((size_t)(C * N) * sizeof *ws);
        if (!ws) {
            pr_errf(e, PRECIS_ERR_OOM, "out of memory smoothing '%s'", base);
            rc = -1;
            break;
        }
        const float *w = W->data;
        for (int64_t c = 0; c < C; c++)
            for (int64_t k = 0; k < N; k++) {
                int64_t at = tb ? k * C + c : c * N + k;
                ws[at] = w[at] * med[c];
            }
        snprintf(nm, sizeof nm, "%s/smoothed", W->name);
        int wn = pr_graph_add_init_f32(g, nm, 2, wd, ws, e);
        free(ws);
        if (wn < 0) {
            rc = -1;
            break;
        }
        g->nodes[i].inputs[0] = ts;
        g->nodes[i].inputs[1] = wn;
        qc[i].a = ts;
        qc[i].w = wn;
    }
    free(med);
    free(wm);
    out->t = ts;
    out->amax = amax;
    out->dt = dt;
    return rc;
}

/* Do t's float values exist in the int8 graph (its producer stays a float
 * step: not an int8 node nor an int8 pass-through)? */
static bool float_source(const pr_graph *g, const bool *isq, const unsigned char *want, int t) {
    int p = g->tensors[t].producer, nd = 0;
    if (p < 0) return true;
    if (isq[p]) return false;
    if (pr_quant_passthrough(g, &g->nodes[p], &nd))
        for (int j = 0; j < nd && j < g->nodes[p].n_inputs; j++)
            if (g->nodes[p].inputs[j] >= 0 && want[g->nodes[p].inputs[j]]) return false;
    return true;
}

precis_status pr_quantize_insert(pr_graph *g, const pr_quant_opts *o, pr_quant_report *rep,
                                 pr_err *e) {
    pr_quant_report r = {0};
    int nt = g->n_tensors, nn = g->n_nodes;
    unsigned char *want = calloc((size_t)nt + 1, 1);
    int *uf = malloc(((size_t)nt + 1) * sizeof *uf);
    qcompute *qc = calloc((size_t)nn + 1, sizeof *qc);
    bool *isq = calloc((size_t)nn + 1, sizeof *isq);
    float *gmax = malloc(((size_t)nt + 1) * sizeof *gmax);
    unsigned char *gneg = calloc((size_t)nt + 1, 1), *fsrc = calloc((size_t)nt + 1, 1);
    pr_uses u = {0};
    smoothed *sm = NULL;
    int n_sm = 0;
    precis_status st = PRECIS_OK;
    bool fp8 = is_fp8(o);
    pr_dtype qt = qtype_of(o);
    const char *qn = fp8 ? "fp8" : "int8";
    if (!want || !uf || !qc || !isq || !gmax || !gneg || !fsrc) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    if ((st = pr_uses_build(g, &u, e))) goto done;
    for (int t = 0; t < nt; t++) uf[t] = t;
    /* 1. compute nodes and the activations they read */
    for (int i = 0; i < nn; i++) {
        const pr_node *n = &g->nodes[i];
        if (!pr_node_dead(n) && keep_float(g, n, qt)) { /* a rule asks for a float type */
            if (compute_node(g, n, fp8, &qc[i])) r.float_nodes++;
            qc[i] = (qcompute){-1, -1, -1, 0, false};
            continue;
        }
        if (!pr_node_dead(n) && !fp8 && !compute_node(g, n, fp8, &qc[i]) &&
            elem_node(g, &u, n, &qc[i])) {
            /* elementwise / pooling: int8 when every activation operand has statistics */
            if ((qc[i].a < 0 || pr_calib_find(o->stats, g->tensors[qc[i].a].name) >= 0) &&
                (qc[i].b < 0 || pr_calib_find(o->stats, g->tensors[qc[i].b].name) >= 0)) {
                isq[i] = true;
                r.elem_nodes++;
                if (qc[i].a >= 0) want[qc[i].a] = 1;
                if (qc[i].b >= 0) want[qc[i].b] = 1;
            } else {
                pr_prec_note(g, n, "no calibration data for its inputs");
            }
            continue;
        }
        if (pr_node_dead(n) || !compute_node(g, n, fp8, &qc[i])) {
            bool attn = n->op == PR_OP_Attention; /* its products read activations only */
            if (!pr_node_dead(n) && (n->op == PR_OP_FusedConv || n->op == PR_OP_FusedMatMul ||
                                     n->op == PR_OP_MatMul || n->op == PR_OP_Conv || attn)) {
                r.float_nodes++;
                if (o->verbose)
                    fprintf(stderr, "precis: %s: node '%s' (%s) stays float (%s)\n", qn, n->name,
                            n->op_type, attn ? "no quantized attention kernel" : "operands");
                pr_prec_note(g, n, "%s", attn ? "no quantized attention kernel"
                                     : fp8 ? "fp8 takes linear layers with constant weights only"
                                           : "its operands have no int8 form (not constant weights)");
            } else if (!pr_node_dead(n) && !pr_quant_passthrough(g, n, NULL)) {
                pr_prec_note(g, n, "no %s kernel for %s", qn, n->op_type);
            }
            continue;
        }
        bool ok = true;
        int acts[2] = {qc[i].a, qc[i].b};
        for (int k = 0; k < 2; k++)
            if (acts[k] >= 0 && pr_calib_find(o->stats, g->tensors[acts[k]].name) < 0)
                ok = false;
        if (!ok) {
            pr_prec_note(g, n, "no calibration data for its input");
            r.float_nodes++;
            if (o->verbose)
                fprintf(stderr, "precis: %s: node '%s' (%s) stays float (no calibration data "
                        "for its input)\n", qn, n->name, n->op_type);
            continue;
        }
        isq[i] = true;
        for (int k = 0; k < 2; k++)
            if (acts[k] >= 0) want[acts[k]] = 1;
        int z = n->op == PR_OP_FusedConv ? pr_node_in(n, 3) : -1, zp; /* X, W, B, Z */
        if (o->cuda && z >= 0 && activation(g, z) &&
            (zp = g->tensors[z].producer) >= 0 && g->nodes[zp].op == PR_OP_FusedConv &&
            !keep_float(g, &g->nodes[zp], qt) &&
            (g->nodes[zp].req_output == PRECIS_UNDEFINED ||
             g->nodes[zp].req_output == PRECIS_INT8) &&
            pr_calib_find(o->stats, g->tensors[z].name) >= 0)
            want[z] = 1;
    }
    /* an int8 output type asked of an int8 node: its output is quantized
     * (its consumers then read int8 values whatever they compute in) */
    for (int i = 0; i < nn; i++) {
        const pr_node *n = &g->nodes[i];
        int y = pr_node_out(n, 0);
        if (!isq[i] || n->req_output != qt || !activation(g, y)) continue;
        if (pr_calib_find(o->stats, g->tensors[y].name) >= 0) want[y] = 1;
        else pr_prec_note(g, n, "no calibration data for its output");
    }
    /* 2. backwards through pass-through nodes whose output is wanted (not fp8: e4m3
     * tensors feed the FP8 GEMMs only; a head-merge Transpose stays fp16, where the
     * cuda attention folds it into its store) */
    for (bool changed = !fp8; changed;) {
        changed = false;
        for (int i = nn - 1; i >= 0; i--) {
            const pr_node *n = &g->nodes[i];
            int nd;
            if (pr_node_dead(n) || keep_float(g, n, qt) || !pr_quant_passthrough(g, n, &nd))
                continue;
            bool out_wanted = false;
            for (int j = 0; j < n->n_outputs; j++)
                if (n->outputs[j] >= 0 && want[n->outputs[j]]) out_wanted = true;
            if (!out_wanted) continue;
            bool ins_ok = true;
            for (int j = 0; j < nd && j < n->n_inputs; j++) {
                int t = n->inputs[j];
                if (!activation(g, t) || pr_calib_find(o->stats, g->tensors[t].name) < 0)
                    ins_ok = false;
            }
            if (!ins_ok) continue;
            for (int j = 0; j < nd && j < n->n_inputs; j++) {
                int t = n->inputs[j];
                if (!want[t]) want[t] = 1, changed = true;
                for (int k = 0; k < n->n_outputs; k++)
                    if (n->outputs[k] >= 0 && want[n->outputs[k]]) uf_join(uf, t, n->outputs[k]);
            }
        }
    }
    /* 3. one scale per group: uint8 when no member saw a negative value */
    for (int t = 0; t < nt; t++) gmax[t] = 0.0f;
    for (int t = 0; t < nt; t++) {
        if (!want[t]) continue;
        const pr_calib_tensor *ct = pr_calib_get(o->stats, pr_calib_find(o->stats, g->tensors[t].name));
        if (ct->count && ct->min < 0.0) gneg[uf_find(uf, t)] = 1;
    }
    /* the B operand of an activation x activation MatMul is int8 (the int8
     * matmul kernels take signed weights only) */
    for (int i = 0; i < nn; i++)
        if (isq[i] && !qc[i].elem && qc[i].b >= 0) gneg[uf_find(uf, qc[i].b)] = 1;
    /* float values that survive quantization, decided before the graph changes below */
    for (int t = 0; t < nt; t++) fsrc[t] = want[t] && float_source(g, isq, want, t);
    /* 3b. smoothing: tensors alone in their group (no pass-through shares the scale) */
    if (o->smooth_alpha > 0) {
        int *members = calloc((size_t)nt + 1, sizeof *members);
        sm = calloc((size_t)nt + 1, sizeof *sm);
        if (!members || !sm) {
            free(members);
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto done;
        }
        for (int t = 0; t < nt; t++)
            if (want[t]) members[uf_find(uf, t)]++;
        for (int t = 0; t < nt; t++) {
            if (!want[t] || members[uf_find(uf, t)] != 1) continue;
            pr_dtype dt = gneg[uf_find(uf, t)] || o->signed_only ? PRECIS_INT8 : PRECIS_UINT8;
            int rc = smooth_tensor(g, o, t, nn, isq, qc, fsrc[t], dt, &sm[n_sm], e);
            if (rc < 0) {
                free(members);
                st = e->status;
                goto done;
            }
            if (rc > 0) want[t] = 0, n_sm++;
        }
        free(members);
    }
    for (int t = 0; t < nt; t++) {
        if (!want[t]) continue;
        int root = uf_find(uf, t);
        double amax = 0;
        int levels = gneg[root] ? 128 : 256;
        if ((st = pr_calib_amax(o->stats, pr_calib_find(o->stats, g->tensors[t].name), &o->cfg,
                                levels, &amax, e)))
            goto done;
        if (amax > gmax[root]) gmax[root] = (float)amax;
    }
    /* 4. weights, then activations (new nodes appended; compacted below) */
    for (int i = 0; i < nn; i++) {
        if (!isq[i] || qc[i].elem) continue;
        r.compute_nodes++;
        if (qc[i].w >= 0) {
            /* fp8: linear layers reading one activation (Q, K, V) share one weight scale,
             * so that the cuda plan can run them as one GEMM (pass_attn_heads.c) */
            float amax = 0;
            for (int j = 0; fp8 && j < nn; j++)
                if (isq[j] && !qc[j].elem && qc[j].w >= 0 && qc[j].a == qc[i].a) {
                    float aj = amax_f32(&g->tensors[qc[j].w]);
                    if (aj > amax) amax = aj;
                }
            st = fp8 ? quantize_weight_fp8(g, i, 1, qc[i].w, amax, e)
                     : quantize_weight(g, i, 1, qc[i].w, qc[i].w_axis, e);
            if (st) goto done;
            r.weights++;
        }
    }
    for (int t = 0; t < nt; t++) {
        if (!want[t]) continue;
        int root = uf_find(uf, t);
        pr_dtype dt = fp8 ? qt : gneg[root] || o->signed_only ? PRECIS_INT8 : PRECIS_UINT8;
        float amax = gmax[root];
        float qmax = fp8 ? E4M3_MAX : dt == PRECIS_INT8 ? 127.0f : 255.0f;
        float s = amax > 0.0f && isfinite(amax) ? amax / qmax : 1.0f;
        if (o->verbose > 1)
            fprintf(stderr, "precis: %s: tensor '%s' %s scale %g (amax %g)\n", qn,
                    g->tensors[t].name, pr_dtype_name(dt), (double)s, (double)amax);
        /* an int8 producer's (or int8 pass-through's) float output vanishes */
        if ((st = quantize_tensor(g, t, s, dt, fsrc[t], e))) goto done;
        r.tensors++;
    }
    for (int k = 0; k < n_sm; k++) {
        pr_dtype dt = sm[k].dt;
        float s = sm[k].amax > 0.0f && isfinite(sm[k].amax)
                      ? sm[k].amax / (dt == PRECIS_INT8 ? 127.0f : 255.0f) : 1.0f;
        if (o->verbose > 1)
            fprintf(stderr, "precis: int8: tensor '%s' %s scale %g (amax %g, smoothed)\n",
                    g->tensors[sm[k].t].name, pr_dtype_name(dt), (double)s, (double)sm[k].amax);
        if ((st = quantize_tensor(g, sm[k].t, s, dt, false, e))) goto done;
        r.tensors++;
        r.smoothed++;
    }
    st = pr_graph_compact(g, e);
done:
    free(sm);
    free(want);
    free(uf);
    free(qc);
    free(isq);
    free(gmax);
    free(gneg);
    free(fsrc);
    pr_uses_free(&u);
    if (rep) *rep = r;
    return st;
}

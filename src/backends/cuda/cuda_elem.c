/* Elementwise nodes on the GPU, one launch each through the strided n-ary
 * kernel (cu_elem.cu): unary math and activations (everything in ir/act.h),
 * binary arithmetic with numpy broadcasting, comparisons and logic, Where,
 * and Cast. Values are computed in float32; operands may mix float32,
 * float16 and bfloat16 (float32 initializers beside low-precision
 * activations). Integer arithmetic stays on the host (shape arithmetic). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"

typedef struct ew_state {
    int op;
    pr_cu_act act;
    float alpha, beta;
    int n_in; /* operands read: 1 (unary, Cast), 2 (binary), 3 (Where) */
    int reorder; /* Cast: 0 same layout, 1 plain -> NHWC, 2 NHWC -> plain (pass_layout.c) */
    bool sum3;   /* Sum of three float inputs (pass_attn_mask.c's embeddings fold) */
} ew_state;

/* cu_elem.cu: y = RN(RN(a + b) + c) over pr_cu_ew_setup's operands (y, a, b, c). */
int pr_cu_sum3(void *stream, const pr_cu_ew *w);

static bool f3dt(pr_dtype d) {
    return d == PRECIS_FLOAT32 || d == PRECIS_FLOAT16 || d == PRECIS_BFLOAT16;
}

static int binary_op(pr_op op) {
    switch (op) {
    case PR_OP_Add: case PR_OP_Sum: return PR_EW_ADD;
    case PR_OP_Sub: return PR_EW_SUB;
    case PR_OP_Mul: return PR_EW_MUL;
    case PR_OP_Div: return PR_EW_DIV;
    case PR_OP_Pow: return PR_EW_POW;
    case PR_OP_Max: return PR_EW_MAX;
    case PR_OP_Min: return PR_EW_MIN;
    case PR_OP_Mod: return PR_EW_MOD;
    case PR_OP_PRelu: return PR_EW_PRELU;
    case PR_OP_Equal: return PR_EW_EQ;
    case PR_OP_Less: return PR_EW_LT;
    case PR_OP_LessOrEqual: return PR_EW_LE;
    case PR_OP_Greater: return PR_EW_GT;
    case PR_OP_GreaterOrEqual: return PR_EW_GE;
    case PR_OP_And: return PR_EW_AND;
    case PR_OP_Or: return PR_EW_OR;
    case PR_OP_Xor: return PR_EW_XOR;
    default: return -1;
    }
}

/* Unary op of n: the kernel op, its activation and parameters; -1 if none. */
static int unary_op(const pr_node *n, pr_cu_act *act, float *alpha, float *beta) {
    *act = (pr_cu_act){0, 0, 0};
    *alpha = *beta = 0;
    switch (n->op) {
    case PR_OP_Relu: *act = (pr_cu_act){PR_ACT_RELU, 0, 0}; return PR_EW_ACT;
    case PR_OP_LeakyRelu:
        *act = (pr_cu_act){PR_ACT_LEAKY_RELU, pr_attr_float(n, "alpha", 0.01f), 0};
        return PR_EW_ACT;
    case PR_OP_Sigmoid: *act = (pr_cu_act){PR_ACT_SIGMOID, 0, 0}; return PR_EW_ACT;
    case PR_OP_Tanh: *act = (pr_cu_act){PR_ACT_TANH, 0, 0}; return PR_EW_ACT;
    case PR_OP_HardSigmoid:
        *act = (pr_cu_act){PR_ACT_HARD_SIGMOID, pr_attr_float(n, "alpha", 0.2f),
                           pr_attr_float(n, "beta", 0.5f)};
        return PR_EW_ACT;
    case PR_OP_HardSwish: *act = (pr_cu_act){PR_ACT_HARD_SWISH, 0, 0}; return PR_EW_ACT;
    case PR_OP_Gelu: {
        const char *ap = pr_attr_str(n, "approximate", "none");
        if (strcmp(ap, "none") && strcmp(ap, "tanh")) return -1;
        *act = (pr_cu_act){strcmp(ap, "tanh") ? PR_ACT_GELU : PR_ACT_GELU_TANH, 0, 0};
        return PR_EW_ACT;
    }
    case PR_OP_Sqrt: return PR_EW_SQRT;
    case PR_OP_Exp: return PR_EW_EXP;
    case PR_OP_Log: return PR_EW_LOG;
    case PR_OP_Neg: return PR_EW_NEG;
    case PR_OP_Abs: return PR_EW_ABS;
    case PR_OP_Reciprocal: return PR_EW_RECIP;
    case PR_OP_Floor: return PR_EW_FLOOR;
    case PR_OP_Ceil: return PR_EW_CEIL;
    case PR_OP_Round: return PR_EW_ROUND;
    case PR_OP_Sign: return PR_EW_SIGN;
    case PR_OP_Erf: return PR_EW_ERF;
    case PR_OP_Sin: return PR_EW_SIN;
    case PR_OP_Cos: return PR_EW_COS;
    case PR_OP_Tan: return PR_EW_TAN;
    case PR_OP_Atan: return PR_EW_ATAN;
    case PR_OP_Asin: return PR_EW_ASIN;
    case PR_OP_Acos: return PR_EW_ACOS;
    case PR_OP_Sinh: return PR_EW_SINH;
    case PR_OP_Cosh: return PR_EW_COSH;
    case PR_OP_Elu: *alpha = pr_attr_float(n, "alpha", 1.0f); return PR_EW_ELU;
    case PR_OP_Selu:
        *alpha = pr_attr_float(n, "alpha", 1.67326319217681884765625f);
        *beta = pr_attr_float(n, "gamma", 1.05070102214813232421875f);
        return PR_EW_SELU;
    case PR_OP_Celu: *alpha = pr_attr_float(n, "alpha", 1.0f); return PR_EW_CELU;
    case PR_OP_Softplus: return PR_EW_SOFTPLUS;
    case PR_OP_Softsign: return PR_EW_SOFTSIGN;
    case PR_OP_Mish: return PR_EW_MISH;
    case PR_OP_ThresholdedRelu: *alpha = pr_attr_float(n, "alpha", 1.0f); return PR_EW_THRELU;
    case PR_OP_Not: return PR_EW_NOT;
    case PR_OP_IsNaN: return PR_EW_ISNAN;
    default: return -1;
    }
}

/* Clip bounds from attributes (opset < 11) or initializer inputs; false if
 * an input bound is not an initializer. */
static bool clip_bounds(const pr_graph *g, const pr_node *n, float *lo, float *hi) {
    *lo = -INFINITY;
    *hi = INFINITY;
    if (n->opset < 11) {
        *lo = pr_attr_float(n, "min", -INFINITY);
        *hi = pr_attr_float(n, "max", INFINITY);
        return true;
    }
    for (int i = 1; i <= 2; i++) {
        int t = pr_node_in(n, i);
        if (t < 0) continue;
        if (!pr_cu_is_init(g, t) || pr_numel(g->tensors[t].rank, g->tensors[t].dims) != 1)
            return false;
        float v;
        pr_ref_to_f32(g->tensors[t].data, g->tensors[t].dtype, 1, &v);
        *(i == 1 ? lo : hi) = v;
    }
    return true;
}

static bool ew_supports(const pr_graph *g, const pr_node *n) {
    int y = pr_node_out(n, 0);
    if (y < 0 || n->n_outputs != 1 || n->n_inputs < 1) return false;
    pr_dtype yd = pr_cu_tdt(g, y);
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] < 0 && !(n->op == PR_OP_Clip && i > 0)) return false;
    pr_dtype ad = pr_cu_tdt(g, n->inputs[0]);
    if (g->tensors[y].rank > PR_MAX_RANK) return false;
    if (n->op == PR_OP_Cast) /* a layout change too (a Reorder folded into it): rank 4 */
        return pr_cu_ldst(ad) && pr_cu_ldst(yd) && !pr_cu_shape_like(g, n->inputs[0]) &&
               !pr_cu_shape_like(g, y) &&
               (g->tensors[n->inputs[0]].layout == g->tensors[y].layout ||
                g->tensors[y].rank == 4);
    if (n->op == PR_OP_Where)
        return n->n_inputs == 3 && pr_cu_ldst(ad) && pr_cu_float(yd) &&
               pr_cu_float(pr_cu_tdt(g, n->inputs[1])) && pr_cu_float(pr_cu_tdt(g, n->inputs[2]));
    if (n->op == PR_OP_Clip) {
        float lo, hi;
        return pr_cu_float(ad) && pr_cu_float(yd) && clip_bounds(g, n, &lo, &hi);
    }
    if (n->op == PR_OP_Sum && n->n_inputs == 3) {
        for (int i = 0; i < 3; i++)
            if (!f3dt(pr_cu_tdt(g, n->inputs[i]))) return false;
        return f3dt(yd);
    }
    int b = binary_op(n->op);
    if (b >= 0) {
        if (n->n_inputs != 2) return false;
        pr_dtype bd = pr_cu_tdt(g, n->inputs[1]);
        if (b == PR_EW_MOD && !pr_attr_int(n, "fmod", 0)) return false;
        if (b >= PR_EW_EQ) /* comparisons and logic: bool out, numeric in */
            return yd == PRECIS_BOOL && pr_cu_ldst(ad) && pr_cu_ldst(bd) && ad != PRECIS_FLOAT64 &&
                   !pr_cu_shape_like(g, n->inputs[0]) && !pr_cu_shape_like(g, n->inputs[1]);
        return pr_cu_float(yd) && pr_cu_float(ad) && pr_cu_float(bd);
    }
    pr_cu_act act;
    float al, be;
    int u = unary_op(n, &act, &al, &be);
    if (u < 0 || n->n_inputs != 1) return false;
    if (u == PR_EW_NOT) return ad == PRECIS_BOOL && yd == PRECIS_BOOL;
    if (u == PR_EW_ISNAN) return pr_cu_float(ad) && yd == PRECIS_BOOL;
    return pr_cu_float(ad) && pr_cu_float(yd);
}

/* Elementwise over raw memory holds in any layout when nothing broadcasts
 * across dims: every rank-4 operand has the output's dims, the others are
 * single elements. */
static bool ew_nhwc_ok(const pr_graph *g, const pr_node *n) {
    if (!ew_supports(g, n)) return false;
    const pr_tensor *Y = &g->tensors[n->outputs[0]];
    if (Y->rank != 4) return false;
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        if (t < 0) continue;
        const pr_tensor *x = &g->tensors[t];
        if (x->rank == 4) {
            for (int d = 0; d < 4; d++)
                if (x->dims[d] != Y->dims[d] || !pr_dim_known(x->dims[d])) return false;
        } else if (pr_numel(x->rank, x->dims) != 1) {
            return false;
        }
    }
    return true;
}

static bool ew_packs(const pr_graph *g, const pr_node *n, int i) {
    return n->op == PR_OP_Clip && i > 0; /* bounds read at prepare */
}

static precis_status ew_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                void **out, pr_err *e) {
    ew_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    if (n->op == PR_OP_Cast) {
        s->op = PR_EW_COPY;
        s->n_in = 1;
        int lx = g->tensors[n->inputs[0]].layout, ly = g->tensors[n->outputs[0]].layout;
        s->reorder = lx != ly ? (ly == PR_LAYOUT_NHWC ? 1 : 2) : 0;
    } else if (n->op == PR_OP_Where) {
        s->op = PR_EW_WHERE;
        s->n_in = 3;
    } else if (n->op == PR_OP_Clip) {
        float lo, hi;
        clip_bounds(g, n, &lo, &hi);
        s->op = PR_EW_ACT;
        s->act = (pr_cu_act){PR_ACT_CLIP, lo, hi};
        s->n_in = 1;
    } else if (n->op == PR_OP_Sum && n->n_inputs == 3) {
        s->op = PR_EW_ADD;
        s->n_in = 3;
        s->sum3 = true;
    } else if (binary_op(n->op) >= 0) {
        s->op = binary_op(n->op);
        s->n_in = 2;
    } else {
        s->op = unary_op(n, &s->act, &s->alpha, &s->beta);
        s->n_in = 1;
    }
    *out = s;
    return PRECIS_OK;
}

precis_status pr_cu_ew_setup(pr_cu_ew *w, const pr_buf *Y, int n, const pr_buf *const *in) {
    int rank = Y->rank;
    int64_t st[4][PR_MAX_RANK];
    memset(st, 0, sizeof st);
    pr_strides(rank, Y->dims, st[0]);
    for (int i = 0; i < n; i++) pr_bcast_strides(in[i], rank, Y->dims, st[i + 1]);
    int64_t dims[PR_MAX_RANK];
    memcpy(dims, Y->dims, sizeof(int64_t) * (size_t)rank);
    w->rank = pr_cu_collapse(rank, dims, n + 1, st);
    memcpy(w->dims, dims, sizeof(int64_t) * (size_t)w->rank);
    for (int o = 0; o < 4; o++) {
        memcpy(w->st[o], st[o], sizeof(int64_t) * (size_t)w->rank);
        w->off[o] = 0;
        w->p[o] = NULL;
        w->dt[o] = 0;
    }
    w->p[0] = Y->data;
    w->dt[0] = (int)Y->dtype;
    for (int i = 0; i < n; i++) {
        w->p[i + 1] = in[i]->data;
        w->dt[i + 1] = (int)in[i]->dtype;
    }
    return PRECIS_OK;
}

static precis_status ew_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    ew_state *s = p;
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    pr_buf *Y = k->out[0];
    if (Y->numel == 0) return PRECIS_OK;
    pr_cu_ew w;
    memset(&w, 0, sizeof w);
    pr_cu_ew_setup(&w, Y, s->n_in, k->in);
    if (s->sum3) {
        w.op = s->op;
        KL_TRY(pr_cu_sum3(x->stream, &w));
        return PRECIS_OK;
    }
    if (s->reorder == 1 && k->in[0]->dtype == PRECIS_FLOAT32 &&
        (Y->dtype == PRECIS_FLOAT16 || Y->dtype == PRECIS_BFLOAT16) &&
        (Y->dims[1] == 1 || Y->dims[1] == 3 || Y->dims[1] == 4) &&
        Y->numel < ((int64_t)1 << 31) / 4) { /* a network's input: a thread a pixel */
        KL_TRY(pr_cu_cast_nhwc(x->stream, k->in[0]->data, Y->data, (int)Y->dtype, Y->dims[0],
                               Y->dims[1], Y->dims[2] * Y->dims[3]));
        return PRECIS_OK;
    }
    if (s->reorder) { /* walk Y in its memory order, read X through its layout's strides */
        int64_t N = Y->dims[0], C = Y->dims[1], H = Y->dims[2], W = Y->dims[3];
        int64_t d[4] = {N, H, W, C}, sx[4] = {C * H * W, W, 1, H * W};
        if (s->reorder == 2) { /* N,H,W,C -> N,C,H,W */
            int64_t d2[4] = {N, C, H, W}, s2[4] = {H * W * C, 1, W * C, C};
            memcpy(d, d2, sizeof d);
            memcpy(sx, s2, sizeof sx);
        }
        int64_t st4[4][PR_MAX_RANK];
        memset(st4, 0, sizeof st4);
        pr_strides(4, d, st4[0]);
        memcpy(st4[1], sx, sizeof sx);
        w.rank = pr_cu_collapse(4, d, 2, st4);
        memcpy(w.dims, d, sizeof(int64_t) * (size_t)w.rank);
        memcpy(w.st, st4, sizeof st4);
    }
    w.op = s->op;
    w.act = s->act;
    w.alpha = s->alpha;
    w.beta = s->beta;
    KL_TRY(pr_cu_elementwise(x->stream, &w));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", k->node->name);
    return st;
}

static const char *ew_describe(void *p) {
    ew_state *s = p;
    if (s->reorder) return s->reorder == 1 ? "cu.cast + reorder to nhwc" : "cu.cast + reorder to plain";
    if (s->sum3) return "cu.sum3";
    return s->op == PR_EW_COPY ? "cu.cast" : s->n_in == 1 ? "cu.unary" : s->n_in == 2 ? "cu.binary broadcast" : "cu.where";
}

const pr_cuda_impl pr_cuda_impl_eltwise = {
    .name = "cu.eltwise",
    .supports = ew_supports,
    .nhwc_ok = ew_nhwc_ok,
    .packs = ew_packs,
    .prepare = ew_prepare,
    .run = ew_run,
    .describe = ew_describe,
    .destroy = free,
};
